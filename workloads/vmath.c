/* Elementwise math the compiler vectorizes (vmath_impl.h).
 *
 * tanh, in float, eight lanes: |x| < 2^-12 gives x; |x| < 0.625 gives
 * x + x^3 q(x^2) (q degree 4, Cephes tanhf); above, 1 - 2 / (e + 1) with
 * e = exp(2|x|), 2|x| clamped to 19 (tanh rounds to 1 from 9.01), exp as
 * 2^n p(r), r = 2|x| - n ln 2 in two parts, p the Cephes expf polynomial.
 * No fused multiply-adds, so the SSE2 copy (two 128-bit halves) and the
 * AVX2 copy give the same bits. Checked on all 2^32 floats: every result
 * is the correctly rounded tanh (libm's double tanh rounded to float) or
 * a neighbour of it (7.5 M inputs are one float away, 0.17% of all
 * floats and 1.7% of a fine grid of [-12, 12]; none further), NaN stays NaN, and the AVX2 and SSE2 copies agree. A tail of
 * fewer than eight is padded. */
#include "workloads/vmath_impl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));

#define FSPLAT(a) ((v8f){(a), (a), (a), (a), (a), (a), (a), (a)})
#define FBLEND(mask, a, b) ((v8f)(((v8i)(a) & (mask)) | ((v8i)(b) & ~(mask))))
#define FSIGN                                                                           \
    ((v8i){INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, \
           INT32_MIN})

/* tanh of the eight floats at v, in place. Macros and inline code rather
 * than functions taking vectors: a 32-byte vector passed by value would
 * change the ABI between the two copies. */
static inline __attribute__((always_inline)) void tanh8(float *v)
{
    v8f x;
    memcpy(&x, v, sizeof x);
    const v8i sign = (v8i)x & FSIGN;
    const v8f a = (v8f)((v8i)x & ~FSIGN);
    /* small |x|: x + x^3 q(x^2) */
    const v8f z = a * a;
    v8f q = FSPLAT(-5.70498872745e-3f);
    q = q * z + FSPLAT(2.06390887954e-2f);
    q = q * z + FSPLAT(-5.37397155531e-2f);
    q = q * z + FSPLAT(1.33314422036e-1f);
    q = q * z + FSPLAT(-3.33332819422e-1f);
    const v8f small = a + (q * z) * a;
    /* larger |x|: 1 - 2 / (exp(2|x|) + 1), 2|x| clamped to 19 (a NaN takes
     * 19 and is restored below); exp(y) = 2^n p(r), n nearest y / ln 2,
     * r = y - n ln 2 in two parts, p degree 7 */
    v8f y = a + a;
    y = FBLEND((v8i)(y < FSPLAT(19.0f)), y, FSPLAT(19.0f));
    const v8f t = y * FSPLAT(1.44269504088896341f) + FSPLAT(12582912.0f);
    const v8f n = t - FSPLAT(12582912.0f);
    const v8f r = (y - n * FSPLAT(0.693359375f)) - n * FSPLAT(-2.12194440e-4f);
    v8f p = FSPLAT(1.9875691500e-4f);
    p = p * r + FSPLAT(1.3981999507e-3f);
    p = p * r + FSPLAT(8.3334519073e-3f);
    p = p * r + FSPLAT(4.1665795894e-2f);
    p = p * r + FSPLAT(1.6666665459e-1f);
    p = p * r + FSPLAT(5.0000001201e-1f);
    p = (p * (r * r) + r) + FSPLAT(1.0f);
    const v8i two_n = ((v8i)t - (v8i)FSPLAT(12582912.0f) + 127) << 23;
    const v8f e = p * (v8f)two_n;
    const v8f big = FSPLAT(1.0f) - FSPLAT(2.0f) / (e + FSPLAT(1.0f));
    v8f th = FBLEND((v8i)(a < FSPLAT(0.625f)), small, big);
    th = FBLEND((v8i)(a < FSPLAT(0x1p-12f)), a, th);
    th = FBLEND((v8i)(x != x), x, th);
    th = (v8f)((v8i)th | sign);
    memcpy(v, &th, sizeof th);
}

static inline __attribute__((always_inline)) void tanh_run(float *v, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        tanh8(v + i);
    if (i < n) {
        float x[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        memcpy(x, v + i, (size_t)(n - i) * sizeof *v);
        tanh8(x);
        memcpy(v + i, x, (size_t)(n - i) * sizeof *v);
    }
}

/* The dispatch is written out rather than left to target_clones, which
 * clang 14 (the fuzzing build's compiler) does not export under the plain
 * name. */
#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) static void tanh_avx2(float *v, int64_t n)
{
    tanh_run(v, n);
}
#endif

void wl_vmath_tanh(float *v, int64_t n)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx2")) {
        tanh_avx2(v, n);
        return;
    }
#endif
    tanh_run(v, n);
}

/* expf, dtsim's own: glibc 2.36's algorithm (sysdeps/ieee754/flt-32/
 * e_expf.c, as glibc compiles it for CPUs with FMA), written out here with
 * its special cases so that no lane depends on the C library in use:
 * x * 32 / ln 2 = k + r, rounded by adding 1.5 x 2^52; exp(x) = 2^(k/32)
 * (a table of 2^(i/32) with k's bits added into the exponent) times a
 * cubic in r, in double with fused multiply-adds, rounded once to float.
 * Every operation is an IEEE double operation or a fused multiply-add
 * (exact by definition: fma() where the CPU has none), so the bits are
 * the same on every machine; they are glibc 2.36's expf's where glibc
 * runs this copy (x86-64 with FMA and AVX2: all 2^32 floats agree). The
 * special cases are glibc's: -inf gives +0, +inf inf, NaN x + x (quiet);
 * above ln(FLT_MAX) (0x1.62e42ep6) inf, below ln(2^-150) (-0x1.9fe368p6)
 * +0; the rest, subnormal results included, take the main path. Four
 * lanes at a time where the CPU has AVX2 and FMA (a tail is padded), one
 * at a time (wl_vmath_expf1) elsewhere. */
static const uint64_t EXP2F_TAB[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};
#define EXPF_INV_LN2_N 0x40471547652b82fe /* 32 / ln 2 */
#define EXPF_SHIFT 0x4338000000000000     /* 1.5 x 2^52 */
#define EXPF_C0 0x3ebc6af84b912394
#define EXPF_C1 0x3f2ebfce50fac4f3
#define EXPF_C2 0x3f962e42ff0c52d6
#define EXPF_HI 0x1.62e42ep6f  /* above: inf */
#define EXPF_LO -0x1.9fe368p6f /* below: +0 */

static double as_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

float wl_vmath_expf1(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if (((u >> 20) & 0x7ff) >= 0x42a) { /* |x| >= 88 or NaN */
        if (u == 0xff800000u)
            return 0.0f; /* -inf */
        if (((u >> 20) & 0x7ff) >= 0x7f8)
            return x + x; /* inf, NaN */
        if (x > EXPF_HI)
            return INFINITY;
        if (x < EXPF_LO)
            return 0.0f;
    }
    const double xd = x, inv_ln2_n = as_double(EXPF_INV_LN2_N), shift = as_double(EXPF_SHIFT);
    double kd = fma(inv_ln2_n, xd, shift);
    uint64_t ki;
    memcpy(&ki, &kd, sizeof ki);
    kd -= shift;
    const double r = fma(inv_ln2_n, xd, -kd);
    const double s = as_double(EXP2F_TAB[ki % 32] + (ki << 47));
    const double z = fma(as_double(EXPF_C0), r, as_double(EXPF_C1));
    const double r2 = r * r;
    double y = fma(r, as_double(EXPF_C2), 1.0);
    y = fma(z, r2, y);
    return (float)(y * s);
}

#if defined(__x86_64__) || defined(__i386__)
static inline __attribute__((always_inline, target("avx2,fma"))) __m256d
bits_pd(uint64_t u)
{
    return _mm256_castsi256_pd(_mm256_set1_epi64x((long long)u));
}

/* expf of the four floats at v, in place: wl_vmath_expf1's operations on
 * four lanes, the special cases blended in. */
static inline __attribute__((always_inline, target("avx2,fma"))) void expf4(float *v)
{
    const __m256d inv_ln2_n = bits_pd(EXPF_INV_LN2_N), shift = bits_pd(EXPF_SHIFT);
    const __m128 xf = _mm_loadu_ps(v);
    const __m256d xd = _mm256_cvtps_pd(xf);
    __m256d kd = _mm256_fmadd_pd(inv_ln2_n, xd, shift);
    const __m256i ki = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, shift);
    const __m256d r = _mm256_fmsub_pd(inv_ln2_n, xd, kd);
    const __m256i t = _mm256_add_epi64(
        _mm256_i64gather_epi64((const long long *)EXP2F_TAB,
                               _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8),
        _mm256_slli_epi64(ki, 47));
    const __m256d z = _mm256_fmadd_pd(bits_pd(EXPF_C0), r, bits_pd(EXPF_C1));
    const __m256d r2 = _mm256_mul_pd(r, r);
    __m256d y = _mm256_fmadd_pd(r, bits_pd(EXPF_C2), _mm256_set1_pd(1.0));
    y = _mm256_fmadd_pd(z, r2, y);
    __m128 e = _mm256_cvtpd_ps(_mm256_mul_pd(y, _mm256_castsi256_pd(t)));
    /* the special cases only where a lane has |x| >= 88 or is NaN */
    const __m128i top = _mm_and_si128(_mm_srli_epi32(_mm_castps_si128(xf), 20),
                                      _mm_set1_epi32(0x7ff));
    if (_mm_movemask_epi8(_mm_cmpgt_epi32(top, _mm_set1_epi32(0x429)))) {
        e = _mm_blendv_ps(e, _mm_set1_ps(INFINITY), _mm_cmpgt_ps(xf, _mm_set1_ps(EXPF_HI)));
        e = _mm_blendv_ps(e, _mm_setzero_ps(), _mm_cmplt_ps(xf, _mm_set1_ps(EXPF_LO)));
        e = _mm_blendv_ps(e, _mm_add_ps(xf, xf), _mm_cmpunord_ps(xf, xf));
    }
    _mm_storeu_ps(v, e);
}

__attribute__((target("avx2,fma"))) static void expf_fma(float *v, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        expf4(v + i);
    if (i < n) {
        float x[4] = {0, 0, 0, 0};
        memcpy(x, v + i, (size_t)(n - i) * sizeof *v);
        expf4(x);
        memcpy(v + i, x, (size_t)(n - i) * sizeof *v);
    }
}
#endif

void wl_vmath_expf(float *v, int64_t n)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        expf_fma(v, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        v[i] = wl_vmath_expf1(v[i]);
}
