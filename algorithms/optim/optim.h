/* Optimizers as plug-ins. An optimizer (const algo_optim, one file each,
 * listed in optimizers.def, which generates algo_optim_registry) turns a
 * gradient g at x into an update direction dir, so that the step is
 * x <- x - lr dir. Its buffers live in an
 * algo_optim_state, created once per model copy (the shared model of
 * allreduce_sgd and asgd, every worker's model of the local-step methods);
 * a step allocates nothing.
 *
 * Weight decay wd is either coupled (sgd, adam: g <- g + wd x before the
 * update, an L2 term) or decoupled (adamw, lamb: wd x added to the
 * direction, outside the adaptive scaling). The step count t is advanced
 * before every direction, so the first step has t = 1 (bias correction).
 *
 * Hyper-parameters come from the common [algorithm] keys optimizer,
 * momentum, nesterov and weight_decay (methods read them too), and from
 * the keys an optimizer declares in its own file (algo_optim.keys: adam's
 * beta1, beta2, eps, bias_correction; lamb's lamb_min_trust and
 * lamb_max_trust; docs/optimizers.md). */
#ifndef DTSIM_ALGO_OPTIM_H
#define DTSIM_ALGO_OPTIM_H

#include <stdint.h>

#include "config/config.h"
#include "sim/err.h"
#include "workloads/model.h"

typedef struct algo_optim_state algo_optim_state;

/* Hyper-parameters of every optimizer (each reads the ones it uses). */
typedef struct algo_optim_hp {
    double momentum;     /* sgd: heavy-ball beta in [0, 1) */
    int nesterov;        /* sgd: Nesterov form */
    double weight_decay; /* >= 0, coupled or decoupled (algo_optim.decoupled_wd) */
    double beta1, beta2; /* adam, adamw, lamb: moment decay rates in [0, 1) */
    double eps;          /* adam, adamw, lamb: > 0, added to sqrt(v) */
    int bias_correction; /* 1: m / (1 - beta1^t) and v / (1 - beta2^t) */
    double min_trust;    /* lamb: lower bound of the trust ratio, >= 0 */
    double max_trust;    /* lamb: upper bound, >= min_trust */
} algo_optim_hp;

#define ALGO_OPTIM_MAX_VECTORS 2

typedef struct algo_optim {
    const char *name;
    const char *summary;
    int decoupled_wd;    /* 0: g += wd x first (coupled); 1: wd x in the direction */
    int trust_ratio;     /* 1: a per-layer trust ratio scales the direction (lamb) */
    /* Its own [algorithm] hyper-parameter keys, NULL-key terminated (NULL:
     * none), and an optimizer whose keys it reads too (adamw and lamb read
     * adam's moment keys), or NULL. */
    const cfg_key *keys;
    const struct algo_optim *base;
    /* State vectors of d floats (0..ALGO_OPTIM_MAX_VECTORS) for these
     * hyper-parameters: vector 0 is the first moment m, vector 1 the
     * second moment v. NULL: both. */
    int (*vectors)(const algo_optim_hp *hp);
    /* g <- dir for the gradient g at x (the step count is already
     * advanced); updates the state. x and g must not overlap. */
    void (*direction)(algo_optim_state *s, const float *x, float *g);
    /* Optional fused forms (NULL = direction, then the subtraction):
     * x <- x - lr dir in place, and out <- base - lr dir(x, g) with out
     * distinct from base (out may be x). */
    void (*step)(algo_optim_state *s, float *x, float *g, double lr);
    void (*step_from)(algo_optim_state *s, float *out, const float *base, const float *x,
                      float *g, double lr);
} algo_optim;

extern const algo_optim *const algo_optim_registry[]; /* NULL-terminated */
/* By name (case-insensitive), or NULL. */
const algo_optim *algo_optim_find(const char *name);
/* The i-th registered name, NULL past the end (for the config schema). */
const char *algo_optim_name_at(int i);
/* 1 when o reads the [algorithm] key (its own keys or its base's). */
int algo_optim_reads_key(const algo_optim *o, const char *key);

/* The hyper-parameters of a configuration's common keys. */
void algo_optim_hp_from_config(const cfg_config *cfg, algo_optim_hp *hp);
/* The configured optimizer ([algorithm] optimizer) into *out: 0, or
 * SIM_ECONFIG naming the key and the known names. */
int algo_optim_from_config(const cfg_config *cfg, const algo_optim **out, sim_err *err);
/* For a method whose update rule is momentum SGD by definition: 0 when the
 * configured optimizer is sgd, else SIM_ECONFIG naming [algorithm]
 * optimizer, the method and why (a short phrase). */
int algo_optim_require_sgd(const cfg_config *cfg, const char *why, sim_err *err);

/* A state for vectors of d floats into *out. layers[0..n_layers-1]
 * (offset/size in order, covering [0, d)) drive per-layer rules;
 * n_layers = 0 means one layer of d. hp is copied. 0, or SIM_ENOMEM, or
 * SIM_EINTERNAL for a bad layer table (*out untouched). */
int algo_optim_state_create(const algo_optim *o, const algo_optim_hp *hp, int64_t d,
                            const wl_layer *layers, int n_layers, algo_optim_state **out,
                            sim_err *err);
/* The configured optimizer for one copy of model (d = its parameters),
 * into *out; 0 or the code. */
int algo_optim_state_from_config(const cfg_config *cfg, const wl_model *model, int64_t d,
                                 algo_optim_state **out, sim_err *err);
void algo_optim_state_destroy(algo_optim_state *s);

/* x <- x - lr dir(x, g). g is overwritten (it ends as dir or scratch). */
void algo_optim_step(algo_optim_state *s, float *x, float *g, double lr);
/* out <- base - lr dir(x, g): the direction at x applied to another base
 * (AWC gossip: base = sum_j W_ij x_j; ATC: out = the message, base = x).
 * out may alias base or x element-wise; g is overwritten. */
void algo_optim_step_from(algo_optim_state *s, float *out, const float *base, const float *x,
                          float *g, double lr);
/* g <- dir(x, g) (advances the state), for callers that apply the step
 * themselves, e.g. fused into a gossip row. */
void algo_optim_direction(algo_optim_state *s, const float *x, float *g);

/* Zeroes every buffer and the step count. */
void algo_optim_reset(algo_optim_state *s);
const algo_optim_hp *algo_optim_params(const algo_optim_state *s);
/* First and second moment buffers (d floats, writable: a method may average
 * or reset them), NULL when the optimizer keeps none (sgd without momentum
 * has no m; sgd has no v). */
float *algo_optim_m(const algo_optim_state *s);
float *algo_optim_v(const algo_optim_state *s);
/* 1: v is kept as it is (1-bit Adam's compression stage); 0: updated. */
void algo_optim_freeze_v(algo_optim_state *s, int frozen);
/* For lamb, the trust ratio of each layer at the last step (1 before the
 * first); NULL for optimizers without one. */
const double *algo_optim_trust(const algo_optim_state *s);

#endif
