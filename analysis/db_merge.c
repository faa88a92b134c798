/* Merging another dtsim database into this one (rank 0 of an MPI sweep
 * collects its shards): every run with new ids and its rows, in their
 * order, in one transaction; tables and columns an older source lacks are
 * skipped. */
#include "analysis/db.h"
#include "analysis/db_internal.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The runs row; the first %s is the source's error column, or NULL for a
 * source older than it; the second its provenance columns or NULLs. */
static const char merge_runs_sql[] =
    "INSERT INTO main.runs(name, algorithm, status, seed, n_workers, config, started_at,"
    " finished_at, version, sim_time, iterations, wall_seconds, bytes_sent,"
    " final_train_loss, final_test_accuracy, mean_staleness, idle_fraction,"
    " consensus_distance, error, commit_id, blas, cpu, threads) SELECT name, algorithm,"
    " CASE status WHEN 'running' THEN 'failed' ELSE status END, seed, n_workers, config,"
    " started_at, finished_at, version, sim_time, iterations, wall_seconds, bytes_sent,"
    " final_train_loss, final_test_accuracy, mean_staleness, idle_fraction,"
    " consensus_distance, %s, %s FROM merge_src.runs WHERE id = ?2";

/* The rows of a run, per table (merge_table[k] for merge_sql[k]). */
static const char *const merge_table[] = {"params", "metrics", "workers", "staleness",
                                          "labels", "links", "series", "faults",
                                          "spans", "link_load", "staleness_workers"};
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
    "INSERT INTO main.spans(run_id, worker, state, start, end) SELECT ?1, worker, state,"
    " start, end FROM merge_src.spans WHERE run_id = ?2 ORDER BY rowid",
    "INSERT INTO main.link_load(run_id, link, sim_time, bytes) SELECT ?1, link, sim_time,"
    " bytes FROM merge_src.link_load WHERE run_id = ?2 ORDER BY rowid",
    "INSERT INTO main.staleness_workers(run_id, worker, staleness, count) SELECT ?1, worker,"
    " staleness, count FROM merge_src.staleness_workers WHERE run_id = ?2 ORDER BY rowid",
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
        int ret = db_stmt_run(db, st[k], err);
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
    return db_query_has_row(db, sql);
}

static int merge_all(an_db *db, int *n_copied, sim_err *err)
{
    sqlite3_stmt *st[N_MERGE] = {0}, *list = NULL;
    int ret = 0;
    char runs_sql[sizeof merge_runs_sql + 64];
    int has_error = merge_src_has(db, "runs", "error");
    int has_prov = merge_src_has(db, "runs", "blas");
    snprintf(runs_sql, sizeof runs_sql, merge_runs_sql, has_error == 1 ? "error" : "NULL",
             has_prov == 1 ? "commit_id, blas, cpu, threads" : "NULL, NULL, NULL, NULL");
    if (has_error < 0 || has_prov < 0 ||
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
        ret = db_tx_begin(db, err);
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
    return db_tx_end(db, ret, err);
}

int an_db_merge(an_db *db, const char *src_path, int *n_copied, sim_err *err)
{
    *n_copied = 0;
    if (db_check_writable(db, err) != 0)
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
    db_bind_text(at, 1, src_path);
    int rc = sqlite3_step(at);
    sqlite3_finalize(at);
    if (rc != SQLITE_DONE)
        return sim_err_set(err, SIM_EDB, "%s: cannot attach %s: %s", db->path, src_path,
                           sqlite3_errmsg(db->conn));
    ret = merge_all(db, n_copied, err);
    sqlite3_exec(db->conn, "DETACH DATABASE merge_src", NULL, NULL, NULL);
    return ret;
}

int an_db_identity(an_db *db, long *version, char *names, size_t len, sim_err *err)
{
    *version = 0;
    if (len > 0)
        names[0] = '\0';
    sqlite3_stmt *s = NULL;
    int has_meta = db_query_has_row(db, "SELECT 1 FROM sqlite_master WHERE type = 'table'"
                                        " AND name = 'meta'");
    if (has_meta < 0)
        return db_error(db, err);
    if (has_meta == 0)
        return 0;
    if (sqlite3_prepare_v2(db->conn, "SELECT value FROM meta WHERE key = 'schema_version'", -1,
                           &s, NULL) != SQLITE_OK)
        return db_error(db, err);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_text(s, 0))
        *version = strtol((const char *)sqlite3_column_text(s, 0), NULL, 10);
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_error(db, err);
    if (sqlite3_prepare_v2(db->conn, "SELECT DISTINCT coalesce(name, '') FROM runs ORDER BY 1",
                           -1, &s, NULL) != SQLITE_OK)
        return db_error(db, err);
    size_t used = 0;
    int ret = 0;
    while (ret == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        int n = snprintf(names + used, len - used, "%s%s", used ? ", " : "", name ? name : "");
        if (n < 0 || (size_t)n >= len - used)
            ret = sim_err_set(err, SIM_EDB, "%s: too many experiment names", db->path);
        else
            used += (size_t)n;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = db_error(db, err);
    sqlite3_finalize(s);
    return ret;
}
