/* The results database handle: opening (schema checks, WAL, orphan runs),
 * closing, the prepared statements it caches, and the transaction and
 * binding helpers every db_*.c file writes through (db_internal.h). */
#include "analysis/db.h"
#include "analysis/db_internal.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUSY_DEFAULT_MS 10000

static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_RUN_INSERT] = "INSERT INTO runs(name, algorithm, status, seed, n_workers, config,"
                      " started_at, version, pid, host, commit_id, blas, cpu, threads)"
                      " VALUES(?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [ST_PARAM_INSERT] = "INSERT INTO params(run_id, key, value, num) VALUES(?1, ?2, ?3, ?4)",
    [ST_METRIC_INSERT] = "INSERT INTO metrics(run_id, sim_time, iteration, epoch, samples,"
                         " train_loss, test_loss, test_accuracy, consensus_distance,"
                         " bytes_sent) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [ST_SERIES_INSERT] = "INSERT INTO series(run_id, sim_time, iteration, worker, name, value)"
                         " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_WORKER_INSERT] = "INSERT INTO workers(run_id, worker, steps, compute_time, idle_time,"
                         " bytes_sent, mean_staleness, gossip_rounds)"
                         " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_STALE_INSERT] = "INSERT INTO staleness(run_id, staleness, count) VALUES(?1, ?2, ?3)",
    [ST_STALE_WORKER_INSERT] = "INSERT INTO staleness_workers(run_id, worker, staleness, count)"
                               " VALUES(?1, ?2, ?3, ?4)",
    [ST_LABEL_INSERT] = "INSERT INTO labels(run_id, worker, label, count) VALUES(?1, ?2, ?3, ?4)",
    [ST_LINK_INSERT] = "INSERT INTO links(run_id, link, src, dst, bytes) VALUES(?1, ?2, ?3, ?4, ?5)",
    [ST_FAULT_INSERT] = "INSERT INTO faults(run_id, sim_time, event, target, value)"
                        " VALUES(?1, ?2, ?3, ?4, ?5)",
    [ST_SPAN_INSERT] = "INSERT INTO spans(run_id, worker, state, start, end)"
                       " VALUES(?1, ?2, ?3, ?4, ?5)",
    [ST_LOAD_INSERT] = "INSERT INTO link_load(run_id, link, sim_time, bytes) VALUES(?1, ?2, ?3, ?4)",
    [ST_RUN_FINISH] = "UPDATE runs SET status = ?2, finished_at = ?3, sim_time = ?4,"
                      " iterations = ?5, wall_seconds = ?6, bytes_sent = ?7,"
                      " final_train_loss = ?8, final_test_accuracy = ?9,"
                      " mean_staleness = ?10, idle_fraction = ?11,"
                      " consensus_distance = ?12 WHERE id = ?1",
    [ST_RUN_FAIL] = "UPDATE runs SET status = 'failed', finished_at = ?2, error = ?3"
                    " WHERE id = ?1 AND status = 'running'",
    [ST_FIND_DONE] = "SELECT id FROM runs WHERE config = ?1"
                     " AND status IN ('done', 'diverged') ORDER BY id LIMIT 1",
    [ST_MARK_STALE] = "UPDATE runs SET status = 'failed', finished_at = ?2"
                      " WHERE config = ?1 AND status = 'running' AND pid IS NULL",
    [ST_CLAIMED] = "SELECT id FROM runs WHERE config = ?1 AND seed = ?2"
                   " AND status IN ('running', 'done', 'diverged') ORDER BY id LIMIT 1",
};

/* "path: sqlite message"; call before anything that may overwrite it. */
int db_error(const an_db *db, sim_err *err)
{
    return sim_err_set(err, SIM_EDB, "%s: %s", db->path, sqlite3_errmsg(db->conn));
}

void db_utc_now(char *out, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void db_bind_real(sqlite3_stmt *s, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_double(s, i, v);
}

void db_bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

sqlite3_stmt *db_stmt_get(an_db *db, int which, sim_err *err)
{
    if (!db->stmt[which] &&
        sqlite3_prepare_v3(db->conn, stmt_sql[which], -1, SQLITE_PREPARE_PERSISTENT,
                           &db->stmt[which], NULL) != SQLITE_OK) {
        db_error(db, err);
        return NULL;
    }
    return db->stmt[which];
}

/* Steps a write statement to completion, then resets it and its bindings. */
int db_stmt_run(an_db *db, sqlite3_stmt *s, sim_err *err)
{
    int rc = sqlite3_step(s);
    int ret = 0;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        ret = db_error(db, err);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return ret;
}

int db_check_writable(const an_db *db, sim_err *err)
{
    if (db->readonly)
        return sim_err_set(err, SIM_EDB, "%s: database opened read-only", db->path);
    return 0;
}

int db_tx_begin(an_db *db, sim_err *err)
{
    sqlite3_stmt *s = db_stmt_get(db, ST_BEGIN, err);
    return s ? db_stmt_run(db, s, err) : SIM_EDB;
}

void db_tx_rollback(an_db *db)
{
    if (!sqlite3_get_autocommit(db->conn))
        sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
}

/* Commits, or rolls back and reports (err is filled before the rollback). */
int db_tx_end(an_db *db, int ret, sim_err *err)
{
    if (ret == 0) {
        sqlite3_stmt *s = db_stmt_get(db, ST_COMMIT, err);
        ret = s ? db_stmt_run(db, s, err) : SIM_EDB;
    }
    if (ret != 0)
        db_tx_rollback(db);
    return ret;
}

int db_write_begin(an_db *db, int which, sqlite3_stmt **st, sim_err *err)
{
    if (db_check_writable(db, err) != 0)
        return SIM_EDB;
    *st = db_stmt_get(db, which, err);
    if (!*st)
        return SIM_EDB;
    return db_tx_begin(db, err);
}

/* 1 when query returns a row, 0 when not, < 0 on error. */
int db_query_has_row(an_db *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->conn, sql, -1, &s, NULL) != SQLITE_OK)
        return SIM_EDB;
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : SIM_EDB;
}

/* Steps a query bound by the caller: *id = its first row's first column, or
 * 0 when it has none. Resets the statement and its bindings. */
int db_stmt_id(an_db *db, sqlite3_stmt *s, int64_t *id, sim_err *err)
{
    int rc = sqlite3_step(s);
    int ret = 0;
    *id = 0;
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(s, 0);
    else if (rc != SQLITE_DONE)
        ret = db_error(db, err);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return ret;
}

/* Runs a pragma that may return a row, and ignores the row. */
static int pragma_exec(an_db *db, const char *sql, sim_err *err)
{
    if (sqlite3_exec(db->conn, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_error(db, err);
    return 0;
}

static an_db *db_open(const char *path, int readonly, sim_err *err)
{
    if (!path || !*path) {
        sim_err_set(err, SIM_EUSAGE, "results database: empty path");
        return NULL;
    }
    an_db *db = calloc(1, sizeof *db);
    if (!db)
        goto nomem;
    db->readonly = readonly;
    db->path = strdup(path);
    if (!db->path)
        goto nomem;
    if (!readonly) {
        db->buf = malloc(METRIC_BATCH * sizeof *db->buf);
        db->sbuf = malloc(SERIES_BATCH * sizeof *db->sbuf);
        if (!db->buf || !db->sbuf)
            goto nomem;
    }
    int flags = SQLITE_OPEN_URI | (readonly ? SQLITE_OPEN_READONLY
                                            : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    if (sqlite3_open_v2(path, &db->conn, flags, NULL) != SQLITE_OK) {
        if (!db->conn)
            goto nomem;
        db_error(db, err);
        goto fail;
    }
    sqlite3_extended_result_codes(db->conn, 0);
    sqlite3_busy_timeout(db->conn, BUSY_DEFAULT_MS);
    db->busy_ms = BUSY_DEFAULT_MS;
    if (!readonly && sqlite3_db_readonly(db->conn, "main") == 1) {
        sim_err_set(err, SIM_EDB, "%s: %s", path, sqlite3_errstr(SQLITE_READONLY));
        goto fail;
    }
    int state = SCHEMA_EMPTY, current = 0;
    if (db_schema_inspect(db, &state, readonly ? NULL : &current, err) != 0)
        goto fail;
    const char *file = sqlite3_db_filename(db->conn, "main");
    if (state != SCHEMA_EMPTY && file && *file && db_integrity_check(db, file, err) != 0)
        goto fail;
    if (readonly) {
        if (state != SCHEMA_COMPLETE) {
            sim_err_set(err, SIM_EDB, "%s: not a dtsim results database (%s)", path,
                        state == SCHEMA_EMPTY ? "no tables" : "missing tables");
            goto fail;
        }
        return db;
    }
    if (pragma_exec(db, "PRAGMA journal_mode=WAL", err) != 0 ||
        pragma_exec(db, "PRAGMA synchronous=NORMAL", err) != 0)
        goto fail;
    if ((state != SCHEMA_COMPLETE || !current) && db_schema_create(db, err) != 0)
        goto fail;
    if (db_orphans_mark(db, err) < 0)
        goto fail;
    return db;

nomem:
    sim_err_set(err, SIM_ENOMEM, "%s: out of memory opening the database", path);
fail:
    an_db_close(db);
    return NULL;
}

an_db *an_db_open(const char *path, sim_err *err)
{
    return db_open(path, 0, err);
}

/* A read-only open of a WAL database still creates PATH-shm beside it; in a
 * read-only directory that fails. The immutable URI reads the file as it
 * is (no locking: meant for databases nobody is writing). */
an_db *an_db_open_readonly(const char *path, sim_err *err)
{
    an_db *db = db_open(path, 1, err);
    if (db || !path || strncmp(path, "file:", 5) == 0 || access(path, R_OK) != 0)
        return db;
    size_t n = strlen(path);
    char *uri = malloc(3 * n + 32);
    if (!uri)
        return NULL;
    char *o = uri + sprintf(uri, "file:");
    for (const char *c = path; *c; c++) {
        if (*c == '?' || *c == '#' || *c == '%')
            o += sprintf(o, "%%%02X", (unsigned char)*c);
        else
            *o++ = *c;
    }
    strcpy(o, "?immutable=1");
    sim_err first = err ? *err : (sim_err){0};
    db = db_open(uri, 1, NULL);
    free(uri);
    if (db) {
        free(db->path);
        db->path = strdup(path);
        if (!db->path) {
            an_db_close(db);
            return NULL;
        }
        if (err)
            sim_err_clear(err);
        return db;
    }
    if (err)
        *err = first;
    return NULL;
}

void an_db_close(an_db *db)
{
    if (!db)
        return;
    if (db->conn && (db->n_buf > 0 || db->n_sbuf > 0))
        an_db_flush(db, NULL);  /* best effort: close cannot report */
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(db->stmt[i]);
    sqlite3_close_v2(db->conn);
    free(db->buf);
    free(db->sbuf);
    free(db->path);
    free(db);
}

const char *an_db_path(const an_db *db)
{
    return db->path;
}

struct sqlite3 *an_db_sqlite(an_db *db)
{
    return db->conn;
}

void an_db_set_busy_timeout(an_db *db, int ms)
{
    db->busy_ms = ms < 0 ? 0 : ms;
    sqlite3_busy_timeout(db->conn, db->busy_ms);
}

void an_db_set_claim(an_db *db, int claim)
{
    db->claim = claim != 0;
}
