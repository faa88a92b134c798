/* The results database (SQLite). Schema of docs/database.md plus a `meta`
 * table holding schema_version. Opened in WAL mode with a busy timeout so
 * several processes can append. A run row is written as 'running' first and
 * marked 'done', 'diverged' or 'failed' (with its error message) at the
 * end; metric and series rows are buffered and written in batched
 * transactions (an_db_flush). Newer tables and columns (series, faults,
 * runs.error) are added to an older database when it is opened for
 * writing; a read-only open needs only the original tables.
 * Errors (locked, read-only, not a dtsim database, newer schema) are
 * SIM_EDB with the file name first and sqlite3_errmsg. */
#ifndef DTSIM_AN_DB_H
#define DTSIM_AN_DB_H

#include <stddef.h>
#include <stdint.h>

#include "sim/err.h"

struct sqlite3;

#define AN_DB_SCHEMA_VERSION 1

typedef struct an_db an_db;

typedef struct an_metric_row {
    double sim_time;        /* simulated seconds */
    int64_t iteration;
    double epoch;
    int64_t samples;
    double train_loss;      /* NAN -> NULL */
    double test_loss;       /* NAN -> NULL */
    double test_accuracy;   /* NAN -> NULL */
    double consensus_distance;
    int64_t bytes_sent;
} an_metric_row;

/* One value a method recorded (algo_env_series): long format, one row per
 * (time, worker, name). */
#define AN_SERIES_NAME_MAX 64
typedef struct an_series_row {
    double sim_time;        /* simulated seconds */
    int64_t iteration;
    int worker;             /* -1: a global value (NULL) */
    const char *name;       /* at most AN_SERIES_NAME_MAX - 1 characters; copied */
    double value;           /* NAN -> NULL */
} an_series_row;

typedef struct an_worker_row {
    int worker;
    int64_t steps;
    double compute_time;    /* simulated seconds */
    double idle_time;       /* simulated seconds */
    int64_t bytes_sent;
    double mean_staleness;  /* NAN -> NULL */
    int64_t gossip_rounds;  /* gossip steps / pairwise averagings taken part in */
} an_worker_row;

/* One fault that happened ([faults] schedule, mtbf/downtime). */
typedef struct an_fault_row {
    double sim_time;        /* simulated seconds */
    const char *event;      /* crash, rejoin, slowdown, link */
    const char *target;     /* a worker id, or a link's vertices "A-B" */
    double value;           /* slowdown factor, link rate in bytes/s (0 = down);
                               NAN -> NULL (crash, rejoin) */
} an_fault_row;

typedef struct an_link_row {
    int link;               /* directed link id: 2e and 2e+1 for edge e */
    int src, dst;           /* vertices: hosts first (worker i = host i), then switches */
    int64_t bytes;          /* bytes carried */
} an_link_row;

typedef struct an_run_summary {
    const char *status;     /* "done" | "diverged" | "failed" */
    double sim_time;
    int64_t iterations;
    double wall_seconds;
    int64_t bytes_sent;
    double final_train_loss;
    double final_test_accuracy;
    double mean_staleness;  /* NAN -> NULL */
    double idle_fraction;
    double consensus_distance; /* final; NAN -> NULL */
} an_run_summary;

typedef struct an_run_info {
    const char *name;
    const char *algorithm;
    uint64_t seed;
    int n_workers;
    const char *config;     /* canonical text */
    const char *version;
    /* provenance (NULL: column NULL) */
    const char *commit;  /* git describe of the build */
    const char *blas;    /* BLAS library, version and kernel (workloads/blas.h) */
    const char *cpu;     /* CPU model name */
    int threads;         /* gradient threads of the run (0: NULL) */
    /* params rows */
    int n_params;
    const char *const *param_keys;   /* "section.key" */
    const char *const *param_values; /* as written (cfg_entry_written) */
    const double *param_nums;        /* SI numbers, NAN -> NULL; NULL: all NULL */
    /* 1: claim the configuration: begin only when no row of the same
     * config and seed is running, done or diverged (AN_DB_CLAIMED). */
    int claim;
} an_run_info;

/* Opens or creates the database and its schema. */
an_db *an_db_open(const char *path, sim_err *err);
void an_db_close(an_db *db);
const char *an_db_path(const an_db *db);

/* Inserts runs (status 'running', started_at now UTC ISO-8601) and params in
 * one transaction; returns the new run id in *run_id. */
int an_db_run_begin(an_db *db, const an_run_info *info, int64_t *run_id, sim_err *err);
/* an_db_run_begin with info->claim set: another row of the same config and
 * seed is running, done or diverged; nothing was written, *run_id is that
 * row's id. */
#define AN_DB_CLAIMED 1
/* Buffers a metric row; written at the next flush (automatic every 256 rows). */
int an_db_metric(an_db *db, int64_t run_id, const an_metric_row *row, sim_err *err);
/* Buffers a series row, written with the metric rows (same batches and
 * transactions). A name that is empty or too long is SIM_EINTERNAL. */
int an_db_series(an_db *db, int64_t run_id, const an_series_row *row, sim_err *err);
/* Writes the buffered metric and series rows in one transaction. */
int an_db_flush(an_db *db, sim_err *err);
/* Writes workers rows, staleness histogram (counts[s] for s = 0..n-1, zero
 * counts skipped), flushes metrics and sets the summary, finished_at and
 * status, all in one transaction. */
int an_db_run_finish(an_db *db, int64_t run_id, const an_run_summary *sum,
                     const an_worker_row *workers, int n_workers,
                     const int64_t *staleness_counts, int64_t n_staleness, sim_err *err);
/* Writes the per-worker label histogram of a run's partition: counts is
 * n_workers x classes (row-major); zero counts are skipped. */
int an_db_run_labels(an_db *db, int64_t run_id, int n_workers, int classes,
                     const int64_t *counts, sim_err *err);
/* Writes the per-link byte counters of a run (links that carried bytes),
 * in one transaction; call before an_db_run_finish. */
int an_db_run_links(an_db *db, int64_t run_id, const an_link_row *links, int n_links,
                    sim_err *err);
/* Writes the faults that happened in a run ([faults]: schedule and random
 * ones), in one transaction; call before an_db_run_finish. */
int an_db_run_faults(an_db *db, int64_t run_id, const an_fault_row *faults, int n_faults,
                     sim_err *err);
/* Writes every staleness value of each worker's applied updates with its
 * count (counts[w][s] for s = 0..lens[w]-1, zero counts skipped; a NULL
 * counts[w] has none), in one transaction; call before an_db_run_finish. */
int an_db_run_staleness(an_db *db, int64_t run_id, const int64_t *const *counts,
                        const int64_t *lens, int n_workers, sim_err *err);
/* Marks a run failed (best effort, for error paths), flushing its rows. */
int an_db_run_fail(an_db *db, int64_t run_id, sim_err *err);
/* The same, with the error message stored in runs.error (NULL: none). */
int an_db_run_fail_message(an_db *db, int64_t run_id, const char *message, sim_err *err);
/* Id of a run with status 'done' or 'diverged' and this exact config, or 0. */
int an_db_find_done(an_db *db, const char *config, int64_t *run_id, sim_err *err);

/* Opens an existing database read-only (for queries and reports): never
 * creates or changes it. Missing file, not a dtsim database, newer schema:
 * SIM_EDB. Write calls on such a handle fail with SIM_EDB. */
an_db *an_db_open_readonly(const char *path, sim_err *err);
/* Sets the busy timeout (milliseconds; default 10000) used while waiting
 * for another connection's lock before SIM_EDB "database is locked". */
void an_db_set_busy_timeout(an_db *db, int ms);
/* Marks runs of this config still 'running' as 'failed' when they have no
 * runs.pid (written by an older dtsim: their process cannot be checked;
 * rows with a pid are an_db_orphans_mark's). Returns how many, or < 0. */
int an_db_mark_stale_running(an_db *db, const char *config, sim_err *err);
/* Marks 'running' rows whose process (runs.pid) is gone from this host
 * (runs.host) as 'failed' with runs.error saying so; every writable open
 * does it. Returns the number marked, or < 0. */
int an_db_orphans_mark(an_db *db, sim_err *err);
/* 1: every an_db_run_begin on this handle claims (as an_run_info.claim). */
void an_db_set_claim(an_db *db, int claim);
/* 1 when run_id is 'running' but its process is gone from this host (a
 * read-only connection cannot mark it: report shows it as interrupted). */
int an_db_run_orphaned(an_db *db, int64_t run_id);
/* Copies the runs of the dtsim database at src_path into db in one
 * transaction, with new ids and their params, metrics, workers,
 * staleness, labels, links, series and faults rows (in their order; tables the
 * source does not have are skipped). A 'done' or 'diverged' run whose config
 * is already done or diverged in db is skipped; a 'running' one is copied
 * as 'failed' (its process is gone). *n_copied = runs copied. SIM_EDB
 * names the file. Used by rank 0 of an MPI sweep. */
int an_db_merge(an_db *db, const char *src_path, int *n_copied, sim_err *err);
/* What `dtsim merge` compares before merging: the database's schema version
 * (meta.schema_version; 0 for an empty database) and the distinct
 * experiment names of its runs (runs.name), sorted and joined by ", " into
 * names (len bytes; "" for none; SIM_EDB if they do not fit). */
int an_db_identity(an_db *db, long *version, char *names, size_t len, sim_err *err);
/* The underlying connection, for read queries (report, plot, scaling). */
struct sqlite3 *an_db_sqlite(an_db *db);

#endif
