/* Injected gradient noise (see noise.h). A direction uniform on the unit
 * sphere is d standard normals divided by their norm; the draws are made
 * in coordinate order from the worker's noise stream, so runs repeat. */
#include "algorithms/core/noise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gsl/gsl_randist.h>

#include "sim/units.h"

int algo_noise_parse(const char *spec, algo_noise *out, char *why, size_t n)
{
    sim_spec sp;
    sim_err e = {0};
    double v[2] = {0, 0};
    *out = (algo_noise){.kind = ALGO_NOISE_NONE};
    /* "name" or "name(a[, b])" with numbers (strtod); "name()" is no spec */
    int c = spec && sim_spec_parse(spec, &sp, &e) == 0 && (sp.nargs || !strchr(spec, '('))
                ? sp.nargs : -1;
    if (c > 2)
        c = -1;
    for (int i = 0; i < c; i++) {
        char *end;
        v[i] = strtod(sp.args[i], &end);
        if (end == sp.args[i] || *end)
            c = -1;
    }
    if (c < 0)
        goto bad;
    const char *name = sp.name;
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
bad:
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
