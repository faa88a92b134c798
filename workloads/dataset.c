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

#include "sim/units.h"
#include "workloads/dataset_impl.h"

const wl_dataset_vt *const wl_dataset_registry[] = {
    &wl_dataset_fashion_mnist_vt,
    &wl_dataset_synthetic_linear_vt,
    &wl_dataset_blobs_vt,
    &wl_dataset_libsvm_vt,
    &wl_dataset_text_vt,
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

void wl_dataset_destroy(wl_dataset *ds)
{
    if (!ds)
        return;
    free(ds->train.x);
    free(ds->train.y);
    free(ds->test.x);
    free(ds->test.y);
    free(ds);
}

int wl_read_file(const char *path, char **text, size_t *len, sim_err *err)
{
    *text = NULL;
    *len = 0;
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sim_err_set(err, SIM_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
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
