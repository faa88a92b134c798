/* consensus_control and slowmo with base = dpsgd under crashes
 * (algorithms/drivers/gossip_group.c, docs/faults.md): their exact
 * averages, adaptive all-reduces and periodic averages run over a group of
 * live workers. A crash after the end changes no bit; a crash aborts the
 * next collective, which costs the survivors sync_timeout once from when
 * they entered it (closed form on the ideal network, where messages take
 * no time: 8 workers, T = 10 ms, timeout 20 ms); the survivors go on and
 * take their own mean; a rejoin costs nobody a timeout and the joiner ends
 * in the average; random crashes give the same rows at 1, 2 and 4 threads. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "analysis/db.h"
#include "tests/algorithms/harness.h"
#include "sim/network.h"
#include "tests/common.h"

#define CC "algorithm.name=consensus_control"
#define SM "algorithm.name=slowmo", "algorithm.base=dpsgd", "algorithm.local_steps=4"

/* Simulated time at which each iteration count was reached. */
typedef struct iter_times {
    double at[256];
} iter_times;

static void probe_time(harness *h)
{
    iter_times *t = h->probe_ctx;
    if (h->env->iterations < 256)
        t->at[h->env->iterations] = 1e-9 * (double)sim_engine_now(h->eng);
}

/* Iterations from..to were reached at t0 + T (K - k0), T = 10 ms. */
static void assert_times(const iter_times *t, int from, int to, double t0, int k0)
{
    for (int K = from; K <= to; K++)
        cr_assert_float_eq(t->at[K], t0 + 0.01 * (K - k0), 1e-12, "iteration %d at %g", K,
                           t->at[K]);
}

/* Runs the method (sets, then the schedule if any) for iters iterations. */
static void run(harness *h, const char *const *sets, int nsets, const char *sched, int64_t iters,
                iter_times *t)
{
    const char *all[12];
    int n = 0;
    for (int i = 0; i < nsets; i++)
        all[n++] = sets[i];
    all[n++] = "faults.sync_timeout=20ms";
    if (sched)
        all[n++] = sched;
    h_build(h, test_base_ini, all, n);
    h->probe = t ? probe_time : NULL;
    h->probe_ctx = t;
    h_run(h, iters);
}

static void assert_same_models(harness *a, harness *b, const char *what)
{
    const float *xa[8], *xb[8];
    a->vt->worker_models(a->alg, xa);
    b->vt->worker_models(b->alg, xb);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(memcmp(xa[i], xb[i], (size_t)a->env->d * sizeof(float)), 0,
                     "%s: worker %d", what, i);
}

/* Crash mode without a crash in the run: models, time and bytes as without
 * faults, for every kind of mixing and for slowmo over dpsgd. */
Test(consensus_control, a_crash_after_the_end_changes_no_bit)
{
    static const char *const plans[][4] = {
        {CC, "algorithm.exact_phases=all"},
        {CC, "algorithm.adaptive_phases=all"},
        {CC, "algorithm.gossip_steps=2"},
        {SM},
    };
    static const int np[] = {2, 2, 2, 3};
    for (int p = 0; p < 4; p++) {
        char path[64], set[96];
        h_write_schedule(path, set, sizeof set, "100s,crash,3,\n");
        harness a, b;
        run(&a, plans[p], np[p], NULL, 40, NULL);
        run(&b, plans[p], np[p], set, 40, NULL);
        assert_same_models(&a, &b, plans[p][1] ? plans[p][1] : plans[p][0]);
        cr_assert_eq(sim_engine_now(a.eng), sim_engine_now(b.eng), "plan %d", p);
        cr_assert_eq(sim_net_bytes_sent_total(a.net), sim_net_bytes_sent_total(b.net));
        h_free(&a);
        h_free(&b);
        unlink(path);
    }
}

/* Exact averaging every iteration, worker 3 down at 0.105 s (during the
 * compute of iteration 10, which starts at 0.1 s): the survivors enter the
 * aborted all-reduce at 0.11 s, wait the timeout and complete over the 7 of
 * them at 0.13 s; every later iteration takes T. Before: K x T. */
Test(consensus_control, a_crash_in_an_exact_phase_costs_the_timeout_once)
{
    char path[64], set[96];
    h_write_schedule(path, set, sizeof set, "0.105s,crash,3,\n");
    const char *sets[] = {CC, "algorithm.exact_phases=all"};
    harness h;
    iter_times t = {0};
    run(&h, sets, 2, set, 40, &t);
    assert_times(&t, 1, 10, 0, 0);
    assert_times(&t, 11, 40, 0.13, 11);
    /* the survivors took the mean of their own vectors: all equal, the
     * evaluated model is theirs, the crashed worker kept its own */
    const float *x[8];
    h.vt->worker_models(h.alg, x);
    float buf[64];
    const float *model = h.vt->model(h.alg, buf);
    size_t bytes = (size_t)h.env->d * sizeof(float);
    for (int i = 0; i < 8; i++)
        if (i != 3)
            cr_assert_eq(memcmp(x[i], x[0], bytes), 0, "worker %d", i);
    cr_assert_lt(max_rel_gap(x[0], model, h.env->d), 1e-6);
    cr_assert_neq(memcmp(x[3], x[0], bytes), 0);
    const float *live[8];
    cr_assert_eq(h.vt->live_models(h.alg, live), 7);
    h_free(&h);
    unlink(path);
}

/* The same crash under adaptive gossip: worker 3's neighbours (2 and 4)
 * wait for its message of iteration 10's first step until 0.13 s, then
 * enter the scalar all-reduce that the crash aborted, whose wait is a
 * separate one: they re-enter it over the survivors 20 ms later, at
 * 0.15 s (the others, who entered at 0.11 s, at 0.13 s). Later steps
 * skip worker 3 at once: every later iteration takes T. */
Test(consensus_control, adaptive_gossip_goes_on_over_the_survivors)
{
    char path[64], set[96];
    h_write_schedule(path, set, sizeof set, "0.105s,crash,3,\n");
    const char *sets[] = {CC, "algorithm.adaptive_phases=all"};
    harness h;
    iter_times t = {0};
    run(&h, sets, 2, set, 40, &t);
    assert_times(&t, 1, 10, 0, 0);
    cr_assert_float_eq(t.at[11], 0.15, 1e-12, "iteration 11 at %g", t.at[11]);
    assert_times(&t, 12, 40, 0.15, 11);
    h_free(&h);
    unlink(path);
}

/* The mean is over the survivors: with independent initial models and
 * lr = 1e-30, worker 3 down at 5 ms (before the first exact average), the
 * 7 survivors' model after it is the mean of their initial models (to
 * 1e-6), not of all 8. */
Test(consensus_control, the_exact_mean_is_over_the_survivors)
{
    char path[64], set[96];
    h_write_schedule(path, set, sizeof set, "0.005s,crash,3,\n");
    const char *sets[] = {CC, "algorithm.exact_phases=all", "algorithm.lr=1e-30",
                          "workload.init=independent", "faults.sync_timeout=20ms", set};
    harness h;
    h_build(&h, test_base_ini, sets, 6);
    const float *x[8];
    h.vt->worker_models(h.alg, x);
    int64_t d = h.env->d;
    float want[64], all8[64];
    for (int64_t e = 0; e < d; e++) {
        double s7 = 0, s8 = 0;
        for (int i = 0; i < 8; i++) {
            s8 += x[i][e];
            s7 += i == 3 ? 0 : x[i][e];
        }
        want[e] = (float)(s7 / 7);
        all8[e] = (float)(s8 / 8);
    }
    h_run(&h, 3);
    h.vt->worker_models(h.alg, x);
    cr_assert_lt(max_rel_gap(want, x[0], d), 1e-6, "%g", max_rel_gap(want, x[0], d));
    cr_assert_gt(max_rel_gap(all8, x[0], d), 1e-3);
    h_free(&h);
    unlink(path);
}

/* Worker 3 down from 0.105 s to 0.2 s, exact averaging: the rejoin costs
 * nobody a timeout (every iteration after the aborted one takes T), and the
 * joiner ends in the average with the others. */
Test(consensus_control, a_rejoining_worker_joins_the_average)
{
    char path[64], set[96];
    h_write_schedule(path, set, sizeof set, "0.105s,crash,3,\n0.2s,rejoin,3,\n");
    const char *sets[] = {CC, "algorithm.exact_phases=all"};
    harness h;
    iter_times t = {0};
    run(&h, sets, 2, set, 40, &t);
    assert_times(&t, 11, 40, 0.13, 11);
    const float *x[8];
    h.vt->worker_models(h.alg, x);
    for (int i = 1; i < 8; i++)
        cr_assert_eq(memcmp(x[i], x[0], (size_t)h.env->d * sizeof(float)), 0, "worker %d", i);
    const float *live[8];
    cr_assert_eq(h.vt->live_models(h.alg, live), 8);
    h_free(&h);
    unlink(path);
}

/* The rows of a run (metrics, workers, faults, runs' totals) as text with
 * every real to 17 digits. */
static void rows_of(const char *db, int64_t run, char *out, size_t cap)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT (SELECT group_concat(printf('%%.17g %%d %%d %%.17g %%.17g %%d', sim_time,"
             " iteration, samples, train_loss, consensus_distance, bytes_sent), ';') FROM"
             " metrics WHERE run_id = %lld) || '|' || (SELECT group_concat(printf('%%d %%d"
             " %%.17g %%.17g %%d %%d', worker, steps, compute_time, idle_time, bytes_sent,"
             " gossip_rounds), ';') FROM workers WHERE run_id = %lld) || '|' || (SELECT"
             " ifnull(group_concat(printf('%%.17g %%s %%s', sim_time, event, target), ';'), '')"
             " FROM faults WHERE run_id = %lld) || '|' || (SELECT printf('%%.17g %%d %%d',"
             " sim_time, iterations, bytes_sent) FROM runs WHERE id = %lld)",
             (long long)run, (long long)run, (long long)run, (long long)run);
    test_sql_text(db, sql, out, cap);
}

static void check_threads(const char *const *sets, int nsets)
{
    const char *dbpath = test_db_path("t.db");
    sim_err err = {0};
    an_db *db = an_db_open(dbpath, &err);
    cr_assert_not_null(db, "%s", err.msg);
    static const int threads[] = {1, 2, 4};
    for (int r = 0; r < 3; r++) {
        cfg_config cfg;
        cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini, sets,
                                            nsets,
                                            &cfg, &err), 0,
                     "%s", err.msg);
        xp_run_opts o = {.db = db, .threads = threads[r]};
        xp_run_result res;
        cr_assert_eq(xp_experiment_run(&cfg, &o, &res, &err), 0, "%s", err.msg);
        cr_assert_str_eq(res.status, "done");
        cfg_release(&cfg);
    }
    an_db_close(db);
    static char a[1 << 18], b[1 << 18];
    rows_of(dbpath, 1, a, sizeof a);
    cr_assert(strstr(a, "crash") && strstr(a, "rejoin"), "no crash in the run: %.300s", a);
    for (int r = 2; r <= 3; r++) {
        rows_of(dbpath, r, b, sizeof b);
        cr_assert_str_eq(a, b, "run %d", r);
    }
}

#define RANDOM "faults.mtbf=exponential(0.3s)", "faults.downtime=constant(0.1s)", \
               "faults.sync_timeout=20ms", "experiment.max_iterations=0",         \
               "experiment.max_time=2s", "experiment.eval_every=0.1s"

/* Random crashes and rejoins: the same rows at 1, 2 and 4 threads, with
 * exact averaging in the first half epoch then adaptive gossip. */
Test(consensus_control, random_crashes_give_the_same_rows_at_any_thread_count)
{
    const char *sets[] = {CC, "algorithm.exact_until_epoch=0.5",
                          "algorithm.adaptive_phases=all", RANDOM};
    check_threads(sets, 9);
}

/* ---- slowmo with base = dpsgd (AWC D-PSGD, an exact average every 4
 * iterations, after iterations 3, 7, 11, ...) ---------------------------- */

/* Worker 3 down at 0.105 s: its message of iteration 10 was delivered at
 * 0.1 s, so iteration 10 ends at 0.11 s for all; in iteration 11 its
 * neighbours wait for it until 0.13 s, and the average after it, which the
 * crash aborted, costs every survivor the timeout from when it entered
 * (0.12 s or 0.13 s): it completes at 0.15 s over the 7 of them, who then
 * hold the same model; every later iteration takes T. */
Test(consensus_control, slowmo_dpsgd_averages_over_the_survivors)
{
    char path[64], set[96];
    h_write_schedule(path, set, sizeof set, "0.105s,crash,3,\n");
    const char *sets[] = {SM};
    harness h;
    iter_times t = {0};
    run(&h, sets, 3, set, 40, &t);
    assert_times(&t, 1, 11, 0, 0);
    assert_times(&t, 12, 40, 0.15, 12);
    const float *x[8];
    h.vt->worker_models(h.alg, x);
    size_t bytes = (size_t)h.env->d * sizeof(float);
    for (int i = 0; i < 8; i++)
        if (i != 3)
            cr_assert_eq(memcmp(x[i], x[0], bytes), 0, "worker %d", i);
    cr_assert_neq(memcmp(x[3], x[0], bytes), 0);
    h_free(&h);
    unlink(path);
}

/* Down from 0.105 s to 0.2 s: the rejoin costs nobody a timeout and the
 * joiner (from the outer model) is in the average after iteration 39. */
Test(consensus_control, slowmo_dpsgd_joiner_takes_the_outer_model)
{
    char path[64], set[96];
    h_write_schedule(path, set, sizeof set, "0.105s,crash,3,\n0.2s,rejoin,3,\n");
    const char *sets[] = {SM};
    harness h;
    iter_times t = {0};
    run(&h, sets, 3, set, 40, &t);
    assert_times(&t, 12, 40, 0.15, 12);
    const float *x[8];
    h.vt->worker_models(h.alg, x);
    for (int i = 1; i < 8; i++)
        cr_assert_eq(memcmp(x[i], x[0], (size_t)h.env->d * sizeof(float)), 0, "worker %d", i);
    cr_assert_gt(h.env->w[3].steps, 11);
    h_free(&h);
    unlink(path);
}

Test(consensus_control, slowmo_dpsgd_random_crashes_give_the_same_rows_at_any_thread_count)
{
    const char *sets[] = {SM, "algorithm.buffers=average", RANDOM};
    check_threads(sets, 10);
}
