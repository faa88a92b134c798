/* gravac (docs/algorithms.md section 9): with theta = 1 the method is
 * dense all-reduce SGD up to rounding; during the window it sends Top-k at
 * theta_min (8k bytes gathered); a gain threshold of 100 is
 * never met, so after the window it falls back to the dense all-reduce; the
 * compression compute is charged. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/algorithms/harness.h"
#include "algorithms/core/fault.h"

static void run_model(const char *const *sets, int nsets, int64_t iters, float *x)
{
    harness h;
    h_build(&h, test_base_ini, sets, nsets);
    h_run(&h, iters);
    float *scratch = malloc((size_t)h.env->d * sizeof *scratch);
    memcpy(x, h.vt->model(h.alg, scratch), (size_t)h.env->d * sizeof *x);
    free(scratch);
    h_free(&h);
}

Test(gravac, theta_one_equals_dense)
{
    const int64_t d = 44, iters = 120;
    float dense[44], gv[44];
    const char *base[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9"};
    const char *gr[] = {"algorithm.name=gravac", "algorithm.momentum=0.9",
                        "algorithm.theta_min=1", "algorithm.theta_max=1"};
    run_model(base, 2, iters, dense);
    run_model(gr, 4, iters, gv);
    double worst = 0, scale = 0;
    for (int64_t j = 0; j < d; j++) {
        worst = fmax(worst, fabs((double)dense[j] - gv[j]));
        scale = fmax(scale, fabs((double)dense[j]));
    }
    cr_assert_leq(worst / scale, 1e-5, "gap %g", worst / scale);
}

static const char *const star_ini = "[experiment]\n"
                                    "seed = 5\n"
                                    "max_epochs = 0\n"
                                    "max_iterations = 50\n"
                                    "eval_every = 25\n"
                                    "eval_train_samples = 200\n"
                                    "[workers]\n"
                                    "count = 4\n"
                                    "compute = constant(10ms)\n"
                                    "[network]\n"
                                    "topology = star\n"
                                    "[algorithm]\n"
                                    "name = gravac\n"
                                    "batch = 16\n"
                                    "[workload]\n"
                                    "model = softmax\n"
                                    "dataset = blobs(4, 10, 2000)\n"
                                    "sim_params = 10000\n";

Test(gravac, window_then_dense_fallback_bytes)
{
    const double n = 4, T = 50, k = 1000; /* theta_min 0.1 of d_wire 10000 */
    const char *s1[] = {"algorithm.window=1000"};
    xp_run_result r = test_run_ini(star_ini, s1, 1, NULL);
    cr_assert_eq(r.iterations, 50);
    cr_assert_eq(r.bytes_sent, T * n * (n - 1) * 8 * k, "%g", r.bytes_sent);
    /* gain < 100 (it can pass 1 with error feedback): after 10 rounds at theta_min, dense ring all-reduce */
    const char *s2[] = {"algorithm.window=10", "algorithm.gain_threshold=100"};
    r = test_run_ini(star_ini, s2, 2, NULL);
    cr_assert_eq(r.bytes_sent, 10 * n * (n - 1) * 8 * k + (T - 10) * 2 * (n - 1) * 4 * 10000,
                 "%g", r.bytes_sent);
}

Test(gravac, compression_time_is_charged)
{
    /* 1 us per value x 10000 = 10 ms per Top-k call, one call while
     * theta_c = theta_min (the first epoch ends in round 32): twice the compute
     * of no charge; after the first epoch's search theta_c = 0.05 and a
     * step makes two calls: 32 x 20 ms + 18 x 30 ms */
    const char *s0[] = {"algorithm.window=1000", "algorithm.compress_time_per_value=0",
                        "network.topology=ideal", "experiment.max_iterations=30"};
    const char *s1[] = {"algorithm.window=1000", "algorithm.compress_time_per_value=1e-6",
                        "network.topology=ideal", "experiment.max_iterations=30"};
    xp_run_result a = test_run_ini(star_ini, s0, 4, NULL), b = test_run_ini(star_ini, s1, 4, NULL);
    cr_assert_float_eq(b.sim_time, 2 * a.sim_time, 1e-6 * a.sim_time, "%g vs %g", b.sim_time,
                       a.sim_time);
    s1[3] = "experiment.max_iterations=50";
    b = test_run_ini(star_ini, s1, 4, NULL);
    cr_assert_float_eq(b.sim_time, 32 * 0.02 + 18 * 0.03, 1e-6, "%g", b.sim_time);
}

/* ---- gravac under crashes ----------------------------------------------- */

/* gravac on a complete network of 8, constant T = 10 ms, theta_min =
 * theta_max = 0.01 and a window longer than the run, so every round sends
 * topk(0.01) of d_wire = 100000 (k = 1000 values, 8000 bytes) in a ring
 * all-gather, c_ag(m) = (m-1)(alpha + 8000/B), after one Top-k call of
 * c d_wire seconds. Rounds take T + enc + c_ag(8), the round holding worker
 * 5's crash T + enc + timeout + c_ag(7), then T + enc + c_ag(7) until its
 * rejoin and T + enc + c_ag(8) again. */
Test(gravac, gravac_crash_costs_the_timeout_then_runs_over_the_survivors)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.175s,crash,5,\n"
                          "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=gravac", "network.topology=complete",
                          "network.latency=20us", "network.bandwidth=1GB/s",
                          "workload.sim_params=100000", "faults.sync_timeout=50ms",
                          "algorithm.theta_min=0.01", "algorithm.theta_max=0.01",
                          "algorithm.window=100000", "algorithm.compress_time_per_value=1e-7"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 11);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 60);
    const double a = 20e-6, B = 1e9, T = 0.01, to = 0.05, k = 1000, enc = 1e-7 * 1e5;
    const double r8 = T + enc + 7 * (a + 8 * k / B), r7 = T + enc + 6 * (a + 8 * k / B);
    cr_assert(fabs(ts.t[0] - r8) < 1e-7, "%.9f vs %.9f", ts.t[0], r8);
    int ab = check_crash_rounds(&ts, 0.175, 0.6, r8, r7 + to, r7, r8);
    cr_assert_eq(ab, 8, "round 8 holds the crash (%d)", ab);
    /* 7 batches a round while worker 5 is down; it lost round 8's step (the
     * run stops at the 60th applied update, before the members start round
     * 60, so a step count is the rounds taken part in plus lost steps) */
    int64_t with5 = h.env->w[5].steps - 1;
    cr_assert(with5 > 20 && with5 < 45, "worker 5 took part in %lld rounds", (long long)with5);
    cr_assert_eq(h.env->samples, 16 * (7 * 60 + with5));
    h_free(&h);
    unlink(path);
}

/* The update over the survivors: with theta_min = 1 (Top-k keeps every
 * value, the residuals stay 0) and momentum 0, a round applies
 * x <- x - (lr/m) sum over its m members of g_i, each g_i at the round's
 * x. The probe, called at the round's applied update (before any member
 * starts its next step), checks that identity against the members it
 * expects: all 8 before the crash, the 7 survivors from the aborted round
 * to the joiner's first round, 8 again after. */
typedef struct gv_probe {
    float x[64];
    double prev_t, crash, rejoin;
    int have, checked_down, checked_after, rounds;
    double worst;
    double join_ratio; /* ||dir_5|| / mean_i ||dir_i|| at worker 5's first round back */
} gv_probe;

static double gv_norm(const float *v, int64_t d)
{
    double s = 0;
    for (int64_t j = 0; j < d; j++)
        s += (double)v[j] * v[j];
    return sqrt(s);
}

static void probe_gravac_update(harness *h)
{
    gv_probe *p = h->probe_ctx;
    float s[64];
    const float *x = h->vt->model(h->alg, s);
    const int64_t d = h->env->d;
    double t = sim_time_to_s(sim_engine_now(h->eng));
    if (p->have) {
        int with5 = t < p->crash || p->prev_t > p->rejoin;
        int m = 0;
        double lr = algo_env_lr(h->env);
        for (int i = 0; i < h->env->n; i++)
            m += i != 5 || with5;
        double err = 0, step = 0;
        for (int64_t j = 0; j < d; j++) {
            double sum = 0;
            for (int i = 0; i < h->env->n; i++)
                if (i != 5 || with5)
                    sum += h->env->w[i].grad[j];
            err = fmax(err, fabs(p->x[j] - lr * sum / m - x[j]));
            step = fmax(step, fabs(lr * sum / m));
        }
        p->worst = fmax(p->worst, err / step);
        if (with5 && t > p->rejoin && p->join_ratio == 0) {
            double others = 0;
            for (int i = 0; i < h->env->n; i++)
                others += i == 5 ? 0 : gv_norm(h->env->w[i].grad, d) / 7;
            p->join_ratio = gv_norm(h->env->w[5].grad, d) / others;
        }
        p->checked_down += !with5;
        p->checked_after += with5 && t > p->rejoin;
        p->rounds++;
    }
    memcpy(p->x, x, (size_t)d * sizeof *x);
    p->have = 1;
    p->prev_t = t;
}

/* momentum 0 checks the mean; momentum 0.9 also that the joiner starts
 * from a fresh optimizer state: each member's direction is its own
 * momentum (the grad buffers hold it at the probe), so the identity holds
 * either way, but worker 5's first direction back is its bare gradient
 * (about 1/(1 - 0.9) = 10 times shorter than the survivors' momenta; with
 * its old momentum kept it would be as long as theirs). */
Test(gravac, gravac_averages_the_survivors_and_a_joiner_starts_fresh)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.175s,crash,5,\n"
                          "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    for (int mom = 0; mom < 2; mom++) {
        const char *sets[] = {set, "algorithm.name=gravac", "network.topology=complete",
                              "faults.sync_timeout=50ms", "algorithm.theta_min=1",
                              "algorithm.theta_max=1", "algorithm.window=100000",
                              mom ? "algorithm.momentum=0.9" : "algorithm.momentum=0"};
        static gv_probe p;
        memset(&p, 0, sizeof p);
        p.crash = 0.175;
        p.rejoin = 0.6;
        harness h;
        h_build(&h, test_base_ini, sets, 8);
        h.probe = probe_gravac_update;
        h.probe_ctx = &p;
        h_run(&h, 70);
        cr_assert_gt(p.checked_down, 20);
        cr_assert_gt(p.checked_after, 5);
        /* relative to the largest step (float rounding of x - step) */
        cr_assert_lt(p.worst, 1e-4, "update off by %g of a step", p.worst);
        if (mom)
            cr_assert_lt(p.join_ratio, 0.3, "the joiner's direction: %g", p.join_ratio);
        else
            cr_assert(fabs(p.join_ratio - 1) < 0.3, "%g", p.join_ratio);
        h_free(&h);
    }
    unlink(path);
}
