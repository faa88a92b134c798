/* softmax: multinomial logistic regression. Parameters W (classes x dim,
 * row-major) then the bias (classes). logits = X W^T + bias through one
 * sgemm, a log-softmax stabilised by the row maximum, cross-entropy averaged
 * over the batch. The workspace holds one batch of logits (max_batch x
 * classes floats), overwritten in place by the logit gradients. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "workloads/dense_impl.h"
#include "workloads/linear_impl.h"
#include "workloads/models_impl.h"

static int softmax_create(wl_model *m, const char *const *args, int nargs, sim_err *err)
{
    (void)args;
    return wl_linear_create(m, nargs, m->classes >= 2, "a classification dataset", m->classes,
                            err);
}

static size_t softmax_workspace_floats(const wl_model *m, int64_t max_batch)
{
    return (size_t)(max_batch > 0 ? max_batch : 1) * (size_t)m->classes;
}

/* W ~ N(0, 0.01^2) in row-major order; the bias starts at zero. */
static void softmax_init(const wl_model *m, float *params, gsl_rng *rng)
{
    const int64_t nw = (int64_t)m->classes * m->dim;
    wl_model_init_gaussian(params, nw, 0.01, rng);
    memset(params + nw, 0, (size_t)m->classes * sizeof *params);
}

/* logits = X W^T + bias into ws (b x classes) */
static float *logits(const wl_model *m, const float *params, const float *x, int64_t b,
                     float *ws)
{
    wl_dense_forward(params, m->dim, m->classes, x, b, ws);
    return ws;
}

/* Rows per sgemm call. OpenBLAS 0.3.21 runs these thin products (10
 * outputs) about 4x slower per row once a call exceeds ~64 rows (bench_grad
 * on AMD EPYC), so larger batches are processed in row blocks; the result
 * does not depend on the blocking beyond float summation order. */
#define SOFTMAX_BLOCK 64

static double softmax_loss_grad(const wl_model *m, const float *params, const float *x,
                                const float *y, int64_t b, float *grad, float *ws)
{
    const int c = m->classes, d = m->dim;
    if (b <= 0)
        return wl_model_zero_grad(m, grad);
    const float invb = 1.0f / (float)b;
    double loss = 0;
    for (int64_t i0 = 0; i0 < b; i0 += SOFTMAX_BLOCK) {
        const int64_t nb = b - i0 < SOFTMAX_BLOCK ? b - i0 : SOFTMAX_BLOCK;
        const float *xb = x + i0 * d;
        float *z = ws + i0 * c;
        logits(m, params, xb, nb, z);
        wl_softmax_xent_grad(z, nb, c, y + i0, invb, &loss);
        /* grad_W (+)= dZ^T X over this block (classes x dim) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, c, d, (int)nb, 1.0f, z, c, xb,
                    d, i0 == 0 ? 0.0f : 1.0f, grad, d);
    }
    wl_dense_bias_grad(ws, b, c, grad + (int64_t)c * d);
    return loss / (double)b;
}

static wl_eval softmax_evaluate(const wl_model *m, const float *params, const float *x,
                                const float *y, int64_t n, float *ws, int64_t ws_batch)
{
    const int64_t step = ws_batch < SOFTMAX_BLOCK ? ws_batch : SOFTMAX_BLOCK;
    return wl_softmax_evaluate(m, params, x, y, n, ws, step, logits);
}

/* Sparse rows: logits z_ic = bias_c + sum over the row's stored values of
 * val W[c][col] (summed in double), b rows from the first-th. */
static void logits_sparse(const wl_model *m, const float *params, const wl_csr *X,
                          const int64_t *rows, int64_t first, int64_t b, float *z)
{
    const int c = m->classes;
    const int64_t d = m->dim;
    const float *bias = params + (int64_t)c * d;
    for (int64_t i = 0; i < b; i++) {
        const int64_t r = wl_csr_row_of(rows, first, i);
        for (int k = 0; k < c; k++) {
            const float *wk = params + k * d;
            double s = 0;
            for (int64_t e = X->row[r]; e < X->row[r + 1]; e++)
                s += (double)X->val[e] * (double)wk[X->col[e]];
            z[i * c + k] = (float)((double)bias[k] + s);
        }
    }
}

static double softmax_loss_grad_sparse(const wl_model *m, const float *params,
                                       const wl_csr *X, const int64_t *rows, const float *y,
                                       int64_t b, float *grad, float *ws)
{
    const int c = m->classes;
    const int64_t d = m->dim;
    if (b <= 0)
        return wl_model_zero_grad(m, grad);
    double loss = 0;
    logits_sparse(m, params, X, rows, 0, b, ws);
    wl_softmax_xent_grad(ws, b, c, y, 1.0f / (float)b, &loss);
    /* grad_W = dZ^T X over the stored values */
    memset(grad, 0, (size_t)(c * d) * sizeof *grad);
    for (int64_t i = 0; i < b; i++) {
        const int64_t r = wl_csr_row_of(rows, 0, i);
        const float *dz = ws + i * c;
        for (int k = 0; k < c; k++) {
            float *gk = grad + k * d;
            const float dk = dz[k];
            for (int64_t e = X->row[r]; e < X->row[r + 1]; e++)
                gk[X->col[e]] += dk * X->val[e];
        }
    }
    wl_dense_bias_grad(ws, b, c, grad + (int64_t)c * d);
    return loss / (double)b;
}

static wl_eval softmax_evaluate_sparse(const wl_model *m, const float *params,
                                       const wl_csr *X, const int64_t *rows, const float *y,
                                       int64_t n, float *ws, int64_t ws_batch)
{
    wl_eval ev = {NAN, NAN};
    if (n <= 0 || ws_batch <= 0)
        return ev;
    const int c = m->classes;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t i0 = 0; i0 < n; i0 += ws_batch) {
        const int64_t b = n - i0 < ws_batch ? n - i0 : ws_batch;
        logits_sparse(m, params, X, rows, i0, b, ws);
        for (int64_t i = 0; i < b; i++) {
            int yi = (int)y[i0 + i], am;
            loss += wl_softmax_row_loss(ws + i * c, c, yi, &am);
            correct += am == yi;
        }
    }
    ev.loss = loss / (double)n;
    ev.accuracy = (double)correct / (double)n;
    return ev;
}

/* Per-sample gradients factor as dz_s (x) [x_s; 1] with dz_s = p_s - e_y:
 * ||a_s||^2 = ||dz_s||^2 (||x_s||^2 + 1) and a_s.gbar = dz_s.(G x_s + g_b).
 * loss_grad leaves dz / b for every row in the model workspace. */
static int softmax_batch_stats(const wl_model *m, const float *params, const float *x,
                               const float *y, int64_t b, wl_batch_stats *out, float *ws)
{
    const int c = m->classes, d = m->dim;
    float *gbar = ws, *gx = ws + m->n_params, *dz = wl_stats_model_ws(m, ws, b);
    double *sq = wl_stats_doubles(m, ws), *q = sq + b;
    out->loss = softmax_loss_grad(m, params, x, y, b, gbar, dz);
    const float *gb = gbar + (int64_t)c * d;
    for (int64_t s = 0; s < b; s++) {
        const float *xs = x + s * d, *zs = dz + s * c;
        memcpy(gx, gb, (size_t)c * sizeof *gx);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, c, d, 1.0f, gbar, d, xs, 1, 1.0f, gx, 1);
        sq[s] = q[s] = 0;
        wl_dense_sample_stats(zs, xs, gx, d, c, (double)b, &sq[s], &q[s]);
    }
    wl_stats_finish(m, gbar, sq, q, b, out);
    return 0;
}

const wl_model_vt wl_softmax_vt = {
    .name = "softmax",
    .args = "",
    .summary = "multinomial logistic regression, cross-entropy (classification datasets)",
    .create = softmax_create,
    .destroy = NULL,
    .workspace_floats = softmax_workspace_floats,
    .init = softmax_init,
    .loss_grad = softmax_loss_grad,
    .evaluate = softmax_evaluate,
    .batch_stats = softmax_batch_stats,
    .loss_grad_sparse = softmax_loss_grad_sparse,
    .evaluate_sparse = softmax_evaluate_sparse,
};
