/* The local-step methods (docs/algorithms.md 1.5, 2, 4, 8, 12): exact
 * equivalences with the same data order (local_sgd H = 1 and allreduce_sgd;
 * slowmo beta = 0, alpha = 1 and local_sgd; slowmo tau = 1 on plain SGD and
 * heavy-ball allreduce_sgd; slowmo over D-PSGD against D-PSGD plus an exact
 * average, against slowmo over Local SGD at tau = 1 and, ATC on the
 * complete graph, against allreduce_sgd; adaptive_local_sgd with an
 * infinite eta and local_sgd; overlap_local_sgd with alpha = 0 and
 * independent SGD), the batch tests on a four-gradient example, round
 * times (the expected maximum of n Gamma(H, m) sums; Overlap-Local-SGD's
 * blocking; SlowMo over D-PSGD's one all-reduce per outer iteration), and
 * the client-drift fixed point of full-batch Local SGD and SlowMo on
 * heterogeneous least squares. */
#include <gsl/gsl_blas.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_permutation.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>

#include "algorithms/methods/local_rules.h"
#include "tests/algorithms/harness.h"
#include "algorithms/core/fault.h"
#include "sim/rng.h"
#include "tests/common.h"

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
    h_build(&ha, test_base_ini, a, na);
    h_run(&ha, iters);
    h_build(&hb, test_base_ini, b, nb);
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

Test(local_sgd, local_sgd_h1_with_momentum_equals_allreduce_sgd)
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

Test(local_sgd, post_local_sgd_before_the_switch_equals_allreduce_sgd)
{
    const char *a[] = {"algorithm.name=post_local_sgd", "algorithm.switch_epoch=100",
                       "algorithm.momentum=0.9"};
    const char *b[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9"};
    assert_same_model(a, 3, b, 2, 120, 1e-5);
}

Test(local_sgd, slowmo_beta0_alpha1_equals_local_sgd)
{
    const char *a[] = {"algorithm.name=slowmo", "algorithm.local_steps=4",
                       "algorithm.slow_momentum=0", "algorithm.slow_lr=1",
                       "algorithm.momentum=0.9"};
    const char *b[] = {"algorithm.name=local_sgd", "algorithm.local_steps=4",
                       "algorithm.momentum=0.9"};
    assert_same_model(a, 5, b, 3, 120, 1e-5);
}

Test(local_sgd, slowmo_tau1_plain_sgd_equals_heavy_ball_allreduce_sgd)
{
    const char *a[] = {"algorithm.name=slowmo", "algorithm.local_steps=1",
                       "algorithm.slow_momentum=0.9", "algorithm.slow_lr=1",
                       "algorithm.momentum=0"};
    const char *b[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9"};
    assert_same_model(a, 5, b, 2, 120, 1e-5);
}

Test(local_sgd, bmuf_classic_with_constant_lr_equals_slowmo)
{
    /* Delta = -alpha lr u: the same iterates up to rounding */
    const char *a[] = {"algorithm.name=slowmo", "algorithm.local_steps=3",
                       "algorithm.slow_momentum=0.6", "algorithm.slow_lr=0.8",
                       "algorithm.bmuf=classic"};
    const char *b[] = {"algorithm.name=slowmo", "algorithm.local_steps=3",
                       "algorithm.slow_momentum=0.6", "algorithm.slow_lr=0.8"};
    assert_same_model(a, 5, b, 4, 120, 1e-5);
}

/* One outer iteration of SlowMo over D-PSGD with beta = 0, alpha = 1 is
 * tau D-PSGD steps (gossip on the ring, local momentum) and then the exact
 * average: the same model as dpsgd's workers' mean after tau iterations,
 * where the dpsgd workers themselves still differ. */
Test(local_sgd, slowmo_dpsgd_beta0_alpha1_is_dpsgd_then_the_exact_average)
{
    const char *a[] = {"algorithm.name=slowmo", "algorithm.base=dpsgd",
                       "algorithm.local_steps=6", "algorithm.slow_momentum=0",
                       "algorithm.slow_lr=1", "algorithm.momentum=0.9",
                       "experiment.eval_every=6"};
    const char *b[] = {"algorithm.name=dpsgd", "algorithm.momentum=0.9",
                       "experiment.eval_every=6"};
    assert_same_model(a, 7, b, 3, 6, 1e-5);
    harness h;
    h_build(&h, test_base_ini, b, 3);
    h_run(&h, 6);
    cr_assert(h_consensus(&h) > 1e-6, "the dpsgd workers should still differ");
    h_free(&h);
}

/* After every tau-th iteration the workers hold one model (the exact
 * average and the outer step), in between D-PSGD lets them drift apart. */
Test(local_sgd, slowmo_dpsgd_workers_agree_exactly_after_each_outer_step)
{
    const char *a[] = {"algorithm.name=slowmo", "algorithm.base=dpsgd",
                       "algorithm.local_steps=5", "algorithm.slow_momentum=0.5",
                       "algorithm.momentum=0.9", "experiment.eval_every=1"};
    for (int64_t it = 9; it <= 11; it++) {
        harness h;
        h_build(&h, test_base_ini, a, 6);
        h_run(&h, it);
        double c = h_consensus(&h);
        if (it == 10)
            cr_assert_eq(c, 0.0, "consensus distance %.3g after the second outer step", c);
        else
            cr_assert(c > 1e-8, "iteration %lld: consensus distance %.3g", (long long)it, c);
        h_free(&h);
    }
}

/* tau = 1: one D-PSGD step from a common point x0 mixes identical models
 * (the row of W sums to 1), so it is the local step, and the average is
 * Local SGD's round: SlowMo over D-PSGD equals SlowMo over Local SGD for
 * any (alpha, beta) and any graph, up to the rounding of sum_j W_ij x0. */
Test(local_sgd, slowmo_dpsgd_tau1_equals_slowmo_local_sgd_tau1)
{
    const char *a[] = {"algorithm.name=slowmo", "algorithm.base=dpsgd",
                       "algorithm.local_steps=1", "algorithm.slow_momentum=0.6",
                       "algorithm.slow_lr=0.8", "algorithm.momentum=0.9"};
    const char *b[] = {"algorithm.name=slowmo", "algorithm.local_steps=1",
                       "algorithm.slow_momentum=0.6", "algorithm.slow_lr=0.8",
                       "algorithm.momentum=0.9"};
    assert_same_model(a, 6, b, 5, 120, 1e-5);
}

/* ATC D-PSGD on the complete graph with uniform weights is all-reduce SGD
 * (every worker holds the mean of the local steps), so with beta = 0,
 * alpha = 1 (the average of identical models changes nothing) SlowMo over
 * it is allreduce_sgd, over several outer iterations. */
Test(local_sgd, slowmo_dpsgd_atc_complete_graph_equals_allreduce_sgd)
{
    const char *a[] = {"algorithm.name=slowmo", "algorithm.base=dpsgd",
                       "algorithm.form=atc", "topology.graph=complete",
                       "algorithm.local_steps=4", "algorithm.slow_momentum=0",
                       "algorithm.slow_lr=1", "algorithm.momentum=0.9"};
    const char *b[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9"};
    assert_same_model(a, 8, b, 2, 120, 1e-5);
}

/* BMUF's Nesterov form with tau = 1, block lr 1 and plain SGD inside: the
 * workers start from y = x_g + eta Delta, and x_g becomes their average,
 * which is Sutskever's Nesterov momentum, the same iterates as PyTorch's
 * Nesterov form (the evaluated point y is its x). */
Test(local_sgd, bmuf_nesterov_tau1_equals_nesterov_allreduce_sgd)
{
    const char *a[] = {"algorithm.name=slowmo", "algorithm.local_steps=1",
                       "algorithm.slow_momentum=0.9", "algorithm.slow_lr=1",
                       "algorithm.bmuf=nesterov", "algorithm.momentum=0"};
    const char *b[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9",
                       "algorithm.nesterov=true"};
    assert_same_model(a, 6, b, 3, 120, 1e-5);
}

Test(local_sgd, adaptive_with_infinite_eta_equals_local_sgd)
{
    const char *a[] = {"algorithm.name=adaptive_local_sgd", "algorithm.local_steps=3",
                       "algorithm.eta=1e300", "algorithm.momentum=0.9"};
    const char *b[] = {"algorithm.name=local_sgd", "algorithm.local_steps=3",
                       "algorithm.momentum=0.9"};
    assert_same_model(a, 4, b, 3, 120, 1e-5);
}

Test(local_sgd, adaptive_batch_grows_and_never_shrinks)
{
    const char *a[] = {"algorithm.name=adaptive_local_sgd", "algorithm.local_steps=3",
                       "algorithm.eta=0.5", "algorithm.max_batch=48"};
    harness h;
    h_build(&h, test_base_ini, a, 4);
    h_run(&h, 150);
    for (int i = 0; i < h.env->n; i++)
        cr_assert_eq(h.env->w[i].batch, h.env->w[0].batch);
    cr_assert(h.env->w[0].batch > 16 && h.env->w[0].batch <= 48, "batch %d",
              h.env->w[0].batch);
    cr_assert(h.env->batch_changes >= h.env->n);
    h_free(&h);
}

Test(local_sgd, overlap_alpha0_equals_independent_local_sgd)
{
    const char *a[] = {"algorithm.name=overlap_local_sgd", "algorithm.local_steps=2",
                       "algorithm.pull=0", "algorithm.momentum=0.9"};
    const char *b[] = {"algorithm.name=local_sgd", "algorithm.local_steps=100000",
                       "algorithm.momentum=0.9"};
    harness ha, hb;
    h_build(&ha, test_base_ini, a, 4);
    h_run(&ha, 60);
    h_build(&hb, test_base_ini, b, 3);
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
Test(local_sgd, batch_tests_on_the_four_gradient_example)
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
Test(local_sgd, batch_stats_of_identical_samples_have_no_variance)
{
    harness h;
    const char *a[] = {"algorithm.name=local_sgd"};
    h_build(&h, test_base_ini, a, 1);
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

Test(local_sgd, local_sgd_round_is_the_max_of_n_gamma_sums)
{
    const int n = 8, H = 4, rounds = 500;
    const double m = 0.01;
    const char *a[] = {"algorithm.name=local_sgd", "algorithm.local_steps=4",
                       "workers.compute=exponential(10ms)"};
    harness h;
    h_build(&h, test_base_ini, a, 3);
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
    h_build(&h, test_base_ini, a, 8);
    h.probe = probe_times;
    h_run(&h, (int64_t)tau * R);
    double expect = tau * R * T + (R - 2) * fmax(0, T_ar - tau * T);
    double got = sim_time_to_s(probe_time[tau * R]);
    cr_assert(fabs(got - expect) < 1e-6, "time %.9g, expected %.9g", got, expect);
    h_free(&h);
}

/* SlowMo over D-PSGD costs one all-reduce per tau steps on top of D-PSGD:
 * with constant steps T longer than a neighbour exchange (which AWC hides
 * behind the gradient), R outer iterations take tau R T + R T_ar. */
Test(local_sgd, slowmo_dpsgd_adds_one_allreduce_per_outer_iteration)
{
    const int tau = 3, R = 7;
    const char *a[] = {"algorithm.name=slowmo", "algorithm.base=dpsgd",
                       "algorithm.local_steps=3", "workers.compute=constant(10ms)",
                       "workers.count=4", "network.topology=ring", "network.latency=20us",
                       "network.bandwidth=1GB/s", "workload.sim_params=1000000"};
    const double T = 0.01, T_ar = 2 * 3 * (20e-6 + 4e6 / (4 * 1e9));
    harness h;
    h_build(&h, test_base_ini, a, 9);
    h.probe = probe_times;
    h_run(&h, (int64_t)tau * R);
    double expect = tau * R * T + R * T_ar;
    double got = sim_time_to_s(probe_time[tau * R]);
    cr_assert(fabs(got - expect) < 1e-6, "time %.9g, expected %.9g", got, expect);
    /* the step before a synchronization ends without waiting */
    cr_assert(fabs(sim_time_to_s(probe_time[tau * R - 1]) - (expect - T - T_ar)) < 1e-6);
    h_free(&h);
}

Test(local_sgd, overlap_blocks_only_when_the_allreduce_is_late)
{
    overlap_time("constant(2ms)", 2, 0.002); /* T_ar = 6.12 ms > 4 ms: blocks 2.12 ms */
    overlap_time("constant(2ms)", 4, 0.002); /* 8 ms > T_ar: never blocks */
    overlap_time("constant(1ms)", 1, 0.001); /* blocks 5.12 ms */
}

Test(local_sgd, config_errors_name_the_key)
{
    const char *cases[][3] = {
        {"algorithm.name=local_sgd", "algorithm.local_steps=0", "experiment.seed=3"},
        {"algorithm.name=post_local_sgd", "algorithm.local_steps=4", "experiment.seed=3"},
        {"algorithm.name=slowmo", "algorithm.slow_momentum=1", "experiment.seed=3"},
        {"algorithm.name=slowmo", "algorithm.base=dpsgd", "algorithm.gossip_steps=-1"},
        {"algorithm.name=adaptive_local_sgd", "algorithm.test_samples=1", "experiment.seed=3"},
        {"algorithm.name=overlap_local_sgd", "algorithm.pull=1.5", "experiment.seed=3"},
    };
    const char *keys[] = {"local_steps", "switch_epoch", "slow_momentum", "gossip_steps",
                          "test_samples", "pull"};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        cfg_config cfg;
        sim_err err = {0};
        cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini,
                                            cases[k], 3, &cfg, &err), 0);
        xp_env *x = xp_env_create(&cfg, NULL, &err);
        cr_assert_not_null(x, "%s", err.msg);
        cr_assert_neq(xp_env_algo_create(x, &err), 0, "case %zu accepted", k);
        cr_assert(strstr(err.msg, keys[k]), "case %zu: %s", k, err.msg);
        xp_env_destroy(x);
        cfg_release(&cfg);
    }
}

/* ---- client drift: full-batch Local SGD on heterogeneous quadratics ----- */

enum { FP_N = 8, FP_M = 12, FP_DIM = 3, FP_P = FP_DIM + 1 };

/* Worker i's shard: y = w_i.a + b_i with its own (w_i, b_i), rows
 * contiguous (partition = contiguous), as in test_gossip.c. */
static const char *fp_write_data(void)
{
    static char path[4096];
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir);
    gsl_rng *r = sim_rng_create(99, SIM_STREAM_DATA, 7);
    char *text = malloc(FP_N * FP_M * 128);
    size_t len = 0;
    for (int i = 0; i < FP_N; i++) {
        double wi[FP_DIM], bi = gsl_rng_uniform(r) * 2 - 1;
        for (int j = 0; j < FP_DIM; j++)
            wi[j] = gsl_rng_uniform(r) * 4 - 2;
        for (int k = 0; k < FP_M; k++) {
            double a[FP_DIM], y = bi;
            for (int j = 0; j < FP_DIM; j++) {
                a[j] = floor((gsl_rng_uniform(r) * 2 - 1) * 1000) / 1000;
                y += wi[j] * a[j];
            }
            len += (size_t)snprintf(text + len, 128, "%.6f", y + 0.0001234);
            for (int j = 0; j < FP_DIM; j++)
                len += (size_t)snprintf(text + len, 128, " %.3f", a[j]);
            text[len++] = '\n';
        }
    }
    text[len] = '\0';
    gsl_rng_free(r);
    snprintf(path, sizeof path, "%s", test_write_file(dir, "drift.txt", text));
    free(text);
    return path;
}

/* grad f_i(x) = H_i x - c_i. One local step: x <- A_i x + lr c_i with
 * A_i = I - lr H_i; after H steps x_i = A_i^H x + S_i lr c_i, S_i =
 * sum_{k<H} A_i^k. The average is a fixed point when
 * (I - mean_i A_i^H) x = mean_i S_i lr c_i (client drift: not the
 * minimizer of mean_i f_i unless H = 1). mode 0: that point; 1: the
 * minimizer, mean_i H_i x = mean_i c_i. */
static void drift_point(const harness *h, double lr, int H, int mode, gsl_vector *x)
{
    const int p = FP_P;
    gsl_matrix *M = gsl_matrix_calloc(p, p), *A = gsl_matrix_alloc(p, p),
               *P = gsl_matrix_alloc(p, p), *S = gsl_matrix_alloc(p, p),
               *T = gsl_matrix_alloc(p, p), *Hi = gsl_matrix_alloc(p, p);
    gsl_vector *rhs = gsl_vector_calloc(p), *c = gsl_vector_alloc(p);
    const wl_dataset *ds = h->ds;
    for (int i = 0; i < FP_N; i++) {
        gsl_matrix_set_zero(Hi);
        gsl_vector_set_zero(c);
        int64_t lo = h->part->offset[i], hi = h->part->offset[i + 1];
        double m = (double)(hi - lo);
        for (int64_t k = lo; k < hi; k++) {
            int64_t idx = h->part->index[k];
            double at[FP_P];
            float row[FP_DIM];
            wl_split_row(ds, &ds->train, idx, row);
            for (int j = 0; j < FP_DIM; j++)
                at[j] = row[j];
            at[FP_DIM] = 1;
            for (int a = 0; a < p; a++) {
                *gsl_vector_ptr(c, a) += ds->train.y[idx] * at[a] / m;
                for (int b = 0; b < p; b++)
                    *gsl_matrix_ptr(Hi, a, b) += at[a] * at[b] / m;
            }
        }
        if (mode == 1) {
            gsl_matrix_add(M, Hi);
            gsl_vector_add(rhs, c);
            continue;
        }
        gsl_matrix_set_identity(A);
        gsl_matrix_scale(Hi, lr);
        gsl_matrix_sub(A, Hi);           /* A_i */
        gsl_matrix_set_identity(P);      /* A_i^k */
        gsl_matrix_set_zero(S);
        for (int k = 0; k < H; k++) {
            gsl_matrix_add(S, P);
            gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, P, A, 0.0, T);
            gsl_matrix_memcpy(P, T);
        }
        gsl_matrix_set_identity(T);
        gsl_matrix_sub(T, P);            /* I - A_i^H */
        gsl_matrix_add(M, T);
        gsl_blas_dgemv(CblasNoTrans, lr, S, c, 1.0, rhs);
    }
    gsl_permutation *perm = gsl_permutation_alloc(p);
    int sign;
    cr_assert_eq(gsl_linalg_LU_decomp(M, perm, &sign), 0);
    cr_assert_eq(gsl_linalg_LU_solve(M, perm, rhs, x), 0);
    gsl_permutation_free(perm);
    gsl_matrix_free(M);
    gsl_matrix_free(A);
    gsl_matrix_free(P);
    gsl_matrix_free(S);
    gsl_matrix_free(T);
    gsl_matrix_free(Hi);
    gsl_vector_free(rhs);
    gsl_vector_free(c);
}

static void check_drift(const char *const *extra, int nextra)
{
    const int H = 4;
    char ini[8192];
    snprintf(ini, sizeof ini,
             "[experiment]\nseed = 5\nmax_epochs = 0\nmax_iterations = 1000000\n"
             "eval_every = 1000000\n[workers]\ncount = %d\ncompute = constant(1ms)\n"
             "[network]\ntopology = ideal\n"
             "[algorithm]\nname = local_sgd\nlr = 0.05\nbatch = full\nlocal_steps = %d\n"
             "[workload]\nmodel = linreg\ndataset = libsvm(%s)\npartition = contiguous\n"
             "test_fraction = 0\n",
             FP_N, H, fp_write_data());
    harness h;
    h_build(&h, ini, extra, nextra);
    cr_assert_eq(h.env->d, FP_P);
    h_run(&h, 4000);
    gsl_vector *xs = gsl_vector_alloc(FP_P), *opt = gsl_vector_alloc(FP_P);
    drift_point(&h, h.cfg.lr, H, 0, xs);
    drift_point(&h, h.cfg.lr, H, 1, opt);
    float x[FP_P];
    models_of(&h, x);
    double err = 0, sep = 0;
    for (int a = 0; a < FP_P; a++) {
        err = fmax(err, fabs(x[a] - gsl_vector_get(xs, a)));
        sep = fmax(sep, fabs(gsl_vector_get(opt, a) - gsl_vector_get(xs, a)));
    }
    cr_assert_lt(err, 1e-5, "max |xbar - x*| = %.3g", err);
    cr_assert_gt(sep, 100 * err, "the drift point is only %.3g from the minimizer", sep);
    gsl_vector_free(xs);
    gsl_vector_free(opt);
    h_free(&h);
}

Test(local_sgd, full_batch_local_sgd_converges_to_the_client_drift_point)
{
    check_drift(NULL, 0);
}

Test(local_sgd, slowmo_converges_to_the_same_drift_point_for_any_alpha_beta)
{
    const char *a[] = {"algorithm.name=slowmo", "algorithm.local_steps=4",
                       "algorithm.slow_momentum=0.5", "algorithm.slow_lr=0.7"};
    check_drift(a, 4);
    const char *b[] = {"algorithm.name=slowmo", "algorithm.local_steps=4",
                       "algorithm.slow_momentum=0.2", "algorithm.slow_lr=1.5"};
    check_drift(b, 4);
}

/* ---- the Local SGD family under crashes -------------------------------- */

/* local_sgd with H = 4 local steps on a complete network of 8 (ring
 * all-reduce), constant T = 10 ms, c(m) = 2(m-1)(alpha + S/(mB)). Rounds
 * take H T + c(8); worker 5 crashes at 0.175 s, inside round 3's local
 * steps: the survivors finish theirs, enter, wait sync_timeout = 50 ms and
 * re-form over 7 ranks (H T + timeout + c(7)); then H T + c(7) while it is
 * down. It rejoins at 0.6 s: the next average is sent to it (alpha + S/B on
 * its own link) and it starts the following round that much after the
 * others, which wait for it in the collective: H T + alpha + S/B + c(8);
 * then H T + c(8) again. An iteration is one local step of every live
 * worker, the round's last one counted when the average is formed: the
 * rounds end at iterations 4, 8, ... */
Test(local_sgd, local_sgd_crash_costs_the_timeout_then_runs_over_the_survivors)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.175s,crash,5,\n"
                          "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=local_sgd", "algorithm.local_steps=4",
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
    const double S = 4e6, a = 20e-6, B = 1e9, T = 0.01, to = 0.05, H = 4;
    const double c8 = 2 * 7 * (a + S / (8 * B)), c7 = 2 * 6 * (a + S / (7 * B));
    const double join = a + S / B;
    /* round r ends at iteration 4(r + 1): ts.t[4r + 3] */
    int rounds = ts.n / 4, aborted = -1, joined = -1;
    double end[64];
    cr_assert_eq(ts.n, 120);
    for (int r = 0; r < rounds; r++)
        end[r] = ts.t[4 * r + 3];
    for (int r = 1; r < rounds; r++) {
        if (end[r - 1] < 0.175 && end[r] > 0.175)
            aborted = r;
        if (end[r - 1] < 0.6 && end[r] > 0.6)
            joined = r + 1; /* the joiner's first round */
    }
    cr_assert_eq(aborted, 3, "round 3 holds the crash (%d)", aborted);
    cr_assert(end[0] - (H * T + c8) < 1e-9 && end[0] > H * T + c8 - 1e-9, "%.9f", end[0]);
    for (int r = 1; r < aborted; r++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + c8)) < 1e-7, "round %d", r);
    cr_assert(fabs(end[aborted] - end[aborted - 1] - (H * T + to + c7)) < 1e-7,
              "%.9f vs %.9f", end[aborted] - end[aborted - 1], H * T + to + c7);
    int checked = 0;
    for (int r = aborted + 1; r < joined; r++, checked++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + c7)) < 1e-7, "round %d: %.9f vs %.9f", r,
                  end[r] - end[r - 1], H * T + c7);
    cr_assert_gt(checked, 5);
    cr_assert(fabs(end[joined] - end[joined - 1] - (H * T + join + c8)) < 1e-7,
              "the joiner's first round: %.9f vs %.9f", end[joined] - end[joined - 1],
              H * T + join + c8);
    checked = 0;
    for (int r = joined + 1; r < rounds; r++, checked++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + c8)) < 1e-7, "round %d after the rejoin",
                  r);
    cr_assert_gt(checked, 5);
    /* local steps inside a round: T apart */
    cr_assert(fabs(ts.t[1] - ts.t[0] - T) < 1e-9 && fabs(ts.t[0] - T) < 1e-9);
    /* 16 samples a step; worker 5 lost round 3 (its step cut by the crash
     * is not counted) and took part in the rounds from `joined` on; the run ends when the last
     * round's average is formed, before anyone starts another step (as
     * without crashes) */
    int64_t w5 = h.env->w[5].steps;
    cr_assert_eq(w5, 4 * (aborted + 1) - 1 + 4 * (rounds - joined), "%lld", (long long)w5);
    cr_assert_eq(h.env->w[5].down, 0);
    h_free(&h);
    unlink(path);
}

typedef struct local_probe {
    float x0[8][64];     /* the initial models */
    float avg[64];       /* the average the joiner takes */
    double first_avg_err; /* |model - mean of the survivors' initial models| at iteration 4 */
    double all_gap;      /* |mean of all 8 initial models - that mean| */
    int joined;          /* 1: the joiner's average is recorded */
    int near_lr, coords; /* after its first step: coordinates moved by lr (1%) */
    double lr;
} local_probe;

/* Iteration 4 is round 0's average, formed without worker 5 (crashed in
 * round 0's local steps); later, the first average formed after its rejoin
 * (a sync iteration is reported where the average is formed: the model is
 * that average) is the one it joins at, and the next iteration ends its
 * first local step from it (it starts last). */
static void probe_local(harness *h)
{
    local_probe *p = h->probe_ctx;
    const int64_t d = h->env->d;
    const int64_t it = h->env->iterations;
    if (it == 4) {
        float scratch[64];
        const float *m = h->vt->model(h->alg, scratch);
        double err = 0, gap = 0;
        for (int64_t j = 0; j < d; j++) {
            double s7 = 0, s8 = 0;
            for (int i = 0; i < 8; i++) {
                s8 += p->x0[i][j];
                if (i != 5)
                    s7 += p->x0[i][j];
            }
            err = fmax(err, fabs(m[j] - s7 / 7));
            gap = fmax(gap, fabs(s8 / 8 - s7 / 7));
        }
        p->first_avg_err = err;
        p->all_gap = gap;
    }
    if (sim_time_to_s(sim_engine_now(h->eng)) < 0.1 || h->env->w[5].down)
        return;
    if (!p->joined && it % 4 == 0) {
        float scratch[64];
        memcpy(p->avg, h->vt->model(h->alg, scratch), (size_t)d * sizeof(float));
        p->joined = 1;
        return;
    }
    if (p->joined == 1) {
        p->joined = 2;
        for (int64_t j = 0; j < d; j++) {
            double step = fabs((double)h->env->w[5].x[j] - p->avg[j]);
            p->near_lr += fabs(step / p->lr - 1) < 0.01;
            p->coords++;
        }
    }
}

/* local_sgd, H = 4, independent initial models, ideal network. Worker 5
 * crashes at 15 ms (inside round 0's local steps) and rejoins at 0.1 s.
 * With lr = 1e-30 the models do not move: the first average is exactly the
 * mean of the 7 survivors' initial models (float rounding 1e-6), not that
 * of all 8. With Adam (lr = 1e-3) the joiner's first step from the formed
 * average moves every coordinate by lr
 * (Adam's first step from a fresh state: lr g / (|g| + eps)); a kept
 * state (bias-corrected moments of older gradients) would not. */
Test(local_sgd, local_sgd_averages_the_survivors_and_a_joiner_starts_fresh_from_the_average)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.015s,crash,5,\n"
                          "0.1s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static local_probe p;
    for (int adam = 0; adam < 2; adam++) {
        const char *sets[] = {set, "algorithm.name=local_sgd", "algorithm.local_steps=4",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              adam ? "algorithm.lr=1e-3" : "algorithm.lr=1e-30",
                              adam ? "algorithm.optimizer=adam" : "algorithm.optimizer=sgd"};
        memset(&p, 0, sizeof p);
        p.lr = 1e-3;
        harness h;
        h_build(&h, test_base_ini, sets, 7);
        cr_assert_leq(h.env->d, 64);
        for (int i = 0; i < 8; i++)
            memcpy(p.x0[i], h.env->w[i].x, (size_t)h.env->d * sizeof(float));
        h.probe = probe_local;
        h.probe_ctx = &p;
        h_run(&h, 80);
        if (!adam) {
            cr_assert_lt(p.first_avg_err, 1e-6, "%g", p.first_avg_err);
            cr_assert_gt(p.all_gap, 1e-3, "the 8-worker mean differs: %g", p.all_gap);
            h_free(&h);
            continue;
        }
        cr_assert_eq(p.joined, 2);
        cr_assert_geq(p.near_lr, 0.9 * p.coords, "%d of %d coordinates moved by lr", p.near_lr,
                      p.coords);
        h_free(&h);
    }
    unlink(path);
}

/* slowmo's outer state (x0, u) is shared and stays through a crash: with
 * beta = 0 and alpha = 1 its outer step returns the average, so under the
 * same crash schedule (worker 5 down in round 0, back at 0.1 s) it is
 * local_sgd with the same rounds, groups and joins (float rounding of
 * (x0 - xbar)/lr: 1e-5, as without crashes). */
Test(local_sgd, slowmo_beta0_alpha1_equals_local_sgd_under_crashes)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.015s,crash,5,\n"
                          "0.1s,rejoin,5,\n"
                          "0.23s,crash,2,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *a[] = {set, "algorithm.name=slowmo", "algorithm.local_steps=4",
                       "algorithm.slow_momentum=0", "algorithm.slow_lr=1",
                       "algorithm.momentum=0.9", "faults.sync_timeout=20ms"};
    const char *b[] = {set, "algorithm.name=local_sgd", "algorithm.local_steps=4",
                       "algorithm.momentum=0.9", "faults.sync_timeout=20ms"};
    harness ha, hb;
    h_build(&ha, test_base_ini, a, 7);
    h_run(&ha, 120);
    h_build(&hb, test_base_ini, b, 5);
    h_run(&hb, 120);
    cr_assert_eq(sim_engine_now(ha.eng), sim_engine_now(hb.eng));
    cr_assert_eq(ha.env->samples, hb.env->samples);
    float sa[64], sb[64];
    const float *xa = ha.vt->model(ha.alg, sa), *xb = hb.vt->model(hb.alg, sb);
    double worst = 0, moved = 0;
    for (int64_t j = 0; j < ha.env->d; j++) {
        worst = fmax(worst, fabs((double)xa[j] - xb[j]));
        moved = fmax(moved, fabs((double)xa[j]));
    }
    cr_assert_gt(moved, 1e-3);
    cr_assert_leq(worst, 1e-5 * fmax(1, moved), "max |difference| %g", worst);
    cr_assert_eq(ha.env->w[5].steps, hb.env->w[5].steps);
    h_free(&ha);
    h_free(&hb);
    unlink(path);
}

/* Every method of the family under random crashes and rejoins (mtbf
 * 60 ms per worker, downtime 25 ms, timeout 5 ms: crashes in local steps,
 * in collectives and in adaptive_local_sgd's statistics phase) reaches its
 * iteration count; every worker computes after a rejoin; the batch of
 * adaptive_local_sgd stays the same on every worker. */
Test(local_sgd, local_family_runs_through_random_crashes)
{
    const char *methods[][2] = {
        {"algorithm.name=local_sgd", "algorithm.buffers=average"},
        {"algorithm.name=local_sgd", "algorithm.buffers=reset"},
        {"algorithm.name=post_local_sgd", "algorithm.switch_epoch=0.05"},
        {"algorithm.name=adaptive_local_sgd", "algorithm.eta=0.5"},
        {"algorithm.name=slowmo", "algorithm.bmuf=nesterov"},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        const char *sets[] = {methods[m][0], methods[m][1], "faults.mtbf=exponential(60ms)",
                              "faults.downtime=constant(25ms)", "faults.sync_timeout=5ms",
                              "algorithm.local_steps=3", "algorithm.momentum=0.9"};
        harness h;
        h_build(&h, test_base_ini, sets, 7);
        h_run(&h, 300);
        for (int i = 0; i < h.env->n; i++) {
            cr_assert_gt(h.env->w[i].steps, 20, "%s: worker %d", methods[m][0], i);
            cr_assert_eq(h.env->w[i].batch, h.env->w[0].batch);
        }
        float s[64];
        const float *x = h.vt->model(h.alg, s);
        for (int64_t j = 0; j < h.env->d; j++)
            cr_assert(isfinite(x[j]));
        h_free(&h);
    }
}

/* local_sgd (H = 4) on the same network and schedule: the round holding
 * the crash costs H T + timeout + h(3), H T + h(3) while server 3 is down;
 * the joiners' first round H T + j + h(4), where the rank that formed the
 * average sends it to both joiners at once (two flows of S bytes sharing
 * its server's interface: j = 2 ai + 2 ae + 2 S/Be), then H T + h(4). */
Test(local_sgd, local_sgd_crash_with_the_hierarchical_collective_runs_over_the_live_servers)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.175s,crash,6,\n"
                          "0.175s,crash,7,\n"
                          "0.6s,rejoin,6,\n"
                          "0.6s,rejoin,7,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=local_sgd", "algorithm.local_steps=4",
                          "network.topology=hierarchical(4, 2)",
                          "network.collective=hierarchical", "network.latency=5us",
                          "network.bandwidth=1GB/s", "network.intra_latency=1us",
                          "network.intra_bandwidth=10GB/s", "workload.sim_params=1000000",
                          "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 11);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 120);
    const double S = 4e6, ai = 1e-6, Bi = 1e10, ae = 5e-6, Be = 1e9, T = 0.01, to = 0.05;
    const double H = 4, j = 2 * ai + 2 * ae + 2 * S / Be;
    const double h4 = 2 * (2 * ai + S / Bi) + 2 * 3 * (2 * ai + 2 * ae + S / (4 * Be));
    const double h3 = 2 * (2 * ai + S / Bi) + 2 * 2 * (2 * ai + 2 * ae + S / (3 * Be));
    cr_assert_eq(ts.n, 120);
    int rounds = ts.n / 4, aborted = -1, joined = -1;
    double end[64];
    for (int r = 0; r < rounds; r++)
        end[r] = ts.t[4 * r + 3];
    for (int r = 1; r < rounds; r++) {
        if (end[r - 1] < 0.175 && end[r] > 0.175)
            aborted = r;
        if (end[r - 1] < 0.6 && end[r] > 0.6)
            joined = r + 1;
    }
    cr_assert_eq(aborted, 3, "round 3 holds the crash (%d)", aborted);
    cr_assert(fabs(end[0] - (H * T + h4)) < 1e-7, "%.9f", end[0]);
    for (int r = 1; r < aborted; r++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + h4)) < 1e-7, "round %d", r);
    cr_assert(fabs(end[aborted] - end[aborted - 1] - (H * T + to + h3)) < 1e-7,
              "%.9f vs %.9f", end[aborted] - end[aborted - 1], H * T + to + h3);
    int checked = 0;
    for (int r = aborted + 1; r < joined; r++, checked++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + h3)) < 1e-7, "round %d: %.9f vs %.9f", r,
                  end[r] - end[r - 1], H * T + h3);
    cr_assert_gt(checked, 5);
    cr_assert(fabs(end[joined] - end[joined - 1] - (H * T + j + h4)) < 1e-7,
              "the joiners' first round: %.9f vs %.9f", end[joined] - end[joined - 1],
              H * T + j + h4);
    checked = 0;
    for (int r = joined + 1; r < rounds; r++, checked++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + h4)) < 1e-7, "round %d after the rejoin",
                  r);
    cr_assert_gt(checked, 5);
    cr_assert_eq(h.env->w[6].steps, h.env->w[7].steps);
    /* the step the crash cut is not counted (the lost round's earlier
     * local steps are) */
    cr_assert_eq(h.env->w[6].steps, 4 * (aborted + 1) - 1 + 4 * (rounds - joined));
    h_free(&h);
    unlink(path);
}
