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
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/units.h"
#include "workloads/dense_impl.h"
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

static void forward(const wl_model *m, const mlp_shape *sh, const float *params,
                    const float *x, int64_t b, const mlp_bufs *bf)
{
    const float *in = x;
    for (int l = 0; l <= sh->n_hidden; l++) {
        const int nout = sh->width[l + 1];
        float *out = l < sh->n_hidden ? bf->act[l + 1] : bf->z;
        wl_dense_forward(params + m->layers[l].offset, sh->width[l], nout, in, b, out);
        if (l < sh->n_hidden) /* ReLU */
            for (int64_t i = 0; i < b * nout; i++)
                out[i] = out[i] > 0 ? out[i] : 0;
        in = out;
    }
}

/* Adds layer l's share of ||a_s||^2 and a_s.gbar to sq, q: delta (b x nout,
 * scaled by 1/b), its input (b x nin), the layer's mean gradient g; tmp has
 * b x nout floats. */
static void layer_stats(const float *delta, const float *in, const float *g, int nin,
                        int nout, int64_t b, float *tmp, double *sq, double *q)
{
    /* tmp = in G^T + g_b: row s is G in_s + g_b */
    wl_dense_forward(g, nin, nout, in, b, tmp);
    for (int64_t s = 0; s < b; s++)
        wl_dense_sample_stats(delta + s * nout, in + s * nin, tmp + s * nout, nin, nout,
                              (double)b, &sq[s], &q[s]);
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
    const int L = sh.n_hidden;
    forward(m, &sh, params, x, b, &bf);
    double loss = 0;
    wl_softmax_xent_grad(bf.z, b, m->classes, y, 1.0f / (float)b, &loss);
    if (sq) {
        memset(sq, 0, (size_t)b * sizeof *sq);
        memset(q, 0, (size_t)b * sizeof *q);
    }
    float *delta = bf.z, *spare = bf.d0;
    for (int l = L; l >= 0; l--) {
        const int nin = sh.width[l], nout = sh.width[l + 1];
        const float *in = l > 0 ? bf.act[l] : x;
        const float *w = params + m->layers[l].offset;
        float *g = grad + m->layers[l].offset;
        wl_dense_grad(delta, in, nin, nout, b, g);
        if (sq)
            layer_stats(delta, in, g, nin, nout, b, spare, sq, q);
        if (l == 0)
            break;
        /* delta of the layer below: (delta W) masked by its ReLU */
        wl_dense_backward(delta, w, nin, nout, b, spare);
        for (int64_t i = 0; i < b * nin; i++) /* a select, so it vectorizes */
            spare[i] = in[i] > 0 ? spare[i] : 0.0f;
        delta = spare;
        spare = spare == bf.d0 ? bf.d1 : bf.d0;
    }
    return loss / (double)b;
}

static double mlp_loss_grad(const wl_model *m, const float *params, const float *x,
                            const float *y, int64_t b, float *grad, float *ws)
{
    if (b <= 0)
        return wl_model_zero_grad(m, grad);
    return mlp_run(m, params, x, y, b, grad, ws, NULL, NULL);
}

static float *mlp_logits(const wl_model *m, const float *params, const float *x, int64_t b,
                         float *ws)
{
    mlp_shape sh;
    mlp_bufs bf;
    shape_of(m, &sh);
    bufs_of(&sh, b, ws, &bf);
    forward(m, &sh, params, x, b, &bf);
    return bf.z;
}

static wl_eval mlp_evaluate(const wl_model *m, const float *params, const float *x,
                            const float *y, int64_t n, float *ws, int64_t ws_batch)
{
    return wl_softmax_evaluate(m, params, x, y, n, ws, ws_batch, mlp_logits);
}

static int mlp_batch_stats(const wl_model *m, const float *params, const float *x,
                           const float *y, int64_t b, wl_batch_stats *out, float *ws)
{
    float *gbar = ws;
    double *sq = wl_stats_doubles(m, ws), *q = sq + b;
    out->loss = mlp_run(m, params, x, y, b, gbar, wl_stats_model_ws(m, ws, b), sq, q);
    wl_stats_finish(m, gbar, sq, q, b, out);
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
