/* LIBSVM text loader. Each file is read whole and parsed twice: a first
 * pass validates every line and finds the sample count, the non-zero
 * count, the largest index and the labels; the second fills the sparse
 * rows (CSR: only non-zero values, so the data set takes about the memory
 * its file does, whatever the largest index). Nothing is skipped:
 * an empty line, a bad number, an index that is not increasing, a line
 * mixing sparse and dense entries, a dense row of another width or a last
 * line without its newline (a truncated file) is an error naming FILE:LINE.
 * Label mapping is decided over both files together (see dataset.h). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/path.h"
#include "workloads/dataset.h"
#include "workloads/dataset_impl.h"

#define SVM_MAX_DIM 10000000
#define SVM_MAX_CLASSES 1000

typedef struct svm_file {
    const char *path;
    char *text;
    size_t len;
    int64_t n;          /* samples (lines) */
    int64_t nnz;        /* non-zero values, from the first pass */
    double *label;      /* n raw labels, from the first pass */
} svm_file;

typedef struct svm_shape {
    int64_t max_index;  /* largest sparse index seen */
    int64_t dense;      /* width of dense rows, -1 before the first */
} svm_shape;

/* Where pass 2 writes: the next entry of the CSR arrays. */
typedef struct svm_out {
    int32_t *col;
    float *val;
    int64_t k;
} svm_out;

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static int ends_token(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0';
}

/* A number starting right at p and ending at a token end, finite as a
 * float (labels, targets and values are stored as floats: 1e42 would become
 * inf, and converting it is undefined); *next gets the character after it. */
static int number_at(const char *p, double *v, const char **next)
{
    char *e;
    if (ends_token(*p))
        return -1;
    errno = 0;
    *v = strtod(p, &e);
    if (e == p || !ends_token(*e) || !isfinite(*v) || fabs(*v) > FLT_MAX)
        return -1;
    *next = e;
    return 0;
}

/* Parses one line [p, eol), adding its non-zero values to *nnz. Appends
 * them to out when out is set. Returns 0 or SIM_EINPUT. */
static int parse_line(const svm_file *f, int64_t lineno, const char *p, const char *eol,
                      double *label, svm_shape *shape, int64_t *nnz, svm_out *out,
                      sim_err *err)
{
    while (p < eol && is_blank(*p))
        p++;
    if (p == eol || (*p == '\r' && p + 1 == eol))
        return sim_err_set(err, SIM_EINPUT, "%s:%lld: empty line (every line is a sample)",
                           f->path, (long long)lineno);
    const char *tok = p;
    if (number_at(p, label, &p) != 0)
        return sim_err_set(err, SIM_EINPUT, "%s:%lld: expected a numeric label, got '%.*s'",
                           f->path, (long long)lineno, (int)strcspn(tok, " \t\r\n"), tok);
    int sparse = -1;
    int64_t last = 0, count = 0;
    for (;;) {
        while (p < eol && is_blank(*p))
            p++;
        if (p == eol || (*p == '\r' && p + 1 == eol))
            break;
        tok = p;
        int tlen = (int)strcspn(tok, " \t\r\n");
        const char *colon = memchr(tok, ':', (size_t)tlen);
        if (sparse == -1)
            sparse = colon != NULL;
        if ((colon != NULL) != sparse)
            return sim_err_set(err, SIM_EINPUT,
                               "%s:%lld: '%.*s' mixes dense values and idx:value pairs in "
                               "one line",
                               f->path, (long long)lineno, tlen, tok);
        double v;
        int64_t idx;
        if (sparse) {
            char *e;
            errno = 0;
            long long li = strtoll(tok, &e, 10);
            if (e != colon || errno != 0 || li < 1 || li > SVM_MAX_DIM)
                return sim_err_set(err, SIM_EINPUT,
                                   "%s:%lld: '%.*s': expected index:value with an index in "
                                   "1..%d",
                                   f->path, (long long)lineno, tlen, tok, SVM_MAX_DIM);
            idx = li;
            if (idx <= last)
                return sim_err_set(err, SIM_EINPUT,
                                   "%s:%lld: index %lld after %lld: indices must increase",
                                   f->path, (long long)lineno, (long long)idx,
                                   (long long)last);
            if (number_at(colon + 1, &v, &p) != 0)
                return sim_err_set(err, SIM_EINPUT,
                                   "%s:%lld: '%.*s': expected a finite value after ':' (at most "
                                   "3.4e38 in magnitude)",
                                   f->path, (long long)lineno, tlen, tok);
        } else {
            idx = count + 1;
            if (idx > SVM_MAX_DIM || number_at(tok, &v, &p) != 0)
                return sim_err_set(err, SIM_EINPUT, "%s:%lld: '%.*s': expected a number",
                                   f->path, (long long)lineno, tlen, tok);
        }
        last = idx;
        count++;
        if ((float)v != 0) {
            if (out) {
                out->col[out->k] = (int32_t)(idx - 1);
                out->val[out->k++] = (float)v;
            }
            (*nnz)++;
        }
    }
    if (sparse == 1 && last > shape->max_index)
        shape->max_index = last;
    if (sparse == 0) {
        if (shape->dense >= 0 && count != shape->dense)
            return sim_err_set(err, SIM_EINPUT,
                               "%s:%lld: dense row of %lld values, earlier rows have %lld",
                               f->path, (long long)lineno, (long long)count,
                               (long long)shape->dense);
        shape->dense = count;
    }
    return 0;
}

/* Walks every line of f; pass 1 (csr NULL) stores labels and counts, and
 * grows the shape, pass 2 writes the rows into csr (f->nnz entries). */
static int parse_file(svm_file *f, svm_shape *shape, wl_csr *csr, sim_err *err)
{
    const char *p = f->text, *end = f->text + f->len;
    int64_t lineno = 0, n = 0, nnz = 0;
    svm_out out = {csr ? csr->col : NULL, csr ? csr->val : NULL, 0};
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        lineno++;
        if (!eol)
            return sim_err_set(err, SIM_EINPUT,
                               "%s:%lld: truncated: the last line has no newline", f->path,
                               (long long)lineno);
        double label;
        int rc = parse_line(f, lineno, p, eol, &label, shape, &nnz, csr ? &out : NULL, err);
        if (rc != 0)
            return rc;
        if (csr)
            csr->row[n + 1] = out.k;
        else
            f->label[n] = label;
        n++;
        p = eol + 1;
    }
    f->n = n;
    f->nnz = nnz;
    return 0;
}

static int load(svm_file *f, const char *path, svm_shape *shape, sim_err *err)
{
    f->path = path;
    int rc = wl_read_file(path, &f->text, &f->len, err);
    if (rc != 0)
        return rc;
    if (f->len == 0)
        return sim_err_set(err, SIM_EINPUT, "%s: empty file (no samples)", path);
    size_t lines = 0;
    for (size_t i = 0; i < f->len; i++)
        lines += f->text[i] == '\n';
    f->label = malloc((lines + 1) * sizeof *f->label);
    if (!f->label)
        return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
    return parse_file(f, shape, NULL, err);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { LABEL_REGRESSION, LABEL_BINARY, LABEL_CLASSES };

/* Decides the label kind over all labels of both files. For
 * LABEL_CLASSES, values[0..*classes-1] gets the sorted distinct labels. */
static int label_kind(const svm_file *fs, int nf, double *values, int *classes)
{
    int pm = 1, zo = 1, integral = 1;
    int64_t total = 0;
    for (int k = 0; k < nf; k++)
        for (int64_t i = 0; i < fs[k].n; i++) {
            double l = fs[k].label[i];
            pm &= l == -1 || l == 1;
            zo &= l == 0 || l == 1;
            integral &= l == floor(l) && fabs(l) < 1e9;
            values[total++] = l;
        }
    *classes = 0;
    if (pm || zo) {
        *classes = 2;
        return LABEL_BINARY;
    }
    if (!integral)
        return LABEL_REGRESSION;
    qsort(values, (size_t)total, sizeof *values, cmp_double);
    int64_t distinct = 0;
    for (int64_t i = 0; i < total; i++)
        if (i == 0 || values[i] != values[distinct - 1]) {
            if (distinct >= SVM_MAX_CLASSES)
                return LABEL_REGRESSION;
            values[distinct++] = values[i];
        }
    if (distinct < 2)
        return LABEL_REGRESSION;
    *classes = (int)distinct;
    return LABEL_CLASSES;
}

/* The class index of label l in the sorted table (l is present). */
static float class_of(double l, const double *values, int classes)
{
    int lo = 0, hi = classes - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (values[mid] < l)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (float)lo;
}

wl_dataset *wl_dataset_libsvm(const char *train_path, const char *test_path, sim_err *err)
{
    svm_file fs[2];
    memset(fs, 0, sizeof fs);
    svm_shape shape = {0, -1};
    wl_dataset *ds = NULL;
    double *values = NULL;
    const int nf = test_path ? 2 : 1;
    const char *paths[2] = {train_path, test_path};
    for (int k = 0; k < nf; k++)
        if (load(&fs[k], paths[k], &shape, err) != 0)
            goto done;
    int64_t dim = shape.max_index > shape.dense ? shape.max_index : shape.dense;
    if (dim < 1) {
        sim_err_set(err, SIM_EINPUT, "%s: no features on any line", train_path);
        goto done;
    }
    const int64_t n_all = fs[0].n + fs[1].n;
    values = malloc((size_t)(n_all + 1) * sizeof *values);
    if (!values) {
        sim_err_set(err, SIM_ENOMEM, "%s: out of memory", train_path);
        goto done;
    }
    int classes;
    int kind = label_kind(fs, nf, values, &classes);
    ds = wl_dataset_alloc_sparse("libsvm", (int)dim, classes, fs[0].n, fs[0].nnz, fs[1].n,
                                 fs[1].nnz, err);
    if (!ds)
        goto done;
    wl_split *splits[2] = {&ds->train, &ds->test};
    for (int k = 0; k < nf; k++) {
        svm_shape again = {0, -1};
        if (parse_file(&fs[k], &again, &splits[k]->csr, err) != 0) {
            wl_dataset_destroy(ds);
            ds = NULL;
            goto done;
        }
        for (int64_t i = 0; i < fs[k].n; i++) {
            double l = fs[k].label[i];
            splits[k]->y[i] = kind == LABEL_BINARY    ? (l > 0 ? 1.0f : 0.0f)
                              : kind == LABEL_CLASSES ? class_of(l, values, classes)
                                                      : (float)l;
        }
    }
done:
    for (int k = 0; k < 2; k++) {
        free(fs[k].text);
        free(fs[k].label);
    }
    free(values);
    return ds;
}

static wl_dataset *libsvm_create(const sim_spec *sp, const wl_dataset_opts *opts, sim_err *err)
{
    if (sp->nargs < 1 || sp->nargs > 2 || !sp->args[0][0] ||
        (sp->nargs == 2 && !sp->args[1][0])) {
        sim_err_set(err, SIM_ECONFIG, "dataset '%s': expected libsvm(TRAIN[, TEST])",
                    opts->spec);
        return NULL;
    }
    char train[SIM_PATH_MAX], test[SIM_PATH_MAX];
    if (sim_path_resolve(opts->dir, sp->args[0], train, sizeof train, err) ||
        (sp->nargs == 2 && sim_path_resolve(opts->dir, sp->args[1], test, sizeof test, err)))
        return NULL;
    return wl_dataset_libsvm(train, sp->nargs == 2 ? test : NULL, err);
}

const wl_dataset_vt wl_dataset_libsvm_vt = {
    .name = "libsvm",
    .args = "(TRAIN[, TEST])",
    .summary =
        "LIBSVM text (sparse idx:val or dense rows); regression, binary or multiclass labels",
    .create = libsvm_create,
};
