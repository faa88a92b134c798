/* Claims and liveness. A run row records its process (runs.pid, runs.host):
 * a row still 'running' whose process is gone from this host was
 * interrupted, and every writable open marks it failed (a read-only one
 * only reports it). A sweep claims a configuration and seed by beginning
 * its run only when no row of them is running, done or diverged, checked
 * in the same write transaction as the insert. */
#include "analysis/db.h"
#include "analysis/db_internal.h"

#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* This machine's name ("" when unknown). */
void db_host_get(char *out, size_t size)
{
    if (gethostname(out, size) != 0)
        out[0] = '\0';
    out[size - 1] = '\0';
}

/* 1 when a run row's process is known to be gone: it ran on this host and
 * no process has its id any more. */
static int process_gone(int64_t pid, const char *host)
{
    char self[256];
    db_host_get(self, sizeof self);
    if (pid <= 0 || pid > INT32_MAX || !host || !self[0] || strcmp(host, self) != 0)
        return 0;
    return kill((pid_t)pid, 0) == -1 && errno == ESRCH;
}

/* Marks 'running' rows whose process is gone from this host as 'failed'
 * (interrupted). Returns the number marked, or < 0. */
int db_orphans_mark(an_db *db, sim_err *err)
{
    sqlite3_stmt *q = NULL, *up = NULL;
    int ret = db_tx_begin(db, err), n = 0;
    if (ret != 0)
        return ret;
    if (sqlite3_prepare_v2(db->conn, "SELECT id, pid, host FROM runs WHERE status = 'running'"
                                     " AND pid IS NOT NULL", -1, &q, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db->conn, "UPDATE runs SET status = 'failed', finished_at = ?2,"
                                     " error = ?3 WHERE id = ?1 AND status = 'running'",
                           -1, &up, NULL) != SQLITE_OK)
        ret = db_error(db, err);
    char now[32];
    db_utc_now(now, sizeof now);
    int rc = SQLITE_DONE;
    while (ret == 0 && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t pid = sqlite3_column_int64(q, 1);
        const char *host = (const char *)sqlite3_column_text(q, 2);
        if (!process_gone(pid, host))
            continue;
        char msg[400];
        snprintf(msg, sizeof msg, "interrupted: its process %lld on %.256s ended without"
                                  " finishing the run", (long long)pid, host);
        sqlite3_bind_int64(up, 1, sqlite3_column_int64(q, 0));
        db_bind_text(up, 2, now);
        db_bind_text(up, 3, msg);
        ret = db_stmt_run(db, up, err);
        n++;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = db_error(db, err);
    sqlite3_finalize(q);
    sqlite3_finalize(up);
    ret = db_tx_end(db, ret, err);
    return ret != 0 ? ret : n;
}

int db_claim_find(an_db *db, const char *config, uint64_t seed, int64_t *other, sim_err *err)
{
    sqlite3_stmt *s = db_stmt_get(db, ST_CLAIMED, err);
    *other = 0;
    if (!s)
        return SIM_EDB;
    db_bind_text(s, 1, config);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)seed);
    return db_stmt_id(db, s, other, err);
}

int an_db_mark_stale_running(an_db *db, const char *config, sim_err *err)
{
    char now[32];
    db_utc_now(now, sizeof now);
    sqlite3_stmt *s = NULL;
    int ret = db_write_begin(db, ST_MARK_STALE, &s, err);
    if (ret != 0)
        return ret;
    db_bind_text(s, 1, config);
    db_bind_text(s, 2, now);
    ret = db_stmt_run(db, s, err);
    int changed = ret == 0 ? sqlite3_changes(db->conn) : 0;
    ret = db_tx_end(db, ret, err);
    return ret != 0 ? ret : changed;
}

int an_db_orphans_mark(an_db *db, sim_err *err)
{
    if (db_check_writable(db, err) != 0)
        return SIM_EDB;
    return db_orphans_mark(db, err);
}

int an_db_run_orphaned(an_db *db, int64_t run_id)
{
    if (db_has_runs_column(db, "pid") != 1 || db_has_runs_column(db, "host") != 1)
        return 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->conn, "SELECT pid, host FROM runs WHERE id = ?1"
                                     " AND status = 'running' AND pid IS NOT NULL",
                           -1, &s, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(s, 1, run_id);
    int gone = sqlite3_step(s) == SQLITE_ROW &&
               process_gone(sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1));
    sqlite3_finalize(s);
    return gone;
}
