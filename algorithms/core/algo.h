/* The algorithm interface. Every method (synchronous, local, decentralized,
 * asynchronous) is a const algo_vt driving its workers through events: it
 * schedules compute steps and messages on the engine and network that the
 * environment (algo_env, filled by the experiment builder) provides, and
 * reports each completed iteration to the environment, which evaluates,
 * records metrics and decides when to stop.
 *
 * Gradients are computed when a step STARTS (from the parameters the worker
 * holds or read at that moment) and consumed when its completion event
 * fires, so gradient work is separate from the event that applies it.
 * With a thread pool (the runner's, [--threads]) that is what lets gradients
 * run in parallel: algo_env_grad does the part that consumes shared
 * streams at once (the worker's batch, counters) and queues the rest (loss
 * and gradient, noise, clip) as a job; the jobs queued during one
 * simulated instant run on the pool when time is about to move on
 * (algo_env_grad_join, the engine's advance hook), before a job's result
 * can be observed. A method that reads a gradient or writes a model at
 * the same instant as the step that started it calls algo_env_grad_wait
 * first. Work on a worker's own state that nothing reads in the same
 * instant (the gossip driver's combine and update) is deferred to that
 * join the same way (algo_env_defer) and runs there before the gradients.
 * Every result is then the same for any thread count.
 *
 * Failures inside events (a send or collective that fails, an event that
 * cannot be scheduled, an invariant that breaks) all go through
 * algo_env_fail: it keeps the first error in env->error and stops the
 * engine; the runner then marks the run failed with that message. */
#ifndef DTSIM_ALGO_ALGO_H
#define DTSIM_ALGO_ALGO_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

#include "sim/collective.h"
#include "sim/compute.h"
#include "config/config.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "algorithms/core/fault.h"
#include "algorithms/core/noise.h"
#include "algorithms/core/own.h"
#include "algorithms/optim/optim.h"
#include "algorithms/optim/sgd_kernel.h"
#include "topology/graph.h"
#include "topology/mixing.h"
#include "workloads/model.h"
#include "workloads/partition.h"

/* The definition (or declaration) of an engine event handler (sim_handler)
 * and of a network delivery (sim_net_deliver) named fn: the handler reads
 * ctx and arg, and a delivery src and dst. */
#define ALGO_ON_EVENT(fn)                                                                      \
    void fn(sim_engine *eng SIM_UNUSED, void *ctx, uint64_t arg, void *payload SIM_UNUSED)
#define ALGO_ON_MESSAGE(fn)                                                                    \
    void fn(sim_engine *eng SIM_UNUSED, void *ctx, uint64_t arg, int src SIM_UNUSED,         \
            int dst SIM_UNUSED, double bytes SIM_UNUSED)

typedef struct algo_env algo_env;

/* Per-worker resources, allocated once by the environment. */
typedef struct algo_worker {
    int id;
    float *x;             /* the worker's model (d floats) */
    float *grad;          /* gradient buffer (d floats) */
    float *ws;            /* model workspace for batches up to batch_cap samples */
    float *bx, *by;       /* batch buffers (batch_cap samples); bx is NULL when the
                             data set is sparse (env->ds->sparse) */
    int64_t *brows;       /* sparse data sets: the batch's training rows (batch_cap) */
    int batch;            /* samples per step, 0 = the whole shard (algo_env_set_batch) */
    int64_t batch_cap;    /* samples bx, by and ws hold; grows, never shrinks */
    int64_t grad_samples; /* samples in the last gradient (algo_env_grad): what
                             applying it adds to env->samples */
    wl_sampler sampler;   /* the worker's data stream */
    gsl_rng *rng_compute; /* compute-time draws; NULL when the compute model
                             draws nothing (sim_compute_draws) */
    gsl_rng *rng_algo;    /* the method's own random choices (partners, ...);
                             NULL unless vt->worker_rng */
    /* counters, maintained by the env helpers */
    int64_t steps;        /* gradients computed */
    int64_t samples;      /* samples processed */
    double compute_time;  /* simulated seconds spent computing */
    double idle_time;     /* simulated seconds blocked on communication or peers */
    sim_time idle_since;  /* < 0 when not idle */
    sim_time busy_from;   /* start of the compute step scheduled last */
    sim_time busy_until;  /* end of the compute step scheduled last */
    double staleness_sum;
    int64_t staleness_n;
    int64_t *stale_counts; /* updates applied per staleness value, no cap
                              (stale_len values, grown as needed); NULL before
                              the first; the experiment frees it */
    int64_t stale_len;
    int64_t gossip_rounds; /* gossip steps or pairwise averagings taken part in */
    gsl_rng *rng_noise;   /* injected gradient noise ([workload] grad_noise), or NULL */
    gsl_rng *rng_noise_tmp; /* scratch stream of the same type (algo_noise_add) */
    int down;             /* 1 while crashed ([faults] schedule) */
    double slowdown;      /* compute-time factor of a slowdown event; 0 or 1 = none */
    int job;              /* 1 + index of its queued gradient job (the runner's); 0: none */
    int defer;            /* 1 + index of its deferred work (algo_env_defer); 0: none */
} algo_worker;

typedef struct algo_runner algo_runner; /* private: algorithms/core/runner.h */

struct algo_env {
    const cfg_config *cfg;
    sim_engine *eng;
    sim_net *net;
    sim_compute *compute;
    const wl_model *model;
    const wl_dataset *ds;
    int n;                /* workers */
    int64_t d;            /* parameters computed on */
    double msg_bytes;     /* S: bytes of one model/gradient on the wire */
    int64_t wire_params;  /* d_wire > 0: parameters on the wire (sim_params, proxy, else d) */
    int wire_value_bytes; /* > 0: bytes per dense value on the wire ([workload] wire_dtype) */
    double flops_per_sample; /* training FLOPs per sample for compute time */
    int batch;            /* configured per-worker batch (0 = full shard); the
                             current one of worker i is w[i].batch */
    int server_host;      /* host id of the parameter server (n), or -1 */
    const topo_graph *graph;  /* logical graph ([topology] graph), or NULL when
                                 the method does not use one (vt->uses_graph) */
    const topo_mixing *mix;   /* its mixing matrices ([topology] weights) */
    sim_coll_kind allreduce_kind; /* from [network] collective */
    int per_node;         /* workers per server (hierarchical networks), else 0 */
    sim_time sync_timeout; /* [faults] sync_timeout (>= 0): the wait for a crashed peer */
    algo_worker *w;       /* n workers */
    gsl_rng *rng_global;  /* the method's global stream */
    int64_t iterations;   /* completed iterations, maintained by algo_env_iteration */
    int64_t samples;      /* samples whose gradients were applied, likewise */
    double last_batch_loss;  /* loss of the most recent gradient */
    int diverged;            /* a gradient's loss was not finite */
    int64_t clipped;         /* gradients scaled down to norm [algorithm] clip */
    sim_err error;           /* the first failure inside an event (algo_env_fail);
                                code 0 while there is none */
    int64_t batch_changes;   /* algo_env_set_batch calls that changed a batch */
    algo_noise noise;        /* [workload] grad_noise, added before the clip */
    algo_runner *run;        /* the runner's bookkeeping (not for methods) */
};

/* 1 when workers may crash in this run ([faults] schedule has crash or
 * rejoin events, or mtbf is set); known before the method's create. */
int algo_env_crashes(const algo_env *env);
/* From now on algo_env_grad does not clip: the method clips where it
 * applies gradients (asgd: the server). Call in create. */
void algo_env_defer_clip(algo_env *env);

/* Samples the worker's next batch (w->batch samples) and computes loss and
 * gradient at params into grad (may be w->grad), adds the injected noise
 * ([workload] grad_noise, worker's noise stream), then clips to Euclidean
 * norm [algorithm] clip when that is > 0 and the method did not defer it
 * (counted in env->clipped). Counts steps and samples, sets
 * w->grad_samples. Returns the loss (of the noiseless gradient). With
 * a thread pool the gradient is only queued (see the top of this file): grad
 * and the loss side effects (last_batch_loss, diverged, clipped) are set
 * by the join, and the return value is NAN. params, grad and the worker's
 * batch buffers must stay unchanged until then. */
double algo_env_grad(algo_env *env, int worker, const float *params, float *grad);
/* The same, then grad += wd * params (weight decay coupled at the
 * parameters the gradient was taken at; wd 0: nothing). */
double algo_env_grad_wd(algo_env *env, int worker, const float *params, float *grad,
                        double wd);
/* Computes worker's queued gradient now, in the calling thread, if it has
 * one that has not run (no-op without a pool). */
void algo_env_grad_wait(algo_env *env, int worker);
/* Runs every queued piece of deferred work, then every queued gradient
 * (each in parallel on the pool), and applies the gradients' side effects
 * to env in the order they were queued. No-op when none. */
void algo_env_grad_join(algo_env *env);
/* Work on worker's own state that nothing reads before the instant ends
 * (a gossip combine and update): fn(ctx, worker) runs now without a pool,
 * else it is queued and runs at the join, in parallel with the other
 * workers' deferred work and before worker's gradients queued after it.
 * fn must write only what worker owns and read only what stays unchanged
 * until the join (the caller flushes with algo_env_defer_join before it
 * changes such inputs). Worker's queued gradient and its earlier deferred
 * work run first, in the calling thread. */
void algo_env_defer(algo_env *env, int worker, void (*fn)(void *ctx, int worker), void *ctx);
/* Runs worker's deferred work now, in the calling thread, if it has some
 * that has not run. */
void algo_env_defer_wait(algo_env *env, int worker);
/* Runs every queued piece of deferred work (in parallel on the pool);
 * the gradients stay queued. */
void algo_env_defer_join(algo_env *env);
/* The gradient transform of [algorithm] clip: g *= c / ||g|| when
 * ||g|| > c (the norm computed in double; a non-finite norm is left
 * alone). Returns 1 when g was scaled. */
int algo_grad_clip(float *g, int64_t d, double c);
/* Schedules the end of a compute step of `samples` samples for worker after
 * its simulated compute time; fn(eng, ctx, arg, NULL) runs then. Returns 0,
 * or the code of algo_env_fail when the event cannot be scheduled. */
int algo_env_compute(algo_env *env, int worker, int samples, sim_handler fn, void *ctx,
                     uint64_t arg);
/* Counts dt of compute whose end the caller schedules itself (encoding or
 * decoding a message, from now on): compute_time and the timeline. */
void algo_env_compute_charge(algo_env *env, int worker, sim_time dt);
/* The worker's compute step still running now (if any) is cut short: it no
 * longer counts in steps, its time after now is not compute time, and with
 * lost (a crash: its gradient is never used) neither is its elapsed part
 * (the run's stop passes 0: the elapsed part was computed). */
void algo_env_step_cut(algo_env *env, int worker, int lost);
/* Samples in one step of this worker (its batch, or its whole shard). */
int algo_env_step_samples(const algo_env *env, int worker);
/* Changes the worker's batch from its next gradient on (0 = its whole
 * shard). Buffers grow when the batch passes their capacity (never in the
 * steady state). Returns 0, or the code of algo_env_fail (SIM_ENOMEM, or
 * SIM_EINTERNAL for a negative batch or a bad worker). Epochs, samples and
 * the learning-rate schedule count samples, so they stay exact. */
int algo_env_set_batch(algo_env *env, int worker, int batch);
void algo_env_idle_begin(algo_env *env, int worker);
void algo_env_idle_end(algo_env *env, int worker);
/* Records one applied update computed `staleness` versions ago. */
void algo_env_staleness(algo_env *env, int worker, int64_t staleness);
/* Reports a completed iteration that applied `samples` samples' worth of
 * gradients (increments env->iterations and env->samples first). */
void algo_env_iteration(algo_env *env, int64_t samples);
/* The collective of desc on env's network into *out; 0 or the code (err):
 * sim_coll_create in this layer's convention. */
int algo_env_coll_create(algo_env *env, const sim_coll_desc *desc, sim_coll **out,
                         sim_err *err);
/* A collective over all n workers of the given kind (done(ctx, rank)) into
 * *out; 0 or the code (err). */
int algo_env_coll(algo_env *env, sim_coll_kind kind, sim_coll_done done, void *ctx,
                  sim_coll **out, sim_err *err);
/* Records a failure inside an event: keeps the first (code < 0, message
 * formatted like sim_err_set) in env->error and stops the engine; the
 * runner marks the run failed with it. Returns code (SIM_EINTERNAL when
 * code is not negative). */
int algo_env_fail(algo_env *env, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* sim_net_send and sim_coll_enter whose failure goes to algo_env_fail
 * (the message names the hosts or the rank). Return 0 or the code. */
int algo_env_send(algo_env *env, int src, int dst, double bytes, sim_net_deliver fn,
                  void *ctx, uint64_t arg);
int algo_env_coll_enter(algo_env *env, sim_coll *coll, int rank, double bytes);
/* Records a method's own number in the runner's series table, stamped with
 * the simulated time and env->iterations; worker -1 for a global value.
 * name is copied (at most 63 characters). */
void algo_env_series(algo_env *env, int worker, const char *name, double value);

/* The learning rate at the current point of training (docs/algorithms.md 1.1):
 * cfg lr, times lr_decay per milestone passed, with a linear warm-up from
 * lr/10 to lr over warmup_epochs; the epoch is samples applied / training
 * samples. */
double algo_env_lr(const algo_env *env);
/* The same at a given epoch. */
double algo_lr_at(const cfg_config *cfg, double epoch);
/* Epochs of training applied so far (env->samples / training samples). */
double algo_env_epoch(const algo_env *env);

/* out = mean of the n vectors in worker-id order (deterministic). */
void algo_mean(float *out, const float *const *vs, int n, int64_t d);

/* When a method needs a parameter-server host (one host past the n
 * workers, env->server_host). */
typedef enum algo_server_use {
    ALGO_SERVER_NONE = 0,  /* never (the default) */
    ALGO_SERVER_PS,        /* when [network] collective = ps: its all-reduces run on one */
    ALGO_SERVER_ALWAYS     /* always (asgd) */
} algo_server_use;

typedef struct algo_vt {
    const char *name;
    const char *summary;
    const char *reference;   /* docs/algorithms.md section, e.g. "1.1" */
    const cfg_key *keys;     /* method-specific [algorithm] keys, NULL-key terminated; may be NULL */
    int async;               /* 1: an iteration is one applied update */
    int uses_graph;          /* 1: the environment builds the logical graph and W */
    int worker_rng;          /* 1: the method draws from its workers' rng_algo
                                (allocated only then: 5 kB per worker) */
    int supports_compression; /* 1: honours [algorithm] compressor (else only none) */
    int supports_bucket;     /* 1: honours [algorithm] bucket > 0 (else only 0) */
    algo_server_use server;  /* when it needs a parameter-server host */
    /* The optimizer whose hyper-parameter keys the method reads whatever
     * [algorithm] optimizer says (onebit_adam: "adamw"), or NULL. */
    const char *optimizer;
    /* Why the method's simulated time depends on the gradients or the data
     * under cfg (batch sizes, message sizes or rounds chosen from them), or
     * NULL when the time model alone gives it; NULL slot: never. `dtsim
     * estimate`, which computes no gradient, warns with it. */
    const char *(*data_time)(const cfg_config *cfg);
    /* Builds the method's state (reads its keys from env->cfg), owned by
     * the run (algo_env_alloc, algo_env_own): on an error it returns and
     * the owner frees what it built. */
    int (*create)(algo_env *env, void **state, sim_err *err);
    /* What the run's owner (own.h) does not free; NULL: nothing. */
    void (*destroy)(void *state);
    /* Schedules the first events (at simulated time 0). */
    int (*start)(void *state, sim_err *err);
    /* The evaluated model: a pointer to it, or scratch (d floats) filled with it. */
    const float *(*model)(void *state, float *scratch);
    /* Fills xs[0..n-1] with the workers' models when they differ (for the
     * average and the consensus distance); NULL slot = one shared model. */
    void (*worker_models)(void *state, const float **xs);
    /* Optional, used when workers may crash (algo_env_crashes): fills xs with
     * the models of the workers the evaluated model averages (the live
     * ones) and returns their count m (1 <= m <= n), for the consensus
     * distance. NULL: worker_models without the workers that are down. */
    int (*live_models)(void *state, const float **xs);
    /* A fault event ([faults] schedule) at its time, after the environment
     * has set w[target].down or .slowdown. NULL: the method supports no
     * crash or rejoin (a schedule with one is a config error); slowdowns
     * need no hook. */
    void (*fault)(void *state, const algo_fault *ev);
} algo_vt;

extern const algo_vt *const algo_registry[]; /* NULL-terminated */
const algo_vt *algo_find(const char *name);
/* Key table of a method by name (for the config schema, xp_experiment_schema). */
const cfg_key *algo_keys(const char *name);
/* The one place that checks [algorithm] compressor for a method: the spec
 * must be valid, and a method without vt->supports_compression accepts
 * only the identity (none). 0 or SIM_ECONFIG. */
int algo_compress_check(const algo_vt *vt, const cfg_config *cfg, sim_err *err);
/* The same for [algorithm] bucket: a method without vt->supports_bucket
 * accepts only 0. 0 or SIM_ECONFIG naming the key and the methods that do. */
int algo_bucket_check(const algo_vt *vt, const cfg_config *cfg, sim_err *err);
/* 1 when the method needs a parameter-server host for this config. */
int algo_needs_server(const algo_vt *vt, const cfg_config *cfg);
/* 1 when the [algorithm] key (an optimizer's hyper-parameter) is read by
 * the configured optimizer or by the method's own (vt->optimizer). */
int algo_reads_optimizer_key(const algo_vt *vt, const cfg_config *cfg, const char *key);

#endif
