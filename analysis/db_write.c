/* The run lifecycle (running -> done | diverged | failed) and its writes:
 * the run row and its params, metric and series rows buffered and written
 * in batched transactions, the per-worker, staleness, label, link and
 * fault rows, and the final summary or failure. */
#include "analysis/db.h"
#include "analysis/db_internal.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Marking a run failed retries this long when the database stays locked. */
#define FAIL_RETRY_MS 60000

int an_db_run_begin(an_db *db, const an_run_info *info, int64_t *run_id, sim_err *err)
{
    if (db_check_writable(db, err) != 0)
        return SIM_EDB;
    sqlite3_stmt *run = db_stmt_get(db, ST_RUN_INSERT, err);
    sqlite3_stmt *param = db_stmt_get(db, ST_PARAM_INSERT, err);
    int claim = info->claim || db->claim;
    sqlite3_stmt *claimed = claim ? db_stmt_get(db, ST_CLAIMED, err) : NULL;
    if (!run || !param || (claim && !claimed))
        return SIM_EDB;
    char now[32], host[256];
    db_utc_now(now, sizeof now);
    db_host_get(host, sizeof host);
    int ret = db_tx_begin(db, err);
    if (ret != 0)
        return ret;
    if (claim) {
        /* the check and the insert share the write transaction: two
         * processes never both claim the same configuration */
        int64_t other = 0;
        ret = db_claim_find(db, info->config, info->seed, &other, err);
        if (ret != 0 || other > 0) {
            db_tx_rollback(db);
            if (ret == 0)
                *run_id = other;
            return ret != 0 ? ret : AN_DB_CLAIMED;
        }
    }
    db_bind_text(run, 1, info->name);
    db_bind_text(run, 2, info->algorithm);
    sqlite3_bind_int64(run, 3, (sqlite3_int64)info->seed);
    sqlite3_bind_int(run, 4, info->n_workers);
    db_bind_text(run, 5, info->config);
    db_bind_text(run, 6, now);
    db_bind_text(run, 7, info->version);
    sqlite3_bind_int64(run, 8, (sqlite3_int64)getpid());
    db_bind_text(run, 9, host[0] ? host : NULL);
    db_bind_text(run, 10, info->commit);
    db_bind_text(run, 11, info->blas);
    db_bind_text(run, 12, info->cpu);
    if (info->threads > 0)
        sqlite3_bind_int(run, 13, info->threads);
    else
        sqlite3_bind_null(run, 13);
    ret = db_stmt_run(db, run, err);
    int64_t id = sqlite3_last_insert_rowid(db->conn);
    for (int i = 0; ret == 0 && i < info->n_params; i++) {
        sqlite3_bind_int64(param, 1, id);
        db_bind_text(param, 2, info->param_keys[i]);
        db_bind_text(param, 3, info->param_values[i]);
        db_bind_real(param, 4, info->param_nums ? info->param_nums[i] : NAN);
        ret = db_stmt_run(db, param, err);
    }
    ret = db_tx_end(db, ret, err);
    if (ret == 0)
        *run_id = id;
    return ret;
}

/* Inserts the buffered rows; the caller holds the transaction. */
static int metrics_write(an_db *db, sim_err *err)
{
    sqlite3_stmt *s = db_stmt_get(db, ST_METRIC_INSERT, err);
    if (!s)
        return SIM_EDB;
    for (int i = 0; i < db->n_buf; i++) {
        const an_metric_row *r = &db->buf[i].row;
        sqlite3_bind_int64(s, 1, db->buf[i].run_id);
        db_bind_real(s, 2, r->sim_time);
        sqlite3_bind_int64(s, 3, r->iteration);
        db_bind_real(s, 4, r->epoch);
        sqlite3_bind_int64(s, 5, r->samples);
        db_bind_real(s, 6, r->train_loss);
        db_bind_real(s, 7, r->test_loss);
        db_bind_real(s, 8, r->test_accuracy);
        db_bind_real(s, 9, r->consensus_distance);
        sqlite3_bind_int64(s, 10, r->bytes_sent);
        int ret = db_stmt_run(db, s, err);
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
    sqlite3_stmt *s = db_stmt_get(db, ST_SERIES_INSERT, err);
    if (!s)
        return SIM_EDB;
    for (int i = 0; i < db->n_sbuf; i++) {
        const pending_series *r = &db->sbuf[i];
        sqlite3_bind_int64(s, 1, r->run_id);
        db_bind_real(s, 2, r->sim_time);
        sqlite3_bind_int64(s, 3, r->iteration);
        if (r->worker < 0)
            sqlite3_bind_null(s, 4);
        else
            sqlite3_bind_int(s, 4, r->worker);
        db_bind_text(s, 5, r->name);
        db_bind_real(s, 6, r->value);
        int ret = db_stmt_run(db, s, err);
        if (ret != 0)
            return ret;
    }
    return 0;
}

/* Both buffers, in the caller's transaction. */
int db_rows_write(an_db *db, sim_err *err)
{
    int ret = metrics_write(db, err);
    return ret != 0 ? ret : series_write(db, err);
}

int an_db_flush(an_db *db, sim_err *err)
{
    if (db->n_buf == 0 && db->n_sbuf == 0)
        return 0;
    int ret = db_tx_begin(db, err);
    if (ret != 0)
        return ret;
    ret = db_tx_end(db, db_rows_write(db, err), err);
    if (ret == 0)
        db->n_buf = db->n_sbuf = 0;
    return ret;
}

int an_db_series(an_db *db, int64_t run_id, const an_series_row *row, sim_err *err)
{
    if (db_check_writable(db, err) != 0)
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
    if (db_check_writable(db, err) != 0)
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
    sqlite3_stmt *st = NULL;
    int ret = db_write_begin(db, ST_LABEL_INSERT, &st, err);
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
            ret = db_stmt_run(db, st, err);
        }
    }
    return db_tx_end(db, ret, err);
}

int an_db_run_links(an_db *db, int64_t run_id, const an_link_row *links, int n_links,
                    sim_err *err)
{
    if (n_links <= 0)
        return 0;
    sqlite3_stmt *st = NULL;
    int ret = db_write_begin(db, ST_LINK_INSERT, &st, err);
    if (ret != 0)
        return ret;
    for (int i = 0; ret == 0 && i < n_links; i++) {
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int(st, 2, links[i].link);
        sqlite3_bind_int(st, 3, links[i].src);
        sqlite3_bind_int(st, 4, links[i].dst);
        sqlite3_bind_int64(st, 5, links[i].bytes);
        ret = db_stmt_run(db, st, err);
    }
    return db_tx_end(db, ret, err);
}

int an_db_run_staleness(an_db *db, int64_t run_id, const int64_t *const *counts,
                        const int64_t *lens, int n_workers, sim_err *err)
{
    int any = 0;
    for (int w = 0; w < n_workers; w++)
        any |= counts[w] != NULL && lens[w] > 0;
    if (!any)
        return 0;
    sqlite3_stmt *st = NULL;
    int ret = db_write_begin(db, ST_STALE_WORKER_INSERT, &st, err);
    if (ret != 0)
        return ret;
    for (int w = 0; ret == 0 && w < n_workers; w++)
        for (int64_t s = 0; ret == 0 && counts[w] && s < lens[w]; s++) {
            if (counts[w][s] == 0)
                continue;
            sqlite3_bind_int64(st, 1, run_id);
            sqlite3_bind_int(st, 2, w);
            sqlite3_bind_int64(st, 3, s);
            sqlite3_bind_int64(st, 4, counts[w][s]);
            ret = db_stmt_run(db, st, err);
        }
    return db_tx_end(db, ret, err);
}

int an_db_run_faults(an_db *db, int64_t run_id, const an_fault_row *faults, int n_faults,
                     sim_err *err)
{
    if (n_faults <= 0)
        return 0;
    sqlite3_stmt *st = NULL;
    int ret = db_write_begin(db, ST_FAULT_INSERT, &st, err);
    if (ret != 0)
        return ret;
    for (int i = 0; ret == 0 && i < n_faults; i++) {
        sqlite3_bind_int64(st, 1, run_id);
        db_bind_real(st, 2, faults[i].sim_time);
        db_bind_text(st, 3, faults[i].event);
        db_bind_text(st, 4, faults[i].target);
        db_bind_real(st, 5, faults[i].value);
        ret = db_stmt_run(db, st, err);
    }
    return db_tx_end(db, ret, err);
}

int an_db_run_finish(an_db *db, int64_t run_id, const an_run_summary *sum,
                     const an_worker_row *workers, int n_workers,
                     const int64_t *staleness_counts, int64_t n_staleness, sim_err *err)
{
    if (db_check_writable(db, err) != 0)
        return SIM_EDB;
    if (!status_valid(sum->status))
        return sim_err_set(err, SIM_EINTERNAL, "%s: run %lld: invalid final status '%s'",
                           db->path, (long long)run_id,
                           sum->status ? sum->status : "(null)");
    sqlite3_stmt *wk = db_stmt_get(db, ST_WORKER_INSERT, err);
    sqlite3_stmt *st = db_stmt_get(db, ST_STALE_INSERT, err);
    sqlite3_stmt *up = db_stmt_get(db, ST_RUN_FINISH, err);
    if (!wk || !st || !up)
        return SIM_EDB;
    char now[32];
    db_utc_now(now, sizeof now);
    int ret = db_tx_begin(db, err);
    if (ret != 0)
        return ret;
    ret = db_rows_write(db, err);
    for (int i = 0; ret == 0 && i < n_workers; i++) {
        const an_worker_row *w = &workers[i];
        sqlite3_bind_int64(wk, 1, run_id);
        sqlite3_bind_int(wk, 2, w->worker);
        sqlite3_bind_int64(wk, 3, w->steps);
        db_bind_real(wk, 4, w->compute_time);
        db_bind_real(wk, 5, w->idle_time);
        sqlite3_bind_int64(wk, 6, w->bytes_sent);
        db_bind_real(wk, 7, w->mean_staleness);
        sqlite3_bind_int64(wk, 8, w->gossip_rounds);
        ret = db_stmt_run(db, wk, err);
    }
    for (int64_t s = 0; ret == 0 && staleness_counts && s < n_staleness; s++) {
        if (staleness_counts[s] == 0)
            continue;
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, s);
        sqlite3_bind_int64(st, 3, staleness_counts[s]);
        ret = db_stmt_run(db, st, err);
    }
    if (ret == 0) {
        sqlite3_bind_int64(up, 1, run_id);
        db_bind_text(up, 2, sum->status);
        db_bind_text(up, 3, now);
        db_bind_real(up, 4, sum->sim_time);
        sqlite3_bind_int64(up, 5, sum->iterations);
        db_bind_real(up, 6, sum->wall_seconds);
        sqlite3_bind_int64(up, 7, sum->bytes_sent);
        db_bind_real(up, 8, sum->final_train_loss);
        db_bind_real(up, 9, sum->final_test_accuracy);
        db_bind_real(up, 10, sum->mean_staleness);
        db_bind_real(up, 11, sum->idle_fraction);
        db_bind_real(up, 12, sum->consensus_distance);
        ret = db_stmt_run(db, up, err);
        if (ret == 0 && sqlite3_changes(db->conn) != 1)
            ret = sim_err_set(err, SIM_EINTERNAL, "%s: run %lld: no such run", db->path,
                              (long long)run_id);
    }
    ret = db_tx_end(db, ret, err);
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
    char now[32];
    db_utc_now(now, sizeof now);
    sqlite3_stmt *s = NULL;
    int ret = db_write_begin(db, ST_RUN_FAIL, &s, err);
    if (ret != 0)
        return ret;
    ret = db_rows_write(db, err);
    if (ret == 0) {
        sqlite3_bind_int64(s, 1, run_id);
        db_bind_text(s, 2, now);
        db_bind_text(s, 3, message);
        ret = db_stmt_run(db, s, err);
    }
    ret = db_tx_end(db, ret, err);
    if (ret == 0)
        db->n_buf = db->n_sbuf = 0;
    return ret;
}

int an_db_find_done(an_db *db, const char *config, int64_t *run_id, sim_err *err)
{
    sqlite3_stmt *s = db_stmt_get(db, ST_FIND_DONE, err);
    *run_id = 0;
    if (!s)
        return SIM_EDB;
    db_bind_text(s, 1, config);
    return db_stmt_id(db, s, run_id, err);
}


/* A run that cannot be marked failed stays 'running' for good (until an
 * open notices its process is gone): when the database is busy, retry with
 * a long busy timeout; when the buffered rows cannot be written, mark it
 * without them. */
int an_db_run_fail_message(an_db *db, int64_t run_id, const char *message, sim_err *err)
{
    int ret = run_fail_once(db, run_id, message, err);
    if (ret == SIM_EDB && !db->readonly) {
        sqlite3_busy_timeout(db->conn, FAIL_RETRY_MS);
        ret = run_fail_once(db, run_id, message, err);
        sqlite3_busy_timeout(db->conn, db->busy_ms);
    }
    if (ret == SIM_EDB && !db->readonly && (db->n_buf || db->n_sbuf)) {
        /* a full disk (or a file-size limit): the buffered rows do not fit,
         * the status may (an update in place); the run is failed anyway */
        db->n_buf = db->n_sbuf = 0;
        ret = run_fail_once(db, run_id, message, err);
    }
    return ret;
}
