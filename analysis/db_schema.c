/* The results database's schema: creation in an empty file, the checks of
 * every open (ours, not newer, complete, not corrupt), and the migration of
 * an older database, which gains the newer tables and columns when it is
 * opened for writing (still schema_version 1: older readers ignore them). */
#include "analysis/db.h"
#include "analysis/db_internal.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Files up to this size get a full PRAGMA quick_check on open. */
#define QUICK_CHECK_MAX_BYTES (64LL << 20)

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', '1');"
    "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, name TEXT, algorithm TEXT,"
    " status TEXT, seed INTEGER, n_workers INTEGER, config TEXT, started_at TEXT,"
    " finished_at TEXT, version TEXT, sim_time REAL, iterations INTEGER,"
    " wall_seconds REAL, bytes_sent INTEGER, final_train_loss REAL,"
    " final_test_accuracy REAL, mean_staleness REAL, idle_fraction REAL,"
    " consensus_distance REAL, error TEXT, pid INTEGER, host TEXT, commit_id TEXT,"
    " blas TEXT, cpu TEXT, threads INTEGER);"
    "CREATE TABLE IF NOT EXISTS params(run_id INTEGER, key TEXT, value TEXT, num REAL);"
    "CREATE TABLE IF NOT EXISTS metrics(run_id INTEGER, sim_time REAL, iteration INTEGER,"
    " epoch REAL, samples INTEGER, train_loss REAL, test_loss REAL, test_accuracy REAL,"
    " consensus_distance REAL, bytes_sent INTEGER);"
    "CREATE TABLE IF NOT EXISTS workers(run_id INTEGER, worker INTEGER, steps INTEGER,"
    " compute_time REAL, idle_time REAL, bytes_sent INTEGER, mean_staleness REAL,"
    " gossip_rounds INTEGER);"
    "CREATE TABLE IF NOT EXISTS staleness(run_id INTEGER, staleness INTEGER,"
    " count INTEGER);"
    "CREATE TABLE IF NOT EXISTS staleness_workers(run_id INTEGER, worker INTEGER,"
    " staleness INTEGER, count INTEGER);"
    "CREATE TABLE IF NOT EXISTS labels(run_id INTEGER, worker INTEGER, label INTEGER,"
    " count INTEGER);"
    "CREATE TABLE IF NOT EXISTS links(run_id INTEGER, link INTEGER, src INTEGER,"
    " dst INTEGER, bytes INTEGER);"
    "CREATE TABLE IF NOT EXISTS series(run_id INTEGER, sim_time REAL, iteration INTEGER,"
    " worker INTEGER, name TEXT, value REAL);"
    "CREATE TABLE IF NOT EXISTS faults(run_id INTEGER, sim_time REAL, event TEXT,"
    " target TEXT, value REAL);"
    "CREATE TABLE IF NOT EXISTS spans(run_id INTEGER, worker INTEGER, state TEXT,"
    " start REAL, end REAL);"
    "CREATE TABLE IF NOT EXISTS link_load(run_id INTEGER, link INTEGER, sim_time REAL,"
    " bytes REAL);"
    "CREATE INDEX IF NOT EXISTS metrics_run_time ON metrics(run_id, sim_time);"
    "CREATE INDEX IF NOT EXISTS params_run ON params(run_id);"
    "CREATE INDEX IF NOT EXISTS workers_run ON workers(run_id);"
    "CREATE INDEX IF NOT EXISTS staleness_run ON staleness(run_id);"
    "CREATE INDEX IF NOT EXISTS staleness_workers_run ON staleness_workers(run_id);"
    "CREATE INDEX IF NOT EXISTS runs_config ON runs(config);"
    "CREATE INDEX IF NOT EXISTS series_run_name ON series(run_id, name);"
    "CREATE INDEX IF NOT EXISTS spans_run ON spans(run_id);"
    "CREATE INDEX IF NOT EXISTS link_load_run ON link_load(run_id);";

/* Added after the first schema: a writable open adds them to an older
 * database (still schema_version 1; older readers ignore them). */
static const char *const newer_tables[] = {"labels", "links", "series", "faults", "spans",
                                           "link_load", "staleness_workers"};
#define N_NEWER ((int)(sizeof newer_tables / sizeof newer_tables[0]))

/* Our tables; meta first. */
static const char *const table_names[] = {"meta", "runs", "params", "metrics",
                                          "workers", "staleness"};
#define N_TABLES ((int)(sizeof table_names / sizeof table_names[0]))

/* Columns added to runs after the first schema, in the order they came. */
static const char *const newer_columns[][2] = {
    {"error", "TEXT"},  {"pid", "INTEGER"}, {"host", "TEXT"},   {"commit_id", "TEXT"},
    {"blas", "TEXT"},   {"cpu", "TEXT"},    {"threads", "INTEGER"}};
#define N_NEWER_COLUMNS ((int)(sizeof newer_columns / sizeof newer_columns[0]))

int db_has_runs_column(an_db *db, const char *name)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT 1 FROM pragma_table_info('runs', 'main')"
                              " WHERE name = '%s'", name);
    return db_query_has_row(db, sql);
}

/* params.num (the SI number of a value), added after the first schema. */
static int has_params_num(an_db *db)
{
    return db_query_has_row(db, "SELECT 1 FROM pragma_table_info('params', 'main')"
                             " WHERE name = 'num'");
}

/* 1 when runs has every newer column (and params its num), 0 when not,
 * < 0 on error. */
static int has_newer_columns(an_db *db)
{
    for (int i = 0; i < N_NEWER_COLUMNS; i++) {
        int col = db_has_runs_column(db, newer_columns[i][0]);
        if (col != 1)
            return col;
    }
    return has_params_num(db);
}

/* Classifies the file: empty, ours (complete or missing tables), or an
 * error (not ours, newer schema, unreadable). *current (may be NULL): the
 * newer tables and runs.error exist too. */
int db_schema_inspect(an_db *db, int *state, int *current, sim_err *err)
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
int db_schema_create(an_db *db, sim_err *err)
{
    int ret = db_tx_begin(db, err);
    if (ret != 0)
        return ret;
    int state = SCHEMA_EMPTY, current = 0;
    ret = db_schema_inspect(db, &state, &current, err);
    if (ret == 0 && (state != SCHEMA_COMPLETE || !current) &&
        sqlite3_exec(db->conn, schema_sql, NULL, NULL, NULL) != SQLITE_OK)
        ret = db_error(db, err);
    for (int i = 0; ret == 0 && i < N_NEWER_COLUMNS; i++) {
        int col = db_has_runs_column(db, newer_columns[i][0]);
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
    return db_tx_end(db, ret, err);
}

/* Cheap integrity check: sqlite_master and meta are read by
 * db_schema_inspect on every open; files up to QUICK_CHECK_MAX_BYTES also
 * get PRAGMA quick_check, which must answer one row 'ok'. */
int db_integrity_check(an_db *db, const char *file, sim_err *err)
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
