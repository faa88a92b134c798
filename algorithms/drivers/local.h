/* The step counter that turns the workers' local steps into iterations
 * (the synchronous driver's ALGO_SYNC_COUNT_STEPS, algorithms/drivers/
 * sync.h; docs/algorithms.md 1.5, 2, 4, 8). The local-step methods' update
 * rules (the batch tests, SlowMo's outer step) are in
 * algorithms/methods/local_rules.h. */
#ifndef DTSIM_ALGO_LOCAL_H
#define DTSIM_ALGO_LOCAL_H

#include <stdint.h>

#include "algorithms/core/algo.h"

/* Iterations of local steps: iteration K completes when every LIVE worker
 * has completed its K-th step (live(ctx, i)); a step at an index already
 * reported (a worker that crashed or joined) adds its samples to the next
 * report. Workers may be at most `span` steps apart. */
typedef struct algo_live_steps {
    int n, span;
    int64_t *step;     /* n: steps each worker has completed */
    int64_t *slot;     /* span: samples of the steps of each unreported index */
    int64_t reported;  /* iterations reported */
    int64_t late;      /* samples of steps at an index already reported */
} algo_live_steps;

/* Allocations owned by the run; the caller checks its flag
 * (algo_env_alloc_check). */
void algo_live_steps_init(algo_live_steps *c, algo_env *env, int span);
void algo_live_steps_done(algo_live_steps *c, int i, int64_t samples);
/* Reports to env the iterations every live worker has completed. */
void algo_live_steps_count(algo_live_steps *c, algo_env *env, int (*live)(const void *, int),
                           const void *ctx);

#endif
