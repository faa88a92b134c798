/* The synthetic datasets, synthetic_linear(d, n) and blobs(classes, d, n):
 * generated from the caller's data stream in a fixed, documented order, so
 * one seed gives byte-identical data. Each comes with its own test set
 * (max(1, round(n * test_fraction)) samples drawn the same way), so
 * wl_dataset_create never holds any out. */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "workloads/dataset.h"
#include "workloads/dataset_impl.h"

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

static wl_dataset *synthetic_linear_create(const sim_spec *sp, const wl_dataset_opts *opts,
                                           sim_err *err)
{
    int64_t v[2];
    if (parse_ints(sp, v, 2) != 0 || v[0] < 1 || v[0] > 1000000 || v[1] < 1) {
        sim_err_set(err, SIM_ECONFIG,
                    "dataset '%s': expected synthetic_linear(d, n) with d, n >= 1",
                    opts->spec);
        return NULL;
    }
    return wl_dataset_synthetic_linear((int)v[0], v[1], opts->test_fraction, opts->rng, err);
}

static wl_dataset *blobs_create(const sim_spec *sp, const wl_dataset_opts *opts, sim_err *err)
{
    int64_t v[3];
    if (parse_ints(sp, v, 3) != 0 || v[0] < 2 || v[0] > 1000000 || v[1] < 1 ||
        v[1] > 1000000 || v[2] < 1) {
        sim_err_set(err, SIM_ECONFIG,
                    "dataset '%s': expected blobs(classes, d, n) with classes >= 2 and "
                    "d, n >= 1",
                    opts->spec);
        return NULL;
    }
    return wl_dataset_blobs((int)v[0], (int)v[1], v[2], opts->test_fraction, opts->rng, err);
}

const wl_dataset_vt wl_dataset_synthetic_linear_vt = {
    .name = "synthetic_linear",
    .args = "(d, n)",
    .summary = "x ~ N(0, I_d), y = w*.x + 0.5 + 0.1 N(0,1); regression",
    .create = synthetic_linear_create,
};

const wl_dataset_vt wl_dataset_blobs_vt = {
    .name = "blobs",
    .args = "(classes, d, n)",
    .summary = "Gaussian clusters, centres ~ N(0, 4 I_d), unit spread",
    .create = blobs_create,
};
