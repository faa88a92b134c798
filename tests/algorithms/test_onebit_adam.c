/* onebit_adam and onebit_lamb (algorithms/methods/onebit_adam.c,
 * docs/algorithms.md section 7): with freeze_step past the end the methods
 * are allreduce_sgd with adamw / lamb without bias correction; the bytes
 * the network carries in warm-up and compression; key errors; onebit_lamb
 * against a hand-written reference. Under crashes: no membership change
 * changes nothing, warm-up under crashes is all-reduce AdamW, a crash
 * costs the timeout then runs over the survivors, and the compressed
 * update is over the survivors with the error-feedback buffers reset at
 * each change. The 1-bit all-reduce itself is tested in test_onebit.c. */
#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/compress/onebit.h"
#include "algorithms/core/fault.h"
#include "tests/algorithms/harness.h"

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

/* freeze_step >= the rounds run: dense Adam (decoupled decay, no bias
 * correction) and dense LAMB, bit for bit up to 1e-5. */
Test(onebit_adam, warmup_only_equals_adamw_and_lamb)
{
    const int64_t d = 44, iters = 60;
    float ref[44], got[44];
    const char *a_ref[] = {"algorithm.name=allreduce_sgd", "algorithm.optimizer=adamw",
                           "algorithm.bias_correction=false", "algorithm.lr=0.01",
                           "algorithm.weight_decay=1e-3"};
    const char *a_got[] = {"algorithm.name=onebit_adam", "algorithm.freeze_step=1000",
                           "algorithm.lr=0.01", "algorithm.weight_decay=1e-3"};
    run_model(a_ref, 5, iters, ref);
    run_model(a_got, 4, iters, got);
    double gap = max_rel_gap(ref, got, d);
    cr_assert_leq(gap, 1e-5, "adam: gap %g", gap);

    const char *l_ref[] = {"algorithm.name=allreduce_sgd", "algorithm.optimizer=lamb",
                           "algorithm.bias_correction=false", "algorithm.lr=0.01",
                           "algorithm.weight_decay=1e-3"};
    const char *l_got[] = {"algorithm.name=onebit_lamb", "algorithm.freeze_step=1000",
                           "algorithm.lr=0.01", "algorithm.weight_decay=1e-3"};
    run_model(l_ref, 5, iters, ref);
    run_model(l_got, 4, iters, got);
    gap = max_rel_gap(ref, got, d);
    cr_assert_leq(gap, 1e-5, "lamb: gap %g", gap);

    /* an early freeze changes the trajectory but stays close and finite */
    const char *a_c[] = {"algorithm.name=onebit_adam", "algorithm.freeze_step=20",
                         "algorithm.lr=0.01", "algorithm.weight_decay=1e-3"};
    run_model(a_ref, 5, iters, ref);
    run_model(a_c, 4, iters, got);
    gap = max_rel_gap(ref, got, d);
    cr_assert_gt(gap, 1e-6, "adam compressed: gap %g", gap);
    cr_assert_lt(gap, 0.5, "adam compressed: gap %g", gap);
    const char *l_c[] = {"algorithm.name=onebit_lamb", "algorithm.freeze_step=20",
                         "algorithm.lr=0.01", "algorithm.weight_decay=1e-3"};
    run_model(l_ref, 5, iters, ref);
    run_model(l_c, 4, iters, got);
    gap = max_rel_gap(ref, got, d);
    cr_assert_gt(gap, 1e-6, "lamb compressed: gap %g", gap);
    cr_assert_lt(gap, 0.5, "lamb compressed: gap %g", gap);
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
                                    "name = onebit_adam\n"
                                    "lr = 0.01\n"
                                    "batch = 16\n"
                                    "[workload]\n"
                                    "model = softmax\n"
                                    "dataset = blobs(4, 10, 2000)\n"
                                    "sim_params = 10000\n";

/* Warm-up rounds: the ring all-reduce, 2(n-1)/n x S per worker (S = 4d or
 * 2d with fp16); compressed rounds: 2(n-1)(d_pad/(8n) + 4) per worker,
 * d_pad = 10016 for n = 4, d_wire = 10000. */
Test(onebit_adam, network_carries_exact_message_sizes)
{
    const double n = 4, T = 50, W = 10, dw = 10000;
    const char *s1[] = {"algorithm.freeze_step=10"};
    xp_run_result r = test_run_ini(star_ini, s1, 1, NULL);
    cr_assert_eq(r.iterations, 50);
    double comp = n * 2 * (n - 1) * (10016.0 / 32 + 4);
    cr_assert_eq(r.bytes_sent, W * 2 * (n - 1) * 4 * dw + (T - W) * comp, "%g", r.bytes_sent);

    const char *s2[] = {"algorithm.freeze_step=10", "workload.wire_dtype=fp16"};
    r = test_run_ini(star_ini, s2, 2, NULL);
    cr_assert_eq(r.bytes_sent, W * 2 * (n - 1) * 2 * dw + (T - W) * comp, "%g", r.bytes_sent);

    const char *s3[] = {"algorithm.freeze_step=0", "algorithm.name=onebit_lamb"};
    r = test_run_ini(star_ini, s3, 2, NULL);
    cr_assert_eq(r.bytes_sent, T * comp, "%g", r.bytes_sent);
}

Test(onebit_adam, bad_keys_are_config_errors)
{
    cfg_config cfg;
    sim_err err = {0};
    const char *sets[] = {"algorithm.freeze_step=-1"};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "c.ini", star_ini, sets, 1, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    xp_run_opts opts = {0};
    xp_run_result res;
    cr_assert_neq(xp_experiment_run(&cfg, &opts, &res, &err), 0);
    cr_assert_not_null(strstr(err.msg, "freeze_step"), "%s", err.msg);
    cfg_release(&cfg);
}

/* ---- onebit_lamb against a hand-written reference ----
 *
 * The update rules of docs/algorithms.md 7.1 and 7.3 written out plainly
 * (float values, double norms), driven by the gradients the method's
 * workers computed in each round (read at the round's iteration hook,
 * before any worker starts the next step). 4 workers, mlp(3) on blobs
 * (d = 49 in two layers, padded to 64), freeze_step 3 and 9 rounds: 3 dense LAMB rounds,
 * the freeze, 6 rounds of 1-bit compressed momentum with both error
 * buffers. Weight decay 0.3 (so rho matters) and factor_threshold 0.02 (so
 * the bound around f_last is reached). The model must agree after every
 * round to 1e-5. */

#define RN 4
#define RD 49   /* mlp(3) on blobs(4, 10): fc1 10 x 3 + 3, out 3 x 4 + 4 */
#define RDP 64  /* 49 padded to a multiple of 8 n = 32 */

typedef struct lamb_ref {
    int freeze, k, nl;
    int64_t off[4], len[4];
    double lr, b1, b2, eps, wd, min_tr, max_tr, cb, fmax_, fmin_, phi;
    float x[RD], m[RD], v[RD], vf[RD];
    double c[4], kappa[4], f_last[4];
    float we[RN][RDP], se[RDP];
    double worst;
} lamb_ref;

static lamb_ref R;

/* v <- s sgn(v), s = ||v|| / sqrt(len); e <- v - s sgn(v) */
static void ref_sign(float *v, float *e, int64_t len)
{
    double q = 0;
    for (int64_t j = 0; j < len; j++)
        q += (double)v[j] * v[j];
    float s = (float)(sqrt(q) / sqrt((double)len));
    for (int64_t j = 0; j < len; j++) {
        float out = v[j] >= 0 ? s : -s;
        e[j] = v[j] - out;
        v[j] = out;
    }
}

static void ref_round(lamb_ref *r, const float *const *g)
{
    const float b1 = (float)r->b1, b2 = (float)r->b2, eps = (float)r->eps, wd = (float)r->wd;
    const float lr = (float)r->lr;
    r->k++;
    if (r->k <= r->freeze) {
        /* dense LAMB, no bias correction; c_l tracks the trust ratio */
        float gb[RD];
        for (int j = 0; j < RD; j++) {
            float s = 0;
            for (int i = 0; i < RN; i++)
                s += g[i][j];
            gb[j] = s * (1.0f / RN);
        }
        for (int l = 0; l < r->nl; l++) {
            float u[RD];
            double xn = 0, un = 0;
            for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++) {
                r->v[j] = b2 * r->v[j] + (1 - b2) * gb[j] * gb[j];
                r->m[j] = b1 * r->m[j] + (1 - b1) * gb[j];
                u[j] = r->m[j] / (sqrtf(r->v[j]) + eps) + wd * r->x[j];
                xn += (double)r->x[j] * r->x[j];
                un += (double)u[j] * u[j];
            }
            double coeff = 1;
            if (xn > 0 && un > 0)
                coeff = fmin(fmax(sqrt(xn) / sqrt(un), r->min_tr), r->max_tr);
            if (coeff != 1)
                r->c[l] = r->cb * r->c[l] + (1 - r->cb) * coeff;
            for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++)
                r->x[j] -= lr * ((float)coeff * u[j]);
        }
        return;
    }
    if (r->k == r->freeze + 1) {
        /* the freeze: v_fresh = v; kappa_l = mean r / r_l, r_l = ||m_l|| / sqrt(d_l) */
        memcpy(r->vf, r->v, sizeof r->v);
        double rl[4], rbar = 0;
        for (int l = 0; l < r->nl; l++) {
            double q = 0;
            for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++)
                q += (double)r->m[j] * r->m[j];
            rl[l] = sqrt(q / (double)r->len[l]);
            rbar += rl[l] / r->nl;
        }
        for (int l = 0; l < r->nl; l++) {
            r->kappa[l] = rbar / rl[l];
            r->f_last[l] = 0; /* none yet */
        }
    }
    /* workers: c_i = kappa (b1 m + (1 - b1) g_i) + e_i, 1-bit with error */
    float q[RN][RDP];
    for (int i = 0; i < RN; i++) {
        for (int j = 0; j < RDP; j++)
            q[i][j] = 0;
        for (int l = 0; l < r->nl; l++)
            for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++)
                q[i][j] = (float)r->kappa[l] * (b1 * r->m[j] + (1 - b1) * g[i][j]);
        for (int j = 0; j < RDP; j++)
            q[i][j] += r->we[i][j];
        ref_sign(q[i], r->we[i], RDP);
    }
    /* servers: chunk c of RDP / RN values, a = mean_i q_i + e^s, 1-bit with error */
    float a[RDP];
    for (int j = 0; j < RDP; j++) {
        float s = 0;
        for (int i = 0; i < RN; i++)
            s += q[i][j];
        a[j] = s * (1.0f / RN) + r->se[j];
    }
    for (int c = 0; c < RN; c++)
        ref_sign(a + c * (RDP / RN), r->se + c * (RDP / RN), RDP / RN);
    /* the update: m unscaled, gradient recovered, fresh variance, factor */
    for (int l = 0; l < r->nl; l++) {
        double f = 0, pn = 0, un = 0;
        for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++) {
            float mn = a[j] / (float)r->kappa[l];
            float gh = (mn - b1 * r->m[j]) / (1 - b1);
            r->vf[j] = b2 * r->vf[j] + (1 - b2) * gh * gh;
            r->m[j] = mn;
            double ratio = ((double)sqrtf(r->v[j]) + r->eps) / ((double)sqrtf(r->vf[j]) + r->eps);
            f = fmax(f, ratio);
            double p = mn / (sqrtf(r->v[j]) + eps);
            pn += p * p;
            un += (p + r->wd * r->x[j]) * (p + r->wd * r->x[j]);
        }
        if (r->wd > 0) {
            double rho = fmin(1.0, sqrt(pn / un));
            f = rho * f + (1 - rho);
        }
        f = fmin(fmax(f, r->fmin_), r->fmax_);
        if (r->f_last[l] > 0)
            f = fmin(fmax(f, (1 - r->phi) * r->f_last[l]), (1 + r->phi) * r->f_last[l]);
        r->f_last[l] = f;
        for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++) {
            float u = r->m[j] / (sqrtf(r->v[j]) + eps) + wd * r->x[j];
            r->x[j] -= lr * (float)(r->c[l] * f) * u;
        }
    }
}

static void lamb_probe(harness *h)
{
    const float *g[RN];
    for (int i = 0; i < RN; i++)
        g[i] = h->env->w[i].grad;
    ref_round(&R, g);
    float scratch[RD];
    const float *x = h->vt->model(h->alg, scratch);
    double gap = 0, scale = 0;
    for (int j = 0; j < RD; j++) {
        gap = fmax(gap, fabs((double)x[j] - R.x[j]));
        scale = fmax(scale, fabs((double)R.x[j]));
    }
    cr_assert_leq(gap / scale, 1e-5, "round %d: gap %g", R.k, gap / scale);
    R.worst = fmax(R.worst, gap / scale);
}

Test(onebit_adam, lamb_matches_a_hand_written_reference)
{
    const char *sets[] = {"algorithm.name=onebit_lamb", "algorithm.freeze_step=3",
                          "algorithm.lr=0.02", "algorithm.weight_decay=0.3",
                          "workers.count=4", "workload.model=mlp(3)",
                          "algorithm.factor_threshold=0.02"};
    harness h;
    h_build(&h, test_base_ini, sets, 7);
    cr_assert_eq(h.env->d, RD);
    cr_assert_eq(h.env->n, RN);
    memset(&R, 0, sizeof R);
    R.freeze = 3;
    R.nl = h.env->model->n_layers;
    cr_assert(R.nl >= 2 && R.nl <= 4, "%d layers", R.nl);
    for (int l = 0; l < R.nl; l++) {
        R.off[l] = h.env->model->layers[l].offset;
        R.len[l] = h.env->model->layers[l].size;
    }
    R.lr = 0.02;
    R.wd = 0.3;
    R.b1 = h.cfg.beta1;
    R.b2 = h.cfg.beta2;
    R.eps = h.cfg.eps;
    R.min_tr = h.cfg.lamb_min_trust;
    R.max_tr = h.cfg.lamb_max_trust;
    R.cb = 0.9;     /* the documented defaults of coeff_beta, factor_max */
    R.fmax_ = 4.0;  /* and factor_min; a small factor_threshold, so that */
    R.fmin_ = 0.5;  /* the bound around f_last is reached */
    R.phi = 0.02;
    float scratch[RD];
    memcpy(R.x, h.vt->model(h.alg, scratch), sizeof R.x);
    h.probe = lamb_probe;
    h_run(&h, 9);
    cr_assert_eq(R.k, 9);
    /* the compressed rounds moved the model (the check is not vacuous) */
    cr_assert_gt(R.kappa[0], 0);
    h_free(&h);
}

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
