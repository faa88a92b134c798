/* analysis/db_claim.c: claims and liveness. Runs left 'running' by an
 * older dtsim (no pid) or by a process that is gone, and claims of a
 * configuration and seed. */
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

Test(db_claim, mark_stale_running)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    fx_run_begin(db, "A");
    fx_run_begin(db, "A");
    int64_t b = fx_run_begin(db, "B");
    int64_t done = fx_run_begin(db, "A");
    fx_run_finish(db, done, "done");
    /* rows with a pid are an_db_orphans_mark's: this process is alive */
    cr_assert_eq(an_db_mark_stale_running(db, "A", &err), 0, "%s", err.msg);
    /* rows of an older dtsim have no pid */
    cr_assert_eq(sqlite3_exec(an_db_sqlite(db), "UPDATE runs SET pid = NULL", NULL, NULL,
                              NULL), SQLITE_OK);
    cr_assert_eq(an_db_mark_stale_running(db, "A", &err), 2, "%s", err.msg);
    cr_assert_eq(an_db_mark_stale_running(db, "A", &err), 0);
    an_db_close(db);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE config = 'A'"
                                    " AND status = 'failed' AND finished_at IS NOT NULL"), 2);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM runs WHERE id = %lld"
                              " AND status = 'running'", (long long)b);
    cr_assert_eq(test_sql_int(path, sql), 1);
}

Test(db_claim, runs_whose_process_is_gone_are_failed_on_open)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    int64_t mine = fx_run_begin(db, "A");
    int64_t gone = fx_run_begin(db, "B");
    int64_t elsewhere = fx_run_begin(db, "C");
    int64_t finished = fx_run_begin(db, "D");
    fx_run_finish(db, finished, "done");
    char host[256] = "";
    gethostname(host, sizeof host);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM runs WHERE pid = %lld AND host = '%s'",
             (long long)getpid(), host);
    cr_assert_eq(test_sql_int(path, sql), 4, "every run records this process and host");
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
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'running'"), 3);

    /* a writable open marks it failed, with why */
    db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);
    snprintf(sql, sizeof sql, "SELECT status = 'failed' AND finished_at IS NOT NULL"
                              " FROM runs WHERE id = %lld", (long long)gone);
    cr_assert_eq(test_sql_int(path, sql), 1);
    char text[512], want[512];
    snprintf(sql, sizeof sql, "SELECT error FROM runs WHERE id = %lld", (long long)gone);
    test_sql_text(path, sql, text, sizeof text);
    snprintf(want, sizeof want, "interrupted: its process %lld on %s ended without finishing"
                                " the run", (long long)dead, host);
    cr_assert_str_eq(text, want);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'running'"), 2);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
}

Test(db_claim, a_claim_begins_only_an_unclaimed_config_and_seed)
{
    const char *path = test_db_path("results.db");
    sim_err err = {0};
    an_db *a = an_db_open(path, &err), *b = an_db_open(path, &err);
    cr_assert(a && b, "%s", err.msg);
    an_run_info info = fx_run_info("A");
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
    an_run_info plain = fx_run_info("A");
    int64_t again = 0;
    cr_assert_eq(an_db_run_begin(b, &plain, &again, &err), 0, "%s", err.msg);
    fx_run_finish(b, again, "done");
    cr_assert_eq(an_db_run_begin(b, &plain, &other, &err), AN_DB_CLAIMED);
    cr_assert_eq(other, again);
    /* without a claim the same config runs again (dtsim run) */
    cr_assert_eq(an_db_run_begin(a, &plain, &other, &err), 0);
    an_db_close(a);
    an_db_close(b);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs"), 4);
}
