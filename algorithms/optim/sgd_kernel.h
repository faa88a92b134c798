/* SGD step kernels (docs/algorithms.md 0.2, PyTorch heavy ball, no
 * dampening), used by the sgd optimizer and by methods that step out of
 * place. Flat float arrays of d entries. */
#ifndef DTSIM_ALGO_OPTIM_SGD_KERNEL_H
#define DTSIM_ALGO_OPTIM_SGD_KERNEL_H

#include <stdint.h>

/* Weight decay: g += (float)wd * x, nothing when wd = 0. g and x must not
 * overlap. */
void algo_add_decay(float *g, const float *x, double wd, int64_t d);
/* Optimizer helpers (docs/algorithms.md 0.2, PyTorch heavy-ball, no dampening):
 * g += wd*x; m = beta*m + g; x -= lr*m (heavy ball) or x -= lr*(g + beta*m)
 * (Nesterov). m may be NULL when beta == 0. g is modified (weight decay). */
void algo_sgd_step(float *x, float *m, float *g, int64_t d, double lr, double beta,
                   int nesterov, double wd);
/* The local direction of docs/algorithms.md 0.2 in place: g += wd x; with
 * beta > 0 and m: m = beta m + g, then g = m (heavy ball) or g + beta m
 * (Nesterov). Afterwards x - lr g is algo_local_step's result. g, m and x
 * must not overlap. */
void algo_local_dir(float *g, float *m, const float *x, int64_t d, double beta, int nesterov,
                    double wd);
/* The local optimizer step of docs/algorithms.md 0.2 written out of place:
 * g += wd * x; with beta > 0: m = beta m + g and d = m (heavy ball) or
 * g + beta m (Nesterov), else d = g; then out = base - lr d. out may be x
 * but must not overlap base, g or m. g is modified. */
void algo_local_step(float *out, const float *base, const float *x, float *g, float *m,
                     int64_t d, double lr, double beta, int nesterov, double wd);

#endif
