/* The environment builder (see env.h). Every step that can fail returns
 * at once; xp_env_create then destroys what was built, so a failed build
 * leaves nothing behind. Fields are filled in build order and freed in the
 * reverse order by xp_env_destroy, which also serves the error path (every
 * pointer is NULL or owned). The [faults] section is env_faults.c. */
#include "experiment/env.h"
#include "algorithms/core/runner.h"
#include "experiment/memory.h"
#include "algorithms/compress/compress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment/env_impl.h"
#include "sim/rng.h"
#include "workloads/presets.h"

int xp_env_key_error(const cfg_config *c, const char *section, const char *key, sim_err *err)
{
    char msg[sizeof err->msg];
    int code = err->code ? err->code : SIM_EINTERNAL;
    memcpy(msg, err->msg, sizeof msg);
    return cfg_error(c, section, key, code, err, "%s", msg);
}

/* 1 when the user wrote [section] key (in the file or with --set). */
static int user_wrote(const cfg_config *c, const char *section, const char *key)
{
    const cfg_entry *e = cfg_find(c, section, key);
    return e && e->line != 0;
}

/* The proxy preset, if any: NULL for none; SIM_ECONFIG for an unknown name. */
static int find_proxy(const cfg_config *c, const wl_proxy **out, sim_err *err)
{
    *out = NULL;
    if (strcmp(c->proxy, "none") == 0)
        return 0;
    *out = wl_proxy_find(c->proxy);
    if (*out)
        return 0;
    char known[512] = "";
    size_t used = 0;
    for (int i = 0; wl_proxy_table[i].name && used < sizeof known - 64; i++)
        used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                                 wl_proxy_table[i].name);
    char hint[96];
    return cfg_error(c, "workload", "proxy", SIM_ECONFIG, err,
                            "unknown proxy '%s' (%sknown: none, %s)", c->proxy,
                            sim_suggest(c->proxy, known, hint, sizeof hint), known);
}

/* [topology] weights, mapped by name (the config's enum is not topology's). */
static topo_weights weights_of(cfg_weights_kind k)
{
    switch (k) {
    case CFG_WEIGHTS_UNIFORM:
        return TOPO_WEIGHTS_UNIFORM;
    case CFG_WEIGHTS_METROPOLIS_LAZY:
        return TOPO_WEIGHTS_METROPOLIS_LAZY;
    case CFG_WEIGHTS_METROPOLIS:
        break;
    }
    return TOPO_WEIGHTS_METROPOLIS;
}

static wl_dataset *load_dataset(const cfg_config *c, gsl_rng *rng, sim_err *err)
{
    char dir[SIM_PATH_MAX];
    sim_path_dir(c->path, dir, sizeof dir);
    wl_dataset_opts dso = {
        .spec = c->dataset,
        .test_fraction = c->test_fraction,
        .normalize = c->normalize == CFG_NORMALIZE_STANDARD,
        .rng = rng,
        .data_dir = NULL,
        .dir = dir,
    };
    if (xp_memory_check_dataset(c, err) < 0)
        return NULL;
    wl_dataset *ds = wl_dataset_create(&dso, err);
    if (!ds)
        xp_env_key_error(c, "workload", "dataset", err);
    return ds;
}

wl_dataset *xp_env_dataset_create(const cfg_config *cfg, sim_err *err)
{
    gsl_rng *rng = sim_rng_create(cfg->seed, SIM_STREAM_DATA, 0);
    if (!rng) {
        sim_err_set(err, SIM_ENOMEM, "out of memory");
        return NULL;
    }
    wl_dataset *ds = load_dataset(cfg, rng, err);
    gsl_rng_free(rng);
    return ds;
}

/* A sparse data set stays sparse when the model has sparse kernels and
 * [workload] sparse = auto; otherwise it gets its dense copy here (only
 * its size is checked when the run is only checked: a borrowed data set
 * is then left as it is). */
static int dense_rows(xp_env *x, sim_err *err)
{
    const cfg_config *c = x->cfg;
    if (!x->ds->sparse)
        return 0;
    int off = c->sparse == CFG_SPARSE_OFF;
    if (!off && wl_model_sparse(x->model))
        return 0;
    char why[160];
    if (off)
        snprintf(why, sizeof why, "[workload] sparse = off");
    else
        snprintf(why, sizeof why, "model %.100s (no sparse kernel)", c->model);
    int rc = x->check_only ? wl_dataset_dense_check(x->ds, why, err)
                           : wl_dataset_densify(x->ds, why, err);
    if (rc < 0)
        return xp_env_key_error(c, "workload", "dataset", err);
    return 0;
}

/* Workers: buffers for the largest step, their streams, the initial model
 * (worker 0's draw copied to all, or one draw each with init = independent). */
static int build_workers(xp_env *x, sim_err *err)
{
    algo_env *env = &x->env;
    const cfg_config *c = x->cfg;
    int n = env->n;
    int64_t d = env->d;
    int dim = x->ds->dim;
    env->w = calloc((size_t)n, sizeof *env->w);
    if (!env->w)
        return sim_err_set(err, SIM_ENOMEM, "out of memory for %d workers", n);
    int64_t maxb = 0;
    for (int i = 0; i < n; i++) {
        int64_t b = env->batch > 0 ? env->batch : wl_partition_size(x->part, i);
        if (b > maxb)
            maxb = b;
    }
    size_t wsf = wl_model_workspace_floats(x->model, maxb);
    const int draws = sim_compute_draws(x->compute);
    for (int i = 0; i < n; i++) {
        algo_worker *w = &env->w[i];
        w->id = i;
        w->idle_since = -1;
        w->batch = env->batch;
        w->batch_cap = maxb;
        w->x = malloc((size_t)d * sizeof(float));
        w->grad = calloc((size_t)d, sizeof(float));
        w->ws = malloc(wsf * sizeof(float));
        if (x->ds->sparse)
            w->brows = malloc((size_t)maxb * sizeof *w->brows);
        else
            w->bx = malloc((size_t)maxb * (size_t)dim * sizeof(float));
        w->by = malloc((size_t)maxb * sizeof(float));
        /* streams nobody draws from are not allocated (5 kB each) */
        if (draws)
            w->rng_compute = sim_rng_create(c->seed, SIM_STREAM_COMPUTE, (uint64_t)i);
        if (x->vt->worker_rng)
            w->rng_algo = sim_rng_create(c->seed, SIM_STREAM_ALGORITHM, (uint64_t)i);
        gsl_rng *rs = sim_rng_create(c->seed, SIM_STREAM_SAMPLING, (uint64_t)i);
        if (!w->x || !w->grad || !w->ws || (!w->bx && !w->brows) || !w->by ||
            (draws && !w->rng_compute) || (x->vt->worker_rng && !w->rng_algo) || !rs) {
            if (rs)
                gsl_rng_free(rs);
            return sim_err_set(err, SIM_ENOMEM, "out of memory for worker %d", i);
        }
        /* the sampler borrows its stream; free_workers frees it */
        int rc = wl_sampler_init(&w->sampler, x->ds, x->part, i, rs, err);
        if (rc < 0) {
            gsl_rng_free(rs);
            return rc;
        }
        if (env->noise.kind != ALGO_NOISE_NONE) {
            w->rng_noise = sim_rng_create(c->seed, SIM_STREAM_NOISE, (uint64_t)i);
            w->rng_noise_tmp = sim_rng_create(c->seed, SIM_STREAM_NOISE, (uint64_t)i);
            if (!w->rng_noise || !w->rng_noise_tmp)
                return sim_err_set(err, SIM_ENOMEM, "out of memory for worker %d", i);
        }
        if (c->init == CFG_INIT_INDEPENDENT) {
            gsl_rng *ri = sim_rng_create(c->seed, SIM_STREAM_INIT, (uint64_t)i);
            if (!ri)
                return sim_err_set(err, SIM_ENOMEM, "out of memory");
            x->model->vt->init(x->model, w->x, ri);
            gsl_rng_free(ri);
        } else if (i == 0) {
            x->model->vt->init(x->model, w->x, x->rng_init);
        } else {
            memcpy(w->x, env->w[0].x, (size_t)d * sizeof(float));
        }
    }
    return 0;
}

static void free_workers(algo_env *env)
{
    if (!env->w)
        return;
    for (int i = 0; i < env->n; i++) {
        algo_worker *w = &env->w[i];
        if (w->sampler.rng)
            gsl_rng_free(w->sampler.rng);
        wl_sampler_release(&w->sampler);
        free(w->x);
        free(w->grad);
        free(w->stale_counts);
        free(w->ws);
        free(w->bx);
        free(w->brows);
        free(w->by);
        if (w->rng_compute)
            gsl_rng_free(w->rng_compute);
        if (w->rng_algo)
            gsl_rng_free(w->rng_algo);
        if (w->rng_noise)
            gsl_rng_free(w->rng_noise);
        if (w->rng_noise_tmp)
            gsl_rng_free(w->rng_noise_tmp);
    }
    free(env->w);
    env->w = NULL;
}

/* The algo_env's sizes and pointers (explicit sim_params / sim_flops win
 * over a proxy preset, which wins over the model's own numbers). */
static int fill_env(xp_env *x, const wl_proxy *proxy, int server, sim_err *err)
{
    const cfg_config *c = x->cfg;
    algo_env *env = &x->env;
    env->cfg = c;
    env->eng = x->eng;
    env->net = x->net;
    env->compute = x->compute;
    env->model = x->model;
    env->ds = x->ds;
    env->n = c->n_workers;
    env->d = x->model->n_params;
    int64_t wire_params = c->sim_params > 0 ? c->sim_params
                          : proxy          ? proxy->params
                                           : env->d;
    env->msg_bytes = (double)wire_params * (double)c->wire_bytes;
    env->wire_params = wire_params;
    env->wire_value_bytes = c->wire_bytes;
    env->flops_per_sample = c->sim_flops > 0 ? c->sim_flops
                            : proxy          ? proxy->flops_per_sample
                                             : x->model->flops_per_sample;
    env->batch = c->batch;
    env->server_host = server ? c->n_workers : -1;
    env->allreduce_kind = c->collective;
    env->per_node = x->pn.per_node;
    return build_workers(x, err);
}

/* Multi-GPU servers: the intra-server links of hierarchical(...), and the
 * keys that need servers or a method that supports them. */
/* [workers] device and efficiency per worker (docs/models-and-data.md):
 * with several device groups, every worker's FLOP/s reached, its group's
 * peak x efficiency, into *speeds (malloc'd, NULL otherwise) and co; with
 * efficiency = published, each device's efficiency from its published
 * throughput of the proxy. One device with a number: co unchanged, so
 * the step time is the one expression it always was. */
static int device_speeds(const cfg_config *c, const wl_proxy *proxy, sim_compute_opts *co,
                         double **speeds, sim_err *err)
{
    *speeds = NULL;
    if (co->dist.kind != SIM_DIST_MODEL || (!c->efficiency_published && c->n_device_groups <= 1))
        return 0;
    if (c->efficiency_published && c->n_device_groups == 0)
        return cfg_error(c, "workers", "efficiency", SIM_ECONFIG, err,
                         "published needs [workers] device by name (dtsim list presets), "
                         "not a speed");
    if (c->efficiency_published && !proxy)
        return cfg_error(c, "workers", "efficiency", SIM_ECONFIG, err,
                         "published needs [workload] proxy (the model whose published "
                         "throughput sets the efficiency)");
    double eff[CFG_MAX_DEVICE_GROUPS];
    for (int g = 0; g < c->n_device_groups; g++) {
        const cfg_device_group *d = &c->device_groups[g];
        eff[g] = c->compute.efficiency;
        if (!c->efficiency_published)
            continue;
        eff[g] = wl_device_efficiency(d->name, proxy, (int)c->precision);
        if (!(eff[g] > 0))
            return cfg_error(c, "workers", "efficiency", SIM_ECONFIG, err,
                             "published: no published throughput of %s on %s in %s (dtsim "
                             "list presets lists those known); give a number",
                             proxy->name, d->name, wl_precision_name((int)c->precision));
    }
    if (c->n_device_groups == 1) {
        co->efficiency = eff[0];
        return 0;
    }
    double *s = malloc((size_t)c->n_workers * sizeof *s);
    if (!s)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    int w = 0;
    for (int g = 0; g < c->n_device_groups; g++)
        for (int k = 0; k < c->device_groups[g].count && w < c->n_workers; k++)
            s[w++] = c->device_groups[g].flops * eff[g];
    co->worker_speed = s;
    *speeds = s;
    return 0;
}

static int check_servers(xp_env *x, sim_err *err)
{
    const cfg_config *c = x->cfg;
    topo_physnet_set_intra(&x->pn, c->intra_latency, c->intra_bandwidth);
    if (c->collective == SIM_COLL_HIER && x->pn.per_node < 1)
        return cfg_error(c, "network", "collective", SIM_ECONFIG, err,
                                "hierarchical needs servers of GPUs: topology = "
                                "hierarchical(NODES, PER_NODE) or a server preset, got '%s'",
                                c->net_topology);
    if (c->collective == SIM_COLL_HIER && c->n_workers % x->pn.per_node != 0)
        return cfg_error(c, "network", "collective", SIM_ECONFIG, err,
                                "hierarchical needs whole servers: %d workers on servers of %d",
                                c->n_workers, x->pn.per_node);
    return algo_bucket_check(x->vt, c, err);
}

/* A batch larger than a worker's shard would draw the same samples twice
 * in one step: an error naming the smallest shard. */
static int check_batch(xp_env *x, sim_err *err)
{
    const cfg_config *c = x->cfg;
    if (c->batch <= 0)
        return 0;
    int small = 0;
    for (int i = 1; i < c->n_workers; i++)
        if (wl_partition_size(x->part, i) < wl_partition_size(x->part, small))
            small = i;
    int64_t shard = wl_partition_size(x->part, small);
    if (c->batch <= shard)
        return 0;
    return cfg_error(c, "algorithm", "batch", SIM_ECONFIG, err,
                            "%d is larger than worker %d's shard of %lld samples (%lld "
                            "training samples over %d workers, partition %s); use at most "
                            "%lld, or full",
                            c->batch, small, (long long)shard, (long long)x->ds->train.n,
                            c->n_workers, c->partition, (long long)shard);
}

/* The engine's advance hook: the deferred work and the gradients queued
 * in the instant that ends run before time moves on. */
static void join_grads(void *ctx) { algo_env_grad_join(ctx); }

/* Gradients and deferred work on threads > 1 threads: the pool, one job
 * slot of each per worker, and the join at every time advance. A model
 * with loss_grad_many (torch) queues them at any thread count, so that the
 * gradients of an instant go in one request. */
static int start_pool(xp_env *x, sim_err *err)
{
    const int many = x->model->vt->loss_grad_many != NULL;
    if (x->threads <= 1 && !many)
        return 0;
    x->run.jobs = calloc((size_t)x->env.n, sizeof *x->run.jobs);
    x->run.defers = calloc((size_t)x->env.n, sizeof *x->run.defers);
    if (many)
        x->run.reqs = calloc((size_t)x->env.n, sizeof *x->run.reqs);
    if (!x->run.jobs || !x->run.defers || (many && !x->run.reqs))
        return sim_err_set(err, SIM_ENOMEM, "out of memory for %d workers", x->env.n);
    x->pool = x->threads > 1 ? sim_pool_create(x->threads) : NULL;
    if (x->threads > 1 && !x->pool)
        return sim_err_set(err, SIM_ENOMEM, "cannot start %d threads for the gradients",
                           x->threads);
    x->run.pool = x->pool;
    sim_engine_set_advance_hook(x->eng, join_grads, &x->env);
    return 0;
}

static int build(xp_env *x, sim_err *err)
{
    const cfg_config *c = x->cfg;
    const wl_proxy *proxy;
    int rc = find_proxy(c, &proxy, err);
    if (rc < 0)
        return rc;
    if (!x->vt)
        x->vt = algo_find(c->algorithm);
    if (!x->vt)
        return cfg_error(c, "algorithm", "name", SIM_ECONFIG, err,
                                "unknown algorithm '%s'", c->algorithm);
    rc = algo_compress_check(x->vt, c, err);
    if (rc < 0)
        return rc;
    x->rng_data = sim_rng_create(c->seed, SIM_STREAM_DATA, 0);
    x->rng_part = sim_rng_create(c->seed, SIM_STREAM_PARTITION, 0);
    x->rng_init = sim_rng_create(c->seed, SIM_STREAM_INIT, 0);
    x->rng_topo = sim_rng_create(c->seed, SIM_STREAM_TOPOLOGY, 0);
    x->env.rng_global = sim_rng_create(c->seed, SIM_STREAM_ALGORITHM, (uint64_t)c->n_workers);
    if (!x->rng_data || !x->rng_part || !x->rng_init || !x->rng_topo || !x->env.rng_global)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    if (!x->ds)
        x->ds = load_dataset(c, x->rng_data, err);
    if (!x->ds)
        return err->code ? err->code : SIM_EINTERNAL;
    wl_model_opts mo = {
        .dir = x->dir,
        .torch_batched = cfg_get_string(c, "workload", "torch_batched"),
        .torch_device = cfg_get_string(c, "workload", "torch_device"),
        .seed = (uint64_t)c->seed,
    };
    x->model = wl_model_create_opts(c->model, x->ds, &mo, err);
    if (!x->model)
        return xp_env_key_error(c, "workload", "model", err);
    rc = xp_memory_check(c, x->model->n_params, x->threads, err);
    if (rc < 0)
        return rc;
    rc = dense_rows(x, err);
    if (rc < 0)
        return rc;
    x->part = wl_partition_create(x->ds, c->n_workers, c->partition, x->rng_part, err);
    if (!x->part)
        return xp_env_key_error(c, "workload", "partition", err);
    rc = check_batch(x, err);
    if (rc < 0)
        return rc;

    int server = algo_needs_server(x->vt, c);
    int hosts = c->n_workers + (server ? 1 : 0);
    rc = topo_physnet_build_in(&x->pn, c->net_topology, x->dir, hosts, err);
    if (rc < 0)
        return xp_env_key_error(c, "network", "topology", err);
    x->pn_built = 1;
    rc = check_servers(x, err);
    if (rc < 0)
        return rc;
    x->eng = sim_engine_create(1024);
    if (!x->eng)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    sim_net_desc nd;
    topo_physnet_desc(&x->pn, c->latency, c->bandwidth, c->sharing, &nd);
    nd.routing = c->routing;
    cfg_net_transport(c, &nd);
    /* a lost message is re-sent when the methods' timeout fires */
    sim_time rto = 0;
    rc = cfg_get_time(c, "faults", "sync_timeout", &rto, err);
    if (rc < 0)
        return rc;
    x->env.sync_timeout = rto; /* the time parser refuses a negative one */
    nd.retransmit_timeout = sim_time_to_s(rto);
    x->net = sim_net_create(x->eng, &nd, err);
    if (!x->net)
        return err->code ? err->code : SIM_EINTERNAL;
    sim_net_set_loss_hook(x->net, xp_env_on_net_loss, x);
    if (x->vt->uses_graph) {
        rc = topo_graph_build_in(&x->graph, c->graph, x->dir, c->n_workers, x->rng_topo, err);
        if (rc < 0)
            return xp_env_key_error(c, "topology", "graph", err);
        x->graph_built = 1;
        x->mix = topo_mixing_create(&x->graph, weights_of(c->weights), err);
        if (!x->mix)
            return xp_env_key_error(c, "topology", "weights", err);
        x->env.graph = &x->graph;
        x->env.mix = x->mix;
    } else if (user_wrote(c, "topology", "graph") || user_wrote(c, "topology", "weights")) {
        /* unused by this method, but a value the user wrote must be valid:
         * built once and dropped (the topology stream serves nothing else) */
        rc = topo_graph_build_in(&x->graph, c->graph, x->dir, c->n_workers, x->rng_topo, err);
        if (rc < 0)
            return xp_env_key_error(c, "topology", "graph", err);
        x->graph_built = 1;
        topo_mixing *mix = topo_mixing_create(&x->graph, weights_of(c->weights), err);
        if (!mix)
            return xp_env_key_error(c, "topology", "weights", err);
        topo_mixing_destroy(mix);
    }
    sim_compute_opts co = c->compute; /* with a trace's file name resolved */
    if (co.dist.kind == SIM_DIST_TRACE &&
        sim_path_resolve(x->dir, c->compute.dist.trace_path, co.dist.trace_path,
                         sizeof co.dist.trace_path, err))
        return xp_env_key_error(c, "workers", "compute", err);
    double *speeds;
    rc = device_speeds(c, proxy, &co, &speeds, err);
    if (rc < 0)
        return rc;
    x->compute = sim_compute_create(&co, c->n_workers, err);
    free(speeds);
    if (!x->compute)
        return xp_env_key_error(c, "workers", "compute", err);
    char why[256];
    const char *spec = cfg_get_string(c, "workload", "grad_noise");
    if (algo_noise_parse(spec, &x->env.noise, why, sizeof why) < 0)
        return cfg_error(c, "workload", "grad_noise", SIM_ECONFIG, err, "%s", why);
    if (x->check_only) {
        rc = xp_env_faults_check(x, err);
        if (rc < 0 || !x->check_method)
            return rc;
    }
    rc = fill_env(x, proxy, server, err);
    if (rc < 0)
        return rc;
    if (wl_model_failed(x->model, err)) /* its initial parameters */
        return xp_env_key_error(c, "workload", "model", err);
    return start_pool(x, err);
}

xp_env *xp_env_create(const cfg_config *cfg, const xp_env_opts *opts, sim_err *err)
{
    xp_env *x = calloc(1, sizeof *x);
    if (!x) {
        sim_err_set(err, SIM_ENOMEM, "out of memory");
        return NULL;
    }
    x->cfg = cfg;
    sim_path_dir(cfg->path, x->dir, sizeof x->dir);
    x->env.run = &x->run;
    if (opts) {
        x->vt = opts->vt;
        x->check_only = opts->check_only || opts->check_method;
        x->check_method = opts->check_method;
        x->ds = opts->dataset;
        x->ds_borrowed = opts->dataset != NULL;
        x->threads = opts->threads;
    }
    if (build(x, err) < 0) {
        xp_env_destroy(x);
        return NULL;
    }
    return x;
}


int xp_env_algo_create(xp_env *x, sim_err *err)
{
    if ((x->check_only && !x->check_method) || x->alg)
        return sim_err_set(err, SIM_EINTERNAL, "%s: environment not ready for the method",
                           x->vt->name);
    int rc = xp_env_faults_load(x, err);
    if (rc == 0)
        rc = x->vt->create(&x->env, &x->alg, err);
    if (rc < 0)
        return rc;
    return xp_env_faults_start(x, err);
}

void xp_env_destroy(xp_env *x)
{
    if (!x)
        return;
    if (x->vt && x->alg && x->vt->destroy)
        x->vt->destroy(x->alg);
    algo_env_release(&x->env); /* then what the run owns (algorithms/core/own.h) */
    /* queued gradients are dropped: nothing runs on the pool between joins */
    sim_pool_destroy(x->pool);
    free(x->run.jobs);
    free(x->run.defers);
    free(x->run.reqs);
    free_workers(&x->env);
    free(x->faults);
    free(x->fault_rate0);
    free(x->log);
    for (int i = 0; x->rng_fault && i < x->cfg->n_workers; i++)
        if (x->rng_fault[i])
            gsl_rng_free(x->rng_fault[i]);
    free(x->rng_fault);
    sim_compute_destroy(x->compute);
    topo_mixing_destroy(x->mix);
    if (x->graph_built)
        topo_graph_release(&x->graph);
    sim_net_destroy(x->net);
    sim_engine_destroy(x->eng);
    if (x->pn_built)
        topo_physnet_release(&x->pn);
    wl_partition_destroy(x->part);
    wl_model_destroy(x->model);
    if (!x->ds_borrowed)
        wl_dataset_destroy(x->ds);
    if (x->env.rng_global)
        gsl_rng_free(x->env.rng_global);
    if (x->rng_topo)
        gsl_rng_free(x->rng_topo);
    if (x->rng_init)
        gsl_rng_free(x->rng_init);
    if (x->rng_part)
        gsl_rng_free(x->rng_part);
    if (x->rng_data)
        gsl_rng_free(x->rng_data);
    free(x);
}

algo_env *xp_env_algo_env(xp_env *x) { return &x->env; }
const algo_vt *xp_env_vt(const xp_env *x) { return x->vt; }
int xp_env_threads(const xp_env *x) { return x->threads > 1 ? x->threads : 1; }
void *xp_env_state(const xp_env *x) { return x->alg; }
const cfg_config *xp_env_config(const xp_env *x) { return x->cfg; }
sim_engine *xp_env_engine(const xp_env *x) { return x->eng; }
sim_net *xp_env_net(const xp_env *x) { return x->net; }
void xp_env_set_trace(xp_env *x, struct xp_trace *t) { x->trace = t; }
wl_model *xp_env_model(const xp_env *x) { return x->model; }
const wl_dataset *xp_env_dataset(const xp_env *x) { return x->ds; }
const wl_partition *xp_env_partition(const xp_env *x) { return x->part; }
