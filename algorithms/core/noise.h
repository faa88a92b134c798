/* Injected gradient noise ([workload] grad_noise, docs/algorithms.md
 * section 11): a random vector added to every stochastic gradient before
 * the clip, drawn from the worker's own noise stream (SIM_STREAM_NOISE).
 *   none                   nothing is added (the default)
 *   gaussian(SIGMA)        i.i.d. N(0, SIGMA^2 / d) per coordinate, so
 *                          E||eps||^2 = SIGMA^2
 *   subweibull(THETA, SIGMA)  eps = SIGMA * R * u, u uniform on the unit
 *                          sphere, R = E^THETA with E ~ Exp(1), so
 *                          P(||eps|| >= SIGMA t) = exp(-t^(1/THETA)) */
#ifndef DTSIM_ALGO_NOISE_H
#define DTSIM_ALGO_NOISE_H

#include <gsl/gsl_rng.h>
#include <stddef.h>
#include <stdint.h>

typedef enum algo_noise_kind {
    ALGO_NOISE_NONE = 0,
    ALGO_NOISE_GAUSSIAN,
    ALGO_NOISE_SUBWEIBULL
} algo_noise_kind;

typedef struct algo_noise {
    algo_noise_kind kind;
    double theta; /* sub-Weibull tail parameter, > 0 */
    double sigma; /* scale of the noise norm (gradient units), >= 0 */
} algo_noise;

/* Parses a spec as above (case-insensitive names, blanks allowed). Returns
 * 0, or -1 with a reason in why (n bytes) when the spec is not valid. */
int algo_noise_parse(const char *spec, algo_noise *out, char *why, size_t n);
/* One draw of R = E^theta, E ~ Exp(1) (the sub-Weibull radius before sigma). */
double algo_noise_subweibull_radius(double theta, gsl_rng *r);
/* Adds one draw of the noise to g (d floats) from stream r; nothing for
 * ALGO_NOISE_NONE. tmp is a stream of r's type used as scratch (its state
 * is overwritten; allocated once per worker). Returns the norm of the draw. */
double algo_noise_add(const algo_noise *nz, float *g, int64_t d, gsl_rng *r, gsl_rng *tmp);

#endif
