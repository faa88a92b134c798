/* overlap_local_sgd (algorithms/methods/overlap_local_sgd.c) under
 * crashes: a crash blocks once for the timeout, the anchor is the members'
 * mean and a joiner starts fresh, and the group path without a crash
 * equals the plain run. Its crash-free tests are in test_local_sgd.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/core/fault.h"
#include "tests/algorithms/harness.h"

/* ---- overlap_local_sgd under crashes ------------------------------------ */

/* overlap_local_sgd (tau = 4) on a complete network of 8, constant 10 ms
 * steps: all-reduce q is entered at 40 (q + 1) ms and takes c(8) < tau T,
 * so nobody blocks and the iterations are T apart. Worker 5 crashes at
 * 0.175 s, before the survivors enter all-reduce 4 at 0.2 s: they enter
 * its collective over the 7 survivors sync_timeout later, at 0.25 s, go
 * on with their local steps meanwhile, and block at their sync 5 (0.24 s)
 * until 0.25 s + c(7): iteration 25 takes T + timeout + c(7) - tau T.
 * Worker 5 rejoins at 0.6 s: the first anchor formed after that is sent to
 * it (alpha + S/B) and it starts from it; the iteration it first completes
 * takes T + c(7) + alpha + S/B (the anchor formed c(7) after the
 * survivors' sync). Every other iteration takes T. */
Test(overlap_local_sgd, overlap_local_sgd_crash_blocks_once_for_the_timeout)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.175s,crash,5,\n"
                          "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=overlap_local_sgd", "algorithm.local_steps=4",
                          "network.topology=complete", "network.latency=20us",
                          "network.bandwidth=1GB/s", "workload.sim_params=1000000",
                          "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 8);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 120);
    const double S = 4e6, a = 20e-6, B = 1e9, T = 0.01, to = 0.05, tau = 4;
    const double c7 = 2 * 6 * (a + S / (7 * B));
    const double blocked = T + to + c7 - tau * T, joined = T + c7 + a + S / B;
    cr_assert_eq(ts.n, 120);
    cr_assert(fabs(ts.t[0] - T) < 1e-9);
    int n_blocked = 0, n_joined = 0;
    for (int i = 1; i < ts.n; i++) {
        double dt = ts.t[i] - ts.t[i - 1];
        if (i == 24) {
            cr_assert(fabs(dt - blocked) < 1e-7, "iteration 25: %.9f vs %.9f", dt, blocked);
            n_blocked++;
        } else if (ts.t[i - 1] > 0.6 && fabs(dt - joined) < 1e-7) {
            n_joined++;
        } else {
            cr_assert(fabs(dt - T) < 1e-7, "iteration %d: %.9f", i + 1, dt);
        }
    }
    cr_assert_eq(n_blocked, 1);
    cr_assert_eq(n_joined, 1);
    cr_assert_eq(h.env->w[5].down, 0);
    /* 7 batches an iteration while worker 5 is down */
    int64_t w5 = h.env->w[5].steps;
    cr_assert(w5 > 20 && w5 < 80, "worker 5 took %lld steps", (long long)w5);
    h_free(&h);
    unlink(path);
}

typedef struct overlap_probe {
    float x0[8][64];   /* the initial models */
    double z0[64];     /* the expected anchor */
    double stale[64];  /* worker 5's model while it is down */
    double max_err;    /* |evaluated model - z0| from iteration 5 on */
    int checked;       /* iterations checked */
    int moved, near_lr, coords; /* the joiner's first step: coordinates moved by lr (1%) */
    double lr;
    int adam;
} overlap_probe;

static void probe_overlap(harness *h)
{
    overlap_probe *p = h->probe_ctx;
    const int64_t d = h->env->d;
    const float *x5 = h->env->w[5].x;
    if (!p->adam) {
        /* at a sync iteration the probe runs before the last worker's sync */
        if (h->env->iterations < 5 || h->env->iterations % 4 == 0)
            return;
        float scratch[64];
        const float *m = h->vt->model(h->alg, scratch);
        for (int64_t j = 0; j < d; j++)
            p->max_err = fmax(p->max_err, fabs(m[j] - p->z0[j]));
        p->checked++;
        return;
    }
    if (sim_time_to_s(sim_engine_now(h->eng)) < 0.1) {
        for (int64_t j = 0; j < d; j++)
            p->stale[j] = x5[j];
        return;
    }
    if (p->moved || h->env->w[5].down)
        return;
    int changed = 0;
    for (int64_t j = 0; j < d; j++)
        changed |= x5[j] != (float)p->stale[j];
    if (!changed)
        return;
    /* the joiner's first step from the anchor z0 (= the initial mean) */
    p->moved = 1;
    for (int64_t j = 0; j < d; j++) {
        p->near_lr += fabs(fabs(x5[j] - p->z0[j]) / p->lr - 1) < 0.01;
        p->coords++;
    }
}

/* overlap_local_sgd, tau = 4, independent initial models, ideal network;
 * worker 5 crashes at 15 ms, before its sync 0, and rejoins at 0.1 s.
 * With lr = 1e-30 and pull 0.5 only the pulls move the models: the
 * survivors' sync 0 gives x_i = (x_i^0 + m8)/2 (m8: the mean of the 8
 * initial models, the first anchor), so the anchor over the 7 members is
 * z0 = (m7 + m8)/2 (m7: the survivors' mean) and every later pull keeps
 * the live workers' mean at z0; the joiner takes an anchor (z0) as its
 * model, so the evaluated model (the live mean) is z0 from iteration 5 to
 * the end (float rounding 1e-6; the iterations ending with a sync are
 * reported before the last worker's pull, as without crashes, and are
 * skipped). An anchor over all 8 (worker 5's stale
 * buffer) or a joiner keeping its old model would move it by more than
 * 1e-3. With pull 1 every sync sets x_i to the anchor, which stays the
 * initial mean; with Adam (lr = 1e-3) the joiner's first step from it moves
 * every coordinate by lr (a fresh state's first step, lr g/(|g| + eps)). */
Test(overlap_local_sgd, overlap_local_sgd_anchor_is_the_members_mean_and_a_joiner_starts_fresh)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.015s,crash,5,\n"
                          "0.1s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static overlap_probe p;
    for (int adam = 0; adam < 2; adam++) {
        const char *sets[] = {set, "algorithm.name=overlap_local_sgd", "algorithm.local_steps=4",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              adam ? "algorithm.lr=1e-3" : "algorithm.lr=1e-30",
                              adam ? "algorithm.optimizer=adam" : "algorithm.optimizer=sgd",
                              adam ? "algorithm.pull=1" : "algorithm.pull=0.5"};
        memset(&p, 0, sizeof p);
        p.lr = 1e-3;
        p.adam = adam;
        harness h;
        h_build(&h, test_base_ini, sets, 8);
        const int64_t d = h.env->d;
        cr_assert_leq(d, 64);
        double gap = 0;
        for (int64_t j = 0; j < d; j++) {
            double m7 = 0, m8 = 0;
            for (int i = 0; i < 8; i++) {
                m8 += h.env->w[i].x[j] / 8.0;
                if (i != 5)
                    m7 += h.env->w[i].x[j] / 7.0;
            }
            p.z0[j] = adam ? m8 : (m7 + m8) / 2;
            gap = fmax(gap, fabs(m7 - m8));
        }
        cr_assert_gt(gap, 2e-3, "m7 and m8 differ by %g", gap);
        h.probe = probe_overlap;
        h.probe_ctx = &p;
        h_run(&h, 80);
        if (!adam) {
            cr_assert_gt(p.checked, 50);
            cr_assert_lt(p.max_err, 1e-6, "%g", p.max_err);
            cr_assert_gt(h.env->w[5].steps, 30, "the joiner took %lld steps",
                         (long long)h.env->w[5].steps);
        } else {
            cr_assert(p.moved, "the joiner never stepped");
            cr_assert_geq(p.near_lr, 0.9 * p.coords, "%d of %d coordinates moved by lr",
                          p.near_lr, p.coords);
        }
        h_free(&h);
    }
    unlink(path);
}

typedef struct eval_probe {
    times t;
    double m[128]; /* per iteration: the evaluated model's coordinates summed */
} eval_probe;

static void probe_eval(harness *h)
{
    eval_probe *p = h->probe_ctx;
    float scratch[64];
    const float *m = h->vt->model(h->alg, scratch);
    double sum = 0;
    for (int64_t j = 0; j < h->env->d; j++)
        sum += m[j] * (double)(j + 1);
    if (p->t.n < 128)
        p->m[p->t.n] = sum;
    record_time(h);
}

/* overlap_local_sgd with a crash scheduled after the end (so the group
 * path runs but no crash happens) equals the run without faults bit for
 * bit: the same iteration times, evaluated models (an iteration ending
 * with a sync is reported before the last worker's pull) and final
 * models; anchor momentum 0.5, exponential compute. */
Test(overlap_local_sgd, overlap_local_sgd_group_path_without_a_crash_equals_the_plain_run)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n100s,crash,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static eval_probe ep[2];
    static float x[2][8][64];
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"algorithm.name=overlap_local_sgd", "algorithm.local_steps=3",
                              "algorithm.anchor_momentum=0.5", "workers.compute=exponential(10ms)",
                              "network.topology=star", set};
        memset(&ep[k], 0, sizeof ep[k]);
        harness h;
        h_build(&h, test_base_ini, sets, k ? 6 : 5);
        cr_assert_eq(algo_env_crashes(h.env), k);
        cr_assert_leq(h.env->d, 64);
        h.probe = probe_eval;
        h.probe_ctx = &ep[k];
        h_run(&h, 90);
        for (int i = 0; i < 8; i++)
            memcpy(x[k][i], h.env->w[i].x, (size_t)h.env->d * sizeof(float));
        h_free(&h);
    }
    cr_assert_eq(ep[0].t.n, 90);
    cr_assert_eq(ep[1].t.n, 90);
    cr_assert_eq(memcmp(ep[0].t.t, ep[1].t.t, 90 * sizeof(double)), 0);
    cr_assert_eq(memcmp(ep[0].m, ep[1].m, 90 * sizeof(double)), 0);
    cr_assert_eq(memcmp(x[0], x[1], sizeof x[0]), 0);
    unlink(path);
}
