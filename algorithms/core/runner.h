/* Private to the runner: the bookkeeping of a run that methods do not
 * see (algo_env.run points to it: gradient jobs, hooks, clip deferral,
 * crash flag, thread pool). Included by algorithms/core/algo.c, which
 * maintains it through the env services, and by the experiment layer,
 * which owns the storage (xp_env) and sets the hooks; never by a method or
 * a driver. */
#ifndef DTSIM_ALGO_RUNNER_H
#define DTSIM_ALGO_RUNNER_H

#include <stdint.h>

#include "algorithms/core/algo.h"
#include "sim/pool.h"

/* A gradient queued by algo_env_grad when the run has a thread pool. */
typedef struct algo_grad_job {
    int worker;
    const float *params;
    float *grad;
    int64_t b;            /* samples in w->bx, w->by */
    double wd;            /* grad += wd * params after the clip (0: none) */
    double loss;          /* results, applied to env in queue order by the join */
    int clipped;
    int done;             /* computed (by the join or algo_env_grad_wait) */
} algo_grad_job;

/* Work deferred by algo_env_defer. */
typedef struct algo_defer_job {
    int worker;
    void (*fn)(void *ctx, int worker);
    void *ctx;
    int done;
} algo_defer_job;

/* Hooks into the experiment (progress, evaluation, stopping). */
typedef struct algo_env_hooks {
    /* An iteration (a synchronous round, or one applied update for an
     * asynchronous method) has completed; the experiment may evaluate and
     * stop the engine. */
    void (*iteration)(void *exp);
    /* A method's own number (algo_env_series) at simulated time sim_time
     * (seconds) and iteration; worker -1 for a global value. NULL: dropped. */
    void (*series)(void *exp, double sim_time, int64_t iteration, int worker,
                   const char *name, double value);
    /* A worker's timeline ([experiment] trace; NULL: none): a span of
     * kind ALGO_SPAN_* from t0 to t1 (nanoseconds). ALGO_SPAN_COMPUTE comes
     * when a step is scheduled; a step cut short (algo_env_step_cut) then
     * comes as ALGO_SPAN_CUT (computed until t1) or ALGO_SPAN_LOST (lost
     * at t1), t0 the step's start. */
    void (*span)(void *exp, int worker, int kind, sim_time t0, sim_time t1);
    void *exp;
} algo_env_hooks;

/* One entry of the run's owner list (own.h). */
typedef struct algo_owned {
    void *ptr;
    void (*fn)(void *);
} algo_owned;

enum { ALGO_SPAN_COMPUTE, ALGO_SPAN_IDLE, ALGO_SPAN_CUT, ALGO_SPAN_LOST };

struct algo_runner {
    algo_env_hooks hooks;
    int clip_deferred;       /* 1: algo_env_grad does not clip (algo_env_defer_clip) */
    int crashes;             /* 1: workers may crash (algo_env_crashes); set before
                                the method's create */
    int time_only;           /* 1: the time model only (dtsim estimate): algo_env_grad
                                draws the batch but computes no gradient (zeros,
                                loss 0) */
    sim_pool *pool;          /* gradients in parallel (borrowed), or NULL: serial */
    algo_grad_job *jobs;     /* n slots: the jobs queued in this instant (NULL: each
                                gradient is computed when asked for) */
    wl_grad_req *reqs;       /* n slots, or NULL: a model with loss_grad_many gets the
                                queued gradients in one request */
    int n_jobs;
    algo_defer_job *defers;  /* n slots: the deferred work queued in this instant */
    int n_defers;
    algo_owned *owned;       /* the owner list (own.h), in registration order */
    int n_owned, cap_owned;
    int oom;                 /* 1: an allocation of the owner failed (sticky) */
};

/* Ends the run's ownership: runs every cleanup of the owner list in
 * reverse order of registration and empties it. Call after the method's
 * destroy, when nothing reads the method's state any more. */
void algo_env_release(algo_env *env);

#endif
