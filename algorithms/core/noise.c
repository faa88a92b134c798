/* Injected gradient noise (see noise.h). A direction uniform on the unit
 * sphere is d standard normals divided by their norm; the draws are made
 * in coordinate order from the worker's noise stream, so runs repeat. */
#include "algorithms/core/noise.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gsl/gsl_randist.h>

/* Parses "name(a[, b])" into name and up to two numbers; returns the count
 * of numbers, or -1. */
static int split_spec(const char *s, char *name, size_t nn, double *v)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t k = 0;
    while (*s && (isalnum((unsigned char)*s) || *s == '_') && k + 1 < nn)
        name[k++] = *s++;
    name[k] = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (!*s)
        return 0;
    if (*s != '(')
        return -1;
    s++;
    int c = 0;
    for (;;) {
        char *end;
        double x = strtod(s, &end);
        if (end == s || c == 2)
            return -1;
        v[c++] = x;
        s = end;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s != ')')
            return -1;
        s++;
        break;
    }
    while (isspace((unsigned char)*s))
        s++;
    return *s ? -1 : c;
}

int algo_noise_parse(const char *spec, algo_noise *out, char *why, size_t n)
{
    char name[32];
    double v[2] = {0, 0};
    *out = (algo_noise){.kind = ALGO_NOISE_NONE};
    int c = split_spec(spec ? spec : "", name, sizeof name, v);
    if (c < 0) {
        snprintf(why, n, "expected none, gaussian(SIGMA) or subweibull(THETA, SIGMA), got '%s'",
                 spec);
        return -1;
    }
    if (strcasecmp(name, "none") == 0 && c == 0)
        return 0;
    if (strcasecmp(name, "gaussian") == 0 && c == 1) {
        if (!(v[0] >= 0) || !isfinite(v[0])) {
            snprintf(why, n, "gaussian: SIGMA must be finite and >= 0, got %g", v[0]);
            return -1;
        }
        *out = (algo_noise){.kind = ALGO_NOISE_GAUSSIAN, .theta = 0.5, .sigma = v[0]};
        return 0;
    }
    if (strcasecmp(name, "subweibull") == 0 && c == 2) {
        if (!(v[0] > 0) || !isfinite(v[0]) || !(v[1] >= 0) || !isfinite(v[1])) {
            snprintf(why, n,
                     "subweibull: THETA must be > 0 and SIGMA >= 0 (both finite), got %g, %g",
                     v[0], v[1]);
            return -1;
        }
        *out = (algo_noise){.kind = ALGO_NOISE_SUBWEIBULL, .theta = v[0], .sigma = v[1]};
        return 0;
    }
    snprintf(why, n, "expected none, gaussian(SIGMA) or subweibull(THETA, SIGMA), got '%s'",
             spec);
    return -1;
}

double algo_noise_subweibull_radius(double theta, gsl_rng *r)
{
    return pow(gsl_ran_exponential(r, 1.0), theta);
}

double algo_noise_add(const algo_noise *nz, float *g, int64_t d, gsl_rng *r, gsl_rng *tmp)
{
    if (nz->kind == ALGO_NOISE_NONE || d <= 0)
        return 0;
    if (nz->kind == ALGO_NOISE_GAUSSIAN) {
        const double s = nz->sigma / sqrt((double)d);
        double ss = 0;
        for (int64_t j = 0; j < d; j++) {
            double e = s * gsl_ran_ugaussian(r);
            ss += e * e;
            g[j] = (float)((double)g[j] + e);
        }
        return sqrt(ss);
    }
    /* The direction's norm is needed before its coordinates are added, so
     * the same normals are drawn twice: once from a copy of the stream
     * (tmp, no allocation) for the norm, then from the stream itself. */
    double radius = nz->sigma * algo_noise_subweibull_radius(nz->theta, r);
    gsl_rng_memcpy(tmp, r);
    double ss = 0;
    for (int64_t j = 0; j < d; j++) {
        double u = gsl_ran_ugaussian(tmp);
        ss += u * u;
    }
    if (!(ss > 0))
        return 0;
    const double scale = radius / sqrt(ss);
    for (int64_t j = 0; j < d; j++)
        g[j] = (float)((double)g[j] + scale * gsl_ran_ugaussian(r));
    return radius;
}
