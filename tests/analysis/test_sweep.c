/* `dtsim sweep`: grid parsing and expansion, validation before anything
 * runs, resume (a second sweep adds nothing; a sweep killed mid-run is
 * completed with the killed run marked failed), --jobs giving the same
 * metric rows as one job, a forked job killed, the shard merge of the MPI
 * sweep, and the command line. Experiments are tiny (blobs(3, 5, 600),
 * 4 workers, 20 iterations) so that each sweep takes well under a second. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/db.h"
#include "analysis/sweep.h"
#include "experiment/experiment.h"
#include "tests/common.h"

static const char *tiny_ini = "[experiment]\n"
                              "name = tiny\n"
                              "max_epochs = 0\n"
                              "max_iterations = 20\n"
                              "eval_every = 5\n"
                              "[workers]\n"
                              "count = 4\n"
                              "compute = constant(1ms)\n"
                              "[algorithm]\n"
                              "name = allreduce_sgd\n"
                              "[workload]\n"
                              "model = softmax\n"
                              "dataset = blobs(3, 5, 600)\n";

static const char *grid_2x2[] = {"algorithm.name=allreduce_sgd,asgd",
                                 "workers.compute=constant(1ms), exponential(1ms)"};

/* What the run function does besides running: kill its own process at
 * the first progress tick of the config with this index (-1: never). */
typedef struct run_ctx {
    int kill_at;
    int block;      /* 1: every run writes its pid to `fd` and never ends */
    int fd;
} run_ctx;

static void kill_tick(void *ctx, const xp_progress *p)
{
    (void)ctx;
    (void)p;
    raise(SIGKILL);
}

/* After the run row exists: tell the test this process's id, then wait
 * to be killed. */
static void block_tick(void *ctx, const xp_progress *p)
{
    (void)p;
    const run_ctx *rc = ctx;
    int32_t self = (int32_t)getpid();
    if (write(rc->fd, &self, sizeof self) != (ssize_t)sizeof self)
        _exit(101);
    for (;;)
        pause();
}

static int run_one(void *ctx, const cfg_config *cfg, an_db *db, an_sweep_job *job,
                   an_sweep_outcome *out, sim_err *err)
{
    (void)job;
    run_ctx *rc = ctx;
    int index = -1;
    /* the seed and grid values identify the config: index by canonical order */
    if (rc && rc->kill_at >= 0) {
        int64_t n = 0;
        sqlite3_stmt *s = NULL;
        sqlite3_prepare_v2(an_db_sqlite(db), "SELECT count(*) FROM runs", -1, &s, NULL);
        if (sqlite3_step(s) == SQLITE_ROW)
            n = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        index = (int)n;
    }
    xp_run_opts o = {.db = db};
    if (rc && rc->kill_at >= 0 && index == rc->kill_at) {
        o.on_progress = kill_tick;
        o.progress_interval = 0;
    }
    if (rc && rc->block) {
        o.on_progress = block_tick;
        o.ctx = rc;
        o.progress_interval = 0;
    }
    xp_run_result r;
    int ret = xp_experiment_run(cfg, &o, &r, err);
    if (ret < 0)
        return ret;
    out->run_id = r.run_id;
    snprintf(out->status, sizeof out->status, "%s", r.status);
    out->sim_time = r.sim_time;
    out->final_train_loss = r.final_train_loss;
    out->final_test_accuracy = r.final_test_accuracy;
    return 0;
}

static an_sweep_opts sweep_opts(const char *dir, const char *db, run_ctx *ctx)
{
    static char ini[4096], dbp[4][4096];
    static int next;
    char *path = dbp[next++ % 4];  /* callers hold up to four at once */
    snprintf(ini, sizeof ini, "%s", test_write_file(dir, "tiny.ini", tiny_ini));
    snprintf(path, sizeof dbp[0], "%s/%s", dir, db);
    an_sweep_opts o = {.experiment = ini, .schema = xp_experiment_schema(), .grids = grid_2x2,
                       .n_grids = 2, .seeds = "1-2", .jobs = 1, .db_path = path,
                       .run = run_one, .run_ctx = ctx};
    return o;
}

static int64_t query_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *s = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK, "%s", sql);
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW, "%s", sql);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

static void expect_integrity_ok(const char *path)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *s = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
    sqlite3_close(db);
}

/* Every metrics row with its run's config, as one text (to compare DBs). */
static char *metrics_dump(const char *path)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *s = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT r.config, m.sim_time, m.iteration, m.epoch,"
                                    " m.samples, m.train_loss, m.test_loss, m.test_accuracy,"
                                    " m.consensus_distance, m.bytes_sent FROM metrics m"
                                    " JOIN runs r ON r.id = m.run_id WHERE r.status = 'done'"
                                    " ORDER BY r.config, m.rowid",
                                    -1, &s, NULL),
                 SQLITE_OK);
    size_t len = 0, cap = 1 << 16;
    char *out = malloc(cap);
    cr_assert_not_null(out);
    out[0] = '\0';
    while (sqlite3_step(s) == SQLITE_ROW) {
        for (int c = 0; c < 10; c++) {
            const char *t = (const char *)sqlite3_column_text(s, c);
            size_t need = len + (t ? strlen(t) : 4) + 2;
            if (need > cap) {
                while (cap < need)
                    cap *= 2;
                out = realloc(out, cap);
                cr_assert_not_null(out);
            }
            len += (size_t)sprintf(out + len, "%s|", t ? t : "NULL");
        }
        out[len++] = '\n';
        out[len] = '\0';
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return out;
}

Test(sweep, split_values_at_depth_zero)
{
    char **v = NULL;
    sim_err err = {0};
    int n = an_sweep_split_values("constant(1ms), lognormal(1ms, 0.5),torus(4, 4)", &v, &err);
    cr_assert_eq(n, 3, "%s", err.msg);
    cr_assert_str_eq(v[0], "constant(1ms)");
    cr_assert_str_eq(v[1], "lognormal(1ms, 0.5)");
    cr_assert_str_eq(v[2], "torus(4, 4)");
    an_sweep_values_free(v, n);
    cr_assert_eq(an_sweep_split_values("8", &v, &err), 1);
    cr_assert_str_eq(v[0], "8");
    an_sweep_values_free(v, 1);
    cr_assert_eq(an_sweep_split_values("a,,b", &v, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "empty value"), "%s", err.msg);
    cr_assert_eq(an_sweep_split_values("f(1, 2", &v, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "unbalanced"), "%s", err.msg);
    cr_assert_eq(an_sweep_split_values("f(1)), 2", &v, &err), SIM_EUSAGE);
}

Test(sweep, parse_seeds)
{
    uint64_t lo = 0, hi = 0;
    sim_err err = {0};
    cr_assert_eq(an_sweep_parse_seeds("3-7", &lo, &hi, &err), 0);
    cr_assert_eq(lo, 3);
    cr_assert_eq(hi, 7);
    cr_assert_eq(an_sweep_parse_seeds("5", &lo, &hi, &err), 0);
    cr_assert_eq(lo, 5);
    cr_assert_eq(hi, 5);
    cr_assert_eq(an_sweep_parse_seeds("7-3", &lo, &hi, &err), SIM_EUSAGE);
    cr_assert_eq(an_sweep_parse_seeds("x", &lo, &hi, &err), SIM_EUSAGE);
    cr_assert_eq(an_sweep_parse_seeds("1-", &lo, &hi, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--seeds '1-'"), "%s", err.msg);
}

Test(sweep, plan_is_the_product_in_order)
{
    const char *dir = test_tmpdir();
    an_sweep_opts o = sweep_opts(dir, "r.db", NULL);
    const char *sets[] = {"algorithm.lr=0.05"};
    o.sets = sets;
    o.n_sets = 1;
    an_sweep_plan plan;
    sim_err err = {0};
    cr_assert_eq(an_sweep_plan_build(&o, &plan, &err), 0, "%s", err.msg);
    cr_assert_eq(plan.n_points, 8);
    cr_assert_str_eq(plan.points[0].label,
                     "algorithm.name=allreduce_sgd workers.compute=constant(1ms) "
                     "experiment.seed=1");
    cr_assert_str_eq(plan.points[1].label,
                     "algorithm.name=allreduce_sgd workers.compute=constant(1ms) "
                     "experiment.seed=2");
    cr_assert_str_eq(plan.points[2].label,
                     "algorithm.name=allreduce_sgd workers.compute=exponential(1ms) "
                     "experiment.seed=1");
    cr_assert_str_eq(plan.points[7].label,
                     "algorithm.name=asgd workers.compute=exponential(1ms) "
                     "experiment.seed=2");
    cr_assert_str_eq(plan.points[0].overrides[0], "algorithm.lr=0.05");
    for (int i = 0; i < 8; i++) {
        cr_assert(strstr(plan.points[i].canonical, "lr = 0.05"), "%s",
                  plan.points[i].canonical);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(plan.points[i].canonical, plan.points[j].canonical);
    }
    an_sweep_plan_release(&plan);
}

/* A method comparison in one sweep: a scoped --set reaches only its
 * method, and a scoped --grid axis does not repeat the other methods. */
Test(sweep, method_scoped_sets_and_grids)
{
    const char *dir = test_tmpdir();
    an_sweep_opts o = sweep_opts(dir, "r.db", NULL);
    const char *names[] = {"algorithm.name=allreduce_sgd,local_sgd,dpsgd"};
    const char *sets[] = {"local_sgd:algorithm.local_steps=8"};
    o.grids = names;
    o.n_grids = 1;
    o.sets = sets;
    o.n_sets = 1;
    o.seeds = NULL;
    an_sweep_plan plan;
    sim_err err = {0};
    cr_assert_eq(an_sweep_plan_build(&o, &plan, &err), 0, "%s", err.msg);
    cr_assert_eq(plan.n_points, 3);
    cr_assert_null(strstr(plan.points[0].canonical, "local_steps"));
    cr_assert(strstr(plan.points[1].canonical, "local_steps = 8"), "%s",
              plan.points[1].canonical);
    an_sweep_plan_release(&plan);

    const char *axes[] = {"algorithm.name=allreduce_sgd,local_sgd",
                          "local_sgd:algorithm.local_steps=2,8"};
    o.grids = axes;
    o.n_grids = 2;
    o.n_sets = 0;
    cr_assert_eq(an_sweep_plan_build(&o, &plan, &err), 0, "%s", err.msg);
    cr_assert_eq(plan.n_points, 3);
    cr_assert_str_eq(plan.points[0].label, "algorithm.name=allreduce_sgd "
                                           "local_sgd:algorithm.local_steps=2");
    cr_assert_str_eq(plan.points[2].label, "algorithm.name=local_sgd "
                                           "local_sgd:algorithm.local_steps=8");
    an_sweep_plan_release(&plan);

    const char *typo[] = {"algorithm.name=allreduce_sgd,local_sgd",
                          "local_sdg:algorithm.local_steps=2,8"};
    o.grids = typo;
    cr_assert_lt(an_sweep_plan_build(&o, &plan, &err), 0);
    cr_assert(strstr(err.msg, "unknown method 'local_sdg'"), "%s", err.msg);
}

Test(sweep, invalid_grid_is_a_usage_or_config_error_before_anything_runs)
{
    const char *dir = test_tmpdir();
    an_sweep_opts o = sweep_opts(dir, "r.db", NULL);
    an_sweep_summary sum;
    sim_err err = {0};

    const char *bad_value[] = {"workers.count=4,many"};
    o.grids = bad_value;
    o.n_grids = 1;
    cr_assert_eq(an_sweep_run(&o, &sum, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "--grid workers.count=many"), "%s", err.msg);
    cr_assert(access(o.db_path, F_OK) != 0, "nothing may run (or be created)");

    /* a method key that only one of the grid's methods has */
    const char *combo[] = {"algorithm.name=asgd,allreduce_sgd"};
    const char *sets[] = {"algorithm.staleness_lr=inverse"};
    o.grids = combo;
    o.sets = sets;
    o.n_sets = 1;
    cr_assert_eq(an_sweep_run(&o, &sum, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "staleness_lr"), "%s", err.msg);
    cr_assert(access(o.db_path, F_OK) != 0, "nothing may run (or be created)");

    const char *no_key[] = {"workers=4,8"};
    o.grids = no_key;
    o.n_sets = 0;
    cr_assert_eq(an_sweep_run(&o, &sum, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "SECTION.KEY"), "%s", err.msg);

    const char *twice[] = {"workers.count=4", "workers.count=8"};
    o.grids = twice;
    o.n_grids = 2;
    cr_assert_eq(an_sweep_run(&o, &sum, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "given twice"), "%s", err.msg);

    /* a key checked by the run itself once: every point's value is checked
     * before the first run (issue 35 item 12) */
    const char *trace_grid[] = {"experiment.trace_max_events=100,0"};
    o.grids = trace_grid;
    o.n_grids = 1;
    cr_assert_eq(an_sweep_run(&o, &sum, &err), SIM_ECONFIG);
    cr_assert_str_eq(err.msg, "--grid experiment.trace_max_events=0: expected a number of rows"
                              " >= 1, got 0");
    cr_assert(access(o.db_path, F_OK) != 0, "nothing may run (or be created)");

    const char *seed_grid[] = {"experiment.seed=1,2"};
    o.grids = seed_grid;
    o.n_grids = 1;
    cr_assert_eq(an_sweep_run(&o, &sum, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--seeds"), "%s", err.msg);
}

Test(sweep, two_by_two_by_two_lands_8_runs_and_again_none)
{
    const char *dir = test_tmpdir();
    an_sweep_opts o = sweep_opts(dir, "r.db", NULL);
    an_sweep_summary sum;
    sim_err err = {0};
    cr_assert_eq(an_sweep_run(&o, &sum, &err), 0, "%s", err.msg);
    cr_assert_eq(sum.total, 8);
    cr_assert_eq(sum.ran, 8);
    cr_assert_eq(sum.skipped, 0);
    cr_assert_eq(sum.failed, 0);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE status = 'done'"), 8);
    cr_assert_eq(query_int(o.db_path, "SELECT count(DISTINCT config) FROM runs"), 8);
    cr_assert_eq(query_int(o.db_path, "SELECT count(DISTINCT seed) FROM runs"), 2);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE algorithm = 'asgd'"), 4);

    cr_assert_eq(an_sweep_run(&o, &sum, &err), 0, "%s", err.msg);
    cr_assert_eq(sum.ran, 0);
    cr_assert_eq(sum.skipped, 8);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs"), 8);
}

Test(sweep, killed_midway_resumes_with_nothing_lost)
{
    const char *dir = test_tmpdir();
    run_ctx kill = {.kill_at = 3};
    an_sweep_opts o = sweep_opts(dir, "r.db", &kill);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        sim_err err = {0};
        an_sweep_run(&o, NULL, &err);
        _exit(0);  /* not reached: the fourth run kills the process */
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %d", st);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE status = 'done'"), 3);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);

    /* the resumed sweep: the stale row is marked failed and redone */
    run_ctx none = {.kill_at = -1};
    o.run_ctx = &none;
    an_sweep_summary sum;
    sim_err err = {0};
    cr_assert_eq(an_sweep_run(&o, &sum, &err), 0, "%s", err.msg);
    cr_assert_eq(sum.skipped, 3);
    cr_assert_eq(sum.ran, 5);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE status = 'done'"), 8);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE status = 'failed'"), 1);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE status = 'running'"), 0);
    cr_assert_eq(query_int(o.db_path, "SELECT count(DISTINCT config) FROM runs"
                                      " WHERE status = 'done'"), 8);
    /* the failed run is the killed config, now also done once */
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs f JOIN runs d"
                                      " ON d.config = f.config AND d.status = 'done'"
                                      " WHERE f.status = 'failed'"), 1);
    expect_integrity_ok(o.db_path);
}

Test(sweep, jobs_give_the_same_metric_rows)
{
    const char *dir = test_tmpdir();
    an_sweep_opts one = sweep_opts(dir, "one.db", NULL);
    an_sweep_summary sum;
    sim_err err = {0};
    cr_assert_eq(an_sweep_run(&one, &sum, &err), 0, "%s", err.msg);
    char *a = metrics_dump(one.db_path);

    an_sweep_opts two = sweep_opts(dir, "two.db", NULL);
    two.jobs = 2;
    cr_assert_eq(an_sweep_run(&two, &sum, &err), 0, "%s", err.msg);
    cr_assert_eq(sum.ran, 8);
    cr_assert_eq(query_int(two.db_path, "SELECT count(*) FROM runs WHERE status = 'done'"), 8);
    char *b = metrics_dump(two.db_path);
    cr_assert_gt(strlen(a), 1000);
    cr_assert_str_eq(a, b);
    free(a);
    free(b);
    expect_integrity_ok(two.db_path);
}

typedef struct seen {
    int results, failed, skipped, status_calls;
    int index_seen[8];
} seen;

static void on_result(void *ctx, const an_sweep_result *r)
{
    seen *s = ctx;
    s->results++;
    s->failed += r->code != 0;
    s->skipped += r->skipped;
    if (r->index >= 0 && r->index < 8)
        s->index_seen[r->index]++;
}

static void on_status(void *ctx, const an_sweep_status *st)
{
    seen *s = ctx;
    s->status_calls++;
    cr_assert_leq(st->finished, st->total);
    cr_assert_leq(st->running, 2);
}

Test(sweep, a_killed_job_is_failed_and_redone)
{
    const char *dir = test_tmpdir();
    run_ctx kill = {.kill_at = 0};  /* the first run of a fresh database */
    an_sweep_opts o = sweep_opts(dir, "r.db", &kill);
    o.jobs = 2;
    seen s = {0};
    o.on_result = on_result;
    o.on_status = on_status;
    o.ctx = &s;
    an_sweep_summary sum;
    sim_err err = {0};
    /* jobs 2 start runs 0 and 1 at once: both may see count 0, so one or two die */
    int ret = an_sweep_run(&o, &sum, &err);
    cr_assert_eq(ret, SIM_EINTERNAL);
    cr_assert(strstr(err.msg, "killed by signal 9"), "%s", err.msg);
    cr_assert(sum.failed >= 1 && sum.failed <= 2, "failed %d", sum.failed);
    cr_assert_eq(sum.ran + sum.failed, 8);
    cr_assert_eq(s.results, 8);
    cr_assert_eq(s.failed, sum.failed);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(s.index_seen[i], 1, "index %d reported %d times", i, s.index_seen[i]);
    cr_assert_gt(s.status_calls, 0);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE status = 'running'"), 0);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE status = 'failed'"),
                 sum.failed);

    run_ctx none = {.kill_at = -1};
    o.run_ctx = &none;
    o.on_result = NULL;
    o.on_status = NULL;
    int failed = sum.failed;
    cr_assert_eq(an_sweep_run(&o, &sum, &err), 0, "%s", err.msg);
    cr_assert_eq(sum.ran, failed);
    cr_assert_eq(query_int(o.db_path, "SELECT count(DISTINCT config) FROM runs"
                                      " WHERE status = 'done'"), 8);
    expect_integrity_ok(o.db_path);
}

Test(sweep, merge_copies_runs_with_new_ids_and_skips_done_configs)
{
    const char *dir = test_tmpdir();
    an_sweep_opts a = sweep_opts(dir, "a.db", NULL);
    const char *ga[] = {"algorithm.name=allreduce_sgd,asgd"};
    a.grids = ga;
    a.n_grids = 1;
    a.seeds = "1";
    an_sweep_summary sum;
    sim_err err = {0};
    cr_assert_eq(an_sweep_run(&a, &sum, &err), 0, "%s", err.msg);   /* 2 runs */
    an_sweep_opts b = sweep_opts(dir, "b.db", NULL);
    b.grids = ga;
    b.n_grids = 1;
    b.seeds = "1-2";
    cr_assert_eq(an_sweep_run(&b, &sum, &err), 0, "%s", err.msg);   /* 4 runs, 2 as in a */
    /* a run left 'running' in the source */
    an_db *bdb = an_db_open(b.db_path, &err);
    cr_assert_not_null(bdb, "%s", err.msg);
    an_run_info info = {.name = "stale", .algorithm = "asgd", .config = "stale config"};
    int64_t stale = 0;
    cr_assert_eq(an_db_run_begin(bdb, &info, &stale, &err), 0, "%s", err.msg);
    an_db_close(bdb);

    an_db *adb = an_db_open(a.db_path, &err);
    cr_assert_not_null(adb, "%s", err.msg);
    int copied = -1;
    cr_assert_eq(an_db_merge(adb, b.db_path, &copied, &err), 0, "%s", err.msg);
    an_db_close(adb);
    cr_assert_eq(copied, 3);  /* seed 2 twice, and the stale run */
    cr_assert_eq(query_int(a.db_path, "SELECT count(*) FROM runs"), 5);
    cr_assert_eq(query_int(a.db_path, "SELECT count(DISTINCT config) FROM runs"
                                      " WHERE status = 'done'"), 4);
    cr_assert_eq(query_int(a.db_path, "SELECT status = 'failed' FROM runs"
                                      " WHERE name = 'stale'"), 1);
    /* every copied run has its rows: as many metrics/params/workers as in b */
    cr_assert_eq(query_int(a.db_path, "SELECT count(*) FROM metrics"),
                 query_int(b.db_path, "SELECT count(*) FROM metrics WHERE run_id IN"
                                      " (SELECT id FROM runs WHERE seed = 2)") +
                     query_int(b.db_path, "SELECT count(*) FROM metrics WHERE run_id IN"
                                          " (SELECT id FROM runs WHERE seed = 1)"));
    cr_assert_eq(query_int(a.db_path, "SELECT count(*) FROM params p JOIN runs r"
                                      " ON r.id = p.run_id WHERE r.seed = 2"),
                 query_int(b.db_path, "SELECT count(*) FROM params p JOIN runs r"
                                      " ON r.id = p.run_id WHERE r.seed = 2"));
    cr_assert_eq(query_int(a.db_path, "SELECT count(*) FROM workers"), 16);
    expect_integrity_ok(a.db_path);

    /* itself, and a file that is not a dtsim database */
    adb = an_db_open(a.db_path, &err);
    cr_assert_eq(an_db_merge(adb, a.db_path, &copied, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "itself"), "%s", err.msg);
    an_db_close(adb);
    adb = an_db_open(a.db_path, &err);
    const char *junk = test_write_file(dir, "junk.db", "not a database at all");
    cr_assert_eq(an_db_merge(adb, junk, &copied, &err), SIM_EDB);
    cr_assert(strstr(err.msg, "junk.db"), "%s", err.msg);
    an_db_close(adb);
}

/* ---- the command line ---- */

static char out_text[65536];

static int dtsim(const char *dir, const char *args)
{
    const char *exe = getenv("DTSIM_EXE");
    cr_assert_not_null(exe, "DTSIM_EXE not set (run under meson test)");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", dir, exe, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out_text, 1, sizeof out_text - 1, p);
    out_text[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(sweep, command_line)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "tiny.ini", tiny_ini);
    int rc = dtsim(dir, "sweep tiny.ini --grid 'workers.count=2,4' --seeds 1-2 --jobs 2 "
                        "--db s.db");
    cr_assert_eq(rc, 0, "%s", out_text);
    cr_assert(strstr(out_text, "sweep: 4 configurations: 4 run, 0 already done, 0 failed"),
              "%s", out_text);
    cr_assert(strstr(out_text, "workers.count=4 experiment.seed=2"), "%s", out_text);
    rc = dtsim(dir, "sweep tiny.ini --grid 'workers.count=2,4' --seeds 1-2 --db s.db");
    cr_assert_eq(rc, 0, "%s", out_text);
    cr_assert(strstr(out_text, "4 configurations: 0 run, 4 already done"), "%s", out_text);

    cr_assert_eq(dtsim(dir, "sweep tiny.ini --grid 'workers.count=2,x' --db s.db"), 2);
    cr_assert(strstr(out_text, "workers.count=x"), "%s", out_text);
    cr_assert_eq(dtsim(dir, "sweep tiny.ini --grid 'workers.cont=2' --db s.db"), 2);
    cr_assert(strstr(out_text, "cont"), "%s", out_text);
    cr_assert_eq(dtsim(dir, "sweep tiny.ini --seeds 3-1"), 2);
    cr_assert_eq(dtsim(dir, "sweep tiny.ini --jobs 0"), 2);
    cr_assert_eq(dtsim(dir, "sweep"), 2);
    cr_assert_eq(dtsim(dir, "sweep --help"), 0);
    cr_assert(strstr(out_text, "--grid") && strstr(out_text, "mpirun"), "%s", out_text);
    char path[4200];
    snprintf(path, sizeof path, "%s/s.db", dir);
    cr_assert_eq(query_int(path, "SELECT count(*) FROM runs"), 4);
}

/* Two sweeps of the same grid over one database at once (each with two
 * jobs): every configuration is claimed by one of them and run once; the
 * other counts it as skipped. */
Test(sweep, two_concurrent_sweeps_run_each_configuration_once)
{
    const char *dir = test_tmpdir();
    an_sweep_opts o = sweep_opts(dir, "r.db", NULL);
    o.jobs = 2;
    sim_err err = {0};
    an_db *db = an_db_open(o.db_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);
    int go[2];
    cr_assert_eq(pipe(go), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char b;
        if (read(go[0], &b, 1) != 1)
            _exit(100);
        an_sweep_summary s;
        sim_err e = {0};
        int ret = an_sweep_run(&o, &s, &e);
        _exit(ret != 0 || s.ran + s.skipped + s.elsewhere != 8 ? 100 : s.ran);
    }
    cr_assert_eq(write(go[1], "g", 1), 1);
    an_sweep_summary sum;
    int ret = an_sweep_run(&o, &sum, &err);
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cr_assert_eq(ret, 0, "%s", err.msg);
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) <= 8, "child status %d", ws);
    cr_assert_eq(sum.ran + sum.skipped + sum.elsewhere, 8);
    cr_assert_eq(sum.ran + WEXITSTATUS(ws), 8, "ran %d here and %d there", sum.ran,
                 WEXITSTATUS(ws));
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs"), 8);
    cr_assert_eq(query_int(o.db_path, "SELECT count(DISTINCT config) FROM runs"
                                      " WHERE status = 'done'"), 8);
    close(go[0]);
    close(go[1]);
}

/* A configuration in flight in another live process (its row running,
 * its pid alive on this host: here this test's own) is left to it and
 * counted as such, not as "already done" (issue 35 item 13). */
Test(sweep, a_run_in_flight_elsewhere_is_not_counted_as_done)
{
    const char *dir = test_tmpdir();
    an_sweep_opts o = sweep_opts(dir, "r.db", NULL);
    an_sweep_summary sum;
    sim_err err = {0};
    cr_assert_eq(an_sweep_run(&o, &sum, &err), 0, "%s", err.msg);
    cr_assert_eq(sum.ran, 8);
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE runs SET status = 'running', finished_at = NULL, pid = %d"
             " WHERE id = 3", (int)getpid());
    test_sql_exec(o.db_path, sql);
    cr_assert_eq(an_sweep_run(&o, &sum, &err), 0, "%s", err.msg);
    cr_assert_eq(sum.ran, 0);
    cr_assert_eq(sum.skipped, 7);
    cr_assert_eq(sum.elsewhere, 1);
    cr_assert_eq(sum.failed, 0);
    cr_assert_eq(sum.ran + sum.skipped + sum.elsewhere + sum.failed, sum.total);
}

/* kill -9 of a sweep with two jobs, resumed at once: the killed children
 * are zombies (this process is their subreaper and does not reap them, as
 * process 1 of many containers), and a zombie is no live owner, so the
 * resume marks their rows failed and runs every point. */
Test(sweep, resume_straight_after_kill_9_runs_every_point)
{
    cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    const char *dir = test_tmpdir();
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    run_ctx block = {.kill_at = -1, .block = 1, .fd = fds[1]};
    an_sweep_opts o = sweep_opts(dir, "r.db", &block);
    o.jobs = 2;
    pid_t sweep = fork();
    cr_assert_geq(sweep, 0);
    if (sweep == 0) {
        an_sweep_summary s;
        sim_err e = {0};
        an_sweep_run(&o, &s, &e);
        _exit(100);  /* not reached: the runs block until killed */
    }
    int32_t job[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(read(fds[0], &job[i], sizeof job[i]), (ssize_t)sizeof job[i]);
    cr_assert_eq(kill(sweep, SIGKILL), 0);
    int ws = 0;
    cr_assert_eq(waitpid(sweep, &ws, 0), sweep);
    /* wait for the jobs to die (their parent-death signal), without reaping */
    for (int i = 0; i < 2; i++) {
        siginfo_t si;
        cr_assert_eq(waitid(P_PID, (id_t)job[i], &si, WEXITED | WNOWAIT), 0);
    }
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE status = 'running'"), 2);

    run_ctx none = {.kill_at = -1};
    o.run_ctx = &none;
    an_sweep_summary sum;
    sim_err err = {0};
    cr_assert_eq(an_sweep_run(&o, &sum, &err), 0, "%s", err.msg);
    cr_assert_eq(sum.ran, 8, "ran %d, skipped %d", sum.ran, sum.skipped);
    cr_assert_eq(sum.failed, 0);
    cr_assert_eq(query_int(o.db_path, "SELECT count(DISTINCT config) FROM runs"
                                      " WHERE status = 'done'"), 8);
    cr_assert_eq(query_int(o.db_path, "SELECT count(*) FROM runs WHERE status = 'failed'"), 2);
    for (int i = 0; i < 2; i++)
        waitpid(job[i], &ws, 0);
    close(fds[0]);
    close(fds[1]);
}
