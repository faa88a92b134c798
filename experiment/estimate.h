/* dtsim estimate's half inside the runner (estimate.c): where a time-only
 * run's time went, read before the run is torn down. Used by the runner
 * only. */
#ifndef DTSIM_EXPERIMENT_ESTIMATE_H
#define DTSIM_EXPERIMENT_ESTIMATE_H

#include "algorithms/core/algo.h"
#include "experiment/experiment.h"

/* Fills s from the environment, the network's counters and the timeline
 * totals (seconds per worker and an_span_state). SIM_ENOMEM. */
int xp_time_stats_fill(xp_time_stats *s, const algo_env *env, sim_net *net,
                       const double *totals, double sim_time, sim_err *err);

#endif
