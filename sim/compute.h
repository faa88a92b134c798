/* Worker compute-time model ([workers] section). A step's time is
 *   base(worker, step, samples) x straggler factor x transient factor
 * where base is either FLOPs / (device x efficiency) (compute = model) or a
 * draw from a distribution. Every distribution's first argument is its mean
 * (so stragglers of different shapes compare at equal means):
 *   constant(m)                    always m; constant(0) is allowed (steps
 *                                  take no time: communication only)
 *   exponential(m)                 Exp with mean m
 *   shifted_exponential(s, m)      s + Exp with mean m
 *   lognormal(m, sigma)            mean m, log-space standard deviation sigma
 *   pareto(m, alpha)               mean m, tail index alpha > 1
 *   trace(FILE.csv)                per-step times: one row per step, one
 *                                  column per worker, each cell seconds
 *                                  (0.012) or a time with its unit (12ms)
 *                                  (a header row of
 *                                  non-numbers is skipped); cycles when the
 *                                  trace ends; fewer columns than workers:
 *                                  worker i uses column i mod columns.
 * Persistent stragglers are workers 0..stragglers-1 (deterministic, so a run
 * can be compared with and without them). Transient slowdowns hit each step
 * independently with probability transient_prob. */
#ifndef DTSIM_SIM_COMPUTE_H
#define DTSIM_SIM_COMPUTE_H

#include <gsl/gsl_rng.h>

#include "sim/err.h"
#include "sim/units.h"

typedef enum sim_dist_kind {
    SIM_DIST_MODEL = 0, /* FLOPs over device speed */
    SIM_DIST_CONSTANT,
    SIM_DIST_EXPONENTIAL,
    SIM_DIST_SHIFTED_EXPONENTIAL,
    SIM_DIST_LOGNORMAL,
    SIM_DIST_PARETO,
    SIM_DIST_TRACE
} sim_dist_kind;

typedef struct sim_dist {
    sim_dist_kind kind;
    double a;            /* mean in seconds (shift for shifted_exponential) */
    double b;            /* sigma, alpha, or the exponential part's mean */
    char trace_path[512];
} sim_dist;

typedef struct sim_compute_opts {
    sim_dist dist;
    double device_flops;      /* FLOP/s peak */
    double efficiency;        /* fraction of peak, (0, 1] */
    int stragglers;           /* workers 0..stragglers-1 are slow */
    double straggler_slowdown;/* factor >= 1 */
    double transient_prob;    /* [0, 1] */
    double transient_slowdown;/* factor >= 1 */
    const double *worker_speed; /* NULL, or per worker FLOP/s reached (device x
                                 * efficiency; heterogeneous devices): used
                                 * instead of device_flops x efficiency; copied
                                 * by sim_compute_create */
} sim_compute_opts;

typedef struct sim_compute sim_compute;

/* Parses "exponential(10ms)" etc. or "model". Returns 0 or SIM_ECONFIG
 * (message without file:line; the config layer prefixes it). */
int sim_dist_parse(const char *s, sim_dist *out, sim_err *err);
/* Canonical text of a distribution, times as integer ns, e.g.
 * "lognormal(10000000ns, 0.5)". */
void sim_dist_format(const sim_dist *d, char *buf, int len);
/* Names and one-line descriptions for `dtsim list distributions`. */
typedef struct sim_dist_info { const char *name, *args, *summary; } sim_dist_info;
extern const sim_dist_info sim_dist_table[];

/* Loads a trace file if the distribution needs one (SIM_EINPUT naming the
 * file and line on a bad trace). */
sim_compute *sim_compute_create(const sim_compute_opts *opts, int n_workers, sim_err *err);
void sim_compute_destroy(sim_compute *c);
/* Seconds for `worker`'s step number `step` that processes `samples`
 * samples costing `flops_per_sample` training FLOPs each; draws from rng
 * (the worker's compute stream). Always > 0 for model/constant/trace > 0.
 * Draws, in this order (determinism): first the base, which is one call of
 * gsl_ran_exponential (exponential, shifted_exponential), gsl_ran_lognormal
 * or gsl_ran_pareto, and nothing for model, constant and trace; then, only
 * when transient_prob > 0, one gsl_rng_uniform (slowed when < prob). */
double sim_compute_step_time(sim_compute *c, int worker, int64_t step, int samples,
                             double flops_per_sample, gsl_rng *rng);
/* One draw of seconds from a distribution that needs no compute model or
 * trace (constant, exponential, shifted_exponential, lognormal, pareto:
 * one GSL call as sim_compute_step_time makes it); NAN for model and
 * trace. */
double sim_dist_sample(const sim_dist *d, gsl_rng *rng);
/* 1 when step times draw from the stream (a random base distribution or
 * transient_prob > 0); 0: rng is never read and may be NULL. */
int sim_compute_draws(const sim_compute *c);
/* Mean of the base distribution in seconds (model and trace: NAN). */
double sim_dist_mean(const sim_dist *d);

#endif
