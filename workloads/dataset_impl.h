/* Private glue between the dataset registry (dataset.c) and the dataset
 * kinds (fashion_mnist.c, synthetic.c, libsvm.c, text.c), plus helpers
 * shared by the loaders and their tests; not part of the public contract.
 * A new dataset is one file defining a `const wl_dataset_vt`, its line in
 * meson.build and its line in datasets.def. */
#ifndef DTSIM_WL_DATASET_IMPL_H
#define DTSIM_WL_DATASET_IMPL_H

#include <stdint.h>

#include "sim/err.h"
#include "sim/units.h"
#include "workloads/dataset.h"

/* A dataset with uninitialised train (n_train x dim) and test (n_test x dim)
 * arrays; name is copied (truncated to fit). NULL with SIM_ENOMEM or
 * SIM_ECONFIG (sizes that overflow). Free with wl_dataset_destroy. */
wl_dataset *wl_dataset_alloc(const char *name, int dim, int classes, int64_t n_train,
                             int64_t n_test, sim_err *err);
/* A sparse data set (ds->sparse = 1) with uninitialised CSR arrays for
 * nnz_train and nnz_test entries (row offsets of n + 1 each); x is NULL.
 * Free with wl_dataset_destroy. */
wl_dataset *wl_dataset_alloc_sparse(const char *name, int dim, int classes, int64_t n_train,
                                    int64_t nnz_train, int64_t n_test, int64_t nnz_test,
                                    sim_err *err);
/* Standardises every feature with the training split's mean and population
 * standard deviation, applied to train and test alike. A feature with zero
 * spread in train is only centred. Statistics are accumulated in double.
 * Centring makes rows dense: a sparse data set is densified first
 * (wl_dataset_densify, with its size check). */
int wl_dataset_normalize(wl_dataset *ds, sim_err *err);

/* Reads the whole file into a NUL-terminated malloc'ed buffer (*len bytes
 * before the NUL). SIM_EINPUT naming the file when it cannot be opened or
 * read, SIM_ENOMEM. *text is NULL on error. */
int wl_read_file(const char *path, char **text, size_t *len, sim_err *err);

#endif
