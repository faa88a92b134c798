/* Benchmark: one epoch of dpsgd (D-PSGD, AWC) training mlp(256) on
 * Fashion-MNIST with 16 workers on a ring (Metropolis weights 1/3), batch 32
 * per worker, over a 10 Gb/s star network: wall time, samples per second,
 * and the split between gradients (the model's loss_grad, timed by a
 * wrapper around its vtable slot), gossip (the W_t rows, timed inside the
 * gossip driver with algo_gossip_set_profile), the local updates (the
 * method's prepare/finish) and the rest (event engine, network model,
 * sampling and bookkeeping). The environment is built here, as the
 * experiment runner would, so that evaluation and data loading stay out of
 * the timed epoch. One OpenBLAS thread, as in the simulator.
 * Each epoch is timed on its own; the best one is reported (the machine is
 * shared) beside the others.
 * Usage: bench_dpsgd [MODEL] [WORKERS] [EPOCHS]   (default mlp(256) 16 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algorithms/algo.h"
#include "algorithms/gossip.h"
#include "sim/compute.h"
#include "config/config.h"
#include "experiment/experiment.h"
#include "sim/rng.h"
#include "topology/physnet.h"
#include "workloads/dataset.h"

void openblas_set_num_threads(int num_threads);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The timing wrapper around the model's gradient. */
static const wl_model_vt *real_vt;
static wl_model_vt timed_vt;
static double grad_s;

static double timed_loss_grad(const wl_model *m, const float *params, const float *x,
                              const float *y, int64_t b, float *grad, float *ws)
{
    double t0 = now();
    double loss = real_vt->loss_grad(m, params, x, y, b, grad, ws);
    grad_s += now() - t0;
    return loss;
}

#define MAX_EPOCHS 16

/* Stops after the last epoch and takes the clocks at every epoch end. */
typedef struct stopper {
    sim_engine *eng;
    int64_t *iterations;
    int64_t per_epoch, stop_at;
    algo_gossip_profile *prof;
    int n_marks;
    double wall[MAX_EPOCHS + 1], grad[MAX_EPOCHS + 1], mix[MAX_EPOCHS + 1],
        upd[MAX_EPOCHS + 1];
} stopper;

static void mark(stopper *s)
{
    if (s->n_marks > MAX_EPOCHS)
        return;
    s->wall[s->n_marks] = now();
    s->grad[s->n_marks] = grad_s;
    s->mix[s->n_marks] = s->prof ? s->prof->mix_s : 0;
    s->upd[s->n_marks] = s->prof ? s->prof->update_s : 0;
    s->n_marks++;
}

static void on_iteration(void *p)
{
    stopper *s = p;
    if (*s->iterations % s->per_epoch == 0)
        mark(s);
    if (*s->iterations >= s->stop_at)
        sim_engine_stop(s->eng);
}

static int fail(const char *what, const sim_err *err)
{
    fprintf(stderr, "bench_dpsgd: %s: %s\n", what, err->msg);
    return 1;
}

int main(int argc, char **argv)
{
    const char *model_spec = argc > 1 ? argv[1] : "mlp(256)";
    int n = argc > 2 ? atoi(argv[2]) : 16;
    int epochs = argc > 3 ? atoi(argv[3]) : 3;
    if (epochs < 1 || epochs > MAX_EPOCHS || n < 1) {
        fprintf(stderr, "usage: bench_dpsgd [MODEL] [WORKERS >= 1] [EPOCHS 1..%d]\n",
                MAX_EPOCHS);
        return 2;
    }
    const int batch = 32;
    openblas_set_num_threads(1);
    sim_err_install_library_handlers();
    sim_experiment_init();

    char ini[2048];
    snprintf(ini, sizeof ini,
             "[experiment]\nmax_epochs = %d\n[workers]\ncount = %d\ncompute = model\n"
             "[network]\ntopology = star\nbandwidth = 10Gbps\nlatency = 5us\n"
             "[topology]\ngraph = ring\n"
             "[algorithm]\nname = dpsgd\nlr = 0.05\nbatch = %d\n"
             "[workload]\nmodel = %s\ndataset = fashion_mnist\npartition = iid\n",
             epochs, n, batch, model_spec);
    sim_err err = {0};
    sim_config cfg;
    if (sim_config_load_string("bench_dpsgd", ini, NULL, 0, &cfg, &err) < 0)
        return fail("config", &err);

    double t_load = now();
    gsl_rng *rng_data = sim_rng_create(cfg.seed, SIM_STREAM_DATA, 0);
    gsl_rng *rng_part = sim_rng_create(cfg.seed, SIM_STREAM_PARTITION, 0);
    gsl_rng *rng_init = sim_rng_create(cfg.seed, SIM_STREAM_INIT, 0);
    gsl_rng *rng_topo = sim_rng_create(cfg.seed, SIM_STREAM_TOPOLOGY, 0);
    wl_dataset_opts dso = {.spec = cfg.dataset, .test_fraction = cfg.test_fraction,
                           .normalize = cfg.normalize, .rng = rng_data};
    wl_dataset *ds = wl_dataset_create(&dso, &err);
    if (!ds)
        return fail("dataset", &err);
    t_load = now() - t_load;
    wl_model *model = wl_model_create(cfg.model, ds, &err);
    if (!model)
        return fail("model", &err);
    real_vt = model->vt;
    timed_vt = *model->vt;
    timed_vt.loss_grad = timed_loss_grad;
    model->vt = &timed_vt;
    wl_partition *part = wl_partition_create(ds, n, cfg.partition, rng_part, &err);
    topo_physnet pn;
    if (!part || topo_physnet_build(&pn, cfg.net_topology, n, &err) < 0)
        return fail("partition/network", &err);
    sim_engine *eng = sim_engine_create(1024);
    sim_net_desc nd;
    topo_physnet_desc(&pn, cfg.latency, cfg.bandwidth, (sim_sharing)cfg.sharing, &nd);
    sim_net *net = sim_net_create(eng, &nd, &err);
    topo_graph graph;
    if (!net || topo_graph_build(&graph, cfg.graph, n, rng_topo, &err) < 0)
        return fail("graph", &err);
    topo_mixing *mix = topo_mixing_create(&graph, (topo_weights)cfg.weights, &err);
    sim_compute *compute = sim_compute_create(&cfg.compute, n, &err);
    if (!mix || !compute)
        return fail("mixing/compute", &err);

    algo_env env;
    memset(&env, 0, sizeof env);
    env.cfg = &cfg;
    env.eng = eng;
    env.net = net;
    env.compute = compute;
    env.model = model;
    env.ds = ds;
    env.n = n;
    env.d = model->n_params;
    env.msg_bytes = (double)env.d * cfg.wire_bytes;
    env.wire_params = env.d;
    env.wire_value_bytes = cfg.wire_bytes;
    env.flops_per_sample = model->flops_per_sample;
    env.batch = batch;
    env.server_host = -1;
    env.graph = &graph;
    env.mix = mix;
    env.allreduce_kind = SIM_COLL_RING;
    env.rng_global = sim_rng_create(cfg.seed, SIM_STREAM_ALGORITHM, (uint64_t)n);
    env.w = calloc((size_t)n, sizeof *env.w);
    size_t wsf = wl_model_workspace_floats(model, batch);
    for (int i = 0; i < n; i++) {
        algo_worker *w = &env.w[i];
        w->id = i;
        w->idle_since = -1;
        w->x = malloc((size_t)env.d * sizeof(float));
        w->grad = calloc((size_t)env.d, sizeof(float));
        w->ws = malloc(wsf * sizeof(float));
        w->bx = malloc((size_t)batch * (size_t)ds->dim * sizeof(float));
        w->by = malloc((size_t)batch * sizeof(float));
        w->rng_compute = sim_rng_create(cfg.seed, SIM_STREAM_COMPUTE, (uint64_t)i);
        w->rng_algo = sim_rng_create(cfg.seed, SIM_STREAM_ALGORITHM, (uint64_t)i);
        if (wl_sampler_init(&w->sampler, ds, part, i,
                            sim_rng_create(cfg.seed, SIM_STREAM_SAMPLING, (uint64_t)i),
                            &err) < 0)
            return fail("sampler", &err);
        if (i == 0)
            model->vt->init(model, w->x, rng_init);
        else
            memcpy(w->x, env.w[0].x, (size_t)env.d * sizeof(float));
    }
    int64_t per_epoch = (int64_t)ceil((double)ds->train.n / ((double)n * batch));
    algo_gossip_profile prof = {0};
    stopper st = {.eng = eng, .iterations = &env.iterations, .per_epoch = per_epoch,
                  .stop_at = per_epoch * epochs, .prof = &prof};
    env.hooks.iteration = on_iteration;
    env.hooks.exp = &st;

    const algo_vt *vt = algo_find("dpsgd");
    void *alg = NULL;
    if (vt->create(&env, &alg, &err) < 0)
        return fail("dpsgd", &err);
    algo_gossip_set_profile(alg, &prof);

    mark(&st);
    vt->start(alg, &err);
    sim_engine_run_until(eng, SIM_TIME_MAX);

    printf("workload          %s on Fashion-MNIST, d = %lld, %d workers on a ring (W = 1/3), "
           "batch %d, dpsgd (AWC)\n",
           model_spec, (long long)env.d, n, batch);
    printf("epoch             %lld iterations, %lld samples (data set load %.2f s, not "
           "timed)\n",
           (long long)per_epoch, (long long)(per_epoch * n * batch), t_load);
    int best = 1;
    for (int e = 1; e < st.n_marks; e++) {
        double w = st.wall[e] - st.wall[e - 1];
        printf("  epoch %d         %.3f s wall\n", e, w);
        if (w < st.wall[best] - st.wall[best - 1])
            best = e;
    }
    double wall = st.wall[best] - st.wall[best - 1];
    double g = st.grad[best] - st.grad[best - 1], mx = st.mix[best] - st.mix[best - 1],
           up = st.upd[best] - st.upd[best - 1], rest = wall - g - mx - up;
    double samples = (double)(per_epoch * n * batch);
    printf("best epoch        %.3f s: %.0f samples/s, %.0f gradients/s\n", wall,
           samples / wall, (double)(per_epoch * n) / wall);
    printf("  gradients       %.3f s (%4.1f%%), %.1f us each\n", g, 100 * g / wall,
           1e6 * g / (double)(per_epoch * n));
    printf("  gossip + update %.3f s (%4.1f%%), %.1f us per worker step (W row fused with "
           "the SGD step)\n",
           mx, 100 * mx / wall, 1e6 * mx / (double)(per_epoch * n));
    printf("  other updates   %.3f s (%4.1f%%)\n", up, 100 * up / wall);
    printf("  engine + rest   %.3f s (%4.1f%%): event engine, network model, batch "
           "sampling\n",
           rest, 100 * rest / wall);
    printf("events            %llu in all, simulated time %.3f s\n",
           (unsigned long long)sim_engine_processed(eng), sim_time_to_s(sim_engine_now(eng)));

    vt->destroy(alg);
    for (int i = 0; i < n; i++) {
        algo_worker *w = &env.w[i];
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
    free(env.w);
    gsl_rng_free(env.rng_global);
    sim_compute_destroy(compute);
    sim_net_destroy(net);
    topo_mixing_destroy(mix);
    topo_graph_release(&graph);
    topo_physnet_release(&pn);
    sim_engine_destroy(eng);
    wl_partition_destroy(part);
    model->vt = real_vt;
    wl_model_destroy(model);
    wl_dataset_destroy(ds);
    gsl_rng_free(rng_data);
    gsl_rng_free(rng_part);
    gsl_rng_free(rng_init);
    gsl_rng_free(rng_topo);
    sim_config_release(&cfg);
    return 0;
}
