/* The synchronous-round driver (algorithms/drivers/sync.h) through
 * allreduce_sgd: one path (a run where crashes may happen but none does is
 * the plain run, bit for bit), and buckets under crashes (docs/faults.md):
 * a crash before a survivor's backward pass ends costs what it costs
 * without buckets; a crash while its buckets are being reduced abandons
 * them (their bytes stay sent) and the survivor enters the survivors'
 * all-reduce of its whole message sync_timeout after the crash. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/algorithms/harness.h"

/* Runs allreduce_sgd with the given settings (plus the common ones) for
 * `iters` iterations, recording iteration times into ts; returns the
 * harness (the caller frees it). */
static void run(harness *h, times *ts, const char *const *extra, int n_extra, int64_t iters)
{
    const char *sets[16] = {"algorithm.name=allreduce_sgd", "network.topology=complete",
                            "network.latency=20us", "network.bandwidth=1GB/s",
                            "workload.sim_params=1000000", "faults.sync_timeout=50ms"};
    int n = 6;
    for (int i = 0; i < n_extra; i++)
        sets[n++] = extra[i];
    ts->n = 0;
    h_build(h, test_base_ini, sets, n);
    h->probe = record_time;
    h->probe_ctx = ts;
    h_run(h, iters);
}

/* S = 4 MB, alpha = 20 us, B = 1 GB/s, T = 10 ms, timeout 50 ms; the ring
 * all-reduce over m ranks costs c(m) = 2(m-1)(alpha + S/(mB)). */
static const double S = 4e6, A = 20e-6, B = 1e9, T = 0.01, TO = 0.05;
static double c(int m) { return 2.0 * (m - 1) * (A + S / (m * B)); }

/* One path: a crash scheduled after the end changes nothing, bit for bit
 * (the model, the counters, the times), with and without buckets. */
Test(sync, crashes_possible_but_none_is_the_plain_run)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n100s,crash,1,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    for (int k = 0; k < 2; k++) {
        static times ta, tb;
        harness a, b;
        const char *plain[] = {k ? "algorithm.bucket=1MB" : "algorithm.bucket=0"};
        const char *faulty[] = {plain[0], set};
        run(&a, &ta, plain, 1, 40);
        run(&b, &tb, faulty, 2, 40);
        cr_assert_eq(algo_env_crashes(b.env), 1);
        cr_assert_eq(ta.n, tb.n);
        for (int i = 0; i < ta.n; i++)
            cr_assert_eq(ta.t[i], tb.t[i], "iteration %d at %.9f vs %.9f", i, ta.t[i], tb.t[i]);
        float *sa = malloc((size_t)a.env->d * sizeof *sa), *sb = malloc((size_t)b.env->d * sizeof *sb);
        const float *xa = a.vt->model(a.alg, sa), *xb = b.vt->model(b.alg, sb);
        cr_assert_eq(memcmp(xa, xb, (size_t)a.env->d * sizeof *xa), 0, "models differ");
        for (int i = 0; i < a.env->n; i++) {
            cr_assert_eq(a.env->w[i].steps, b.env->w[i].steps);
            cr_assert_eq(a.env->w[i].compute_time, b.env->w[i].compute_time);
        }
        cr_assert_eq(a.env->samples, b.env->samples);
        free(sa);
        free(sb);
        h_free(&a);
        h_free(&b);
    }
    unlink(path);
}

/* Buckets (one bucket: bucket > S) and a crash of worker 5 at 0.175 s,
 * inside round 10's compute step: the survivors' backward passes end after
 * the crash, they wait sync_timeout from there and reduce over 7 ranks, as
 * without buckets: T + c(8) before, T + timeout + c(7) for the aborted
 * round, T + c(7) until the rejoin at 0.6 s, T + c(8) after it. */
Test(sync, bucket_crash_in_the_compute_step_costs_what_it_costs_without_buckets)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n0.175s,crash,5,\n0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static times ts;
    harness h;
    const char *extra[] = {set, "algorithm.bucket=8MB"};
    run(&h, &ts, extra, 2, 60);
    const double before = T + c(8);
    int ab = -1;
    for (int i = 1; i < ts.n; i++)
        if (ts.t[i - 1] < 0.175 && ts.t[i] > 0.175)
            ab = i;
    cr_assert_eq(ab, 10, "round 10 holds the crash (%d)", ab);
    for (int i = 1; i < ab; i++)
        cr_assert(fabs(ts.t[i] - ts.t[i - 1] - before) < 1e-7, "round %d", i);
    cr_assert(fabs(ts.t[ab] - ts.t[ab - 1] - (T + TO + c(7))) < 1e-7, "aborted round: %.9f",
              ts.t[ab] - ts.t[ab - 1]);
    for (int i = ab + 1; i < ts.n && ts.t[i] < 0.6; i++)
        cr_assert(fabs(ts.t[i] - ts.t[i - 1] - (T + c(7))) < 1e-7, "round %d: %.9f", i,
                  ts.t[i] - ts.t[i - 1]);
    for (int i = ts.n - 10; i < ts.n; i++)
        cr_assert(fabs(ts.t[i] - ts.t[i - 1] - before) < 1e-7, "round %d after the rejoin", i);
    cr_assert_eq(h.env->w[5].down, 0);
    h_free(&h);
    unlink(path);
}

/* The crash falls while round 10's bucket is being reduced (after its
 * compute step, T into the round, before T + c(8)): the survivors abandon
 * it (its bytes stay sent) and enter the survivors' all-reduce timeout
 * after the crash; the round takes (t_crash - its start) + timeout + c(7). */
Test(sync, bucket_crash_during_the_reduction_loses_the_partly_reduced_bucket)
{
    const double before = T + c(8);
    const double start = 10 * before, tc = start + T + 0.5 * c(8);
    char path[64], set[96], sched[128];
    snprintf(sched, sizeof sched, "time,event,target,value\n%.9fs,crash,5,\n", tc);
    test_write_temp(path, sched);
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static times ts;
    harness h;
    const char *extra[] = {set, "algorithm.bucket=8MB"};
    run(&h, &ts, extra, 2, 30);
    /* ts.t[i] is the end of round i (0-based) */
    cr_assert(fabs(ts.t[9] - start) < 1e-7, "round 10 starts at %.9f", ts.t[9]);
    double want = tc - start + TO + c(7);
    cr_assert(fabs(ts.t[10] - ts.t[9] - want) < 1e-7, "aborted round: %.9f vs %.9f",
              ts.t[10] - ts.t[9], want);
    for (int i = 11; i < ts.n; i++)
        cr_assert(fabs(ts.t[i] - ts.t[i - 1] - (T + c(7))) < 1e-7, "round %d: %.9f", i,
                  ts.t[i] - ts.t[i - 1]);
    /* round 11 applied the 7 survivors' gradients, the others all 8 */
    cr_assert_eq(h.env->samples, 16 * (8 * 10 + 7 * 20));
    h_free(&h);
    unlink(path);
}

/* ---- memory under random crashes ------------------------------------------ */

/* The most collectives alive at once during a run. */
typedef struct coll_peak {
    int64_t base, peak;
} coll_peak;

static void probe_colls(harness *h)
{
    coll_peak *p = h->probe_ctx;
    int64_t n = sim_coll_live() - p->base;
    if (n > p->peak)
        p->peak = n;
}

/* The peak of live collectives of a method under a crash every 400us a
 * worker (several per round) over `iters` iterations; *t gets the
 * simulated time (the crashes grow with it). */
static int64_t peak_colls(const char *name, const char *key, int64_t iters, sim_time *t)
{
    const char *sets[] = {name, key, "workers.compute=constant(50us)",
                          "faults.mtbf=exponential(400us)", "faults.downtime=constant(100us)",
                          "faults.sync_timeout=1ms", "algorithm.lr=0.01"};
    harness h;
    coll_peak p = {sim_coll_live(), 0};
    h_build(&h, test_base_ini, sets, 7);
    h.probe = probe_colls;
    h.probe_ctx = &p;
    h_run(&h, iters);
    *t = sim_engine_now(h.eng);
    h_free(&h);
    return p.peak;
}

/* The groups of live workers (and their collectives) that no worker can
 * use any more are freed: the collectives alive stay below a bound set by
 * the workers, not by the crashes so far, for allreduce_sgd, a Local SGD
 * method, onebit_adam (whose rounds have two phases) and the gossip
 * driver's collectives (consensus_control). */
Test(sync, random_crashes_keep_the_collectives_bounded)
{
    const char *methods[][2] = {
        {"algorithm.name=allreduce_sgd", "algorithm.batch=16"},
        {"algorithm.name=local_sgd", "algorithm.local_steps=4"},
        {"algorithm.name=onebit_adam", "algorithm.freeze_step=20"},
        {"algorithm.name=consensus_control", "algorithm.batch=16"},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        sim_time t_short, t_long;
        int64_t short_peak = peak_colls(methods[m][0], methods[m][1], 100, &t_short);
        int64_t long_peak = peak_colls(methods[m][0], methods[m][1], 800, &t_long);
        cr_assert_gt(t_long, 4 * t_short, "%s: %lld then %lld ns", methods[m][0],
                     (long long)t_short, (long long)t_long);
        cr_assert_leq(long_peak, 64, "%s: %lld collectives alive after %.1f ms (%lld after "
                      "%.1f ms)", methods[m][0], (long long)long_peak, t_long / 1e6,
                      (long long)short_peak, t_short / 1e6);
    }
}
