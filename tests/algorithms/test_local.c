/* The local-step methods (docs/algorithms.md 1.5, 2, 4, 8, 12): exact
 * equivalences with the same data order (local_sgd H = 1 and allreduce_sgd;
 * slowmo beta = 0, alpha = 1 and local_sgd; slowmo tau = 1 on plain SGD and
 * heavy-ball allreduce_sgd; adaptive_local_sgd with an infinite eta and
 * local_sgd; overlap_local_sgd with alpha = 0 and independent SGD), the
 * batch tests on a four-gradient example, and round times (the expected
 * maximum of n Gamma(H, m) sums; Overlap-Local-SGD's blocking). */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>

#include "algorithms/local.h"
#include "dec_harness.h"

static void models_of(harness *h, float *out)
{
    const float *m = h->vt->model(h->alg, out);
    if (m != out)
        memcpy(out, m, (size_t)h->env->d * sizeof *out);
}

/* Runs ini + sets_a and ini + sets_b for iters iterations; the evaluated
 * models agree within tol relative to the largest parameter (at least 1):
 * float32 rounding, amplified by momentum and, for SlowMo, by the
 * cancellation in (x0 - xbar) / lr. */
static void assert_same_model(const char *const *a, int na, const char *const *b, int nb,
                              int64_t iters, double tol)
{
    harness ha, hb;
    h_build(&ha, base_ini, a, na);
    h_run(&ha, iters);
    h_build(&hb, base_ini, b, nb);
    h_run(&hb, iters);
    int64_t d = ha.env->d;
    float *xa = malloc((size_t)d * sizeof *xa), *xb = malloc((size_t)d * sizeof *xb);
    models_of(&ha, xa);
    models_of(&hb, xb);
    double worst = 0, moved = 0;
    for (int64_t j = 0; j < d; j++) {
        worst = fmax(worst, fabs((double)xa[j] - (double)xb[j]));
        moved = fmax(moved, fabs((double)xa[j]));
    }
    cr_assert(moved > 1e-3, "the models did not move");
    cr_assert(worst <= tol * fmax(1.0, moved), "max |difference| %.3g > %.3g (max |x| %.3g)", worst, tol, moved);
    free(xa);
    free(xb);
    h_free(&ha);
    h_free(&hb);
}

Test(local, local_sgd_h1_with_momentum_equals_allreduce_sgd)
{
    const char *a[] = {"algorithm.name=local_sgd", "algorithm.local_steps=1",
                       "algorithm.momentum=0.9", "algorithm.weight_decay=0.001"};
    const char *b[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9",
                       "algorithm.weight_decay=0.001"};
    assert_same_model(a, 4, b, 3, 120, 1e-5);
    const char *an[] = {"algorithm.name=local_sgd", "algorithm.local_steps=1",
                        "algorithm.momentum=0.9", "algorithm.nesterov=true"};
    const char *bn[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9",
                        "algorithm.nesterov=true"};
    assert_same_model(an, 4, bn, 3, 120, 1e-5);
}

Test(local, post_local_sgd_before_the_switch_equals_allreduce_sgd)
{
    const char *a[] = {"algorithm.name=post_local_sgd", "algorithm.switch_epoch=100",
                       "algorithm.momentum=0.9"};
    const char *b[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9"};
    assert_same_model(a, 3, b, 2, 120, 1e-5);
}

Test(local, slowmo_beta0_alpha1_equals_local_sgd)
{
    const char *a[] = {"algorithm.name=slowmo", "algorithm.local_steps=4",
                       "algorithm.slow_momentum=0", "algorithm.slow_lr=1",
                       "algorithm.momentum=0.9"};
    const char *b[] = {"algorithm.name=local_sgd", "algorithm.local_steps=4",
                       "algorithm.momentum=0.9"};
    assert_same_model(a, 5, b, 3, 120, 1e-5);
}

Test(local, slowmo_tau1_plain_sgd_equals_heavy_ball_allreduce_sgd)
{
    const char *a[] = {"algorithm.name=slowmo", "algorithm.local_steps=1",
                       "algorithm.slow_momentum=0.9", "algorithm.slow_lr=1",
                       "algorithm.momentum=0"};
    const char *b[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9"};
    assert_same_model(a, 5, b, 2, 120, 1e-5);
}

Test(local, bmuf_classic_with_constant_lr_equals_slowmo)
{
    /* Delta = -alpha lr u: the same iterates up to rounding */
    const char *a[] = {"algorithm.name=slowmo", "algorithm.local_steps=3",
                       "algorithm.slow_momentum=0.6", "algorithm.slow_lr=0.8",
                       "algorithm.bmuf=classic"};
    const char *b[] = {"algorithm.name=slowmo", "algorithm.local_steps=3",
                       "algorithm.slow_momentum=0.6", "algorithm.slow_lr=0.8"};
    assert_same_model(a, 5, b, 4, 120, 1e-5);
}

Test(local, adaptive_with_infinite_eta_equals_local_sgd)
{
    const char *a[] = {"algorithm.name=adaptive_local_sgd", "algorithm.local_steps=3",
                       "algorithm.eta=1e300", "algorithm.momentum=0.9"};
    const char *b[] = {"algorithm.name=local_sgd", "algorithm.local_steps=3",
                       "algorithm.momentum=0.9"};
    assert_same_model(a, 4, b, 3, 120, 1e-5);
}

Test(local, adaptive_batch_grows_and_never_shrinks)
{
    const char *a[] = {"algorithm.name=adaptive_local_sgd", "algorithm.local_steps=3",
                       "algorithm.eta=0.5", "algorithm.max_batch=48"};
    harness h;
    h_build(&h, base_ini, a, 4);
    h_run(&h, 150);
    for (int i = 0; i < h.env->n; i++)
        cr_assert_eq(h.env->w[i].batch, h.env->w[0].batch);
    cr_assert(h.env->w[0].batch > 16 && h.env->w[0].batch <= 48, "batch %d",
              h.env->w[0].batch);
    cr_assert(h.env->batch_changes >= h.env->n);
    h_free(&h);
}

Test(local, overlap_alpha0_equals_independent_local_sgd)
{
    const char *a[] = {"algorithm.name=overlap_local_sgd", "algorithm.local_steps=2",
                       "algorithm.pull=0", "algorithm.momentum=0.9"};
    const char *b[] = {"algorithm.name=local_sgd", "algorithm.local_steps=100000",
                       "algorithm.momentum=0.9"};
    harness ha, hb;
    h_build(&ha, base_ini, a, 4);
    h_run(&ha, 60);
    h_build(&hb, base_ini, b, 3);
    h_run(&hb, 60);
    int n = ha.env->n;
    const float **xa = malloc((size_t)n * sizeof *xa), **xb = malloc((size_t)n * sizeof *xb);
    ha.vt->worker_models(ha.alg, xa);
    hb.vt->worker_models(hb.alg, xb);
    for (int i = 0; i < n; i++)
        cr_assert_eq(memcmp(xa[i], xb[i], (size_t)ha.env->d * sizeof(float)), 0,
                     "worker %d differs", i);
    cr_assert(h_consensus(&ha) > 0, "independent workers should differ");
    free(xa);
    free(xb);
    h_free(&ha);
    h_free(&hb);
}

/* Four gradients in 2-D: a = (1,0), (3,0), (2,2), (2,-2); gbar = (2,0),
 * ||gbar||^2 = 4. With b - 1 = 3: V = (2 + 8)/3 = 10/3; q = 2, 6, 4, 4 so
 * V_ip = 8/3; o = (0,0), (0,0), (0,2), (0,-2) so V_o = 8/3. */
Test(local, batch_tests_on_the_four_gradient_example)
{
    const double a[4][2] = {{1, 0}, {3, 0}, {2, 2}, {2, -2}};
    double g[2] = {0, 0};
    for (int s = 0; s < 4; s++)
        for (int j = 0; j < 2; j++)
            g[j] += a[s][j] / 4;
    double g2 = g[0] * g[0] + g[1] * g[1], q[4], qm = 0, v = 0, vip = 0, vo = 0;
    for (int s = 0; s < 4; s++) {
        q[s] = a[s][0] * g[0] + a[s][1] * g[1];
        qm += q[s] / 4;
    }
    for (int j = 0; j < 2; j++) {
        double om = 0;
        for (int s = 0; s < 4; s++)
            om += (a[s][j] - q[s] / g2 * g[j]) / 4;
        for (int s = 0; s < 4; s++) {
            v += (a[s][j] - g[j]) * (a[s][j] - g[j]) / 3;
            double o = a[s][j] - q[s] / g2 * g[j] - om;
            vo += o * o / 3;
        }
    }
    for (int s = 0; s < 4; s++)
        vip += (q[s] - qm) * (q[s] - qm) / 3;
    cr_assert_float_eq(g2, 4.0, 1e-12);
    cr_assert_float_eq(v, 10.0 / 3, 1e-12);
    cr_assert_float_eq(vip, 8.0 / 3, 1e-12);
    cr_assert_float_eq(vo, 8.0 / 3, 1e-12);
    wl_batch_stats st = {.b = 4, .gnorm2 = g2, .v_norm = v, .v_ip = vip, .v_orth = vo};
    /* norm, eta = 0.5: (10/3) / (0.25 * 4) = 10/3 -> 4 */
    double p = algo_batch_test_proposal(ALGO_BATCH_NORM, &st, 0.5, 1, 1);
    cr_assert_float_eq(p, 10.0 / 3, 1e-12);
    cr_assert_eq(algo_batch_test_next(2, p, 0), 4);
    cr_assert_eq(algo_batch_test_next(2, p, 3), 3);
    cr_assert_eq(algo_batch_test_next(8, p, 0), 8);
    /* inner product, theta = 0.5: (8/3) / (0.25 * 16) = 2/3 */
    p = algo_batch_test_proposal(ALGO_BATCH_INNER_PRODUCT, &st, 1, 0.5, 1);
    cr_assert_float_eq(p, 2.0 / 3, 1e-12);
    cr_assert_eq(algo_batch_test_next(2, p, 0), 2);
    /* augmented, theta = 0.5, nu = 0.5: max(2/3, (8/3) / (0.25 * 4)) = 8/3 */
    p = algo_batch_test_proposal(ALGO_BATCH_AUGMENTED, &st, 1, 0.5, 0.5);
    cr_assert_float_eq(p, 8.0 / 3, 1e-12);
    cr_assert_eq(algo_batch_test_next(2, p, 0), 3);
    /* a zero gradient with noise asks for the cap */
    wl_batch_stats z = {.b = 4, .gnorm2 = 0, .v_norm = 1};
    cr_assert(isinf(algo_batch_test_proposal(ALGO_BATCH_NORM, &z, 0.5, 1, 1)));
    cr_assert_eq(algo_batch_test_next(2, INFINITY, 64), 64);
}

/* The worker's statistics go through wl_model_batch_stats: its b - 1
 * variance of a constant batch is 0, and the norm test then keeps b. */
Test(local, batch_stats_of_identical_samples_have_no_variance)
{
    harness h;
    const char *a[] = {"algorithm.name=local_sgd"};
    h_build(&h, base_ini, a, 1);
    const wl_model *m = h.env->model;
    int dim = h.env->ds->dim;
    float *x = calloc((size_t)4 * dim, sizeof *x), y[4] = {1, 1, 1, 1};
    for (int s = 0; s < 4; s++)
        for (int j = 0; j < dim; j++)
            x[s * dim + j] = 0.1f * (float)(j + 1);
    float *ws = malloc(wl_model_stats_workspace_floats(m, 4) * sizeof *ws);
    wl_batch_stats st;
    cr_assert_eq(wl_model_batch_stats(m, h.env->w[0].x, x, y, 4, &st, ws), 0);
    cr_assert(st.gnorm2 > 0);
    cr_assert(fabs(st.v_norm) < 1e-6 * st.gnorm2 && fabs(st.v_ip) < 1e-6 * st.gnorm2 * st.gnorm2);
    cr_assert_eq(algo_batch_test_next(4, algo_batch_test_proposal(ALGO_BATCH_NORM, &st, 0.1, 1,
                                                                  1),
                                      0),
                 4);
    free(x);
    free(ws);
    h_free(&h);
}

static sim_time probe_time[4096];
static void probe_times(harness *h)
{
    if (h->env->iterations < 4096)
        probe_time[h->env->iterations] = sim_engine_now(h->eng);
}

Test(local, local_sgd_round_is_the_max_of_n_gamma_sums)
{
    const int n = 8, H = 4, rounds = 500;
    const double m = 0.01;
    const char *a[] = {"algorithm.name=local_sgd", "algorithm.local_steps=4",
                       "workers.compute=exponential(10ms)"};
    harness h;
    h_build(&h, base_ini, a, 3);
    h.probe = probe_times;
    h_run(&h, (int64_t)H * rounds);
    double per_round = sim_time_to_s(probe_time[H * rounds]) / rounds;
    /* Monte Carlo E[max_i Gamma(H, m)] */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 12345);
    const int N = 200000;
    double s1 = 0, s2 = 0;
    for (int k = 0; k < N; k++) {
        double mx = 0;
        for (int i = 0; i < n; i++)
            mx = fmax(mx, gsl_ran_gamma(r, H, m));
        s1 += mx;
        s2 += mx * mx;
    }
    gsl_rng_free(r);
    double mean = s1 / N, sd = sqrt(s2 / N - mean * mean);
    double tol = 4 * sd / sqrt(rounds) + 4 * sd / sqrt(N);
    cr_assert(fabs(per_round - mean) < tol, "per round %.6g s, Monte Carlo %.6g +- %.3g",
              per_round, mean, tol);
    /* and it is slower than H independent steps (m H) */
    cr_assert(per_round > m * H * 1.2);
    h_free(&h);
}

/* Constant steps T, tau steps per round, ring all-reduce T_ar: after R
 * rounds (iteration tau R, reported before the R-th sync) the time is
 * tau R T + (R - 2) max(0, T_ar - tau T): sync 1 finds no all-reduce to
 * wait for, syncs 2 .. R-1 each wait for the previous one. */
static void overlap_time(const char *compute, int tau, double T)
{
    char c[64], t[64];
    snprintf(c, sizeof c, "workers.compute=%s", compute);
    snprintf(t, sizeof t, "algorithm.local_steps=%d", tau);
    const char *a[] = {"algorithm.name=overlap_local_sgd", t, c,
                       "workers.count=4", "network.topology=ring", "network.latency=20us",
                       "network.bandwidth=1GB/s", "workload.sim_params=1000000"};
    const double T_ar = 2 * 3 * (20e-6 + 4e6 / (4 * 1e9));
    const int R = 20;
    harness h;
    h_build(&h, base_ini, a, 8);
    h.probe = probe_times;
    h_run(&h, (int64_t)tau * R);
    double expect = tau * R * T + (R - 2) * fmax(0, T_ar - tau * T);
    double got = sim_time_to_s(probe_time[tau * R]);
    cr_assert(fabs(got - expect) < 1e-6, "time %.9g, expected %.9g", got, expect);
    h_free(&h);
}

Test(local, overlap_blocks_only_when_the_allreduce_is_late)
{
    overlap_time("constant(2ms)", 2, 0.002); /* T_ar = 6.12 ms > 4 ms: blocks 2.12 ms */
    overlap_time("constant(2ms)", 4, 0.002); /* 8 ms > T_ar: never blocks */
    overlap_time("constant(1ms)", 1, 0.001); /* blocks 5.12 ms */
}

Test(local, config_errors_name_the_key)
{
    const char *cases[][2] = {
        {"algorithm.name=local_sgd", "algorithm.local_steps=0"},
        {"algorithm.name=post_local_sgd", "algorithm.local_steps=4"},
        {"algorithm.name=slowmo", "algorithm.slow_momentum=1"},
        {"algorithm.name=slowmo", "algorithm.base=dpsgd"},
        {"algorithm.name=adaptive_local_sgd", "algorithm.test_samples=1"},
        {"algorithm.name=overlap_local_sgd", "algorithm.pull=1.5"},
    };
    const char *keys[] = {"local_steps", "switch_epoch", "slow_momentum", "base",
                          "test_samples", "pull"};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sim_experiment_init();
        sim_config cfg;
        sim_err err = {0};
        cr_assert_eq(sim_config_load_string("h.ini", base_ini, cases[k], 2, &cfg, &err), 0);
        xp_env *x = xp_env_create(&cfg, NULL, &err);
        cr_assert_not_null(x, "%s", err.msg);
        cr_assert_neq(xp_env_algo_create(x, &err), 0, "case %zu accepted", k);
        cr_assert(strstr(err.msg, keys[k]), "case %zu: %s", k, err.msg);
        xp_env_destroy(x);
        sim_config_release(&cfg);
    }
}
