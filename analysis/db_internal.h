/* The results database's internals, shared by its files (not a public
 * header: only analysis/db*.c include it):
 *   db.c         the handle, the prepared statements, transactions, open/close
 *   db_schema.c  schema creation, checks and migration of older databases
 *   db_write.c   the run lifecycle and batched metric and series writes
 *   db_claim.c   claims and liveness: run rows whose process is gone
 *   db_merge.c   copying the runs of another database (MPI sweep shards)
 *
 * Invariants: every write goes through one BEGIN IMMEDIATE transaction that
 * is rolled back on any error, so a failed call leaves nothing half-written
 * (and several writer processes never deadlock upgrading a read lock).
 * Buffered metric and series rows leave their buffers only once their
 * transaction has committed. Prepared statements are cached in the handle
 * and reset after each use. NaN doubles are stored as NULL. */
#ifndef DTSIM_AN_DB_INTERNAL_H
#define DTSIM_AN_DB_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "analysis/db.h"

#define METRIC_BATCH 256
#define SERIES_BATCH 256

/* The cached statements (their SQL is db.c's stmt_sql). */
enum {
    ST_BEGIN,
    ST_COMMIT,
    ST_RUN_INSERT,
    ST_PARAM_INSERT,
    ST_METRIC_INSERT,
    ST_SERIES_INSERT,
    ST_WORKER_INSERT,
    ST_STALE_INSERT,
    ST_STALE_WORKER_INSERT,
    ST_LINK_INSERT,
    ST_LABEL_INSERT,
    ST_FAULT_INSERT,
    ST_SPAN_INSERT,
    ST_LOAD_INSERT,
    ST_RUN_FINISH,
    ST_RUN_FAIL,
    ST_FIND_DONE,
    ST_MARK_STALE,
    ST_CLAIMED,
    ST_COUNT
};

typedef struct pending_metric {
    int64_t run_id;
    an_metric_row row;
} pending_metric;

typedef struct pending_series {
    int64_t run_id;
    double sim_time;
    int64_t iteration;
    int worker;
    double value;
    char name[AN_SERIES_NAME_MAX];
} pending_series;

struct an_db {
    sqlite3 *conn;
    char *path;
    int readonly;
    sqlite3_stmt *stmt[ST_COUNT];
    pending_metric *buf;    /* METRIC_BATCH rows */
    int n_buf;
    pending_series *sbuf;   /* SERIES_BATCH rows */
    int n_sbuf;
    int busy_ms;            /* the busy timeout set by the user */
    int claim;              /* every run_begin claims (an_db_set_claim) */
};

/* What db_schema_inspect found in the file. */
enum { SCHEMA_EMPTY, SCHEMA_COMPLETE, SCHEMA_PARTIAL };

/* "path: sqlite message"; call before anything that may overwrite it. */
int db_error(const an_db *db, sim_err *err);
/* The current UTC time as ISO-8601 ("2024-01-02T03:04:05Z"). */
void db_utc_now(char *out, size_t size);
/* Bind a double (NaN -> NULL) or a string (NULL -> NULL, copied). */
void db_bind_real(sqlite3_stmt *s, int i, double v);
void db_bind_text(sqlite3_stmt *s, int i, const char *v);
/* The cached statement `which` (ST_*), prepared on first use; NULL with err
 * filled when it cannot be prepared. */
sqlite3_stmt *db_stmt_get(an_db *db, int which, sim_err *err);
/* Steps a write statement to completion, then resets it and its bindings. */
int db_stmt_run(an_db *db, sqlite3_stmt *s, sim_err *err);
/* SIM_EDB naming the file when the handle was opened read-only. */
int db_check_writable(const an_db *db, sim_err *err);
/* BEGIN IMMEDIATE. */
int db_tx_begin(an_db *db, sim_err *err);
/* Rolls back the open transaction, if any. */
void db_tx_rollback(an_db *db);
/* Commits (ret == 0), or rolls back and returns ret (err is filled before
 * the rollback). */
int db_tx_end(an_db *db, int ret, sim_err *err);
/* The opening of a write through one statement: refuses a read-only
 * handle (SIM_EDB), prepares statement `which` into *st and begins the
 * transaction; 0 or the error code (nothing to undo then). */
int db_write_begin(an_db *db, int which, sqlite3_stmt **st, sim_err *err);
/* 1 when query returns a row, 0 when not, < 0 on error. */
int db_query_has_row(an_db *db, const char *sql);
/* Steps a query bound by the caller: *id = its first row's first column, or
 * 0 when it has none. Resets the statement and its bindings. */
int db_stmt_id(an_db *db, sqlite3_stmt *s, int64_t *id, sim_err *err);

/* db_schema.c. Classifies the file: empty, ours (complete or missing
 * tables), or an error (not ours, newer schema, unreadable). *current (may
 * be NULL): the newer tables and columns exist too. */
int db_schema_inspect(an_db *db, int *state, int *current, sim_err *err);
/* Creates the missing tables and columns (all of them in an empty file). */
int db_schema_create(an_db *db, sim_err *err);
/* PRAGMA quick_check for files up to a size; SIM_EDB "corrupt" naming it. */
int db_integrity_check(an_db *db, const char *file, sim_err *err);
/* 1 when runs has the column, 0 when not, < 0 on error. */
int db_has_runs_column(an_db *db, const char *name);

/* db_write.c. Inserts both buffers; the caller holds the transaction and
 * empties the buffers once it has committed. */
int db_rows_write(an_db *db, sim_err *err);

/* db_claim.c. In the caller's write transaction: *other = the id of a row of
 * this config and seed that is running, done or diverged, or 0. */
int db_claim_find(an_db *db, const char *config, uint64_t seed, int64_t *other, sim_err *err);
/* This machine's name ("" when unknown), for runs.host. */
void db_host_get(char *out, size_t size);
/* Marks 'running' rows whose process is gone from this host as 'failed'
 * (interrupted). Returns the number marked, or < 0. */
int db_orphans_mark(an_db *db, sim_err *err);

#endif
