/* `dtsim trace` (analysis/trace.h): a traced run's spans and link loads
 * streamed from the database into a Chrome trace (JSON object format, the
 * one Perfetto and chrome://tracing open). Rows are read in order and
 * written as they come: memory does not grow with the trace. */
#include "analysis/trace.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { PID_WORKERS = 0, PID_SENDS = 1, PID_LINKS = 2 };

static int db_fail(an_db *db, const char *path, sim_err *err)
{
    return sim_err_set(err, SIM_EDB, "%s: %s", path, sqlite3_errmsg(an_db_sqlite(db)));
}

int an_trace_exists(an_db *db, int64_t run_id, sim_err *err)
{
    sqlite3 *c = an_db_sqlite(db);
    sqlite3_stmt *s = NULL;
    const char *sql = "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                      " AND name IN ('spans', 'link_load')) = 2";
    if (sqlite3_prepare_v2(c, sql, -1, &s, NULL) != SQLITE_OK)
        return sim_err_set(err, SIM_EDB, "%s", sqlite3_errmsg(c));
    int have = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (!have)
        return 0;
    sql = "SELECT EXISTS(SELECT 1 FROM spans WHERE run_id = ?1)"
          " OR EXISTS(SELECT 1 FROM link_load WHERE run_id = ?1)";
    if (sqlite3_prepare_v2(c, sql, -1, &s, NULL) != SQLITE_OK)
        return sim_err_set(err, SIM_EDB, "%s", sqlite3_errmsg(c));
    sqlite3_bind_int64(s, 1, run_id);
    int rc = sqlite3_step(s);
    int yes = rc == SQLITE_ROW && sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW)
        return sim_err_set(err, SIM_EDB, "%s", sqlite3_errmsg(c));
    return yes;
}

int an_trace_run_check(an_db *db, const char *path, int64_t run_id, int *n, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(an_db_sqlite(db), "SELECT n_workers FROM runs WHERE id = ?1", -1, &s,
                           NULL) != SQLITE_OK)
        return db_fail(db, path, err);
    sqlite3_bind_int64(s, 1, run_id);
    int rc = sqlite3_step(s);
    *n = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW)
        return sim_err_set(err, SIM_EINPUT, "%s: no run %lld", path, (long long)run_id);
    int t = an_trace_exists(db, run_id, err);
    if (t < 0)
        return t;
    if (t == 0)
        return sim_err_set(err, SIM_EINPUT,
                           "%s: run %lld has no timeline (run it with [experiment] trace = on)",
                           path, (long long)run_id);
    return 0;
}

/* One number of a one-row query with the run id bound as ?1; NAN when
 * NULL or no row. */
static int query_real(an_db *db, const char *path, const char *sql, int64_t run_id, double *v,
                      sim_err *err)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(an_db_sqlite(db), sql, -1, &s, NULL) != SQLITE_OK)
        return db_fail(db, path, err);
    sqlite3_bind_int64(s, 1, run_id);
    int rc = sqlite3_step(s);
    *v = rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL
             ? sqlite3_column_double(s, 0)
             : NAN;
    sqlite3_finalize(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_fail(db, path, err);
}

int an_trace_note(an_db *db, const char *path, int64_t run_id, char *note, size_t size,
                  double *recorded_end, sim_err *err)
{
    double rows = NAN, max = NAN, last = NAN, end = NAN, done = NAN;
    int ret = query_real(db, path, "SELECT (SELECT count(*) FROM spans WHERE run_id = ?1) +"
                         " (SELECT count(*) FROM link_load WHERE run_id = ?1)", run_id, &rows,
                         err);
    if (ret == 0)
        ret = query_real(db, path, "SELECT CAST(value AS REAL) FROM params WHERE run_id = ?1"
                         " AND key = 'experiment.trace_max_events'", run_id, &max, err);
    if (ret == 0)
        ret = query_real(db, path, "SELECT max(coalesce((SELECT max(end) FROM spans WHERE"
                         " run_id = ?1), 0), coalesce((SELECT max(sim_time) FROM link_load"
                         " WHERE run_id = ?1), 0))", run_id, &last, err);
    if (ret == 0)
        ret = query_real(db, path, "SELECT sim_time FROM runs WHERE id = ?1", run_id, &end,
                         err);
    if (ret == 0)
        ret = query_real(db, path, "SELECT status IN ('done', 'diverged') FROM runs WHERE"
                         " id = ?1", run_id, &done, err);
    if (ret < 0)
        return ret;
    if (recorded_end)
        *recorded_end = last;
    size_t len = 0;
    note[0] = '\0';
    if (rows >= max) {
        len += (size_t)snprintf(note, size, "the timeline reached [experiment] trace_max_events"
                                " = %.0f rows: nothing after %g s was recorded", max, last);
        if (end > last && len < size)
            len += (size_t)snprintf(note + len, size - len, " (the run went on to %g s)", end);
    }
    if (!(done > 0) && len < size)
        snprintf(note + len, size - len, "%sthe run did not finish (status not done): its "
                 "timeline is partial, up to %g s", len ? "; " : "", last);
    return 0;
}

/* Microseconds with nanosecond digits. */
static void put_us(FILE *f, double seconds)
{
    fprintf(f, "%.3f", seconds * 1e6);
}

static void put_name(FILE *f, int *first, int pid, int tid, const char *what, const char *name)
{
    fprintf(f, "%s\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
               "\"args\":{\"name\":\"%s\"}}",
            *first ? "" : ",", what, pid, tid, name);
    *first = 0;
}

static int write_spans(an_db *db, const char *path, int64_t run_id, FILE *f, int *first,
                       int64_t *n, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(an_db_sqlite(db),
                           "SELECT worker, state, start, end FROM spans WHERE run_id = ?1"
                           " ORDER BY start, rowid",
                           -1, &s, NULL) != SQLITE_OK)
        return db_fail(db, path, err);
    sqlite3_bind_int64(s, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int w = sqlite3_column_int(s, 0);
        const char *state = (const char *)sqlite3_column_text(s, 1);
        double t0 = sqlite3_column_double(s, 2), t1 = sqlite3_column_double(s, 3);
        int send = state && strcmp(state, "send") == 0;
        fprintf(f, "%s\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", *first ? "" : ",",
                state ? state : "?", send ? "network" : "worker");
        put_us(f, t0);
        fputs(",\"dur\":", f);
        put_us(f, t1 - t0);
        fprintf(f, ",\"pid\":%d,\"tid\":%d}", send ? PID_SENDS : PID_WORKERS, w);
        *first = 0;
        (*n)++;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : db_fail(db, path, err);
}

static int write_loads(an_db *db, const char *path, int64_t run_id, FILE *f, int *first,
                       int64_t *n, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(an_db_sqlite(db),
                           "SELECT l.link, l.sim_time, l.bytes, k.src, k.dst FROM link_load l"
                           " LEFT JOIN links k ON k.run_id = l.run_id AND k.link = l.link"
                           " WHERE l.run_id = ?1 ORDER BY l.link, l.sim_time, l.rowid",
                           -1, &s, NULL) != SQLITE_OK)
        return db_fail(db, path, err);
    sqlite3_bind_int64(s, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int link = sqlite3_column_int(s, 0);
        char name[96];
        if (sqlite3_column_type(s, 3) != SQLITE_NULL)
            snprintf(name, sizeof name, "link %d (%d->%d)", link, sqlite3_column_int(s, 3),
                     sqlite3_column_int(s, 4));
        else
            snprintf(name, sizeof name, "link %d", link);
        fprintf(f, "%s\n{\"name\":\"%s\",\"cat\":\"network\",\"ph\":\"C\",\"ts\":",
                *first ? "" : ",", name);
        put_us(f, sqlite3_column_double(s, 1));
        fprintf(f, ",\"pid\":%d,\"tid\":0,\"args\":{\"bytes\":%.17g}}", PID_LINKS,
                sqlite3_column_double(s, 2));
        *first = 0;
        (*n)++;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : db_fail(db, path, err);
}

/* A JSON string's body: quotes, backslashes and control characters
 * escaped. */
static void put_json_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
}

int an_trace_export(const char *path, int64_t run_id, const char *out, int64_t *n_events,
                    char *note, size_t note_size, sim_err *err)
{
    char own[512];
    if (!note || note_size == 0)
        note = own, note_size = sizeof own;
    note[0] = '\0';
    size_t len = out ? strlen(out) : 0;
    if (len < 5 || strcasecmp(out + len - 5, ".json") != 0)
        return sim_err_set(err, SIM_EUSAGE, "-o '%s': dtsim trace writes a Chrome trace, a file"
                           " ending in .json (a picture of the timeline: dtsim plot DB --run ID"
                           " --timeline -o FILE.png)", out ? out : "");
    an_db *db = an_db_open_readonly(path, err);
    if (!db)
        return err && err->code ? err->code : SIM_EDB;
    int n_workers = 0;
    int ret = an_trace_run_check(db, path, run_id, &n_workers, err);
    if (ret == 0)
        ret = an_trace_note(db, path, run_id, note, note_size, NULL, err);
    FILE *f = NULL;
    if (ret == 0 && !(f = fopen(out, "w")))
        ret = sim_err_set(err, SIM_EUSAGE, "%s: cannot write: %s", out, strerror(errno));
    int64_t n = 0;
    if (ret == 0) {
        int first = 1;
        fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"run\":%lld",
                (long long)run_id);
        if (note[0]) {
            fputs(",\"note\":\"", f);
            put_json_text(f, note);
            fputc('"', f);
        }
        fputs("},\"traceEvents\":[", f);
        put_name(f, &first, PID_WORKERS, 0, "process_name", "workers");
        put_name(f, &first, PID_SENDS, 0, "process_name", "sends");
        put_name(f, &first, PID_LINKS, 0, "process_name", "links (bytes in flight)");
        for (int w = 0; w < n_workers; w++) {
            char name[48];
            snprintf(name, sizeof name, "worker %d", w);
            put_name(f, &first, PID_WORKERS, w, "thread_name", name);
            snprintf(name, sizeof name, "worker %d sends", w);
            put_name(f, &first, PID_SENDS, w, "thread_name", name);
        }
        ret = write_spans(db, path, run_id, f, &first, &n, err);
        if (ret == 0)
            ret = write_loads(db, path, run_id, f, &first, &n, err);
        fputs("\n]}\n", f);
        if (fclose(f) != 0 && ret == 0)
            ret = sim_err_set(err, SIM_EIO, "%s: cannot write: %s", out, strerror(errno));
    }
    an_db_close(db);
    if (n_events)
        *n_events = n;
    return ret;
}
