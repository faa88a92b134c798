/* torch(FILE): a user's PyTorch module (docs/models-and-data.md). FILE,
 * relative to the experiment file, defines model(shape, classes); its
 * parameters are one flat float32 vector in module.parameters() order, each
 * tensor row-major, so the methods see it as any other model's. The numbers
 * are computed by one helper process per model (torch_helper.h): a request
 * carries the parameters and batches of every gradient due in a simulated
 * instant (loss_grad_many), and the helper batches them with functorch.vmap
 * or loops. Calls are serialised by a lock (evaluation may run on two
 * threads); the first failure is kept, and the kernels without an error
 * return (loss_grad, evaluate, init) give NAN or zeros after it, which the
 * run reads through wl_model_failed. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/path.h"
#include "sim/units.h"
#include "workloads/models_impl.h"
#include "workloads/torch_helper.h"

typedef struct torch_priv {
    wl_torch_helper *h;
    pthread_mutex_t lock;
    int batched;          /* 1: vmap across workers */
    char device[16];
    char file[SIM_PATH_MAX];
    sim_err failed;       /* the first failure (code 0: none) */
} torch_priv;

static torch_priv *priv_of(const wl_model *m) { return m->priv; }

/* Keeps the first failure. */
static void note_failure(torch_priv *p, const sim_err *e)
{
    if (!p->failed.code)
        p->failed = *e;
}

static int torch_create(wl_model *m, const char *const *args, int nargs, sim_err *err)
{
    if (nargs != 1)
        return sim_err_set(err, SIM_ECONFIG, "model 'torch': expected torch(FILE), FILE a "
                                             "Python file defining model(shape, classes)");
    if (m->classes < 2)
        return wl_model_misfit(m, "a classification dataset", err);
    const wl_model_opts *o = wl_model_opts_of(m);
    const wl_dataset *ds = wl_model_dataset(m);
    const char *batched = o->torch_batched ? o->torch_batched : "auto";
    const char *device = o->torch_device ? o->torch_device : "cpu";
    if (strcmp(batched, "auto") && strcmp(batched, "on") && strcmp(batched, "off"))
        return sim_err_set(err, SIM_ECONFIG, "torch_batched: expected auto, on or off, got '%s'",
                           batched);
    if (strcmp(device, "cpu") && strcmp(device, "cuda"))
        return sim_err_set(err, SIM_ECONFIG, "torch_device: expected cpu or cuda, got '%s'",
                           device);
    torch_priv *p = calloc(1, sizeof *p);
    if (!p)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    if (sim_path_resolve(o->dir, args[0], p->file, sizeof p->file, err)) {
        free(p);
        return err->code;
    }
    wl_torch_start s = {
        .file = p->file,
        .channels = ds ? ds->channels : 0,
        .height = ds ? ds->height : 0,
        .width = ds ? ds->width : 0,
        .dim = m->dim,
        .classes = m->classes,
        .context = ds ? ds->context : 0,
        .device = device,
        .batched = batched,
        .seed = o->seed,
    };
    wl_torch_hello hello;
    p->h = wl_torch_helper_start(&s, &hello, err);
    if (!p->h) {
        free(p);
        return err->code;
    }
    pthread_mutex_init(&p->lock, NULL);
    p->batched = hello.batched;
    snprintf(p->device, sizeof p->device, "%s", device);
    for (int i = 0; i < hello.n_layers; i++)
        wl_model_add_layer(m, hello.layers[i].name, hello.layers[i].size);
    if (m->n_params != hello.d) {
        wl_torch_helper_stop(p->h);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return sim_err_set(err, SIM_EINTERNAL, "%s: the helper's layers do not add up to its "
                                               "%lld parameters",
                           args[0], (long long)hello.d);
    }
    m->flops_per_sample = hello.flops;
    m->priv = p;
    return 0;
}

static void torch_destroy(wl_model *m)
{
    torch_priv *p = priv_of(m);
    if (!p)
        return;
    wl_torch_helper_stop(p->h);
    pthread_mutex_destroy(&p->lock);
    free(p);
    m->priv = NULL;
}

static size_t torch_workspace_floats(const wl_model *m, int64_t max_batch)
{
    (void)m;
    (void)max_batch;
    return 1; /* the helper holds its own */
}

static void torch_init(const wl_model *m, float *params, gsl_rng *rng)
{
    torch_priv *p = priv_of(m);
    const size_t bytes = (size_t)m->n_params * sizeof *params;
    char cmd[64], rest[64];
    snprintf(cmd, sizeof cmd, "init %lu", gsl_rng_get(rng));
    wl_torch_slots sl;
    sim_err e = {0};
    pthread_mutex_lock(&p->lock);
    if (wl_torch_helper_reserve(p->h, 1, 1, &sl, &e) == 0 &&
        wl_torch_helper_call(p->h, cmd, rest, sizeof rest, &e) == 0)
        memcpy(params, sl.params, bytes);
    else {
        note_failure(p, &e);
        memset(params, 0, bytes);
    }
    pthread_mutex_unlock(&p->lock);
}

/* The request under the lock: the slots filled (slot j for the j-th
 * non-empty batch), one command, the results read back. */
static int grad_locked(const wl_model *m, torch_priv *p, wl_grad_req *reqs, int n,
                       sim_err *err)
{
    const int64_t d = m->n_params, dim = m->dim;
    int64_t maxb = 1;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (reqs[i].b > maxb)
            maxb = reqs[i].b;
        k += reqs[i].b > 0;
    }
    if (k == 0)
        return 0;
    wl_torch_slots sl;
    if (wl_torch_helper_reserve(p->h, k, maxb, &sl, err) < 0)
        return err->code;
    char cmd[4096];
    int used = snprintf(cmd, sizeof cmd, "grad %d", k);
    for (int i = 0, j = 0; i < n; i++) {
        const wl_grad_req *r = &reqs[i];
        if (r->b <= 0)
            continue;
        memcpy(sl.params + j * d, r->params, (size_t)d * sizeof(float));
        memcpy(sl.x + j * sl.b * dim, r->x, (size_t)(r->b * dim) * sizeof(float));
        memcpy(sl.y + j * sl.b, r->y, (size_t)r->b * sizeof(float));
        used += snprintf(cmd + used, sizeof cmd - (size_t)used, " %d %lld", r->worker,
                         (long long)r->b);
        if (used >= (int)sizeof cmd - 32)
            return sim_err_set(err, SIM_EINTERNAL, "%s: too many gradients in one request",
                               p->file);
        j++;
    }
    char rest[64];
    if (wl_torch_helper_call(p->h, cmd, rest, sizeof rest, err) < 0)
        return err->code;
    for (int i = 0, j = 0; i < n; i++) {
        if (reqs[i].b <= 0)
            continue;
        memcpy(reqs[i].grad, sl.grads + j * d, (size_t)d * sizeof(float));
        reqs[i].loss = sl.loss[j++];
    }
    return 0;
}

static int torch_loss_grad_many(const wl_model *m, wl_grad_req *reqs, int n, sim_err *err)
{
    torch_priv *p = priv_of(m);
    for (int i = 0; i < n; i++) /* an empty batch: a zero gradient, as for every model */
        if (reqs[i].b <= 0)
            reqs[i].loss = wl_model_zero_grad(m, reqs[i].grad);
    pthread_mutex_lock(&p->lock);
    int rc = 0;
    if (p->failed.code) {
        *err = p->failed;
        rc = err->code;
    } else if ((rc = grad_locked(m, p, reqs, n, err)) < 0) {
        note_failure(p, err);
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

static double torch_loss_grad(const wl_model *m, const float *params, const float *x,
                              const float *y, int64_t b, float *grad, float *ws)
{
    (void)ws;
    if (b <= 0)
        return wl_model_zero_grad(m, grad);
    wl_grad_req r = {.worker = -1, .params = params, .x = x, .y = y, .b = b, .grad = grad};
    sim_err e = {0};
    if (torch_loss_grad_many(m, &r, 1, &e) < 0) {
        memset(grad, 0, (size_t)m->n_params * sizeof *grad);
        return NAN;
    }
    return r.loss;
}

static wl_eval torch_evaluate(const wl_model *m, const float *params, const float *x,
                              const float *y, int64_t n, float *ws, int64_t ws_batch)
{
    (void)ws;
    torch_priv *p = priv_of(m);
    wl_eval out = {NAN, NAN};
    double loss = 0, correct = 0, count = 0;
    sim_err e = {0};
    pthread_mutex_lock(&p->lock);
    wl_torch_slots sl;
    int rc = p->failed.code ? p->failed.code
                            : wl_torch_helper_reserve(p->h, 1, ws_batch > 0 ? ws_batch : 256,
                                                      &sl, &e);
    const int64_t rows = rc == 0 ? (int64_t)sl.k * sl.b : 0;
    if (rc == 0)
        memcpy(sl.params, params, (size_t)m->n_params * sizeof *params);
    for (int64_t i = 0; rc == 0 && i < n; i += rows) {
        int64_t c = n - i < rows ? n - i : rows;
        memcpy(sl.x, x + i * m->dim, (size_t)(c * m->dim) * sizeof *x);
        memcpy(sl.y, y + i, (size_t)c * sizeof *y);
        char cmd[64], rest[128];
        double ls, cor, cnt;
        snprintf(cmd, sizeof cmd, "eval %lld 0", (long long)c);
        rc = wl_torch_helper_call(p->h, cmd, rest, sizeof rest, &e);
        if (rc == 0 && sscanf(rest, "%lf %lf %lf", &ls, &cor, &cnt) != 3)
            rc = sim_err_set(&e, SIM_EINTERNAL, "%s: a malformed evaluation reply", p->file);
        if (rc == 0) {
            loss += ls;
            correct += cor;
            count += cnt;
        }
    }
    if (rc < 0 && e.code)
        note_failure(p, &e);
    pthread_mutex_unlock(&p->lock);
    if (rc == 0 && count > 0) {
        out.loss = loss / count;
        out.accuracy = correct / count;
    }
    return out;
}

static int torch_failed(const wl_model *m, sim_err *err)
{
    torch_priv *p = priv_of(m);
    pthread_mutex_lock(&p->lock);
    int rc = p->failed.code;
    if (rc)
        *err = p->failed;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

static void torch_describe(const wl_model *m, char *buf, size_t len)
{
    const torch_priv *p = priv_of(m);
    snprintf(buf, len, "torch on %s, %s", p->device,
             p->batched ? "batched across workers (vmap)" : "looped over workers");
}

const wl_model_vt wl_torch_vt = {
    .name = "torch",
    .args = "(FILE)",
    .summary = "a PyTorch module from FILE's model(shape, classes), run by a helper process",
    .create = torch_create,
    .destroy = torch_destroy,
    .workspace_floats = torch_workspace_floats,
    .init = torch_init,
    .loss_grad = torch_loss_grad,
    .evaluate = torch_evaluate,
    .loss_grad_many = torch_loss_grad_many,
    .failed = torch_failed,
    .kernels = torch_describe,
};
