/* mlp(h1, h2, ...): fully connected ReLU layers fc1..fcL, then a dense
 * layer `out` to the classes, softmax cross-entropy averaged over the batch.
 * Each layer is W (out x in, row-major) followed by its bias; weights are
 * He-initialised N(0, 2 / fan_in), biases 0. One sgemm per layer forward and
 * two backward (weight gradient, input gradient; none for the input layer).
 *
 * Workspace for a batch of B: the post-ReLU activations of every hidden
 * layer (B x h_l each), the logits (B x classes, overwritten by their
 * gradients) and two ping-pong buffers for the backward deltas (B x max
 * width each). Per-sample statistics use the factorisation of a dense
 * layer's per-sample gradient, delta_s (x) [input_s; 1], layer by layer
 * during the backward pass (O(B x width) extra work, no B x d storage). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/units.h"
#include "workloads/models_impl.h"

#define MLP_MAX_HIDDEN SIM_SPEC_MAX_ARGS

typedef struct mlp_shape {
    int n_hidden;
    int width[MLP_MAX_HIDDEN + 2]; /* width[0] = dim, ..., width[L+1] = classes */
} mlp_shape;

static void shape_of(const wl_model *m, mlp_shape *sh)
{
    sh->n_hidden = m->n_layers - 1;
    sh->width[0] = m->dim;
    for (int l = 0; l < m->n_layers; l++) {
        /* layer size = out * (in + 1) */
        int64_t in = sh->width[l];
        sh->width[l + 1] = (int)(m->layers[l].size / (in + 1));
    }
}

static int mlp_create(wl_model *m, const char *const *args, int nargs, sim_err *err)
{
    if (m->classes < 2)
        return wl_model_misfit(m, "a classification dataset", err);
    if (nargs < 1 || nargs > MLP_MAX_HIDDEN)
        return sim_err_set(err, SIM_ECONFIG,
                           "model 'mlp': expected mlp(h1, h2, ...) with 1 to %d hidden "
                           "layer widths",
                           MLP_MAX_HIDDEN);
    int64_t in = m->dim;
    double macs = 0;
    for (int l = 0; l <= nargs; l++) {
        int64_t out = m->classes;
        char name[32];
        if (l < nargs) {
            if (sim_parse_int(args[l], &out, NULL) != 0 || out < 1 || out > 1000000)
                return sim_err_set(err, SIM_ECONFIG,
                                   "model 'mlp': hidden width '%s' is not an integer in "
                                   "1..1000000",
                                   args[l]);
            snprintf(name, sizeof name, "fc%d", l + 1);
        } else {
            snprintf(name, sizeof name, "out");
        }
        wl_model_add_layer(m, name, out * (in + 1));
        macs += (double)out * (double)in;
        in = out;
    }
    m->flops_per_sample = 6.0 * macs;
    return 0;
}

static size_t mlp_workspace_floats(const wl_model *m, int64_t max_batch)
{
    mlp_shape sh;
    shape_of(m, &sh);
    size_t b = (size_t)(max_batch > 0 ? max_batch : 1), per = 0, widest = 0;
    for (int l = 1; l <= sh.n_hidden + 1; l++) {
        per += (size_t)sh.width[l];
        if ((size_t)sh.width[l] > widest)
            widest = (size_t)sh.width[l];
    }
    return b * (per + 2 * widest);
}

static void mlp_init(const wl_model *m, float *params, gsl_rng *rng)
{
    mlp_shape sh;
    shape_of(m, &sh);
    for (int l = 0; l < m->n_layers; l++) {
        int64_t in = sh.width[l], out = sh.width[l + 1];
        float *w = params + m->layers[l].offset;
        wl_model_init_gaussian(w, out * in, sqrt(2.0 / (double)in), rng);
        memset(w + out * in, 0, (size_t)out * sizeof *w);
    }
}

/* Workspace views for a batch of b rows. */
typedef struct mlp_bufs {
    float *act[MLP_MAX_HIDDEN + 1]; /* act[l], l = 1..L: hidden outputs */
    float *z;                       /* logits / their gradient */
    float *d0, *d1;                 /* backward deltas */
} mlp_bufs;

static void bufs_of(const mlp_shape *sh, int64_t b, float *ws, mlp_bufs *bf)
{
    int widest = 0;
    for (int l = 1; l <= sh->n_hidden; l++) {
        bf->act[l] = ws;
        ws += b * sh->width[l];
    }
    for (int l = 1; l <= sh->n_hidden + 1; l++)
        if (sh->width[l] > widest)
            widest = sh->width[l];
    bf->z = ws;
    ws += b * sh->width[sh->n_hidden + 1];
    bf->d0 = ws;
    bf->d1 = ws + b * widest;
}

/* out (b x nout) = in (b x nin) W^T + bias, then ReLU when relu is set. */
static void dense_forward(const float *w, int nin, int nout, const float *in, int64_t b,
                          float *out, int relu)
{
    const float *bias = w + (int64_t)nout * nin;
    for (int64_t i = 0; i < b; i++)
        memcpy(out + i * nout, bias, (size_t)nout * sizeof *out);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, nout, nin, 1.0f, in, nin, w,
                nin, 1.0f, out, nout);
    if (relu)
        for (int64_t i = 0; i < b * nout; i++)
            out[i] = out[i] > 0 ? out[i] : 0;
}

static void forward(const wl_model *m, const mlp_shape *sh, const float *params,
                    const float *x, int64_t b, const mlp_bufs *bf)
{
    const float *in = x;
    for (int l = 0; l <= sh->n_hidden; l++) {
        float *out = l < sh->n_hidden ? bf->act[l + 1] : bf->z;
        dense_forward(params + m->layers[l].offset, sh->width[l], sh->width[l + 1], in, b,
                      out, l < sh->n_hidden);
        in = out;
    }
}

/* Adds layer l's share of ||a_s||^2 and a_s.gbar to sq, q: delta (b x nout,
 * scaled by 1/b), its input (b x nin), the layer's mean gradient g; tmp has
 * b x nout floats. */
static void layer_stats(const float *delta, const float *in, const float *g, int nin,
                        int nout, int64_t b, float *tmp, double *sq, double *q)
{
    const float *gb = g + (int64_t)nout * nin;
    for (int64_t i = 0; i < b; i++)
        memcpy(tmp + i * nout, gb, (size_t)nout * sizeof *tmp);
    /* tmp = in G^T + g_b: row s is G in_s + g_b */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, nout, nin, 1.0f, in, nin, g,
                nin, 1.0f, tmp, nout);
    const double nb = (double)b;
    for (int64_t s = 0; s < b; s++) {
        const float *ds = delta + s * nout, *xs = in + s * nin, *ts = tmp + s * nout;
        double xx = 1, dd = 0, dt = 0;
        for (int j = 0; j < nin; j++)
            xx += (double)xs[j] * xs[j];
        for (int k = 0; k < nout; k++) {
            dd += (double)ds[k] * ds[k];
            dt += (double)ds[k] * ts[k];
        }
        sq[s] += nb * nb * dd * xx;
        q[s] += nb * dt;
    }
}

/* Forward, loss and backward over b rows; gradient into grad. With sq and q
 * set, also the per-sample sums for the batch statistics. */
static double mlp_run(const wl_model *m, const float *params, const float *x, const float *y,
                      int64_t b, float *grad, float *ws, double *sq, double *q)
{
    mlp_shape sh;
    mlp_bufs bf;
    shape_of(m, &sh);
    bufs_of(&sh, b, ws, &bf);
    const int L = sh.n_hidden, c = m->classes;
    forward(m, &sh, params, x, b, &bf);
    const float invb = 1.0f / (float)b;
    double loss = 0;
    for (int64_t i = 0; i < b; i++) {
        float *zi = bf.z + i * c;
        int yi = (int)y[i];
        loss += wl_softmax_row_loss(zi, c, yi, 1, NULL);
        if (yi >= 0 && yi < c)
            zi[yi] -= 1.0f;
        for (int k = 0; k < c; k++)
            zi[k] *= invb;
    }
    if (sq) {
        memset(sq, 0, (size_t)b * sizeof *sq);
        memset(q, 0, (size_t)b * sizeof *q);
    }
    float *delta = bf.z, *spare = bf.d0;
    for (int l = L; l >= 0; l--) {
        const int nin = sh.width[l], nout = sh.width[l + 1];
        const float *in = l > 0 ? bf.act[l] : x;
        const float *w = params + m->layers[l].offset;
        float *g = grad + m->layers[l].offset, *gb = g + (int64_t)nout * nin;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nout, nin, (int)b, 1.0f, delta,
                    nout, in, nin, 0.0f, g, nin);
        for (int k = 0; k < nout; k++) {
            double s = 0;
            for (int64_t i = 0; i < b; i++)
                s += delta[i * nout + k];
            gb[k] = (float)s;
        }
        if (sq)
            layer_stats(delta, in, g, nin, nout, b, spare, sq, q);
        if (l == 0)
            break;
        /* delta of the layer below: (delta W) masked by its ReLU */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)b, nin, nout, 1.0f, delta,
                    nout, w, nin, 0.0f, spare, nin);
        for (int64_t i = 0; i < b * nin; i++)
            if (!(in[i] > 0))
                spare[i] = 0;
        delta = spare;
        spare = spare == bf.d0 ? bf.d1 : bf.d0;
    }
    return loss / (double)b;
}

static double mlp_loss_grad(const wl_model *m, const float *params, const float *x,
                            const float *y, int64_t b, float *grad, float *ws)
{
    if (b <= 0) {
        memset(grad, 0, (size_t)m->n_params * sizeof *grad);
        return 0.0;
    }
    return mlp_run(m, params, x, y, b, grad, ws, NULL, NULL);
}

static wl_eval mlp_evaluate(const wl_model *m, const float *params, const float *x,
                            const float *y, int64_t n, float *ws, int64_t ws_batch)
{
    wl_eval ev = {NAN, NAN};
    if (n <= 0 || ws_batch <= 0)
        return ev;
    mlp_shape sh;
    mlp_bufs bf;
    shape_of(m, &sh);
    const int c = m->classes;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t i0 = 0; i0 < n; i0 += ws_batch) {
        int64_t b = n - i0 < ws_batch ? n - i0 : ws_batch;
        bufs_of(&sh, b, ws, &bf);
        forward(m, &sh, params, x + i0 * m->dim, b, &bf);
        for (int64_t i = 0; i < b; i++) {
            int yi = (int)y[i0 + i], am;
            loss += wl_softmax_row_loss(bf.z + i * c, c, yi, 0, &am);
            correct += am == yi;
        }
    }
    ev.loss = loss / (double)n;
    ev.accuracy = (double)correct / (double)n;
    return ev;
}

static int mlp_batch_stats(const wl_model *m, const float *params, const float *x,
                           const float *y, int64_t b, wl_batch_stats *out, float *ws)
{
    float *gbar = ws;
    double *sq = wl_stats_doubles(m, ws), *q = sq + b;
    out->loss = mlp_run(m, params, x, y, b, gbar, wl_stats_model_ws(m, ws, b), sq, q);
    out->gnorm2 = 0;
    for (int64_t j = 0; j < m->n_params; j++)
        out->gnorm2 += (double)gbar[j] * gbar[j];
    wl_stats_finish(sq, q, b, out);
    return 0;
}

const wl_model_vt wl_mlp_vt = {
    .name = "mlp",
    .args = "(h1, h2, ...)",
    .summary = "ReLU multilayer perceptron, softmax cross-entropy, He init",
    .create = mlp_create,
    .destroy = NULL,
    .workspace_floats = mlp_workspace_floats,
    .init = mlp_init,
    .loss_grad = mlp_loss_grad,
    .evaluate = mlp_evaluate,
    .batch_stats = mlp_batch_stats,
};
