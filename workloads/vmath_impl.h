/* Private: elementwise math over float arrays in a form the compiler
 * vectorizes (GCC vector extensions, no library calls), so that a model's
 * activation costs a few cycles per element rather than a libm call. Each
 * function is exact to the stated bound on every input and gives the same
 * bits on every x86-64 CPU: the arithmetic is IEEE double without fused
 * multiply-adds, whichever instruction set (SSE2 or AVX2) runs it. */
#ifndef DTSIM_WL_VMATH_IMPL_H
#define DTSIM_WL_VMATH_IMPL_H

#include <stdint.h>

/* v[i] = tanh(v[i]) for i < n, within 1 ulp of the true value (the float
 * nearest the double result; the workloads suite checks <= 1 ulp against
 * libm's double tanh on a dense grid). tanh(+-0) = +-0, tanh(+-inf) =
 * +-1, NaN stays NaN. */
void wl_vmath_tanh(float *v, int64_t n);

#endif
