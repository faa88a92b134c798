/* Products with a sparse left operand, in the pinned BLAS's bits
 * (sparse_rows_impl.h says how and why). */
#include "workloads/sparse_rows_impl.h"

#include <cblas.h>
#include <math.h>
#include <threads.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SROWS_X86 1
#endif

/* OpenBLAS 0.3.21, x86-64 Haswell: param.h's SGEMM_DEFAULT_P and _Q and
 * the kernel's unroll of m. */
#define GEMM_P 320
#define GEMM_Q 320
#define UNROLL_M 8
#define MAX_ROWS 12288 /* well under the driver's column block R */
#define MAX_ROWS_TN (1 << 20)

/* Marks groups [c / 8, (c + n) / 8) of a half as summed in two chains. */
static void mark(uint8_t *half, int c, int n)
{
    memset(half + c / 8, 1, (size_t)n / 8);
}

/* The tiles of the kernel's 12-row panels over a column block of m
 * columns: with m >= 16, a head 8x6 tile on the left half, then 16x6
 * tiles alternating right and left, each step 8 columns on, and a closing
 * 8x6 tile; 8x6 tiles sum in two chains, 16x6 in one; narrower blocks,
 * and the last m % 8 columns, are tiles of one chain. */
static void panel_tiles(int m, uint8_t *left, uint8_t *right)
{
    memset(left, 0, (size_t)(m + 7) / 8);
    memset(right, 0, (size_t)(m + 7) / 8);
    if (m < 16)
        return;
    int r = m, pl = 8, pr = 0;
    mark(left, 0, 8);
    for (;;) {
        pr += 16; /* right 16x6 */
        r -= 8;
        if (r < 16) {
            mark(left, pl, 8);
            break;
        }
        pl += 16; /* left 16x6 */
        r -= 8;
        if (r < 16) {
            mark(right, pr, 8);
            break;
        }
    }
}

/* How row r of a `rows`-row product is summed in a column block: 0 one
 * chain everywhere, 1 / 2 the left / right half of a 12-row panel (per
 * group, split_l / split_r), 3 two chains everywhere (a 4-row panel). The
 * first column block's kernel calls take 12 rows at a time, then 4 while
 * more than 4 are left, then the rest; the later blocks' one call takes
 * 12s, then 8, 4, 2, 1. */
static int row_kind(int64_t rows, int64_t r, int first)
{
    const int64_t q = rows - rows % 12;
    if (r < q)
        return r % 12 < 6 ? 1 : 2;
    int64_t t = rows - q, u = r - q;
    if (first)
        return u / 4 * 4 + 4 <= t ? 3 : 0;
    if (t >= 8) {
        if (u < 8)
            return 0;
        u -= 8;
        t -= 8;
    }
    return t >= 4 && u < 4 ? 3 : 0;
}

double wl_srows_density(const float *d, int64_t n)
{
    int64_t nz = 0;
    for (int64_t i = 0; i < n; i++)
        nz += d[i] != 0.0f;
    return n > 0 ? (double)nz / (double)n : 0.0;
}

int wl_srows_finite(const float *v, int64_t n)
{
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        ok &= isfinite(v[i]) != 0;
    return ok;
}

#ifdef SROWS_X86
#define STRIP 12 /* groups of 8 columns summed at once, in registers */
/* GCC's -O2 keeps acc[] in registers only when its loops are unrolled */
#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL _Pragma("GCC unroll 12")
#else
#define UNROLL
#endif

/* The terms of a sum over the shared dimension: each one's place k along
 * it (a row of D W's W, or a row of a stretch of D^T X's X) and its
 * value, in k order (8 of slack for the vector stores). */
typedef struct terms {
    int n;
    int32_t k[GEMM_Q + 8];
    float v[GEMM_Q + 8];
} terms;

/* For each mask of 8 lanes, the lanes that are set, in order, one byte
 * each: the permutation that packs them to the front. */
static uint64_t PACK[256];
static once_flag pack_once = ONCE_FLAG_INIT;

static void pack_init(void)
{
    for (int m = 0; m < 256; m++) {
        uint64_t v = 0;
        int n = 0;
        for (int i = 0; i < 8; i++)
            if (m >> i & 1)
                v |= (uint64_t)i << (8 * n++);
        PACK[m] = v;
    }
}

/* z = the nonzeros of d (k <= WL_SROWS_MAX_K floats), 8 lanes at a time,
 * without a branch per value. */
__attribute__((target("avx2,fma"))) static void nonzeros_of(const float *d, int k, terms *z)
{
    int n = 0;
    for (int i = 0; i < k; i += 8) {
        const __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32(k - i),
                                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const __m256 x = _mm256_maskload_ps(d + i, in);
        const unsigned m = (unsigned)_mm256_movemask_ps(
            _mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NEQ_UQ),
                          _mm256_castsi256_ps(in)));
        const __m256i perm = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)PACK[m]));
        _mm256_storeu_ps(z->v + n, _mm256_permutevar8x32_ps(x, perm));
        _mm256_storeu_si256((__m256i *)(z->k + n),
                            _mm256_add_epi32(perm, _mm256_set1_epi32(i)));
        n += __builtin_popcount(m);
    }
    z->n = n;
}

/* Group g of a row of x: 8 floats, or the columns left (lanes). */
static inline __attribute__((always_inline, target("avx2,fma"))) __m256
strip_load(const float *x, int g, int partial, __m256i lanes)
{
    return partial ? _mm256_maskload_ps(x + 8 * g, lanes) : _mm256_loadu_ps(x + 8 * g);
}

/* sum[0 .. 8 ng) = one chain per element over the terms (x's row k times
 * the term's value), + 0: the sum as the kernel stores it on a cleared C
 * (and, before an addition to a C that is never -0, no change). ng is a
 * constant where inlined, the last group partial when `partial`. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
chain(const terms *l, const float *x, int cols, int ng, int partial, __m256i lanes, float *sum)
{
    __m256 acc[STRIP];
    UNROLL for (int g = 0; g < ng; g++)
        acc[g] = _mm256_setzero_ps();
    for (int e = 0; e < l->n; e++) {
        const __m256 v = _mm256_set1_ps(l->v[e]);
        const float *xr = x + (int64_t)l->k[e] * cols;
        UNROLL for (int g = 0; g < ng; g++)
            acc[g] = _mm256_fmadd_ps(v, strip_load(xr, g, partial && g == ng - 1, lanes), acc[g]);
    }
    UNROLL for (int g = 0; g < ng; g++)
        _mm256_storeu_ps(sum + 8 * g, _mm256_add_ps(acc[g], _mm256_setzero_ps()));
}

#define CHAIN(NG)                                                                         \
    __attribute__((target("avx2,fma"))) static void chain_##NG(                           \
        const terms *l, const float *x, int cols, int partial, __m256i lanes, float *sum) \
    {                                                                                     \
        chain(l, x, cols, NG, partial, lanes, sum);                                       \
    }
CHAIN(1)
CHAIN(2)
CHAIN(3)
CHAIN(4)
CHAIN(5)
CHAIN(6)
CHAIN(7)
CHAIN(8)
CHAIN(9)
CHAIN(10)
CHAIN(11)
CHAIN(12)

typedef void chain_fn(const terms *, const float *, int, int, __m256i, float *);
static chain_fn *const CHAIN_OF[STRIP + 1] = {NULL,    chain_1, chain_2,  chain_3,  chain_4,
                                              chain_5, chain_6, chain_7,  chain_8,  chain_9,
                                              chain_10, chain_11, chain_12};

/* sum[0 .. 8 ng) = two chains per element (the terms of even k below k8,
 * the whole groups of 8, and those past it in one, the odd ones below k8
 * in the other), added, + 0; whole groups, ng <= STRIP / 2 a constant
 * where inlined. Without a branch: each term goes to both chains, times 0
 * in the other one; a zero term leaves a chain as it is but for the sign
 * of a zero, which the final + 0 erases. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
split(const terms *l, const float *x, int cols, int ng, int k8, float *sum)
{
    __m256 a[STRIP / 2], b[STRIP / 2];
    UNROLL for (int g = 0; g < ng; g++)
        a[g] = b[g] = _mm256_setzero_ps();
    for (int e = 0; e < l->n; e++) {
        const int odd = l->k[e] < k8 && (l->k[e] & 1);
        const __m256 va = _mm256_set1_ps(odd ? 0.0f : l->v[e]);
        const __m256 vb = _mm256_set1_ps(odd ? l->v[e] : 0.0f);
        const float *xr = x + (int64_t)l->k[e] * cols;
        UNROLL for (int g = 0; g < ng; g++) {
            const __m256 xv = _mm256_loadu_ps(xr + 8 * g);
            a[g] = _mm256_fmadd_ps(va, xv, a[g]);
            b[g] = _mm256_fmadd_ps(vb, xv, b[g]);
        }
    }
    UNROLL for (int g = 0; g < ng; g++)
        _mm256_storeu_ps(sum + 8 * g,
                         _mm256_add_ps(_mm256_add_ps(b[g], a[g]), _mm256_setzero_ps()));
}

#define SPLIT(NG)                                                                        \
    __attribute__((target("avx2,fma"))) static void split_##NG(                          \
        const terms *l, const float *x, int cols, int k8, float *sum)                    \
    {                                                                                    \
        split(l, x, cols, NG, k8, sum);                                                  \
    }
SPLIT(1)
SPLIT(2)
SPLIT(3)
SPLIT(4)
SPLIT(5)
SPLIT(6)

typedef void split_fn(const terms *, const float *, int, int, float *);
static split_fn *const SPLIT_OF[STRIP / 2 + 1] = {NULL,    split_1, split_2, split_3,
                                                  split_4, split_5, split_6};

/* ---- D W, a few rows at a time ---- */

/* The groups of row r summed in two chains are redone so. */
static void split_groups(const wl_srows *p, int64_t rows, int64_t r, const terms *z,
                         const float *w, float *out)
{
    const int k8 = p->k & ~7;
    if (r < rows - rows % 12) { /* a 12-row panel: the same half in every block */
        const int half = r % 12 < 6 ? 0 : 1;
        for (int i = 0; i < p->nsplit[half]; i++) {
            const int g = p->split[half][i];
            SPLIT_OF[1](z, w + 8 * g, p->cols, k8, out + 8 * g);
        }
        return;
    }
    int c0 = 0;
    for (int b = 0; b < p->nblocks; b++) {
        if (row_kind(rows, r, b == 0) == 3) /* cols % 8 == 0 here: whole groups */
            for (int g = c0 / 8; g < p->block_end[b] / 8; g++)
                SPLIT_OF[1](z, w + 8 * g, p->cols, k8, out + 8 * g);
        c0 = p->block_end[b];
    }
}

__attribute__((target("avx2,fma"))) static void rows_x86(const wl_srows *p, int64_t rows,
                                                         int64_t r0, int n, const float *d,
                                                         const float *w, float *out)
{
    terms z[WL_SROWS_BLOCK];
    for (int i = 0; i < n; i++)
        nonzeros_of(d + (int64_t)i * p->k, p->k, &z[i]);
    /* column strips outside, rows inside: a strip of W stays in L1 */
    const __m256i whole = _mm256_set1_epi32(-1);
    for (int c = 0; c < p->cols; c += 8 * STRIP) {
        const int ng = (p->cols - c) / 8 < STRIP ? (p->cols - c) / 8 : STRIP;
        for (int i = 0; i < n; i++)
            CHAIN_OF[ng](&z[i], w + c, p->cols, 0, whole, out + (int64_t)i * p->cols + c);
    }
    for (int i = 0; i < n; i++)
        split_groups(p, rows, r0 + i, &z[i], w, out + (int64_t)i * p->cols);
}
#endif

void wl_srows_rows(const wl_srows *p, int64_t rows, int64_t r0, int n, const float *d,
                   const float *w, float *out)
{
#ifdef SROWS_X86
    rows_x86(p, rows, r0, n, d, w, out);
#else
    (void)p, (void)rows, (void)r0, (void)n, (void)d, (void)w, (void)out;
#endif
}

/* ---- C = D^T X (+ C) ----
 * OpenBLAS's m is X's columns, its n D's columns (the channels), its k the
 * rows, taken Q at a time (a last stretch between Q and 2Q halved), each
 * stretch's sums added to C. Channel i, in column block b, is summed as
 * row_kind(k, i, b == 0) says (over n = D's columns); a partial last group
 * of 8 columns is one chain. Per stretch, each channel's nonzero rows are
 * listed; a strip of up to 12 groups of 8 columns is summed in registers
 * over the list, the groups summed in two chains redone so. */
#ifdef SROWS_X86
#define TN_CH 16 /* channels listed at once */

/* Groups g0 .. g0 + ng - 1 summed in two chains for channel i: bit g - g0
 * (whole groups only). */
static unsigned split_mask(const wl_srows *p, int i, int g0, int ng)
{
    unsigned mask = 0;
    int c0 = 0;
    for (int b = 0; b < p->nblocks; b++) {
        const int c1 = p->block_end[b], kind = row_kind(p->k, i, b == 0);
        for (int g = g0; g < g0 + ng && kind != 0; g++)
            if (8 * g >= c0 && 8 * g + 8 <= c1 &&
                (kind == 3 || (kind == 1 && p->split_l[g]) || (kind == 2 && p->split_r[g])))
                mask |= 1u << (g - g0);
        c0 = c1;
    }
    return mask;
}

/* One stretch of len rows (d and x at its first row): c (+)= its sums. */
__attribute__((target("avx2,fma"))) static void tn_stretch(const wl_srows *p, const float *d,
                                                           const float *x, int len, float *c)
{
    const int k = p->k, cols = p->cols, groups = (cols + 7) / 8, k8 = len & ~7;
    terms lists[TN_CH]; /* per channel: the rows of the stretch, k = t */
    for (int i0 = 0; i0 < k; i0 += TN_CH) {
        const int nch = k - i0 < TN_CH ? k - i0 : TN_CH;
        for (int i = 0; i < nch; i++)
            lists[i].n = 0;
        for (int t = 0; t < len; t++) {
            terms z;
            nonzeros_of(d + (int64_t)t * k + i0, nch, &z);
            for (int e = 0; e < z.n; e++) {
                terms *l = &lists[z.k[e]];
                l->k[l->n] = t;
                l->v[l->n++] = z.v[e];
            }
        }
        for (int g0 = 0; g0 < groups; g0 += STRIP) {
            const int ng = groups - g0 < STRIP ? groups - g0 : STRIP;
            const int partial = 8 * (g0 + ng) > cols;
            const __m256i lanes = _mm256_cmpgt_epi32(
                _mm256_set1_epi32(cols - 8 * (g0 + ng - 1)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            for (int i = 0; i < nch; i++) {
                float sum[8 * STRIP];
                CHAIN_OF[ng](&lists[i], x + 8 * g0, cols, partial, lanes, sum);
                const unsigned mask = split_mask(p, i0 + i, g0, ng);
                for (int h = 0; h < ng; h += STRIP / 2) {
                    /* the split groups of this half strip: from the
                     * first to the last, redone together */
                    const unsigned m = (mask >> h) & ((1u << (STRIP / 2)) - 1);
                    if (m == 0)
                        continue;
                    const int lo = __builtin_ctz(m), hi = 31 - __builtin_clz(m);
                    float two[8 * STRIP / 2];
                    SPLIT_OF[hi - lo + 1](&lists[i], x + 8 * (g0 + h + lo), cols, k8, two);
                    for (int g = lo; g <= hi; g++)
                        if (m >> g & 1)
                            memcpy(sum + 8 * (h + g), two + 8 * (g - lo), 8 * sizeof *sum);
                }
                float *ci = c + (int64_t)(i0 + i) * cols + 8 * g0;
                for (int g = 0; g < ng; g++) {
                    const int last = partial && g == ng - 1;
                    const __m256 old = strip_load(ci, g, last, lanes);
                    const __m256 now = _mm256_add_ps(_mm256_loadu_ps(sum + 8 * g), old);
                    if (last)
                        _mm256_maskstore_ps(ci + 8 * g, lanes, now);
                    else
                        _mm256_storeu_ps(ci + 8 * g, now);
                }
            }
        }
    }
}
#endif

void wl_srows_tn(const wl_srows *p, int64_t rows, const float *d, const float *x, int accumulate,
                 float *c)
{
#ifdef SROWS_X86
    if (!accumulate)
        memset(c, 0, (size_t)p->k * p->cols * sizeof *c);
    for (int64_t r0 = 0; r0 < rows;) {
        int64_t len = rows - r0;
        if (len >= 2 * GEMM_Q)
            len = GEMM_Q;
        else if (len > GEMM_Q)
            len = (len / 2 + UNROLL_M - 1) / UNROLL_M * UNROLL_M;
        tn_stretch(p, d + r0 * p->k, x + r0 * p->cols, (int)len, c);
        r0 += len;
    }
#else
    (void)p, (void)rows, (void)d, (void)x, (void)accumulate, (void)c;
#endif
}

/* A deterministic stream of floats in [-1, 1) for the check. */
static float next_value(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*s >> 40) / (double)(1ULL << 23)) - 1.0f;
}

/* D (nd floats, 70% zeros) and the other operand (no floats) for a check. */
static void check_operands(uint64_t *s, float *d, int64_t nd, float *o, int64_t no)
{
    for (int64_t i = 0; i < nd; i++) {
        const float v = next_value(s);
        d[i] = v > 0.4f ? v - 0.4f : v < -0.6f ? v + 0.6f : 0.0f;
    }
    for (int64_t i = 0; i < no; i++)
        o[i] = next_value(s);
}

/* Replay against cblas_sgemm for a product of `rows` rows: 1 identical. */
static int check(const wl_srows *p, int64_t rows)
{
    const int k = p->k, cols = p->cols;
    float *d = malloc((size_t)rows * k * sizeof *d);
    float *w = malloc((size_t)k * cols * sizeof *w);
    float *c = malloc((size_t)rows * cols * sizeof *c);
    float *row = malloc((size_t)WL_SROWS_BLOCK * cols * sizeof *row);
    int same = d && w && c && row;
    if (same) {
        uint64_t s = 0x5eed ^ (uint64_t)rows;
        check_operands(&s, d, rows * k, w, (int64_t)k * cols);
        for (int64_t i = 0; i < rows * cols; i++)
            c[i] = NAN; /* beta = 0 must clear it */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, cols, k, 1.0f, d, k, w,
                    cols, 0.0f, c, cols);
        for (int64_t r = 0; r < rows && same; r += WL_SROWS_BLOCK) {
            const int n = rows - r < WL_SROWS_BLOCK ? (int)(rows - r) : WL_SROWS_BLOCK;
            wl_srows_rows(p, rows, r, n, d + r * k, w, row);
            same = memcmp(row, c + r * cols, (size_t)n * cols * sizeof *row) == 0;
        }
    }
    free(d);
    free(w);
    free(c);
    free(row);
    return same;
}

/* The same for C = D^T X + C on a product of `rows` rows (both betas). */
static int check_tn(const wl_srows *p, int64_t rows)
{
    const int k = p->k, cols = p->cols;
    float *d = malloc((size_t)rows * k * sizeof *d);
    float *x = malloc((size_t)rows * cols * sizeof *x);
    float *c = malloc((size_t)k * cols * sizeof *c);
    float *e = malloc((size_t)k * cols * sizeof *e);
    int same = d && x && c && e;
    uint64_t s = 0x7e57 ^ (uint64_t)rows;
    for (int beta = 0; beta <= 1 && same; beta++) {
        check_operands(&s, d, rows * k, x, rows * cols);
        for (int64_t i = 0; i < (int64_t)k * cols; i++)
            c[i] = e[i] = beta ? next_value(&s) : NAN;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, cols, (int)rows, 1.0f, d, k, x,
                    cols, (float)beta, c, cols);
        wl_srows_tn(p, rows, d, x, beta, e);
        same = memcmp(c, e, (size_t)k * cols * sizeof *c) == 0;
    }
    free(d);
    free(x);
    free(c);
    free(e);
    return same;
}

/* NULL when the replay may be tried, else why not: it is switched off,
 * needs AVX2 and FMA, and OpenBLAS on one thread (several threads split
 * a product differently). */
static const char *replay_refused(void)
{
    const char *env = getenv(WL_SROWS_ENV);
    if (env && strcmp(env, "off") == 0)
        return WL_SROWS_ENV "=off";
#ifdef SROWS_X86
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return "no AVX2 and FMA";
    call_once(&pack_once, pack_init);
    return openblas_get_num_threads() == 1 ? NULL : "OpenBLAS on several threads";
#else
    return "not x86-64";
#endif
}

static const char REFUSED_SHAPE[] = "a shape it does not replay";
static const char REFUSED_SUMS[] = "this sgemm sums otherwise";

/* The driver's column blocks (its m): P at a time, a last stretch between
 * P and 2P halved (rounded up to the unroll); the tiles of each. */
static int plan_tiles(wl_srows *p, int cols, int k)
{
    memset(p, 0, sizeof *p);
    if (cols <= 0 || (cols + 7) / 8 > WL_SROWS_MAX_GROUPS || k < 1 || k > WL_SROWS_MAX_K)
        return 0;
    p->cols = cols;
    p->k = k;
    for (int is = 0; is < cols;) {
        int mi = cols - is;
        if (mi >= 2 * GEMM_P)
            mi = GEMM_P;
        else if (mi > GEMM_P)
            mi = (mi / 2 + UNROLL_M - 1) / UNROLL_M * UNROLL_M;
        if (p->nblocks == WL_SROWS_MAX_BLOCKS)
            return 0;
        panel_tiles(mi, p->split_l + is / 8, p->split_r + is / 8);
        for (int g = is / 8; g < is / 8 + mi / 8; g++) {
            if (p->split_l[g])
                p->split[0][p->nsplit[0]++] = (uint16_t)g;
            if (p->split_r[g])
                p->split[1][p->nsplit[1]++] = (uint16_t)g;
        }
        is += mi;
        p->block_end[p->nblocks++] = is;
    }
    return 1;
}

/* 0 with p->refused = why (plan_tiles clears p). */
static int refuse(wl_srows *p, const char *why)
{
    p->refused = why;
    return 0;
}

int wl_srows_plan(wl_srows *p, int cols, int k, const int64_t *rows, int nrows)
{
    const char *no = replay_refused();
    if (no)
        return refuse(p, no);
    if (cols % 8 != 0 || !plan_tiles(p, cols, k))
        return refuse(p, REFUSED_SHAPE);
    for (int i = 0; i < nrows; i++) {
        if (rows[i] < 1 || rows[i] > MAX_ROWS)
            return refuse(p, REFUSED_SHAPE);
        if (!check(p, rows[i]))
            return refuse(p, REFUSED_SUMS);
    }
    return 1;
}

int wl_srows_plan_tn(wl_srows *p, int k, int cols, const int64_t *rows, int nrows)
{
    const char *no = replay_refused();
    if (no)
        return refuse(p, no);
    if (!plan_tiles(p, cols, k))
        return refuse(p, REFUSED_SHAPE);
    for (int i = 0; i < nrows; i++) {
        if (rows[i] < 1 || rows[i] > MAX_ROWS_TN)
            return refuse(p, REFUSED_SHAPE);
        if (!check_tn(p, rows[i]))
            return refuse(p, REFUSED_SUMS);
    }
    return 1;
}
