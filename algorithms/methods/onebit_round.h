/* The 1-bit round shared by onebit_adam (onebit_adam.c) and onebit_lamb
 * (onebit_lamb.c) (docs/algorithms.md section 7, DeepSpeed's
 * onebit/adam.py and onebit/lamb.py). One shared model x and one optimizer
 * state (adamw or lamb, no bias correction).
 *
 * Warm-up, rounds 1..freeze_step: the gradients are all-reduced dense (the
 * configured collective, S bytes) and the mean takes an adamw step
 * (x -= lr (m / (sqrt(v) + eps) + wd x)) or a lamb step; so with
 * freeze_step >= the rounds run, onebit_adam is allreduce_sgd with
 * optimizer = adamw, bias_correction = false (onebit_lamb: lamb).
 *
 * Compression stage, rounds > freeze_step: v is frozen; worker i forms
 * m_i = beta1 m + (1 - beta1) g_i from the synchronized m and its gradient
 * and the momentum is the 1-bit compressed all-reduce of the m_i
 * (onebit.h, section 7.1): phase 1 is an all-to-all (each worker sends
 * d_pad/(8n) + 4 bytes to each other one), phase 2 an all-gather of the
 * same size, 2(n-1)(d_pad/(8n) + 4) bytes per worker per step. Then
 *   onebit_adam: x -= lr (m / (sqrt(v) + eps) + wd x);
 *   onebit_lamb: per layer, scaled momenta (kappa), the gradient recovered
 *   from the momentum feeds a fresh variance, and the frozen trust ratio
 *   c_l is corrected by a bounded factor f (section 7.3):
 *   x_l -= lr c_l f_l u_l.
 * [algorithm] error_feedback = false drops both error buffers (ablation).
 *
 * Compression cost: before entering phase 1 a worker spends
 * compress_time_per_value x d_wire seconds of compute (one pass over the
 * vector for the worker side; the server side on d/n values is folded
 * into it), counted in its compute time.
 *
 * Rounds (a warm-up round is one phase on the dense all-reduce, a 1-bit
 * round two: the all-to-all, then the all-gather), groups of live
 * workers, buckets, compression time, crashes and rejoins are the
 * synchronous-round driver's (algorithms/drivers/sync.h): this file is the
 * update rule.
 * Under crashes ([faults], docs/faults.md) the rounds run over the round's
 * group with the driver's abort rule; over m members the 1-bit all-reduce
 * is re-partitioned into m chunks, its error buffers (workers' and
 * servers') set to 0 at every membership change (a modelling choice: they
 * are defined per partition); a group of one has nothing to exchange, and
 * its 1-bit round is one phase. The shared x, m, v (frozen or not) and the
 * LAMB state stay; a joiner is sent x, m and v (and v_fresh after a LAMB
 * freeze) at the next formed update. */
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
