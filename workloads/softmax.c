/* softmax: multinomial logistic regression. Parameters W (classes x dim,
 * row-major) then the bias (classes). logits = X W^T + bias through one
 * sgemm, a log-softmax stabilised by the row maximum, cross-entropy averaged
 * over the batch. The workspace holds one batch of logits (max_batch x
 * classes floats), overwritten in place by the logit gradients. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "workloads/models_impl.h"

static int softmax_create(wl_model *m, const char *const *args, int nargs, sim_err *err)
{
    (void)args;
    if (nargs != 0)
        return sim_err_set(err, SIM_ECONFIG, "model 'softmax': takes no arguments");
    if (m->classes < 2)
        return wl_model_misfit(m, "a classification dataset", err);
    const int64_t c = m->classes, d = m->dim;
    m->n_params = c * d + c;
    m->flops_per_sample = 6.0 * (double)d * (double)c;
    m->n_layers = 1;
    strcpy(m->layers[0].name, "linear");
    m->layers[0].offset = 0;
    m->layers[0].size = m->n_params;
    return 0;
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

static void logits_forward(const wl_model *m, const float *params, const float *x,
                           int64_t b, float *z)
{
    const int c = m->classes, d = m->dim;
    const float *bias = params + (int64_t)c * d;
    for (int64_t i = 0; i < b; i++)
        memcpy(z + i * c, bias, (size_t)c * sizeof *z);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, c, d, 1.0f, x, d, params,
                d, 1.0f, z, c);
}

double wl_softmax_row_loss(float *z, int c, int yi, int probs, int *argmax)
{
    int am = 0;
    float mx = z[0];
    for (int k = 1; k < c; k++)
        if (z[k] > mx) {
            mx = z[k];
            am = k;
        }
    double s = 0;
    float zy = (yi >= 0 && yi < c) ? z[yi] : mx;
    for (int k = 0; k < c; k++) {
        float e = expf(z[k] - mx);
        s += e;
        if (probs)
            z[k] = e;
    }
    if (probs) {
        float inv = (float)(1.0 / s);
        for (int k = 0; k < c; k++)
            z[k] *= inv;
    }
    if (argmax)
        *argmax = am;
    return log(s) - ((double)zy - (double)mx);
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
    float *gb = grad + (int64_t)c * d;
    if (b <= 0) {
        memset(grad, 0, (size_t)m->n_params * sizeof *grad);
        return 0.0;
    }
    const float invb = 1.0f / (float)b;
    double loss = 0;
    for (int64_t i0 = 0; i0 < b; i0 += SOFTMAX_BLOCK) {
        const int64_t nb = b - i0 < SOFTMAX_BLOCK ? b - i0 : SOFTMAX_BLOCK;
        const float *xb = x + i0 * d;
        float *z = ws + i0 * c;
        logits_forward(m, params, xb, nb, z);
        for (int64_t i = 0; i < nb; i++) {
            float *zi = z + i * c;
            int yi = (int)y[i0 + i];
            loss += wl_softmax_row_loss(zi, c, yi, 1, NULL);
            if (yi >= 0 && yi < c)
                zi[yi] -= 1.0f;
            for (int k = 0; k < c; k++)
                zi[k] *= invb;
        }
        /* grad_W (+)= dZ^T X over this block (classes x dim) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, c, d, (int)nb, 1.0f, z, c, xb,
                    d, i0 == 0 ? 0.0f : 1.0f, grad, d);
    }
    for (int k = 0; k < c; k++) {
        double s = 0;
        for (int64_t i = 0; i < b; i++)
            s += ws[i * c + k];
        gb[k] = (float)s;
    }
    return loss / (double)b;
}

static wl_eval softmax_evaluate(const wl_model *m, const float *params, const float *x,
                                const float *y, int64_t n, float *ws, int64_t ws_batch)
{
    wl_eval ev = {NAN, NAN};
    if (n <= 0 || ws_batch <= 0)
        return ev;
    const int c = m->classes;
    double loss = 0;
    int64_t correct = 0;
    const int64_t step = ws_batch < SOFTMAX_BLOCK ? ws_batch : SOFTMAX_BLOCK;
    for (int64_t i0 = 0; i0 < n; i0 += step) {
        int64_t b = n - i0 < step ? n - i0 : step;
        logits_forward(m, params, x + i0 * m->dim, b, ws);
        for (int64_t i = 0; i < b; i++) {
            int yi = (int)y[i0 + i], am;
            loss += wl_softmax_row_loss(ws + i * c, c, yi, 0, &am);
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
    out->gnorm2 = 0;
    for (int64_t j = 0; j < m->n_params; j++)
        out->gnorm2 += (double)gbar[j] * gbar[j];
    const float *gb = gbar + (int64_t)c * d;
    for (int64_t s = 0; s < b; s++) {
        const float *xs = x + s * d, *zs = dz + s * c;
        memcpy(gx, gb, (size_t)c * sizeof *gx);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, c, d, 1.0f, gbar, d, xs, 1, 1.0f, gx, 1);
        double xx = 1, zz = 0, zq = 0;
        for (int j = 0; j < d; j++)
            xx += (double)xs[j] * xs[j];
        for (int k = 0; k < c; k++) {
            zz += (double)zs[k] * zs[k];
            zq += (double)zs[k] * gx[k];
        }
        sq[s] = (double)b * (double)b * zz * xx;
        q[s] = (double)b * zq;
    }
    wl_stats_finish(sq, q, b, out);
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
};
