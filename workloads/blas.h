/* One BLAS kernel everywhere. OpenBLAS built with DYNAMIC_ARCH picks its
 * kernel by CPU when the library loads, and different kernels sum in a
 * different order, so a chaotic run's losses would depend on the machine.
 * dtsim pins the AVX2 kernel ("Haswell") on every x86-64 CPU that has
 * AVX2 and FMA: wl_blas_pin sets OPENBLAS_CORETYPE and re-executes the
 * program once (the library has already read the variable by then). dtsim
 * calls it before the commands that compute with the BLAS, the benchmarks
 * first in main, the test executables from a constructor
 * (tests/common.c). DTSIM_BLAS=native opts out (for speed on a CPU whose
 * own kernel is faster); a CPU without AVX2 keeps OpenBLAS's own choice.
 * Either is recorded: wl_blas_describe names the kernel in use, the
 * OpenBLAS version and whether it is the pinned one. */
#ifndef DTSIM_WORKLOADS_BLAS_H
#define DTSIM_WORKLOADS_BLAS_H

#include <stddef.h>

/* The kernel dtsim pins ("Haswell"). */
#define WL_BLAS_KERNEL "Haswell"

/* Pins the kernel: when DTSIM_BLAS is not "native", the CPU has AVX2 and
 * FMA and OPENBLAS_CORETYPE is not already WL_BLAS_KERNEL, sets it and
 * execv's /proc/self/exe with argv (does not return on success). Returns
 * 0 when nothing had to be done, -1 when the re-execution failed (the run
 * goes on with OpenBLAS's own kernel, which wl_blas_describe records). */
int wl_blas_pin(char **argv);

/* "OpenBLAS 0.3.21 Haswell (pinned)", "... Zen (native: DTSIM_BLAS=native)",
 * "... Sandybridge (not pinned: no AVX2)" or "... (not pinned)". */
void wl_blas_describe(char *buf, size_t len);

/* 1 when the kernel in use is the pinned one. */
int wl_blas_pinned(void);

/* The CPU's model name (/proc/cpuinfo), or "unknown". */
void wl_cpu_model(char *buf, size_t len);

#endif
