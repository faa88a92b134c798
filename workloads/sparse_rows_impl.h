/* Private: products whose left operand is mostly zeros (a pooled map's
 * gradient: one nonzero per pooling window at most), with the bits
 * cblas_sgemm gives under the pinned BLAS kernel, at the cost of the
 * nonzeros only: the rows of D W a few at a time (so that a caller can use
 * each block while it is in cache), and D^T X (+ C).
 *
 * OpenBLAS 0.3.21's Haswell sgemm (sgemm_kernel_8x4_haswell_2.c, with
 * param.h's P = Q = 320 and the level-3 driver's blocking) sums each
 * element in one of two ways, fixed by where the element falls in the
 * kernel's tiles: one chain of fused multiply-adds over k in order, or two
 * chains (the even k of each whole group of 8 in one, the odd in the
 * other, the k past the last whole group in the first) added at the end;
 * then C = sum * alpha + C, C cleared first for beta = 0, once per
 * stretch of Q k's. A zero term of a chain leaves it unchanged but for
 * the sign of a zero sum, which the final + C erases (C is never -0), so
 * skipping D's zeros keeps the bits as long as the other operand is
 * finite (0 * inf would have been NaN). This file replays the tiling to
 * know which elements are summed which way.
 *
 * Whether the replay is right is not assumed: wl_srows_plan and
 * wl_srows_plan_tn compare it with cblas_sgemm on random sparse operands
 * of the planned shapes (every row count the caller names) and say no on
 * any difference, on a CPU without AVX2 and FMA, with OpenBLAS on more
 * than one thread, on shapes outside the replayed cases, or when the
 * environment has DTSIM_SPARSE_REPLAY=off; the caller then keeps
 * cblas_sgemm (the same bits, slower) and records the plan's reason. */
#ifndef DTSIM_WL_SPARSE_ROWS_IMPL_H
#define DTSIM_WL_SPARSE_ROWS_IMPL_H

#include <stdint.h>

#define WL_SROWS_MAX_GROUPS 256 /* columns / 8 */
#define WL_SROWS_MAX_BLOCKS 8   /* OpenBLAS's column blocks */
#define WL_SROWS_BLOCK 16       /* rows per wl_srows_rows call, at most */
#define WL_SROWS_MAX_K 64       /* columns of D */

typedef struct wl_srows {
    int cols, k;
    int nblocks;
    int block_end[WL_SROWS_MAX_BLOCKS]; /* in columns */
    /* per group of 8 columns: summed in two chains in the left / right
     * half of the kernel's 12-wide panels; the same as lists */
    uint8_t split_l[WL_SROWS_MAX_GROUPS], split_r[WL_SROWS_MAX_GROUPS];
    int nsplit[2];
    uint16_t split[2][WL_SROWS_MAX_GROUPS];
    const char *refused; /* NULL when planned, else why not (static text) */
} wl_srows;

/* The environment variable that turns the replays off ("off"; any other
 * value, or none, leaves them on). */
#define WL_SROWS_ENV "DTSIM_SPARSE_REPLAY"

/* Plans products of k-wide D rows by a k x cols W and checks the replay
 * against cblas_sgemm for products of each of the nrows row counts in
 * rows[]. 1: wl_srows_row may be used for products of those row counts
 * (and W finite, wl_srows_finite); 0: use cblas_sgemm, p->refused says
 * why. */
int wl_srows_plan(wl_srows *p, int cols, int k, const int64_t *rows, int nrows);

/* The same for C (k x cols) = D^T X (+ C), D rows x k (k <= 64, mostly
 * zeros), X rows x cols (finite): cblas_sgemm(RowMajor, Trans, NoTrans,
 * k, cols, rows, 1, D, k, X, cols, beta, C, cols) with beta 0 or 1, any
 * cols. */
int wl_srows_plan_tn(wl_srows *p, int k, int cols, const int64_t *rows, int nrows);

/* The share of D's values that are nonzero; the replays beat the sgemm
 * below about these shares (docs/benchmarks.md: cnn(16, 32)'s shapes on
 * the development machine; either way gives the same bits). */
double wl_srows_density(const float *d, int64_t n);
#define WL_SROWS_PAYS 0.4     /* D W */
#define WL_SROWS_PAYS_TN 0.22 /* D^T X */

/* 1 when v[0 .. n) are all finite (W, or what X is made of: a zero of D
 * times an infinity or NaN would not have been skipped). */
int wl_srows_finite(const float *v, int64_t n);

/* out (n x cols) = rows r0 .. r0 + n - 1 of D W for a product of `rows`
 * rows, n <= WL_SROWS_BLOCK, d those rows of D (n x k). */
void wl_srows_rows(const wl_srows *p, int64_t rows, int64_t r0, int n, const float *d,
                   const float *w, float *out);

/* c (k x cols) = D^T X, or c + D^T X when accumulate, as planned by
 * wl_srows_plan_tn (d rows x k, x rows x cols). */
void wl_srows_tn(const wl_srows *p, int64_t rows, const float *d, const float *x, int accumulate,
                 float *c);

#endif
