/* The memory an experiment needs, estimated before its data set and
 * workers are built, so that an oversized configuration is refused up
 * front (exit 2) with the keys that size it and the estimate, instead of
 * running out of memory. The logical graph is estimated by the topology
 * layer (topology/graph_size.h); mixing matrices are sparse rows (their
 * entries counted with the graph's edges; a dense n x n matrix is only
 * made for lambda up to 2048 nodes, 32 MB). */
#ifndef DTSIM_EXPERIMENT_MEMORY_H
#define DTSIM_EXPERIMENT_MEMORY_H

#include <stdint.h>

#include "config/config.h"

/* The workers' models: count x n_params x XP_MODEL_COPIES floats. */
#define XP_MODEL_COPIES 4 /* model, gradient, and two of the method's (momentum, residual) */
double xp_memory_workers(const cfg_config *cfg, int64_t n_params);
/* Bytes of a generated data set (blobs(classes, d, n), synthetic_linear(d,
 * n): n x (d + 1) floats) known from its spec before it is drawn, with its
 * sample count and dimension; 0 for the others (files, fashion_mnist). */
double xp_memory_dataset(const cfg_config *cfg, double *samples, double *dim);
/* 0, or SIM_ECONFIG naming [workload] dataset when the data set alone
 * exceeds sim_memory_limit(); made before the data set is drawn. */
int xp_memory_check_dataset(const cfg_config *cfg, sim_err *err);
/* Address space the run maps after the check: per gradient thread
 * OpenBLAS 0.3.21's buffer (BUFFER_SIZE, 128 MiB on x86-64, mapped at the
 * thread's first level-3 call; the one OpenBLAS maps when it loads is
 * already counted in VmSize), per pool thread its stack (8 MiB), and a
 * margin for the rest of the run (database, metrics). Measured on a
 * 4-worker blobs run: 242.6 MB mapped at the check, 514.0 MB at the peak
 * with 2 threads (+271 MB: 2 buffers, a stack and 7 MB). */
#define XP_MEMORY_BLAS_BUFFER (128LL << 20)
#define XP_MEMORY_THREAD_STACK (8LL << 20)
#define XP_MEMORY_AS_MARGIN (16LL << 20)
/* 0, or SIM_ECONFIG naming [workload] model and [workers] count (and the
 * data set when it counts) when models and data exceed sim_memory_limit(),
 * or when the rest of the run, on threads gradient threads, cannot be
 * mapped under the address-space limit (RLIMIT_AS); SIM_EUSAGE for a bad
 * DTSIM_MAX_MEMORY. Made after the data set and the model are built and
 * before any BLAS call. */
int xp_memory_check(const cfg_config *cfg, int64_t n_params, int threads, sim_err *err);

#endif
