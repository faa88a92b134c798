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
/* 0, or SIM_ECONFIG naming [workload] model and [workers] count (and the
 * data set when it counts) when models and data exceed sim_memory_limit(). */
int xp_memory_check(const cfg_config *cfg, int64_t n_params, sim_err *err);

#endif
