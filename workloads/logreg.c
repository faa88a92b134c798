/* logreg: binary logistic regression. Labels are 0/1 (LIBSVM's -1/+1 are
 * mapped by the loader); p = sigmoid(w.a + b), loss softplus(z) - y z
 * averaged over the batch (stable for any z); parameters w (dim) then b.
 * A sample is predicted 1 when p >= 0.5, i.e. z >= 0. The workspace holds
 * one batch of logits, overwritten in place by the residuals p - y. The
 * layer, the forward pass, the gradient and the per-sample statistics are
 * the linear core's (linear.c). */
#include <math.h>

#include "workloads/linear_impl.h"
#include "workloads/models_impl.h"

static int logreg_create(wl_model *m, const char *const *args, int nargs, sim_err *err)
{
    (void)args;
    return wl_linear_create(m, nargs, m->classes == 2, "a binary classification dataset", 1,
                            err);
}

/* log(1 + e^z) without overflow */
static double softplus(double z)
{
    return (z > 0 ? z : 0) + log1p(exp(-fabs(z)));
}

static double sigmoid(double z)
{
    if (z >= 0)
        return 1.0 / (1.0 + exp(-z));
    double e = exp(z);
    return e / (1.0 + e);
}

/* The logits in ws become the residuals p - y; returns the summed loss. */
static double logistic_residuals(const float *y, int64_t b, float *ws)
{
    double loss = 0;
    for (int64_t i = 0; i < b; i++) {
        double z = ws[i];
        loss += softplus(z) - (double)y[i] * z;
        ws[i] = (float)(sigmoid(z) - (double)y[i]);
    }
    return loss;
}

/* Adds the loss and the correct predictions of b logits z. */
static void logistic_score(const float *z, const float *y, int64_t b, double *loss,
                           int64_t *correct)
{
    for (int64_t i = 0; i < b; i++) {
        double zi = z[i], yi = y[i];
        *loss += softplus(zi) - yi * zi;
        *correct += (zi >= 0) == (yi > 0.5);
    }
}

static double logreg_loss_grad(const wl_model *m, const float *params, const float *x,
                               const float *y, int64_t b, float *grad, float *ws)
{
    if (b <= 0)
        return wl_model_zero_grad(m, grad);
    wl_linear_forward(m, params, x, b, ws);
    double loss = logistic_residuals(y, b, ws);
    wl_linear_grad(m, x, ws, b, grad);
    return loss / (double)b;
}

static double logreg_loss_grad_sparse(const wl_model *m, const float *params,
                                      const wl_csr *X, const int64_t *rows, const float *y,
                                      int64_t b, float *grad, float *ws)
{
    if (b <= 0)
        return wl_model_zero_grad(m, grad);
    wl_linear_forward_sparse(m, params, X, rows, 0, b, ws);
    double loss = logistic_residuals(y, b, ws);
    wl_linear_grad_sparse(m, X, rows, ws, b, grad);
    return loss / (double)b;
}

static wl_eval logreg_evaluate_sparse(const wl_model *m, const float *params, const wl_csr *X,
                                      const int64_t *rows, const float *y, int64_t n,
                                      float *ws, int64_t ws_batch)
{
    wl_eval ev = {NAN, NAN};
    if (n <= 0 || ws_batch <= 0)
        return ev;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t i0 = 0; i0 < n; i0 += ws_batch) {
        int64_t b = n - i0 < ws_batch ? n - i0 : ws_batch;
        wl_linear_forward_sparse(m, params, X, rows, i0, b, ws);
        logistic_score(ws, y + i0, b, &loss, &correct);
    }
    ev.loss = loss / (double)n;
    ev.accuracy = (double)correct / (double)n;
    return ev;
}

static wl_eval logreg_evaluate(const wl_model *m, const float *params, const float *x,
                               const float *y, int64_t n, float *ws, int64_t ws_batch)
{
    wl_eval ev = {NAN, NAN};
    if (n <= 0 || ws_batch <= 0)
        return ev;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t i0 = 0; i0 < n; i0 += ws_batch) {
        int64_t b = n - i0 < ws_batch ? n - i0 : ws_batch;
        wl_linear_forward(m, params, x + i0 * m->dim, b, ws);
        for (int64_t i = 0; i < b; i++) {
            double z = ws[i], yi = y[i0 + i];
            loss += softplus(z) - yi * z;
            correct += (z >= 0) == (yi > 0.5);
        }
    }
    ev.loss = loss / (double)n;
    ev.accuracy = (double)correct / (double)n;
    return ev;
}

const wl_model_vt wl_logreg_vt = {
    .name = "logreg",
    .args = "",
    .summary = "binary logistic regression, labels 0/1 (binary classification datasets)",
    .create = logreg_create,
    .destroy = NULL,
    .workspace_floats = wl_linear_workspace_floats,
    .init = wl_linear_init,
    .loss_grad = logreg_loss_grad,
    .evaluate = logreg_evaluate,
    .batch_stats = wl_linear_batch_stats,
    .loss_grad_sparse = logreg_loss_grad_sparse,
    .evaluate_sparse = logreg_evaluate_sparse,
};
