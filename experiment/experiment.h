/* The experiment runner: config -> environment (experiment/env.h) ->
 * algorithm -> events -> evaluation, stop rules, progress -> metric and
 * series rows -> database (experiment/record.h). One call runs one
 * experiment; the run owns everything it builds and destroys it in
 * reverse order.
 *
 * Failures: an error inside an event reaches the runner through
 * algo_env_fail (algorithms/algo.h); the run is then marked 'failed' in
 * the database with the message (runs.error) and xp_experiment_run
 * returns its code with the message in err, prefixed with the experiment
 * file, the method and the simulated time. */
#ifndef DTSIM_EXPERIMENT_EXPERIMENT_H
#define DTSIM_EXPERIMENT_EXPERIMENT_H

#include <signal.h>
#include <stdint.h>

#include "analysis/db.h"

struct algo_vt;
#include "config/config.h"
#include "sim/err.h"

typedef struct xp_progress {
    int64_t iteration;
    double sim_time;      /* simulated seconds */
    double epoch;
    double train_loss;    /* last evaluated (NAN before the first) */
    double test_accuracy; /* last evaluated */
    double wall_seconds;
    double fraction;      /* estimated fraction done in [0, 1], or -1 */
} xp_progress;

typedef struct xp_run_opts {
    an_db *db;            /* NULL: nothing written */
    /* Called for every metric row (after it is recorded). */
    void (*on_metric)(void *ctx, const an_metric_row *row);
    /* Called for every series row a method records (algo_env_series),
     * after it is recorded. */
    void (*on_series)(void *ctx, const an_series_row *row);
    /* Called at most every progress_interval wall seconds. */
    void (*on_progress)(void *ctx, const xp_progress *p);
    double progress_interval;
    void *ctx;
    /* When set and *interrupt becomes non-zero (a signal handler), the run
     * stops before its next event, is marked 'failed' and returns SIM_EINTR. */
    volatile sig_atomic_t *interrupt;
    /* The method to run instead of cfg's [algorithm] name (NULL: the
     * registry's). For tests of the runner with a method of their own; the
     * config's [algorithm] keys are still those of its name. */
    const struct algo_vt *algorithm;
    /* 1: run only when no row of the same config and seed is running, done
     * or diverged in db (claimed atomically, so concurrent sweeps share
     * the work); otherwise return 0 with status "skipped" and run_id the
     * other row's id. */
    int claim;
    /* Threads computing the workers' gradients (xp_env_opts.threads):
     * 0 or 1 = serial. Any value gives the same rows. */
    int threads;
    /* 1: the time model only (dtsim estimate): no gradient is computed
     * (algo_env_grad gives zeros), nothing is evaluated, and time_stats
     * (if set) receives where the time went. */
    int time_only;
    struct xp_time_stats *time_stats;
} xp_run_opts;

typedef struct xp_run_result {
    int64_t run_id;       /* 0 when no database */
    char status[16];      /* done | diverged | failed | skipped (claim) */
    double sim_time;
    int64_t iterations;
    double epochs;
    double final_train_loss;
    double final_test_loss;
    double final_test_accuracy;
    double consensus_distance;
    double wall_seconds;
    double bytes_sent;
    double idle_fraction;
    double mean_staleness;  /* NAN when no update was stale-tracked */
    uint64_t events;
    int64_t gradients;      /* gradients computed */
    int64_t n_params;       /* model parameters computed on */
    int n_workers;
    char algorithm[64];
    int64_t trace_dropped;  /* timeline rows past [experiment] trace_max_events (not
                               written); 0 when all were or the run was not traced */
} xp_run_result;

/* Where a time-only run's time went (xp_run_opts.time_stats). */
typedef struct xp_time_stats {
    int n_workers;
    double sim_time;        /* simulated seconds */
    int64_t iterations;
    int64_t samples;        /* applied */
    int64_t train_n;        /* training samples (an epoch) */
    double *compute, *send, *idle; /* per worker, simulated seconds: computing, its
                               messages draining from its host, waiting (owned) */
    double bytes;           /* sent by all hosts */
    int busiest_link;       /* directed link with the highest utilisation, -1: none */
    int link_from, link_to; /* its vertices */
    double link_bytes;      /* bytes it carried */
    double link_rate;       /* its bandwidth, bytes/s */
} xp_time_stats;
void xp_time_stats_release(xp_time_stats *s);

/* `dtsim estimate`: simulates `iterations` iterations of cfg with the time
 * model only (xp_run_opts.time_only) and summarises one iteration: its
 * time; compute, communication (sending) and idle (the rest) of the
 * median and the slowest worker (ranked by compute time); the busiest
 * link's utilisation; bytes. The configured run's length (max_iterations,
 * else max_epochs at the measured samples per iteration; max_time caps
 * it; target_accuracy is not known without training) and GPU-hours
 * (workers x its simulated time). */
typedef struct xp_estimate {
    char algorithm[64];
    int n_workers;
    int64_t iterations;      /* simulated */
    double iter_time;        /* simulated seconds per iteration */
    int worker[2];           /* [0] the median worker, [1] the slowest */
    double compute[2], comm[2], idle[2]; /* seconds per iteration, of worker[k] */
    double bytes_per_iter;   /* all hosts */
    int busiest_link;        /* -1: none (ideal network) */
    int link_from, link_to;
    double link_util;        /* in [0, 1]: bytes carried / (bandwidth x simulated time) */
    double link_bytes_per_iter;
    double link_rate;        /* bytes/s */
    double run_iterations;   /* of the configured run */
    double run_time;         /* its simulated seconds */
    double gpu_hours;
    /* Why the method's time depends on the gradients or the data, which the
     * time model does not compute (algo_vt.data_time), so the estimate may
     * be off; "" when it does not. */
    char data_time[256];
} xp_estimate;
int xp_experiment_estimate(const cfg_config *cfg, int64_t iterations, int threads,
                           xp_estimate *out, sim_err *err);

/* The configuration schema of the registries (methods and their keys,
 * optimizers, device presets), to hand to cfg_load: every caller
 * that loads an experiment to run it passes this one. Static storage. */
const cfg_schema *xp_experiment_schema(void);

/* Checks that an experiment can be built without running it: algorithm,
 * proxy, data set (and its fit with the model and partition), physical
 * network, logical graph and weights, compute model, faults, and the
 * method itself (its create, with the workers built: a method key out of
 * range or keys that disagree, a crash it refuses). The same errors as
 * xp_experiment_run's set-up, before the run row exists. chk (may be NULL) caches the last data set
 * loaded, so checking a grid that shares one loads it once. */
typedef struct xp_check xp_check;
xp_check *xp_check_create(void);
void xp_check_destroy(xp_check *chk);
int xp_experiment_check(const cfg_config *cfg, xp_check *chk, sim_err *err);

/* Keys the user wrote (in the file or with --set) that this experiment
 * does not use, one line each into buf ("exp.ini:12: [topology] graph:
 * ignored: allreduce_sgd uses no logical graph\n"); the caller prints
 * them as warnings (the library never prints). Returns how many. Keys
 * left at their defaults never warn (the canonical config stores them
 * all). */
int xp_experiment_warnings(const cfg_config *cfg, char *buf, size_t len);

/* Runs the experiment. Errors before the run row exists (building the
 * environment: bad input is SIM_ECONFIG or SIM_EINPUT) leave the database
 * untouched; errors after it mark the run 'failed' with the message. A run
 * whose loss becomes NaN or infinite stops with status 'diverged' and
 * returns 0. */
int xp_experiment_run(const cfg_config *cfg, const xp_run_opts *opts,
                       xp_run_result *res, sim_err *err);

#endif
