/* Private glue between the model registry (model.c) and the model files
 * (linreg.c, softmax.c, ...). A new model is one file defining a
 * `const wl_model_vt`, its line in meson.build and its line in models.def. */
#ifndef DTSIM_WL_MODELS_IMPL_H
#define DTSIM_WL_MODELS_IMPL_H

#include <string.h>

#include "sim/err.h"
#include "workloads/model.h"

/* vt->create is called with m->dim and m->classes set from the dataset
 * (classes 0 = regression) and m->priv NULL. When the dataset does not fit,
 * create returns wl_model_misfit(m, "a classification dataset", err), which
 * formats "model 'softmax' needs a classification dataset; 'blobs(...)' is
 * a regression dataset". Only valid during vt->create. */
int wl_model_misfit(const wl_model *m, const char *need, sim_err *err);

/* Fills p[0..n-1] with N(0, sd^2) draws from rng, in order. Lives in model.c
 * because <gsl/gsl_randist.h> pulls in gsl_cblas.h, whose enums clash with
 * OpenBLAS's <cblas.h>: a model file includes one of the two only. */
void wl_model_init_gaussian(float *p, int64_t n, double sd, gsl_rng *rng);

/* The dataset the model is being built for (image geometry, text context);
 * only valid during vt->create, NULL otherwise. */
const wl_dataset *wl_model_dataset(const wl_model *m);

/* The options the model is being built with (never NULL; all zero when
 * none were given); only valid during vt->create. */
const wl_model_opts *wl_model_opts_of(const wl_model *m);

/* Appends layer (name, size) after the previous one; returns its offset.
 * At most 16 layers (checked by the caller's argument limits). */
int64_t wl_model_add_layer(wl_model *m, const char *name, int64_t size);

/* Batch-statistics workspace (see wl_model_stats_workspace_floats): gbar
 * (d floats), one per-sample gradient (d), then 2 b doubles at an even
 * float offset, then the model's own gradient workspace. */
static inline double *wl_stats_doubles(const wl_model *m, float *ws)
{
    int64_t off = 2 * m->n_params;
    return (double *)(void *)(ws + off + (off & 1));
}
static inline float *wl_stats_model_ws(const wl_model *m, float *ws, int64_t b)
{
    return (float *)(void *)(wl_stats_doubles(m, ws) + 2 * b);
}

/* loss_grad of an empty batch: a zero gradient and loss 0. */
static inline double wl_model_zero_grad(const wl_model *m, float *grad)
{
    memset(grad, 0, (size_t)m->n_params * sizeof *grad);
    return 0.0;
}

/* Completes the statistics from the mean gradient gbar (n_params floats:
 * gnorm2 = ||gbar||^2) and the per-sample sums sq[s] = ||a_s||^2 and
 * q[s] = a_s . gbar (doubles, b >= 2), using ||a_s - gbar||^2 = sq - 2 q +
 * gnorm2 and (a_s - gbar) . gbar = q - gnorm2. Used by the models whose
 * per-sample gradients factor (dense layers). */
void wl_stats_finish(const wl_model *m, const float *gbar, const double *sq, const double *q,
                     int64_t b, wl_batch_stats *out);

#endif
