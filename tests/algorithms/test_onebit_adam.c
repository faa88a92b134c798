/* onebit_adam and onebit_lamb (algorithms/methods/onebit_adam.c) under
 * crashes: no membership change changes nothing, warm-up under crashes is
 * all-reduce AdamW, a crash costs the timeout then runs over the
 * survivors, and the compressed update is over the survivors with the
 * error-feedback buffers reset at each change. The 1-bit all-reduce and
 * the crash-free method tests are in test_onebit.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/compress/onebit.h"
#include "algorithms/core/fault.h"
#include "tests/algorithms/harness.h"

/* ---- onebit_adam / onebit_lamb under crashes ----------------------------- */

/* Without a membership change the group path changes nothing: a crash
 * scheduled after the end gives the same models, bit for bit, and the same
 * iteration times as the run without faults, through the warm-up (10
 * dense rounds) and the 1-bit stage, for both methods. */
Test(onebit_adam, onebit_without_a_membership_change_changes_nothing)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n100s,crash,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static const char *const names[] = {"algorithm.name=onebit_adam",
                                        "algorithm.name=onebit_lamb"};
    for (int m = 0; m < 2; m++) {
        static times ta, tb;
        float xa[64], xb[64], s[64];
        const char *sets[] = {names[m], "network.topology=complete", "algorithm.freeze_step=10",
                              "algorithm.lr=0.01", set};
        harness h;
        for (int run = 0; run < 2; run++) {
            times *ts = run ? &tb : &ta;
            ts->n = 0;
            h_build(&h, test_base_ini, sets, run ? 5 : 4);
            h.probe = record_time;
            h.probe_ctx = ts;
            h_run(&h, 40);
            memcpy(run ? xb : xa, h.vt->model(h.alg, s), (size_t)h.env->d * sizeof(float));
            h_free(&h);
        }
        cr_assert_eq(ta.n, tb.n);
        for (int i = 0; i < ta.n; i++)
            cr_assert_eq(ta.t[i], tb.t[i], "%s: iteration %d at %.9f vs %.9f", names[m], i,
                         ta.t[i], tb.t[i]);
        cr_assert_eq(memcmp(xa, xb, 44 * sizeof(float)), 0, "%s: models differ", names[m]);
    }
    unlink(path);
}

/* In the warm-up onebit_adam is allreduce_sgd with adamw and no bias
 * correction; under the same crash and rejoin the two give the same model
 * bit for bit (the mean over the survivors, the join at the next applied
 * update) and the same iteration times, except that onebit_adam's joiner
 * is sent x, m and v (3S bytes, allreduce_sgd's only x): from its first
 * round on every iteration is 2S/B later. */
Test(onebit_adam, onebit_warmup_under_crashes_is_allreduce_adamw)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                     "0.105s,crash,5,\n"
                     "0.3s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static times ta, tb;
    float xa[64], xb[64], s[64];
    for (int run = 0; run < 2; run++) {
        const char *sets[] = {set, "network.topology=complete", "faults.sync_timeout=50ms",
                              "network.bandwidth=1GB/s", "algorithm.lr=0.01",
                              run ? "algorithm.name=allreduce_sgd" : "algorithm.name=onebit_adam",
                              run ? "algorithm.optimizer=adamw" : "algorithm.freeze_step=1000",
                              "algorithm.bias_correction=false"};
        times *ts = run ? &tb : &ta;
        ts->n = 0;
        harness h;
        h_build(&h, test_base_ini, sets, run ? 8 : 7);
        h.probe = record_time;
        h.probe_ctx = ts;
        h_run(&h, 60);
        memcpy(run ? xb : xa, h.vt->model(h.alg, s), (size_t)h.env->d * sizeof(float));
        h_free(&h);
    }
    cr_assert_eq(ta.n, tb.n);
    const double late = 2 * 176 / 1e9;
    int shifted = 0;
    for (int i = 0; i < ta.n; i++) {
        double dt = ta.t[i] - tb.t[i];
        if (shifted || fabs(dt) > 1e-12) {
            cr_assert_gt(tb.t[i - 1], 0.3, "iteration %d late before the rejoin", i);
            cr_assert(fabs(dt - late) < 1e-12, "iteration %d: %.12f late", i, dt);
            shifted++;
        }
    }
    cr_assert_gt(shifted, 10);
    cr_assert_eq(memcmp(xa, xb, 44 * sizeof(float)), 0, "models differ");
    unlink(path);
}

/* The 1-bit stage (freeze_step = 0) on a complete network of 8, constant
 * T = 10 ms, d_wire = 100000, compression time c d_wire before phase 1.
 * Over m members a phase message is b(m) = d_pad(m)/(8m) + 4 bytes
 * (d_pad(m) = d_wire rounded up to a multiple of 8m): phase 1 sends one to
 * every other member at once (alpha + b/B on the complete network's own
 * links), phase 2 is a ring all-gather, (m-1)(alpha + b/B); a round takes
 * R(m) = T + c d_wire + m (alpha + b(m)/B). Worker 5 crashes at 0.175 s
 * (round 8): that round takes R(7) + timeout, then R(7) until the rejoin
 * at 0.6 s, R(8) after it. Both methods (the same messages). */
Test(onebit_adam, onebit_crash_costs_the_timeout_then_runs_over_the_survivors)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                     "0.175s,crash,5,\n"
                     "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static const char *const names[] = {"algorithm.name=onebit_adam",
                                        "algorithm.name=onebit_lamb"};
    const double a = 20e-6, B = 1e9, T = 0.01, to = 0.05, enc = 1e-7 * 1e5;
    const double b8 = 1563 + 4, b7 = 1786 + 4; /* d_pad: 100032 = 1563 x 64, 100016 = 1786 x 56 */
    const double r8 = T + enc + 8 * (a + b8 / B), r7 = T + enc + 7 * (a + b7 / B);
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {set, names[m], "network.topology=complete", "network.latency=20us",
                              "network.bandwidth=1GB/s", "workload.sim_params=100000",
                              "faults.sync_timeout=50ms", "algorithm.freeze_step=0",
                              "algorithm.compress_time_per_value=1e-7", "algorithm.lr=0.001"};
        static times ts;
        ts.n = 0;
        harness h;
        h_build(&h, test_base_ini, sets, 10);
        h.probe = record_time;
        h.probe_ctx = &ts;
        h_run(&h, 60);
        cr_assert(fabs(ts.t[0] - r8) < 1e-7, "%.9f vs %.9f", ts.t[0], r8);
        int ab = check_crash_rounds(&ts, 0.175, 0.6, r8, r7 + to, r7, r8);
        cr_assert_eq(ab, 8, "round 8 holds the crash (%d)", ab);
        int64_t with5 = h.env->w[5].steps - 1;
        cr_assert(with5 > 20 && with5 < 45, "worker 5 took part in %lld rounds",
                  (long long)with5);
        cr_assert_eq(h.env->samples, 16 * (7 * 60 + with5));
        float s[64];
        const float *x = h.vt->model(h.alg, s);
        for (int64_t j = 0; j < h.env->d; j++)
            cr_assert(isfinite(x[j]));
        h_free(&h);
    }
    unlink(path);
}

/* The 1-bit stage's update over the survivors, recomputed in the test.
 * freeze_step = 0 freezes v at 0, so with weight decay 0 onebit_adam's
 * update is x <- x - lr m / eps, m the 1-bit all-reduce (onebit.h) of the
 * members' m_i = beta1 m + (1 - beta1) g_i. The probe keeps its own m and
 * its own 1-bit state over the members it expects (all 8, the 7 survivors
 * from the aborted round to the join, all 8 after), re-made (errors 0)
 * at each membership change, and checks every applied update against it.
 * Carrying the errors over a change, or averaging over the wrong members,
 * fails it. */
typedef struct ob_probe {
    float x[64], m[64], mi[8 * 64], mnew[64];
    algo_onebit ob;
    int members;       /* the members the 1-bit state is for: a bit set */
    double prev_t, crash, rejoin, worst, lr;
    int have, changes, checked;
} ob_probe;

static void probe_onebit_update(harness *h)
{
    ob_probe *p = h->probe_ctx;
    float s[64];
    const float *x = h->vt->model(h->alg, s);
    const int64_t d = h->env->d;
    double t = sim_time_to_s(sim_engine_now(h->eng));
    if (p->have) {
        int with5 = t < p->crash || p->prev_t > p->rejoin;
        int set = with5 ? 0xff : 0xff & ~(1 << 5), n = 0;
        const float *ptr[8];
        for (int i = 0; i < 8; i++) {
            if (!(set >> i & 1))
                continue;
            float *mi = p->mi + n * 64;
            for (int64_t j = 0; j < d; j++)
                mi[j] = 0.9f * p->m[j] + (float)(1.0 - 0.9) * h->env->w[i].grad[j];
            ptr[n++] = mi;
        }
        if (set != p->members) {
            algo_onebit_release(&p->ob);
            cr_assert_eq(algo_onebit_init(&p->ob, n, d, 1, NULL), 0);
            p->members = set;
            p->changes++;
        }
        algo_onebit_allreduce(&p->ob, ptr, p->mnew);
        double err = 0, step = 0;
        for (int64_t j = 0; j < d; j++) {
            /* in float, as the method computes it */
            float u = p->mnew[j] / (sqrtf(0.0f) + (float)1e-8);
            float want = p->x[j] - (float)p->lr * u;
            err = fmax(err, fabs((double)want - x[j]));
            step = fmax(step, fabs((double)p->lr * u));
        }
        p->worst = fmax(p->worst, err / step);
        memcpy(p->m, p->mnew, (size_t)d * sizeof(float));
        p->checked++;
    }
    memcpy(p->x, x, (size_t)d * sizeof *x);
    p->have = 1;
    p->prev_t = t;
}

Test(onebit_adam, onebit_update_over_the_survivors_with_errors_reset_at_each_change)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                     "0.175s,crash,5,\n"
                     "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=onebit_adam", "network.topology=complete",
                          "faults.sync_timeout=50ms", "algorithm.freeze_step=0",
                          "algorithm.lr=1e-12", "algorithm.beta1=0.9", "algorithm.eps=1e-8",
                          "algorithm.weight_decay=0"};
    static ob_probe p;
    memset(&p, 0, sizeof p);
    p.crash = 0.175;
    p.rejoin = 0.6;
    p.lr = 1e-12;
    p.members = -1;
    harness h;
    h_build(&h, test_base_ini, sets, 9);
    h.probe = probe_onebit_update;
    h.probe_ctx = &p;
    float s0[64];
    memcpy(p.x, h.vt->model(h.alg, s0), (size_t)h.env->d * sizeof(float));
    p.have = 1;
    h_run(&h, 70);
    cr_assert_eq(p.changes, 3, "membership changes: %d", p.changes);
    cr_assert_eq(p.checked, 70);
    cr_assert_lt(p.worst, 1e-6, "update off by %g of a step", p.worst);
    algo_onebit_release(&p.ob);
    h_free(&h);
    unlink(path);
}
