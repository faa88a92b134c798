/* analysis/db.c: the handle. Opening, reopening and closing (buffered rows
 * are flushed), two handles on one file, read-only opens and their errors
 * (a read-only file, a directory, a missing file, an immutable directory). */
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

Test(db, reopen_appends_second_run)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t a = fx_run_begin(db, "cfg");
    fx_run_finish(db, a, "done");
    an_db_close(db);
    db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t b = fx_run_begin(db, "cfg");
    an_metric_row r = fx_metric_at(4);
    cr_assert_eq(an_db_metric(db, b, &r, &err), 0);
    fx_run_finish(db, b, "diverged");
    an_db_close(db);
    cr_assert_eq(a, 1);
    cr_assert_eq(b, 2);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs"), 2);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM params"), 6);
    cr_assert_eq(test_sql_int(path, "SELECT run_id FROM metrics"), 2);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM meta"), 1);
}

Test(db, close_flushes_buffered_rows)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    int64_t id = fx_run_begin(db, "cfg");
    for (int i = 0; i < 10; i++) {
        an_metric_row r = fx_metric_at(i);
        cr_assert_eq(an_db_metric(db, id, &r, &err), 0);
    }
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM metrics"), 0);
    cr_assert_eq(an_db_flush(db, &err), 0, "%s", err.msg);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM metrics"), 10);
    an_metric_row r = fx_metric_at(10);
    cr_assert_eq(an_db_metric(db, id, &r, &err), 0);
    an_db_close(db);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM metrics"), 11);
}

Test(db, two_handles_interleaved)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *a = an_db_open(path, &err);
    cr_assert_not_null(a, "%s", err.msg);
    an_db *b = an_db_open(path, &err);
    cr_assert_not_null(b, "%s", err.msg);
    int64_t ra = fx_run_begin(a, "A");
    int64_t rb = fx_run_begin(b, "B");
    cr_assert_neq(ra, rb);
    for (int i = 0; i < 300; i++) {
        an_metric_row r = fx_metric_at(i);
        cr_assert_eq(an_db_metric(a, ra, &r, &err), 0, "%s", err.msg);
        cr_assert_eq(an_db_metric(b, rb, &r, &err), 0, "%s", err.msg);
        if (i == 100)
            cr_assert_eq(an_db_flush(b, &err), 0, "%s", err.msg);
    }
    fx_run_finish(b, rb, "done");
    fx_run_finish(a, ra, "done");
    an_db_close(a);
    an_db_close(b);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM metrics WHERE run_id = %lld",
             (long long)ra);
    cr_assert_eq(test_sql_int(path, sql), 300);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM metrics WHERE run_id = %lld",
             (long long)rb);
    cr_assert_eq(test_sql_int(path, sql), 300);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"), 2);
}

Test(db, readonly_database_is_edb_naming_file)
{
    const char *path = test_db_path("results.db");
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
    an_run_info info = fx_run_info("cfg");
    int64_t id = 0;
    cr_assert_eq(an_db_run_begin(db, &info, &id, &err), SIM_EDB);
    cr_assert(strncmp(err.msg, p, strlen(p)) == 0, "%s", err.msg);
    an_db_close(db);
    cr_assert_eq(test_sql_int(p, "SELECT count(*) FROM runs"), 0);
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
    int64_t id = fx_run_begin(db, "cfg");
    fx_run_finish(db, id, "done");
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
