/* analysis/db_write.c: the run lifecycle and its writes. Counts and values
 * (NaN -> NULL), batching of metric and series rows, params, failure
 * messages, finding a done run, and what a locked database leaves behind
 * (nothing half-written; marking failed waits the lock out). */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/db.h"
#include "tests/analysis/fixtures.h"
#include "tests/common.h"

Test(db_write, lifecycle_counts_and_values)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    cr_assert_str_eq(an_db_path(db), path);
    int64_t id = fx_run_begin(db, "cfg-A");
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    char started[64];
    test_sql_text(path, "SELECT started_at FROM runs", started, sizeof started);
    /* 2024-01-02T03:04:05Z */
    cr_assert_eq(strlen(started), 20, "%s", started);
    cr_assert_eq(started[10], 'T');
    cr_assert_eq(started[19], 'Z');
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE finished_at IS NULL"
                                    " AND sim_time IS NULL AND final_train_loss IS NULL"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM params"), 3);

    for (int i = 0; i < 600; i++) {
        an_metric_row r = fx_metric_at(i);
        cr_assert_eq(an_db_metric(db, id, &r, &err), 0, "%s", err.msg);
    }
    /* two automatic flushes of 256 rows; 88 still buffered */
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM metrics"), 512);

    an_worker_row w[4];
    for (int i = 0; i < 4; i++)
        w[i] = (an_worker_row){.worker = i, .steps = 150, .compute_time = 1.5 + i,
                               .idle_time = 0.25, .bytes_sent = 149750,
                               .mean_staleness = i == 3 ? NAN : 0.5 * i};
    int64_t counts[4] = {5, 0, 3, 0};
    an_run_summary s = fx_summary_done();
    s.consensus_distance = 0.0625;
    cr_assert_eq(an_db_run_finish(db, id, &s, w, 4, counts, 4, &err), 0, "%s", err.msg);
    an_db_close(db);

    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM metrics"), 600);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM metrics WHERE test_loss IS NULL"), 300);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM metrics WHERE test_accuracy IS NULL"),
                 540);
    cr_assert_eq(test_sql_int(path, "SELECT sum(iteration) FROM metrics"), 599 * 600 / 2);
    cr_assert_float_eq(test_sql_real(path, "SELECT train_loss FROM metrics WHERE iteration = 3"),
                       0.25, 1e-15);
    cr_assert_eq(test_sql_int(path, "SELECT bytes_sent FROM metrics WHERE iteration = 599"),
                 599000);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM workers"), 4);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM workers"
                                    " WHERE mean_staleness IS NULL"), 1);
    cr_assert_float_eq(test_sql_real(path, "SELECT compute_time FROM workers WHERE worker = 2"),
                       3.5, 1e-15);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM staleness"), 2);
    cr_assert_eq(test_sql_int(path, "SELECT count FROM staleness WHERE staleness = 2"), 3);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"
                                    " AND finished_at LIKE '%Z' AND iterations = 600"
                                    " AND bytes_sent = 599000 AND mean_staleness IS NULL"), 1);
    cr_assert_float_eq(test_sql_real(path, "SELECT idle_fraction FROM runs"), 0.125, 1e-15);
    cr_assert_float_eq(test_sql_real(path, "SELECT consensus_distance FROM runs"), 0.0625, 1e-15);
    cr_assert_float_eq(test_sql_real(path, "SELECT final_test_accuracy FROM runs"), 0.59, 1e-15);
    cr_assert_eq(test_sql_int(path, "SELECT seed FROM runs"), 7);
    char text[64];
    test_sql_text(path, "SELECT value FROM meta WHERE key = 'schema_version'", text, sizeof text);
    cr_assert_str_eq(text, "1");
    test_sql_text(path, "PRAGMA journal_mode", text, sizeof text);
    cr_assert_str_eq(text, "wal");
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                                    " AND name IN ('metrics_run_time', 'params_run', 'workers_run',"
                                    " 'staleness_run', 'runs_config')"), 5);
}

/* params rows keep the value as written and its SI number (or NULL). */
Test(db_write, params_store_the_written_value_and_its_number)
{
    const char *path = test_db_path("results.db");
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
    test_sql_text(path, "SELECT value FROM params WHERE key = 'network.bandwidth'", text,
                  sizeof text);
    cr_assert_str_eq(text, "10Gbps");
    cr_assert_eq(test_sql_int(path, "SELECT num = 1250000000 FROM params"
                                    " WHERE key = 'network.bandwidth'"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT num IS NULL FROM params"
                                    " WHERE key = 'network.topology'"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM params WHERE num > 1e9"), 1);
}

Test(db_write, series_rows_round_trip_in_batches)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t id = fx_run_begin(db, "cfg");
    for (int i = 0; i < 300; i++) {
        an_series_row r = fx_series_at(i);
        cr_assert_eq(an_db_series(db, id, &r, &err), 0, "%s", err.msg);
    }
    /* one automatic flush of 256 rows; 44 still buffered */
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM series"), 256);
    an_metric_row m = fx_metric_at(1);
    cr_assert_eq(an_db_metric(db, id, &m, &err), 0);
    cr_assert_eq(an_db_flush(db, &err), 0, "%s", err.msg); /* both buffers, one transaction */
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM series"), 300);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM metrics"), 1);
    an_series_row r = fx_series_at(300);
    cr_assert_eq(an_db_series(db, id, &r, &err), 0);
    fx_run_finish(db, id, "done"); /* the run's last rows go with the summary */
    an_db_close(db);

    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM series WHERE run_id = 1"), 301);
    /* worker -1 is a global value: NULL */
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM series WHERE worker IS NULL"), 101);
    cr_assert_eq(test_sql_int(path, "SELECT worker FROM series WHERE iteration = 50"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM series WHERE value IS NULL"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT iteration FROM series WHERE value IS NULL"), 40);
    cr_assert_float_eq(test_sql_real(path, "SELECT value FROM series WHERE iteration = 70"), 10.5,
                       1e-15);
    cr_assert_float_eq(test_sql_real(path, "SELECT sim_time FROM series WHERE iteration = 70"), 3.5,
                       1e-15);
    char text[64];
    test_sql_text(path, "SELECT name FROM series WHERE iteration = 70", text, sizeof text);
    cr_assert_str_eq(text, "dropped");
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM series WHERE name = 'dropped'"), 150);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                                    " AND name = 'series_run_name'"), 1);
}

Test(db_write, series_name_must_fit)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    int64_t id = fx_run_begin(db, "cfg");
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
    cr_assert_eq(test_sql_int(path, "SELECT length(name) FROM series"), AN_SERIES_NAME_MAX - 1);
}

Test(db_write, find_done_matches_done_and_diverged_only)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t running = fx_run_begin(db, "A");
    int64_t failed = fx_run_begin(db, "A");
    fx_run_finish(db, failed, "failed");
    int64_t diverged = fx_run_begin(db, "A");
    fx_run_finish(db, diverged, "diverged");
    int64_t done_b = fx_run_begin(db, "B");
    fx_run_finish(db, done_b, "done");
    int64_t c1 = fx_run_begin(db, "C");
    int64_t c2 = fx_run_begin(db, "C");
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

Test(db_write, run_fail_and_invalid_status)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    int64_t id = fx_run_begin(db, "A");
    for (int i = 0; i < 5; i++) {
        an_metric_row r = fx_metric_at(i);
        cr_assert_eq(an_db_metric(db, id, &r, &err), 0);
    }
    an_run_summary s = fx_summary_done();
    s.status = "finished";
    cr_assert_eq(an_db_run_finish(db, id, &s, NULL, 0, NULL, 0, &err), SIM_EINTERNAL);
    cr_assert_eq(an_db_run_fail(db, id, &err), 0, "%s", err.msg);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'failed'"
                                    " AND finished_at IS NOT NULL"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM metrics"), 5);
    /* fail does not overwrite a finished run */
    int64_t done = fx_run_begin(db, "A");
    fx_run_finish(db, done, "done");
    cr_assert_eq(an_db_run_fail(db, done, &err), 0);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
    an_db_close(db);
}

Test(db_write, failed_run_keeps_its_message)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    int64_t a = fx_run_begin(db, "A"), b = fx_run_begin(db, "B");
    an_series_row r = fx_series_at(1);
    cr_assert_eq(an_db_series(db, a, &r, &err), 0);
    cr_assert_eq(an_db_run_fail_message(db, a, "x.ini: asgd: at 1 s: send failed", &err), 0,
                 "%s", err.msg);
    cr_assert_eq(an_db_run_fail(db, b, &err), 0, "%s", err.msg);
    an_db_close(db);
    char text[128];
    test_sql_text(path, "SELECT error FROM runs WHERE id = 1", text, sizeof text);
    cr_assert_str_eq(text, "x.ini: asgd: at 1 s: send failed");
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE id = 2 AND error IS NULL"
                                    " AND status = 'failed'"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM series WHERE run_id = 1"), 1);
}

Test(db_write, locked_database_writes_nothing)
{
    const char *path = test_db_path("results.db");
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    sim_err err = {0};
    an_db *db = an_db_open(p, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_set_busy_timeout(db, 50);
    int64_t first = fx_run_begin(db, "cfg");
    an_metric_row r = fx_metric_at(1);
    cr_assert_eq(an_db_metric(db, first, &r, &err), 0);

    sqlite3 *other = NULL;
    cr_assert_eq(sqlite3_open(p, &other), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);

    an_run_info info = fx_run_info("cfg");
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
    an_run_summary s = fx_summary_done();
    cr_assert_eq(an_db_run_finish(db, first, &s, NULL, 0, NULL, 0, &err), SIM_EDB);

    cr_assert_eq(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);

    cr_assert_eq(test_sql_int(p, "SELECT count(*) FROM runs"), 1);
    cr_assert_eq(test_sql_int(p, "SELECT count(*) FROM params"), 3);
    cr_assert_eq(test_sql_int(p, "SELECT count(*) FROM metrics"), 0);
    cr_assert_eq(test_sql_int(p, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
    /* the buffered row survived the failed flush and lands once */
    cr_assert_eq(an_db_run_finish(db, first, &s, NULL, 0, NULL, 0, &err), 0, "%s", err.msg);
    an_db_close(db);
    cr_assert_eq(test_sql_int(p, "SELECT count(*) FROM metrics"), 1);
    cr_assert_eq(test_sql_int(p, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
}

/* Another connection holds the write lock for a while: marking a run
 * failed waits for it (a long busy timeout) instead of leaving the row
 * 'running'. */
Test(db_write, marking_failed_waits_out_a_locked_database)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t id = fx_run_begin(db, "A");
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
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'failed'"
                                    " AND error = 'boom'"), 1);
}

/* Every staleness value of each worker with its count, no cap; zero counts
 * and workers without any are not stored. */
Test(db_write, staleness_of_each_worker_without_a_cap)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t id = fx_run_begin(db, "c");
    int64_t w0[140] = {[0] = 3, [2] = 1}, w2[] = {0, 5};
    w0[139] = 49; /* a straggler's tail, past the histogram's 4n + 63 */
    const int64_t *counts[] = {w0, NULL, w2};
    const int64_t lens[] = {140, 0, 2};
    cr_assert_eq(an_db_run_staleness(db, id, counts, lens, 3, &err), 0, "%s", err.msg);
    fx_run_finish(db, id, "done");
    an_db_close(db);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM staleness_workers"), 4);
    cr_assert_eq(test_sql_int(path, "SELECT count FROM staleness_workers"
                                    " WHERE worker = 0 AND staleness = 139"), 49);
    cr_assert_eq(test_sql_int(path, "SELECT sum(count) FROM staleness_workers"
                                    " WHERE worker = 2"), 5);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM staleness_workers"
                                    " WHERE worker = 1"), 0);
}
