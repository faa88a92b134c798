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
#include <unistd.h>

#include "algorithms/core/algo.h"
#include "algorithms/drivers/gossip.h"
#include "sim/rng.h"
#include "tests/algorithms/harness.h"
#include "algorithms/core/fault.h"
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
    h_build(&h, test_base_ini, sets, 5);
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
    h_build(&h, test_base_ini, sets, 4);
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
    h_build(&h, test_base_ini, sets3, 5);
    h_run(&h, 1);
    cr_assert_lt(h_consensus(&h), 1e-6 * c0);
    cr_assert_eq(h.env->w[0].gossip_rounds, 3);
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
    h_build(&h, test_base_ini, sets, 3);
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
    h_build(&h, test_base_ini, sets, 3);
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
    h_build(&h, test_base_ini, sets, nsets);
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
    h_build(&h, test_base_ini, sets, 5);
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
    h_build(&h, test_base_ini, sets, 4);
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
    h_build(&h, test_base_ini, loose, 3);
    h_run(&h, K);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(h.env->w[i].gossip_rounds, K, "worker %d", i);
    /* gossip 2 S per worker and a scalar ring all-reduce (8 bytes) per step */
    double expect = K * (8 * 2 * 176.0 + 2 * 7 * 8.0);
    cr_assert(fabs(sim_net_bytes_sent_total(h.net) - expect) < 1e-6, "bytes %.3f vs %.3f",
              sim_net_bytes_sent_total(h.net), expect);
    h_free(&h);
    h_build(&h, test_base_ini, tight, 4);
    h_run(&h, K);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(h.env->w[i].gossip_rounds, 5 * K, "worker %d", i);
    h_free(&h);
    /* relative: at least two steps (the first estimate is above half
     * itself), fewer than the cap; steady state log(1/2)/log(1/lambda) + 1 */
    h_build(&h, test_base_ini, rel, 4);
    h_run(&h, K);
    int64_t r0 = h.env->w[0].gossip_rounds;
    cr_assert(r0 >= 2 * K && r0 < 40 * K, "rounds %lld", (long long)r0);
    h_free(&h);
}

/* ---- synchronous gossip under crashes ---------------------------------- */

/* The evaluated model (every iteration: the live workers' x^{k+1}, a
 * consistent cut) while worker 3 is down. */
static void probe_model_mean(harness *h)
{
    live_mean *lm = h->probe_ctx;
    if (!h->env->w[3].down)
        return;
    live_mean_track_model(h, lm);
}

/* dpsgd (AWC) and dsgd_atc on a ring of 8 with lr = 1e-30 and independent
 * initial models: only the mixing moves the models. While worker 3 is down
 * (0.1 s to 0.3 s) workers 2 and 4 skip it after the timeout and move its
 * weight to their own (W stays doubly stochastic over the live path), so
 * the live workers' mean stays what it was (float rounding: 1e-5). Worker 3
 * computes nothing while down and the run goes on after its rejoin. */
Test(gossip, gossip_keeps_the_live_mean_while_a_worker_is_down)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.1s,crash,3,\n"
                          "0.3s,rejoin,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *methods[] = {"algorithm.name=dpsgd", "algorithm.name=dsgd_atc"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {set, methods[m], "algorithm.lr=1e-30",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              "network.topology=star", "network.latency=100us",
                              "experiment.eval_every=1"};
        static live_mean lm;
        memset(&lm, 0, sizeof lm);
        harness h;
        h_build(&h, test_base_ini, sets, 8);
        cr_assert_leq(h.env->d, 64);
        h.probe = probe_model_mean;
        h.probe_ctx = &lm;
        h_run(&h, 60);
        cr_assert(lm.have_ref, "%s", methods[m]);
        cr_assert_gt(lm.checked, 5, "%s", methods[m]);
        cr_assert_lt(lm.worst, 1e-5, "%s: the live mean moved by %g", methods[m], lm.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_gt(h.env->w[3].steps, 0);
        /* 10 ms steps: about 0.2 s of them missing */
        cr_assert_lt(h.env->w[3].steps, h.env->w[2].steps - 8, "%s", methods[m]);
        cr_assert_eq(h.env->iterations, 60);
        h_free(&h);
    }
    unlink(path);
}

/* A gossip method on a ring of 8 over an ideal network (messages take no
 * time), constant T = 10 ms, worker 5 crashing at 0.105 s (inside
 * iteration 10's compute), sync_timeout = 50 ms: iteration `slow` takes
 * `cost` after the one before it, every other iteration T. */
static void check_crash_cost(const char *const *method, int nmethod, int slow, double cost)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n0.105s,crash,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[8] = {set, "faults.sync_timeout=50ms"};
    for (int a = 0; a < nmethod && a < 6; a++)
        sets[2 + a] = method[a];
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 2 + nmethod);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 30);
    const double T = 0.01;
    cr_assert_eq(ts.n, 30);
    for (int i = 0; i < slow; i++)
        cr_assert(fabs(ts.t[i] - T * (i + 1)) < 1e-9, "%s: iteration %d at %.9f", method[0], i,
                  ts.t[i]);
    cr_assert(fabs(ts.t[slow] - ts.t[slow - 1] - cost) < 1e-9, "%s: %.9f vs %.9f", method[0],
              ts.t[slow] - ts.t[slow - 1], cost);
    for (int i = slow + 1; i < 30; i++)
        cr_assert(fabs(ts.t[i] - ts.t[i - 1] - T) < 1e-9, "%s: iteration %d: %.9f", method[0],
                  i, ts.t[i] - ts.t[i - 1]);
    /* 10 steps: the 11th, cut by the crash, is not counted */
    cr_assert_eq(h.env->w[5].steps, 10, "%s", method[0]);
    h_free(&h);
    unlink(path);
}

/* dsgd_atc: worker 5's neighbours 4 and 6 finish their step at 0.11 s,
 * publish and wait sync_timeout = 50 ms for it, so iteration 10 ends at
 * 0.11 + 0.05 = 0.16 s (T + timeout after iteration 9). From then on they
 * know it is dead and every iteration takes T again. */
Test(gossip, gossip_crash_costs_the_timeout_once)
{
    const char *m[] = {"algorithm.name=dsgd_atc"};
    check_crash_cost(m, 1, 10, 0.01 + 0.05);
}

/* The same for the momentum methods. ATC forms (dmsgd, decentlam,
 * momentum_consensus with overlap = false): iteration 10 takes T + timeout.
 * AWC forms (dmsgd form = awc, momentum_consensus overlap = true): worker 5
 * sent its step-10 message at 0.10 s, before it crashed, so iteration 10
 * completes on time; the neighbours' wait for its step-11 message starts
 * when they send theirs (0.11 s) and overlaps their gradient, so
 * iteration 11 takes the timeout (50 ms > T). */
Test(gossip, momentum_gossip_crash_costs_the_timeout_once)
{
    const double T = 0.01, to = 0.05;
    const char *atc[][3] = {{"algorithm.name=dmsgd", "algorithm.momentum=0.9"},
                            {"algorithm.name=decentlam", "algorithm.momentum=0.9"},
                            {"algorithm.name=momentum_consensus", "algorithm.momentum=0.9",
                             "algorithm.overlap=false"}};
    for (int m = 0; m < 3; m++)
        check_crash_cost(atc[m], m == 2 ? 3 : 2, 10, T + to);
    const char *awc[][3] = {{"algorithm.name=dmsgd", "algorithm.momentum=0.9",
                             "algorithm.form=awc"},
                            {"algorithm.name=momentum_consensus", "algorithm.momentum=0.9",
                             "algorithm.overlap=true"}};
    for (int m = 0; m < 2; m++)
        check_crash_cost(awc[m], 3, 11, to);
}

/* A ring of 8 cut in two by the crashes of workers 2 and 6 for 1 s, one
 * part paced by worker 0 slowed 5x: the parts drift about 80 iterations
 * apart (more than the iteration window of n (period + 1) + 4 = 20, which
 * then grows), the run completes after the rejoins, and the iteration
 * count is that of the slow part: global iteration k waits for every live
 * worker; after the rejoins the fast part waits for the slow one to catch
 * up (the rejoined workers join at the fast part's iteration). */
Test(gossip, gossip_parts_of_a_cut_ring_drift_apart_and_rejoin)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.1s,crash,2,\n"
                          "0.1s,crash,6,\n"
                          "0.1s,slowdown,0,5\n"
                          "1.1s,rejoin,2,\n"
                          "1.1s,rejoin,6,\n"
                          "1.1s,slowdown,0,1\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=dpsgd", "faults.sync_timeout=20ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 3);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 26); /* about 1 s */
    /* the fast part ({3, 4, 5}) has run ahead of the slow one ({7, 0, 1}) */
    cr_assert_lt(sim_time_to_s(sim_engine_now(h.eng)), 1.1);
    cr_assert_gt(h.env->w[4].steps, h.env->w[0].steps + 40, "%lld vs %lld",
                 (long long)h.env->w[4].steps, (long long)h.env->w[0].steps);
    h_run(&h, 150);
    /* while cut, the slow part sets the pace: 50 ms a step */
    int slow = count_in(&ts, 0.3, 1.1);
    cr_assert(slow >= 14 && slow <= 17, "%d iterations in 0.8 s", slow);
    /* after the rejoins the parts are joined again: nobody is far ahead */
    cr_assert_lt(h.env->w[4].steps, h.env->w[0].steps + 10);
    cr_assert_eq(h.env->w[2].down, 0);
    cr_assert_gt(h.env->w[2].steps, 20);
    h_free(&h);
    unlink(path);
}

/* The evaluated model at every iteration, against the first one. */
static void probe_mean_kept(harness *h)
{
    live_mean *lm = h->probe_ctx;
    float x[64];
    const float *m = h->vt->model(h->alg, x);
    if (!lm->have_ref) {
        for (int64_t e = 0; e < h->env->d; e++)
            lm->ref[e] = m[e];
        lm->have_ref = 1;
        return;
    }
    for (int64_t e = 0; e < h->env->d; e++)
        if (fabs(m[e] - lm->ref[e]) > lm->worst)
            lm->worst = fabs(m[e] - lm->ref[e]);
    lm->checked++;
}

/* dpsgd on a physical ring of 8 (the gossip ring on it), lr = 1e-30 and
 * independent initial models: only the mixing moves the models. The link
 * 2-3 is down from 0.05 s to 0.25 s: messages 2 -> 3 and 3 -> 2 go the
 * long way round (7 hops), the ones lost in flight are re-sent after the
 * timeout and the receivers wait for them; no message is missing, so W is
 * applied whole and the workers' mean stays what it was (1e-5). */
Test(gossip, gossip_keeps_its_mean_over_a_down_link)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.05s,link,2-3,down\n"
                          "0.25s,link,2-3,up\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=dpsgd", "algorithm.lr=1e-30",
                          "workload.init=independent", "faults.sync_timeout=20ms",
                          "network.topology=ring", "network.latency=100us",
                          "network.bandwidth=10kB/s", "experiment.eval_every=1"};
    static live_mean lm;
    memset(&lm, 0, sizeof lm);
    harness h;
    h_build(&h, test_base_ini, sets, 9);
    cr_assert_leq(h.env->d, 64);
    h.probe = probe_mean_kept;
    h.probe_ctx = &lm;
    h_run(&h, 60);
    cr_assert_eq(h.env->iterations, 60);
    cr_assert_gt(lm.checked, 50);
    cr_assert_lt(lm.worst, 1e-5, "the mean moved by %g", lm.worst);
    cr_assert_gt(sim_net_lost_messages(h.net), 0);
    cr_assert_gt(sim_net_resent_bytes(h.net), 0.0);
    h_free(&h);
    unlink(path);
}


/* ---- the momentum gossip methods under crashes ------------------------- */

/* dmsgd (ATC and AWC) with lr = 1e-30: its momentum is driven by the
 * gradients and vanishes, so the live workers' mean is kept as with
 * dpsgd (the probe and set-up of gossip_keeps_the_live_mean_while_a_worker_is_down). */
Test(gossip, dmsgd_keeps_the_live_mean_while_a_worker_is_down)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.1s,crash,3,\n"
                          "0.3s,rejoin,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *forms[] = {"algorithm.form=atc", "algorithm.form=awc"};
    for (int f = 0; f < 2; f++) {
        const char *sets[] = {set, "algorithm.name=dmsgd", forms[f], "algorithm.momentum=0.9",
                              "algorithm.lr=1e-30", "workload.init=independent",
                              "faults.sync_timeout=20ms", "network.topology=star",
                              "network.latency=100us", "experiment.eval_every=1"};
        static live_mean lm;
        memset(&lm, 0, sizeof lm);
        harness h;
        h_build(&h, test_base_ini, sets, 10);
        h.probe = probe_model_mean;
        h.probe_ctx = &lm;
        h_run(&h, 60);
        cr_assert(lm.have_ref, "%s", forms[f]);
        cr_assert_gt(lm.checked, 5, "%s", forms[f]);
        cr_assert_lt(lm.worst, 1e-5, "%s: the live mean moved by %g", forms[f], lm.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_lt(h.env->w[3].steps, h.env->w[2].steps - 8, "%s", forms[f]);
        h_free(&h);
    }
    unlink(path);
}

/* The live workers' Q = mean_i (x_i^K + beta/(1-beta) (x_i^K - x_i^{K-1}))
 * at every evaluation snapshot K (worker 3 excluded) while worker 3 is
 * down. */
typedef struct live_q {
    float prev[8][64];
    int have_prev;       /* prev holds the snapshot of the previous iteration, 3 down */
    double beta;
    live_mean lm;
} live_q;

static void probe_live_q(harness *h)
{
    live_q *q = h->probe_ctx;
    const float *xs[8];
    int64_t d = h->env->d;
    h->vt->worker_models(h->alg, xs);
    if (!h->env->w[3].down) {
        q->have_prev = 0;
        return;
    }
    if (q->have_prev) {
        double m[64] = {0}, c = q->beta / (1 - q->beta);
        for (int i = 0; i < 8; i++)
            for (int64_t e = 0; e < d && i != 3; e++)
                m[e] += (xs[i][e] + c * ((double)xs[i][e] - q->prev[i][e])) / 7;
        live_mean_track(&q->lm, m, d);
    }
    for (int i = 0; i < 8; i++)
        memcpy(q->prev[i], xs[i], (size_t)d * sizeof(float));
    q->have_prev = 1;
}

/* decentlam and momentum_consensus (both forms) on a ring of 8 with
 * lr = 1e-30 and independent initial models. Their momentum carries the
 * consensus moves (decentlam: lr m_i^{k+1} = x_i^k - x_i^{k+1};
 * momentum_consensus: v_i^{k+1} = x_i^{k+1} - x_i^k), so what W (doubly
 * stochastic over the live graph, the missing neighbours' x and v replaced
 * by the worker's own) keeps is not the live mean of x but
 * Q = mean_live (x + beta/(1-beta) v): sum x' = sum x + beta sum v and
 * sum v' = beta sum v. A crashed worker takes its v with it, so the plain
 * live mean moves by up to beta/(1-beta) |v_3| / 7, while Q stays within
 * float rounding (1e-5) as long as worker 3 is down. */
Test(gossip, momentum_gossip_keeps_the_live_invariant_while_a_worker_is_down)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.1s,crash,3,\n"
                          "0.3s,rejoin,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *methods[][2] = {{"algorithm.name=decentlam", "algorithm.nesterov=false"},
                                {"algorithm.name=momentum_consensus", "algorithm.overlap=true"},
                                {"algorithm.name=momentum_consensus", "algorithm.overlap=false"}};
    for (int m = 0; m < 3; m++) {
        const char *sets[] = {set, methods[m][0], methods[m][1], "algorithm.momentum=0.8",
                              "algorithm.lr=1e-30", "workload.init=independent",
                              "faults.sync_timeout=20ms", "network.topology=star",
                              "network.latency=100us", "experiment.eval_every=1"};
        static live_q q;
        memset(&q, 0, sizeof q);
        q.beta = 0.8;
        harness h;
        h_build(&h, test_base_ini, sets, 10);
        cr_assert_leq(h.env->d, 64);
        h.probe = probe_live_q;
        h.probe_ctx = &q;
        h_run(&h, 60);
        cr_assert(q.lm.have_ref, "%s", methods[m][1]);
        cr_assert_gt(q.lm.checked, 5, "%s", methods[m][1]);
        cr_assert_lt(q.lm.worst, 1e-5, "%s %s: Q moved by %g", methods[m][0], methods[m][1],
                     q.lm.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_lt(h.env->w[3].steps, h.env->w[2].steps - 8, "%s", methods[m][0]);
        h_free(&h);
    }
    unlink(path);
}

/* A rejoin's fresh state, through the rejoining worker's first update.
 * Worker 3 crashes at 0.105 s and rejoins at 0.305 s, when every live
 * worker is inside a compute step of iteration k (ideal network, T =
 * 10 ms). An event of the test at that instant (after the rejoin) reads
 * the models, worker 3's rejoin model and the gradient it has just
 * computed there. Worker 3 starts at iteration k0 = k (ATC: its
 * neighbours have not published step k yet) or k + 1 (AWC: they have).
 * Its x_3^{k0 + 1}, read at the next snapshot, must be the update from
 * zero momentum:
 *   dmsgd (awc):             sum_j W_3j x_j^{k0} - lr g_3         (m_3 = 0)
 *   decentlam (lr ~ 0):      sum_j W_3j x_j^{k0}                  (m_3 = 0)
 *   momentum_consensus:      sum_j W_3j x_j^{k0}
 *       + beta (1 - omega) sum_{j != 3} W_3j (x_j^{k0} - x_j^{k0-1})  (v_3 = 0)
 * With the momentum left from before the crash each is off by beta m_3
 * (lr beta m_3 for decentlam, beta omega v_3 for momentum_consensus). */
typedef struct rejoin_probe {
    float hist[48][8][64];   /* worker models at the snapshot of iteration K */
    float x[8][64];          /* current models at the rejoin instant */
    float g3[64];
    int64_t k_at;            /* completed iterations at the rejoin instant */
    int seen;
} rejoin_probe;

static void probe_hist(harness *h)
{
    rejoin_probe *r = h->probe_ctx;
    const float *xs[8];
    h->vt->worker_models(h->alg, xs);
    int64_t K = h->env->iterations;
    for (int i = 0; i < 8 && K < 48; i++)
        memcpy(r->hist[K][i], xs[i], (size_t)h->env->d * sizeof(float));
}

static void on_rejoin_probe(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)arg;
    (void)payload;
    harness *h = ctx;
    rejoin_probe *r = h->probe_ctx;
    r->k_at = h->env->iterations;
    for (int i = 0; i < 8; i++)
        memcpy(r->x[i], h->env->w[i].x, (size_t)h->env->d * sizeof(float));
    memcpy(r->g3, h->env->w[3].grad, (size_t)h->env->d * sizeof(float));
    r->seen = 1;
}

Test(gossip, momentum_gossip_rejoin_starts_from_zero_momentum)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.105s,crash,3,\n"
                          "0.305s,rejoin,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    struct {
        const char *name, *opt, *lr;
        int awc, mc;     /* form; momentum_consensus */
        double lr_v;
    } cases[] = {
        {"algorithm.name=dmsgd", "algorithm.form=awc", "algorithm.lr=0.1", 1, 0, 0.1},
        {"algorithm.name=decentlam", "algorithm.nesterov=false", "algorithm.lr=1e-30", 0, 0, 0},
        {"algorithm.name=momentum_consensus", "algorithm.overlap=false", "algorithm.lr=1e-30", 0,
         1, 0},
        {"algorithm.name=momentum_consensus", "algorithm.overlap=true", "algorithm.lr=1e-30", 1,
         1, 0},
    };
    const double beta = 0.9, omega = 0.5;
    for (int c = 0; c < 4; c++) {
        const char *sets[] = {set, cases[c].name, cases[c].opt, cases[c].lr,
                              "algorithm.momentum=0.9", "workload.init=independent",
                              "faults.sync_timeout=50ms", "experiment.eval_every=1"};
        static rejoin_probe r;
        memset(&r, 0, sizeof r);
        harness h;
        h_build(&h, test_base_ini, sets, 8);
        int64_t d = h.env->d;
        cr_assert_leq(d, 64);
        h.probe = probe_hist;
        h.probe_ctx = &r;
        cr_assert(sim_engine_schedule(h.eng, 305 * (SIM_NS_PER_S / 1000), on_rejoin_probe, &h, 0, NULL, NULL));
        h_run(&h, 40);
        cr_assert(r.seen);
        int64_t k0 = r.k_at + cases[c].awc;
        cr_assert(k0 > 10 && k0 + 1 < 40, "%s: k0 = %lld", cases[c].name, (long long)k0);
        const topo_wmat *W = topo_mixing_at(h.mix, 0);
        double worst = 0, scale = 0, moved = 0;
        for (int64_t e = 0; e < d; e++) {
            /* the model rule: the mean of the live neighbours' current models */
            double mean = ((double)r.x[2][e] + r.x[4][e]) / 2;
            cr_assert(fabs(r.x[3][e] - mean) < 1e-6, "%s: rejoin model %g vs %g", cases[c].name,
                      r.x[3][e], mean);
            double want = topo_wmat_get(W, 3, 3) * r.x[3][e];
            for (int j = 2; j <= 4; j += 2) {
                double xj = r.hist[k0][j][e], w = topo_wmat_get(W, 3, j);
                if (!cases[c].awc) /* ATC: the neighbours are still at x^{k0} */
                    cr_assert_eq(r.x[j][e], r.hist[k0][j][e]);
                want += w * xj;
                if (cases[c].mc)
                    want += beta * (1 - omega) * w * (xj - r.hist[k0 - 1][j][e]);
            }
            want -= cases[c].lr_v * r.g3[e];
            double got = r.hist[k0 + 1][3][e];
            worst = fmax(worst, fabs(got - want));
            scale = fmax(scale, fabs(want));
            moved = fmax(moved, fabs((double)r.hist[10][3][e] - r.hist[9][3][e]));
        }
        cr_assert_lt(worst, 1e-5 * scale, "%s %s: off by %g", cases[c].name, cases[c].opt,
                     worst);
        /* worker 3 was moving before its crash (x_3^10 - x_3^9, its v or
         * lr m there for the lr ~ 0 methods): its old momentum is not small */
        cr_assert_gt(moved, 1e-3 * scale, "%s: worker 3's last move %g", cases[c].name, moved);
        h_free(&h);
    }
    unlink(path);
}

/* ---- time-varying graphs (one_peer_exponential) under crashes ----------- */

#include "algorithms/drivers/gossip.h"

/* The live workers' mean over the evaluation snapshots, its reference
 * retaken at the first snapshot of the live workers after the set of down
 * workers changes. */
typedef struct tv_mean {
    live_mean lm;
    unsigned down;        /* the down set of the reference */
} tv_mean;

static void probe_tv_mean(harness *h)
{
    tv_mean *tm = h->probe_ctx;
    unsigned down = 0;
    for (int i = 0; i < h->env->n; i++)
        if (h->env->w[i].down)
            down |= 1u << i;
    if (down != tm->down) {
        tm->down = down;
        tm->lm.have_ref = 0;
    }
    if (!down)
        return;
    /* only the snapshots of iterations that the down workers took no part
     * in (a worker that crashed inside iteration k may have completed k - 1) */
    const float *xs[32];
    int live = 0;
    for (int i = 0; i < h->env->n; i++)
        live += !h->env->w[i].down;
    if (algo_gossip_live_models(h->alg, xs) != live)
        return;
    live_mean_track_model(h, &tm->lm);
}

/* one_peer_exponential on 8 workers (W_t = (I + P_t)/2, i receiving from
 * i + 2^(t mod 3)), lr = 1e-30 and independent initial models: only the
 * mixing moves the models. Worker 3 is down from 5 ms (inside iteration
 * 0's compute, before the models reach consensus, which this graph does
 * in 3 steps with every worker up), worker 4 (its successor on the cycles
 * of shift 1) from 25 ms, both rejoin at 0.3 s.
 * The dead workers are bypassed along P_t's cycle, so the live workers'
 * mean stays what it was (float rounding: 1e-5). Moving a dead peer's
 * weight to the receiver's diagonal instead keeps the rows stochastic but
 * not the columns: the mean would move by (x_i - x_h)/2 per bypass, O(0.1)
 * with these models. */
Test(gossip, gossip_keeps_the_live_mean_on_a_time_varying_graph)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.005s,crash,3,\n"
                          "0.025s,crash,4,\n"
                          "0.3s,rejoin,3,\n"
                          "0.3s,rejoin,4,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *methods[] = {"algorithm.name=dpsgd", "algorithm.name=dsgd_atc",
                             "algorithm.name=dmsgd"};
    for (int m = 0; m < 3; m++) {
        const char *sets[] = {set, methods[m], "algorithm.lr=1e-30",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              "network.topology=star", "network.latency=100us",
                              "experiment.eval_every=1", "topology.graph=one_peer_exponential"};
        static tv_mean tm;
        memset(&tm, 0, sizeof tm);
        harness h;
        h_build(&h, test_base_ini, sets, 9);
        cr_assert_leq(h.env->d, 64);
        h.probe = probe_tv_mean;
        h.probe_ctx = &tm;
        h_run(&h, 60);
        cr_assert_gt(tm.lm.checked, 5, "%s", methods[m]);
        cr_assert_lt(tm.lm.worst, 1e-5, "%s: the live mean moved by %g", methods[m],
                     tm.lm.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_eq(h.env->w[4].down, 0);
        cr_assert_gt(h.env->w[3].steps, 0);
        cr_assert_lt(h.env->w[3].steps, h.env->w[2].steps - 8, "%s", methods[m]);
        /* worker 4 was up 20 ms longer */
        cr_assert_gt(h.env->w[4].steps, h.env->w[3].steps, "%s", methods[m]);
        cr_assert_lt(h.env->w[4].steps, h.env->w[2].steps - 8, "%s", methods[m]);
        cr_assert_eq(h.env->iterations, 60);
        h_free(&h);
    }
    unlink(path);
}

/* The crash costs one timeout on a time-varying graph too (constant T on an
 * ideal network, worker 5 crashing inside iteration 10's compute): for
 * dsgd_atc iteration 10 takes T + timeout (worker 5's receiver waits for it
 * from 0.11 s); the receivers of the later steps, whose waits start later,
 * are done by then, so every other iteration takes T. dpsgd (AWC): worker 5
 * sent and combined step 10 before it crashed; the wait for its step-11
 * message overlaps the gradient, so iteration 11 takes the timeout. */
Test(gossip, time_varying_gossip_crash_costs_the_timeout_once)
{
    const char *atc[] = {"algorithm.name=dsgd_atc", "topology.graph=one_peer_exponential"};
    check_crash_cost(atc, 2, 10, 0.01 + 0.05);
    const char *awc[] = {"algorithm.name=dpsgd", "topology.graph=one_peer_exponential"};
    check_crash_cost(awc, 2, 11, 0.05);
}

/* D-PSGD on a ring of 8 over a 1 Gb/s star with fair sharing, 4 MB
 * messages (2 S / B = 64 ms a step), 1 ms of compute: worker 0 is slowed
 * 50x for one step at 0.3 s. A worker's messages to one neighbour leave one
 * after the other (one connection per pair), so once the slow step is past
 * every iteration takes what it took before; with every message a flow of
 * its own, the steps that then overlapped on each link kept sharing it and
 * the iterations stayed longer for the rest of the run. */
Test(gossip, dpsgd_recovers_its_step_time_after_a_perturbation)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n0.3s,slowdown,0,50\n0.35s,slowdown,0,1\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set,
                          "algorithm.name=dpsgd",
                          "network.topology=star",
                          "network.bandwidth=1Gbps",
                          "network.latency=5us",
                          "network.sharing=fair",
                          "workers.compute=constant(1ms)",
                          "workload.sim_params=1000000"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 8);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 40);
    cr_assert_eq(ts.n, 40);
    double before = (ts.t[4] - ts.t[1]) / 3, after = (ts.t[39] - ts.t[29]) / 10;
    cr_assert(before > 0.064 && before < 0.066, "before %.6f", before);
    cr_assert(fabs(after - before) < 1e-6, "before %.6f, after %.6f", before, after);
    h_free(&h);
    unlink(path);
}
