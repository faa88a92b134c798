/* Private glue between the model registry (model.c) and the model files
 * (linreg.c, softmax.c, ...). A new model is one file defining a
 * `const wl_model_vt` plus one extern line here and one registry entry. */
#ifndef DTSIM_WL_MODELS_IMPL_H
#define DTSIM_WL_MODELS_IMPL_H

#include "sim/err.h"
#include "workloads/model.h"

extern const wl_model_vt wl_linreg_vt;
extern const wl_model_vt wl_softmax_vt;

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

#endif
