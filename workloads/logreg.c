/* logreg: binary logistic regression. Labels are 0/1 (LIBSVM's -1/+1 are
 * mapped by the loader); p = sigmoid(w.a + b), loss softplus(z) - y z
 * averaged over the batch (stable for any z); parameters w (dim) then b.
 * A sample is predicted 1 when p >= 0.5, i.e. z >= 0. The workspace holds
 * one batch of logits, overwritten in place by the residuals p - y. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "workloads/models_impl.h"

static int logreg_create(wl_model *m, const char *const *args, int nargs, sim_err *err)
{
    (void)args;
    if (nargs != 0)
        return sim_err_set(err, SIM_ECONFIG, "model 'logreg': takes no arguments");
    if (m->classes != 2)
        return wl_model_misfit(m, "a binary classification dataset", err);
    m->classes = 1;
    wl_model_add_layer(m, "linear", (int64_t)m->dim + 1);
    m->flops_per_sample = 6.0 * m->dim; /* forward 2d, backward 4d */
    return 0;
}

static size_t logreg_workspace_floats(const wl_model *m, int64_t max_batch)
{
    (void)m;
    return (size_t)(max_batch > 0 ? max_batch : 1);
}

static void logreg_init(const wl_model *m, float *params, gsl_rng *rng)
{
    (void)rng;
    memset(params, 0, (size_t)m->n_params * sizeof *params);
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

/* z = X w + b into ws[0..b-1] */
static void logits(const wl_model *m, const float *params, const float *x, int64_t b,
                   float *z)
{
    const int d = m->dim;
    for (int64_t i = 0; i < b; i++)
        z[i] = params[d];
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)b, d, 1.0f, x, d, params, 1, 1.0f, z, 1);
}

static double logreg_loss_grad(const wl_model *m, const float *params, const float *x,
                               const float *y, int64_t b, float *grad, float *ws)
{
    const int d = m->dim;
    if (b <= 0) {
        memset(grad, 0, (size_t)m->n_params * sizeof *grad);
        return 0.0;
    }
    logits(m, params, x, b, ws);
    double loss = 0, rsum = 0;
    for (int64_t i = 0; i < b; i++) {
        double z = ws[i];
        loss += softplus(z) - (double)y[i] * z;
        ws[i] = (float)(sigmoid(z) - (double)y[i]);
        rsum += ws[i];
    }
    cblas_sgemv(CblasRowMajor, CblasTrans, (int)b, d, 1.0f / (float)b, x, d, ws, 1, 0.0f,
                grad, 1);
    grad[d] = (float)(rsum / (double)b);
    return loss / (double)b;
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
        logits(m, params, x + i0 * m->dim, b, ws);
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

/* Per-sample gradients factor as r_s [x_s; 1] with r_s = p_s - y_s. */
static int logreg_batch_stats(const wl_model *m, const float *params, const float *x,
                              const float *y, int64_t b, wl_batch_stats *out, float *ws)
{
    const int d = m->dim;
    float *gbar = ws, *r = wl_stats_model_ws(m, ws, b);
    double *sq = wl_stats_doubles(m, ws), *q = sq + b;
    out->loss = logreg_loss_grad(m, params, x, y, b, gbar, r);
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

const wl_model_vt wl_logreg_vt = {
    .name = "logreg",
    .args = "",
    .summary = "binary logistic regression, labels 0/1 (binary classification datasets)",
    .create = logreg_create,
    .destroy = NULL,
    .workspace_floats = logreg_workspace_floats,
    .init = logreg_init,
    .loss_grad = logreg_loss_grad,
    .evaluate = logreg_evaluate,
    .batch_stats = logreg_batch_stats,
};
