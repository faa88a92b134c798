/* Private: the optimizer state, shared by optim.c and the optimizer files
 * (optim_*.c). Methods use the accessors of optim.h. */
#ifndef DTSIM_ALGO_OPTIM_IMPL_H
#define DTSIM_ALGO_OPTIM_IMPL_H

#include "algorithms/optim/optim.h"

/* A row of an optimizer's key list (config/optim_keys_*.def) in its key table. */
#define DTSIM_OPTIM_KEY(key, def, type, doc) {"algorithm", key, def, type, NULL, doc},

/* adamw and lamb read its moment keys (algo_optim.base). */
extern const algo_optim algo_optim_adam;

struct algo_optim_state {
    const algo_optim *o;
    algo_optim_hp hp;
    int64_t d;
    int64_t t;                          /* steps taken, advanced before a direction */
    int n_vec;
    float *vec[ALGO_OPTIM_MAX_VECTORS]; /* m, v (NULL when absent), one slab */
    int freeze_v;                       /* 1: v is not updated */
    int n_layers;                       /* >= 1 */
    int64_t *layer_off, *layer_len;     /* n_layers each */
    double *trust;                      /* n_layers: last trust ratio (lamb) */
};

/* The Adam-style moment update and preconditioned first moment, over the
 * d floats: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2 (unless frozen),
 * g = (m c1) / (sqrt(v c2) + eps). */
void algo_optim_adam_dir(algo_optim_state *s, float *g);

#endif
