/* The results database: schema creation and checks, the run lifecycle
 * (running -> done | diverged | failed) and batched metric writes.
 *
 * Invariants: every write goes through one BEGIN IMMEDIATE transaction that
 * is rolled back on any error, so a failed call leaves nothing half-written
 * (and several writer processes never deadlock upgrading a read lock).
 * Buffered metric and series rows leave their buffers only once their
 * transaction has committed. Prepared statements are cached in the handle and reset after
 * each use. NaN doubles are stored as NULL. */
#include "analysis/db.h"
#include "analysis/liveness.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#define METRIC_BATCH 256
#define SERIES_BATCH 256
#define BUSY_DEFAULT_MS 10000
/* Files up to this size get a full PRAGMA quick_check on open. */
#define QUICK_CHECK_MAX_BYTES (64LL << 20)
/* Marking a run failed retries this long when the database stays locked. */
#define FAIL_RETRY_MS 60000

enum {
    ST_BEGIN,
    ST_COMMIT,
    ST_RUN_INSERT,
    ST_PARAM_INSERT,
    ST_METRIC_INSERT,
    ST_SERIES_INSERT,
    ST_WORKER_INSERT,
    ST_STALE_INSERT,
    ST_LINK_INSERT,
    ST_LABEL_INSERT,
    ST_FAULT_INSERT,
    ST_RUN_FINISH,
    ST_RUN_FAIL,
    ST_FIND_DONE,
    ST_MARK_STALE,
    ST_CLAIMED,
    ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_RUN_INSERT] = "INSERT INTO runs(name, algorithm, status, seed, n_workers, config,"
                      " started_at, version, pid, host) VALUES(?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7,"
                      " ?8, ?9)",
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
    [ST_LABEL_INSERT] = "INSERT INTO labels(run_id, worker, label, count) VALUES(?1, ?2, ?3, ?4)",
    [ST_LINK_INSERT] = "INSERT INTO links(run_id, link, src, dst, bytes) VALUES(?1, ?2, ?3, ?4, ?5)",
    [ST_FAULT_INSERT] = "INSERT INTO faults(run_id, sim_time, event, target, value)"
                        " VALUES(?1, ?2, ?3, ?4, ?5)",
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

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', '1');"
    "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, name TEXT, algorithm TEXT,"
    " status TEXT, seed INTEGER, n_workers INTEGER, config TEXT, started_at TEXT,"
    " finished_at TEXT, version TEXT, sim_time REAL, iterations INTEGER,"
    " wall_seconds REAL, bytes_sent INTEGER, final_train_loss REAL,"
    " final_test_accuracy REAL, mean_staleness REAL, idle_fraction REAL,"
    " consensus_distance REAL, error TEXT, pid INTEGER, host TEXT);"
    "CREATE TABLE IF NOT EXISTS params(run_id INTEGER, key TEXT, value TEXT, num REAL);"
    "CREATE TABLE IF NOT EXISTS metrics(run_id INTEGER, sim_time REAL, iteration INTEGER,"
    " epoch REAL, samples INTEGER, train_loss REAL, test_loss REAL, test_accuracy REAL,"
    " consensus_distance REAL, bytes_sent INTEGER);"
    "CREATE TABLE IF NOT EXISTS workers(run_id INTEGER, worker INTEGER, steps INTEGER,"
    " compute_time REAL, idle_time REAL, bytes_sent INTEGER, mean_staleness REAL,"
    " gossip_rounds INTEGER);"
    "CREATE TABLE IF NOT EXISTS staleness(run_id INTEGER, staleness INTEGER,"
    " count INTEGER);"
    "CREATE TABLE IF NOT EXISTS labels(run_id INTEGER, worker INTEGER, label INTEGER,"
    " count INTEGER);"
    "CREATE TABLE IF NOT EXISTS links(run_id INTEGER, link INTEGER, src INTEGER,"
    " dst INTEGER, bytes INTEGER);"
    "CREATE TABLE IF NOT EXISTS series(run_id INTEGER, sim_time REAL, iteration INTEGER,"
    " worker INTEGER, name TEXT, value REAL);"
    "CREATE TABLE IF NOT EXISTS faults(run_id INTEGER, sim_time REAL, event TEXT,"
    " target TEXT, value REAL);"
    "CREATE INDEX IF NOT EXISTS metrics_run_time ON metrics(run_id, sim_time);"
    "CREATE INDEX IF NOT EXISTS params_run ON params(run_id);"
    "CREATE INDEX IF NOT EXISTS workers_run ON workers(run_id);"
    "CREATE INDEX IF NOT EXISTS staleness_run ON staleness(run_id);"
    "CREATE INDEX IF NOT EXISTS runs_config ON runs(config);"
    "CREATE INDEX IF NOT EXISTS series_run_name ON series(run_id, name);";

/* Added after the first schema: a writable open adds them to an older
 * database (still schema_version 1; older readers ignore them). */
static const char *const newer_tables[] = {"labels", "links", "series", "faults"};
#define N_NEWER ((int)(sizeof newer_tables / sizeof newer_tables[0]))

/* Our tables; meta first. */
static const char *const table_names[] = {"meta", "runs", "params", "metrics",
                                          "workers", "staleness"};
#define N_TABLES ((int)(sizeof table_names / sizeof table_names[0]))

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

enum { SCHEMA_EMPTY, SCHEMA_COMPLETE, SCHEMA_PARTIAL };

/* "path: sqlite message"; call before anything that may overwrite it. */
static int db_error(const an_db *db, sim_err *err)
{
    return sim_err_set(err, SIM_EDB, "%s: %s", db->path, sqlite3_errmsg(db->conn));
}

static void utc_now(char *out, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void bind_real(sqlite3_stmt *s, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_double(s, i, v);
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

static sqlite3_stmt *stmt_get(an_db *db, int which, sim_err *err)
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
static int stmt_run(an_db *db, sqlite3_stmt *s, sim_err *err)
{
    int rc = sqlite3_step(s);
    int ret = 0;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        ret = db_error(db, err);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return ret;
}

static int check_writable(const an_db *db, sim_err *err)
{
    if (db->readonly)
        return sim_err_set(err, SIM_EDB, "%s: database opened read-only", db->path);
    return 0;
}

static int tx_begin(an_db *db, sim_err *err)
{
    sqlite3_stmt *s = stmt_get(db, ST_BEGIN, err);
    return s ? stmt_run(db, s, err) : SIM_EDB;
}

static void tx_rollback(an_db *db)
{
    if (!sqlite3_get_autocommit(db->conn))
        sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);
}

/* Commits, or rolls back and reports (err is filled before the rollback). */
static int tx_end(an_db *db, int ret, sim_err *err)
{
    if (ret == 0) {
        sqlite3_stmt *s = stmt_get(db, ST_COMMIT, err);
        ret = s ? stmt_run(db, s, err) : SIM_EDB;
    }
    if (ret != 0)
        tx_rollback(db);
    return ret;
}

/* 1 when query returns a row, 0 when not, < 0 on error. */
static int query_has_row(an_db *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->conn, sql, -1, &s, NULL) != SQLITE_OK)
        return SIM_EDB;
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : SIM_EDB;
}

/* Columns added to runs after the first schema, in the order they came. */
static const char *const newer_columns[][2] = {
    {"error", "TEXT"}, {"pid", "INTEGER"}, {"host", "TEXT"}};
#define N_NEWER_COLUMNS ((int)(sizeof newer_columns / sizeof newer_columns[0]))

static int has_runs_column(an_db *db, const char *name)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT 1 FROM pragma_table_info('runs', 'main')"
                              " WHERE name = '%s'", name);
    return query_has_row(db, sql);
}

/* params.num (the SI number of a value), added after the first schema. */
static int has_params_num(an_db *db)
{
    return query_has_row(db, "SELECT 1 FROM pragma_table_info('params', 'main')"
                             " WHERE name = 'num'");
}

/* 1 when runs has every newer column (and params its num), 0 when not,
 * < 0 on error. */
static int has_newer_columns(an_db *db)
{
    for (int i = 0; i < N_NEWER_COLUMNS; i++) {
        int col = has_runs_column(db, newer_columns[i][0]);
        if (col != 1)
            return col;
    }
    return has_params_num(db);
}

/* Classifies the file: empty, ours (complete or missing tables), or an
 * error (not ours, newer schema, unreadable). *current (may be NULL): the
 * newer tables and runs.error exist too. */
static int schema_inspect(an_db *db, int *state, int *current, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    int have[N_TABLES] = {0};
    int n_tables = 0, n_ours = 0, n_newer = 0;
    if (sqlite3_prepare_v2(db->conn,
                           "SELECT name FROM sqlite_master WHERE type = 'table'"
                           " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
                           -1, &s, NULL) != SQLITE_OK)
        goto sql_fail;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        n_tables++;
        for (int i = 0; i < N_TABLES; i++)
            if (name && strcmp(name, table_names[i]) == 0 && !have[i]) {
                have[i] = 1;
                n_ours++;
            }
        for (int i = 0; i < N_NEWER; i++)
            if (name && strcmp(name, newer_tables[i]) == 0)
                n_newer++;
    }
    if (rc != SQLITE_DONE)
        goto sql_fail;
    sqlite3_finalize(s);
    s = NULL;
    if (n_tables == 0) {
        *state = SCHEMA_EMPTY;
        return 0;
    }
    if (!have[0])
        return sim_err_set(err, SIM_EDB,
                           "%s: not a dtsim results database (no meta table)", db->path);
    if (sqlite3_prepare_v2(db->conn, "SELECT value FROM meta WHERE key = 'schema_version'",
                           -1, &s, NULL) != SQLITE_OK) {
        sim_err_set(err, SIM_EDB, "%s: not a dtsim results database (%s)", db->path,
                    sqlite3_errmsg(db->conn));
        return SIM_EDB;
    }
    rc = sqlite3_step(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        goto sql_fail;
    long version = 0;
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
        const char *text = (const char *)sqlite3_column_text(s, 0);
        char *end = NULL;
        version = text ? strtol(text, &end, 10) : 0;
        if (!end || end == text || *end != '\0')
            version = 0;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (version < 1)
        return sim_err_set(err, SIM_EDB,
                           "%s: not a dtsim results database (no schema_version in meta)",
                           db->path);
    if (version > AN_DB_SCHEMA_VERSION)
        return sim_err_set(err, SIM_EDB,
                           "%s: schema version %ld is newer than this dtsim (%d)",
                           db->path, version, AN_DB_SCHEMA_VERSION);
    *state = n_ours == N_TABLES ? SCHEMA_COMPLETE : SCHEMA_PARTIAL;
    if (current) {
        int col = have[1] ? has_newer_columns(db) : 0;
        if (col < 0)
            goto sql_fail;
        *current = n_newer == N_NEWER && col == 1;
    }
    return 0;

sql_fail:
    if (sqlite3_errcode(db->conn) == SQLITE_NOTADB)
        sim_err_set(err, SIM_EDB, "%s: not a dtsim results database (%s)", db->path,
                    sqlite3_errmsg(db->conn));
    else
        db_error(db, err);
    sqlite3_finalize(s);
    return SIM_EDB;
}

/* Creates the missing tables and columns (all of them in an empty file). */
static int schema_create(an_db *db, sim_err *err)
{
    int ret = tx_begin(db, err);
    if (ret != 0)
        return ret;
    int state = SCHEMA_EMPTY, current = 0;
    ret = schema_inspect(db, &state, &current, err);
    if (ret == 0 && (state != SCHEMA_COMPLETE || !current) &&
        sqlite3_exec(db->conn, schema_sql, NULL, NULL, NULL) != SQLITE_OK)
        ret = db_error(db, err);
    for (int i = 0; ret == 0 && i < N_NEWER_COLUMNS; i++) {
        int col = has_runs_column(db, newer_columns[i][0]);
        char sql[96];
        snprintf(sql, sizeof sql, "ALTER TABLE runs ADD COLUMN %s %s", newer_columns[i][0],
                 newer_columns[i][1]);
        if (col < 0 || (col == 0 && sqlite3_exec(db->conn, sql, NULL, NULL, NULL) != SQLITE_OK))
            ret = db_error(db, err);
    }
    if (ret == 0) {
        int col = has_params_num(db);
        if (col < 0 || (col == 0 && sqlite3_exec(db->conn, "ALTER TABLE params ADD COLUMN num REAL",
                                                 NULL, NULL, NULL) != SQLITE_OK))
            ret = db_error(db, err);
    }
    return tx_end(db, ret, err);
}

/* Runs a pragma that may return a row, and ignores the row. */
static int pragma_exec(an_db *db, const char *sql, sim_err *err)
{
    if (sqlite3_exec(db->conn, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_error(db, err);
    return 0;
}

/* This machine's name ("" when unknown). */
static void host_get(char *out, size_t size)
{
    if (gethostname(out, size) != 0)
        out[0] = '\0';
    out[size - 1] = '\0';
}

/* 1 when a run row's process is known to be gone: it ran on this host and
 * no live process is its owner (an_process_gone: a zombie is gone). */
static int process_gone(int64_t pid, const char *host, const char *started_at)
{
    char self[256];
    host_get(self, sizeof self);
    if (pid <= 0 || pid > INT32_MAX || !host || !self[0] || strcmp(host, self) != 0)
        return 0;
    return an_process_gone(pid, started_at);
}

/* Cheap integrity check: sqlite_master and meta are read by
 * schema_inspect on every open; files up to QUICK_CHECK_MAX_BYTES also
 * get PRAGMA quick_check, which must answer one row 'ok'. */
static int integrity_check(an_db *db, const char *file, sim_err *err)
{
    struct stat st;
    if (stat(file, &st) != 0 || st.st_size > QUICK_CHECK_MAX_BYTES)
        return 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->conn, "PRAGMA quick_check", -1, &s, NULL) != SQLITE_OK)
        return sim_err_set(err, SIM_EDB, "%s: database is corrupt (%s); refusing to use it",
                           db->path, sqlite3_errmsg(db->conn));
    int rc = sqlite3_step(s);
    const char *first = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    int ret = 0;
    if (rc != SQLITE_ROW)
        ret = sim_err_set(err, SIM_EDB, "%s: database is corrupt (%s); refusing to use it",
                          db->path, sqlite3_errmsg(db->conn));
    else if (!first || strcmp(first, "ok") != 0)
        ret = sim_err_set(err, SIM_EDB,
                          "%s: database is corrupt (integrity check: %.200s); refusing to"
                          " use it", db->path, first ? first : "no answer");
    sqlite3_finalize(s);
    return ret;
}

/* Marks 'running' rows whose process is gone from this host as 'failed'
 * (interrupted). Returns the number marked, or < 0. */
static int orphans_mark(an_db *db, sim_err *err)
{
    sqlite3_stmt *q = NULL, *up = NULL;
    int ret = tx_begin(db, err), n = 0;
    if (ret != 0)
        return ret;
    if (sqlite3_prepare_v2(db->conn, "SELECT id, pid, host, started_at FROM runs"
                                     " WHERE status = 'running'"
                                     " AND pid IS NOT NULL", -1, &q, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db->conn, "UPDATE runs SET status = 'failed', finished_at = ?2,"
                                     " error = ?3 WHERE id = ?1 AND status = 'running'",
                           -1, &up, NULL) != SQLITE_OK)
        ret = db_error(db, err);
    char now[32];
    utc_now(now, sizeof now);
    int rc = SQLITE_DONE;
    while (ret == 0 && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t pid = sqlite3_column_int64(q, 1);
        const char *host = (const char *)sqlite3_column_text(q, 2);
        if (!process_gone(pid, host, (const char *)sqlite3_column_text(q, 3)))
            continue;
        char msg[400];
        snprintf(msg, sizeof msg, "interrupted: its process %lld on %.256s ended without"
                                  " finishing the run", (long long)pid, host);
        sqlite3_bind_int64(up, 1, sqlite3_column_int64(q, 0));
        bind_text(up, 2, now);
        bind_text(up, 3, msg);
        ret = stmt_run(db, up, err);
        n++;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = db_error(db, err);
    sqlite3_finalize(q);
    sqlite3_finalize(up);
    ret = tx_end(db, ret, err);
    return ret != 0 ? ret : n;
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
    if (schema_inspect(db, &state, readonly ? NULL : &current, err) != 0)
        goto fail;
    const char *file = sqlite3_db_filename(db->conn, "main");
    if (state != SCHEMA_EMPTY && file && *file && integrity_check(db, file, err) != 0)
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
    if ((state != SCHEMA_COMPLETE || !current) && schema_create(db, err) != 0)
        goto fail;
    if (orphans_mark(db, err) < 0)
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

int an_db_run_begin(an_db *db, const an_run_info *info, int64_t *run_id, sim_err *err)
{
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    sqlite3_stmt *run = stmt_get(db, ST_RUN_INSERT, err);
    sqlite3_stmt *param = stmt_get(db, ST_PARAM_INSERT, err);
    int claim = info->claim || db->claim;
    sqlite3_stmt *claimed = claim ? stmt_get(db, ST_CLAIMED, err) : NULL;
    if (!run || !param || (claim && !claimed))
        return SIM_EDB;
    char now[32], host[256];
    utc_now(now, sizeof now);
    host_get(host, sizeof host);
    int ret = tx_begin(db, err);
    if (ret != 0)
        return ret;
    if (claimed) {
        /* the check and the insert share the write transaction: two
         * processes never both claim the same configuration */
        bind_text(claimed, 1, info->config);
        sqlite3_bind_int64(claimed, 2, (sqlite3_int64)info->seed);
        int rc = sqlite3_step(claimed);
        int64_t other = rc == SQLITE_ROW ? sqlite3_column_int64(claimed, 0) : 0;
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            ret = db_error(db, err);
        sqlite3_reset(claimed);
        sqlite3_clear_bindings(claimed);
        if (ret != 0 || other > 0) {
            tx_rollback(db);
            if (ret == 0)
                *run_id = other;
            return ret != 0 ? ret : AN_DB_CLAIMED;
        }
    }
    bind_text(run, 1, info->name);
    bind_text(run, 2, info->algorithm);
    sqlite3_bind_int64(run, 3, (sqlite3_int64)info->seed);
    sqlite3_bind_int(run, 4, info->n_workers);
    bind_text(run, 5, info->config);
    bind_text(run, 6, now);
    bind_text(run, 7, info->version);
    sqlite3_bind_int64(run, 8, (sqlite3_int64)getpid());
    bind_text(run, 9, host[0] ? host : NULL);
    ret = stmt_run(db, run, err);
    int64_t id = sqlite3_last_insert_rowid(db->conn);
    for (int i = 0; ret == 0 && i < info->n_params; i++) {
        sqlite3_bind_int64(param, 1, id);
        bind_text(param, 2, info->param_keys[i]);
        bind_text(param, 3, info->param_values[i]);
        bind_real(param, 4, info->param_nums ? info->param_nums[i] : NAN);
        ret = stmt_run(db, param, err);
    }
    ret = tx_end(db, ret, err);
    if (ret == 0)
        *run_id = id;
    return ret;
}

/* Inserts the buffered rows; the caller holds the transaction. */
static int metrics_write(an_db *db, sim_err *err)
{
    sqlite3_stmt *s = stmt_get(db, ST_METRIC_INSERT, err);
    if (!s)
        return SIM_EDB;
    for (int i = 0; i < db->n_buf; i++) {
        const an_metric_row *r = &db->buf[i].row;
        sqlite3_bind_int64(s, 1, db->buf[i].run_id);
        bind_real(s, 2, r->sim_time);
        sqlite3_bind_int64(s, 3, r->iteration);
        bind_real(s, 4, r->epoch);
        sqlite3_bind_int64(s, 5, r->samples);
        bind_real(s, 6, r->train_loss);
        bind_real(s, 7, r->test_loss);
        bind_real(s, 8, r->test_accuracy);
        bind_real(s, 9, r->consensus_distance);
        sqlite3_bind_int64(s, 10, r->bytes_sent);
        int ret = stmt_run(db, s, err);
        if (ret != 0)
            return ret;
    }
    return 0;
}

/* Inserts the buffered series rows; the caller holds the transaction. */
static int series_write(an_db *db, sim_err *err)
{
    if (db->n_sbuf == 0)
        return 0;
    sqlite3_stmt *s = stmt_get(db, ST_SERIES_INSERT, err);
    if (!s)
        return SIM_EDB;
    for (int i = 0; i < db->n_sbuf; i++) {
        const pending_series *r = &db->sbuf[i];
        sqlite3_bind_int64(s, 1, r->run_id);
        bind_real(s, 2, r->sim_time);
        sqlite3_bind_int64(s, 3, r->iteration);
        if (r->worker < 0)
            sqlite3_bind_null(s, 4);
        else
            sqlite3_bind_int(s, 4, r->worker);
        bind_text(s, 5, r->name);
        bind_real(s, 6, r->value);
        int ret = stmt_run(db, s, err);
        if (ret != 0)
            return ret;
    }
    return 0;
}

/* Both buffers, in the caller's transaction. */
static int rows_write(an_db *db, sim_err *err)
{
    int ret = metrics_write(db, err);
    return ret != 0 ? ret : series_write(db, err);
}

int an_db_flush(an_db *db, sim_err *err)
{
    if (db->n_buf == 0 && db->n_sbuf == 0)
        return 0;
    int ret = tx_begin(db, err);
    if (ret != 0)
        return ret;
    ret = tx_end(db, rows_write(db, err), err);
    if (ret == 0)
        db->n_buf = db->n_sbuf = 0;
    return ret;
}

int an_db_series(an_db *db, int64_t run_id, const an_series_row *row, sim_err *err)
{
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    size_t len = row->name ? strlen(row->name) : 0;
    if (len == 0 || len >= AN_SERIES_NAME_MAX)
        return sim_err_set(err, SIM_EINTERNAL,
                           "%s: series name '%.80s' must have 1 to %d characters", db->path,
                           row->name ? row->name : "", AN_SERIES_NAME_MAX - 1);
    if (db->n_sbuf == SERIES_BATCH && an_db_flush(db, err) != 0)
        return SIM_EDB;
    pending_series *p = &db->sbuf[db->n_sbuf++];
    p->run_id = run_id;
    p->sim_time = row->sim_time;
    p->iteration = row->iteration;
    p->worker = row->worker;
    p->value = row->value;
    memcpy(p->name, row->name, len + 1);
    if (db->n_sbuf == SERIES_BATCH)
        return an_db_flush(db, err);
    return 0;
}

int an_db_metric(an_db *db, int64_t run_id, const an_metric_row *row, sim_err *err)
{
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    if (db->n_buf == METRIC_BATCH && an_db_flush(db, err) != 0)
        return SIM_EDB;
    db->buf[db->n_buf].run_id = run_id;
    db->buf[db->n_buf].row = *row;
    db->n_buf++;
    if (db->n_buf == METRIC_BATCH)
        return an_db_flush(db, err);
    return 0;
}

static int status_valid(const char *status)
{
    return status && (strcmp(status, "done") == 0 || strcmp(status, "diverged") == 0 ||
                      strcmp(status, "failed") == 0);
}

int an_db_run_labels(an_db *db, int64_t run_id, int n_workers, int classes,
                     const int64_t *counts, sim_err *err)
{
    if (n_workers <= 0 || classes <= 0)
        return 0;
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    sqlite3_stmt *st = stmt_get(db, ST_LABEL_INSERT, err);
    if (!st)
        return SIM_EDB;
    int ret = tx_begin(db, err);
    if (ret != 0)
        return ret;
    for (int w = 0; ret == 0 && w < n_workers; w++) {
        for (int c = 0; ret == 0 && c < classes; c++) {
            int64_t n = counts[(int64_t)w * classes + c];
            if (n == 0)
                continue;
            sqlite3_bind_int64(st, 1, run_id);
            sqlite3_bind_int(st, 2, w);
            sqlite3_bind_int(st, 3, c);
            sqlite3_bind_int64(st, 4, n);
            ret = stmt_run(db, st, err);
        }
    }
    return tx_end(db, ret, err);
}

int an_db_run_links(an_db *db, int64_t run_id, const an_link_row *links, int n_links,
                    sim_err *err)
{
    if (n_links <= 0)
        return 0;
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    sqlite3_stmt *st = stmt_get(db, ST_LINK_INSERT, err);
    if (!st)
        return SIM_EDB;
    int ret = tx_begin(db, err);
    if (ret != 0)
        return ret;
    for (int i = 0; ret == 0 && i < n_links; i++) {
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int(st, 2, links[i].link);
        sqlite3_bind_int(st, 3, links[i].src);
        sqlite3_bind_int(st, 4, links[i].dst);
        sqlite3_bind_int64(st, 5, links[i].bytes);
        ret = stmt_run(db, st, err);
    }
    return tx_end(db, ret, err);
}

int an_db_run_faults(an_db *db, int64_t run_id, const an_fault_row *faults, int n_faults,
                     sim_err *err)
{
    if (n_faults <= 0)
        return 0;
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    sqlite3_stmt *st = stmt_get(db, ST_FAULT_INSERT, err);
    if (!st)
        return SIM_EDB;
    int ret = tx_begin(db, err);
    if (ret != 0)
        return ret;
    for (int i = 0; ret == 0 && i < n_faults; i++) {
        sqlite3_bind_int64(st, 1, run_id);
        bind_real(st, 2, faults[i].sim_time);
        bind_text(st, 3, faults[i].event);
        bind_text(st, 4, faults[i].target);
        bind_real(st, 5, faults[i].value);
        ret = stmt_run(db, st, err);
    }
    return tx_end(db, ret, err);
}

int an_db_run_finish(an_db *db, int64_t run_id, const an_run_summary *sum,
                     const an_worker_row *workers, int n_workers,
                     const int64_t *staleness_counts, int64_t n_staleness, sim_err *err)
{
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    if (!status_valid(sum->status))
        return sim_err_set(err, SIM_EINTERNAL, "%s: run %lld: invalid final status '%s'",
                           db->path, (long long)run_id,
                           sum->status ? sum->status : "(null)");
    sqlite3_stmt *wk = stmt_get(db, ST_WORKER_INSERT, err);
    sqlite3_stmt *st = stmt_get(db, ST_STALE_INSERT, err);
    sqlite3_stmt *up = stmt_get(db, ST_RUN_FINISH, err);
    if (!wk || !st || !up)
        return SIM_EDB;
    char now[32];
    utc_now(now, sizeof now);
    int ret = tx_begin(db, err);
    if (ret != 0)
        return ret;
    ret = rows_write(db, err);
    for (int i = 0; ret == 0 && i < n_workers; i++) {
        const an_worker_row *w = &workers[i];
        sqlite3_bind_int64(wk, 1, run_id);
        sqlite3_bind_int(wk, 2, w->worker);
        sqlite3_bind_int64(wk, 3, w->steps);
        bind_real(wk, 4, w->compute_time);
        bind_real(wk, 5, w->idle_time);
        sqlite3_bind_int64(wk, 6, w->bytes_sent);
        bind_real(wk, 7, w->mean_staleness);
        sqlite3_bind_int64(wk, 8, w->gossip_rounds);
        ret = stmt_run(db, wk, err);
    }
    for (int64_t s = 0; ret == 0 && staleness_counts && s < n_staleness; s++) {
        if (staleness_counts[s] == 0)
            continue;
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, s);
        sqlite3_bind_int64(st, 3, staleness_counts[s]);
        ret = stmt_run(db, st, err);
    }
    if (ret == 0) {
        sqlite3_bind_int64(up, 1, run_id);
        bind_text(up, 2, sum->status);
        bind_text(up, 3, now);
        bind_real(up, 4, sum->sim_time);
        sqlite3_bind_int64(up, 5, sum->iterations);
        bind_real(up, 6, sum->wall_seconds);
        sqlite3_bind_int64(up, 7, sum->bytes_sent);
        bind_real(up, 8, sum->final_train_loss);
        bind_real(up, 9, sum->final_test_accuracy);
        bind_real(up, 10, sum->mean_staleness);
        bind_real(up, 11, sum->idle_fraction);
        bind_real(up, 12, sum->consensus_distance);
        ret = stmt_run(db, up, err);
        if (ret == 0 && sqlite3_changes(db->conn) != 1)
            ret = sim_err_set(err, SIM_EINTERNAL, "%s: run %lld: no such run", db->path,
                              (long long)run_id);
    }
    ret = tx_end(db, ret, err);
    if (ret == 0)
        db->n_buf = db->n_sbuf = 0;
    return ret;
}

int an_db_run_fail(an_db *db, int64_t run_id, sim_err *err)
{
    return an_db_run_fail_message(db, run_id, NULL, err);
}

static int run_fail_once(an_db *db, int64_t run_id, const char *message, sim_err *err)
{
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    sqlite3_stmt *s = stmt_get(db, ST_RUN_FAIL, err);
    if (!s)
        return SIM_EDB;
    char now[32];
    utc_now(now, sizeof now);
    int ret = tx_begin(db, err);
    if (ret != 0)
        return ret;
    ret = rows_write(db, err);
    if (ret == 0) {
        sqlite3_bind_int64(s, 1, run_id);
        bind_text(s, 2, now);
        bind_text(s, 3, message);
        ret = stmt_run(db, s, err);
    }
    ret = tx_end(db, ret, err);
    if (ret == 0)
        db->n_buf = db->n_sbuf = 0;
    return ret;
}

int an_db_find_done(an_db *db, const char *config, int64_t *run_id, sim_err *err)
{
    sqlite3_stmt *s = stmt_get(db, ST_FIND_DONE, err);
    if (!s)
        return SIM_EDB;
    bind_text(s, 1, config);
    int rc = sqlite3_step(s);
    int ret = 0;
    *run_id = 0;
    if (rc == SQLITE_ROW)
        *run_id = sqlite3_column_int64(s, 0);
    else if (rc != SQLITE_DONE)
        ret = db_error(db, err);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return ret;
}

int an_db_mark_stale_running(an_db *db, const char *config, sim_err *err)
{
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    sqlite3_stmt *s = stmt_get(db, ST_MARK_STALE, err);
    if (!s)
        return SIM_EDB;
    char now[32];
    utc_now(now, sizeof now);
    int ret = tx_begin(db, err);
    if (ret != 0)
        return ret;
    bind_text(s, 1, config);
    bind_text(s, 2, now);
    ret = stmt_run(db, s, err);
    int changed = ret == 0 ? sqlite3_changes(db->conn) : 0;
    ret = tx_end(db, ret, err);
    return ret != 0 ? ret : changed;
}

/* A run that cannot be marked failed stays 'running' for good (until an
 * open notices its process is gone): when the database is busy, retry with
 * a long busy timeout before giving up. */
int an_db_run_fail_message(an_db *db, int64_t run_id, const char *message, sim_err *err)
{
    int ret = run_fail_once(db, run_id, message, err);
    if (ret == SIM_EDB && !db->readonly) {
        sqlite3_busy_timeout(db->conn, FAIL_RETRY_MS);
        ret = run_fail_once(db, run_id, message, err);
        sqlite3_busy_timeout(db->conn, db->busy_ms);
    }
    return ret;
}

void an_db_set_claim(an_db *db, int claim)
{
    db->claim = claim != 0;
}

int an_db_orphans_mark(an_db *db, sim_err *err)
{
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    return orphans_mark(db, err);
}

int an_db_run_orphaned(an_db *db, int64_t run_id)
{
    if (has_runs_column(db, "pid") != 1 || has_runs_column(db, "host") != 1)
        return 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->conn, "SELECT pid, host, started_at FROM runs WHERE id = ?1"
                                     " AND status = 'running' AND pid IS NOT NULL",
                           -1, &s, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(s, 1, run_id);
    int gone = sqlite3_step(s) == SQLITE_ROW &&
               process_gone(sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1),
                            (const char *)sqlite3_column_text(s, 2));
    sqlite3_finalize(s);
    return gone;
}

/* ---- merging another database (MPI sweep shards) ---- */

/* The runs row; %s is the source's error column, or NULL for a source
 * older than it. */
static const char merge_runs_sql[] =
    "INSERT INTO main.runs(name, algorithm, status, seed, n_workers, config, started_at,"
    " finished_at, version, sim_time, iterations, wall_seconds, bytes_sent,"
    " final_train_loss, final_test_accuracy, mean_staleness, idle_fraction,"
    " consensus_distance, error) SELECT name, algorithm,"
    " CASE status WHEN 'running' THEN 'failed' ELSE status END, seed, n_workers, config,"
    " started_at, finished_at, version, sim_time, iterations, wall_seconds, bytes_sent,"
    " final_train_loss, final_test_accuracy, mean_staleness, idle_fraction,"
    " consensus_distance, %s FROM merge_src.runs WHERE id = ?2";

/* The rows of a run, per table (merge_table[k] for merge_sql[k]). */
static const char *const merge_table[] = {"params", "metrics", "workers", "staleness",
                                          "labels", "links", "series", "faults"};
static const char *const merge_sql[] = {
    "INSERT INTO main.params(run_id, key, value, num) SELECT ?1, key, value, num"
    " FROM merge_src.params WHERE run_id = ?2 ORDER BY rowid",
    "INSERT INTO main.metrics(run_id, sim_time, iteration, epoch, samples, train_loss,"
    " test_loss, test_accuracy, consensus_distance, bytes_sent) SELECT ?1, sim_time,"
    " iteration, epoch, samples, train_loss, test_loss, test_accuracy,"
    " consensus_distance, bytes_sent FROM merge_src.metrics WHERE run_id = ?2"
    " ORDER BY rowid",
    "INSERT INTO main.workers(run_id, worker, steps, compute_time, idle_time, bytes_sent,"
    " mean_staleness, gossip_rounds) SELECT ?1, worker, steps, compute_time, idle_time,"
    " bytes_sent, mean_staleness, gossip_rounds FROM merge_src.workers WHERE run_id = ?2"
    " ORDER BY rowid",
    "INSERT INTO main.staleness(run_id, staleness, count) SELECT ?1, staleness, count"
    " FROM merge_src.staleness WHERE run_id = ?2 ORDER BY rowid",
    "INSERT INTO main.labels(run_id, worker, label, count) SELECT ?1, worker, label, count"
    " FROM merge_src.labels WHERE run_id = ?2 ORDER BY rowid",
    "INSERT INTO main.links(run_id, link, src, dst, bytes) SELECT ?1, link, src, dst, bytes"
    " FROM merge_src.links WHERE run_id = ?2 ORDER BY rowid",
    "INSERT INTO main.series(run_id, sim_time, iteration, worker, name, value) SELECT ?1,"
    " sim_time, iteration, worker, name, value FROM merge_src.series WHERE run_id = ?2"
    " ORDER BY rowid",
    "INSERT INTO main.faults(run_id, sim_time, event, target, value) SELECT ?1, sim_time,"
    " event, target, value FROM merge_src.faults WHERE run_id = ?2 ORDER BY rowid",
};
#define N_MERGE ((int)(sizeof merge_sql / sizeof merge_sql[0]) + 1)

/* Copies run src_id (statement 0 inserts the run, the others its rows;
 * NULL statements are tables the source does not have). */
static int merge_run(an_db *db, sqlite3_stmt **st, int64_t src_id, sim_err *err)
{
    int64_t new_id = 0;
    for (int k = 0; k < N_MERGE; k++) {
        if (!st[k])
            continue;
        if (k > 0)
            sqlite3_bind_int64(st[k], 1, new_id);
        sqlite3_bind_int64(st[k], 2, src_id);
        int ret = stmt_run(db, st[k], err);
        if (ret != 0)
            return ret;
        if (k == 0)
            new_id = sqlite3_last_insert_rowid(db->conn);
    }
    return 0;
}

/* 1 when the attached source has the table (or runs has the column). */
static int merge_src_has(an_db *db, const char *table, const char *column)
{
    char sql[256];
    if (column)
        snprintf(sql, sizeof sql,
                 "SELECT 1 FROM pragma_table_info('%s', 'merge_src') WHERE name = '%s'", table,
                 column);
    else
        snprintf(sql, sizeof sql,
                 "SELECT 1 FROM merge_src.sqlite_master WHERE type = 'table' AND name = '%s'",
                 table);
    return query_has_row(db, sql);
}

static int merge_all(an_db *db, int *n_copied, sim_err *err)
{
    sqlite3_stmt *st[N_MERGE] = {0}, *list = NULL;
    int ret = 0;
    char runs_sql[sizeof merge_runs_sql + 16];
    int has_error = merge_src_has(db, "runs", "error");
    snprintf(runs_sql, sizeof runs_sql, merge_runs_sql, has_error == 1 ? "error" : "NULL");
    if (has_error < 0 ||
        sqlite3_prepare_v2(db->conn, runs_sql, -1, &st[0], NULL) != SQLITE_OK)
        ret = db_error(db, err);
    for (int k = 1; ret == 0 && k < N_MERGE; k++) {
        int has = merge_src_has(db, merge_table[k - 1], NULL);
        const char *sql = merge_sql[k - 1];
        if (has == 1 && strcmp(merge_table[k - 1], "params") == 0) {
            int num = merge_src_has(db, "params", "num");
            has = num < 0 ? num : has;
            if (num == 0) /* an older source: no params.num */
                sql = "INSERT INTO main.params(run_id, key, value) SELECT ?1, key, value"
                      " FROM merge_src.params WHERE run_id = ?2 ORDER BY rowid";
        }
        if (has < 0 ||
            (has == 1 && sqlite3_prepare_v2(db->conn, sql, -1, &st[k], NULL) != SQLITE_OK))
            ret = db_error(db, err);
    }
    if (ret == 0 && sqlite3_prepare_v2(db->conn, "SELECT id, config, status FROM"
                                       " merge_src.runs ORDER BY id", -1, &list,
                                       NULL) != SQLITE_OK)
        ret = db_error(db, err);
    if (ret == 0)
        ret = tx_begin(db, err);
    int rc = SQLITE_DONE;
    while (ret == 0 && (rc = sqlite3_step(list)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(list, 0);
        const char *config = (const char *)sqlite3_column_text(list, 1);
        const char *status = (const char *)sqlite3_column_text(list, 2);
        int64_t done = 0;
        if (config && status &&
            (strcmp(status, "done") == 0 || strcmp(status, "diverged") == 0))
            ret = an_db_find_done(db, config, &done, err);
        if (ret == 0 && done == 0) {
            ret = merge_run(db, st, id, err);
            if (ret == 0)
                (*n_copied)++;
        }
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = db_error(db, err);
    sqlite3_finalize(list);
    for (int k = 0; k < N_MERGE; k++)
        sqlite3_finalize(st[k]);
    if (ret != 0)
        *n_copied = 0;
    return tx_end(db, ret, err);
}

int an_db_merge(an_db *db, const char *src_path, int *n_copied, sim_err *err)
{
    *n_copied = 0;
    if (check_writable(db, err) != 0)
        return SIM_EDB;
    char *self = realpath(db->path, NULL), *other = realpath(src_path, NULL);
    int same = self && other && strcmp(self, other) == 0;
    free(self);
    free(other);
    if (same)
        return sim_err_set(err, SIM_EUSAGE, "%s: cannot merge a database into itself",
                           src_path);
    /* validates the source: a dtsim database of a schema we know */
    an_db *src = an_db_open_readonly(src_path, err);
    if (!src)
        return err && err->code ? err->code : SIM_EDB;
    an_db_close(src);
    int ret = an_db_flush(db, err);
    if (ret != 0)
        return ret;
    sqlite3_stmt *at = NULL;
    if (sqlite3_prepare_v2(db->conn, "ATTACH DATABASE ?1 AS merge_src", -1, &at, NULL) !=
        SQLITE_OK)
        return db_error(db, err);
    bind_text(at, 1, src_path);
    int rc = sqlite3_step(at);
    sqlite3_finalize(at);
    if (rc != SQLITE_DONE)
        return sim_err_set(err, SIM_EDB, "%s: cannot attach %s: %s", db->path, src_path,
                           sqlite3_errmsg(db->conn));
    ret = merge_all(db, n_copied, err);
    sqlite3_exec(db->conn, "DETACH DATABASE merge_src", NULL, NULL, NULL);
    return ret;
}
