/* Shared by the decentralized suites (test_decentralized.c, test_gossip.c):
 * the base experiment and a small harness that builds the algorithm
 * environment itself, as the experiment runner does, so that a test can
 * look at every worker's model and stop after any iteration. */
#ifndef DTSIM_TESTS_DEC_HARNESS_H
#define DTSIM_TESTS_DEC_HARNESS_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/algo.h"
#include "config/config.h"
#include "experiment/experiment.h"
#include "sim/rng.h"
#include "topology/physnet.h"
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

/* Two runs' rows agree in train_loss and test_accuracy within tol. */

typedef struct harness {
    sim_config cfg;
    wl_dataset *ds;
    wl_model *model;
    wl_partition *part;
    topo_physnet pn;
    int pn_built;
    sim_engine *eng;
    sim_net *net;
    sim_compute *compute;
    topo_graph graph;
    int graph_built;
    topo_mixing *mix;
    algo_env env;
    const algo_vt *vt;
    void *alg;
    gsl_rng *rng_data, *rng_part, *rng_init, *rng_topo;
    int64_t stop_at;                 /* stop after this many iterations */
    void (*probe)(struct harness *h); /* called at every iteration */
    void *probe_ctx;
} harness;

static inline void h_on_iteration(void *p)
{
    harness *h = p;
    if (h->probe)
        h->probe(h);
    if (h->env.iterations >= h->stop_at)
        sim_engine_stop(h->eng);
}

static inline void h_build(harness *h, const char *ini, const char *const *sets, int nsets)
{
    memset(h, 0, sizeof *h);
    sim_experiment_init();
    sim_err err = {0};
    cr_assert_eq(sim_config_load_string("h.ini", ini, sets, nsets, &h->cfg, &err), 0, "%s",
                 err.msg);
    const sim_config *c = &h->cfg;
    h->rng_data = sim_rng_create(c->seed, SIM_STREAM_DATA, 0);
    h->rng_part = sim_rng_create(c->seed, SIM_STREAM_PARTITION, 0);
    h->rng_init = sim_rng_create(c->seed, SIM_STREAM_INIT, 0);
    h->rng_topo = sim_rng_create(c->seed, SIM_STREAM_TOPOLOGY, 0);
    wl_dataset_opts dso = {.spec = c->dataset, .test_fraction = c->test_fraction,
                           .normalize = c->normalize, .rng = h->rng_data};
    h->ds = wl_dataset_create(&dso, &err);
    cr_assert_not_null(h->ds, "%s", err.msg);
    h->model = wl_model_create(c->model, h->ds, &err);
    cr_assert_not_null(h->model, "%s", err.msg);
    h->part = wl_partition_create(h->ds, c->n_workers, c->partition, h->rng_part, &err);
    cr_assert_not_null(h->part, "%s", err.msg);
    h->vt = algo_find(c->algorithm);
    cr_assert_not_null(h->vt);
    cr_assert_eq(topo_physnet_build(&h->pn, c->net_topology, c->n_workers, &err), 0, "%s",
                 err.msg);
    h->pn_built = 1;
    h->eng = sim_engine_create(1024);
    sim_net_desc nd;
    topo_physnet_desc(&h->pn, c->latency, c->bandwidth, (sim_sharing)c->sharing, &nd);
    h->net = sim_net_create(h->eng, &nd, &err);
    cr_assert_not_null(h->net, "%s", err.msg);
    cr_assert_eq(topo_graph_build(&h->graph, c->graph, c->n_workers, h->rng_topo, &err), 0,
                 "%s", err.msg);
    h->graph_built = 1;
    h->mix = topo_mixing_create(&h->graph, (topo_weights)c->weights, &err);
    cr_assert_not_null(h->mix, "%s", err.msg);
    h->compute = sim_compute_create(&c->compute, c->n_workers, &err);
    cr_assert_not_null(h->compute, "%s", err.msg);
    algo_env *env = &h->env;
    env->cfg = c;
    env->eng = h->eng;
    env->net = h->net;
    env->compute = h->compute;
    env->model = h->model;
    env->ds = h->ds;
    env->n = c->n_workers;
    env->d = h->model->n_params;
    env->msg_bytes = (double)env->d * c->wire_bytes;
    env->wire_params = env->d;
    env->wire_value_bytes = c->wire_bytes;
    env->flops_per_sample = h->model->flops_per_sample;
    env->batch = c->batch;
    env->server_host = -1;
    env->graph = &h->graph;
    env->mix = h->mix;
    env->allreduce_kind = SIM_COLL_RING;
    env->rng_global = sim_rng_create(c->seed, SIM_STREAM_ALGORITHM, (uint64_t)c->n_workers);
    env->hooks.iteration = h_on_iteration;
    env->hooks.exp = h;
    int n = env->n;
    int64_t d = env->d;
    env->w = calloc((size_t)n, sizeof *env->w);
    int64_t maxb = 0;
    for (int i = 0; i < n; i++) {
        int64_t b = env->batch > 0 ? env->batch : wl_partition_size(h->part, i);
        maxb = b > maxb ? b : maxb;
    }
    for (int i = 0; i < n; i++) {
        algo_worker *w = &env->w[i];
        w->id = i;
        w->idle_since = -1;
        w->x = malloc((size_t)d * sizeof(float));
        w->grad = calloc((size_t)d, sizeof(float));
        w->ws = malloc(wl_model_workspace_floats(h->model, maxb) * sizeof(float));
        w->bx = malloc((size_t)maxb * (size_t)h->ds->dim * sizeof(float));
        w->by = malloc((size_t)maxb * sizeof(float));
        w->rng_compute = sim_rng_create(c->seed, SIM_STREAM_COMPUTE, (uint64_t)i);
        w->rng_algo = sim_rng_create(c->seed, SIM_STREAM_ALGORITHM, (uint64_t)i);
        gsl_rng *rs = sim_rng_create(c->seed, SIM_STREAM_SAMPLING, (uint64_t)i);
        cr_assert_eq(wl_sampler_init(&w->sampler, h->ds, h->part, i, rs, &err), 0, "%s",
                     err.msg);
        gsl_rng *ri = sim_rng_create(c->seed, SIM_STREAM_INIT, (uint64_t)i);
        h->model->vt->init(h->model, w->x, c->init == 1 ? ri : h->rng_init);
        if (c->init != 1 && i > 0)
            memcpy(w->x, env->w[0].x, (size_t)d * sizeof(float));
        gsl_rng_free(ri);
    }
    cr_assert_eq(h->vt->create(env, &h->alg, &err), 0, "%s", err.msg);
}

/* Runs until `iterations` iterations have completed. */
static inline void h_run(harness *h, int64_t iterations)
{
    sim_err err = {0};
    h->stop_at = iterations;
    if (h->env.iterations == 0)
        cr_assert_eq(h->vt->start(h->alg, &err), 0, "%s", err.msg);
    sim_engine_run_until(h->eng, SIM_TIME_MAX);
    cr_assert_eq(h->env.diverged, 0, "run failed or diverged");
    cr_assert_eq(h->env.iterations, iterations);
}

static inline void h_free(harness *h)
{
    h->vt->destroy(h->alg);
    for (int i = 0; i < h->env.n; i++) {
        algo_worker *w = &h->env.w[i];
        gsl_rng_free(w->sampler.rng);
        wl_sampler_release(&w->sampler);
        free(w->x);
        free(w->grad);
        free(w->ws);
        free(w->bx);
        free(w->by);
        gsl_rng_free(w->rng_compute);
        gsl_rng_free(w->rng_algo);
    }
    free(h->env.w);
    gsl_rng_free(h->env.rng_global);
    sim_compute_destroy(h->compute);
    sim_net_destroy(h->net);
    topo_mixing_destroy(h->mix);
    topo_graph_release(&h->graph);
    topo_physnet_release(&h->pn);
    sim_engine_destroy(h->eng);
    wl_partition_destroy(h->part);
    wl_model_destroy(h->model);
    wl_dataset_destroy(h->ds);
    gsl_rng_free(h->rng_data);
    gsl_rng_free(h->rng_part);
    gsl_rng_free(h->rng_init);
    gsl_rng_free(h->rng_topo);
    sim_config_release(&h->cfg);
}

/* sum_i x_i in double (the workers' models as the method reports them) */
static inline void h_sum(harness *h, double *out)
{
    const float **xs = malloc((size_t)h->env.n * sizeof *xs);
    h->vt->worker_models(h->alg, xs);
    memset(out, 0, (size_t)h->env.d * sizeof *out);
    for (int i = 0; i < h->env.n; i++)
        for (int64_t j = 0; j < h->env.d; j++)
            out[j] += xs[i][j];
    free(xs);
}

static inline double h_consensus(harness *h)
{
    const float **xs = malloc((size_t)h->env.n * sizeof *xs);
    double *scratch = malloc((size_t)h->env.d * sizeof *scratch);
    h->vt->worker_models(h->alg, xs);
    double c = topo_consensus_distance(xs, h->env.n, h->env.d, scratch);
    free(xs);
    free(scratch);
    return c;
}

#endif
