/* Datasets held in memory as row-major float32 features, or (LIBSVM files)
 * as sparse rows in CSR form, which models with sparse kernels (linreg,
 * logreg, softmax) train on directly; wl_dataset_densify makes the dense
 * copy the other models need, after checking its size. Classification
 * labels are class indices (0..classes-1) stored in `y` as exact floats;
 * regression targets are stored in `y` as given. Loaders reject truncated,
 * malformed or empty input with SIM_EINPUT naming the file and the line or
 * byte offset. */
#ifndef DTSIM_WL_DATASET_H
#define DTSIM_WL_DATASET_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

#include "sim/err.h"

/* Sparse rows (compressed sparse row): the entries of row i are
 * col[k], val[k] for k in [row[i], row[i + 1]), 0-based feature indices in
 * increasing order, only non-zero values stored. */
typedef struct wl_csr {
    int64_t *row;     /* n + 1 offsets into col and val */
    int32_t *col;
    float *val;
} wl_csr;

typedef struct wl_split {
    int64_t n;        /* samples */
    float *x;         /* n x dim, row-major; NULL in a sparse data set */
    float *y;         /* n labels (class index) or targets */
    wl_csr csr;       /* a sparse data set's rows; all NULL in a dense one */
} wl_split;

typedef struct wl_dataset {
    char name[64];
    int dim;          /* features per sample */
    int sparse;       /* 1: rows in train.csr / test.csr (x NULL), 0: dense x */
    int classes;      /* 0 = regression, 2 = binary, >2 multiclass */
    wl_split train;
    wl_split test;    /* may be held out from train by test_fraction */
    /* image geometry when known (fashion_mnist: 1 x 28 x 28), else 0 */
    int channels, height, width;
    /* text datasets: characters of context per sample (= dim; x holds the
     * ids of the previous characters as floats, y the id of the next);
     * vocab[id] is the byte of each id (classes of them). 0 otherwise. */
    int context;
    unsigned char vocab[256];
} wl_dataset;

/* Context length of text(FILE) when none is given; charlm's default k. */
#define WL_TEXT_DEFAULT_CONTEXT 8

typedef struct wl_dataset_opts {
    const char *spec;        /* "fashion_mnist", "synthetic_linear(20, 1000)", ... */
    double test_fraction;    /* held out when the dataset has no test split */
    int normalize;           /* 0 none, 1 standard (train mean/std, applied to both) */
    gsl_rng *rng;            /* data stream: synthetic generation and hold-out shuffle */
    const char *data_dir;    /* fashion_mnist directory; NULL = DTSIM_FASHION_MNIST_DIR
                                env or /usr/share/datasets/fashion-mnist */
    const char *dir;         /* folder the spec's file names resolve against (the
                                experiment file's, sim/path.h); NULL = the current one */
} wl_dataset_opts;

struct sim_spec; /* sim/units.h: a spec split into name and arguments */

/* A dataset kind: one const vtable in the kind's own file, one line in
 * datasets.def (from which wl_dataset_registry is generated). */
typedef struct wl_dataset_vt {
    const char *name;     /* spec name, e.g. "blobs" */
    const char *args;     /* e.g. "" or "(classes, d, n)" */
    const char *summary;
    /* Checks sp's arguments (SIM_ECONFIG naming opts->spec) and builds the
     * dataset, drawing from opts->rng if it needs randomness. The generic
     * part (name = opts->spec, hold-out, normalisation) is done by
     * wl_dataset_create afterwards. */
    wl_dataset *(*create)(const struct sim_spec *sp, const wl_dataset_opts *opts,
                          sim_err *err);
} wl_dataset_vt;

extern const wl_dataset_vt *const wl_dataset_registry[]; /* NULL-terminated */

/* The registered kind called name, or NULL. */
const wl_dataset_vt *wl_dataset_find(const char *name);

/* Builds the dataset named by opts->spec. SIM_ECONFIG for a bad spec,
 * SIM_EINPUT for missing or bad files (for fashion_mnist the message names
 * the Debian package dataset-fashion-mnist). */
wl_dataset *wl_dataset_create(const wl_dataset_opts *opts, sim_err *err);
void wl_dataset_destroy(wl_dataset *ds);

/* Values a dense copy of a data set may hold (samples of both splits x
 * features): 2^28, 1 GiB of floats. */
#define WL_DENSE_MAX_VALUES (INT64_C(1) << 28)

/* 0 when a dense copy of ds (dense already, or within WL_DENSE_MAX_VALUES)
 * is possible, else SIM_EINPUT with a message naming the data set (its
 * spec names the file), the sizes and `why` (who needs the copy). */
int wl_dataset_dense_check(const wl_dataset *ds, const char *why, sim_err *err);
/* Replaces a sparse data set's rows by dense ones (no-op when dense); the
 * size is checked first (wl_dataset_dense_check). SIM_ENOMEM leaves ds
 * sparse and usable. */
int wl_dataset_densify(wl_dataset *ds, const char *why, sim_err *err);
/* Row i of split s of ds as dim dense floats into out (either storage). */
void wl_split_row(const wl_dataset *ds, const wl_split *s, int64_t i, float *out);
/* Stored entries of split s (non-zeros when sparse, n x dim when dense). */
int64_t wl_split_entries(const wl_dataset *ds, const wl_split *s);

/* Individual generators/loaders (used by the registered kinds and tests). */
/* synthetic_linear(d, n): x ~ N(0, I_d), y = w*.x + b* + 0.1 N(0,1) with
 * w* ~ N(0, I/d), b* = 0.5; n training samples plus a test set of
 * max(1, round(n * test_fraction)) more drawn the same way. */
wl_dataset *wl_dataset_synthetic_linear(int d, int64_t n, double test_fraction,
                                        gsl_rng *rng, sim_err *err);
/* blobs(classes, d, n): class centres ~ N(0, 4 I_d), samples = centre +
 * N(0, I_d), balanced labels; test set drawn the same way. */
wl_dataset *wl_dataset_blobs(int classes, int d, int64_t n, double test_fraction,
                             gsl_rng *rng, sim_err *err);
/* libsvm(TRAIN[, TEST]): LIBSVM text, one sample per line,
 * "label idx:val idx:val ..." with 1-based increasing indices (absent =
 * 0), or a dense row "label v1 v2 ..."; dim = the largest index over both
 * files. Labels all in {-1, +1} or all in {0, 1}: binary (classes 2, -1 and
 * 0 -> 0, +1 -> 1); else all integers with 2..1000 distinct values:
 * classes = that count, mapped to 0..C-1 in increasing order; else
 * regression (classes 0). test_path may be NULL (test split empty). Every
 * line must end with a newline; errors name FILE:LINE. The rows are kept
 * sparse (ds->sparse = 1, only non-zero values), so memory follows the
 * files' sizes, not samples x dim (dim at most 10^7). */
wl_dataset *wl_dataset_libsvm(const char *train_path, const char *test_path, sim_err *err);
/* text(FILE[, k]): byte-level vocabulary = the distinct bytes of the file,
 * sorted; one sample per position i >= k: x = ids of bytes i-k..i-1, y = id
 * of byte i. Test split empty (see wl_dataset_holdout). */
wl_dataset *wl_dataset_text(const char *path, int k, sim_err *err);
/* Moves a random fraction (round(n * fraction), at least 1 when fraction >
 * 0, at most n - 1) of train into test, both kept in file order; the choice
 * is a shuffle drawn from rng. Used by wl_dataset_create when a dataset has
 * no test part and test_fraction > 0. Sparse rows stay sparse. */
int wl_dataset_holdout(wl_dataset *ds, double fraction, gsl_rng *rng, sim_err *err);
/* Cross-entropy (nats) on the test split (train when test is empty) of the
 * unigram model fitted on the train labels with add-one smoothing: the
 * baseline a next-character model must beat. NAN for regression. */
double wl_dataset_unigram_loss(const wl_dataset *ds);

/* The gzip IDX files in dir (train-images-idx3-ubyte.gz, ...), pixels / 255. */
wl_dataset *wl_dataset_fashion_mnist(const char *dir, sim_err *err);

#endif
