/* Dataset registry, the synthetic generators and the generic post-processing
 * (standardisation). Every random draw comes from the caller's data stream
 * in a fixed, documented order, so one seed gives byte-identical data. */
#include "workloads/dataset.h"

#include <errno.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"
#include "workloads/dataset_impl.h"

const wl_dataset_info wl_dataset_table[] = {
    {"fashion_mnist", "", "Fashion-MNIST 28x28 grey images, 10 classes, 60000 + 10000 "
                          "(Debian package dataset-fashion-mnist)"},
    {"synthetic_linear", "(d, n)", "x ~ N(0, I_d), y = w*.x + 0.5 + 0.1 N(0,1); regression"},
    {"blobs", "(classes, d, n)", "Gaussian clusters, centres ~ N(0, 4 I_d), unit spread"},
    {"libsvm", "(TRAIN[, TEST])",
     "LIBSVM text (sparse idx:val or dense rows); regression, binary or multiclass labels"},
    {"text", "(FILE[, k])",
     "next byte from the k (default 8) previous ones; vocabulary = the file's bytes "
     "(corpus: Debian package fortunes, /usr/share/games/fortunes/)"},
    {NULL, NULL, NULL},
};

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

static int64_t test_count(int64_t n, double test_fraction)
{
    double t = round((double)n * test_fraction);
    return t < 1 ? 1 : (int64_t)t;
}

/* Draw order: w*[0..d-1]; then per training sample x[0..d-1] and the noise;
 * then the test samples the same way. */
wl_dataset *wl_dataset_synthetic_linear(int d, int64_t n, double test_fraction,
                                        gsl_rng *rng, sim_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "synthetic_linear(%d, %lld)", d, (long long)n);
    if (d <= 0 || n <= 0 || !(test_fraction >= 0) || !rng) {
        sim_err_set(err, SIM_ECONFIG,
                    "dataset '%s': needs d >= 1, n >= 1, test_fraction >= 0 and a stream",
                    name);
        return NULL;
    }
    int64_t nt = test_count(n, test_fraction);
    float *w = malloc((size_t)d * sizeof *w);
    if (!w) {
        sim_err_set(err, SIM_ENOMEM, "dataset '%s': out of memory", name);
        return NULL;
    }
    wl_dataset *ds = wl_dataset_alloc(name, d, 0, n, nt, err);
    if (!ds) {
        free(w);
        return NULL;
    }
    const double sw = 1.0 / sqrt((double)d), bstar = 0.5;
    for (int j = 0; j < d; j++)
        w[j] = (float)gsl_ran_gaussian(rng, sw);
    wl_split *splits[2] = {&ds->train, &ds->test};
    for (int s = 0; s < 2; s++)
        for (int64_t i = 0; i < splits[s]->n; i++) {
            float *row = splits[s]->x + i * d;
            double t = bstar;
            for (int j = 0; j < d; j++) {
                row[j] = (float)gsl_ran_gaussian(rng, 1.0);
                t += (double)w[j] * row[j];
            }
            splits[s]->y[i] = (float)(t + 0.1 * gsl_ran_gaussian(rng, 1.0));
        }
    free(w);
    return ds;
}

/* Draw order: centres row by row (classes x d, sd 2); then per training
 * sample its d offsets; then the test samples. Sample i has label
 * i mod classes, so the classes are balanced to within one sample. */
wl_dataset *wl_dataset_blobs(int classes, int d, int64_t n, double test_fraction,
                             gsl_rng *rng, sim_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "blobs(%d, %d, %lld)", classes, d, (long long)n);
    if (classes < 2 || d <= 0 || n <= 0 || !(test_fraction >= 0) || !rng) {
        sim_err_set(err, SIM_ECONFIG,
                    "dataset '%s': needs classes >= 2, d >= 1, n >= 1, test_fraction >= 0 "
                    "and a stream",
                    name);
        return NULL;
    }
    int64_t nt = test_count(n, test_fraction);
    double *centre = malloc((size_t)classes * (size_t)d * sizeof *centre);
    if (!centre) {
        sim_err_set(err, SIM_ENOMEM, "dataset '%s': out of memory", name);
        return NULL;
    }
    wl_dataset *ds = wl_dataset_alloc(name, d, classes, n, nt, err);
    if (!ds) {
        free(centre);
        return NULL;
    }
    for (int64_t k = 0; k < (int64_t)classes * d; k++)
        centre[k] = gsl_ran_gaussian(rng, 2.0);
    wl_split *splits[2] = {&ds->train, &ds->test};
    for (int s = 0; s < 2; s++)
        for (int64_t i = 0; i < splits[s]->n; i++) {
            int c = (int)(i % classes);
            float *row = splits[s]->x + i * d;
            const double *mu = centre + (int64_t)c * d;
            for (int j = 0; j < d; j++)
                row[j] = (float)(mu[j] + gsl_ran_gaussian(rng, 1.0));
            splits[s]->y[i] = (float)c;
        }
    free(centre);
    return ds;
}

static int parse_ints(const sim_spec *sp, int64_t *v, int count)
{
    if (sp->nargs != count)
        return -1;
    for (int i = 0; i < count; i++)
        if (sim_parse_int(sp->args[i], &v[i], NULL) != 0)
            return -1;
    return 0;
}

static void known_datasets(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; wl_dataset_table[i].name && used < len; i++) {
        int k = snprintf(buf + used, len - used, "%s%s%s", i ? ", " : "",
                         wl_dataset_table[i].name, wl_dataset_table[i].args);
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
    int64_t v[3];
    wl_dataset *ds = NULL;
    if (strcmp(sp.name, "fashion_mnist") == 0) {
        if (sp.nargs != 0) {
            sim_err_set(err, SIM_ECONFIG,
                        "dataset '%s': expected fashion_mnist (the directory is a "
                        "separate setting)",
                        spec);
            return NULL;
        }
        ds = wl_dataset_fashion_mnist(opts->data_dir, err);
    } else if (strcmp(sp.name, "synthetic_linear") == 0) {
        if (parse_ints(&sp, v, 2) != 0 || v[0] < 1 || v[0] > 1000000 || v[1] < 1) {
            sim_err_set(err, SIM_ECONFIG,
                        "dataset '%s': expected synthetic_linear(d, n) with d, n >= 1", spec);
            return NULL;
        }
        ds = wl_dataset_synthetic_linear((int)v[0], v[1], opts->test_fraction, opts->rng,
                                         err);
    } else if (strcmp(sp.name, "blobs") == 0) {
        if (parse_ints(&sp, v, 3) != 0 || v[0] < 2 || v[0] > 1000000 || v[1] < 1 ||
            v[1] > 1000000 || v[2] < 1) {
            sim_err_set(err, SIM_ECONFIG,
                        "dataset '%s': expected blobs(classes, d, n) with classes >= 2 and "
                        "d, n >= 1",
                        spec);
            return NULL;
        }
        ds = wl_dataset_blobs((int)v[0], (int)v[1], v[2], opts->test_fraction, opts->rng,
                              err);
    } else if (strcmp(sp.name, "libsvm") == 0) {
        if (sp.nargs < 1 || sp.nargs > 2 || !sp.args[0][0] ||
            (sp.nargs == 2 && !sp.args[1][0])) {
            sim_err_set(err, SIM_ECONFIG, "dataset '%s': expected libsvm(TRAIN[, TEST])", spec);
            return NULL;
        }
        ds = wl_dataset_libsvm(sp.args[0], sp.nargs == 2 ? sp.args[1] : NULL, err);
    } else if (strcmp(sp.name, "text") == 0) {
        v[0] = WL_TEXT_DEFAULT_CONTEXT;
        if (sp.nargs < 1 || sp.nargs > 2 || !sp.args[0][0] ||
            (sp.nargs == 2 &&
             (sim_parse_int(sp.args[1], &v[0], NULL) != 0 || v[0] < 1 || v[0] > 4096))) {
            sim_err_set(err, SIM_ECONFIG,
                        "dataset '%s': expected text(FILE[, k]) with k in 1..4096", spec);
            return NULL;
        }
        if (opts->normalize) {
            sim_err_set(err, SIM_ECONFIG,
                        "dataset '%s': normalize = standard does not apply to character ids",
                        spec);
            return NULL;
        }
        ds = wl_dataset_text(sp.args[0], (int)v[0], err);
    } else {
        char known[512];
        known_datasets(known, sizeof known);
        sim_err_set(err, SIM_ECONFIG, "unknown dataset '%s' (known: %s)", sp.name, known);
        return NULL;
    }
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
