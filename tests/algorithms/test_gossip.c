/* Decentralized methods through a local harness that sees every worker's
 * model: the full-batch fixed points of docs/algorithms.md 3.3 on a
 * heterogeneous least-squares problem against a linear solve in double,
 * mean preservation of symmetric gossip and of atomic pairwise averaging
 * (and its failure for one-sided averaging), the contraction rate lambda of
 * pure gossip on a ring, exact averaging of the one-peer exponential graph
 * in log2 n steps, workers running ahead of a straggler, AD-PSGD's
 * initiators and adaptive consensus control's gossip steps and bytes. */
#include <criterion/criterion.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_permutation.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/drivers/gossip.h"
#include "sim/rng.h"
#include "tests/algorithms/dec_harness.h"
#include "tests/common.h"

/* ---- fixed points on a heterogeneous least-squares problem -------------- */

enum { FP_N = 8, FP_M = 12, FP_DIM = 3, FP_P = FP_DIM + 1 };

/* Worker i's shard: a = N(0, I), y = w_i.a + b_i with its own (w_i, b_i):
 * strongly heterogeneous. Written as a dense LIBSVM regression file,
 * worker i's rows contiguous (partition = contiguous). */
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
        for (int s = 0; s < FP_M; s++) {
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
    snprintf(path, sizeof path, "%s", test_write_file(dir, "fp.txt", text));
    free(text);
    return path;
}

static char fp_ini[8192];

static void fp_setup(const char *name, const char *graph)
{
    const char *path = fp_write_data();
    snprintf(fp_ini, sizeof fp_ini,
             "[experiment]\nseed = 5\nmax_epochs = 0\nmax_iterations = 1000000\neval_every = 1000000\n"
             "[workers]\ncount = %d\ncompute = constant(1ms)\n"
             "[network]\ntopology = ideal\n"
             "[topology]\ngraph = %s\n"
             "[algorithm]\nname = %s\nlr = 0.05\nbatch = full\n"
             "[workload]\nmodel = linreg\ndataset = libsvm(%s)\npartition = contiguous\n"
             "test_fraction = 0\n",
             FP_N, graph, name, path);
}

/* Stacked gradients: grad f_i(theta) = H_i theta - c_i, theta = (w, b),
 * H_i = (1/m) sum a~ a~^T, c_i = (1/m) sum y a~, a~ = (a, 1). Solves
 * A x = rhs with A = I - form_awc ? W : 0 ..., see below. */
static void fp_local_quadratics(const harness *h, gsl_matrix *H, gsl_vector *c)
{
    gsl_matrix_set_zero(H);
    gsl_vector_set_zero(c);
    const wl_dataset *ds = h->ds;
    for (int i = 0; i < FP_N; i++) {
        int64_t lo = h->part->offset[i], hi = h->part->offset[i + 1];
        double m = (double)(hi - lo);
        for (int64_t s = lo; s < hi; s++) {
            int64_t idx = h->part->index[s];
            double at[FP_P];
            float row[FP_DIM];
            wl_split_row(ds, &ds->train, idx, row);
            for (int j = 0; j < FP_DIM; j++)
                at[j] = row[j];
            at[FP_DIM] = 1;
            double y = ds->train.y[idx];
            for (int a = 0; a < FP_P; a++) {
                *gsl_vector_ptr(c, (size_t)(i * FP_P + a)) += y * at[a] / m;
                for (int b = 0; b < FP_P; b++)
                    *gsl_matrix_ptr(H, (size_t)(i * FP_P + a), (size_t)(i * FP_P + b)) +=
                        at[a] * at[b] / m;
            }
        }
    }
}

/* ATC (awc = 0): x = W(x - eta (Hx - c))  <=>  (I - W + eta W H) x = eta W c.
 * AWC (awc = 1): (I - W) x + eta (Hx - c) = 0  <=>  (I - W + eta H) x = eta c.
 * W acts blockwise (W kron I_p). */
static void fp_solve(const harness *h, double eta, int awc, gsl_vector *x)
{
    size_t N = FP_N * FP_P;
    gsl_matrix *H = gsl_matrix_alloc(N, N), *Wk = gsl_matrix_calloc(N, N),
               *A = gsl_matrix_alloc(N, N);
    gsl_vector *c = gsl_vector_alloc(N), *rhs = gsl_vector_alloc(N);
    fp_local_quadratics(h, H, c);
    const topo_wmat *W = topo_mixing_at(h->mix, 0);
    for (int i = 0; i < FP_N; i++)
        for (int j = 0; j < FP_N; j++)
            for (int a = 0; a < FP_P; a++)
                gsl_matrix_set(Wk, (size_t)(i * FP_P + a), (size_t)(j * FP_P + a),
                               topo_wmat_get(W, i, j));
    for (size_t r = 0; r < N; r++)
        for (size_t s = 0; s < N; s++) {
            double v = (r == s ? 1.0 : 0.0) - gsl_matrix_get(Wk, r, s);
            double t = 0;
            if (awc) {
                t = gsl_matrix_get(H, r, s);
            } else {
                for (size_t q = 0; q < N; q++)
                    t += gsl_matrix_get(Wk, r, q) * gsl_matrix_get(H, q, s);
            }
            gsl_matrix_set(A, r, s, v + eta * t);
        }
    for (size_t r = 0; r < N; r++) {
        double t = 0;
        if (awc)
            t = gsl_vector_get(c, r);
        else
            for (size_t q = 0; q < N; q++)
                t += gsl_matrix_get(Wk, r, q) * gsl_vector_get(c, q);
        gsl_vector_set(rhs, r, eta * t);
    }
    gsl_permutation *perm = gsl_permutation_alloc(N);
    int sign;
    cr_assert_eq(gsl_linalg_LU_decomp(A, perm, &sign), 0);
    cr_assert_eq(gsl_linalg_LU_solve(A, perm, rhs, x), 0);
    gsl_permutation_free(perm);
    gsl_matrix_free(H);
    gsl_matrix_free(Wk);
    gsl_matrix_free(A);
    gsl_vector_free(c);
    gsl_vector_free(rhs);
}

/* max_i ||x_i - x_i*||_inf over the workers' current models */
static double fp_error(harness *h, const gsl_vector *xs)
{
    const float *x[FP_N];
    h->vt->worker_models(h->alg, x);
    double e = 0;
    for (int i = 0; i < FP_N; i++)
        for (int a = 0; a < FP_P; a++)
            e = fmax(e, fabs(x[i][a] - gsl_vector_get(xs, (size_t)(i * FP_P + a))));
    return e;
}

static double vec_dist(const gsl_vector *a, const gsl_vector *b)
{
    double e = 0;
    for (size_t r = 0; r < a->size; r++)
        e = fmax(e, fabs(gsl_vector_get(a, r) - gsl_vector_get(b, r)));
    return e;
}

static void check_fixed_point(const char *name, const char *graph, const char *momentum,
                              double eta_factor, int awc, double other_factor)
{
    fp_setup(name, graph);
    char mom[64];
    snprintf(mom, sizeof mom, "algorithm.momentum=%s", momentum);
    const char *sets[] = {mom};
    harness h;
    h_build(&h, fp_ini, sets, 1);
    cr_assert_eq(h.env->d, FP_P);
    h_run(&h, 4000);
    size_t N = FP_N * FP_P;
    gsl_vector *xs = gsl_vector_alloc(N), *other = gsl_vector_alloc(N);
    double lr = h.cfg.lr;
    fp_solve(&h, lr * eta_factor, awc, xs);
    fp_solve(&h, lr * other_factor, awc, other);
    double err = fp_error(&h, xs), sep = vec_dist(xs, other);
    cr_assert_lt(err, 1e-5, "%s: max |x_i - x_i*| = %.3g", name, err);
    cr_assert_gt(sep, 1000 * err, "%s: the fixed point at %g lr is only %.3g away", name,
                 other_factor, sep);
    gsl_vector_free(xs);
    gsl_vector_free(other);
    h_free(&h);
}

Test(gossip, dsgd_atc_fixed_point_is_x_eq_w_x_minus_lr_grad)
{
    check_fixed_point("dsgd_atc", "ring", "0", 1.0, 0, 2.0);
}

Test(gossip, dmsgd_fixed_point_is_atc_dsgd_at_lr_over_1_minus_beta)
{
    check_fixed_point("dmsgd", "ring", "0.8", 5.0, 0, 1.0);
    check_fixed_point("dmsgd", "torus(2, 4)", "0.8", 5.0, 0, 1.0);
}

Test(gossip, decentlam_fixed_point_is_atc_dsgd_at_lr_whatever_beta)
{
    check_fixed_point("decentlam", "ring", "0.8", 1.0, 0, 5.0);
    check_fixed_point("decentlam", "exponential", "0.8", 1.0, 0, 5.0);
}

Test(gossip, dpsgd_awc_fixed_point_solves_i_minus_w_x_plus_lr_grad)
{
    check_fixed_point("dpsgd", "ring", "0", 1.0, 1, 2.0);
    check_fixed_point("dpsgd", "torus(2, 4)", "0", 1.0, 1, 2.0);
}

/* ---- gossip and pairwise averaging -------------------------------------- */

/* lr = 1e-30: the gradient steps vanish in float, leaving pure gossip. */
static const char *gossip_sets_ring[] = {"algorithm.lr=1e-30", "workload.init=independent",
                                         "experiment.eval_every=1"};

static void check_mean_kept(const char *name, const char *graph, int iters)
{
    char nm[64], gr[64];
    snprintf(nm, sizeof nm, "algorithm.name=%s", name);
    snprintf(gr, sizeof gr, "topology.graph=%s", graph);
    const char *sets[] = {gossip_sets_ring[0], gossip_sets_ring[1], gossip_sets_ring[2], nm, gr};
    harness h;
    h_build(&h, base_ini, sets, 5);
    int64_t d = h.env->d;
    double *s0 = malloc((size_t)d * sizeof *s0), *s1 = malloc((size_t)d * sizeof *s1);
    h_sum(&h, s0);
    double c0 = h_consensus(&h);
    h_run(&h, iters);
    /* every worker is done with the last iteration only at the stop for
     * lock-step runs: compare the evaluated snapshots */
    const float **xs = malloc((size_t)h.env->n * sizeof *xs);
    h.vt->worker_models(h.alg, xs);
    memset(s1, 0, (size_t)d * sizeof *s1);
    for (int i = 0; i < h.env->n; i++)
        for (int64_t j = 0; j < d; j++)
            s1[j] += xs[i][j];
    double err = 0;
    for (int64_t j = 0; j < d; j++)
        err = fmax(err, fabs(s1[j] - s0[j]) / h.env->n);
    double c1 = h_consensus(&h);
    cr_assert_lt(err, 2e-6, "%s on %s: mean moved by %.3g", name, graph, err);
    cr_assert_lt(c1, 0.5 * c0, "%s on %s: consensus %.4g -> %.4g", name, graph, c0, c1);
    free(xs);
    free(s0);
    free(s1);
    h_free(&h);
}

Test(gossip, symmetric_gossip_keeps_the_mean)
{
    check_mean_kept("dsgd_atc", "ring", 20);
    check_mean_kept("dpsgd", "torus(2, 4)", 20);
    check_mean_kept("decentlam", "exponential", 10);
    check_mean_kept("dmsgd", "one_peer_exponential", 10);
    check_mean_kept("consensus_control", "ring", 10);
}

/* One-peer exponential graph, n = 8: W_2 W_1 W_0 = J, so three gossip steps
 * average exactly (up to float rounding). */
Test(gossip, one_peer_exponential_averages_exactly_in_log2_n_steps)
{
    const char *sets[] = {gossip_sets_ring[0], gossip_sets_ring[1], gossip_sets_ring[2],
                          "topology.graph=one_peer_exponential"};
    harness h;
    h_build(&h, base_ini, sets, 4);
    double c0 = h_consensus(&h);
    h_run(&h, 2);
    double c2 = h_consensus(&h);
    h_run(&h, 3);
    double c3 = h_consensus(&h);
    cr_assert_gt(c2, 1e-3 * c0, "two steps are not enough: %.3g", c2 / c0);
    cr_assert_lt(c3, 1e-6 * c0, "three steps: %.3g of the start", c3 / c0);
    h_free(&h);
    /* the same in one iteration of three gossip steps */
    const char *sets3[] = {gossip_sets_ring[0], gossip_sets_ring[1], gossip_sets_ring[2],
                           "topology.graph=one_peer_exponential", "algorithm.gossip_steps=3"};
    h_build(&h, base_ini, sets3, 5);
    h_run(&h, 1);
    cr_assert_lt(h_consensus(&h), 1e-6 * c0);
    cr_assert_eq(algo_gossip_rounds(h.alg, 0), 3);
    h_free(&h);
}

typedef struct xi_trace {
    double xi[128];
    int n;
} xi_trace;

static void probe_xi(harness *h)
{
    xi_trace *t = h->probe_ctx;
    if (t->n < 128)
        t->xi[t->n++] = h_consensus(h);
}

/* Pure gossip on a ring of 8 (weights 1/3): Xi_{t+1} / Xi_t -> lambda_2 =
 * 1/3 + 2/3 cos(2 pi / 8); the next modes decay as (1/3 / lambda_2)^t. */
Test(gossip, pure_gossip_on_a_ring_contracts_at_lambda)
{
    const char *sets[] = {gossip_sets_ring[0], gossip_sets_ring[1], gossip_sets_ring[2]};
    harness h;
    h_build(&h, base_ini, sets, 3);
    static xi_trace t;
    t.n = 0;
    h.probe = probe_xi;
    h.probe_ctx = &t;
    h_run(&h, 30);
    double lambda = 1.0 / 3.0 + 2.0 / 3.0 * cos(2 * M_PI / 8);
    double ratio = t.xi[29] / t.xi[28];
    cr_assert(fabs(ratio - lambda) < 1e-4, "ratio %.6f, lambda %.6f", ratio, lambda);
    for (int k = 1; k < 30; k++)
        cr_assert_leq(t.xi[k], lambda * t.xi[k - 1] * (1 + 1e-5), "step %d", k);
    h_free(&h);
}

typedef struct lead_ctx {
    int64_t min_lead;
} lead_ctx;

static void probe_lead(harness *h)
{
    lead_ctx *c = h->probe_ctx;
    if (h->env->iterations < 20)
        return;
    int64_t lead = h->env->w[4].steps - h->env->w[0].steps;
    if (lead < c->min_lead)
        c->min_lead = lead;
}

/* Ring of 8, worker 0 four times slower: a worker at distance d runs d
 * iterations ahead of it (each neighbour needs only the other's x^k). */
Test(gossip, workers_far_from_a_straggler_run_ahead)
{
    const char *sets[] = {"algorithm.name=dpsgd", "workers.stragglers=1",
                          "workers.straggler_slowdown=4"};
    harness h;
    h_build(&h, base_ini, sets, 3);
    lead_ctx c = {1000};
    h.probe = probe_lead;
    h.probe_ctx = &c;
    h_run(&h, 60);
    cr_assert_geq(c.min_lead, 3, "worker 4 leads the straggler by only %lld steps",
                  (long long)c.min_lead);
    cr_assert_eq(h.env->w[0].idle_time, 0.0, "the straggler never waits");
    cr_assert_gt(h.env->w[4].idle_time, 0.5 * sim_time_to_s(sim_engine_now(h.eng)));
    h_free(&h);
}

/* Asynchronous pairwise averaging is atomic and symmetric: between two
 * applied updates the sum of the models changes by exactly -lr g of the
 * worker that applied, whatever the network delays. */
typedef struct sum_ctx {
    double *prev, *cur;
    double max_err;
    int checked;
} sum_ctx;

static void probe_sum(harness *h)
{
    sum_ctx *c = h->probe_ctx;
    int64_t d = h->env->d;
    h_sum(h, c->cur);
    float lr = (float)h->cfg.lr;
    double best = INFINITY;
    for (int w = 0; w < h->env->n; w++) {
        double e = 0;
        for (int64_t j = 0; j < d; j++)
            e = fmax(e, fabs(c->cur[j] - c->prev[j] + (double)(lr * h->env->w[w].grad[j])));
        best = fmin(best, e);
    }
    c->max_err = fmax(c->max_err, best);
    c->checked++;
    memcpy(c->prev, c->cur, (size_t)d * sizeof *c->cur);
}

static double pairwise_mean_error(const char *const *sets, int nsets, int iters)
{
    harness h;
    h_build(&h, base_ini, sets, nsets);
    sum_ctx c = {0};
    c.prev = malloc((size_t)h.env->d * sizeof(double));
    c.cur = malloc((size_t)h.env->d * sizeof(double));
    h_sum(&h, c.prev);
    h.probe = probe_sum;
    h.probe_ctx = &c;
    h_run(&h, iters);
    cr_assert_eq(c.checked, iters);
    free(c.prev);
    free(c.cur);
    h_free(&h);
    return c.max_err;
}

Test(gossip, symmetric_pairwise_averaging_keeps_the_mean)
{
    const char *ad_ring[] = {"algorithm.name=ad_psgd", "workload.init=independent",
                             "workers.compute=lognormal(10ms, 0.5)", "network.topology=star",
                             "network.latency=3ms"};
    const char *ad_complete[] = {"algorithm.name=ad_psgd", "workload.init=independent",
                                 "topology.graph=complete", "workers.count=6",
                                 "network.topology=star", "network.latency=3ms"};
    const char *sw[] = {"algorithm.name=swarm_sgd", "workload.init=independent",
                        "topology.graph=complete", "workers.count=6",
                        "workers.compute=lognormal(10ms, 0.5)", "network.topology=star",
                        "network.latency=3ms"};
    const char *sw3[] = {"algorithm.name=swarm_sgd", "workload.init=independent",
                         "algorithm.local_steps=3", "algorithm.local_steps_dist=geometric"};
    double e1 = pairwise_mean_error(ad_ring, 5, 400);
    double e2 = pairwise_mean_error(ad_complete, 6, 400);
    double e3 = pairwise_mean_error(sw, 7, 400);
    double e4 = pairwise_mean_error(sw3, 4, 400);
    cr_assert_lt(e1, 1e-5, "ad_psgd ring %.3g", e1);
    cr_assert_lt(e2, 1e-5, "ad_psgd complete %.3g", e2);
    cr_assert_lt(e3, 1e-5, "swarm symmetric %.3g", e3);
    cr_assert_lt(e4, 1e-5, "swarm H = 3 %.3g", e4);
    /* one-sided averaging moves the mean */
    const char *one[] = {"algorithm.name=swarm_sgd", "workload.init=independent",
                         "topology.graph=complete", "workers.count=6",
                         "algorithm.variant=one_sided"};
    double e5 = pairwise_mean_error(one, 5, 400);
    cr_assert_gt(e5, 1e-3, "one-sided averaging kept the mean (%.3g)", e5);
}

/* SwarmSGD's special case: H = 1, no quantization, complete graph,
 * symmetric = random pairwise gossip SGD. With lr -> 0 it is randomized
 * pairwise gossip: the mean is kept and the models contract to it. */
Test(gossip, swarm_special_case_is_random_pairwise_gossip)
{
    const char *sets[] = {"algorithm.name=swarm_sgd", "workload.init=independent",
                          "topology.graph=complete", "algorithm.lr=1e-30",
                          "experiment.eval_every=1"};
    harness h;
    h_build(&h, base_ini, sets, 5);
    int64_t d = h.env->d;
    double *s0 = malloc((size_t)d * sizeof *s0), *s1 = malloc((size_t)d * sizeof *s1);
    h_sum(&h, s0);
    double c0 = h_consensus(&h);
    h_run(&h, 400); /* 50 interactions per worker */
    h_sum(&h, s1);
    double err = 0;
    for (int64_t j = 0; j < d; j++)
        err = fmax(err, fabs(s1[j] - s0[j]) / h.env->n);
    double c1 = h_consensus(&h);
    cr_assert_lt(err, 1e-6, "mean moved by %.3g", err);
    cr_assert_lt(c1, 1e-6 * c0, "consensus %.3g -> %.3g", c0, c1);
    free(s0);
    free(s1);
    h_free(&h);
}

Test(gossip, ad_psgd_bipartite_initiators_send_one_model_per_step)
{
    const char *sets[] = {"algorithm.name=ad_psgd", "workers.compute=exponential(10ms)",
                          "network.topology=star", "network.latency=1ms"};
    harness h;
    h_build(&h, base_ini, sets, 4);
    h_run(&h, 500);
    double S = h.env->msg_bytes, active = 0, passive = 0;
    for (int i = 0; i < 8; i++) {
        double b = sim_net_bytes_sent_host(h.net, i);
        if (i % 2 == 0) {
            cr_assert_eq(b, S * (double)h.env->w[i].steps, "worker %d", i);
            active += b;
        } else {
            passive += b;
        }
    }
    cr_assert_leq(passive, active);
    cr_assert_geq(passive, active - 4 * S, "every request but those in flight is answered");
    h_free(&h);
}

Test(gossip, consensus_control_adaptive_gossip_steps)
{
    const char *loose[] = {"algorithm.name=consensus_control", "algorithm.adaptive_phases=1",
                           "algorithm.target_consensus=1e9"};
    const char *tight[] = {"algorithm.name=consensus_control", "algorithm.adaptive_phases=1",
                           "algorithm.target_consensus=1e-30", "algorithm.max_gossip_steps=5"};
    const char *rel[] = {"algorithm.name=consensus_control", "algorithm.adaptive_phases=all",
                         "algorithm.target_fraction=0.5", "algorithm.max_gossip_steps=40"};
    const int K = 20;
    harness h;
    h_build(&h, base_ini, loose, 3);
    h_run(&h, K);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(algo_gossip_rounds(h.alg, i), K, "worker %d", i);
    /* gossip 2 S per worker and a scalar ring all-reduce (8 bytes) per step */
    double expect = K * (8 * 2 * 176.0 + 2 * 7 * 8.0);
    cr_assert(fabs(sim_net_bytes_sent_total(h.net) - expect) < 1e-6, "bytes %.3f vs %.3f",
              sim_net_bytes_sent_total(h.net), expect);
    h_free(&h);
    h_build(&h, base_ini, tight, 4);
    h_run(&h, K);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(algo_gossip_rounds(h.alg, i), 5 * K, "worker %d", i);
    h_free(&h);
    /* relative: at least two steps (the first estimate is above half
     * itself), fewer than the cap; steady state log(1/2)/log(1/lambda) + 1 */
    h_build(&h, base_ini, rel, 4);
    h_run(&h, K);
    int64_t r0 = algo_gossip_rounds(h.alg, 0);
    cr_assert(r0 >= 2 * K && r0 < 40 * K, "rounds %lld", (long long)r0);
    h_free(&h);
}

