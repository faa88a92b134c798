/* Sparse mixing matrices: construction from a graph, the build-time checks,
 * and the gossip kernel. Spectra live in spectrum.c.
 *
 * Storage: CSR with the diagonal inside each row, columns ascending; the
 * float copy of the weights (cast once here) feeds the kernel. The kernel
 * walks the output in chunks that stay in L1 while every term of the row is
 * added, so each input is read once and each output written once; within a
 * chunk the terms are added in row order, so results do not depend on the
 * chunk size and are bitwise reproducible. */
#include "topology/mixing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "topology/mixing_impl.h"

#define CHECK_TOL 1e-12

static void wmat_release(topo_wmat *W)
{
    free(W->row);
    free(W->col);
    free(W->w);
    free(W->wf);
    free(W->diag);
    memset(W, 0, sizeof *W);
}

static int wmat_alloc(topo_wmat *W, int n, int64_t nnz)
{
    W->n = n;
    W->nnz = nnz;
    W->row = calloc((size_t)n + 1, sizeof *W->row);
    W->col = malloc(sizeof *W->col * (size_t)nnz);
    W->w = malloc(sizeof *W->w * (size_t)nnz);
    W->wf = malloc(sizeof *W->wf * (size_t)nnz);
    W->diag = malloc(sizeof *W->diag * (size_t)n);
    return (W->row && W->col && W->w && W->wf && W->diag) ? 0 : -1;
}

void topo_mixing_destroy(topo_mixing *m)
{
    if (!m)
        return;
    if (m->mats)
        for (int k = 0; k < m->period; k++)
            wmat_release(&m->mats[k]);
    free(m->mats);
    free(m);
}

/* Static W from the graph's neighbour lists, diagonal in sorted position. */
static int build_static(topo_mixing *m, const topo_graph *g, topo_weights kind, sim_err *err)
{
    int n = g->n;
    topo_wmat *W = &m->mats[0];
    if (wmat_alloc(W, n, g->nbr_off[n] + n))
        return sim_err_set(err, SIM_ENOMEM, "mixing matrix: out of memory");
    int64_t p = 0;
    for (int i = 0; i < n; i++) {
        W->row[i] = p;
        const int *nb;
        int deg = topo_graph_neighbors(g, i, &nb);
        double off = 0.0;
        int placed = 0;
        for (int k = 0; k <= deg; k++) {
            if (!placed && (k == deg || nb[k] > i)) {
                W->diag[i] = p;
                W->col[p++] = i; /* weight filled below */
                placed = 1;
            }
            if (k == deg)
                break;
            int j = nb[k];
            int dj = (int)(g->nbr_off[j + 1] - g->nbr_off[j]);
            double w = kind == TOPO_WEIGHTS_UNIFORM ? 1.0 / (deg + 1)
                                                    : 1.0 / (1 + (deg > dj ? deg : dj));
            W->col[p] = j;
            W->w[p++] = w;
            off += w;
        }
        W->w[W->diag[i]] = kind == TOPO_WEIGHTS_UNIFORM ? 1.0 / (deg + 1) : 1.0 - off;
        if (kind == TOPO_WEIGHTS_METROPOLIS_LAZY) /* (I + W) / 2 */
            for (int64_t q = W->row[i]; q < p; q++)
                W->w[q] = q == W->diag[i] ? 0.5 + 0.5 * W->w[q] : 0.5 * W->w[q];
    }
    W->row[n] = p;
    return 0;
}

/* W_t = (I + P_t) / 2: row i holds 1/2 at i and at its phase-k peer. */
static int build_one_peer(topo_mixing *m, const topo_graph *g, sim_err *err)
{
    int n = g->n;
    for (int k = 0; k < m->period; k++) {
        topo_wmat *W = &m->mats[k];
        if (wmat_alloc(W, n, n > 1 ? 2 * (int64_t)n : 1))
            return sim_err_set(err, SIM_ENOMEM, "mixing matrix: out of memory");
        int64_t p = 0;
        for (int i = 0; i < n; i++) {
            W->row[i] = p;
            const int *peer;
            if (topo_graph_in_at(g, k, i, &peer) == 0) {
                W->diag[i] = p;
                W->col[p] = i;
                W->w[p++] = 1.0;
                continue;
            }
            int j = peer[0];
            if (j < i) {
                W->col[p] = j;
                W->w[p++] = 0.5;
            }
            W->diag[i] = p;
            W->col[p] = i;
            W->w[p++] = 0.5;
            if (j > i) {
                W->col[p] = j;
                W->w[p++] = 0.5;
            }
        }
        W->row[n] = p;
    }
    return 0;
}

/* Weights >= 0, rows and columns summing to 1, symmetry when asked. */
static int check_wmat(const topo_wmat *W, int symmetric, int phase, sim_err *err)
{
    int n = W->n;
    double *colsum = calloc((size_t)n, sizeof *colsum);
    if (!colsum)
        return sim_err_set(err, SIM_ENOMEM, "mixing matrix: out of memory");
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        double rs = 0.0;
        for (int64_t p = W->row[i]; p < W->row[i + 1]; p++) {
            if (!(W->w[p] >= 0.0)) {
                rc = sim_err_set(err, SIM_EINTERNAL, "mixing matrix (phase %d): W[%d][%d] = %g < 0",
                                 phase, i, W->col[p], W->w[p]);
                break;
            }
            rs += W->w[p];
            colsum[W->col[p]] += W->w[p];
            if (symmetric) {
                int j = W->col[p];
                double wji = topo_wmat_get(W, j, i);
                if (fabs(wji - W->w[p]) > CHECK_TOL) {
                    rc = sim_err_set(err, SIM_EINTERNAL,
                                     "mixing matrix: not symmetric: W[%d][%d] = %.17g, W[%d][%d] = %.17g",
                                     i, j, W->w[p], j, i, wji);
                    break;
                }
            }
        }
        if (!rc && fabs(rs - 1.0) > CHECK_TOL)
            rc = sim_err_set(err, SIM_EINTERNAL, "mixing matrix (phase %d): row %d sums to %.17g",
                             phase, i, rs);
    }
    for (int j = 0; j < n && !rc; j++)
        if (fabs(colsum[j] - 1.0) > CHECK_TOL)
            rc = sim_err_set(err, SIM_EINTERNAL, "mixing matrix (phase %d): column %d sums to %.17g",
                             phase, j, colsum[j]);
    free(colsum);
    return rc;
}

double topo_wmat_get(const topo_wmat *W, int i, int j)
{
    int64_t lo = W->row[i], hi = W->row[i + 1];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (W->col[mid] < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < W->row[i + 1] && W->col[lo] == j) ? W->w[lo] : 0.0;
}

topo_mixing *topo_mixing_create(const topo_graph *g, topo_weights kind, sim_err *err)
{
    if (!g || g->n < 1) {
        sim_err_set(err, SIM_EINTERNAL, "mixing matrix: no graph");
        return NULL;
    }
    if (kind != TOPO_WEIGHTS_METROPOLIS && kind != TOPO_WEIGHTS_UNIFORM &&
        kind != TOPO_WEIGHTS_METROPOLIS_LAZY) {
        sim_err_set(err, SIM_ECONFIG, "mixing matrix: unknown weights %d", (int)kind);
        return NULL;
    }
    int tv = topo_graph_is_time_varying(g);
    if (!tv && kind == TOPO_WEIGHTS_UNIFORM && g->deg_min != g->deg_max) {
        sim_err_set(err, SIM_ECONFIG,
                    "graph '%s': uniform weights need a regular graph, but degrees range "
                    "from %d to %d (use weights = metropolis)",
                    g->spec, g->deg_min, g->deg_max);
        return NULL;
    }
    topo_mixing *m = calloc(1, sizeof *m);
    if (!m) {
        sim_err_set(err, SIM_ENOMEM, "mixing matrix: out of memory");
        return NULL;
    }
    m->n = g->n;
    m->weights = kind;
    m->period = tv ? g->period : 1;
    m->symmetric = !tv;
    m->mats = calloc((size_t)m->period, sizeof *m->mats);
    int rc;
    if (!m->mats)
        rc = sim_err_set(err, SIM_ENOMEM, "mixing matrix: out of memory");
    else
        rc = tv ? build_one_peer(m, g, err) : build_static(m, g, kind, err);
    for (int k = 0; k < m->period && !rc; k++) {
        topo_wmat *W = &m->mats[k];
        for (int64_t p = 0; p < W->nnz; p++)
            W->wf[p] = (float)W->w[p];
        rc = check_wmat(W, m->symmetric, k, err);
    }
    if (rc) {
        if (rc == SIM_EINTERNAL)
            sim_err_prefix(err, "graph '%s'", g->spec);
        topo_mixing_destroy(m);
        return NULL;
    }
    return m;
}

int topo_mixing_n(const topo_mixing *m) { return m->n; }
int topo_mixing_period(const topo_mixing *m) { return m->period; }
int topo_mixing_is_symmetric(const topo_mixing *m) { return m->symmetric; }

const topo_wmat *topo_mixing_at(const topo_mixing *m, int64_t t)
{
    int64_t k = t % m->period;
    if (k < 0)
        k += m->period;
    return &m->mats[k];
}

/* ---- gossip kernel ---------------------------------------------------------- */

/* 8192 floats = 32 KB of output per chunk, kept in L1/L2 while every term
 * of the row is added (2K-16K measured alike within noise). */
#define APPLY_CHUNK 8192

/* Blocks of a fixed 16 floats: GCC vectorises a fixed-count inner loop
 * even at -O2 (its cheap cost model skips loops that need an epilogue).
 * Each element's arithmetic is the same scalar or vector (no FMA under
 * -std=c17), so results do not depend on the blocking. */
#define APPLY_BLOCK 16

static void scale_into(float *restrict o, const float *restrict x, float w, int64_t len)
{
    int64_t k = 0;
    for (; k + APPLY_BLOCK <= len; k += APPLY_BLOCK)
        for (int j = 0; j < APPLY_BLOCK; j++)
            o[k + j] = w * x[k + j];
    for (; k < len; k++)
        o[k] = w * x[k];
}

static void axpy_into(float *restrict o, const float *restrict x, float w, int64_t len)
{
    int64_t k = 0;
    for (; k + APPLY_BLOCK <= len; k += APPLY_BLOCK)
        for (int j = 0; j < APPLY_BLOCK; j++)
            o[k + j] += w * x[k + j];
    for (; k < len; k++)
        o[k] += w * x[k];
}

void topo_mixing_apply_row(const topo_wmat *W, int i, const float *const *x_in, float *out,
                           int64_t d)
{
    int64_t a = W->row[i], b = W->row[i + 1];
    for (int64_t c0 = 0; c0 < d; c0 += APPLY_CHUNK) {
        int64_t len = d - c0 < APPLY_CHUNK ? d - c0 : APPLY_CHUNK;
        scale_into(out + c0, x_in[W->col[a]] + c0, W->wf[a], len);
        for (int64_t p = a + 1; p < b; p++)
            axpy_into(out + c0, x_in[W->col[p]] + c0, W->wf[p], len);
    }
}

void topo_mixing_apply(const topo_wmat *W, const float *const *x_in, float *const *x_out,
                       int64_t d)
{
    for (int i = 0; i < W->n; i++)
        topo_mixing_apply_row(W, i, x_in, x_out[i], d);
}

double topo_consensus_distance(const float *const *x, int n, int64_t d, double *mean)
{
    if (n < 1 || d < 1)
        return 0.0;
    memset(mean, 0, sizeof *mean * (size_t)d);
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < d; k++)
            mean[k] += x[i][k];
    for (int64_t k = 0; k < d; k++)
        mean[k] /= n;
    double s = 0.0;
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < d; k++) {
            double r = x[i][k] - mean[k];
            s += r * r;
        }
    return sqrt(s / n);
}
