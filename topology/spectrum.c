/* lambda of a mixing matrix (see mixing.h). Static W is symmetric, so
 * lambda = max |eig(W - J)|: subtracting J moves the consensus eigenvalue 1
 * to 0 and leaves the others, so a disconnected graph (a second eigenvalue
 * 1) correctly gives lambda = 1.
 *   dense:     W - J as an n x n matrix, gsl_eigen_symm (values only).
 *   circulant: W_ij = c_{(j - i) mod n} (ring, exponential, complete,
 *              n-cycle tori): the eigenvalues are the DFT of c, exact and
 *              O(n x row length); symmetric c makes them real.
 *   arpack:    igraph's ARPACK (implicitly restarted Lanczos), largest
 *              magnitude eigenvalue of x -> W x - mean(x) 1, from a fixed
 *              start vector so the result is deterministic.
 * A time-varying schedule's contraction ||A||_2 with A = W_{p-1}..W_0 - J
 * is sqrt(max eig(A^T A)): dense with GSL, or power iteration on A^T A. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>
#include <igraph.h>

#include "topology/mixing.h"
#include "topology/mixing_impl.h"

#define POWER_MAX_ITERS 20000
#define POWER_TOL 1e-13
#define ARPACK_NCV 40
#define ARPACK_MAX_ITERS 100000

/* A fixed, mean-free start vector (a hash of the index). */
static void start_vector(double *x, int n)
{
    double mean = 0.0;
    for (int i = 0; i < n; i++) {
        uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        x[i] = (double)(z >> 11) * 0x1.0p-53 - 0.5;
        mean += x[i];
    }
    mean /= n;
    for (int i = 0; i < n; i++)
        x[i] -= mean;
}

static void remove_mean(double *x, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i];
    s /= n;
    for (int i = 0; i < n; i++)
        x[i] -= s;
}

static double norm2(const double *x, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

/* y = W x (y distinct from x). */
static void csr_mul(const topo_wmat *W, const double *x, double *y)
{
    for (int i = 0; i < W->n; i++) {
        double s = 0.0;
        for (int64_t p = W->row[i]; p < W->row[i + 1]; p++)
            s += W->w[p] * x[W->col[p]];
        y[i] = s;
    }
}

/* y = W^T x (y distinct from x). */
static void csr_mul_t(const topo_wmat *W, const double *x, double *y)
{
    memset(y, 0, sizeof *y * (size_t)W->n);
    for (int i = 0; i < W->n; i++)
        for (int64_t p = W->row[i]; p < W->row[i + 1]; p++)
            y[W->col[p]] += W->w[p] * x[i];
}

/* Largest eigenvalue of the symmetric matrix a (destroyed), in magnitude if
 * magnitude is set, else algebraically. */
static int dense_symm_max(double *a, int n, int magnitude, double *out, sim_err *err)
{
    gsl_matrix_view A = gsl_matrix_view_array(a, (size_t)n, (size_t)n);
    gsl_vector *eval = gsl_vector_alloc((size_t)n);
    gsl_eigen_symm_workspace *ws = gsl_eigen_symm_alloc((size_t)n);
    if (!eval || !ws) {
        gsl_vector_free(eval);
        gsl_eigen_symm_free(ws);
        return sim_err_set(err, SIM_ENOMEM, "lambda: out of memory");
    }
    int rc = gsl_eigen_symm(&A.matrix, eval, ws);
    double best = 0.0;
    for (int i = 0; i < n && !rc; i++) {
        double v = gsl_vector_get(eval, (size_t)i);
        if (magnitude)
            v = fabs(v);
        if (i == 0 || v > best)
            best = v;
    }
    gsl_vector_free(eval);
    gsl_eigen_symm_free(ws);
    if (rc)
        return sim_err_set(err, SIM_EINTERNAL, "lambda: gsl_eigen_symm failed: %s",
                           sim_err_library_last());
    *out = best;
    return 0;
}

static int lambda_dense_static(const topo_wmat *W, double *lambda, sim_err *err)
{
    int n = W->n;
    double *a = malloc(sizeof *a * (size_t)n * (size_t)n);
    if (!a)
        return sim_err_set(err, SIM_ENOMEM, "lambda: out of memory (dense %d x %d)", n, n);
    double jv = 1.0 / n;
    for (size_t k = 0; k < (size_t)n * (size_t)n; k++)
        a[k] = -jv;
    for (int i = 0; i < n; i++)
        for (int64_t p = W->row[i]; p < W->row[i + 1]; p++)
            a[(size_t)i * (size_t)n + (size_t)W->col[p]] += W->w[p];
    int rc = dense_symm_max(a, n, 1, lambda, err);
    free(a);
    return rc;
}

/* 1 and the first row in c (n doubles) if W_ij = c_{(j - i) mod n}. */
static int circulant_row(const topo_wmat *W, double *c)
{
    int n = W->n;
    memset(c, 0, sizeof *c * (size_t)n);
    int64_t len = W->row[1] - W->row[0];
    for (int64_t p = W->row[0]; p < W->row[1]; p++)
        c[W->col[p]] = W->w[p];
    for (int i = 1; i < n; i++) {
        if (W->row[i + 1] - W->row[i] != len)
            return 0;
        for (int64_t p = W->row[i]; p < W->row[i + 1]; p++) {
            int s = W->col[p] - i;
            if (s < 0)
                s += n;
            if (c[s] != W->w[p])
                return 0;
        }
    }
    return 1;
}

static double lambda_circulant(const topo_wmat *W, const double *c)
{
    int n = W->n;
    double best = 0.0;
    for (int k = 1; k < n; k++) {
        double re = 0.0;
        for (int64_t p = W->row[0]; p < W->row[1]; p++) {
            int j = W->col[p];
            int64_t jk = ((int64_t)j * k) % n;
            re += c[j] * cos(2.0 * M_PI * (double)jk / n);
        }
        if (fabs(re) > best)
            best = fabs(re);
    }
    return best;
}

static igraph_error_t arpack_op(igraph_real_t *to, const igraph_real_t *from, int n, void *extra)
{
    const topo_wmat *W = extra;
    csr_mul(W, from, to);
    remove_mean(to, n);
    return IGRAPH_SUCCESS;
}

static int lambda_arpack(const topo_wmat *W, double *lambda, sim_err *err)
{
    int n = W->n;
    if (n < 3) /* ARPACK needs nev < ncv <= n */
        return lambda_dense_static(W, lambda, err);
    igraph_arpack_options_t o;
    igraph_arpack_options_init(&o);
    o.n = n;
    o.which[0] = 'L';
    o.which[1] = 'M';
    o.nev = 1;
    o.ncv = n < ARPACK_NCV ? n : ARPACK_NCV;
    o.mxiter = ARPACK_MAX_ITERS;
    o.tol = 0; /* machine precision */
    o.start = 1;
    igraph_vector_t values;
    igraph_matrix_t vectors;
    if (igraph_vector_init(&values, 1) != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_ENOMEM, "lambda: out of memory");
    if (igraph_matrix_init(&vectors, n, 1) != IGRAPH_SUCCESS) {
        igraph_vector_destroy(&values);
        return sim_err_set(err, SIM_ENOMEM, "lambda: out of memory");
    }
    start_vector(&MATRIX(vectors, 0, 0), n);
    igraph_error_t rc = igraph_arpack_rssolve(arpack_op, (void *)W, &o, NULL, &values, &vectors);
    double v = rc == IGRAPH_SUCCESS ? fabs(VECTOR(values)[0]) : 0.0;
    igraph_vector_destroy(&values);
    igraph_matrix_destroy(&vectors);
    if (rc != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_EINTERNAL, "lambda: ARPACK failed: %s", sim_err_library_last());
    if (o.nconv < 1)
        return sim_err_set(err, SIM_EINTERNAL, "lambda: ARPACK did not converge in %d iterations",
                           o.noiter);
    *lambda = v;
    return 0;
}

/* y = A x with A = W_{p-1} .. W_0 - J; tmp holds n doubles. */
static void period_mul(const topo_mixing *m, const double *x, double *y, double *tmp)
{
    int n = m->n;
    memcpy(tmp, x, sizeof *tmp * (size_t)n);
    for (int k = 0; k < m->period; k++) {
        csr_mul(&m->mats[k], tmp, y);
        memcpy(tmp, y, sizeof *tmp * (size_t)n);
    }
    remove_mean(y, n);
}

/* y = A^T x = W_0^T .. W_{p-1}^T x - J x. */
static void period_mul_t(const topo_mixing *m, const double *x, double *y, double *tmp)
{
    int n = m->n;
    memcpy(tmp, x, sizeof *tmp * (size_t)n);
    for (int k = m->period - 1; k >= 0; k--) {
        csr_mul_t(&m->mats[k], tmp, y);
        memcpy(tmp, y, sizeof *tmp * (size_t)n);
    }
    remove_mean(y, n);
}

static int lambda_period_dense(const topo_mixing *m, double *lambda, sim_err *err)
{
    int n = m->n;
    size_t nn = (size_t)n * (size_t)n;
    double *a = malloc(sizeof *a * nn), *b = malloc(sizeof *b * nn);
    double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n),
           *tmp = malloc(sizeof *tmp * (size_t)n);
    int rc;
    if (!a || !b || !x || !y || !tmp) {
        rc = sim_err_set(err, SIM_ENOMEM, "lambda: out of memory (dense %d x %d)", n, n);
        goto done;
    }
    /* Column j of A = A e_j; stored row-major as a[i * n + j]. */
    for (int j = 0; j < n; j++) {
        memset(x, 0, sizeof *x * (size_t)n);
        x[j] = 1.0;
        period_mul(m, x, y, tmp);
        for (int i = 0; i < n; i++)
            a[(size_t)i * (size_t)n + (size_t)j] = y[i];
    }
    /* b = A^T A (gsl_blas calls OpenBLAS's dgemm) */
    gsl_matrix_view A = gsl_matrix_view_array(a, (size_t)n, (size_t)n);
    gsl_matrix_view B = gsl_matrix_view_array(b, (size_t)n, (size_t)n);
    gsl_blas_dgemm(CblasTrans, CblasNoTrans, 1.0, &A.matrix, &A.matrix, 0.0, &B.matrix);
    double top;
    rc = dense_symm_max(b, n, 0, &top, err);
    if (!rc)
        *lambda = sqrt(top > 0.0 ? top : 0.0);
done:
    free(a);
    free(b);
    free(x);
    free(y);
    free(tmp);
    return rc;
}

/* Power iteration on A^T A; sigma^2 = ||A v||^2 for the unit iterate v. */
static int lambda_period_power(const topo_mixing *m, double *lambda, sim_err *err)
{
    int n = m->n;
    double *v = malloc(sizeof *v * (size_t)n), *u = malloc(sizeof *u * (size_t)n),
           *tmp = malloc(sizeof *tmp * (size_t)n);
    if (!v || !u || !tmp) {
        free(v);
        free(u);
        free(tmp);
        return sim_err_set(err, SIM_ENOMEM, "lambda: out of memory");
    }
    start_vector(v, n);
    double sigma = 0.0, prev = -1.0;
    for (int it = 0; it < POWER_MAX_ITERS; it++) {
        double nv = norm2(v, n);
        if (!(nv > 0.0)) {
            sigma = 0.0;
            break;
        }
        for (int i = 0; i < n; i++)
            v[i] /= nv;
        period_mul(m, v, u, tmp);
        sigma = norm2(u, n);
        if (sigma < 1e-14 || fabs(sigma - prev) <= POWER_TOL * sigma)
            break;
        prev = sigma;
        period_mul_t(m, u, v, tmp);
    }
    free(v);
    free(u);
    free(tmp);
    *lambda = sigma;
    return 0;
}

int topo_mixing_lambda_ex(const topo_mixing *m, topo_lambda_method method, double *lambda,
                          topo_lambda_method *used, sim_err *err)
{
    int n = m->n;
    topo_lambda_method dummy;
    if (!used)
        used = &dummy;
    if (method == TOPO_LAMBDA_AUTO)
        method = n <= TOPO_LAMBDA_DENSE_MAX ? TOPO_LAMBDA_DENSE : TOPO_LAMBDA_SPARSE;
    *used = method;
    if (n == 1) {
        *lambda = 0.0; /* no second eigenvalue */
        return 0;
    }
    if (!m->symmetric || m->period > 1) {
        if (method == TOPO_LAMBDA_DENSE)
            return lambda_period_dense(m, lambda, err);
        *used = TOPO_LAMBDA_SPARSE;
        return lambda_period_power(m, lambda, err);
    }
    const topo_wmat *W = &m->mats[0];
    if (method == TOPO_LAMBDA_DENSE)
        return lambda_dense_static(W, lambda, err);
    if (method == TOPO_LAMBDA_SPARSE) {
        double *c = malloc(sizeof *c * (size_t)n);
        if (!c)
            return sim_err_set(err, SIM_ENOMEM, "lambda: out of memory");
        int circ = circulant_row(W, c);
        if (circ)
            *lambda = lambda_circulant(W, c);
        free(c);
        if (circ)
            return 0;
    }
    *used = TOPO_LAMBDA_ARPACK;
    int rc = lambda_arpack(W, lambda, err);
    if (rc && n <= 2 * TOPO_LAMBDA_DENSE_MAX) {
        *used = TOPO_LAMBDA_DENSE;
        rc = lambda_dense_static(W, lambda, err);
        if (rc == 0)
            sim_err_clear(err);
    }
    return rc;
}

int topo_mixing_lambda(const topo_mixing *m, double *lambda, sim_err *err)
{
    return topo_mixing_lambda_ex(m, TOPO_LAMBDA_AUTO, lambda, NULL, err);
}
