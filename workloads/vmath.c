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

#include <stdint.h>
#include <string.h>

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
