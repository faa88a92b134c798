/* The algorithm suites' harness (compiled into test_algorithms with
 * tests/common.c): the base experiment, and a harness that builds the
 * algorithm environment through the runner's builder (experiment/env.h)
 * and drives the engine itself, so that a test can look at every worker's
 * model and stop after any iteration; probes of iteration times for the
 * crash tests. */
#ifndef DTSIM_TESTS_ALGORITHMS_HARNESS_H
#define DTSIM_TESTS_ALGORITHMS_HARNESS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/core/runner.h"
#include "config/config.h"
#include "experiment/env.h"
#include "experiment/experiment.h"
#include "tests/common.h"
#include "topology/mixing.h"
#include "workloads/dataset.h"

typedef struct harness {
    cfg_config cfg;
    xp_env *x;                       /* the environment, built as the runner builds it */
    /* borrowed from x */
    algo_env *env;
    const wl_dataset *ds;
    const wl_partition *part;
    sim_engine *eng;
    sim_net *net;
    const topo_mixing *mix;
    const algo_vt *vt;
    void *alg;
    int64_t stop_at;                 /* stop after this many iterations */
    void (*probe)(struct harness *h); /* called at every iteration */
    void *probe_ctx;
} harness;

/* Builds ini with the overrides sets[0..nsets) (asserting success). */
void h_build(harness *h, const char *ini, const char *const *sets, int nsets);
/* Runs until `iterations` iterations have completed. */
void h_run(harness *h, int64_t iterations);
void h_free(harness *h);
/* sum_i x_i in double (the workers' models as the method reports them) */
void h_sum(harness *h, double *out);
/* The consensus distance of the workers' models. */
double h_consensus(harness *h);
/* max_j |a_j - b_j| / max_j |a_j|: the relative gap of two parameter
 * vectors, in double (the equivalence tests' 1e-5). */
double max_rel_gap(const float *a, const float *b, int64_t len);

/* Writes a fault schedule with the given rows (after the header) to a
 * fresh temporary file (path, at least 64 bytes) and its --set into set. */
void h_write_schedule(char *path, char *set, size_t cap, const char *rows);

/* ---- iteration times (the crash tests) --------------------------------- */

typedef struct times {
    double t[8192];
    int n;
} times;

/* A harness probe: appends the simulated time to h->probe_ctx (a times). */
void record_time(harness *h);
/* The number of times in [a, b). */
int count_in(const times *ts, double a, double b);
/* Checks the iteration times of a synchronous run with one crash and its
 * rejoin: rounds take `before` until the round holding the crash, which
 * takes `aborted`, then `down` until the rejoin, and `after` for the last
 * 10 rounds. Returns the aborted round's index. */
int check_crash_rounds(const times *ts, double crash, double rejoin, double before,
                       double aborted, double down, double after);

/* ---- the live workers' mean (the crash tests) --------------------------- */

typedef struct live_mean {
    double ref[64];      /* the live workers' mean at the crash */
    int have_ref;
    double worst;        /* largest deviation seen while worker 3 is down */
    int checked;
} live_mean;

/* The mean of the models of the workers that are up. */
void mean_of_live(harness *h, double *out);
/* The first call keeps m[0..d) (d <= 64) as the reference; each later one
 * counts a check and the largest deviation of m from it. */
void live_mean_track(live_mean *lm, const double *m, int64_t d);
/* live_mean_track of the model the method reports (its evaluated model). */
void live_mean_track_model(harness *h, live_mean *lm);
/* A harness probe (h->probe_ctx a live_mean): while worker 3 is down,
 * the largest deviation of the live mean from its value at the crash. */
void probe_live_mean(harness *h);

#endif
