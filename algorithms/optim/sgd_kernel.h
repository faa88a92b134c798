/* SGD step kernels (docs/algorithms.md 0.2, PyTorch heavy ball, no
 * dampening), used by the sgd optimizer and by methods that step out of
 * place. Flat float arrays of d entries. Each step first adds the weight
 * decay, g += wd x (g is modified), then with beta > 0 and m non-NULL sets
 * m = beta m + g and the direction dir = m (heavy ball) or g + beta m
 * (Nesterov); else dir = g. */
#ifndef DTSIM_ALGO_OPTIM_SGD_KERNEL_H
#define DTSIM_ALGO_OPTIM_SGD_KERNEL_H

#include <stdint.h>

/* g += (float)wd * x, nothing when wd = 0. g and x must not overlap. */
void algo_add_decay(float *g, const float *x, double wd, int64_t d);
/* x -= lr dir. */
void algo_sgd_step(float *x, float *m, float *g, int64_t d, double lr, double beta,
                   int nesterov, double wd);
/* g = dir in place (x - lr g is then algo_local_step's result). g, m and x
 * must not overlap. */
void algo_local_dir(float *g, float *m, const float *x, int64_t d, double beta, int nesterov,
                    double wd);
/* out = base - lr dir. out may be x but must not overlap base, g or m. */
void algo_local_step(float *out, const float *base, const float *x, float *g, float *m,
                     int64_t d, double lr, double beta, int nesterov, double wd);

#endif
