/* cnn(c1, c2): a LeNet-style network for images of the dataset's geometry
 * (channels x height x width, planar rows as fashion_mnist stores them):
 *   conv1 5x5, c1 maps (default 16), ReLU, 2x2 max-pool (stride 2),
 *   conv2 5x5, c2 maps (default 32), ReLU, 2x2 max-pool,
 *   fc dense to the classes, softmax cross-entropy averaged.
 * (LeNet-5's 6 and 16 maps, cnn(6, 16), stop at 0.884 test accuracy on
 * Fashion-MNIST in the 10-epoch quality run; the defaults reach 0.89.)
 * No padding: 28x28 -> 24 -> 12 -> 8 -> 4, so fc sees 4*4*c2 features.
 * Layers: conv1 = W1 (c1 x channels*5*5, columns ordered channel, ky, kx)
 * then b1; conv2 = W2 (c2 x 5*5*c1, columns ordered ky, kx, channel) then
 * b2; fc = W (classes x h*w*c2, columns ordered y, x, channel) then b.
 * He initialisation, biases 0.
 *
 * Convolutions are im2col + one sgemm per layer over a chunk of samples;
 * activations are channels-last (rows = sample, y, x). Batches are processed
 * in chunks of CNN_CHUNK samples whose gradients accumulate, so the
 * workspace is bounded whatever the batch (16 samples measured fastest:
 * the chunk's im2col stays in cache). Max-pool records the position of
 * each window's first maximum for the backward pass. Per-sample statistics
 * use the generic loop (a convolution's per-sample gradient does not
 * factor). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"
#include "workloads/dense_impl.h"
#include "workloads/models_impl.h"
#include "workloads/sparse_rows_impl.h"

#define CNN_CHUNK 16
#define KS 5

typedef struct cnn_geom {
    int c0, h0, w0;     /* input */
    int c1, h1, w1;     /* conv1 output */
    int p1h, p1w;       /* pool1 output (c1 maps) */
    int c2, h2, w2;     /* conv2 output */
    int p2h, p2w;       /* pool2 output (c2 maps) */
    int k1, k2, feat;   /* im2col widths, fc inputs */
    int classes;
    /* conv2's column gradient row by row from its sparse delta (at most a
     * quarter of a pooled map's gradient is nonzero), when the replay of
     * the BLAS's sums checks out for every chunk size */
    int dcol_rows;
    wl_srows dcol;
    /* the same for conv2's weight gradient delta2^T col2 */
    int wgrad2_rows;
    wl_srows wgrad2;
} cnn_geom;

static int geom_make(cnn_geom *g, int c0, int h0, int w0, int c1, int c2, int classes)
{
    g->c0 = c0;
    g->h0 = h0;
    g->w0 = w0;
    g->c1 = c1;
    g->h1 = h0 - KS + 1;
    g->w1 = w0 - KS + 1;
    g->p1h = g->h1 / 2;
    g->p1w = g->w1 / 2;
    g->c2 = c2;
    g->h2 = g->p1h - KS + 1;
    g->w2 = g->p1w - KS + 1;
    g->p2h = g->h2 / 2;
    g->p2w = g->w2 / 2;
    g->k1 = c0 * KS * KS;
    g->k2 = KS * KS * c1;
    g->feat = g->p2h * g->p2w * c2;
    g->classes = classes;
    return g->p2h >= 1 && g->p2w >= 1 ? 0 : -1;
}

static const cnn_geom *geom(const wl_model *m)
{
    return (const cnn_geom *)m->priv;
}

static int cnn_create(wl_model *m, const char *const *args, int nargs, sim_err *err)
{
    const wl_dataset *ds = wl_model_dataset(m);
    if (m->classes < 2)
        return wl_model_misfit(m, "a classification dataset", err);
    if (!ds || ds->channels <= 0 || ds->height <= 0 || ds->width <= 0 ||
        (int64_t)ds->channels * ds->height * ds->width != m->dim)
        return wl_model_misfit(m, "an image dataset (channels x height x width)", err);
    int64_t ch[2] = {16, 32};
    if (nargs > 2)
        return sim_err_set(err, SIM_ECONFIG, "model 'cnn': expected cnn or cnn(c1, c2)");
    for (int i = 0; i < nargs; i++)
        if (sim_parse_int(args[i], &ch[i], NULL) != 0 || ch[i] < 1 || ch[i] > 4096)
            return sim_err_set(err, SIM_ECONFIG,
                               "model 'cnn': channel count '%s' is not an integer in 1..4096",
                               args[i]);
    cnn_geom g;
    if (geom_make(&g, ds->channels, ds->height, ds->width, (int)ch[0], (int)ch[1],
                  m->classes) != 0)
        return sim_err_set(err, SIM_ECONFIG,
                           "model 'cnn': images of %dx%d are too small for two 5x5 "
                           "convolutions and 2x2 poolings (at least 16x16)",
                           ds->height, ds->width);
    int64_t rows[CNN_CHUNK];
    for (int cb = 1; cb <= CNN_CHUNK; cb++)
        rows[cb - 1] = (int64_t)cb * g.h2 * g.w2;
    g.dcol_rows = wl_srows_plan(&g.dcol, g.k2, g.c2, rows, CNN_CHUNK);
    g.wgrad2_rows = wl_srows_plan_tn(&g.wgrad2, g.c2, g.k2, rows, CNN_CHUNK);
    cnn_geom *p = malloc(sizeof *p);
    if (!p)
        return sim_err_set(err, SIM_ENOMEM, "model 'cnn': out of memory");
    *p = g;
    m->priv = p;
    wl_model_add_layer(m, "conv1", (int64_t)g.c1 * (g.k1 + 1));
    wl_model_add_layer(m, "conv2", (int64_t)g.c2 * (g.k2 + 1));
    wl_model_add_layer(m, "fc", (int64_t)g.classes * (g.feat + 1));
    double macs = (double)g.h1 * g.w1 * g.k1 * g.c1 + (double)g.h2 * g.w2 * g.k2 * g.c2 +
                  (double)g.feat * g.classes;
    m->flops_per_sample = 6.0 * macs;
    return 0;
}

/* "sparse replay on" when both of conv2's products planned, else "off"
 * (or "on for ... only") with the plans' reasons. */
static void cnn_kernels(const wl_model *m, char *buf, size_t len)
{
    const cnn_geom *g = geom(m);
    const char *dcol = g->dcol.refused, *wgrad = g->wgrad2.refused;
    if (!dcol && !wgrad)
        snprintf(buf, len, "sparse replay on");
    else if (dcol && wgrad && strcmp(dcol, wgrad) == 0)
        snprintf(buf, len, "sparse replay off (%s)", dcol);
    else if (dcol && wgrad)
        snprintf(buf, len, "sparse replay off (column gradient: %s; weight gradient: %s)", dcol,
                 wgrad);
    else
        snprintf(buf, len, "sparse replay on for the %s gradient only (%s)",
                 dcol ? "weight" : "column", dcol ? dcol : wgrad);
}

static void cnn_destroy(wl_model *m)
{
    free(m->priv);
    m->priv = NULL;
}

/* Floats per sample of the chunk buffers, in the order bufs_of lays them. */
static size_t per_sample(const cnn_geom *g)
{
    size_t r1 = (size_t)g->h1 * g->w1, r2 = (size_t)g->h2 * g->w2;
    size_t p1 = (size_t)g->p1h * g->p1w * g->c1;
    return r1 * g->k1 + r1 * g->c1 + 3 * p1 + r2 * g->k2 + r2 * g->c2 + 3 * (size_t)g->feat +
           (size_t)g->classes;
}

static size_t cnn_workspace_floats(const wl_model *m, int64_t max_batch)
{
    int64_t cb = max_batch < CNN_CHUNK ? (max_batch > 0 ? max_batch : 1) : CNN_CHUNK;
    return (size_t)cb * per_sample(geom(m));
}

static void cnn_init(const wl_model *m, float *params, gsl_rng *rng)
{
    const cnn_geom *g = geom(m);
    const int fan_in[3] = {g->k1, g->k2, g->feat}, outs[3] = {g->c1, g->c2, g->classes};
    for (int l = 0; l < 3; l++) {
        float *w = params + m->layers[l].offset;
        int64_t nw = (int64_t)outs[l] * fan_in[l];
        wl_model_init_gaussian(w, nw, sqrt(2.0 / fan_in[l]), rng);
        memset(w + nw, 0, (size_t)outs[l] * sizeof *w);
    }
}

typedef struct cnn_bufs {
    float *col1, *a1, *p1, *arg1, *dp1, *col2, *a2, *p2, *arg2, *dp2, *z;
} cnn_bufs;

static void bufs_of(const cnn_geom *g, int64_t cb, float *ws, cnn_bufs *bf)
{
    size_t r1 = (size_t)g->h1 * g->w1, r2 = (size_t)g->h2 * g->w2;
    size_t p1 = (size_t)g->p1h * g->p1w * g->c1;
    bf->col1 = ws;
    ws += cb * r1 * g->k1;
    bf->a1 = ws;
    ws += cb * r1 * g->c1;
    bf->p1 = ws;
    ws += cb * p1;
    bf->arg1 = ws;
    ws += cb * p1;
    bf->dp1 = ws;
    ws += cb * p1;
    bf->col2 = ws;
    ws += cb * r2 * g->k2;
    bf->a2 = ws;
    ws += cb * r2 * g->c2;
    bf->p2 = ws;
    ws += cb * (size_t)g->feat;
    bf->arg2 = ws;
    ws += cb * (size_t)g->feat;
    bf->dp2 = ws;
    ws += cb * (size_t)g->feat;
    bf->z = ws;
}

/* Element-wise loops run in blocks of VB with a constant trip count so
 * that GCC's -O2 vectoriser takes them; the tails are scalar. Each pass
 * (NAME_body) is compiled twice, plainly (SSE2) and for AVX2, by TWICE
 * below, and every call takes the AVX2 copy where the CPU has it: wider
 * vectors, no fused multiply-add (none is allowed in the AVX2 copy), so
 * the same float operations and the same bits. */
#define VB 8
#define PASS static inline __attribute__((always_inline)) void

/* GCC would turn copy loops back into memcpy calls */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_IDIOMS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NO_IDIOMS
#endif

#if defined(__x86_64__) || defined(__i386__)
#define TWICE(name, params, args)                                                        \
    __attribute__((target("avx2"))) NO_IDIOMS static void name##_avx2 params             \
    {                                                                                    \
        name##_body args;                                                                \
    }                                                                                    \
    NO_IDIOMS static void name params                                                    \
    {                                                                                    \
        if (__builtin_cpu_supports("avx2"))                                              \
            name##_avx2 args;                                                            \
        else                                                                             \
            name##_body args;                                                            \
    }
#else
#define TWICE(name, params, args)                                                        \
    NO_IDIOMS static void name params { name##_body args; }
#endif

/* out (rows x n) = in (rows x k) W^T (W: n x k), without the biases,
 * which pool_forward adds with the ReLU. */
static void conv_product(const float *w, int k, int n, const float *in, int64_t rows,
                         float *out)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, n, k, 1.0f, in, k, w, k,
                0.0f, out, n);
}

/* out (rows x n) = in (rows x k) W^T + bias (W: n x k then n biases): the
 * sgemm, then the biases added row by row. */
static void affine(const float *w, int k, int n, const float *in, int64_t rows, float *out)
{
    const float *bias = w + (int64_t)n * k;
    conv_product(w, k, n, in, rows, out);
    for (int64_t i = 0; i < rows; i++)
        for (int j = 0; j < n; j++)
            out[i * n + j] += bias[j];
}

/* relu(a + bias) */
static inline float bias_relu(float a, float bias)
{
    const float v = a + bias;
    return v > 0 ? v : 0.0f;
}

/* Branch-free first maximum of m channels of one window (pairs, then the
 * better pair) of relu(a + bias): rows r0, r1, the right neighbour c floats
 * further. Called with m = VB (vectorised) or the tail. */
static inline void pool_max(const float *restrict r0, const float *restrict r1, int c,
                            const float *restrict bias, float *restrict p,
                            float *restrict arg, int m)
{
    for (int k = 0; k < m; k++) {
        float v0 = bias_relu(r0[k], bias[k]), v1 = bias_relu(r0[c + k], bias[k]);
        float v2 = bias_relu(r1[k], bias[k]), v3 = bias_relu(r1[c + k], bias[k]);
        float m01 = v1 > v0 ? v1 : v0, t01 = v1 > v0 ? 1.0f : 0.0f;
        float m23 = v3 > v2 ? v3 : v2, t23 = v3 > v2 ? 3.0f : 2.0f;
        p[k] = m23 > m01 ? m23 : m01;
        arg[k] = m23 > m01 ? t23 : t01;
    }
}

/* 2x2 stride-2 max-pool of the maps relu(a + bias), a channels-last (h x w
 * x c per sample; a itself is left as it is, and a trailing odd row or
 * column is never read). The window position of each maximum (0 top-left,
 * 1 top-right, 2 bottom-left, 3 bottom-right; the first one on ties) goes
 * to arg, as a float, for the backward pass. */
PASS pool_forward_body(const float *a, const float *bias, int h, int w, int c, int64_t cb,
                       float *p, float *arg)
{
    const int ph = h / 2, pw = w / 2;
    for (int64_t s = 0; s < cb; s++)
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                const float *r0 = a + ((s * h + 2 * y) * w + 2 * x) * c;
                const float *r1 = r0 + (int64_t)w * c;
                const int64_t o = ((s * ph + y) * pw + x) * c;
                int k = 0;
                for (; k + VB <= c; k += VB)
                    pool_max(r0 + k, r1 + k, c, bias + k, p + o + k, arg + o + k, VB);
                if (k < c)
                    pool_max(r0 + k, r1 + k, c, bias + k, p + o + k, arg + o + k, c - k);
            }
}
TWICE(pool_forward,
      (const float *a, const float *bias, int h, int w, int c, int64_t cb, float *p, float *arg),
      (a, bias, h, w, c, cb, p, arg))

/* One window's gradient, m channels: dp where the pooled value is
 * positive (ReLU passes it), else 0, at the recorded maximum's position
 * (d0 top-left, d1 top-right, d2 bottom-left, d3 bottom-right), 0 at the
 * other three. Called with m = VB (vectorised) or the tail. */
PASS unpool_window(float *restrict d0, float *restrict d1, float *restrict d2,
                   float *restrict d3, const float *restrict p, const float *restrict arg,
                   const float *restrict dp, int m)
{
    for (int k = 0; k < m; k++) {
        const float g = p[k] > 0 ? dp[k] : 0.0f, r = arg[k];
        d0[k] = r == 0.0f ? g : 0.0f;
        d1[k] = r == 1.0f ? g : 0.0f;
        d2[k] = r == 2.0f ? g : 0.0f;
        d3[k] = r == 3.0f ? g : 0.0f;
    }
}

/* Replaces the post-ReLU maps a by their gradient: the recorded maximum of
 * each window gets dp when the pooled value p is positive (ReLU passes it),
 * everything else (including a trailing odd row or column) 0. Each value
 * of a is written once (no clearing pass). */
PASS pool_backward_body(float *a, int h, int w, int c, int64_t cb, const float *p,
                        const float *arg, const float *dp)
{
    const int ph = h / 2, pw = w / 2;
    const size_t row = (size_t)w * c;
    for (int64_t s = 0; s < cb; s++) {
        float *as = a + s * h * row;
        for (int y = 0; y < ph; y++) {
            for (int x = 0; x < pw; x++) {
                float *r0 = as + (2 * y * (size_t)w + 2 * x) * c;
                const int64_t o = ((s * ph + y) * pw + x) * c;
                float *r1 = r0 + row;
                int k = 0;
                for (; k + VB <= c; k += VB)
                    unpool_window(r0 + k, r0 + c + k, r1 + k, r1 + c + k, p + o + k,
                                  arg + o + k, dp + o + k, VB);
                unpool_window(r0 + k, r0 + c + k, r1 + k, r1 + c + k, p + o + k, arg + o + k,
                              dp + o + k, c - k);
            }
            if (w & 1) {
                memset(as + (2 * y * (size_t)w + w - 1) * c, 0, (size_t)c * sizeof *a);
                memset(as + ((2 * y + 1) * (size_t)w + w - 1) * c, 0, (size_t)c * sizeof *a);
            }
        }
        if (h & 1)
            memset(as + (h - 1) * row, 0, row * sizeof *a);
    }
}
TWICE(pool_backward,
      (float *a, int h, int w, int c, int64_t cb, const float *p, const float *arg,
       const float *dp),
      (a, h, w, c, cb, p, arg, dp))

/* 8 floats, unaligned, as one vector (one move in the AVX2 copy) */
typedef float f8u __attribute__((vector_size(32), aligned(4), may_alias));

/* conv1's columns: row (s, oy, ox) holds, channel by channel and kernel
 * row by kernel row, the KS floats of the image at (oy + ky, ox). Where
 * the image row has 8 floats from ox on, 8 are copied (one vector) and
 * the 3 past the segment are overwritten by the next segment or the next
 * row (the last row of the columns, ox = w1 - 1, never takes that path:
 * w1 - 1 + 8 > w0). */
PASS im2col1_body(const cnn_geom *g, const float *x, int64_t cb, float *col)
{
    const int c0 = g->c0, h0 = g->h0, w0 = g->w0, h1 = g->h1, w1 = g->w1, k1 = g->k1;
    const int64_t in = (int64_t)c0 * h0 * w0;
    for (int64_t s = 0; s < cb; s++)
        for (int oy = 0; oy < h1; oy++)
            for (int ox = 0; ox < w1; ox++) {
                float *row = col + ((s * h1 + oy) * w1 + ox) * k1;
                const int wide = ox + 8 <= w0;
                for (int c = 0; c < c0; c++)
                    for (int ky = 0; ky < KS; ky++) {
                        const float *src = x + s * in + ((int64_t)c * h0 + oy + ky) * w0 + ox;
                        if (wide)
                            *(f8u *)row = *(const f8u *)src;
                        else
                            memcpy(row, src, KS * sizeof *row); /* inlined: 16 + 4 bytes */
                        row += KS;
                    }
            }
}
TWICE(im2col1, (const cnn_geom *g, const float *x, int64_t cb, float *col), (g, x, cb, col))

/* dst[t] = src[t] for t < n, inline: a memcpy call per 80 floats cost
 * more than the copy (TWICE keeps GCC from turning the loop back into
 * one) */
PASS copy_to(float *restrict dst, const float *restrict src, int n)
{
    int t = 0;
    for (; t + VB <= n; t += VB)
        for (int u = 0; u < VB; u++)
            dst[t + u] = src[t + u];
    for (; t < n; t++)
        dst[t] = src[t];
}

PASS im2col2_body(const cnn_geom *g, const float *p1, int64_t cb, float *col)
{
    const int seg = KS * g->c1;
    for (int64_t s = 0; s < cb; s++)
        for (int oy = 0; oy < g->h2; oy++)
            for (int ox = 0; ox < g->w2; ox++) {
                float *row = col + ((s * g->h2 + oy) * g->w2 + ox) * g->k2;
                for (int ky = 0; ky < KS; ky++) {
                    const float *src = p1 + ((s * g->p1h + oy + ky) * g->p1w + ox) * g->c1;
                    copy_to(row, src, seg);
                    row += seg;
                }
            }
}
TWICE(im2col2, (const cnn_geom *g, const float *p1, int64_t cb, float *col), (g, p1, cb, col))

/* dst[t] += src[t] for t < n */
PASS add_to(float *restrict dst, const float *restrict src, int n)
{
    int t = 0;
    for (; t + VB <= n; t += VB)
        for (int u = 0; u < VB; u++)
            dst[t + u] += src[t + u];
    for (; t < n; t++)
        dst[t] += src[t];
}

/* dst[t] = src[t] + 0 for t < n: what add_to gives on a cleared dst
 * (0 + x is x + 0, which is x except that -0 becomes +0), without the
 * clearing */
PASS put_to(float *restrict dst, const float *restrict src, int n)
{
    int t = 0;
    for (; t + VB <= n; t += VB)
        for (int u = 0; u < VB; u++)
            dst[t + u] = src[t + u] + 0.0f;
    for (; t < n; t++)
        dst[t] = src[t] + 0.0f;
}

/* Adds rows r0 .. r0 + n - 1 of conv2's column gradient (block, n x k2)
 * onto the pooled maps dp1, row by row, kernel row by kernel row. dp1 is
 * not cleared beforehand: the first term each pooled value receives (from
 * the first output row oy = max(0, py - 4), then the first column ox =
 * max(0, px - 4), in the order of the rows) is stored as term + 0, the
 * later ones added; the maps are p1h = h2 + 4 by p1w = w2 + 4, so every
 * value receives one. */
PASS col2im_rows_body(const cnn_geom *g, const float *block, int64_t r0, int n, float *dp1)
{
    const int seg = KS * g->c1, last = (KS - 1) * g->c1;
    const int64_t r2 = (int64_t)g->h2 * g->w2;
    for (int i = 0; i < n; i++) {
        const int64_t r = r0 + i, s = r / r2, rem = r % r2;
        const int oy = (int)(rem / g->w2), ox = (int)(rem % g->w2);
        const float *row = block + (int64_t)i * g->k2;
        for (int ky = 0; ky < KS; ky++) {
            float *d = dp1 + ((s * g->p1h + oy + ky) * g->p1w + ox) * g->c1;
            if (oy > 0 && ky < KS - 1) {
                add_to(d, row, seg);
            } else if (ox == 0) {
                put_to(d, row, seg);
            } else {
                add_to(d, row, last);
                put_to(d + last, row + last, g->c1);
            }
            row += seg;
        }
    }
}
TWICE(col2im_rows, (const cnn_geom *g, const float *block, int64_t r0, int n, float *dp1),
      (g, block, r0, n, dp1))

/* dp1 = conv2's input gradient: the column gradient delta2 W2 summed back
 * onto the pooled maps (col2im), rows in order. When fast (the sparse
 * replay planned and worth it, W2 finite), the rows are computed from
 * delta2's nonzeros WL_SROWS_BLOCK at a time into buf and added at once;
 * otherwise one sgemm writes the whole column gradient into buf (rows x
 * k2). The same bits either way. */
static void conv2_input_grad(const cnn_geom *g, const float *delta, const float *w2, int64_t cb,
                             int fast, float *buf, float *dp1)
{
    const int64_t r2 = (int64_t)g->h2 * g->w2, rows = cb * r2;
    if (!fast)
        wl_dense_backward(delta, w2, g->k2, g->c2, rows, buf);
    for (int64_t r0 = 0; r0 < rows; r0 += WL_SROWS_BLOCK) {
        const int n = rows - r0 < WL_SROWS_BLOCK ? (int)(rows - r0) : WL_SROWS_BLOCK;
        const float *block = buf + r0 * g->k2;
        if (fast) {
            wl_srows_rows(&g->dcol, rows, r0, n, delta + r0 * g->c2, w2, buf);
            block = buf;
        }
        col2im_rows(g, block, r0, n, dp1);
    }
}

static void forward(const wl_model *m, const float *params, const float *x, int64_t cb,
                    const cnn_bufs *bf)
{
    const cnn_geom *g = geom(m);
    const float *w1 = params + m->layers[0].offset, *w2 = params + m->layers[1].offset;
    im2col1(g, x, cb, bf->col1);
    conv_product(w1, g->k1, g->c1, bf->col1, cb * g->h1 * g->w1, bf->a1);
    pool_forward(bf->a1, w1 + (int64_t)g->c1 * g->k1, g->h1, g->w1, g->c1, cb, bf->p1,
                 bf->arg1);
    im2col2(g, bf->p1, cb, bf->col2);
    conv_product(w2, g->k2, g->c2, bf->col2, cb * g->h2 * g->w2, bf->a2);
    pool_forward(bf->a2, w2 + (int64_t)g->c2 * g->k2, g->h2, g->w2, g->c2, cb, bf->p2,
                 bf->arg2);
    affine(params + m->layers[2].offset, g->feat, g->classes, bf->p2, cb, bf->z);
}

/* grad W (+)= delta^T in, grad b (+)= column sums of delta (in double);
 * the product replayed from delta's nonzeros when sp is given (planned,
 * worth it, `in` finite: the same bits as the sgemm). */
static void weight_grad(const float *delta, const float *in, int64_t rows, int k, int n,
                        float *gw, int accumulate, const wl_srows *sp)
{
    if (sp)
        wl_srows_tn(sp, rows, delta, in, accumulate, gw);
    else
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, k, (int)rows, 1.0f, delta, n,
                    in, k, accumulate ? 1.0f : 0.0f, gw, k);
    float *gb = gw + (int64_t)n * k;
    if (accumulate)
        wl_dense_bias_grad_add(delta, rows, n, gb);
    else
        wl_dense_bias_grad(delta, rows, n, gb);
}

static double cnn_loss_grad(const wl_model *m, const float *params, const float *x,
                            const float *y, int64_t b, float *grad, float *ws)
{
    const cnn_geom *g = geom(m);
    if (b <= 0)
        return wl_model_zero_grad(m, grad);
    const float *w2 = params + m->layers[1].offset, *wf = params + m->layers[2].offset;
    float *g1 = grad + m->layers[0].offset, *g2 = grad + m->layers[1].offset;
    float *gf = grad + m->layers[2].offset;
    const float invb = 1.0f / (float)b;
    const int c = g->classes;
    const int64_t r1 = (int64_t)g->h1 * g->w1, r2 = (int64_t)g->h2 * g->w2;
    /* the replays as planned: OpenBLAS still on one thread; the column
     * gradient's also needs W2 finite (the same for every chunk) */
    const int one_thread = openblas_get_num_threads() == 1;
    const int dcol_ok = g->dcol_rows && one_thread && wl_srows_finite(w2, (int64_t)g->c2 * g->k2);
    double loss = 0;
    for (int64_t i0 = 0; i0 < b; i0 += CNN_CHUNK) {
        const int64_t cb = b - i0 < CNN_CHUNK ? b - i0 : CNN_CHUNK;
        const int acc = i0 > 0;
        cnn_bufs bf;
        bufs_of(g, cb, ws, &bf);
        forward(m, params, x + i0 * m->dim, cb, &bf);
        wl_softmax_xent_grad(bf.z, cb, c, y + i0, invb, &loss);
        /* fc */
        weight_grad(bf.z, bf.p2, cb, g->feat, c, gf, acc, NULL);
        wl_dense_backward(bf.z, wf, g->feat, c, cb, bf.dp2);
        /* pool2, ReLU, conv2 (the column gradient overwrites col2) */
        pool_backward(bf.a2, g->h2, g->w2, g->c2, cb, bf.p2, bf.arg2, bf.dp2);
        /* delta2's nonzeros (a quarter at most: one per pooling window)
         * decide whether the replays pay; col2 holds p1's values */
        const double dens2 = wl_srows_density(bf.a2, cb * r2 * g->c2);
        const int sparse2 = g->wgrad2_rows && one_thread && dens2 <= WL_SROWS_PAYS_TN &&
                            wl_srows_finite(bf.p1, cb * g->p1h * g->p1w * g->c1);
        const int dcol_fast = dcol_ok && dens2 <= WL_SROWS_PAYS;
        weight_grad(bf.a2, bf.col2, cb * r2, g->k2, g->c2, g2, acc,
                    sparse2 ? &g->wgrad2 : NULL);
        conv2_input_grad(g, bf.a2, w2, cb, dcol_fast, bf.col2, bf.dp1);
        /* pool1, ReLU, conv1 */
        pool_backward(bf.a1, g->h1, g->w1, g->c1, cb, bf.p1, bf.arg1, bf.dp1);
        weight_grad(bf.a1, bf.col1, cb * r1, g->k1, g->c1, g1, acc, NULL);
    }
    return loss / (double)b;
}

static float *cnn_logits(const wl_model *m, const float *params, const float *x, int64_t cb,
                         float *ws)
{
    cnn_bufs bf;
    bufs_of(geom(m), cb, ws, &bf);
    forward(m, params, x, cb, &bf);
    return bf.z;
}

static wl_eval cnn_evaluate(const wl_model *m, const float *params, const float *x,
                            const float *y, int64_t n, float *ws, int64_t ws_batch)
{
    const int64_t step = ws_batch < CNN_CHUNK ? ws_batch : CNN_CHUNK;
    return wl_softmax_evaluate(m, params, x, y, n, ws, step, cnn_logits);
}

const wl_model_vt wl_cnn_vt = {
    .name = "cnn",
    .args = "[(c1, c2)]",
    .summary = "LeNet-style CNN: 2 x (conv5x5 + ReLU + maxpool2), dense; image datasets",
    .create = cnn_create,
    .destroy = cnn_destroy,
    .workspace_floats = cnn_workspace_floats,
    .init = cnn_init,
    .loss_grad = cnn_loss_grad,
    .evaluate = cnn_evaluate,
    .batch_stats = NULL,
    .kernels = cnn_kernels,
};
