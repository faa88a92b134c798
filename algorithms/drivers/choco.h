/* Compressed gossip (CHOCO) for the local-step decentralized methods
 * dpsgd and dsgd_atc: see choco.c and docs/compressors.md. */
#ifndef DTSIM_ALGO_CHOCO_H
#define DTSIM_ALGO_CHOCO_H

#include "algorithms/drivers/gossip.h"

/* The consensus step key of the methods that compress their gossip. */
#define ALGO_CHOCO_STEP_KEY                                                                \
    {"algorithm", "consensus_step", "0.2", SIM_KEY_DOUBLE, NULL,                           \
     "gamma, in (0, 1]: with a compressor, x <- x + gamma (W x_hat - x_hat) (CHOCO)"}

/* 1 when [algorithm] compressor is not the identity (the method then runs
 * algo_choco_create), 0 when it is, a negative code (err filled) when the
 * spec is bad. */
int algo_choco_wanted(const sim_config *cfg, sim_err *err);
/* The compressed form of algo_dsgd_create (same local optimizer, same
 * form); returns the gossip state in *out. Configuration errors name
 * consensus_step, error_feedback (must be true) or gossip_steps (must be 1). */
int algo_choco_create(algo_env *env, algo_gossip_form form, void **out, sim_err *err);

#endif
