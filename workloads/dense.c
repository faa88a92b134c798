/* Dense-layer kernels and the softmax cross-entropy head (see
 * dense_impl.h). The floating-point order of every loop is part of the
 * models' results: a run must repeat bit for bit, so these keep the order
 * the models were written with (bias rows first, sums in double in row
 * order). */
#include <cblas.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <math.h>
#include <string.h>

#include "workloads/dense_impl.h"
#include "workloads/vmath_impl.h"

void wl_dense_forward(const float *w, int nin, int nout, const float *in, int64_t b,
                      float *out)
{
    const float *bias = w + (int64_t)nout * nin;
    for (int64_t i = 0; i < b; i++)
        memcpy(out + i * nout, bias, (size_t)nout * sizeof *out);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, nout, nin, 1.0f, in, nin, w,
                nin, 1.0f, out, nout);
}

void wl_dense_backward(const float *delta, const float *w, int nin, int nout, int64_t b,
                       float *din)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)b, nin, nout, 1.0f, delta,
                nout, w, nin, 0.0f, din, nin);
}

void wl_dense_grad(const float *delta, const float *in, int nin, int nout, int64_t b,
                   float *gw)
{
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nout, nin, (int)b, 1.0f, delta, nout,
                in, nin, 0.0f, gw, nin);
    wl_dense_bias_grad(delta, b, nout, gw + (int64_t)nout * nin);
}

/* Columns summed at once: the rows are read in memory order into one
 * double accumulator per column, each column still summed from row 0 up
 * (the bits of a column-at-a-time loop, without its strided reads).
 * Columns [k0, k1). */
#define BIAS_CHUNK 256

static void bias_sums_range(const float *delta, int64_t b, int n, int k0, int k1, float *gb,
                            int add)
{
    double acc[BIAS_CHUNK];
    for (; k0 < k1; k0 += BIAS_CHUNK) {
        const int w = k1 - k0 < BIAS_CHUNK ? k1 - k0 : BIAS_CHUNK;
        for (int k = 0; k < w; k++)
            acc[k] = 0;
        for (int64_t i = 0; i < b; i++) {
            const float *row = delta + i * n + k0;
            int k = 0;
            for (; k + 8 <= w; k += 8) /* a constant trip count: vectorised at -O2 */
                for (int u = 0; u < 8; u++)
                    acc[k + u] += row[k + u];
            for (; k < w; k++)
                acc[k] += row[k];
        }
        for (int k = 0; k < w; k++)
            gb[k0 + k] = add ? gb[k0 + k] + (float)acc[k] : (float)acc[k];
    }
}

#if defined(__x86_64__) || defined(__i386__)
/* The same, 16 columns at a time in four registers of 4 doubles (the
 * compiler keeps a stack array in memory: a load and a store per row):
 * each column's sum is the same sequence of double additions, so the same
 * bits; the columns past the last 16 as above. */
__attribute__((target("avx2"))) static void bias_sums_avx2(const float *delta, int64_t b, int n,
                                                           float *gb, int add)
{
    int k0 = 0;
    for (; k0 + 16 <= n; k0 += 16) {
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t i = 0; i < b; i++) {
            const float *row = delta + i * n + k0;
            const __m256 x0 = _mm256_loadu_ps(row), x1 = _mm256_loadu_ps(row + 8);
            a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(x0)));
            a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(x0, 1)));
            a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm256_castps256_ps128(x1)));
            a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm256_extractf128_ps(x1, 1)));
        }
        double acc[16];
        _mm256_storeu_pd(acc, a0);
        _mm256_storeu_pd(acc + 4, a1);
        _mm256_storeu_pd(acc + 8, a2);
        _mm256_storeu_pd(acc + 12, a3);
        for (int k = 0; k < 16; k++)
            gb[k0 + k] = add ? gb[k0 + k] + (float)acc[k] : (float)acc[k];
    }
    bias_sums_range(delta, b, n, k0, n, gb, add);
}
#endif

static void bias_sums(const float *delta, int64_t b, int n, float *gb, int add)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx2")) {
        bias_sums_avx2(delta, b, n, gb, add);
        return;
    }
#endif
    bias_sums_range(delta, b, n, 0, n, gb, add);
}

void wl_dense_bias_grad(const float *delta, int64_t b, int n, float *gb)
{
    bias_sums(delta, b, n, gb, 0);
}

void wl_dense_bias_grad_add(const float *delta, int64_t b, int n, float *gb)
{
    bias_sums(delta, b, n, gb, 1);
}

void wl_dense_sample_stats(const float *ds, const float *xs, const float *ts, int nin,
                           int nout, double nb, double *sq, double *q)
{
    double xx = 1, dd = 0, dt = 0;
    for (int j = 0; j < nin; j++)
        xx += (double)xs[j] * xs[j];
    for (int k = 0; k < nout; k++) {
        dd += (double)ds[k] * ds[k];
        dt += (double)ds[k] * ts[k];
    }
    *sq += nb * nb * dd * xx;
    *q += nb * dt;
}

#define SOFTMAX_CHUNK 128

/* The largest of c logits; *argmax (if not NULL) gets the first place it
 * occurs. */
static inline float row_max(const float *z, int c, int *argmax)
{
    int am = 0;
    float mx = z[0];
    for (int k = 1; k < c; k++)
        if (z[k] > mx) {
            mx = z[k];
            am = k;
        }
    if (argmax)
        *argmax = am;
    return mx;
}

double wl_softmax_row_loss(const float *z, int c, int yi, int *argmax)
{
    const float mx = row_max(z, c, argmax);
    const float zy = (yi >= 0 && yi < c) ? z[yi] : mx;
    /* e = expf(z - mx), SOFTMAX_CHUNK at a time through the vectorised
     * expf (same bits), summed in double in class order */
    double s = 0;
    float e[SOFTMAX_CHUNK];
    for (int k0 = 0; k0 < c; k0 += SOFTMAX_CHUNK) {
        const int w = c - k0 < SOFTMAX_CHUNK ? c - k0 : SOFTMAX_CHUNK;
        for (int k = 0; k < w; k++)
            e[k] = z[k0 + k] - mx;
        wl_vmath_expf(e, w);
        for (int k = 0; k < w; k++)
            s += e[k];
    }
    return log(s) - ((double)zy - (double)mx);
}

/* Each row's cross-entropy as wl_softmax_row_loss computes it, and the row
 * replaced by its logit gradient, XENT_ROWS rows at a time so that the exponentials go through wl_vmath_expf in one run and four
 * rows' sums (each still in class order, in double) advance together
 * rather than one dependent chain at a time: the same bits. */
#define XENT_ROWS 64

static void xent_rows(float *z, int64_t rows, int c, const float *y, float invb, double *loss)
{
    float mx[XENT_ROWS], zy[XENT_ROWS];
    double s[XENT_ROWS];
    for (int64_t i = 0; i < rows; i++) {
        float *zi = z + i * c;
        const float m = row_max(zi, c, NULL);
        const int yi = (int)y[i];
        mx[i] = m;
        zy[i] = (yi >= 0 && yi < c) ? zi[yi] : m;
        for (int k = 0; k < c; k++)
            zi[k] -= m;
    }
    wl_vmath_expf(z, rows * c);
    int64_t i = 0;
    for (; i + 4 <= rows; i += 4) {
        const float *z0 = z + i * c, *z1 = z0 + c, *z2 = z1 + c, *z3 = z2 + c;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int k = 0; k < c; k++) {
            s0 += z0[k];
            s1 += z1[k];
            s2 += z2[k];
            s3 += z3[k];
        }
        s[i] = s0, s[i + 1] = s1, s[i + 2] = s2, s[i + 3] = s3;
    }
    for (; i < rows; i++) {
        double si = 0;
        for (int k = 0; k < c; k++)
            si += z[i * c + k];
        s[i] = si;
    }
    for (i = 0; i < rows; i++) {
        float *zi = z + i * c;
        const int yi = (int)y[i];
        const float inv = (float)(1.0 / s[i]);
        for (int k = 0; k < c; k++)
            zi[k] *= inv;
        *loss += log(s[i]) - ((double)zy[i] - (double)mx[i]);
        if (yi >= 0 && yi < c)
            zi[yi] -= 1.0f;
        for (int k = 0; k < c; k++)
            zi[k] *= invb;
    }
}

void wl_softmax_xent_grad(float *z, int64_t b, int c, const float *y, float invb,
                          double *loss)
{
    for (int64_t i0 = 0; i0 < b; i0 += XENT_ROWS)
        xent_rows(z + i0 * c, b - i0 < XENT_ROWS ? b - i0 : XENT_ROWS, c, y + i0, invb, loss);
}

wl_eval wl_softmax_evaluate(const wl_model *m, const float *params, const float *x,
                            const float *y, int64_t n, float *ws, int64_t step,
                            wl_logits_fn logits)
{
    wl_eval ev = {NAN, NAN};
    if (n <= 0 || step <= 0)
        return ev;
    const int c = m->classes;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t i0 = 0; i0 < n; i0 += step) {
        const int64_t b = n - i0 < step ? n - i0 : step;
        float *z = logits(m, params, x + i0 * m->dim, b, ws);
        for (int64_t i = 0; i < b; i++) {
            int yi = (int)y[i0 + i], am;
            loss += wl_softmax_row_loss(z + i * c, c, yi, &am);
            correct += am == yi;
        }
    }
    ev.loss = loss / (double)n;
    ev.accuracy = (double)correct / (double)n;
    return ev;
}
