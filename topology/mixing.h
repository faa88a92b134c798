/* Mixing (gossip) matrices W on a logical graph, stored sparse: CSR rows
 * that include the diagonal, columns ascending, weights in double (and a
 * float copy for the gossip kernel). docs/algorithms.md 0.5:
 *   metropolis: W_ij = 1 / (1 + max(deg_i, deg_j)) on edges, W_ii the rest;
 *   uniform:    W_ij = 1 / (deg + 1) on edges and the diagonal (regular
 *               graphs only);
 *   metropolis_lazy: (I + W) / 2 with W metropolis: the same eigenvectors,
 *               eigenvalues (1 + lambda_i) / 2, all in [0, 1] (Metropolis
 *               weights can have negative ones);
 *   one-peer exponential (time-varying, either weights): W_t = (I + P_t) / 2,
 *               node i averages with (i + 2^(t mod log2 n)) mod n.
 * Every matrix is checked at build time: entries >= 0, rows and columns sum
 * to 1 within 1e-12, and symmetric within 1e-12 for static graphs.
 *
 * lambda = max(|lambda_2(W)|, |lambda_n(W)|) = ||W - J||_2 for symmetric W
 * (J = 11^T / n); for a time-varying schedule, the contraction of one full
 * period, ||W_{p-1} ... W_0 - J||_2. We report both spectral gaps:
 * 1 - lambda and p = 1 - lambda^2 (Koloskova et al.). */
#ifndef DTSIM_TOPO_MIXING_H
#define DTSIM_TOPO_MIXING_H

#include <stdint.h>

#include "sim/err.h"
#include "topology/graph.h"

typedef enum topo_weights {
    TOPO_WEIGHTS_METROPOLIS = 0,
    TOPO_WEIGHTS_UNIFORM = 1,
    TOPO_WEIGHTS_METROPOLIS_LAZY = 2
} topo_weights;

/* One sparse mixing matrix (plain data, read-only). */
typedef struct topo_wmat {
    int n;
    int64_t nnz;
    int64_t *row;          /* n + 1 offsets */
    int *col;              /* column of each entry, ascending in a row */
    double *w;             /* weights */
    float *wf;             /* the same weights as float (for topo_mixing_apply) */
    int64_t *diag;         /* index of W_ii in col/w for each row */
} topo_wmat;

typedef struct topo_mixing topo_mixing;

/* Builds W (or the period's W_t) for graph g. SIM_ECONFIG for uniform
 * weights on a graph that is not regular; SIM_EINTERNAL if a check fails.
 * NULL on error. */
topo_mixing *topo_mixing_create(const topo_graph *g, topo_weights weights, sim_err *err);
void topo_mixing_destroy(topo_mixing *m);

int topo_mixing_n(const topo_mixing *m);
int topo_mixing_period(const topo_mixing *m);      /* 1 for static graphs */
int topo_mixing_is_symmetric(const topo_mixing *m);
/* W_t (W for static graphs; W_{t mod period} otherwise), owned by m. */
const topo_wmat *topo_mixing_at(const topo_mixing *m, int64_t t);

/* W_ij (0 when not stored), by binary search in row i. */
double topo_wmat_get(const topo_wmat *W, int i, int j);

/* One gossip step X_out = W X_in: x_out[i] = sum_j W_ij x_in[j] for the n
 * vectors of length d. x_out[i] must not alias any x_in[j]. The sum runs in
 * row order (columns ascending, diagonal included), in float with the float
 * weights, so results are bitwise reproducible. Allocates nothing. */
void topo_mixing_apply(const topo_wmat *W, const float *const *x_in, float *const *x_out,
                       int64_t d);
/* Row i only: out = sum_j W_ij x_in[j] (out must not alias an x_in[j] of
 * the row). Same order and arithmetic as topo_mixing_apply. */
void topo_mixing_apply_row(const topo_wmat *W, int i, const float *const *x_in, float *out,
                           int64_t d);

/* Dense path up to this many nodes (GSL's symmetric eigensolver), a sparse
 * method beyond. GSL needs 0.4 s at n = 1024 but 7 s at 2048, where ARPACK
 * takes 0.14 s with the same accuracy (1e-14 on a ring), hence 1024. */
#define TOPO_LAMBDA_DENSE_MAX 1024

typedef enum topo_lambda_method {
    TOPO_LAMBDA_AUTO = 0,   /* dense up to TOPO_LAMBDA_DENSE_MAX, else sparse */
    TOPO_LAMBDA_DENSE,      /* gsl_eigen_symm on W - J (or on A^T A for a period) */
    TOPO_LAMBDA_SPARSE,     /* circulant W: exact DFT of the first row; else ARPACK
                             * (Lanczos) on W - J; a period: power iteration on A^T A */
    TOPO_LAMBDA_ARPACK      /* like SPARSE but never the circulant shortcut */
} topo_lambda_method;

/* lambda (see above) of W, or the contraction of one period. Allocates
 * O(n^2) doubles on the dense path. If ARPACK fails for n <= 2048 the dense
 * path is taken instead; beyond, SIM_EINTERNAL. */
int topo_mixing_lambda(const topo_mixing *m, double *lambda, sim_err *err);
/* The same with an explicit method; *used (may be NULL) receives the one
 * actually taken (DENSE, SPARSE for the circulant or power-iteration path,
 * ARPACK). */
int topo_mixing_lambda_ex(const topo_mixing *m, topo_lambda_method method, double *lambda,
                          topo_lambda_method *used, sim_err *err);

/* Spectral gaps from lambda: 1 - lambda, and p = 1 - lambda^2. */
static inline double topo_spectral_gap(double lambda) { return 1.0 - lambda; }
static inline double topo_spectral_p(double lambda) { return 1.0 - lambda * lambda; }

/* Consensus distance Xi = sqrt((1/n) sum_i ||x_i - xbar||^2) of n vectors of
 * length d (docs/algorithms.md 0.6), accumulated in double in node order.
 * mean_scratch holds d doubles (caller-owned, so nothing is allocated). */
double topo_consensus_distance(const float *const *x, int n, int64_t d, double *mean_scratch);

#endif
