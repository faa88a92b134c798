/* Elementwise math the compiler vectorizes (vmath_impl.h).
 *
 * tanh, in float, eight lanes: |x| < 2^-12 gives x; |x| < 0.625 gives
 * x + x^3 q(x^2) (q degree 4, Cephes tanhf); above, 1 - 2 / (e + 1) with
 * e = exp(2|x|), 2|x| clamped to 19 (tanh rounds to 1 from 9.01), exp as
 * 2^n p(r), r = 2|x| - n ln 2 in two parts, p the Cephes expf polynomial.
 * No fused multiply-adds, so the SSE2 copy (two 128-bit halves) and the
 * AVX2 copy give the same bits. Checked on every float in [2^-12, 10]
 * (the rest is x, +-1 or NaN): within 1 ulp of libm's double tanh
 * rounded to float. A tail of fewer than eight is padded. */
#include "workloads/vmath_impl.h"

#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));

#define FSPLAT(a) ((v8f){(a), (a), (a), (a), (a), (a), (a), (a)})
#define FBLEND(mask, a, b) ((v8f)(((v8i)(a) & (mask)) | ((v8i)(b) & ~(mask))))
#define FSIGN ((v8i){INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN})

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
