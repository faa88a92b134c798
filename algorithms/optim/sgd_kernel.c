/* The SGD step kernels shared by the sgd optimizer and the methods that
 * write the local step out of place (docs/algorithms.md 0.2). One copy of
 * each loop, so every caller gives the same floats, operation for
 * operation. */
#include "algorithms/optim/sgd_kernel.h"

/* Blocks of a fixed 16 floats: GCC vectorises a fixed-count inner loop even
 * at -O2. Without FMA contraction (-std=c17) every element sees the same
 * operations in the same order whatever the blocking. */
#define ROW_BLOCK 16

void algo_sgd_step(float *x, float *m, float *g, int64_t d, double lr, double beta,
                   int nesterov, double wd)
{
    const float flr = (float)lr, fb = (float)beta;
    algo_add_decay(g, x, wd, d);
    if (beta == 0 || !m) {
        for (int64_t j = 0; j < d; j++)
            x[j] -= flr * g[j];
        return;
    }
    if (nesterov) {
        for (int64_t j = 0; j < d; j++) {
            m[j] = fb * m[j] + g[j];
            x[j] -= flr * (g[j] + fb * m[j]);
        }
    } else {
        for (int64_t j = 0; j < d; j++) {
            m[j] = fb * m[j] + g[j];
            x[j] -= flr * m[j];
        }
    }
}

void algo_add_decay(float *restrict g, const float *restrict x, double wd, int64_t d)
{
    const float fwd = (float)wd;
    if (wd != 0)
        for (int64_t j = 0; j < d; j++)
            g[j] += fwd * x[j];
}

void algo_local_dir(float *restrict g, float *restrict m, const float *x, int64_t d,
                    double beta, int nesterov, double wd)
{
    const float fb = (float)beta;
    algo_add_decay(g, x, wd, d);
    if (beta == 0 || !m)
        return;
    if (nesterov) {
        for (int64_t j = 0; j < d; j++) {
            m[j] = fb * m[j] + g[j];
            g[j] = g[j] + fb * m[j];
        }
    } else {
        for (int64_t j = 0; j < d; j++) {
            m[j] = fb * m[j] + g[j];
            g[j] = m[j];
        }
    }
}

/* out = base - lr d with d = g, m (heavy ball) or g + beta m (Nesterov),
 * after m = beta m + g; blocks of 16 for the vectoriser. */
static void step_kernel(float *restrict out, const float *restrict base,
                        const float *restrict g, float *restrict m, int64_t d, float lr,
                        float beta, int kind)
{
    int64_t k = 0;
    switch (kind) {
    case 0:
        for (; k + ROW_BLOCK <= d; k += ROW_BLOCK)
            for (int j = 0; j < ROW_BLOCK; j++)
                out[k + j] = base[k + j] - lr * g[k + j];
        for (; k < d; k++)
            out[k] = base[k] - lr * g[k];
        break;
    case 1:
        for (; k + ROW_BLOCK <= d; k += ROW_BLOCK)
            for (int j = 0; j < ROW_BLOCK; j++) {
                m[k + j] = beta * m[k + j] + g[k + j];
                out[k + j] = base[k + j] - lr * m[k + j];
            }
        for (; k < d; k++) {
            m[k] = beta * m[k] + g[k];
            out[k] = base[k] - lr * m[k];
        }
        break;
    default:
        for (; k + ROW_BLOCK <= d; k += ROW_BLOCK)
            for (int j = 0; j < ROW_BLOCK; j++) {
                m[k + j] = beta * m[k + j] + g[k + j];
                out[k + j] = base[k + j] - lr * (g[k + j] + beta * m[k + j]);
            }
        for (; k < d; k++) {
            m[k] = beta * m[k] + g[k];
            out[k] = base[k] - lr * (g[k] + beta * m[k]);
        }
        break;
    }
}

void algo_local_step(float *out, const float *base, const float *x, float *g, float *m,
                     int64_t d, double lr, double beta, int nesterov, double wd)
{
    algo_add_decay(g, x, wd, d);
    int kind = beta == 0 || !m ? 0 : nesterov ? 2 : 1;
    step_kernel(out, base, g, m, d, (float)lr, (float)beta, kind);
}
