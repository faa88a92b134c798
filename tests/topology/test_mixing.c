/* Mixing matrices: Metropolis and uniform weights against hand values,
 * double stochasticity, the one-peer schedule (W_t and the period's product
 * equal to exact averaging), and the gossip kernel (against a double
 * reference, row by row, bitwise repeatable, and the consensus distance
 * contracting by lambda per step). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_sort_vector.h>

#include "sim/rng.h"
#include "topology/graph.h"
#include "topology/mixing.h"

static void build_ok(topo_graph *g, const char *spec, int n)
{
    gsl_rng *r = sim_rng_create(1, SIM_STREAM_TOPOLOGY, 0);
    sim_err err = {0};
    int rc = topo_graph_build(g, spec, n, r, &err);
    gsl_rng_free(r);
    cr_assert_eq(rc, 0, "%s: %s", spec, err.msg);
}

static topo_mixing *mix_ok(const topo_graph *g, topo_weights w)
{
    sim_err err = {0};
    topo_mixing *m = topo_mixing_create(g, w, &err);
    cr_assert_not_null(m, "%s: %s", g->spec, err.msg);
    return m;
}

static void dense_of(const topo_wmat *W, double *a)
{
    memset(a, 0, sizeof *a * (size_t)W->n * (size_t)W->n);
    for (int i = 0; i < W->n; i++)
        for (int64_t p = W->row[i]; p < W->row[i + 1]; p++)
            a[(size_t)i * (size_t)W->n + (size_t)W->col[p]] = W->w[p];
}

static void check_doubly_stochastic(const topo_wmat *W)
{
    int n = W->n;
    double *a = malloc(sizeof *a * (size_t)n * (size_t)n);
    dense_of(W, a);
    for (int i = 0; i < n; i++) {
        double r = 0, c = 0;
        for (int j = 0; j < n; j++) {
            r += a[i * n + j];
            c += a[j * n + i];
            cr_assert(a[i * n + j] >= 0);
        }
        cr_assert(fabs(r - 1) <= 1e-12 && fabs(c - 1) <= 1e-12, "row/col %d: %.17g %.17g", i, r, c);
    }
    free(a);
}

Test(mixing, ring_metropolis_is_one_third)
{
    topo_graph g;
    build_ok(&g, "ring", 8);
    topo_mixing *m = mix_ok(&g, TOPO_WEIGHTS_METROPOLIS);
    const topo_wmat *W = topo_mixing_at(m, 0);
    cr_assert_eq(topo_mixing_period(m), 1);
    cr_assert(topo_mixing_is_symmetric(m));
    cr_assert_eq(W->nnz, 24);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(W->row[i + 1] - W->row[i], 3);
        cr_assert_eq(W->col[W->diag[i]], i);
        for (int64_t p = W->row[i]; p < W->row[i + 1]; p++) {
            cr_assert(fabs(W->w[p] - 1.0 / 3) < 1e-15);
            cr_assert(p == W->row[i] || W->col[p] > W->col[p - 1], "columns ascending");
        }
    }
    cr_assert(fabs(topo_wmat_get(W, 0, 7) - 1.0 / 3) < 1e-15);
    cr_assert_eq(topo_wmat_get(W, 0, 4), 0.0);
    check_doubly_stochastic(W);
    /* uniform weights on the ring are the same matrix */
    topo_mixing *u = mix_ok(&g, TOPO_WEIGHTS_UNIFORM);
    const topo_wmat *U = topo_mixing_at(u, 0);
    for (int64_t p = 0; p < W->nnz; p++)
        cr_assert(U->col[p] == W->col[p] && fabs(U->w[p] - W->w[p]) < 1e-15);
    topo_mixing_destroy(u);
    topo_mixing_destroy(m);
    topo_graph_release(&g);
}

Test(mixing, star_metropolis)
{
    /* hub degree n - 1, leaves 1: W_hub,leaf = 1 / n; hub keeps 1 / n,
     * a leaf keeps 1 - 1 / n. */
    int n = 6;
    topo_graph g;
    build_ok(&g, "star", n);
    topo_mixing *m = mix_ok(&g, TOPO_WEIGHTS_METROPOLIS);
    const topo_wmat *W = topo_mixing_at(m, 0);
    for (int j = 1; j < n; j++) {
        cr_assert(fabs(topo_wmat_get(W, 0, j) - 1.0 / n) < 1e-15);
        cr_assert(fabs(topo_wmat_get(W, j, 0) - 1.0 / n) < 1e-15);
        cr_assert(fabs(topo_wmat_get(W, j, j) - (1.0 - 1.0 / n)) < 1e-15);
    }
    cr_assert(fabs(topo_wmat_get(W, 0, 0) - 1.0 / n) < 1e-15);
    check_doubly_stochastic(W);
    topo_mixing_destroy(m);

    sim_err err = {0};
    cr_assert_null(topo_mixing_create(&g, TOPO_WEIGHTS_UNIFORM, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "uniform weights need a regular graph, but degrees range from 1 to 5"),
              "%s", err.msg);
    topo_graph_release(&g);
}

Test(mixing, complete_is_exact_averaging)
{
    topo_graph g;
    build_ok(&g, "complete", 9);
    for (int w = 0; w < 2; w++) {
        topo_mixing *m = mix_ok(&g, (topo_weights)w);
        const topo_wmat *W = topo_mixing_at(m, 0);
        cr_assert_eq(W->nnz, 81);
        for (int64_t p = 0; p < W->nnz; p++)
            cr_assert(fabs(W->w[p] - 1.0 / 9) < 1e-15);
        topo_mixing_destroy(m);
    }
    topo_graph_release(&g);
}

Test(mixing, torus_uniform_and_irregular_metropolis)
{
    topo_graph g;
    build_ok(&g, "torus(3, 4)", 12);
    topo_mixing *m = mix_ok(&g, TOPO_WEIGHTS_UNIFORM);
    const topo_wmat *W = topo_mixing_at(m, 0);
    for (int64_t p = 0; p < W->nnz; p++)
        cr_assert(fabs(W->w[p] - 0.2) < 1e-15);
    topo_mixing_destroy(m);
    topo_graph_release(&g);

    /* an irregular random graph: Metropolis still doubly stochastic, symmetric */
    build_ok(&g, "erdos_renyi(0.2)", 60);
    m = mix_ok(&g, TOPO_WEIGHTS_METROPOLIS);
    W = topo_mixing_at(m, 0);
    check_doubly_stochastic(W);
    for (int i = 0; i < 60; i++)
        for (int64_t p = W->row[i]; p < W->row[i + 1]; p++)
            cr_assert_eq(W->w[p], topo_wmat_get(W, W->col[p], i));
    topo_mixing_destroy(m);
    topo_graph_release(&g);
}

static void matmul(const double *a, const double *b, double *c, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
}

Test(mixing, one_peer_period_is_exact_averaging)
{
    int sizes[] = {2, 4, 8, 32};
    for (int s = 0; s < 4; s++) {
        int n = sizes[s];
        topo_graph g;
        build_ok(&g, "one_peer_exponential", n);
        topo_mixing *m = mix_ok(&g, TOPO_WEIGHTS_METROPOLIS);
        int p = topo_mixing_period(m);
        cr_assert_eq(p, n > 1 ? (int)log2(n) : 1);
        cr_assert_not(topo_mixing_is_symmetric(m));
        double *prod = calloc((size_t)n * n, sizeof *prod), *w = malloc(sizeof *w * n * n),
               *tmp = malloc(sizeof *tmp * n * n);
        for (int i = 0; i < n; i++)
            prod[i * n + i] = 1;
        for (int t = 0; t < p; t++) {
            const topo_wmat *W = topo_mixing_at(m, t);
            cr_assert_eq(W, topo_mixing_at(m, t + p), "W_t has period p");
            check_doubly_stochastic(W);
            for (int i = 0; i < n; i++) {
                int peer = (i + (1 << t)) % n;
                cr_assert(fabs(topo_wmat_get(W, i, i) - 0.5) < 1e-15);
                cr_assert(fabs(topo_wmat_get(W, i, peer) - 0.5) < 1e-15);
            }
            dense_of(W, w);
            matmul(w, prod, tmp, n); /* W_t ... W_0 */
            memcpy(prod, tmp, sizeof *tmp * n * n);
        }
        for (int k = 0; k < n * n; k++)
            cr_assert(fabs(prod[k] - 1.0 / n) <= 1e-12, "n %d: product entry %d = %.17g", n, k, prod[k]);
        free(prod);
        free(w);
        free(tmp);
        topo_mixing_destroy(m);
        topo_graph_release(&g);
    }
}

/* n vectors of length d with entries uniform in [-1, 1). */
static float **random_vectors(int n, int64_t d, uint64_t seed)
{
    gsl_rng *r = sim_rng_create(seed, SIM_STREAM_INIT, 0);
    float **x = malloc(sizeof *x * n);
    for (int i = 0; i < n; i++) {
        x[i] = malloc(sizeof **x * (size_t)d);
        for (int64_t k = 0; k < d; k++)
            x[i][k] = (float)(2 * gsl_rng_uniform(r) - 1);
    }
    gsl_rng_free(r);
    return x;
}

static float **zero_vectors(int n, int64_t d)
{
    float **x = malloc(sizeof *x * n);
    for (int i = 0; i < n; i++)
        x[i] = calloc((size_t)d, sizeof **x);
    return x;
}

static void free_vectors(float **x, int n)
{
    for (int i = 0; i < n; i++)
        free(x[i]);
    free(x);
}

Test(mixing, apply_matches_double_reference)
{
    int n = 12;
    int64_t d = 20000; /* spans three kernel chunks, the last one partial */
    topo_graph g;
    build_ok(&g, "erdos_renyi(0.3)", n);
    topo_mixing *m = mix_ok(&g, TOPO_WEIGHTS_METROPOLIS);
    const topo_wmat *W = topo_mixing_at(m, 0);
    float **x = random_vectors(n, d, 3), **y = zero_vectors(n, d), **y2 = zero_vectors(n, d);
    topo_mixing_apply(W, (const float *const *)x, y, d);
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < d; k++) {
            double ref = 0;
            for (int64_t p = W->row[i]; p < W->row[i + 1]; p++)
                ref += W->w[p] * x[W->col[p]][k];
            cr_assert(fabs(y[i][k] - ref) <= 1e-6, "node %d entry %lld: %.9g vs %.9g", i,
                      (long long)k, y[i][k], ref);
        }
    /* row by row gives the same bits; so does a second run */
    for (int i = 0; i < n; i++)
        topo_mixing_apply_row(W, i, (const float *const *)x, y2[i], d);
    for (int i = 0; i < n; i++)
        cr_assert_eq(memcmp(y[i], y2[i], sizeof **y * (size_t)d), 0);
    topo_mixing_apply(W, (const float *const *)x, y2, d);
    for (int i = 0; i < n; i++)
        cr_assert_eq(memcmp(y[i], y2[i], sizeof **y * (size_t)d), 0);
    free_vectors(x, n);
    free_vectors(y, n);
    free_vectors(y2, n);
    topo_mixing_destroy(m);
    topo_graph_release(&g);
}

Test(mixing, consensus_contracts_by_lambda)
{
    /* Ring of 16, Metropolis: lambda = (1 + 2 cos(2 pi / 16)) / 3. The next
     * eigenvalue, (1 + 2 cos(4 pi / 16)) / 3, dies out relative to lambda as
     * 0.85^t, so after 150 steps the per-step ratio of consensus distances
     * is lambda up to float rounding. */
    int n = 16;
    int64_t d = 256;
    double lambda = (1 + 2 * cos(2 * M_PI / n)) / 3;
    topo_graph g;
    build_ok(&g, "ring", n);
    topo_mixing *m = mix_ok(&g, TOPO_WEIGHTS_METROPOLIS);
    float **a = random_vectors(n, d, 5), **b = zero_vectors(n, d);
    double *scratch = malloc(sizeof *scratch * d);
    double xi0 = topo_consensus_distance((const float *const *)a, n, d, scratch), prev = xi0, ratio = 0;
    for (int t = 0; t < 150; t++) {
        topo_mixing_apply(topo_mixing_at(m, t), (const float *const *)a, b, d);
        float **s = a;
        a = b;
        b = s;
        double xi = topo_consensus_distance((const float *const *)a, n, d, scratch);
        ratio = xi / prev;
        cr_assert(ratio <= lambda + 1e-4, "step %d: ratio %.6f above lambda %.6f", t, ratio, lambda);
        prev = xi;
    }
    cr_assert(fabs(ratio - lambda) < 1e-3, "ratio %.6f, lambda %.6f", ratio, lambda);
    free(scratch);
    free_vectors(a, n);
    free_vectors(b, n);
    topo_mixing_destroy(m);
    topo_graph_release(&g);
}

Test(mixing, one_peer_gossip_reaches_the_average)
{
    int n = 16;
    int64_t d = 100;
    topo_graph g;
    build_ok(&g, "one_peer_exponential", n);
    topo_mixing *m = mix_ok(&g, TOPO_WEIGHTS_METROPOLIS);
    float **a = random_vectors(n, d, 9), **b = zero_vectors(n, d);
    double *mean = calloc((size_t)d, sizeof *mean);
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < d; k++)
            mean[k] += a[i][k] / (double)n;
    for (int t = 0; t < 4; t++) {
        topo_mixing_apply(topo_mixing_at(m, t), (const float *const *)a, b, d);
        float **s = a;
        a = b;
        b = s;
    }
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < d; k++)
            cr_assert(fabs(a[i][k] - mean[k]) <= 1e-6, "node %d entry %lld", i, (long long)k);
    free(mean);
    free_vectors(a, n);
    free_vectors(b, n);
    topo_mixing_destroy(m);
    topo_graph_release(&g);
}

Test(mixing, consensus_distance_known_value)
{
    /* x_0 = (1, 0), x_1 = (-1, 0): mean 0, Xi = sqrt((1 + 1) / 2) = 1. */
    float a[] = {1, 0}, b[] = {-1, 0};
    const float *x[] = {a, b};
    double scratch[2];
    cr_assert(fabs(topo_consensus_distance(x, 2, 2, scratch) - 1.0) < 1e-15);
}

/* Eigenvalues of a symmetric dense W, ascending. */
static void eigenvalues(const topo_wmat *W, double *ev)
{
    int n = W->n;
    double *a = malloc(sizeof *a * (size_t)n * (size_t)n);
    dense_of(W, a);
    gsl_matrix_view A = gsl_matrix_view_array(a, (size_t)n, (size_t)n);
    gsl_vector *e = gsl_vector_alloc((size_t)n);
    gsl_eigen_symm_workspace *ws = gsl_eigen_symm_alloc((size_t)n);
    cr_assert_eq(gsl_eigen_symm(&A.matrix, e, ws), 0);
    gsl_sort_vector(e);
    for (int i = 0; i < n; i++)
        ev[i] = gsl_vector_get(e, (size_t)i);
    gsl_eigen_symm_free(ws);
    gsl_vector_free(e);
    free(a);
}

/* metropolis_lazy = (I + W) / 2: doubly stochastic, eigenvalues in [0, 1]
 * where Metropolis has negative ones, and on a ring of n (W = 1/3 on the
 * diagonal and both neighbours, eigenvalues (1 + 2 cos(2 pi k / n)) / 3)
 * lambda = (2 + cos(2 pi / n)) / 3. */
Test(mixing, metropolis_lazy_is_half_identity_plus_metropolis)
{
    const int ns[] = {8, 9, 16};
    for (int t = 0; t < 3; t++) {
        int n = ns[t];
        topo_graph g;
        build_ok(&g, "ring", n);
        topo_mixing *m = mix_ok(&g, TOPO_WEIGHTS_METROPOLIS);
        topo_mixing *lz = mix_ok(&g, TOPO_WEIGHTS_METROPOLIS_LAZY);
        const topo_wmat *W = topo_mixing_at(m, 0), *L = topo_mixing_at(lz, 0);
        cr_assert(topo_mixing_is_symmetric(lz));
        check_doubly_stochastic(L);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                cr_assert_float_eq(topo_wmat_get(L, i, j),
                                   0.5 * (i == j) + 0.5 * topo_wmat_get(W, i, j), 1e-15);
        double *ev = malloc(sizeof *ev * (size_t)n), *evw = malloc(sizeof *ev * (size_t)n);
        eigenvalues(L, ev);
        eigenvalues(W, evw);
        cr_assert(evw[0] < -0.1, "n %d: metropolis' smallest eigenvalue %g", n, evw[0]);
        cr_assert(ev[0] >= -1e-12 && ev[n - 1] <= 1 + 1e-12, "n %d: [%g, %g]", n, ev[0],
                  ev[n - 1]);
        cr_assert_float_eq(ev[0], (1 + evw[0]) / 2, 1e-12);
        double lambda, want = (2 + cos(2 * M_PI / n)) / 3;
        sim_err err = {0};
        cr_assert_eq(topo_mixing_lambda(lz, &lambda, &err), 0, "%s", err.msg);
        cr_assert_float_eq(lambda, want, 1e-9, "n %d: lambda %.12g, want %.12g", n, lambda,
                           want);
        cr_assert_float_eq(ev[n - 2], want, 1e-12);
        free(ev);
        free(evw);
        topo_mixing_destroy(lz);
        topo_mixing_destroy(m);
        topo_graph_release(&g);
    }
}
