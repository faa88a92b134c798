/* analysis/db_merge.c: merging another database (MPI sweep shards): rows
 * copied with new ids, older sources, what is skipped, and the errors. */
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

Test(db_merge, merge_copies_series_and_accepts_older_sources)
{
    const char *dir = test_tmpdir();
    char main_path[4096], new_src[4096], old_src[4096];
    snprintf(main_path, sizeof main_path, "%s/main.db", dir);
    snprintf(new_src, sizeof new_src, "%s/new.db", dir);
    snprintf(old_src, sizeof old_src, "%s/old.db", dir);
    sim_err err = {0};
    an_db *src = an_db_open(new_src, &err);
    cr_assert_not_null(src, "%s", err.msg);
    int64_t id = fx_run_begin(src, "cfg-new");
    for (int i = 0; i < 5; i++) {
        an_series_row r = fx_series_at(i);
        cr_assert_eq(an_db_series(src, id, &r, &err), 0);
    }
    cr_assert_eq(an_db_run_fail_message(src, id, "why", &err), 0);
    an_db_close(src);
    test_sql_exec(old_src, fx_old_schema);

    an_db *db = an_db_open(main_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int copied = 0;
    cr_assert_eq(an_db_merge(db, new_src, &copied, &err), 0, "%s", err.msg);
    cr_assert_eq(copied, 1);
    cr_assert_eq(an_db_merge(db, old_src, &copied, &err), 0, "%s", err.msg);
    cr_assert_eq(copied, 1);
    an_db_close(db);
    cr_assert_eq(test_sql_int(main_path, "SELECT count(*) FROM runs"), 2);
    cr_assert_eq(test_sql_int(main_path, "SELECT count(*) FROM series WHERE run_id = 1"), 5);
    cr_assert_eq(test_sql_int(main_path, "SELECT count(*) FROM series WHERE worker IS NULL"), 2);
    char text[32];
    test_sql_text(main_path, "SELECT error FROM runs WHERE id = 1", text, sizeof text);
    cr_assert_str_eq(text, "why");
    cr_assert_eq(test_sql_int(main_path, "SELECT count(*) FROM runs WHERE id = 2 AND error IS NULL"
                                         " AND name = 'old'"), 1);
    cr_assert_eq(test_sql_int(main_path, "SELECT count(*) FROM metrics WHERE run_id = 2"), 1);
}

/* A done or diverged config that is done in the destination is skipped; a
 * run still 'running' comes over as 'failed' (its process is not ours); a
 * failed one comes over as it is. */
Test(db_merge, done_configs_are_skipped_and_running_ones_fail)
{
    const char *dir = test_tmpdir();
    char dst_path[4096], src_path[4096];
    snprintf(dst_path, sizeof dst_path, "%s/main.db", dir);
    snprintf(src_path, sizeof src_path, "%s/shard.db", dir);
    sim_err err = {0};
    an_db *src = an_db_open(src_path, &err);
    cr_assert_not_null(src, "%s", err.msg);
    fx_run_finish(src, fx_run_begin(src, "A"), "done");
    fx_run_finish(src, fx_run_begin(src, "B"), "diverged");
    int64_t running = fx_run_begin(src, "C");
    an_metric_row m = fx_metric_at(3);
    cr_assert_eq(an_db_metric(src, running, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(an_db_run_fail_message(src, fx_run_begin(src, "D"), "boom", &err), 0);
    an_db_close(src);

    an_db *db = an_db_open(dst_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    fx_run_finish(db, fx_run_begin(db, "A"), "done");
    int copied = -1;
    cr_assert_eq(an_db_merge(db, src_path, &copied, &err), 0, "%s", err.msg);
    cr_assert_eq(copied, 3);
    /* merging the same shard again copies what is not done only */
    cr_assert_eq(an_db_merge(db, src_path, &copied, &err), 0, "%s", err.msg);
    cr_assert_eq(copied, 2);
    an_db_close(db);
    cr_assert_eq(test_sql_int(dst_path, "SELECT count(*) FROM runs WHERE config = 'A'"), 1);
    cr_assert_eq(test_sql_int(dst_path, "SELECT count(*) FROM runs WHERE config = 'B'"
                                        " AND status = 'diverged'"), 1);
    cr_assert_eq(test_sql_int(dst_path, "SELECT count(*) FROM runs WHERE config = 'C'"
                                        " AND status = 'failed' AND pid IS NULL"), 2);
    cr_assert_eq(test_sql_int(dst_path, "SELECT count(*) FROM runs WHERE config = 'D'"
                                        " AND status = 'failed' AND error = 'boom'"), 2);
    /* rows follow their run to its new id; params of every copied run */
    cr_assert_eq(test_sql_int(dst_path, "SELECT count(*) FROM metrics JOIN runs"
                                        " ON runs.id = metrics.run_id WHERE config = 'C'"), 2);
    cr_assert_eq(test_sql_int(dst_path, "SELECT count(*) FROM params"), 3 * 6);
}

/* Every refusal writes nothing and copies nothing. */
Test(db_merge, a_bad_source_is_refused_naming_it)
{
    const char *dir = test_tmpdir();
    char dst_path[4096], missing[4096], other[4096];
    snprintf(dst_path, sizeof dst_path, "%s/main.db", dir);
    snprintf(missing, sizeof missing, "%s/none.db", dir);
    snprintf(other, sizeof other, "%s/other.db", dir);
    test_sql_exec(other, "CREATE TABLE foo(x INTEGER)");
    sim_err err = {0};
    an_db *db = an_db_open(dst_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    fx_run_begin(db, "A");
    int copied = -1;

    cr_assert_eq(an_db_merge(db, dst_path, &copied, &err), SIM_EUSAGE);
    cr_assert_eq(copied, 0);
    char want[8192];
    snprintf(want, sizeof want, "%s: cannot merge a database into itself", dst_path);
    cr_assert_str_eq(err.msg, want);

    sim_err_clear(&err);
    cr_assert_eq(an_db_merge(db, missing, &copied, &err), SIM_EDB);
    cr_assert(strncmp(err.msg, missing, strlen(missing)) == 0, "%s", err.msg);
    cr_assert_eq(access(missing, F_OK), -1, "merging must not create the source");

    sim_err_clear(&err);
    cr_assert_eq(an_db_merge(db, other, &copied, &err), SIM_EDB);
    snprintf(want, sizeof want, "%s: not a dtsim results database (", other);
    cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);

    an_db *ro = an_db_open_readonly(dst_path, &err);
    cr_assert_not_null(ro, "%s", err.msg);
    sim_err_clear(&err);
    cr_assert_eq(an_db_merge(ro, other, &copied, &err), SIM_EDB);
    cr_assert(strstr(err.msg, "read-only"), "%s", err.msg);
    an_db_close(ro);
    an_db_close(db);
    cr_assert_eq(test_sql_int(dst_path, "SELECT count(*) FROM runs"), 1);
}
