/* analysis/db_schema.c: the schema. A fresh file gets the schema of
 * 0b47236 exactly; databases written by older dtsims open (read-only as they
 * are, for writing with the newer tables and columns added); files that are
 * not ours, of a newer schema or corrupt are refused naming the file. */
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
#include "analysis/report.h"
#include "tests/analysis/fixtures.h"
#include "tests/common.h"

/* Overwrites the staleness table's root page with garbage. */
static void corrupt_staleness(const char *path)
{
    int64_t page = test_sql_int(path, "SELECT rootpage FROM sqlite_master"
                                      " WHERE name = 'staleness'");
    int64_t size = test_sql_int(path, "PRAGMA page_size");
    cr_assert_gt(page, 1);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, (long)((page - 1) * size), SEEK_SET), 0);
    for (int64_t i = 0; i < size; i++)
        fputc((int)(0x5a ^ (i * 7)), f);
    fclose(f);
}

Test(db_schema, not_a_dtsim_database)
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
    test_sql_exec(other, "CREATE TABLE foo(x INTEGER); INSERT INTO foo VALUES(1);");
    db = an_db_open(other, &err);
    cr_assert_null(db);
    cr_assert_eq(err.code, SIM_EDB);
    snprintf(want, sizeof want, "%s: not a dtsim results database (", other);
    cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
    /* and it was left alone */
    cr_assert_eq(test_sql_int(other, "SELECT count(*) FROM sqlite_master"), 1);
}

Test(db_schema, newer_schema_refused)
{
    const char *path = test_db_path("results.db");
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    sim_err err = {0};
    an_db *db = an_db_open(p, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);
    test_sql_exec(p, "UPDATE meta SET value = '3' WHERE key = 'schema_version'");
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

Test(db_schema, older_database_gains_the_new_tables)
{
    const char *path = test_db_path("results.db");
    test_sql_exec(path, fx_old_schema);
    sim_err err = {0};
    /* read-only: opens as it is, nothing added */
    an_db *ro = an_db_open_readonly(path, &err);
    cr_assert_not_null(ro, "%s", err.msg);
    an_db_close(ro);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'series'"), 0);
    /* for writing: the series table, its index and runs.error appear */
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t id = fx_run_begin(db, "c1");
    cr_assert_eq(id, 2);
    an_series_row r = fx_series_at(3);
    cr_assert_eq(an_db_series(db, id, &r, &err), 0);
    cr_assert_eq(an_db_run_fail_message(db, id, "boom", &err), 0, "%s", err.msg);
    an_db_close(db);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                                    " AND name IN ('series', 'labels', 'links', 'faults')"), 4);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM sqlite_master"
                                    " WHERE name = 'series_run_name'"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE id = 1 AND error IS NULL"
                                    " AND status = 'done'"), 1);
    char text[32];
    test_sql_text(path, "SELECT error FROM runs WHERE id = 2", text, sizeof text);
    cr_assert_str_eq(text, "boom");
    /* runs.pid and runs.host appear too, filled for the new run */
    cr_assert_eq(test_sql_int(path, "SELECT pid FROM runs WHERE id = 2"), (int64_t)getpid());
    cr_assert_eq(test_sql_int(path, "SELECT pid FROM runs WHERE id = 1"), -1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM series"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM metrics"), 1);
    /* opening again changes nothing */
    db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM pragma_table_info('runs')"
                                    " WHERE name = 'error'"), 1);
    /* params gained num: NULL for the old rows */
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM pragma_table_info('params')"
                                    " WHERE name = 'num'"), 1);
}

Test(db_schema, a_corrupt_database_is_refused_naming_the_file)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t id = fx_run_begin(db, "A");
    int64_t st[3] = {0, 4, 9};
    an_run_summary sum = fx_summary_done();
    cr_assert_eq(an_db_run_finish(db, id, &sum, NULL, 0, st, 3, &err), 0, "%s", err.msg);
    an_db_close(db);
    test_sql_exec(path, "PRAGMA journal_mode=DELETE");
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

/* ---- the schema of commit 0b47236, before the database code was split ---- */

/* Its schema text as it was, byte for byte. */
static const char schema_0b47236[] =
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

/* One row in every table, as that dtsim wrote them. */
static const char rows_0b47236[] =
    "INSERT INTO runs(name, algorithm, status, seed, n_workers, config, started_at,"
    " finished_at, version, sim_time, iterations, wall_seconds, bytes_sent,"
    " final_train_loss, final_test_accuracy, mean_staleness, idle_fraction,"
    " consensus_distance, error, pid, host) VALUES('old', 'allreduce_sgd', 'done', 7, 2,"
    " 'c0', '2026-01-02T03:04:05Z', '2026-01-02T03:04:06Z', '0.1.0', 2.0, 20, 0.5, 4000,"
    " 0.25, 0.9, NULL, 0.125, 0.0, NULL, 1, 'h');"
    "INSERT INTO params VALUES(1, 'experiment.target_accuracy', '0.8', 0.8);"
    "INSERT INTO params VALUES(1, 'workers.count', '2', 2);"
    "INSERT INTO metrics VALUES(1, 1.0, 10, 0.5, 320, 0.5, 0.6, 0.7, 0.0, 2000);"
    "INSERT INTO metrics VALUES(1, 2.0, 20, 1.0, 640, 0.25, 0.3, 0.9, 0.0, 4000);"
    "INSERT INTO workers VALUES(1, 0, 20, 1.5, 0.25, 2000, NULL, 0);"
    "INSERT INTO staleness VALUES(1, 0, 20);"
    "INSERT INTO labels VALUES(1, 0, 3, 100);"
    "INSERT INTO links VALUES(1, 0, 0, 2, 4000);"
    "INSERT INTO series VALUES(1, 1.0, 10, NULL, 'batch', 32);"
    "INSERT INTO faults VALUES(1, 1.5, 'crash', '1', NULL);";

/* What the schema gained since 0b47236, as the statements that turn that
 * schema into today's: a new database has exactly that schema, and a
 * database of 0b47236 gains exactly these the first time it is opened for
 * writing. */
static const char schema_added_since_0b47236[] =
    "ALTER TABLE runs ADD COLUMN commit_id TEXT;"
    "ALTER TABLE runs ADD COLUMN blas TEXT;"
    "ALTER TABLE runs ADD COLUMN cpu TEXT;"
    "ALTER TABLE runs ADD COLUMN threads INTEGER;"
    /* the timeline tables ([experiment] trace) */
    "CREATE TABLE IF NOT EXISTS spans(run_id INTEGER, worker INTEGER, state TEXT,"
    " start REAL, end REAL);"
    "CREATE TABLE IF NOT EXISTS link_load(run_id INTEGER, link INTEGER, sim_time REAL,"
    " bytes REAL);"
    "CREATE INDEX IF NOT EXISTS spans_run ON spans(run_id);"
    "CREATE INDEX IF NOT EXISTS link_load_run ON link_load(run_id);"
    /* every worker's staleness distribution */
    "CREATE TABLE IF NOT EXISTS staleness_workers(run_id INTEGER, worker INTEGER,"
    " staleness INTEGER, count INTEGER);"
    "CREATE INDEX IF NOT EXISTS staleness_workers_run ON staleness_workers(run_id);";

/* Every object of the file: type, name, table and SQL, sorted. */
static void schema_dump(const char *path, char *out, size_t size)
{
    test_sql_text(path, "SELECT group_concat(line, char(10)) FROM (SELECT type || ' ' || name"
                        " || ' ' || tbl_name || ' ' || ifnull(sql, '') AS line"
                        " FROM sqlite_master ORDER BY type, name)", out, size);
}

Test(db_schema, a_new_database_has_the_schema_of_0b47236_and_its_additions)
{
    char old_path[4096], old_dump[8192], new_dump[8192];
    snprintf(old_path, sizeof old_path, "%s", test_db_path("old.db"));
    test_sql_exec(old_path, schema_0b47236);
    test_sql_exec(old_path, schema_added_since_0b47236);
    const char *path = test_db_path("new.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);
    schema_dump(old_path, old_dump, sizeof old_dump);
    schema_dump(path, new_dump, sizeof new_dump);
    cr_assert_str_eq(new_dump, old_dump);
    cr_assert(strstr(new_dump, "table faults faults CREATE TABLE faults("), "%s", new_dump);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM meta"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT value FROM meta WHERE key = 'schema_version'"),
                 AN_DB_SCHEMA_VERSION);
}

/* A database written by 0b47236 opens read-only and for writing, unchanged
 * but for the rows a new run appends and the tables and columns added
 * since, and reports as before. */
Test(db_schema, a_database_of_0b47236_opens_as_before)
{
    char path[4096], before[8192], after[8192];
    snprintf(path, sizeof path, "%s", test_db_path("old.db"));
    test_sql_exec(path, schema_0b47236);
    test_sql_exec(path, rows_0b47236);
    sim_err err = {0};

    an_db *ro = an_db_open_readonly(path, &err);
    cr_assert_not_null(ro, "%s", err.msg);
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8};
    an_report rep;
    cr_assert_eq(an_report_build(ro, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_eq(rep.n_rows, 1);
    cr_assert_str_eq(rep.rows[0].status, "done");
    cr_assert_eq(rep.rows[0].bytes_sent, 4000);
    cr_assert_float_eq(rep.rows[0].time_to_target, 2.0, 1e-15);
    cr_assert_eq(rep.rows[0].baseline_id, 1);
    an_report_release(&rep);
    an_db_close(ro);

    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t found = 0;
    cr_assert_eq(an_db_find_done(db, "c0", &found, &err), 0, "%s", err.msg);
    cr_assert_eq(found, 1);
    int64_t id = fx_run_begin(db, "c1");
    cr_assert_eq(id, 2);
    fx_run_finish(db, id, "done");
    an_db_close(db);
    schema_dump(path, after, sizeof after);
    char want_path[4096];
    snprintf(want_path, sizeof want_path, "%s", test_db_path("want.db"));
    test_sql_exec(want_path, schema_0b47236);
    test_sql_exec(want_path, schema_added_since_0b47236);
    schema_dump(want_path, before, sizeof before);
    cr_assert_str_eq(after, before);
    const char *const tables[] = {"params", "metrics", "workers", "staleness", "labels",
                                  "links", "series", "faults"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE run_id = 1", tables[i]);
        cr_assert_geq(test_sql_int(path, sql), 1, "%s", tables[i]);
    }
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"), 2);
    /* the old run's provenance is unknown, not invented */
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE id = 1 AND blas IS NULL"
                                    " AND threads IS NULL AND commit_id IS NULL"), 1);
}
