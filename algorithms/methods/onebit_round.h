/* The 1-bit round shared by onebit_adam and onebit_lamb (Tang et al., ICML
 * 2021; Li et al. 2021; DeepSpeed's onebit/adam.py and onebit/lamb.py), as
 * hooks of the synchronous-round driver (algorithms/drivers/sync.h). One
 * shared x and optimizer state (adamw or lamb, no bias correction):
 *   warm-up (rounds <= freeze_step), one phase:  gbar = dense all-reduce
 *     of the g_i; an adamw or lamb step on x with gbar
 *   1-bit rounds, two phases (all-to-all, all-gather), v frozen:
 *     m_i = beta1 m + (1 - beta1) g_i;  m = onebit all-reduce of the m_i
 *     (onebit.h); ops->update applies x -= lr (...) from st->mnew
 * docs/algorithms.md, section 7 (crashes: docs/faults.md). */
#ifndef DTSIM_ALGO_ONEBIT_ROUND_H
#define DTSIM_ALGO_ONEBIT_ROUND_H

#include "algorithms/compress/onebit.h"
#include "algorithms/drivers/sync.h"
#include "algorithms/methods/method.h"

typedef struct algo_obit algo_obit;

/* What a method adds to the round. */
typedef struct algo_obit_ops {
    const char *who;   /* method name */
    const char *optim; /* the shared optimizer: adamw or lamb */
    int lamb;          /* per-layer momentum scales kappa_l and v_fresh */
    /* The 1-bit round's update from the reduced momentum st->mnew. */
    void (*update)(algo_obit *st);
    /* After each warm-up step (lamb: the trust ratios). NULL: nothing. */
    void (*warmed)(algo_obit *st);
    /* At the freeze, v frozen (lamb: v_fresh and kappa_l). NULL: nothing. */
    void (*freeze)(algo_obit *st);
    /* The method's key table (its rows read into algo_obit), and the
     * cross-key checks after it is read (NULL: none). */
    const cfg_key *keys;
    int (*check)(algo_obit *st, const cfg_config *cfg, sim_err *err);
} algo_obit_ops;

struct algo_obit {
    float *x;             /* the shared model (first: algo_method_shared_model) */
    const algo_obit_ops *ops;
    algo_env *env;
    int64_t freeze_step;
    double cost;          /* seconds of compression compute per step */
    algo_sync *sy;
    algo_optim_state *opt;
    float *gbar;
    const float **gptr;   /* n: the members' vectors */
    algo_onebit ob;       /* over the current group's members */
    int ob_group;         /* the id + 1 of the group ob was built for (0: none) */
    float *mi;            /* n x d: the workers' momenta */
    float *mnew;          /* d: the reduced momentum */
    int kappa_set;        /* the freeze has happened */
    /* lamb: its layers, scales and keys */
    int n_layers;
    int64_t off[16], len[16];
    double coeff_ema[16]; /* c_l */
    double kappa[16];
    double f_last[16];
    float *v_fresh;
    double coeff_beta, factor_max, factor_min, factor_threshold;
};

int algo_obit_create(algo_env *env, const algo_obit_ops *ops, void **out, sim_err *err);
int algo_obit_start(void *p, sim_err *err);
void algo_obit_fault(void *p, const algo_fault *ev);

/* The freeze_step row of a 1-bit method's key table. */
#define ALGO_OBIT_KEY_FREEZE(DOC)                                                              \
    ALGO_KEY_INT("freeze_step", "100000", 0, INFINITY, algo_obit, freeze_step, DOC)

/* A 1-bit method's vtable (state: algo_obit *). */
#define ALGO_OBIT_VT(NAME, SUMMARY, REF, KEYS, OPTIM, CREATE)                                    \
    {                                                                                          \
        .name = NAME, .summary = SUMMARY, .reference = REF, .keys = KEYS,                      \
        .supports_bucket = 1, .server = ALGO_SERVER_PS, .optimizer = OPTIM, .create = CREATE,  \
        .start = algo_obit_start,                                                              \
        .model = algo_method_shared_model, .fault = algo_obit_fault,                           \
    }

#endif
