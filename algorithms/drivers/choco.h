/* Compressed gossip (CHOCO) for the local-step decentralized methods
 * dpsgd and dsgd_atc: see choco.c and docs/compressors.md. */
#ifndef DTSIM_ALGO_CHOCO_H
#define DTSIM_ALGO_CHOCO_H

#include "algorithms/drivers/gossip.h"

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
