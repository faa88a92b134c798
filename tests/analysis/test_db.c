/* The results database: schema, run lifecycle, batching, NaN -> NULL,
 * series rows, failure messages, older databases gaining the newer tables,
 * merging, and every error path (read-only, not a database, newer schema,
 * locked). */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/db.h"
#include "tests/common.h"

static char db_path[4096];

static const char *fresh_db(void)
{
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir);
    snprintf(db_path, sizeof db_path, "%s/results.db", dir);
    return db_path;
}

/* One integer from a query on a separate connection (-1 when NULL). */
static int64_t q_int(const char *path, const char *sql)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(c, sql, -1, &s, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(c));
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW, "%s", sql);
    int64_t v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(c);
    return v;
}

static double q_real(const char *path, const char *sql)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(c, sql, -1, &s, NULL), SQLITE_OK, "%s", sql);
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW, "%s", sql);
    double v = sqlite3_column_type(s, 0) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(c);
    return v;
}

static void q_text(const char *path, const char *sql, char *out, size_t size)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(c, sql, -1, &s, NULL), SQLITE_OK, "%s", sql);
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW, "%s", sql);
    const char *t = (const char *)sqlite3_column_text(s, 0);
    snprintf(out, size, "%s", t ? t : "(null)");
    sqlite3_finalize(s);
    sqlite3_close(c);
}

static void exec_sql(const char *path, const char *sql)
{
    sqlite3 *c = NULL;
    cr_assert_eq(sqlite3_open(path, &c), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(c, sql, NULL, NULL, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(c));
    sqlite3_close(c);
}

static const char *const keys[] = {"experiment.seed", "workers.count", "algorithm.name"};
static const char *const values[] = {"7", "4", "allreduce_sgd"};

static an_run_info info_for(const char *config)
{
    an_run_info info = {
        .name = "t", .algorithm = "allreduce_sgd", .seed = 7, .n_workers = 4,
        .config = config, .version = "0.1.0",
        .n_params = 3, .param_keys = keys, .param_values = values,
    };
    return info;
}

static an_metric_row metric_at(int i)
{
    an_metric_row r = {
        .sim_time = 0.1 * i, .iteration = i, .epoch = 0.01 * i, .samples = 32 * i,
        .train_loss = 1.0 / (1 + i),
        .test_loss = (i % 2) ? NAN : 2.0 / (1 + i),
        .test_accuracy = (i % 10 == 0) ? 0.001 * i : NAN,
        .consensus_distance = 0.0, .bytes_sent = 1000 * (int64_t)i,
    };
    return r;
}

static an_run_summary summary_done(void)
{
    an_run_summary s = {
        .status = "done", .sim_time = 59.9, .iterations = 600, .wall_seconds = 0.5,
        .bytes_sent = 599000, .final_train_loss = 0.25, .final_test_accuracy = 0.59,
        .mean_staleness = NAN, .idle_fraction = 0.125, .consensus_distance = 0.0,
    };
    return s;
}

static int64_t run_begin_ok(an_db *db, const char *config)
{
    sim_err err = {0};
    an_run_info info = info_for(config);
    int64_t id = 0;
    cr_assert_eq(an_db_run_begin(db, &info, &id, &err), 0, "%s", err.msg);
    cr_assert_gt(id, 0);
    return id;
}

static void run_finish_status(an_db *db, int64_t id, const char *status)
{
    sim_err err = {0};
    an_run_summary s = summary_done();
    s.status = status;
    cr_assert_eq(an_db_run_finish(db, id, &s, NULL, 0, NULL, 0, &err), 0, "%s", err.msg);
}

Test(db, lifecycle_counts_and_values)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    cr_assert_str_eq(an_db_path(db), path);
    int64_t id = run_begin_ok(db, "cfg-A");
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    char started[64];
    q_text(path, "SELECT started_at FROM runs", started, sizeof started);
    /* 2024-01-02T03:04:05Z */
    cr_assert_eq(strlen(started), 20, "%s", started);
    cr_assert_eq(started[10], 'T');
    cr_assert_eq(started[19], 'Z');
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE finished_at IS NULL"
                             " AND sim_time IS NULL AND final_train_loss IS NULL"), 1);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM params"), 3);

    for (int i = 0; i < 600; i++) {
        an_metric_row r = metric_at(i);
        cr_assert_eq(an_db_metric(db, id, &r, &err), 0, "%s", err.msg);
    }
    /* two automatic flushes of 256 rows; 88 still buffered */
    cr_assert_eq(q_int(path, "SELECT count(*) FROM metrics"), 512);

    an_worker_row w[4];
    for (int i = 0; i < 4; i++)
        w[i] = (an_worker_row){.worker = i, .steps = 150, .compute_time = 1.5 + i,
                               .idle_time = 0.25, .bytes_sent = 149750,
                               .mean_staleness = i == 3 ? NAN : 0.5 * i};
    int64_t counts[4] = {5, 0, 3, 0};
    an_run_summary s = summary_done();
    s.consensus_distance = 0.0625;
    cr_assert_eq(an_db_run_finish(db, id, &s, w, 4, counts, 4, &err), 0, "%s", err.msg);
    an_db_close(db);

    cr_assert_eq(q_int(path, "SELECT count(*) FROM metrics"), 600);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM metrics WHERE test_loss IS NULL"), 300);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM metrics WHERE test_accuracy IS NULL"),
                 540);
    cr_assert_eq(q_int(path, "SELECT sum(iteration) FROM metrics"), 599 * 600 / 2);
    cr_assert_float_eq(q_real(path, "SELECT train_loss FROM metrics WHERE iteration = 3"),
                       0.25, 1e-15);
    cr_assert_eq(q_int(path, "SELECT bytes_sent FROM metrics WHERE iteration = 599"),
                 599000);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM workers"), 4);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM workers WHERE mean_staleness IS NULL"), 1);
    cr_assert_float_eq(q_real(path, "SELECT compute_time FROM workers WHERE worker = 2"),
                       3.5, 1e-15);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM staleness"), 2);
    cr_assert_eq(q_int(path, "SELECT count FROM staleness WHERE staleness = 2"), 3);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"
                             " AND finished_at LIKE '%Z' AND iterations = 600"
                             " AND bytes_sent = 599000 AND mean_staleness IS NULL"), 1);
    cr_assert_float_eq(q_real(path, "SELECT idle_fraction FROM runs"), 0.125, 1e-15);
    cr_assert_float_eq(q_real(path, "SELECT consensus_distance FROM runs"), 0.0625, 1e-15);
    cr_assert_float_eq(q_real(path, "SELECT final_test_accuracy FROM runs"), 0.59, 1e-15);
    cr_assert_eq(q_int(path, "SELECT seed FROM runs"), 7);
    char text[64];
    q_text(path, "SELECT value FROM meta WHERE key = 'schema_version'", text, sizeof text);
    cr_assert_str_eq(text, "1");
    q_text(path, "PRAGMA journal_mode", text, sizeof text);
    cr_assert_str_eq(text, "wal");
    cr_assert_eq(q_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                             " AND name IN ('metrics_run_time', 'params_run', 'workers_run',"
                             " 'staleness_run', 'runs_config')"), 5);
}

Test(db, reopen_appends_second_run)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t a = run_begin_ok(db, "cfg");
    run_finish_status(db, a, "done");
    an_db_close(db);
    db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t b = run_begin_ok(db, "cfg");
    an_metric_row r = metric_at(4);
    cr_assert_eq(an_db_metric(db, b, &r, &err), 0);
    run_finish_status(db, b, "diverged");
    an_db_close(db);
    cr_assert_eq(a, 1);
    cr_assert_eq(b, 2);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs"), 2);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM params"), 6);
    cr_assert_eq(q_int(path, "SELECT run_id FROM metrics"), 2);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM meta"), 1);
}

Test(db, close_flushes_buffered_rows)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    int64_t id = run_begin_ok(db, "cfg");
    for (int i = 0; i < 10; i++) {
        an_metric_row r = metric_at(i);
        cr_assert_eq(an_db_metric(db, id, &r, &err), 0);
    }
    cr_assert_eq(q_int(path, "SELECT count(*) FROM metrics"), 0);
    cr_assert_eq(an_db_flush(db, &err), 0, "%s", err.msg);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM metrics"), 10);
    an_metric_row r = metric_at(10);
    cr_assert_eq(an_db_metric(db, id, &r, &err), 0);
    an_db_close(db);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM metrics"), 11);
}

Test(db, readonly_database_is_edb_naming_file)
{
    const char *path = fresh_db();
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    sim_err err = {0};
    an_db *db = an_db_open(p, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);

    /* read-only through the URI form: works even as root */
    char uri[4200];
    snprintf(uri, sizeof uri, "file:%s?mode=ro", p);
    db = an_db_open(uri, &err);
    cr_assert_null(db);
    cr_assert_eq(err.code, SIM_EDB);
    cr_assert(strncmp(err.msg, uri, strlen(uri)) == 0, "%s", err.msg);
    cr_assert(strstr(err.msg, "readonly database") != NULL, "%s", err.msg);

    /* chmod only protects the file from a non-root user */
    if (geteuid() != 0) {
        cr_assert_eq(chmod(p, 0444), 0);
        sim_err_clear(&err);
        db = an_db_open(p, &err);
        cr_assert_null(db);
        cr_assert_eq(err.code, SIM_EDB);
        cr_assert(strncmp(err.msg, p, strlen(p)) == 0, "%s", err.msg);
        cr_assert(strstr(err.msg, "readonly") != NULL, "%s", err.msg);
        chmod(p, 0644);
    }

    /* a handle opened read-only refuses writes */
    db = an_db_open_readonly(p, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_run_info info = info_for("cfg");
    int64_t id = 0;
    cr_assert_eq(an_db_run_begin(db, &info, &id, &err), SIM_EDB);
    cr_assert(strncmp(err.msg, p, strlen(p)) == 0, "%s", err.msg);
    an_db_close(db);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM runs"), 0);
}

Test(db, directory_and_missing_file)
{
    const char *dir = test_tmpdir();
    char d[4096];
    snprintf(d, sizeof d, "%s", dir);
    sim_err err = {0};
    an_db *db = an_db_open(d, &err);
    cr_assert_null(db);
    cr_assert_eq(err.code, SIM_EDB);
    cr_assert(strncmp(err.msg, d, strlen(d)) == 0, "%s", err.msg);

    char missing[4200];
    snprintf(missing, sizeof missing, "%s/none.db", d);
    db = an_db_open_readonly(missing, &err);
    cr_assert_null(db);
    cr_assert_eq(err.code, SIM_EDB);
    cr_assert(strncmp(err.msg, missing, strlen(missing)) == 0, "%s", err.msg);
    cr_assert_eq(access(missing, F_OK), -1, "read-only open must not create the file");
}

Test(db, not_a_dtsim_database)
{
    const char *dir = test_tmpdir();
    char text_file[4096];
    snprintf(text_file, sizeof text_file, "%s",
             test_write_file(dir, "notes.db", "these are my notes, not a database\n"
                                              "line two of some text that is long enough "
                                              "to fill a header of one hundred bytes...\n"));
    sim_err err = {0};
    an_db *db = an_db_open(text_file, &err);
    cr_assert_null(db);
    cr_assert_eq(err.code, SIM_EDB);
    char want[8192];
    snprintf(want, sizeof want, "%s: not a dtsim results database (", text_file);
    cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);

    char other[4200];
    snprintf(other, sizeof other, "%s/other.db", dir);
    exec_sql(other, "CREATE TABLE foo(x INTEGER); INSERT INTO foo VALUES(1);");
    db = an_db_open(other, &err);
    cr_assert_null(db);
    cr_assert_eq(err.code, SIM_EDB);
    snprintf(want, sizeof want, "%s: not a dtsim results database (", other);
    cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
    /* and it was left alone */
    cr_assert_eq(q_int(other, "SELECT count(*) FROM sqlite_master"), 1);
}

Test(db, newer_schema_refused)
{
    const char *path = fresh_db();
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    sim_err err = {0};
    an_db *db = an_db_open(p, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);
    exec_sql(p, "UPDATE meta SET value = '3' WHERE key = 'schema_version'");
    db = an_db_open(p, &err);
    cr_assert_null(db);
    cr_assert_eq(err.code, SIM_EDB);
    char want[8192];
    snprintf(want, sizeof want, "%s: schema version 3 is newer than this dtsim (1)", p);
    cr_assert_str_eq(err.msg, want);
    db = an_db_open_readonly(p, &err);
    cr_assert_null(db);
    cr_assert_str_eq(err.msg, want);
}

Test(db, locked_database_writes_nothing)
{
    const char *path = fresh_db();
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    sim_err err = {0};
    an_db *db = an_db_open(p, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_set_busy_timeout(db, 50);
    int64_t first = run_begin_ok(db, "cfg");
    an_metric_row r = metric_at(1);
    cr_assert_eq(an_db_metric(db, first, &r, &err), 0);

    sqlite3 *other = NULL;
    cr_assert_eq(sqlite3_open(p, &other), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);

    an_run_info info = info_for("cfg");
    int64_t id = 0;
    sim_err_clear(&err);
    cr_assert_eq(an_db_run_begin(db, &info, &id, &err), SIM_EDB);
    cr_assert_eq(id, 0);
    cr_assert(strncmp(err.msg, p, strlen(p)) == 0, "%s", err.msg);
    cr_assert(strstr(err.msg, "locked") != NULL, "%s", err.msg);
    sim_err_clear(&err);
    cr_assert_eq(an_db_flush(db, &err), SIM_EDB);
    cr_assert(strstr(err.msg, "locked") != NULL, "%s", err.msg);
    sim_err_clear(&err);
    an_run_summary s = summary_done();
    cr_assert_eq(an_db_run_finish(db, first, &s, NULL, 0, NULL, 0, &err), SIM_EDB);

    cr_assert_eq(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);

    cr_assert_eq(q_int(p, "SELECT count(*) FROM runs"), 1);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM params"), 3);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM metrics"), 0);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    /* the buffered row survived the failed flush and lands once */
    cr_assert_eq(an_db_run_finish(db, first, &s, NULL, 0, NULL, 0, &err), 0, "%s", err.msg);
    an_db_close(db);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM metrics"), 1);
    cr_assert_eq(q_int(p, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
}

Test(db, find_done_matches_done_and_diverged_only)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t running = run_begin_ok(db, "A");
    int64_t failed = run_begin_ok(db, "A");
    run_finish_status(db, failed, "failed");
    int64_t diverged = run_begin_ok(db, "A");
    run_finish_status(db, diverged, "diverged");
    int64_t done_b = run_begin_ok(db, "B");
    run_finish_status(db, done_b, "done");
    int64_t c1 = run_begin_ok(db, "C");
    int64_t c2 = run_begin_ok(db, "C");
    cr_assert_eq(an_db_run_fail(db, c2, &err), 0, "%s", err.msg);
    (void)running;
    (void)c1;

    int64_t id = -1;
    cr_assert_eq(an_db_find_done(db, "A", &id, &err), 0);
    cr_assert_eq(id, diverged);
    cr_assert_eq(an_db_find_done(db, "B", &id, &err), 0);
    cr_assert_eq(id, done_b);
    cr_assert_eq(an_db_find_done(db, "C", &id, &err), 0);
    cr_assert_eq(id, 0);
    cr_assert_eq(an_db_find_done(db, "nope", &id, &err), 0);
    cr_assert_eq(id, 0);
    an_db_close(db);
}

Test(db, run_fail_and_invalid_status)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    int64_t id = run_begin_ok(db, "A");
    for (int i = 0; i < 5; i++) {
        an_metric_row r = metric_at(i);
        cr_assert_eq(an_db_metric(db, id, &r, &err), 0);
    }
    an_run_summary s = summary_done();
    s.status = "finished";
    cr_assert_eq(an_db_run_finish(db, id, &s, NULL, 0, NULL, 0, &err), SIM_EINTERNAL);
    cr_assert_eq(an_db_run_fail(db, id, &err), 0, "%s", err.msg);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE status = 'failed'"
                             " AND finished_at IS NOT NULL"), 1);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM metrics"), 5);
    /* fail does not overwrite a finished run */
    int64_t done = run_begin_ok(db, "A");
    run_finish_status(db, done, "done");
    cr_assert_eq(an_db_run_fail(db, done, &err), 0);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
    an_db_close(db);
}

Test(db, mark_stale_running)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    run_begin_ok(db, "A");
    run_begin_ok(db, "A");
    int64_t b = run_begin_ok(db, "B");
    int64_t done = run_begin_ok(db, "A");
    run_finish_status(db, done, "done");
    /* rows with a pid are an_db_orphans_mark's: this process is alive */
    cr_assert_eq(an_db_mark_stale_running(db, "A", &err), 0, "%s", err.msg);
    /* rows of an older dtsim have no pid */
    cr_assert_eq(sqlite3_exec(an_db_sqlite(db), "UPDATE runs SET pid = NULL", NULL, NULL,
                              NULL), SQLITE_OK);
    cr_assert_eq(an_db_mark_stale_running(db, "A", &err), 2, "%s", err.msg);
    cr_assert_eq(an_db_mark_stale_running(db, "A", &err), 0);
    an_db_close(db);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE config = 'A'"
                             " AND status = 'failed' AND finished_at IS NOT NULL"), 2);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM runs WHERE id = %lld"
                              " AND status = 'running'", (long long)b);
    cr_assert_eq(q_int(path, sql), 1);
}

Test(db, two_handles_interleaved)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *a = an_db_open(path, &err);
    cr_assert_not_null(a, "%s", err.msg);
    an_db *b = an_db_open(path, &err);
    cr_assert_not_null(b, "%s", err.msg);
    int64_t ra = run_begin_ok(a, "A");
    int64_t rb = run_begin_ok(b, "B");
    cr_assert_neq(ra, rb);
    for (int i = 0; i < 300; i++) {
        an_metric_row r = metric_at(i);
        cr_assert_eq(an_db_metric(a, ra, &r, &err), 0, "%s", err.msg);
        cr_assert_eq(an_db_metric(b, rb, &r, &err), 0, "%s", err.msg);
        if (i == 100)
            cr_assert_eq(an_db_flush(b, &err), 0, "%s", err.msg);
    }
    run_finish_status(b, rb, "done");
    run_finish_status(a, ra, "done");
    an_db_close(a);
    an_db_close(b);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM metrics WHERE run_id = %lld",
             (long long)ra);
    cr_assert_eq(q_int(path, sql), 300);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM metrics WHERE run_id = %lld",
             (long long)rb);
    cr_assert_eq(q_int(path, sql), 300);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"), 2);
}

/* A database in a directory nobody may write (chattr +i, which binds root
 * too) still opens read-only: WAL's -shm cannot be created there, so the
 * open falls back to SQLite's immutable mode. Skipped where chattr is not
 * supported. */
Test(db, readonly_open_in_an_immutable_directory)
{
    const char *dir = test_tmpdir();
    char sub[4096], path[4200], cmd[8400];
    snprintf(sub, sizeof sub, "%s/ro", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    snprintf(path, sizeof path, "%s/r.db", sub);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t id = run_begin_ok(db, "cfg");
    run_finish_status(db, id, "done");
    an_db_close(db);
    snprintf(cmd, sizeof cmd, "chattr +i '%s' 2>/dev/null", sub);
    if (system(cmd) != 0)
        cr_skip_test("chattr +i is not supported here");
    an_db *ro = an_db_open_readonly(path, &err);
    snprintf(cmd, sizeof cmd, "chattr -i '%s'", sub);
    int undo = system(cmd);
    cr_assert_eq(undo, 0);
    cr_assert_not_null(ro, "%s", err.msg);
    cr_assert_str_eq(an_db_path(ro), path);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(an_db_sqlite(ro), "select status from runs", -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "done");
    sqlite3_finalize(st);
    an_db_close(ro);
}

/* ---- series, runs.error, older databases -------------------------------- */

static an_series_row series_at(int i)
{
    an_series_row r = {.sim_time = 0.5 * i, .iteration = 10 * i, .worker = i % 3 - 1,
                       .name = (i % 2) ? "dropped" : "batch", .value = i == 4 ? NAN : 1.5 * i};
    return r;
}

Test(db, series_rows_round_trip_in_batches)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t id = run_begin_ok(db, "cfg");
    for (int i = 0; i < 300; i++) {
        an_series_row r = series_at(i);
        cr_assert_eq(an_db_series(db, id, &r, &err), 0, "%s", err.msg);
    }
    /* one automatic flush of 256 rows; 44 still buffered */
    cr_assert_eq(q_int(path, "SELECT count(*) FROM series"), 256);
    an_metric_row m = metric_at(1);
    cr_assert_eq(an_db_metric(db, id, &m, &err), 0);
    cr_assert_eq(an_db_flush(db, &err), 0, "%s", err.msg); /* both buffers, one transaction */
    cr_assert_eq(q_int(path, "SELECT count(*) FROM series"), 300);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM metrics"), 1);
    an_series_row r = series_at(300);
    cr_assert_eq(an_db_series(db, id, &r, &err), 0);
    run_finish_status(db, id, "done"); /* the run's last rows go with the summary */
    an_db_close(db);

    cr_assert_eq(q_int(path, "SELECT count(*) FROM series WHERE run_id = 1"), 301);
    /* worker -1 is a global value: NULL */
    cr_assert_eq(q_int(path, "SELECT count(*) FROM series WHERE worker IS NULL"), 101);
    cr_assert_eq(q_int(path, "SELECT worker FROM series WHERE iteration = 50"), 1);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM series WHERE value IS NULL"), 1);
    cr_assert_eq(q_int(path, "SELECT iteration FROM series WHERE value IS NULL"), 40);
    cr_assert_float_eq(q_real(path, "SELECT value FROM series WHERE iteration = 70"), 10.5,
                       1e-15);
    cr_assert_float_eq(q_real(path, "SELECT sim_time FROM series WHERE iteration = 70"), 3.5,
                       1e-15);
    char text[64];
    q_text(path, "SELECT name FROM series WHERE iteration = 70", text, sizeof text);
    cr_assert_str_eq(text, "dropped");
    cr_assert_eq(q_int(path, "SELECT count(*) FROM series WHERE name = 'dropped'"), 150);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                             " AND name = 'series_run_name'"), 1);
}

Test(db, series_name_must_fit)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    int64_t id = run_begin_ok(db, "cfg");
    char longname[AN_SERIES_NAME_MAX + 1];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    an_series_row r = {.name = longname, .worker = -1};
    cr_assert_eq(an_db_series(db, id, &r, &err), SIM_EINTERNAL);
    cr_assert(strstr(err.msg, "series name"), "%s", err.msg);
    r.name = "";
    cr_assert_eq(an_db_series(db, id, &r, &err), SIM_EINTERNAL);
    longname[AN_SERIES_NAME_MAX - 1] = '\0'; /* 63 characters fit */
    r.name = longname;
    cr_assert_eq(an_db_series(db, id, &r, &err), 0, "%s", err.msg);
    an_db_close(db);
    cr_assert_eq(q_int(path, "SELECT length(name) FROM series"), AN_SERIES_NAME_MAX - 1);
}

Test(db, failed_run_keeps_its_message)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    int64_t a = run_begin_ok(db, "A"), b = run_begin_ok(db, "B");
    an_series_row r = series_at(1);
    cr_assert_eq(an_db_series(db, a, &r, &err), 0);
    cr_assert_eq(an_db_run_fail_message(db, a, "x.ini: asgd: at 1 s: send failed", &err), 0,
                 "%s", err.msg);
    cr_assert_eq(an_db_run_fail(db, b, &err), 0, "%s", err.msg);
    an_db_close(db);
    char text[128];
    q_text(path, "SELECT error FROM runs WHERE id = 1", text, sizeof text);
    cr_assert_str_eq(text, "x.ini: asgd: at 1 s: send failed");
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE id = 2 AND error IS NULL"
                             " AND status = 'failed'"), 1);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM series WHERE run_id = 1"), 1);
}

/* The schema before the series table, runs.error, labels and links. */
static const char old_schema[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "INSERT INTO meta(key, value) VALUES('schema_version', '1');"
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, name TEXT, algorithm TEXT,"
    " status TEXT, seed INTEGER, n_workers INTEGER, config TEXT, started_at TEXT,"
    " finished_at TEXT, version TEXT, sim_time REAL, iterations INTEGER,"
    " wall_seconds REAL, bytes_sent INTEGER, final_train_loss REAL,"
    " final_test_accuracy REAL, mean_staleness REAL, idle_fraction REAL,"
    " consensus_distance REAL);"
    "CREATE TABLE params(run_id INTEGER, key TEXT, value TEXT);"
    "CREATE TABLE metrics(run_id INTEGER, sim_time REAL, iteration INTEGER,"
    " epoch REAL, samples INTEGER, train_loss REAL, test_loss REAL, test_accuracy REAL,"
    " consensus_distance REAL, bytes_sent INTEGER);"
    "CREATE TABLE workers(run_id INTEGER, worker INTEGER, steps INTEGER,"
    " compute_time REAL, idle_time REAL, bytes_sent INTEGER, mean_staleness REAL,"
    " gossip_rounds INTEGER);"
    "CREATE TABLE staleness(run_id INTEGER, staleness INTEGER, count INTEGER);"
    "INSERT INTO runs(name, algorithm, status, config) VALUES('old', 'asgd', 'done', 'c0');"
    "INSERT INTO metrics(run_id, iteration) VALUES(1, 5);";

Test(db, older_database_gains_the_new_tables)
{
    const char *path = fresh_db();
    exec_sql(path, old_schema);
    sim_err err = {0};
    /* read-only: opens as it is, nothing added */
    an_db *ro = an_db_open_readonly(path, &err);
    cr_assert_not_null(ro, "%s", err.msg);
    an_db_close(ro);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'series'"), 0);
    /* for writing: the series table, its index and runs.error appear */
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t id = run_begin_ok(db, "c1");
    cr_assert_eq(id, 2);
    an_series_row r = series_at(3);
    cr_assert_eq(an_db_series(db, id, &r, &err), 0);
    cr_assert_eq(an_db_run_fail_message(db, id, "boom", &err), 0, "%s", err.msg);
    an_db_close(db);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                             " AND name IN ('series', 'labels', 'links', 'faults')"), 4);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'series_run_name'"),
                 1);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE id = 1 AND error IS NULL"
                             " AND status = 'done'"), 1);
    char text[32];
    q_text(path, "SELECT error FROM runs WHERE id = 2", text, sizeof text);
    cr_assert_str_eq(text, "boom");
    /* runs.pid and runs.host appear too, filled for the new run */
    cr_assert_eq(q_int(path, "SELECT pid FROM runs WHERE id = 2"), (int64_t)getpid());
    cr_assert_eq(q_int(path, "SELECT pid FROM runs WHERE id = 1"), -1);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM series"), 1);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM metrics"), 1);
    /* opening again changes nothing */
    db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM pragma_table_info('runs')"
                             " WHERE name = 'error'"), 1);
    /* params gained num: NULL for the old rows */
    cr_assert_eq(q_int(path, "SELECT count(*) FROM pragma_table_info('params')"
                             " WHERE name = 'num'"), 1);
}

/* params rows keep the value as written and its SI number (or NULL). */
Test(db, params_store_the_written_value_and_its_number)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    const char *keys[] = {"network.bandwidth", "network.topology", "algorithm.lr"};
    const char *values[] = {"10Gbps", "torus(4, 4)", "0.1"};
    const double nums[] = {1.25e9, NAN, 0.1};
    an_run_info info = {.name = "p", .algorithm = "dpsgd", .seed = 1, .n_workers = 16,
                        .config = "c", .version = "0", .n_params = 3, .param_keys = keys,
                        .param_values = values, .param_nums = nums};
    int64_t id = 0;
    cr_assert_eq(an_db_run_begin(db, &info, &id, &err), 0, "%s", err.msg);
    an_db_close(db);
    char text[64];
    q_text(path, "SELECT value FROM params WHERE key = 'network.bandwidth'", text, sizeof text);
    cr_assert_str_eq(text, "10Gbps");
    cr_assert_eq(q_int(path, "SELECT num = 1250000000 FROM params"
                             " WHERE key = 'network.bandwidth'"), 1);
    cr_assert_eq(q_int(path, "SELECT num IS NULL FROM params WHERE key = 'network.topology'"),
                 1);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM params WHERE num > 1e9"), 1);
}

Test(db, merge_copies_series_and_accepts_older_sources)
{
    const char *dir = test_tmpdir();
    char main_path[4096], new_src[4096], old_src[4096];
    snprintf(main_path, sizeof main_path, "%s/main.db", dir);
    snprintf(new_src, sizeof new_src, "%s/new.db", dir);
    snprintf(old_src, sizeof old_src, "%s/old.db", dir);
    sim_err err = {0};
    an_db *src = an_db_open(new_src, &err);
    cr_assert_not_null(src, "%s", err.msg);
    int64_t id = run_begin_ok(src, "cfg-new");
    for (int i = 0; i < 5; i++) {
        an_series_row r = series_at(i);
        cr_assert_eq(an_db_series(src, id, &r, &err), 0);
    }
    cr_assert_eq(an_db_run_fail_message(src, id, "why", &err), 0);
    an_db_close(src);
    exec_sql(old_src, old_schema);

    an_db *db = an_db_open(main_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int copied = 0;
    cr_assert_eq(an_db_merge(db, new_src, &copied, &err), 0, "%s", err.msg);
    cr_assert_eq(copied, 1);
    cr_assert_eq(an_db_merge(db, old_src, &copied, &err), 0, "%s", err.msg);
    cr_assert_eq(copied, 1);
    an_db_close(db);
    cr_assert_eq(q_int(main_path, "SELECT count(*) FROM runs"), 2);
    cr_assert_eq(q_int(main_path, "SELECT count(*) FROM series WHERE run_id = 1"), 5);
    cr_assert_eq(q_int(main_path, "SELECT count(*) FROM series WHERE worker IS NULL"), 2);
    char text[32];
    q_text(main_path, "SELECT error FROM runs WHERE id = 1", text, sizeof text);
    cr_assert_str_eq(text, "why");
    cr_assert_eq(q_int(main_path, "SELECT count(*) FROM runs WHERE id = 2 AND error IS NULL"
                                  " AND name = 'old'"), 1);
    cr_assert_eq(q_int(main_path, "SELECT count(*) FROM metrics WHERE run_id = 2"), 1);
}

/* ---- rows left running, claims, corruption ------------------------------ */

/* The id of a process that has ended (reaped, so kill() says ESRCH). */
static pid_t dead_pid(void)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(0);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    cr_assert_eq(kill(pid, 0), -1);
    cr_assert_eq(errno, ESRCH);
    return pid;
}

Test(db, runs_whose_process_is_gone_are_failed_on_open)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t mine = run_begin_ok(db, "A");
    int64_t gone = run_begin_ok(db, "B");
    int64_t elsewhere = run_begin_ok(db, "C");
    int64_t finished = run_begin_ok(db, "D");
    run_finish_status(db, finished, "done");
    char host[256] = "";
    gethostname(host, sizeof host);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM runs WHERE pid = %lld AND host = '%s'",
             (long long)getpid(), host);
    cr_assert_eq(q_int(path, sql), 4, "every run records this process and host");
    pid_t dead = dead_pid();
    snprintf(sql, sizeof sql, "UPDATE runs SET pid = %lld WHERE id IN (%lld, %lld, %lld);"
                              " UPDATE runs SET host = 'another-host' WHERE id = %lld",
             (long long)dead, (long long)gone, (long long)elsewhere, (long long)finished,
             (long long)elsewhere);
    cr_assert_eq(sqlite3_exec(an_db_sqlite(db), sql, NULL, NULL, NULL), SQLITE_OK);
    an_db_close(db);

    /* read-only: nothing written, the dead run is seen as interrupted */
    an_db *ro = an_db_open_readonly(path, &err);
    cr_assert_not_null(ro, "%s", err.msg);
    cr_assert_eq(an_db_run_orphaned(ro, gone), 1);
    cr_assert_eq(an_db_run_orphaned(ro, mine), 0);
    cr_assert_eq(an_db_run_orphaned(ro, elsewhere), 0, "another host's process: unknown");
    cr_assert_eq(an_db_run_orphaned(ro, finished), 0);
    an_db_close(ro);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE status = 'running'"), 3);

    /* a writable open marks it failed, with why */
    db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);
    snprintf(sql, sizeof sql, "SELECT status = 'failed' AND finished_at IS NOT NULL"
                              " FROM runs WHERE id = %lld", (long long)gone);
    cr_assert_eq(q_int(path, sql), 1);
    char text[512], want[512];
    snprintf(sql, sizeof sql, "SELECT error FROM runs WHERE id = %lld", (long long)gone);
    q_text(path, sql, text, sizeof text);
    snprintf(want, sizeof want, "interrupted: its process %lld on %s ended without finishing"
                                " the run", (long long)dead, host);
    cr_assert_str_eq(text, want);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE status = 'running'"), 2);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
}

/* Another connection holds the write lock for a while: marking a run
 * failed waits for it (a long busy timeout) instead of leaving the row
 * 'running'. */
Test(db, marking_failed_waits_out_a_locked_database)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t id = run_begin_ok(db, "A");
    an_db_set_busy_timeout(db, 20);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        sqlite3 *c = NULL;
        int ok = sqlite3_open(path, &c) == SQLITE_OK &&
                 sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
        char b = ok ? 'y' : 'n';
        if (write(fds[1], &b, 1) != 1)
            _exit(1);
        usleep(600 * 1000);
        sqlite3_exec(c, "COMMIT", NULL, NULL, NULL);
        sqlite3_close(c);
        _exit(0);
    }
    char b = 0;
    cr_assert_eq(read(fds[0], &b, 1), 1);
    cr_assert_eq(b, 'y');
    cr_assert_eq(an_db_run_fail_message(db, id, "boom", &err), 0, "%s", err.msg);
    int ws = 0;
    waitpid(pid, &ws, 0);
    cr_assert_eq(WEXITSTATUS(ws), 0);
    an_db_close(db);
    close(fds[0]);
    close(fds[1]);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs WHERE status = 'failed'"
                             " AND error = 'boom'"), 1);
}

Test(db, a_claim_begins_only_an_unclaimed_config_and_seed)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *a = an_db_open(path, &err), *b = an_db_open(path, &err);
    cr_assert(a && b, "%s", err.msg);
    an_run_info info = info_for("A");
    info.claim = 1;
    int64_t first = 0, other = 0;
    cr_assert_eq(an_db_run_begin(a, &info, &first, &err), 0, "%s", err.msg);
    cr_assert_eq(an_db_run_begin(b, &info, &other, &err), AN_DB_CLAIMED);
    cr_assert_eq(other, first, "the claiming run's id");
    /* another seed is another configuration */
    info.seed = 8;
    cr_assert_eq(an_db_run_begin(b, &info, &other, &err), 0);
    cr_assert_neq(other, first);
    /* a failed run frees the claim; a done one keeps it */
    info.seed = 7;
    cr_assert_eq(an_db_run_fail(a, first, &err), 0);
    an_db_set_claim(b, 1);
    an_run_info plain = info_for("A");
    int64_t again = 0;
    cr_assert_eq(an_db_run_begin(b, &plain, &again, &err), 0, "%s", err.msg);
    run_finish_status(b, again, "done");
    cr_assert_eq(an_db_run_begin(b, &plain, &other, &err), AN_DB_CLAIMED);
    cr_assert_eq(other, again);
    /* without a claim the same config runs again (dtsim run) */
    cr_assert_eq(an_db_run_begin(a, &plain, &other, &err), 0);
    an_db_close(a);
    an_db_close(b);
    cr_assert_eq(q_int(path, "SELECT count(*) FROM runs"), 4);
}

/* Overwrites the staleness table's root page with garbage. */
static void corrupt_staleness(const char *path)
{
    int64_t page = q_int(path, "SELECT rootpage FROM sqlite_master WHERE name = 'staleness'");
    int64_t size = q_int(path, "PRAGMA page_size");
    cr_assert_gt(page, 1);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, (long)((page - 1) * size), SEEK_SET), 0);
    for (int64_t i = 0; i < size; i++)
        fputc((int)(0x5a ^ (i * 7)), f);
    fclose(f);
}

Test(db, a_corrupt_database_is_refused_naming_the_file)
{
    const char *path = fresh_db();
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t id = run_begin_ok(db, "A");
    int64_t st[3] = {0, 4, 9};
    an_run_summary sum = summary_done();
    cr_assert_eq(an_db_run_finish(db, id, &sum, NULL, 0, st, 3, &err), 0, "%s", err.msg);
    an_db_close(db);
    exec_sql(path, "PRAGMA journal_mode=DELETE");
    corrupt_staleness(path);

    db = an_db_open(path, &err);
    cr_assert_null(db);
    cr_assert_eq(err.code, SIM_EDB);
    cr_assert(strstr(err.msg, path) && strstr(err.msg, "corrupt"), "%s", err.msg);
    cr_assert_eq(sim_err_exit_status(err.code), 2);
    sim_err_clear(&err);
    db = an_db_open_readonly(path, &err);
    cr_assert_null(db);
    cr_assert(strstr(err.msg, path) && strstr(err.msg, "corrupt"), "%s", err.msg);
}
