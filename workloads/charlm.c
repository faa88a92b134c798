/* charlm(k, emb, hidden): a character-level language model (Bengio-style
 * neural n-gram) on a text(FILE, k) dataset. A sample's x holds the ids of
 * the k previous characters (as floats), y the id of the next one.
 *   u = [E[id_1], ..., E[id_k]]        (k * emb, embeddings concatenated)
 *   h = tanh(W1 u + b1)                (hidden)
 *   logits = W2 h + b2                 (vocabulary = dataset classes)
 * Softmax cross-entropy averaged, in nats; perplexity = exp(loss); the
 * accuracy evaluate() reports is next-character accuracy. Defaults: k = the
 * dataset's context (8 for text(FILE)), emb 16, hidden 256. Layers: embed
 * (V x emb), hidden (W1 then b1), out (W2 then b2). Init: embeddings N(0, 1),
 * weights N(0, 1 / fan_in) (suited to tanh), biases 0.
 *
 * Workspace for a batch of B: u, h, logits, dh and du (B x (2 k emb +
 * 2 hidden + V)). Per-sample statistics factor for the two dense layers as
 * in mlp; an embedding row's per-sample gradient is the sum of the du
 * segments whose id is that row, so its square is a k x k sum of dot
 * products over matching ids. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"
#include "workloads/dense_impl.h"
#include "workloads/models_impl.h"
#include "workloads/vmath_impl.h"

typedef struct charlm_shape {
    int k, emb, hidden, vocab;
} charlm_shape;

static const charlm_shape *shape(const wl_model *m)
{
    return (const charlm_shape *)m->priv;
}

static int charlm_create(wl_model *m, const char *const *args, int nargs, sim_err *err)
{
    const wl_dataset *ds = wl_model_dataset(m);
    if (!ds || ds->context <= 0 || ds->classes < 2)
        return wl_model_misfit(m, "a text dataset (text(FILE[, k]))", err);
    if (nargs > 3)
        return sim_err_set(err, SIM_ECONFIG,
                           "model 'charlm': expected charlm[(k[, emb[, hidden]])]");
    int64_t v[3] = {ds->context, 16, 256};
    static const char *const what[3] = {"context k", "embedding size", "hidden size"};
    for (int i = 0; i < nargs; i++)
        if (sim_parse_int(args[i], &v[i], NULL) != 0 || v[i] < 1 || v[i] > 100000)
            return sim_err_set(err, SIM_ECONFIG,
                               "model 'charlm': %s '%s' is not an integer in 1..100000",
                               what[i], args[i]);
    if (v[0] != ds->context || m->dim != ds->context)
        return sim_err_set(err, SIM_ECONFIG,
                           "model 'charlm': context k = %lld but dataset '%s' gives %d "
                           "characters of context (use text(FILE, %lld))",
                           (long long)v[0], ds->name, ds->context, (long long)v[0]);
    charlm_shape *sh = malloc(sizeof *sh);
    if (!sh)
        return sim_err_set(err, SIM_ENOMEM, "model 'charlm': out of memory");
    sh->k = (int)v[0];
    sh->emb = (int)v[1];
    sh->hidden = (int)v[2];
    sh->vocab = m->classes;
    m->priv = sh;
    const int64_t ku = (int64_t)sh->k * sh->emb;
    wl_model_add_layer(m, "embed", (int64_t)sh->vocab * sh->emb);
    wl_model_add_layer(m, "hidden", (int64_t)sh->hidden * (ku + 1));
    wl_model_add_layer(m, "out", (int64_t)sh->vocab * (sh->hidden + 1));
    /* embedding look-ups and their scatter are not counted */
    m->flops_per_sample = 6.0 * ((double)ku * sh->hidden + (double)sh->hidden * sh->vocab);
    return 0;
}

static void charlm_destroy(wl_model *m)
{
    free(m->priv);
    m->priv = NULL;
}

static size_t charlm_workspace_floats(const wl_model *m, int64_t max_batch)
{
    const charlm_shape *sh = shape(m);
    size_t b = (size_t)(max_batch > 0 ? max_batch : 1);
    return b * (2 * (size_t)sh->k * sh->emb + 2 * (size_t)sh->hidden + (size_t)sh->vocab);
}

static void charlm_init(const wl_model *m, float *params, gsl_rng *rng)
{
    const charlm_shape *sh = shape(m);
    const int64_t ku = (int64_t)sh->k * sh->emb;
    wl_model_init_gaussian(params, (int64_t)sh->vocab * sh->emb, 1.0, rng);
    float *w1 = params + m->layers[1].offset, *w2 = params + m->layers[2].offset;
    wl_model_init_gaussian(w1, sh->hidden * ku, sqrt(1.0 / (double)ku), rng);
    memset(w1 + sh->hidden * ku, 0, (size_t)sh->hidden * sizeof *w1);
    wl_model_init_gaussian(w2, (int64_t)sh->vocab * sh->hidden, sqrt(1.0 / sh->hidden), rng);
    memset(w2 + (int64_t)sh->vocab * sh->hidden, 0, (size_t)sh->vocab * sizeof *w2);
}

typedef struct charlm_bufs {
    float *u, *h, *z, *dh, *du;
} charlm_bufs;

static void bufs_of(const charlm_shape *sh, int64_t b, float *ws, charlm_bufs *bf)
{
    const int64_t ku = (int64_t)sh->k * sh->emb;
    bf->u = ws;
    bf->h = bf->u + b * ku;
    bf->z = bf->h + b * sh->hidden;
    bf->dh = bf->z + b * sh->vocab;
    bf->du = bf->dh + b * sh->hidden;
}

/* The id of context character j of sample s, clamped into the vocabulary
 * so that foreign data cannot index out of bounds. */
static int id_at(const charlm_shape *sh, const float *x, int64_t s, int j)
{
    int id = (int)x[s * sh->k + j];
    return id >= 0 && id < sh->vocab ? id : 0;
}

static void forward(const wl_model *m, const float *params, const float *x, int64_t b,
                    const charlm_bufs *bf)
{
    const charlm_shape *sh = shape(m);
    const int ku = sh->k * sh->emb, hd = sh->hidden, v = sh->vocab;
    const float *w1 = params + m->layers[1].offset, *w2 = params + m->layers[2].offset;
    for (int64_t s = 0; s < b; s++)
        for (int j = 0; j < sh->k; j++)
            memcpy(bf->u + s * ku + (int64_t)j * sh->emb,
                   params + (int64_t)id_at(sh, x, s, j) * sh->emb,
                   (size_t)sh->emb * sizeof(float));
    wl_dense_forward(w1, ku, hd, bf->u, b, bf->h);
    wl_vmath_tanh(bf->h, b * hd);
    wl_dense_forward(w2, hd, v, bf->h, b, bf->z);
}

/* Dense layer share of ||a_s||^2 and a_s.gbar: delta (b x nout, scaled by
 * 1/b), input (b x nin), mean gradient g (W then bias); tmp: b x nin. The
 * same sums as wl_dense_sample_stats, with a_s.gbar taken as (delta_s G).x_s
 * + delta_s.g_b (one b x nin product) rather than delta_s.(G x_s + g_b). */
static void dense_stats(const float *delta, const float *in, const float *g, int nin,
                        int nout, int64_t b, float *tmp, double *sq, double *q)
{
    const float *gb = g + (int64_t)nout * nin;
    wl_dense_backward(delta, g, nin, nout, b, tmp);
    const double nb = (double)b;
    for (int64_t s = 0; s < b; s++) {
        const float *ds = delta + s * nout, *xs = in + s * nin, *ts = tmp + s * nin;
        double xx = 1, dd = 0, dt = 0;
        for (int j = 0; j < nin; j++) {
            xx += (double)xs[j] * xs[j];
            dt += (double)ts[j] * xs[j];
        }
        for (int k = 0; k < nout; k++) {
            dd += (double)ds[k] * ds[k];
            dt += (double)ds[k] * gb[k];
        }
        sq[s] += nb * nb * dd * xx;
        q[s] += nb * dt;
    }
}

/* dh[i] *= 1 - h[i]^2 (tanh' from the output), in blocks of 8 with a
 * constant trip count so that GCC's -O2 vectoriser takes them. */
static void tanh_backward(float *restrict dh, const float *restrict h, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int u = 0; u < 8; u++)
            dh[i + u] *= 1.0f - h[i + u] * h[i + u];
    for (; i < n; i++)
        dh[i] *= 1.0f - h[i] * h[i];
}

static double charlm_run(const wl_model *m, const float *params, const float *x,
                         const float *y, int64_t b, float *grad, float *ws, double *sq,
                         double *q)
{
    const charlm_shape *sh = shape(m);
    const int ku = sh->k * sh->emb, hd = sh->hidden, v = sh->vocab, e = sh->emb;
    const float *w1 = params + m->layers[1].offset, *w2 = params + m->layers[2].offset;
    float *ge = grad, *g1 = grad + m->layers[1].offset, *g2 = grad + m->layers[2].offset;
    charlm_bufs bf;
    bufs_of(sh, b, ws, &bf);
    forward(m, params, x, b, &bf);
    double loss = 0;
    wl_softmax_xent_grad(bf.z, b, v, y, 1.0f / (float)b, &loss);
    if (sq) {
        memset(sq, 0, (size_t)b * sizeof *sq);
        memset(q, 0, (size_t)b * sizeof *q);
    }
    /* out */
    wl_dense_grad(bf.z, bf.h, hd, v, b, g2);
    if (sq)
        dense_stats(bf.z, bf.h, g2, hd, v, b, bf.dh, sq, q);
    /* hidden: dh = dz W2, times tanh' = 1 - h^2 */
    wl_dense_backward(bf.z, w2, hd, v, b, bf.dh);
    tanh_backward(bf.dh, bf.h, b * hd);
    wl_dense_grad(bf.dh, bf.u, ku, hd, b, g1);
    if (sq)
        dense_stats(bf.dh, bf.u, g1, ku, hd, b, bf.du, sq, q);
    /* embeddings: du = dh W1, scattered onto the rows of the ids */
    wl_dense_backward(bf.dh, w1, ku, hd, b, bf.du);
    memset(ge, 0, (size_t)v * e * sizeof *ge);
    for (int64_t s = 0; s < b; s++)
        for (int j = 0; j < sh->k; j++) {
            float *row = ge + (int64_t)id_at(sh, x, s, j) * e;
            const float *src = bf.du + s * ku + (int64_t)j * e;
            for (int t = 0; t < e; t++)
                row[t] += src[t];
        }
    if (sq) {
        const double nb = (double)b;
        for (int64_t s = 0; s < b; s++) {
            const float *du = bf.du + s * ku;
            double ss = 0, qq = 0;
            for (int j = 0; j < sh->k; j++) {
                const int id = id_at(sh, x, s, j);
                qq += cblas_sdot(e, du + (int64_t)j * e, 1, ge + (int64_t)id * e, 1);
                for (int jj = 0; jj < sh->k; jj++)
                    if (id_at(sh, x, s, jj) == id)
                        ss += cblas_sdot(e, du + (int64_t)j * e, 1, du + (int64_t)jj * e, 1);
            }
            sq[s] += nb * nb * ss;
            q[s] += nb * qq;
        }
    }
    return loss / (double)b;
}

static double charlm_loss_grad(const wl_model *m, const float *params, const float *x,
                               const float *y, int64_t b, float *grad, float *ws)
{
    if (b <= 0)
        return wl_model_zero_grad(m, grad);
    return charlm_run(m, params, x, y, b, grad, ws, NULL, NULL);
}

static float *charlm_logits(const wl_model *m, const float *params, const float *x,
                            int64_t b, float *ws)
{
    charlm_bufs bf;
    bufs_of(shape(m), b, ws, &bf);
    forward(m, params, x, b, &bf);
    return bf.z;
}

/* Samples are m->dim = k floats apart (charlm_create checks k = dim). */
static wl_eval charlm_evaluate(const wl_model *m, const float *params, const float *x,
                               const float *y, int64_t n, float *ws, int64_t ws_batch)
{
    return wl_softmax_evaluate(m, params, x, y, n, ws, ws_batch, charlm_logits);
}

static int charlm_batch_stats(const wl_model *m, const float *params, const float *x,
                              const float *y, int64_t b, wl_batch_stats *out, float *ws)
{
    float *gbar = ws;
    double *sq = wl_stats_doubles(m, ws), *q = sq + b;
    out->loss = charlm_run(m, params, x, y, b, gbar, wl_stats_model_ws(m, ws, b), sq, q);
    wl_stats_finish(m, gbar, sq, q, b, out);
    return 0;
}

const wl_model_vt wl_charlm_vt = {
    .name = "charlm",
    .args = "[(k, emb, hidden)]",
    .summary = "character LM: k embeddings, tanh hidden layer, softmax over the bytes "
               "(text datasets)",
    .create = charlm_create,
    .destroy = charlm_destroy,
    .workspace_floats = charlm_workspace_floats,
    .init = charlm_init,
    .loss_grad = charlm_loss_grad,
    .evaluate = charlm_evaluate,
    .batch_stats = charlm_batch_stats,
};
