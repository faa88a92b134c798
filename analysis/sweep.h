/* `dtsim sweep`: the Cartesian product of --grid values times --seeds, with
 * --set applied to all, run into one results database.
 *
 * Every configuration of the grid is loaded and validated before anything
 * runs. A configuration whose canonical text is already 'done' or
 * 'diverged' in the database is skipped, so an interrupted sweep resumes;
 * one left 'running' by a killed process is marked 'failed' and redone.
 * With jobs > 1, that many experiments run at once in forked processes,
 * each with its own database connection (WAL, busy timeout). Under mpirun
 * (OMPI_COMM_WORLD_SIZE set) ranks share the grid: see sweep_mpi.c.
 *
 * This layer never runs a simulation itself: the caller passes the
 * function that runs one experiment (the CLI wires xp_experiment_run), so
 * analysis/ does not depend on the experiment builder. It never prints:
 * progress and results go to the caller's callbacks. */
#ifndef DTSIM_AN_SWEEP_H
#define DTSIM_AN_SWEEP_H

#include <signal.h>
#include <stdint.h>

#include "analysis/db.h"
#include "config/config.h"
#include "sim/err.h"

/* Progress of the experiment in flight, reported by the run function. */
typedef struct an_sweep_tick {
    int64_t iteration;
    double sim_time;       /* simulated seconds */
    double train_loss;     /* last evaluated; NAN before the first evaluation */
    double test_accuracy;  /* last evaluated; NAN before the first evaluation */
    double fraction;       /* estimated fraction of the run done in [0, 1], or -1 */
} an_sweep_tick;

/* The handle a run function reports its progress through (opaque). */
typedef struct an_sweep_job an_sweep_job;
void an_sweep_job_tick(an_sweep_job *job, const an_sweep_tick *tick);

/* What a run function reports about a finished experiment. */
typedef struct an_sweep_outcome {
    int64_t run_id;
    char status[16];            /* done | diverged | failed */
    double sim_time;            /* simulated seconds */
    double final_train_loss;
    double final_test_accuracy;
    int64_t trace_dropped;      /* timeline rows past [experiment] trace_max_events */
} an_sweep_outcome;

/* Runs one experiment into db (the run row, metrics, ...). Returns 0 or a
 * negative SIM_E* code with err filled. May run in a forked process. */
typedef int (*an_sweep_run_fn)(void *ctx, const cfg_config *cfg, an_db *db,
                               an_sweep_job *job, an_sweep_outcome *out, sim_err *err);

/* One configuration that finished, failed, or was found already done. */
typedef struct an_sweep_result {
    int index;              /* position in the sweep, 0-based */
    int total;              /* configurations in the sweep (all parts) */
    const char *label;      /* "workers.count=4 algorithm.name=asgd experiment.seed=2" */
    int skipped;            /* 1: already done in the database, not run again; 2: in
                               flight in another process (its own sweep), not run here */
    int64_t run_id;         /* the new run, or the existing one when skipped; 0 if none */
    char status[16];        /* done | diverged | failed */
    double sim_time;        /* simulated seconds; NAN when skipped or failed */
    double final_train_loss;
    double final_test_accuracy;
    int64_t trace_dropped;  /* timeline rows not recorded (trace_max_events); 0 if none */
    int code;               /* 0, or the SIM_E* code of a failed run */
    const char *message;    /* the error of a failed run, else "" */
    int rank;               /* MPI rank that ran it (0 without MPI) */
} an_sweep_result;

/* The state shown by a progress line. */
typedef struct an_sweep_status {
    int total;              /* configurations in the sweep (this rank's share under MPI) */
    int finished;           /* run, skipped or failed so far */
    int running;            /* experiments in flight */
    int current;            /* index of the run whose tick this is, -1 if none */
    const char *label;      /* its label, "" if none */
    an_sweep_tick tick;     /* its latest progress */
    double elapsed;         /* wall seconds since the sweep started */
    double remaining;       /* estimated wall seconds left; NAN when unknown */
} an_sweep_status;

typedef struct an_sweep_opts {
    const char *experiment;       /* the experiment file */
    const cfg_schema *schema; /* what it is validated against
                                     (xp_experiment_schema()); NULL = none */
    const char *const *grids;     /* "SECTION.KEY=V1,V2,..." (commas inside
                                     parentheses do not split) */
    int n_grids;
    const char *const *sets;      /* "SECTION.KEY=VALUE", applied to every config */
    int n_sets;
    const char *seeds;            /* "A-B" or "A": experiment.seed values; NULL = the file's */
    int jobs;                     /* experiments at once (processes); <= 1: in this process */
    const char *db_path;          /* the results database (created if missing) */
    const char *shard_dir;        /* MPI: directory of the ranks' shard databases;
                                     NULL = next to db_path */
    int mpi;                      /* 1: share the grid with the other ranks when started
                                     by mpirun (OMPI_COMM_WORLD_SIZE set); 0: never */
    int part, n_parts;            /* --part K/N: only the configurations i (0-based, in
                                     sweep order) with i mod N = K - 1, 1 <= K <= N;
                                     n_parts 0: all of them */
    an_sweep_run_fn run;          /* runs one experiment (required) */
    void *run_ctx;
    /* Optional: checks that a loaded config can be built (data, networks,
     * graphs), called for every config before anything runs. */
    int (*check)(void *ctx, const cfg_config *cfg, sim_err *err);
    void *check_ctx;
    /* Optional callbacks, called in the sweep's own process. */
    void (*on_result)(void *ctx, const an_sweep_result *r);
    void (*on_status)(void *ctx, const an_sweep_status *s);
    void *ctx;
    /* Optional: when *interrupt becomes non-zero (the caller's SIGINT or
     * SIGTERM handler), no further configuration starts, the forked runs in
     * flight get SIGINT (their run function must stop and mark its run
     * failed: the CLI passes its own flag to xp_experiment_run, which a
     * child's copy of the handler sets), the sweep waits for them and
     * returns SIM_EINTR; summary.interrupted counts what was not started. */
    volatile sig_atomic_t *interrupt;
} an_sweep_opts;

typedef struct an_sweep_summary {
    int total;              /* configurations in the sweep (in this part, with --part) */
    int ran;                /* run now, status done or diverged */
    int skipped;            /* already done in the database */
    int elsewhere;          /* in flight in another process's sweep, left to it */
    int failed;             /* failed or killed */
    int not_started;        /* interrupted: configurations never started */
    int rank, size;         /* MPI rank and world size (0 and 1 without MPI) */
    int merged;             /* rank 0: runs copied from the other ranks' shards */
} an_sweep_summary;

/* One configuration of a sweep plan. */
typedef struct an_sweep_point {
    char *label;            /* the grid values and seed, "key=value ..." */
    char **overrides;       /* --set texts, then the grid values and the seed */
    int n_overrides;
    char *canonical;        /* canonical config text (identifies the experiment) */
} an_sweep_point;

typedef struct an_sweep_plan {
    an_sweep_point *points; /* in sweep order: first --grid slowest, seeds fastest */
    int n_points;
} an_sweep_plan;

/* Splits a grid value list on commas at parenthesis depth 0 and trims
 * spaces: "constant(1ms), lognormal(1ms, 0.5)" -> 2 values. Returns the
 * number of values (malloc'd array of malloc'd strings in *values) or
 * SIM_EUSAGE naming the text (empty value, unbalanced parentheses). */
int an_sweep_split_values(const char *text, char ***values, sim_err *err);
void an_sweep_values_free(char **values, int n);

/* Parses "A-B" or "A" into [*lo, *hi]. SIM_EUSAGE when malformed. */
int an_sweep_parse_seeds(const char *text, uint64_t *lo, uint64_t *hi, sim_err *err);

/* Expands and validates the whole grid (every config is loaded). Errors:
 * SIM_EUSAGE (a malformed --grid/--seeds), or the config's own error
 * prefixed with the point's label. plan is caller storage. */
int an_sweep_plan_build(const an_sweep_opts *opts, an_sweep_plan *plan, sim_err *err);
void an_sweep_plan_release(an_sweep_plan *plan);

/* Runs the sweep. Returns 0 when every configuration is done (or was
 * already); when runs failed, the first failure's code with a message
 * counting them. sum may be NULL. */
int an_sweep_run(const an_sweep_opts *opts, an_sweep_summary *sum, sim_err *err);

/* Runs the points of plan whose flag in `todo` is set (all when todo is
 * NULL) into the database at db_path, opts->jobs at a time: the local
 * engine that an_sweep_run and each MPI rank use. Skips (and reports)
 * points already done in that database. Adds to *sum. */
int an_sweep_run_points(const an_sweep_opts *opts, const an_sweep_plan *plan,
                        const unsigned char *todo, const char *db_path, int rank,
                        an_sweep_summary *sum, sim_err *err);

/* 1 when this process was started by mpirun (OMPI_COMM_WORLD_SIZE set). */
int an_sweep_under_mpirun(void);

/* The MPI sweep (sweep_mpi.c): ranks split the points that are not done
 * in opts->db_path round-robin; rank 0 runs into the database itself, the
 * others into shard databases that they ship to rank 0 in MPI messages
 * and rank 0 merges (an_db_merge). SIM_EINTERNAL when built without MPI. */
int an_sweep_run_mpi(const an_sweep_opts *opts, const an_sweep_plan *plan,
                     an_sweep_summary *sum, sim_err *err);

#endif
