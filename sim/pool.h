/* A fixed pool of threads for data-parallel loops: sim_pool_run(p, n, fn,
 * ctx) calls fn(ctx, i) once for every i in [0, n) on the pool's threads
 * and the caller's, and returns when all calls have returned. Nothing runs
 * on the helpers outside sim_pool_run, so whatever the caller does between
 * two runs needs no lock. Indices are claimed in increasing order from a
 * shared counter; which thread runs which index is not deterministic, so
 * fn must write only to what index i owns. The pool allocates nothing
 * after sim_pool_create. */
#ifndef DTSIM_SIM_POOL_H
#define DTSIM_SIM_POOL_H

#include <stdint.h>

typedef struct sim_pool sim_pool;
typedef void (*sim_pool_fn)(void *ctx, int64_t i);

/* A pool of `threads` threads in all (the caller counts as one, so
 * threads - 1 helpers are started); threads must be >= 2. NULL when out of
 * memory or when a thread cannot be started. */
sim_pool *sim_pool_create(int threads);
/* Stops and joins the helpers. destroy(NULL) is a no-op. Not while a run
 * is in progress. */
void sim_pool_destroy(sim_pool *p);
/* Threads in all (helpers + the caller). */
int sim_pool_threads(const sim_pool *p);
/* fn(ctx, i) for i in [0, n) on every thread; returns when all are done.
 * n <= 1 runs in the caller without waking anyone. One caller at a time. */
void sim_pool_run(sim_pool *p, int64_t n, sim_pool_fn fn, void *ctx);

/* Threads to use when none is asked for: the processors this process may
 * run on (its affinity mask, else the online ones; >= 1). */
int sim_pool_default_threads(void);

#endif
