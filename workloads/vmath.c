/* Elementwise math the compiler vectorizes (vmath_impl.h).
 *
 * tanh: for |x| < 2^-12 the float nearest tanh(x) is x itself (the cubic
 * term is below a quarter ulp). Otherwise, in double, e = exp(2|x|) with
 * 2|x| clamped to 40 (tanh(20) rounds to 1), tanh|x| = (e - 1) / (e + 1),
 * rounded once to float and given x's sign. exp(y) = 2^n p(r) with n the
 * nearest integer to y / ln 2 (added to 1.5 x 2^52 so that its bits hold
 * n), r = y - n ln 2 in two parts (|r| <= ln 2 / 2) and p the degree-11
 * Taylor polynomial of e^r, relative error < 1e-14 for |r| <= ln 2 / 2;
 * (e - 1) then loses at most log2(1 / (2|x|)) <= 11 bits of double to
 * cancellation, leaving the double quotient within 1e-10 relative, far
 * inside half a float ulp, so the float result is within 1 ulp (almost
 * always the nearest float).
 *
 * Four lanes of double per step; on a CPU with AVX2 the same code runs in
 * one 256-bit register (a copy compiled for AVX2 without FMA, so its bits
 * are the SSE2 copy's). A tail of fewer than four is padded. */
#include "workloads/vmath_impl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

typedef double v4d __attribute__((vector_size(32)));
typedef long long v4i __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

#define LN2_HI 6.93147180369123816490e-01 /* high bits of ln 2, n * LN2_HI exact */
#define LN2_LO 1.90821492927058770002e-10
#define INV_LN2 1.44269504088896338700e+00
#define SHIFT 6755399441055744.0 /* 1.5 x 2^52 */
#define SIGN_BIT INT64_MIN

/* Macros rather than functions: a 32-byte vector passed or returned by
 * value would change the ABI between the two copies. */
#define SPLAT(a) ((v4d){(a), (a), (a), (a)})
#define BLEND(mask, a, b) ((v4d)(((v4i)(a) & (mask)) | ((v4i)(b) & ~(mask))))

/* tanh of the four floats at v, in place. */
static inline __attribute__((always_inline)) void tanh4(float *v)
{
    v4f xf;
    memcpy(&xf, v, sizeof xf);
    const v4d x = __builtin_convertvector(xf, v4d);
    const v4i sign = (v4i)x & SIGN_BIT;
    const v4d a = (v4d)((v4i)x & ~SIGN_BIT);
    /* y = min(2|x|, 40); a NaN takes 40 here and is restored below */
    v4d y = a + a;
    y = BLEND(y < SPLAT(40.0), y, SPLAT(40.0));
    const v4d t = y * SPLAT(INV_LN2) + SPLAT(SHIFT);
    const v4d n = t - SPLAT(SHIFT);
    const v4d r = (y - n * SPLAT(LN2_HI)) - n * SPLAT(LN2_LO);
    v4d p = SPLAT(1.0 / 39916800.0); /* 1/11! */
    p = p * r + SPLAT(1.0 / 3628800.0);
    p = p * r + SPLAT(1.0 / 362880.0);
    p = p * r + SPLAT(1.0 / 40320.0);
    p = p * r + SPLAT(1.0 / 5040.0);
    p = p * r + SPLAT(1.0 / 720.0);
    p = p * r + SPLAT(1.0 / 120.0);
    p = p * r + SPLAT(1.0 / 24.0);
    p = p * r + SPLAT(1.0 / 6.0);
    p = p * r + SPLAT(0.5);
    p = p * r + SPLAT(1.0);
    p = p * r + SPLAT(1.0);
    /* 2^n from n's bits in t: (n + 1023) << 52 */
    const v4i two_n = (((v4i)t - (v4i)SPLAT(SHIFT)) + 1023) << 52;
    const v4d e = p * (v4d)two_n;
    v4d th = (e - SPLAT(1.0)) / (e + SPLAT(1.0));
    th = BLEND(a < SPLAT(0x1p-12), a, th);
    th = BLEND(x != x, x, th);
    th = (v4d)((v4i)th | sign);
    xf = __builtin_convertvector(th, v4f);
    memcpy(v, &xf, sizeof xf);
}

static inline __attribute__((always_inline)) void tanh_run(float *v, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        tanh4(v + i);
    if (i < n) {
        float x[4] = {0, 0, 0, 0};
        memcpy(x, v + i, (size_t)(n - i) * sizeof *v);
        tanh4(x);
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

/* expf, four lanes at a time, as the C library computes it (glibc 2.36's
 * expf, sysdeps/ieee754/flt-32/e_expf.c, in the copy glibc itself selects
 * on a CPU with FMA and AVX2): x * 32 / ln 2 = k + r, rounded by adding
 * 1.5 x 2^52; exp(x) = 2^(k/32) (a table of 2^(i/32) with k's bits added
 * into the exponent) times a cubic in r, in double with the same fused
 * multiply-adds in the same order, rounded once to float. So each lane's
 * bits are those of expf(x) (the workloads suite compares the two on
 * every float of [-104, 89] and on the special values). Lanes with |x| >=
 * 88 or NaN (glibc's special cases) and CPUs without FMA and AVX2 call
 * expf itself. */
#if defined(__x86_64__) || defined(__i386__)
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

static inline __attribute__((always_inline, target("avx2,fma"))) __m256d
bits_pd(uint64_t u)
{
    return _mm256_castsi256_pd(_mm256_set1_epi64x((long long)u));
}

__attribute__((target("avx2,fma"))) static void expf_fma(float *v, int64_t n)
{
    const __m256d inv_ln2_n = bits_pd(0x40471547652b82fe); /* 32 / ln 2 */
    const __m256d shift = bits_pd(0x4338000000000000);     /* 1.5 x 2^52 */
    const __m256d c0 = bits_pd(0x3ebc6af84b912394), c1 = bits_pd(0x3f2ebfce50fac4f3);
    const __m256d c2 = bits_pd(0x3f962e42ff0c52d6), one = _mm256_set1_pd(1.0);
    const __m128i top_mask = _mm_set1_epi32(0x7ff), top_88 = _mm_set1_epi32(0x42a);
    const __m256i idx_mask = _mm256_set1_epi64x(31);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m128 xf = _mm_loadu_ps(v + i);
        const __m128i top = _mm_and_si128(_mm_srli_epi32(_mm_castps_si128(xf), 20), top_mask);
        if (_mm_movemask_epi8(_mm_cmpgt_epi32(top, top_88))) {
            for (int k = 0; k < 4; k++)
                v[i + k] = expf(v[i + k]);
            continue;
        }
        const __m256d xd = _mm256_cvtps_pd(xf);
        __m256d kd = _mm256_fmadd_pd(inv_ln2_n, xd, shift);
        const __m256i ki = _mm256_castpd_si256(kd);
        kd = _mm256_sub_pd(kd, shift);
        const __m256d r = _mm256_fmsub_pd(inv_ln2_n, xd, kd);
        const __m256i t = _mm256_add_epi64(
            _mm256_i64gather_epi64((const long long *)EXP2F_TAB, _mm256_and_si256(ki, idx_mask),
                                   8),
            _mm256_slli_epi64(ki, 47));
        const __m256d z = _mm256_fmadd_pd(c0, r, c1);
        const __m256d r2 = _mm256_mul_pd(r, r);
        __m256d y = _mm256_fmadd_pd(r, c2, one);
        y = _mm256_fmadd_pd(z, r2, y);
        y = _mm256_mul_pd(y, _mm256_castsi256_pd(t));
        _mm_storeu_ps(v + i, _mm256_cvtpd_ps(y));
    }
    for (; i < n; i++)
        v[i] = expf(v[i]);
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
        v[i] = expf(v[i]);
}
