/* The update rules of the gossip methods, written as ops of the gossip
 * driver (algorithms/drivers/gossip.h), which owns their timing, faults and
 * messages: local-momentum D-PSGD in its ATC and AWC forms (dsgd_rule.c)
 * and CHOCO's compressed gossip over it (choco_rule.c, docs/compressors.md). */
#ifndef DTSIM_ALGO_GOSSIP_RULES_H
#define DTSIM_ALGO_GOSSIP_RULES_H

#include "algorithms/drivers/gossip.h"

/* Local-momentum decentralized SGD, the core of dpsgd (AWC by default),
 * dsgd_atc, dmsgd (ATC by default) and, through algo_dsgd_ops,
 * consensus_control:
 * ATC  x_i <- sum_j W_ij (x_j - lr d_j),   AWC  x_i <- sum_j W_ij x_j - lr d_i,
 * with d the direction of worker i's local optimizer ([algorithm]
 * optimizer; for sgd the heavy-ball / Nesterov direction of the common
 * momentum, nesterov and weight_decay keys, d = g without momentum; its
 * buffers stay local). With q gossip steps W becomes W^q. Returns the
 * algo_gossip state in *out. */
int algo_dsgd_create(algo_env *env, algo_gossip_form form, void **out, sim_err *err);
/* The gossip ops of that update in the given form, for a method state that
 * begins with an algo_local_optim (the callbacks read it); plan and release
 * are left NULL for the caller; reset gives worker i a fresh optimizer
 * state. */
void algo_dsgd_ops(algo_gossip_form form, algo_gossip_ops *ops);

/* The consensus step key of the methods that compress their gossip. */
#define ALGO_CHOCO_STEP_KEY                                                                \
    {"algorithm", "consensus_step", "0.2", CFG_KEY_DOUBLE, NULL,                           \
     "gamma, in (0, 1]: with a compressor, x <- x + gamma (W x_hat - x_hat) (CHOCO)"}

/* dsgd's update (algo_dsgd_create, same local optimizer, same form) with
 * CHOCO's compressed gossip when [algorithm] compressor is not the
 * identity, else algo_dsgd_create itself; returns the gossip state in
 * *out. Configuration errors name compressor, consensus_step,
 * error_feedback (must be true) or gossip_steps (must be 1). */
int algo_choco_create(algo_env *env, algo_gossip_form form, void **out, sim_err *err);

#endif
