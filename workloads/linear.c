/* The linear-model core (see linear_impl.h): construction, the forward
 * pass z = X w + b and the gradient X^T r / b of the scalar models, and
 * their per-sample statistics. The float order of each loop is part of the
 * models' results and is kept as linreg and logreg were written. */
#include <cblas.h>
#include <string.h>

#include "workloads/linear_impl.h"
#include "workloads/models_impl.h"

int wl_linear_create(wl_model *m, int nargs, int fits, const char *need, int outputs,
                     sim_err *err)
{
    if (nargs != 0)
        return sim_err_set(err, SIM_ECONFIG, "model '%s': takes no arguments", m->vt->name);
    if (!fits)
        return wl_model_misfit(m, need, err);
    m->classes = outputs;
    wl_model_add_layer(m, "linear", (int64_t)outputs * ((int64_t)m->dim + 1));
    m->flops_per_sample = 6.0 * (double)m->dim * (double)outputs; /* fwd 2, bwd 4 */
    return 0;
}

size_t wl_linear_workspace_floats(const wl_model *m, int64_t max_batch)
{
    (void)m;
    return (size_t)(max_batch > 0 ? max_batch : 1);
}

void wl_linear_init(const wl_model *m, float *params, gsl_rng *rng)
{
    (void)rng;
    memset(params, 0, (size_t)m->n_params * sizeof *params);
}

void wl_linear_forward(const wl_model *m, const float *params, const float *x, int64_t b,
                       float *z)
{
    const int d = m->dim;
    for (int64_t i = 0; i < b; i++)
        z[i] = params[d];
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)b, d, 1.0f, x, d, params, 1, 1.0f, z, 1);
}

void wl_linear_grad(const wl_model *m, const float *x, const float *r, int64_t b,
                    float *grad)
{
    const int d = m->dim;
    double rsum = 0;
    for (int64_t i = 0; i < b; i++)
        rsum += r[i];
    cblas_sgemv(CblasRowMajor, CblasTrans, (int)b, d, 1.0f / (float)b, x, d, r, 1, 0.0f,
                grad, 1);
    grad[d] = (float)(rsum / (double)b);
}

void wl_linear_forward_sparse(const wl_model *m, const float *params, const wl_csr *X,
                              const int64_t *rows, int64_t first, int64_t b, float *z)
{
    const float *w = params;
    const float bias = params[m->dim];
    for (int64_t i = 0; i < b; i++) {
        const int64_t r = wl_csr_row_of(rows, first, i);
        double s = 0;
        for (int64_t k = X->row[r]; k < X->row[r + 1]; k++)
            s += (double)X->val[k] * (double)w[X->col[k]];
        z[i] = (float)((double)bias + s);
    }
}

void wl_linear_grad_sparse(const wl_model *m, const wl_csr *X, const int64_t *rows,
                           const float *r, int64_t b, float *grad)
{
    const int d = m->dim;
    memset(grad, 0, (size_t)d * sizeof *grad);
    double rsum = 0;
    const float invb = 1.0f / (float)b;
    for (int64_t i = 0; i < b; i++) {
        const int64_t q = wl_csr_row_of(rows, 0, i);
        const float ri = r[i] * invb;
        rsum += r[i];
        for (int64_t k = X->row[q]; k < X->row[q + 1]; k++)
            grad[X->col[k]] += ri * X->val[k];
    }
    grad[d] = (float)(rsum / (double)b);
}

int wl_linear_batch_stats(const wl_model *m, const float *params, const float *x,
                          const float *y, int64_t b, wl_batch_stats *out, float *ws)
{
    const int d = m->dim;
    float *gbar = ws, *r = wl_stats_model_ws(m, ws, b);
    double *sq = wl_stats_doubles(m, ws), *q = sq + b;
    out->loss = m->vt->loss_grad(m, params, x, y, b, gbar, r);
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
    wl_stats_finish(m, gbar, sq, q, b, out);
    return 0;
}
