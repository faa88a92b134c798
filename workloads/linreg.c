/* linreg: prediction w.a + b, loss 0.5 (pred - y)^2 averaged over the
 * batch; parameters w (dim) then b. The workspace holds the residuals of one
 * batch (max_batch floats); sums that feed the loss and the bias gradient are
 * accumulated in double. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "workloads/models_impl.h"

static int linreg_create(wl_model *m, const char *const *args, int nargs, sim_err *err)
{
    (void)args;
    if (nargs != 0)
        return sim_err_set(err, SIM_ECONFIG, "model 'linreg': takes no arguments");
    if (m->classes != 0)
        return wl_model_misfit(m, "a regression dataset", err);
    m->classes = 1;
    m->n_params = (int64_t)m->dim + 1;
    m->flops_per_sample = 6.0 * m->dim; /* forward 2d, backward 4d */
    m->n_layers = 1;
    strcpy(m->layers[0].name, "linear");
    m->layers[0].offset = 0;
    m->layers[0].size = m->n_params;
    return 0;
}

static size_t linreg_workspace_floats(const wl_model *m, int64_t max_batch)
{
    (void)m;
    return (size_t)(max_batch > 0 ? max_batch : 1);
}

static void linreg_init(const wl_model *m, float *params, gsl_rng *rng)
{
    (void)rng;
    memset(params, 0, (size_t)m->n_params * sizeof *params);
}

/* r = X w + b - y over b samples; returns sum 0.5 r^2 and adds sum r to *rsum. */
static double residuals(const wl_model *m, const float *params, const float *x,
                        const float *y, int64_t b, float *r, double *rsum)
{
    const int d = m->dim;
    const float bias = params[d];
    for (int64_t i = 0; i < b; i++)
        r[i] = bias;
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)b, d, 1.0f, x, d, params, 1, 1.0f, r, 1);
    double loss = 0, s = 0;
    for (int64_t i = 0; i < b; i++) {
        r[i] -= y[i];
        s += r[i];
        loss += 0.5 * (double)r[i] * (double)r[i];
    }
    if (rsum)
        *rsum += s;
    return loss;
}

static double linreg_loss_grad(const wl_model *m, const float *params, const float *x,
                               const float *y, int64_t b, float *grad, float *ws)
{
    const int d = m->dim;
    if (b <= 0) {
        memset(grad, 0, (size_t)m->n_params * sizeof *grad);
        return 0.0;
    }
    double rsum = 0;
    double loss = residuals(m, params, x, y, b, ws, &rsum);
    cblas_sgemv(CblasRowMajor, CblasTrans, (int)b, d, 1.0f / (float)b, x, d, ws, 1, 0.0f,
                grad, 1);
    grad[d] = (float)(rsum / (double)b);
    return loss / (double)b;
}

static wl_eval linreg_evaluate(const wl_model *m, const float *params, const float *x,
                               const float *y, int64_t n, float *ws, int64_t ws_batch)
{
    wl_eval ev = {NAN, NAN};
    if (n <= 0 || ws_batch <= 0)
        return ev;
    double loss = 0;
    for (int64_t i = 0; i < n; i += ws_batch) {
        int64_t b = n - i < ws_batch ? n - i : ws_batch;
        loss += residuals(m, params, x + i * m->dim, y + i, b, ws, NULL);
    }
    ev.loss = loss / (double)n;
    return ev;
}

/* Per-sample gradients factor as r_s [x_s; 1] (r_s the residual):
 * ||a_s||^2 = r_s^2 (||x_s||^2 + 1), a_s.gbar = r_s (x_s.g_w + g_b). */
static int linreg_batch_stats(const wl_model *m, const float *params, const float *x,
                              const float *y, int64_t b, wl_batch_stats *out, float *ws)
{
    const int d = m->dim;
    float *gbar = ws, *r = wl_stats_model_ws(m, ws, b);
    double *sq = wl_stats_doubles(m, ws), *q = sq + b;
    out->loss = linreg_loss_grad(m, params, x, y, b, gbar, r);
    out->gnorm2 = 0;
    for (int64_t j = 0; j < m->n_params; j++)
        out->gnorm2 += (double)gbar[j] * gbar[j];
    for (int64_t s = 0; s < b; s++) {
        const float *xs = x + s * d;
        double xx = 1, xg = gbar[d];
        for (int j = 0; j < d; j++) {
            xx += (double)xs[j] * xs[j];
            xg += (double)xs[j] * gbar[j];
        }
        sq[s] = (double)r[s] * r[s] * xx;
        q[s] = (double)r[s] * xg;
    }
    wl_stats_finish(sq, q, b, out);
    return 0;
}

const wl_model_vt wl_linreg_vt = {
    .name = "linreg",
    .args = "",
    .summary = "linear regression, squared loss (regression datasets)",
    .create = linreg_create,
    .destroy = NULL,
    .workspace_floats = linreg_workspace_floats,
    .init = linreg_init,
    .loss_grad = linreg_loss_grad,
    .evaluate = linreg_evaluate,
    .batch_stats = linreg_batch_stats,
};
