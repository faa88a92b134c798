/* Private: the core shared by the linear models. linreg and logreg are one
 * linear layer w (dim) then b with a scalar output z = w.a + b and a
 * per-sample residual r = dloss/dz (pred - y for the squared loss, p - y
 * for the logistic loss); softmax is the same layer with `classes` outputs.
 * The scalar models' gradient workspace is one batch of z, which their
 * loss_grad overwrites in place with the residuals. */
#ifndef DTSIM_WL_LINEAR_IMPL_H
#define DTSIM_WL_LINEAR_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "sim/err.h"
#include "workloads/model.h"

/* vt->create of a linear model: no arguments accepted; when fits is 0,
 * wl_model_misfit(m, need); else one layer "linear" of outputs x (dim + 1)
 * parameters, m->classes = outputs, 6 dim outputs FLOPs per sample. */
int wl_linear_create(wl_model *m, int nargs, int fits, const char *need, int outputs,
                     sim_err *err);

/* Workspace and initial parameters of the scalar models: max_batch floats;
 * all parameters 0. */
size_t wl_linear_workspace_floats(const wl_model *m, int64_t max_batch);
void wl_linear_init(const wl_model *m, float *params, gsl_rng *rng);

/* z = X w + b over b samples (the bias copied first, one sgemv adding X w). */
void wl_linear_forward(const wl_model *m, const float *params, const float *x, int64_t b,
                       float *z);

/* From the residuals r of b >= 1 samples: grad w = X^T r / b, grad b =
 * (sum r) / b with the sum in double in sample order. */
void wl_linear_grad(const wl_model *m, const float *x, const float *r, int64_t b,
                    float *grad);

/* The sparse forms (rows as in wl_model_vt.loss_grad_sparse, offset by
 * first when rows is NULL): z_i = b + sum over row i's stored values of
 * val w[col] (summed in double); grad w = X^T r / b over the stored
 * values after zeroing the d weights, grad b as above. */
void wl_linear_forward_sparse(const wl_model *m, const float *params, const wl_csr *X,
                              const int64_t *rows, int64_t first, int64_t b, float *z);
void wl_linear_grad_sparse(const wl_model *m, const wl_csr *X, const int64_t *rows,
                           const float *r, int64_t b, float *grad);
/* Row index of the i-th sample of a sparse batch. */
static inline int64_t wl_csr_row_of(const int64_t *rows, int64_t first, int64_t i)
{
    return rows ? rows[first + i] : first + i;
}

/* vt->batch_stats of the scalar models. Per-sample gradients factor as
 * r_s [x_s; 1]: ||a_s||^2 = r_s^2 (||x_s||^2 + 1) and a_s.gbar =
 * r_s (x_s.g_w + g_b), with r_s the residuals that vt->loss_grad leaves in
 * its workspace. */
int wl_linear_batch_stats(const wl_model *m, const float *params, const float *x,
                          const float *y, int64_t b, wl_batch_stats *out, float *ws);

#endif
