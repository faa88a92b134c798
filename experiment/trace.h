/* The timeline recorder ([experiment] trace = on): spans of each worker
 * (computing, waiting, sending, down, a step lost to a crash) and the
 * bytes in flight on each link, from the runner's span hook, the
 * network's trace hook and the fault handler, written to the spans and
 * link_load tables in batches (memory bounded) up to trace_max_events
 * rows; past the bound the rest is counted, not written. Used by the
 * runner only. */
#ifndef DTSIM_EXPERIMENT_TRACE_H
#define DTSIM_EXPERIMENT_TRACE_H

#include <stdint.h>

#include "analysis/db.h"
#include "experiment/env.h"

typedef struct xp_trace xp_trace;

/* Reads [experiment] trace and trace_max_events; with trace on and a
 * database, creates the recorder and installs its network hook (*out =
 * NULL otherwise). summary = 1 (dtsim estimate): always, writing nothing,
 * only adding up each worker's time per state (xp_trace_totals).
 * SIM_ECONFIG for a bad trace_max_events (< 1), SIM_ENOMEM. Before the run
 * row exists: xp_trace_run names it. */
int xp_trace_create(xp_env *x, an_db *db, int summary, xp_trace **out, sim_err *err);
void xp_trace_run(xp_trace *t, int64_t run_id);
/* The runner's span hook (algorithms/core/runner.h: ALGO_SPAN_*). */
void xp_trace_span(xp_trace *t, int worker, int kind, sim_time t0, sim_time t1);
/* A worker went down (down = 1) or came back (0) now. */
void xp_trace_down(xp_trace *t, int worker, int down);
/* Closes the open spans at the current time and writes what is buffered;
 * *dropped (may be NULL) receives the rows past the bound. */
int xp_trace_finish(xp_trace *t, int64_t *dropped, sim_err *err);
/* Summary mode: seconds per worker and state (an_span_state), n x
 * AN_SPAN_N, after xp_trace_finish. */
const double *xp_trace_totals(const xp_trace *t);
/* Removes the hooks and frees (NULL: no-op). */
void xp_trace_destroy(xp_trace *t);

#endif
