/* Private: elementwise math over float arrays in vectorised form, so that
 * a model's activation or softmax costs a few cycles per element rather
 * than a libm call. tanh is dtsim's own, exact to the stated bound on
 * every input and the same bits on every x86-64 CPU (IEEE float without
 * fused multiply-adds, whichever instruction set, SSE2 or AVX2, runs it);
 * expf is dtsim's own too (glibc 2.36's algorithm with its special cases,
 * below), the same bits on every machine whatever C library it has. */
#ifndef DTSIM_WL_VMATH_IMPL_H
#define DTSIM_WL_VMATH_IMPL_H

#include <stdint.h>

/* v[i] = tanh(v[i]) for i < n: the correctly rounded float or one of its
 * two neighbours (one float away on 1.7% of a grid of [-12, 12]; checked
 * on all 2^32 floats when written, the workloads suite checks a dense
 * grid). tanh(+-0) = +-0, tanh(+-inf) = +-1, NaN stays NaN. */
void wl_vmath_tanh(float *v, int64_t n);

/* v[i] = exp(v[i]) for i < n: glibc 2.36's expf algorithm and special
 * cases, computed by dtsim (IEEE double operations and fused
 * multiply-adds, four lanes at a time where the CPU has AVX2 and FMA,
 * else wl_vmath_expf1), so the bits do not depend on the C library; they
 * are those of glibc 2.36's expf on x86-64 with FMA (so the softmax
 * models kept their results): exp correctly rounded or one float off
 * (glibc's bound, 0.502 ulp). */
void wl_vmath_expf(float *v, int64_t n);

/* The same algorithm on one float, the same bits as a lane of
 * wl_vmath_expf: what CPUs without AVX2 and FMA run (fma() is exact on
 * every machine, in hardware or not). */
float wl_vmath_expf1(float x);

#endif
