/* Update rules shared by the local-step methods (docs/algorithms.md 2
 * and 4): the adaptive batch tests of section 2 as pure functions
 * (adaptive_local_sgd) and SlowMo's outer step (slowmo over local_sgd and
 * over dpsgd). */
#ifndef DTSIM_ALGO_LOCAL_RULES_H
#define DTSIM_ALGO_LOCAL_RULES_H

#include <stdint.h>

#include "algorithms/core/algo.h"
#include "workloads/model.h"

typedef enum algo_batch_test {
    ALGO_BATCH_NORM = 0,      /* b' = V / (eta^2 ||g||^2) */
    ALGO_BATCH_INNER_PRODUCT, /* b' = V_ip / (theta^2 ||g||^4) */
    ALGO_BATCH_AUGMENTED      /* max(inner product, V_o / (nu^2 ||g||^2)) */
} algo_batch_test;

/* The batch a test proposes from (mean) statistics s (its b is ignored);
 * +inf when ||g||^2 = 0 and the variance is positive, 0 when both are 0. */
double algo_batch_test_proposal(algo_batch_test kind, const wl_batch_stats *s, double eta,
                                double theta, double nu);
/* b_next = min(b_max, max(b, ceil(proposal))); b_max <= 0 means no cap. */
int algo_batch_test_next(int b, double proposal, int b_max);

/* SlowMo's outer step (docs/algorithms.md 4), shared by its bases. */
typedef enum algo_bmuf { ALGO_BMUF_NONE = 0, ALGO_BMUF_CLASSIC, ALGO_BMUF_NESTEROV } algo_bmuf;

typedef struct algo_slowmo_params {
    int tau;          /* base steps per outer iteration (local_steps) */
    double beta;      /* slow_momentum */
    double alpha;     /* slow_lr */
    algo_bmuf bmuf;   /* none: SlowMo's update; classic/nesterov: BMUF */
    int buffers;      /* 0 local, 1 average, 2 reset (the buffers key) */
} algo_slowmo_params;

/* On the exact average avg (d floats), in double: none:
 * u <- beta u + (x0 - avg)/lr, x0 <- x0 - alpha lr u; classic:
 * Delta <- beta Delta + alpha (avg - x0), x0 <- x0 + Delta (u holds
 * Delta); nesterov: the same with the block's starting point
 * x0 + beta Delta in place of x0 in the difference. avg becomes the model
 * every worker restarts from: x0, or x0 + beta Delta for nesterov. */
void algo_slowmo_outer(const algo_slowmo_params *p, float *x0, float *u, float *avg, int64_t d,
                       double lr);

/* SlowMo over D-PSGD (the slowmo method with base = dpsgd): tau D-PSGD
 * steps on the logical graph (the dpsgd update in the form of the form
 * key, gossip_steps gossip steps), then the exact average and the outer
 * step. *out is an algo_gossip driver (its vtable functions apply). */
int algo_slowmo_dpsgd_create(algo_env *env, const algo_slowmo_params *p, void **out,
                             sim_err *err);

#endif
