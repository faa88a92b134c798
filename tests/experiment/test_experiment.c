/* The runner (experiment/experiment.c) with methods of the test's own (xp_run_opts.algorithm): a
 * failure injected inside an event ends the run 'failed' with its message;
 * a method that doubles the workers' batches mid-run keeps samples and
 * epochs exact; asgd's dropped gradients land in the series table
 * consistent with its staleness histogram; the override changes no row. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "experiment/experiment.h"
#include "tests/common.h"

#define MS (SIM_NS_PER_S / 1000)

typedef struct rows {
    an_metric_row r[512];
    int n;
    int n_series;
} rows;

static void collect(void *ctx, const an_metric_row *row)
{
    rows *rs = ctx;
    if (rs->n < 512)
        rs->r[rs->n++] = *row;
}

static void count_series(void *ctx, const an_series_row *row)
{
    (void)row;
    ((rows *)ctx)->n_series++;
}

static void load(const char *ini, const char *const *sets, int nsets, cfg_config *cfg)
{
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "t.ini", ini, sets, nsets, cfg,
                                        &err), 0, "%s",
                 err.msg);
}

static const char *const small_ini = "[experiment]\n"
                                     "seed = 4\n"
                                     "max_epochs = 0\n"
                                     "max_iterations = 12\n"
                                     "eval_every = 1\n"
                                     "[workers]\n"
                                     "count = 4\n"
                                     "compute = constant(10ms)\n"
                                     "[network]\n"
                                     "topology = ideal\n"
                                     "[algorithm]\n"
                                     "name = allreduce_sgd\n"
                                     "batch = 8\n"
                                     "[workload]\n"
                                     "model = softmax\n"
                                     "dataset = blobs(3, 5, 600)\n";

/* ---- a method that fails inside an event -------------------------------- */

/* Every 10 ms one iteration of 32 samples; the third tick fails. */
typedef struct failer {
    algo_env *env;
    int ticks;
    int code;
} failer;

static void on_tick(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)arg;
    (void)payload;
    failer *f = ctx;
    if (++f->ticks == 3) {
        algo_env_fail(f->env, f->code, "injected failure in worker %d", 2);
        return;
    }
    algo_env_iteration(f->env, 32);
    sim_engine_schedule(eng, 10 * MS, on_tick, f, 0, NULL, NULL);
}

static int failer_code = SIM_EINTERNAL;

static int failer_create(algo_env *env, void **out, sim_err *err)
{
    (void)err;
    failer *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    f->env = env;
    f->code = failer_code;
    *out = f;
    return 0;
}

static void failer_destroy(void *p) { free(p); }

static int failer_start(void *p, sim_err *err)
{
    (void)err;
    failer *f = p;
    sim_engine_schedule(f->env->eng, 10 * MS, on_tick, f, 0, NULL, NULL);
    return 0;
}

static const float *failer_model(void *p, float *scratch)
{
    (void)scratch;
    return ((failer *)p)->env->w[0].x;
}

static const algo_vt failer_vt = {
    .name = "failer",
    .summary = "test: fails at its third event",
    .create = failer_create,
    .destroy = failer_destroy,
    .start = failer_start,
    .model = failer_model,
};

Test(experiment, failure_inside_an_event_fails_the_run_with_its_message)
{
    const char *dir = test_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/r.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    cfg_config cfg;
    load(small_ini, NULL, 0, &cfg);
    rows rs = {0};
    xp_run_opts o = {.db = db, .algorithm = &failer_vt, .on_metric = collect, .ctx = &rs};
    xp_run_result res;
    int rc = xp_experiment_run(&cfg, &o, &res, &err);
    cr_assert_eq(rc, SIM_EINTERNAL, "rc %d: %s", rc, err.msg);
    cr_assert_eq(err.code, rc);
    const char *want = "t.ini: failer: at 0.03 s simulated, iteration 2: injected failure "
                       "in worker 2";
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(sim_err_exit_status(rc), 1);
    cr_assert_eq(rs.n, 3, "rows at t = 0 and after iterations 1 and 2");
    cr_assert_eq(rs.r[2].iteration, 2);

    /* the same with an input error: its code, so the CLI exits 2 */
    failer_code = SIM_EINPUT;
    rc = xp_experiment_run(&cfg, &o, &res, &err);
    failer_code = SIM_EINTERNAL;
    cr_assert_eq(rc, SIM_EINPUT, "rc %d: %s", rc, err.msg);
    cr_assert_eq(sim_err_exit_status(rc), 2);
    an_db_close(db);
    cfg_release(&cfg);

    cr_assert_eq(test_sql_int(path, "select count(*) from runs where status = 'failed'"), 2);
    char text[1024];
    test_sql_text(path, "select error from runs where id = 1", text, sizeof text);
    cr_assert_str_eq(text, want);
    test_sql_text(path, "select algorithm from runs where id = 1", text, sizeof text);
    cr_assert_str_eq(text, "failer");
    cr_assert_eq(test_sql_int(path, "select count(*) from metrics where run_id = 1"), 3);
    cr_assert_eq(test_sql_int(path, "select count(*) from workers"), 0,
                 "no summary for a failed run");
}

/* ---- a method that doubles every batch mid-run -------------------------- */

typedef struct doubler {
    algo_env *env;
    const algo_vt *inner;
    void *st;
} doubler;

static void on_double(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)arg;
    (void)payload;
    doubler *d = ctx;
    for (int i = 0; i < d->env->n; i++)
        algo_env_set_batch(d->env, i, 2 * d->env->w[i].batch);
}

static int doubler_create(algo_env *env, void **out, sim_err *err)
{
    doubler *d = calloc(1, sizeof *d);
    cr_assert_not_null(d);
    d->env = env;
    d->inner = algo_find(env->cfg->algorithm);
    int rc = d->inner->create(env, &d->st, err);
    if (rc < 0) {
        free(d);
        return rc;
    }
    *out = d;
    return 0;
}

static void doubler_destroy(void *p)
{
    doubler *d = p;
    if (d->inner->destroy)
        d->inner->destroy(d->st);
    free(d);
}

/* t = 55 ms: after the gradients of iteration 6 (computed at 50 ms), before
 * those of iteration 7 (at 60 ms) */
static int doubler_start(void *p, sim_err *err)
{
    doubler *d = p;
    sim_engine_schedule(d->env->eng, 55 * MS, on_double, d, 0, NULL, NULL);
    return d->inner->start(d->st, err);
}

static const float *doubler_model(void *p, float *scratch)
{
    doubler *d = p;
    return d->inner->model(d->st, scratch);
}

static void doubler_worker_models(void *p, const float **xs)
{
    doubler *d = p;
    d->inner->worker_models(d->st, xs);
}

static const algo_vt doubler_shared = {
    .name = "doubler", .summary = "test: doubles the batches at 55 ms",
    .create = doubler_create, .destroy = doubler_destroy, .start = doubler_start,
    .model = doubler_model,
};

static const algo_vt doubler_gossip = {
    .name = "doubler", .summary = "test: doubles the batches at 55 ms", .uses_graph = 1,
    .create = doubler_create, .destroy = doubler_destroy, .start = doubler_start,
    .model = doubler_model, .worker_models = doubler_worker_models,
};

/* samples applied after `it` iterations: 4 workers x 8, then x 16 from
 * iteration 7 on */
static int64_t expected_samples(int64_t it)
{
    return it <= 6 ? 32 * it : 32 * 6 + 64 * (it - 6);
}

static void check_doubling(const char *method, const algo_vt *vt)
{
    char name[64];
    snprintf(name, sizeof name, "algorithm.name=%s", method);
    /* max_epochs = 1 (600 training samples) stops at iteration 13 (640
     * samples); constant batches would have needed 19 */
    const char *sets[] = {name, "experiment.max_iterations=0", "experiment.max_epochs=1"};
    cfg_config cfg;
    load(small_ini, sets, 3, &cfg);
    rows rs = {0};
    xp_run_opts o = {.algorithm = vt, .on_metric = collect, .ctx = &rs};
    xp_run_result res;
    sim_err err = {0};
    cr_assert_eq(xp_experiment_run(&cfg, &o, &res, &err), 0, "%s: %s", method, err.msg);
    cr_assert_str_eq(res.status, "done");
    cr_assert_eq(res.iterations, 13, "%s: %lld iterations", method, (long long)res.iterations);
    cr_assert_eq(rs.n, 14, "%s", method);
    for (int k = 0; k < rs.n; k++) {
        const an_metric_row *r = &rs.r[k];
        cr_assert_eq(r->iteration, k);
        cr_assert_eq(r->samples, expected_samples(k), "%s: iteration %d: %lld samples",
                     method, k, (long long)r->samples);
        cr_assert_eq(r->epoch, (double)expected_samples(k) / 600.0, "%s: iteration %d",
                     method, k);
        cr_assert_eq(r->sim_time, sim_time_to_s(k * 10 * MS), "%s: iteration %d at %.17g s",
                     method, k, r->sim_time);
    }
    cr_assert_eq(res.epochs, 640.0 / 600.0);
    cfg_release(&cfg);
}

Test(experiment, doubling_the_batch_mid_run_keeps_epochs_exact)
{
    check_doubling("allreduce_sgd", &doubler_shared);
    check_doubling("dpsgd", &doubler_gossip);
    check_doubling("dsgd_atc", &doubler_gossip);
}

/* ---- series: asgd's dropped gradients ----------------------------------- */

Test(experiment, asgd_records_its_dropped_gradients)
{
    const char *dir = test_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/a.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    const char *sets[] = {"algorithm.name=asgd", "algorithm.max_staleness=4",
                          "experiment.max_iterations=400", "experiment.eval_every=100",
                          "workers.count=8", "workers.compute=lognormal(10ms, 0.5)",
                          "workers.stragglers=2", "workers.straggler_slowdown=4",
                          "network.topology=star"};
    cfg_config cfg;
    load(small_ini, sets, 9, &cfg);
    rows rs = {0};
    xp_run_opts o = {.db = db, .on_series = count_series, .ctx = &rs};
    xp_run_result res;
    cr_assert_eq(xp_experiment_run(&cfg, &o, &res, &err), 0, "%s", err.msg);
    an_db_close(db);
    cfg_release(&cfg);

    int64_t dropped = test_sql_int(path, "select count(*) from series where name = 'dropped'");
    cr_assert_gt(dropped, 0, "the stragglers' gradients are staler than 4");
    cr_assert_eq(rs.n_series, dropped);
    /* one row per drop, with the cumulative count 1, 2, ..., dropped */
    cr_assert_eq(test_sql_int(path, "select max(value) from series"), dropped);
    cr_assert_eq(test_sql_int(path, "select sum(value) from series"), dropped * (dropped + 1) / 2);
    cr_assert_eq(test_sql_int(path, "select count(*) from series where worker is not null"), 0);
    cr_assert_eq(test_sql_int(path, "select count(*) from series a join series b on b.rowid ="
                             " a.rowid + 1 where b.value != a.value + 1 or b.sim_time <"
                             " a.sim_time or b.iteration < a.iteration"), 0);
    /* every update staler than 4 was dropped, every other one applied */
    cr_assert_eq(test_sql_int(path, "select sum(count) from staleness where staleness > 4"),
                 dropped);
    cr_assert_eq(test_sql_int(path, "select sum(count) from staleness where staleness <= 4"),
                 res.iterations);
}

/* ---- the override itself ------------------------------------------------ */

Test(experiment, a_registry_method_passed_as_override_gives_the_same_rows)
{
    extern const algo_vt algo_dpsgd;
    const char *sets[] = {"algorithm.name=dpsgd", "workers.compute=lognormal(10ms, 0.5)",
                          "network.topology=ring"};
    cfg_config cfg;
    load(small_ini, sets, 3, &cfg);
    rows *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    xp_run_opts oa = {.on_metric = collect, .ctx = a};
    xp_run_opts ob = {.on_metric = collect, .ctx = b, .algorithm = &algo_dpsgd};
    sim_err err = {0};
    cr_assert_eq(xp_experiment_run(&cfg, &oa, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(xp_experiment_run(&cfg, &ob, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(a->n, 13);
    cr_assert_eq(b->n, a->n);
    cr_assert_eq(memcmp(a->r, b->r, (size_t)a->n * sizeof a->r[0]), 0);
    free(a);
    free(b);
    cfg_release(&cfg);
}

/* ---- livelock: the clock never moves ------------------------------------ */

/* Zero compute on an ideal network with only max_time set never advances
 * the clock: the runner fails the run after 100,000 iterations at the same
 * simulated time instead of running forever. */
Test(experiment, a_run_whose_clock_stands_still_fails_with_what_to_set, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/l.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    char trace[4200], set_trace[4300];
    snprintf(trace, sizeof trace, "%s/zeros.csv", dir);
    FILE *f = fopen(trace, "w");
    cr_assert_not_null(f);
    fputs("0,0\n0,0\n", f);
    fclose(f);
    snprintf(set_trace, sizeof set_trace, "workers.compute=trace(%s)", trace);
    cfg_config cfg;
    const char *sets[] = {set_trace, "experiment.max_iterations=0",
                          "experiment.max_epochs=0", "experiment.max_time=10s",
                          "experiment.eval_every=5s", "workers.count=2"};
    load(small_ini, sets, 6, &cfg);
    xp_run_opts o = {.db = db};
    xp_run_result res;
    int rc = xp_experiment_run(&cfg, &o, &res, &err);
    cr_assert_eq(rc, SIM_ECONFIG, "rc %d: %s", rc, err.msg);
    cr_assert(strstr(err.msg, "no simulated progress: 100000 iterations"), "%s", err.msg);
    cr_assert(strstr(err.msg, "max_iterations or max_epochs"), "%s", err.msg);
    an_db_close(db);
    cfg_release(&cfg);
    cr_assert_eq(test_sql_int(path, "select count(*) from runs where status = 'failed'"), 1);
    cr_assert_eq(test_sql_int(path, "select iterations is null from runs"), 1);
    char text[1024];
    test_sql_text(path, "select error from runs", text, sizeof text);
    cr_assert(strstr(text, "no simulated progress"), "%s", text);

    /* with an iteration limit the same zero-time run is fine */
    const char *sets2[] = {set_trace, "experiment.max_iterations=200000",
                           "experiment.max_epochs=0", "experiment.eval_every=100000",
                           "workers.count=2"};
    load(small_ini, sets2, 5, &cfg);
    o.db = NULL;
    rc = xp_experiment_run(&cfg, &o, &res, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(res.iterations, 200000);
    cfg_release(&cfg);
}

/* ---- zero is a legitimate what-if ---------------------------------------- */

/* lr = 0 with dpsgd is pure gossip: W is doubly stochastic, so the workers'
 * average (the evaluated model) never moves (its train loss stays put) while
 * the consensus distance shrinks at every gossip round. */
Test(experiment, lr_zero_dpsgd_keeps_the_mean_and_shrinks_the_consensus_distance)
{
    const char *sets[] = {"algorithm.name=dpsgd", "algorithm.lr=0", "workload.init=independent",
                          "network.topology=ring", "experiment.eval_train_samples=all"};
    cfg_config cfg;
    load(small_ini, sets, 5, &cfg);
    rows *a = calloc(1, sizeof *a);
    xp_run_opts o = {.on_metric = collect, .ctx = a};
    sim_err err = {0};
    cr_assert_eq(xp_experiment_run(&cfg, &o, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(a->n, 13);
    cr_assert(a->r[0].consensus_distance > 0);
    for (int i = 1; i < a->n; i++) {
        cr_assert_float_eq(a->r[i].train_loss, a->r[0].train_loss,
                           1e-5 * fabs(a->r[0].train_loss), "row %d: %.9g vs %.9g", i,
                           a->r[i].train_loss, a->r[0].train_loss);
        cr_assert(a->r[i].consensus_distance < a->r[i - 1].consensus_distance,
                  "row %d: %g after %g", i, a->r[i].consensus_distance,
                  a->r[i - 1].consensus_distance);
    }
    cr_assert(a->r[a->n - 1].consensus_distance < 0.5 * a->r[0].consensus_distance);
    free(a);
    cfg_release(&cfg);
}

/* compute = constant(0): a synchronous run's simulated time is its
 * communication only, the same run with 10 ms steps minus 12 x 10 ms. */
Test(experiment, constant_zero_compute_leaves_communication_only)
{
    const char *zero[] = {"workers.compute=constant(0)", "network.topology=star",
                          "network.latency=5us", "network.bandwidth=1Gbps"};
    const char *ten[] = {"workers.compute=constant(10ms)", "network.topology=star",
                         "network.latency=5us", "network.bandwidth=1Gbps"};
    cfg_config cz, ct;
    load(small_ini, zero, 4, &cz);
    load(small_ini, ten, 4, &ct);
    xp_run_result rz, rt;
    xp_run_opts o = {0};
    sim_err err = {0};
    cr_assert_eq(xp_experiment_run(&cz, &o, &rz, &err), 0, "%s", err.msg);
    cr_assert_eq(xp_experiment_run(&ct, &o, &rt, &err), 0, "%s", err.msg);
    cr_assert_eq(rz.iterations, 12);
    cr_assert_eq(rt.iterations, 12);
    cr_assert(rz.sim_time > 0);
    cr_assert_float_eq(rt.sim_time - rz.sim_time, 12 * 0.01, 1e-9, "%.12g vs %.12g",
                       rt.sim_time, rz.sim_time);
    cr_assert_float_eq(rz.bytes_sent, rt.bytes_sent, 0);
    cfg_release(&cz);
    cfg_release(&ct);
}
/* ---- random faults in bounded memory ------------------------------------ */

typedef struct fault_watch {
    const char *path;
    int64_t seen[2]; /* faults rows in the database at the last two evaluations */
    int evals;
} fault_watch;

static void watch_faults(void *ctx, const an_metric_row *row)
{
    (void)row;
    fault_watch *w = ctx;
    w->seen[0] = w->seen[1];
    w->seen[1] = test_sql_int(w->path, "select count(*) from faults");
    w->evals++;
}

/* The fault log goes to the database as the run goes (at an evaluation,
 * once a few hundred faults are logged), not held until the end: the rows
 * are there mid-run, and all of them, in time order, at the end. */
Test(experiment, random_faults_are_written_as_they_happen, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/f.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    const char *sets[] = {"algorithm.name=dpsgd", "topology.graph=ring",
                          "experiment.max_iterations=3000", "experiment.eval_every=100",
                          "workers.count=8", "faults.mtbf=exponential(20ms)",
                          "faults.downtime=constant(5ms)", "faults.sync_timeout=2ms"};
    cfg_config cfg;
    load(small_ini, sets, 8, &cfg);
    fault_watch w = {.path = path};
    xp_run_opts o = {.db = db, .on_metric = watch_faults, .ctx = &w};
    xp_run_result res;
    cr_assert_eq(xp_experiment_run(&cfg, &o, &res, &err), 0, "%s", err.msg);
    an_db_close(db);
    cfg_release(&cfg);
    int64_t total = test_sql_int(path, "select count(*) from faults");
    cr_assert_gt(total, 1000, "%lld faults", (long long)total);
    /* before the last evaluation (the end of the run), rows were there */
    cr_assert_gt(w.evals, 2);
    cr_assert_gt(w.seen[0], 0, "no fault row was written before the end");
    cr_assert_lt(w.seen[0], total);
    cr_assert_eq(test_sql_int(path, "select count(*) from faults a join faults b on b.rowid ="
                             " a.rowid + 1 where b.sim_time < a.sim_time"), 0);
}

/* An mtbf far below sync_timeout cannot make progress: refused, naming it. */
Test(experiment, an_mtbf_far_below_sync_timeout_is_refused)
{
    const char *sets[] = {"faults.mtbf=constant(1ns)"};
    cfg_config cfg;
    load(small_ini, sets, 1, &cfg);
    sim_err err = {0};
    xp_run_result res;
    cr_assert_eq(xp_experiment_run(&cfg, NULL, &res, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "faults.mtbf") && strstr(err.msg, "far below"), "%s", err.msg);
    cfg_release(&cfg);
}

/* One evaluation rule whatever ends the run (docs/faults.md): under random
 * crashes a gossip method's last row evaluates the mean of the workers that
 * completed the last iteration, the same row whether max_epochs or
 * max_iterations ended the run at that iteration. */
static void last_row_under_crashes(const char *limit, const char *seed, rows *rs,
                                   xp_run_result *res)
{
    const char *sets[] = {"algorithm.name=dpsgd", "topology.graph=ring", "workers.count=8",
                          "experiment.eval_every=5", "faults.mtbf=exponential(60ms)",
                          "faults.downtime=constant(20ms)", "faults.sync_timeout=2ms",
                          "experiment.max_iterations=0", limit, seed};
    cfg_config cfg;
    load(small_ini, sets, 10, &cfg);
    sim_err err = {0};
    xp_run_opts o = {.on_metric = collect, .ctx = rs};
    cr_assert_eq(xp_experiment_run(&cfg, &o, res, &err), 0, "%s", err.msg);
    cfg_release(&cfg);
}

Test(experiment, the_last_row_under_crashes_is_the_same_for_every_stop_rule, .timeout = 120)
{
    const char *seeds[] = {"experiment.seed=4", "experiment.seed=5", "experiment.seed=6"};
    for (int s = 0; s < 3; s++) {
        rows *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
        xp_run_result ra, rb;
        last_row_under_crashes("experiment.max_epochs=3", seeds[s], a, &ra);
        char it[64];
        snprintf(it, sizeof it, "experiment.max_iterations=%lld", (long long)ra.iterations);
        last_row_under_crashes(it, seeds[s], b, &rb);
        cr_assert_eq(ra.sim_time, rb.sim_time, "%s", seeds[s]);
        cr_assert_eq(a->n, b->n, "%s", seeds[s]);
        const an_metric_row *x = &a->r[a->n - 1], *y = &b->r[b->n - 1];
        cr_assert_eq(x->iteration, y->iteration);
        cr_assert_eq(x->bytes_sent, y->bytes_sent);
        cr_assert_eq(x->train_loss, y->train_loss, "%s: %.9g vs %.9g", seeds[s], x->train_loss,
                     y->train_loss);
        cr_assert_eq(x->test_accuracy, y->test_accuracy, "%s", seeds[s]);
        cr_assert_eq(x->consensus_distance, y->consensus_distance, "%s: %.9g vs %.9g", seeds[s],
                     x->consensus_distance, y->consensus_distance);
        cr_assert_eq(ra.final_train_loss, rb.final_train_loss);
        free(a);
        free(b);
    }
}

/* bytes_sent counts what has left the senders by the row's time
 * (docs/database.md): D-PSGD in its AWC form sends iteration k + 1's
 * models at the instant iteration k completes, and those are not in the
 * row of iteration k. 8 workers on a ring: 16 messages of S bytes per
 * iteration, so 16 k S at iteration k and 80 S after 5 (96 S before). */
Test(experiment, bytes_sent_leaves_out_the_exchange_begun_at_the_stop)
{
    const char *sets[] = {"algorithm.name=dpsgd", "topology.graph=ring", "workers.count=8",
                          "network.topology=star", "network.bandwidth=10Gbps",
                          "network.latency=5us", "experiment.max_iterations=5"};
    cfg_config cfg;
    load(small_ini, sets, 7, &cfg);
    rows *rs = calloc(1, sizeof *rs);
    sim_err err = {0};
    xp_run_opts o = {.on_metric = collect, .ctx = rs};
    xp_run_result res;
    cr_assert_eq(xp_experiment_run(&cfg, &o, &res, &err), 0, "%s", err.msg);
    double S = 4.0 * (double)res.n_params;
    cr_assert_eq(rs->n, 6);
    for (int k = 0; k < rs->n; k++)
        cr_assert_eq(rs->r[k].bytes_sent, (int64_t)(16 * rs->r[k].iteration * S),
                     "iteration %lld: %lld bytes, S = %g", (long long)rs->r[k].iteration,
                     (long long)rs->r[k].bytes_sent, S);
    cr_assert_eq(res.bytes_sent, 80 * S, "%g bytes = %g S", res.bytes_sent, res.bytes_sent / S);
    free(rs);
    cfg_release(&cfg);
}
