/* Private: elementwise math over float arrays in vectorised form, so that
 * a model's activation or softmax costs a few cycles per element rather
 * than a libm call. tanh is dtsim's own, exact to the stated bound on
 * every input and the same bits on every x86-64 CPU (IEEE float without
 * fused multiply-adds, whichever instruction set, SSE2 or AVX2, runs it);
 * expf gives the C library's bits (below). */
#ifndef DTSIM_WL_VMATH_IMPL_H
#define DTSIM_WL_VMATH_IMPL_H

#include <stdint.h>

/* v[i] = tanh(v[i]) for i < n: the correctly rounded float or one of its
 * two neighbours (one float away on 1.7% of a grid of [-12, 12]; checked
 * on all 2^32 floats when written, the workloads suite checks a dense
 * grid). tanh(+-0) = +-0, tanh(+-inf) = +-1, NaN stays NaN. */
void wl_vmath_tanh(float *v, int64_t n);

/* v[i] = expf(v[i]) for i < n, with the bits of the C library's expf
 * (glibc's algorithm, vectorised where the CPU has FMA and AVX2, the copy
 * glibc itself runs there; elsewhere expf is called): unlike tanh above,
 * the contract is "the same as expf", so that the softmax models keep
 * their results. */
void wl_vmath_expf(float *v, int64_t n);

#endif
