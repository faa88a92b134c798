/* linreg: prediction w.a + b, loss 0.5 (pred - y)^2 averaged over the
 * batch; parameters w (dim) then b. The workspace holds the residuals of one
 * batch (max_batch floats); sums that feed the loss and the bias gradient are
 * accumulated in double. The layer, the forward pass, the gradient and the
 * per-sample statistics are the linear core's (linear.c). */
#include <math.h>

#include "workloads/linear_impl.h"
#include "workloads/models_impl.h"

static int linreg_create(wl_model *m, const char *const *args, int nargs, sim_err *err)
{
    (void)args;
    return wl_linear_create(m, nargs, m->classes == 0, "a regression dataset", 1, err);
}

/* r = z - y over b samples (z = X w + b in r on entry); returns sum 0.5 r^2. */
static double residuals_of(const float *y, int64_t b, float *r)
{
    double loss = 0;
    for (int64_t i = 0; i < b; i++) {
        r[i] -= y[i];
        loss += 0.5 * (double)r[i] * (double)r[i];
    }
    return loss;
}

/* r = X w + b - y over b samples; returns sum 0.5 r^2. */
static double residuals(const wl_model *m, const float *params, const float *x,
                        const float *y, int64_t b, float *r)
{
    wl_linear_forward(m, params, x, b, r);
    return residuals_of(y, b, r);
}

static double linreg_loss_grad(const wl_model *m, const float *params, const float *x,
                               const float *y, int64_t b, float *grad, float *ws)
{
    if (b <= 0)
        return wl_model_zero_grad(m, grad);
    double loss = residuals(m, params, x, y, b, ws);
    wl_linear_grad(m, x, ws, b, grad);
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
        loss += residuals(m, params, x + i * m->dim, y + i, b, ws);
    }
    ev.loss = loss / (double)n;
    return ev;
}

static double linreg_loss_grad_sparse(const wl_model *m, const float *params,
                                      const wl_csr *X, const int64_t *rows, const float *y,
                                      int64_t b, float *grad, float *ws)
{
    if (b <= 0)
        return wl_model_zero_grad(m, grad);
    wl_linear_forward_sparse(m, params, X, rows, 0, b, ws);
    double loss = residuals_of(y, b, ws);
    wl_linear_grad_sparse(m, X, rows, ws, b, grad);
    return loss / (double)b;
}

static wl_eval linreg_evaluate_sparse(const wl_model *m, const float *params, const wl_csr *X,
                                      const int64_t *rows, const float *y, int64_t n,
                                      float *ws, int64_t ws_batch)
{
    wl_eval ev = {NAN, NAN};
    if (n <= 0 || ws_batch <= 0)
        return ev;
    double loss = 0;
    for (int64_t i = 0; i < n; i += ws_batch) {
        int64_t b = n - i < ws_batch ? n - i : ws_batch;
        wl_linear_forward_sparse(m, params, X, rows, i, b, ws);
        loss += residuals_of(y + i, b, ws);
    }
    ev.loss = loss / (double)n;
    return ev;
}

const wl_model_vt wl_linreg_vt = {
    .name = "linreg",
    .args = "",
    .summary = "linear regression, squared loss (regression datasets)",
    .create = linreg_create,
    .destroy = NULL,
    .workspace_floats = wl_linear_workspace_floats,
    .init = wl_linear_init,
    .loss_grad = linreg_loss_grad,
    .evaluate = linreg_evaluate,
    .batch_stats = wl_linear_batch_stats,
    .loss_grad_sparse = linreg_loss_grad_sparse,
    .evaluate_sparse = linreg_evaluate_sparse,
};
