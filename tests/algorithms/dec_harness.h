/* Shared by the decentralized suites (test_decentralized.c, test_gossip.c):
 * the base experiment and a small harness that builds the algorithm
 * environment through the runner's builder (experiment/env.h) and drives
 * the engine itself, so that a test can look at every worker's model and
 * stop after any iteration. */
#ifndef DTSIM_TESTS_DEC_HARNESS_H
#define DTSIM_TESTS_DEC_HARNESS_H

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
#include "topology/mixing.h"
#include "workloads/dataset.h"

/* softmax on blobs(4, 10): d = 44, S = 176 bytes; 8 workers on a ring. */
static const char *const base_ini = "[experiment]\n"
                              "seed = 3\n"
                              "max_epochs = 0\n"
                              "max_iterations = 150\n"
                              "eval_every = 15\n"
                              "eval_train_samples = 600\n"
                              "[workers]\n"
                              "count = 8\n"
                              "compute = constant(10ms)\n"
                              "[network]\n"
                              "topology = ideal\n"
                              "[topology]\n"
                              "graph = ring\n"
                              "[algorithm]\n"
                              "name = dsgd_atc\n"
                              "lr = 0.1\n"
                              "batch = 16\n"
                              "[workload]\n"
                              "model = softmax\n"
                              "dataset = blobs(4, 10, 4000)\n"
                              "partition = iid\n";

/* Writes a fault schedule with the given rows (after the header) to a
 * fresh file under /tmp (path, at least 64 bytes) and its --set into set. */
static inline void h_write_schedule(char *path, char *set, size_t cap, const char *rows)
{
    strcpy(path, "/tmp/dtsim_sched_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "time,event,target,value\n%s", rows);
    fclose(f);
    snprintf(set, cap, "faults.schedule=%s", path);
}

/* Two runs' rows agree in train_loss and test_accuracy within tol. */

typedef struct harness {
    sim_config cfg;
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

static inline void h_on_iteration(void *p)
{
    harness *h = p;
    if (h->probe)
        h->probe(h);
    if (h->env->iterations >= h->stop_at)
        sim_engine_stop(h->eng);
}

static inline void h_build(harness *h, const char *ini, const char *const *sets, int nsets)
{
    memset(h, 0, sizeof *h);
    sim_err err = {0};
    cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", ini, sets, nsets,
                                        &h->cfg, &err), 0, "%s",
                 err.msg);
    h->x = xp_env_create(&h->cfg, NULL, &err);
    cr_assert_not_null(h->x, "%s", err.msg);
    h->env = xp_env_algo_env(h->x);
    h->ds = xp_env_dataset(h->x);
    h->part = xp_env_partition(h->x);
    h->eng = xp_env_engine(h->x);
    h->net = xp_env_net(h->x);
    h->mix = h->env->mix;
    h->vt = xp_env_vt(h->x);
    h->env->run->hooks.iteration = h_on_iteration;
    h->env->run->hooks.exp = h;
    cr_assert_eq(xp_env_algo_create(h->x, &err), 0, "%s", err.msg);
    h->alg = xp_env_state(h->x);
}

/* Runs until `iterations` iterations have completed. */
static inline void h_run(harness *h, int64_t iterations)
{
    sim_err err = {0};
    h->stop_at = iterations;
    if (h->env->iterations == 0)
        cr_assert_eq(h->vt->start(h->alg, &err), 0, "%s", err.msg);
    sim_engine_run_until(h->eng, SIM_TIME_MAX);
    cr_assert_eq(h->env->error.code, 0, "run failed: %s", h->env->error.msg);
    cr_assert_eq(h->env->diverged, 0, "run diverged");
    cr_assert_eq(h->env->iterations, iterations);
}

static inline void h_free(harness *h)
{
    xp_env_destroy(h->x);
    sim_config_release(&h->cfg);
}

/* Iteration times (a probe): h->probe = h_record_time, h->probe_ctx = an
 * h_times. */
typedef struct h_times {
    double t[8192];
    int n;
} h_times;

static inline void h_record_time(harness *h)
{
    h_times *ts = h->probe_ctx;
    if (ts->n < 8192)
        ts->t[ts->n++] = sim_time_to_s(sim_engine_now(h->eng));
}

/* sum_i x_i in double (the workers' models as the method reports them) */
static inline void h_sum(harness *h, double *out)
{
    const float **xs = malloc((size_t)h->env->n * sizeof *xs);
    h->vt->worker_models(h->alg, xs);
    memset(out, 0, (size_t)h->env->d * sizeof *out);
    for (int i = 0; i < h->env->n; i++)
        for (int64_t j = 0; j < h->env->d; j++)
            out[j] += xs[i][j];
    free(xs);
}

static inline double h_consensus(harness *h)
{
    const float **xs = malloc((size_t)h->env->n * sizeof *xs);
    double *scratch = malloc((size_t)h->env->d * sizeof *scratch);
    h->vt->worker_models(h->alg, xs);
    double c = topo_consensus_distance(xs, h->env->n, h->env->d, scratch);
    free(xs);
    free(scratch);
    return c;
}

/* max_j |a_j - b_j| / max_j |a_j|: the relative gap of two parameter
 * vectors, in double (the equivalence tests' 1e-5). */
static inline double max_rel_gap(const float *a, const float *b, int64_t len)
{
    double worst = 0, scale = 0;
    for (int64_t j = 0; j < len; j++) {
        worst = fmax(worst, fabs((double)a[j] - b[j]));
        scale = fmax(scale, fabs((double)a[j]));
    }
    return worst / scale;
}

#endif
