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

/* The decoded-data cache (dataset_cache.c; docs/models-and-data.md): a
 * loader's decoded bytes kept in one file per set of source files, valid
 * while every source keeps its size, modification time and CRC-32. */
#define WL_CACHE_MAX_SRC 4
typedef struct wl_cache_stamp {
    uint64_t size;           /* bytes */
    int64_t mtime_s, mtime_ns;
    uint32_t crc, pad;       /* CRC-32 of the file's bytes; pad 0 */
} wl_cache_stamp;
typedef struct wl_cache {
    char path[4096];         /* the cache file */
    int enabled;             /* 0: no cache (off, or a source unreadable) */
    int nsrc;
    wl_cache_stamp src[WL_CACHE_MAX_SRC]; /* the sources, stamped before decoding */
} wl_cache;
/* Stamps the nsrc source files and looks for key's cache of them: 1 with
 * *payload (malloc'ed, *len bytes) when a valid one exists, else 0 (a
 * miss: decode the sources, then wl_cache_store). Never an error. */
int wl_cache_open(wl_cache *c, const char *key, const char *const *src, int nsrc,
                  void **payload, size_t *len);
/* Writes the decoded payload for the sources c stamped (atomically, by a
 * rename); failures leave no cache and are not errors. */
void wl_cache_store(const wl_cache *c, const void *payload, size_t len);

#endif
