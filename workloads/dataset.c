/* The dataset registry and the generic part of dataset construction: parse
 * the spec, find the kind, let it check its arguments and build the data,
 * then name it after the spec, hold out a test split when it has none and
 * standardise. Shared helpers of the kinds: allocation, whole-file reads.
 * Every random draw comes from the caller's data stream in a fixed,
 * documented order, so one seed gives byte-identical data. */
#include "workloads/dataset.h"

#include <errno.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/memory.h"
#include "sim/units.h"
#include "workloads/dataset_impl.h"

#define DTSIM_DATASET(id) extern const wl_dataset_vt wl_dataset_##id##_vt;
#include "workloads/datasets.def"
#undef DTSIM_DATASET

const wl_dataset_vt *const wl_dataset_registry[] = {
#define DTSIM_DATASET(id) &wl_dataset_##id##_vt,
#include "workloads/datasets.def"
#undef DTSIM_DATASET
    NULL,
};

const wl_dataset_vt *wl_dataset_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; wl_dataset_registry[i]; i++)
        if (strcmp(wl_dataset_registry[i]->name, name) == 0)
            return wl_dataset_registry[i];
    return NULL;
}

/* SIM_ECONFIG when a data set's arrays would exceed sim_memory_limit():
 * checked before they are allocated (and before a file's text is read),
 * so that a data set too large for the machine is refused with its size
 * instead of running out of memory halfway through. */
static int samples_check(const char *name, int64_t n, int dim, double need, sim_err *err)
{
    return sim_memory_check(need, SIM_ECONFIG, err, "dataset '%s': %lld samples of %d features",
                            name, (long long)n, dim);
}

wl_dataset *wl_dataset_alloc(const char *name, int dim, int classes, int64_t n_train,
                             int64_t n_test, sim_err *err)
{
    if (dim <= 0 || n_train < 0 || n_test < 0 ||
        n_train > (int64_t)(SIZE_MAX / sizeof(float)) / dim ||
        n_test > (int64_t)(SIZE_MAX / sizeof(float)) / dim) {
        sim_err_set(err, SIM_ECONFIG, "dataset '%s': size %lld x %d is out of range", name,
                    (long long)(n_train + n_test), dim);
        return NULL;
    }
    if (samples_check(name, n_train + n_test, dim,
                      (double)(n_train + n_test) * ((double)dim + 1) * sizeof(float), err))
        return NULL;
    wl_dataset *ds = calloc(1, sizeof *ds);
    if (!ds)
        goto nomem;
    snprintf(ds->name, sizeof ds->name, "%s", name);
    ds->dim = dim;
    ds->classes = classes;
    ds->train.n = n_train;
    ds->test.n = n_test;
    /* at least one element each so that a zero-sample split is a valid pointer */
    ds->train.x = malloc(((size_t)n_train * (size_t)dim + 1) * sizeof(float));
    ds->train.y = malloc(((size_t)n_train + 1) * sizeof(float));
    ds->test.x = malloc(((size_t)n_test * (size_t)dim + 1) * sizeof(float));
    ds->test.y = malloc(((size_t)n_test + 1) * sizeof(float));
    if (!ds->train.x || !ds->train.y || !ds->test.x || !ds->test.y)
        goto nomem;
    return ds;
nomem:
    wl_dataset_destroy(ds);
    sim_err_set(err, SIM_ENOMEM, "dataset '%s': out of memory for %lld samples of %d features",
                name, (long long)(n_train + n_test), dim);
    return NULL;
}

wl_dataset *wl_dataset_alloc_sparse(const char *name, int dim, int classes, int64_t n_train,
                                    int64_t nnz_train, int64_t n_test, int64_t nnz_test,
                                    sim_err *err)
{
    if (dim <= 0 || n_train < 0 || n_test < 0 || nnz_train < 0 || nnz_test < 0 ||
        n_train > INT64_MAX / 16 || n_test > INT64_MAX / 16 || nnz_train > INT64_MAX / 16 ||
        nnz_test > INT64_MAX / 16) {
        sim_err_set(err, SIM_ECONFIG, "dataset '%s': size %lld x %d is out of range", name,
                    (long long)(n_train + n_test), dim);
        return NULL;
    }
    /* a label and a row offset per sample, a column and a value per entry */
    double need = (double)(n_train + n_test) * (sizeof(float) + sizeof(int64_t)) +
                  (double)(nnz_train + nnz_test) * (sizeof(int32_t) + sizeof(float));
    if (samples_check(name, n_train + n_test, dim, need, err))
        return NULL;
    wl_dataset *ds = calloc(1, sizeof *ds);
    if (!ds)
        goto nomem;
    snprintf(ds->name, sizeof ds->name, "%s", name);
    ds->dim = dim;
    ds->classes = classes;
    ds->sparse = 1;
    wl_split *sp[2] = {&ds->train, &ds->test};
    const int64_t n[2] = {n_train, n_test}, nnz[2] = {nnz_train, nnz_test};
    for (int s = 0; s < 2; s++) {
        sp[s]->n = n[s];
        sp[s]->y = malloc(((size_t)n[s] + 1) * sizeof(float));
        sp[s]->csr.row = malloc(((size_t)n[s] + 1) * sizeof(int64_t));
        sp[s]->csr.col = malloc(((size_t)nnz[s] + 1) * sizeof(int32_t));
        sp[s]->csr.val = malloc(((size_t)nnz[s] + 1) * sizeof(float));
        if (!sp[s]->y || !sp[s]->csr.row || !sp[s]->csr.col || !sp[s]->csr.val)
            goto nomem;
        sp[s]->csr.row[0] = 0;
    }
    return ds;
nomem:
    wl_dataset_destroy(ds);
    sim_err_set(err, SIM_ENOMEM,
                "dataset '%s': out of memory for %lld samples with %lld stored values", name,
                (long long)(n_train + n_test), (long long)(nnz_train + nnz_test));
    return NULL;
}

static void csr_free(wl_csr *c)
{
    free(c->row);
    free(c->col);
    free(c->val);
    memset(c, 0, sizeof *c);
}

void wl_dataset_destroy(wl_dataset *ds)
{
    if (!ds)
        return;
    free(ds->train.x);
    free(ds->train.y);
    free(ds->test.x);
    free(ds->test.y);
    csr_free(&ds->train.csr);
    csr_free(&ds->test.csr);
    free(ds);
}

int64_t wl_split_entries(const wl_dataset *ds, const wl_split *s)
{
    if (ds->sparse)
        return s->csr.row[s->n];
    return s->n * (int64_t)ds->dim;
}

void wl_split_row(const wl_dataset *ds, const wl_split *s, int64_t i, float *out)
{
    const int d = ds->dim;
    if (!ds->sparse) {
        memcpy(out, s->x + i * d, (size_t)d * sizeof *out);
        return;
    }
    memset(out, 0, (size_t)d * sizeof *out);
    for (int64_t k = s->csr.row[i]; k < s->csr.row[i + 1]; k++)
        out[s->csr.col[k]] = s->csr.val[k];
}

int wl_dataset_dense_check(const wl_dataset *ds, const char *why, sim_err *err)
{
    if (!ds->sparse)
        return 0;
    const int64_t n = ds->train.n + ds->test.n;
    if (n > 0 && ds->dim > WL_DENSE_MAX_VALUES / n)
        return sim_err_set(err, SIM_EINPUT,
                           "dataset '%s': %s needs dense rows, and %lld samples x %d "
                           "features is more than the %lld values (1 GiB of floats) a dense "
                           "copy may hold (%lld values are stored)",
                           ds->name, why, (long long)n, ds->dim,
                           (long long)WL_DENSE_MAX_VALUES,
                           (long long)(wl_split_entries(ds, &ds->train) +
                                       wl_split_entries(ds, &ds->test)));
    return 0;
}

int wl_dataset_densify(wl_dataset *ds, const char *why, sim_err *err)
{
    if (!ds->sparse)
        return 0;
    int rc = wl_dataset_dense_check(ds, why, err);
    if (rc != 0)
        return rc;
    const size_t d = (size_t)ds->dim;
    float *x[2] = {malloc(((size_t)ds->train.n * d + 1) * sizeof(float)),
                   malloc(((size_t)ds->test.n * d + 1) * sizeof(float))};
    if (!x[0] || !x[1]) {
        free(x[0]);
        free(x[1]);
        return sim_err_set(err, SIM_ENOMEM, "dataset '%s': out of memory for its dense copy",
                           ds->name);
    }
    wl_split *sp[2] = {&ds->train, &ds->test};
    for (int s = 0; s < 2; s++) {
        for (int64_t i = 0; i < sp[s]->n; i++)
            wl_split_row(ds, sp[s], i, x[s] + (size_t)i * d);
        csr_free(&sp[s]->csr);
        sp[s]->x = x[s];
    }
    ds->sparse = 0;
    return 0;
}

int wl_read_file(const char *path, char **text, size_t *len, sim_err *err)
{
    *text = NULL;
    *len = 0;
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sim_err_set(err, SIM_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) {
        int rc = sim_memory_check((double)st.st_size, SIM_ECONFIG, err, "%s: its %lld bytes",
                                  path, (long long)st.st_size);
        if (rc) {
            fclose(f);
            return rc;
        }
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    int rc = 0;
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = cap < SIZE_MAX / 4 ? realloc(buf, 2 * cap + 1) : NULL;
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (!buf)
        rc = sim_err_set(err, SIM_ENOMEM, "%s: out of memory reading the file", path);
    else if (ferror(f)) {
        rc = sim_err_set(err, SIM_EINPUT, "%s: read error at byte offset %zu", path, n);
        free(buf);
    } else {
        buf[n] = '\0';
        *text = buf;
        *len = n;
    }
    fclose(f);
    return rc;
}

/* The held-out rows: the first nt of a shuffle of 0..n-1 drawn from rng
 * (the same draw for both storages). NULL when out of memory. */
static unsigned char *held_rows(int64_t n, int64_t nt, gsl_rng *rng)
{
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    unsigned char *held = calloc((size_t)n, 1);
    if (!perm || !held) {
        free(perm);
        free(held);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    gsl_ran_shuffle(rng, perm, (size_t)n, sizeof *perm);
    for (int64_t i = 0; i < nt; i++)
        held[perm[i]] = 1;
    free(perm);
    return held;
}

/* wl_dataset_holdout on CSR rows: the held rows move to a new test CSR,
 * the rest are compacted in place, both in file order. */
static int holdout_sparse(wl_dataset *ds, int64_t nt, gsl_rng *rng, sim_err *err)
{
    wl_split *tr = &ds->train;
    const int64_t n = tr->n;
    unsigned char *held = held_rows(n, nt, rng);
    int64_t nnz_t = 0;
    if (held)
        for (int64_t i = 0; i < n; i++)
            if (held[i])
                nnz_t += tr->csr.row[i + 1] - tr->csr.row[i];
    wl_csr t = {0};
    float *ty = NULL;
    if (held) {
        t.row = malloc(((size_t)nt + 1) * sizeof *t.row);
        t.col = malloc(((size_t)nnz_t + 1) * sizeof *t.col);
        t.val = malloc(((size_t)nnz_t + 1) * sizeof *t.val);
        ty = malloc(((size_t)nt + 1) * sizeof *ty);
    }
    if (!held || !t.row || !t.col || !t.val || !ty) {
        free(held);
        csr_free(&t);
        free(ty);
        return sim_err_set(err, SIM_ENOMEM, "dataset '%s': out of memory for the hold-out",
                           ds->name);
    }
    int64_t a = 0, b = 0, ka = 0, kb = 0;
    t.row[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t lo = tr->csr.row[i], hi = tr->csr.row[i + 1], len = hi - lo;
        if (held[i]) {
            memcpy(t.col + kb, tr->csr.col + lo, (size_t)len * sizeof *t.col);
            memcpy(t.val + kb, tr->csr.val + lo, (size_t)len * sizeof *t.val);
            kb += len;
            t.row[++b] = kb;
            ty[b - 1] = tr->y[i];
        } else {
            memmove(tr->csr.col + ka, tr->csr.col + lo, (size_t)len * sizeof *t.col);
            memmove(tr->csr.val + ka, tr->csr.val + lo, (size_t)len * sizeof *t.val);
            ka += len;
            tr->csr.row[++a] = ka; /* row[a] <= row[i + 1]: not read again */
            tr->y[a - 1] = tr->y[i];
        }
    }
    csr_free(&ds->test.csr);
    free(ds->test.y);
    ds->test.csr = t;
    ds->test.y = ty;
    ds->test.n = nt;
    tr->n = a;
    free(held);
    return 0;
}

int wl_dataset_holdout(wl_dataset *ds, double fraction, gsl_rng *rng, sim_err *err)
{
    const int64_t n = ds->train.n;
    const int d = ds->dim;
    if (!(fraction >= 0 && fraction < 1))
        return sim_err_set(err, SIM_ECONFIG,
                           "dataset '%s': test_fraction must be in [0, 1), got %g", ds->name,
                           fraction);
    double t = round((double)n * fraction);
    int64_t nt = fraction > 0 && t < 1 ? 1 : (int64_t)t;
    if (nt > n - 1)
        nt = n - 1;
    if (nt <= 0)
        return 0;
    if (!rng)
        return sim_err_set(err, SIM_EINTERNAL, "dataset '%s': hold-out needs a stream",
                           ds->name);
    if (ds->sparse)
        return holdout_sparse(ds, nt, rng, err);
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    unsigned char *held = calloc((size_t)n, 1);
    float *tx = malloc(((size_t)nt * (size_t)d + 1) * sizeof *tx);
    float *ty = malloc(((size_t)nt + 1) * sizeof *ty);
    if (!perm || !held || !tx || !ty) {
        free(perm);
        free(held);
        free(tx);
        free(ty);
        return sim_err_set(err, SIM_ENOMEM, "dataset '%s': out of memory for the hold-out",
                           ds->name);
    }
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    gsl_ran_shuffle(rng, perm, (size_t)n, sizeof *perm);
    for (int64_t i = 0; i < nt; i++)
        held[perm[i]] = 1;
    int64_t a = 0, b = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *row = ds->train.x + i * d;
        if (held[i]) {
            memcpy(tx + b * d, row, (size_t)d * sizeof *tx);
            ty[b++] = ds->train.y[i];
        } else {
            memmove(ds->train.x + a * d, row, (size_t)d * sizeof *row);
            ds->train.y[a++] = ds->train.y[i];
        }
    }
    free(ds->test.x);
    free(ds->test.y);
    ds->test.x = tx;
    ds->test.y = ty;
    ds->test.n = nt;
    ds->train.n = a;
    free(perm);
    free(held);
    return 0;
}

int wl_dataset_normalize(wl_dataset *ds, sim_err *err)
{
    int rc = wl_dataset_densify(ds, "normalize = standard", err);
    if (rc != 0)
        return rc;
    const int d = ds->dim;
    const int64_t n = ds->train.n;
    if (n <= 0)
        return 0;
    double *mean = calloc((size_t)d, sizeof *mean);
    double *var = calloc((size_t)d, sizeof *var);
    if (!mean || !var) {
        free(mean);
        free(var);
        return sim_err_set(err, SIM_ENOMEM, "dataset '%s': out of memory normalising",
                           ds->name);
    }
    for (int64_t i = 0; i < n; i++) {
        const float *row = ds->train.x + i * d;
        for (int j = 0; j < d; j++)
            mean[j] += row[j];
    }
    for (int j = 0; j < d; j++)
        mean[j] /= (double)n;
    for (int64_t i = 0; i < n; i++) {
        const float *row = ds->train.x + i * d;
        for (int j = 0; j < d; j++) {
            double t = row[j] - mean[j];
            var[j] += t * t;
        }
    }
    /* var becomes the scale 1/std (or 1 for a constant feature) */
    for (int j = 0; j < d; j++) {
        double sd = sqrt(var[j] / (double)n);
        var[j] = sd > 0 ? 1.0 / sd : 1.0;
    }
    wl_split *splits[2] = {&ds->train, &ds->test};
    for (int s = 0; s < 2; s++)
        for (int64_t i = 0; i < splits[s]->n; i++) {
            float *row = splits[s]->x + i * d;
            for (int j = 0; j < d; j++)
                row[j] = (float)((row[j] - mean[j]) * var[j]);
        }
    free(mean);
    free(var);
    return 0;
}

static void known_datasets(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; wl_dataset_registry[i] && used < len; i++) {
        const wl_dataset_vt *vt = wl_dataset_registry[i];
        int k = snprintf(buf + used, len - used, "%s%s%s", i ? ", " : "", vt->name,
                         vt->args);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

wl_dataset *wl_dataset_create(const wl_dataset_opts *opts, sim_err *err)
{
    sim_spec sp;
    if (!opts || !opts->spec) {
        sim_err_set(err, SIM_EINTERNAL, "wl_dataset_create: no spec");
        return NULL;
    }
    const char *spec = opts->spec;
    if (sim_spec_parse(spec, &sp, err) != 0) {
        sim_err_prefix(err, "dataset '%s'", spec);
        return NULL;
    }
    const wl_dataset_vt *vt = wl_dataset_find(sp.name);
    if (!vt) {
        char known[512];
        char hint[96];
        known_datasets(known, sizeof known);
        sim_err_set(err, SIM_ECONFIG, "unknown dataset '%s' (%sknown: %s)",
                    sp.name, sim_suggest(sp.name, known, hint, sizeof hint), known);
        return NULL;
    }
    wl_dataset *ds = vt->create(&sp, opts, err);
    if (!ds)
        return NULL;
    snprintf(ds->name, sizeof ds->name, "%s", spec);
    if (ds->test.n == 0 && opts->test_fraction > 0 &&
        wl_dataset_holdout(ds, opts->test_fraction, opts->rng, err) != 0) {
        wl_dataset_destroy(ds);
        return NULL;
    }
    if (opts->normalize && wl_dataset_normalize(ds, err) != 0) {
        wl_dataset_destroy(ds);
        return NULL;
    }
    return ds;
}
