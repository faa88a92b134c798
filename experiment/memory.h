/* The memory an experiment needs, estimated before its workers are built,
 * so that an oversized configuration is refused up front (exit 2) with the
 * keys that size it and the estimate, instead of running out of memory. */
#ifndef DTSIM_EXPERIMENT_MEMORY_H
#define DTSIM_EXPERIMENT_MEMORY_H

#include <stdint.h>

#include "config/config.h"

/* The workers' models: count x n_params x XP_MODEL_COPIES floats. */
#define XP_MODEL_COPIES 4 /* model, gradient, and two of the method's (momentum, residual) */
double xp_memory_workers(const cfg_config *cfg, int64_t n_params);
/* 0, or SIM_ECONFIG naming [workload] model and [workers] count when the
 * estimate exceeds sim_memory_limit(). */
int xp_memory_check(const cfg_config *cfg, int64_t n_params, sim_err *err);

#endif
