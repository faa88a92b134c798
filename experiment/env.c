/* The environment builder (see env.h). Every step that can fail returns
 * at once; xp_env_create then destroys what was built, so a failed build
 * leaves nothing behind. Fields are filled in build order and freed in the
 * reverse order by xp_env_destroy, which also serves the error path (every
 * pointer is NULL or owned). */
#include "experiment/env.h"
#include "algorithms/compress/compress.h"
#include "algorithms/core/runner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/compute.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "sim/pool.h"
#include "sim/rng.h"
#include "topology/graph.h"
#include "topology/mixing.h"
#include "topology/physnet.h"
#include "workloads/presets.h"

struct xp_env {
    const sim_config *cfg;
    const algo_vt *vt;
    void *alg;              /* the method's state */
    int check_only;
    gsl_rng *rng_data, *rng_part, *rng_init, *rng_topo;
    wl_dataset *ds;
    int ds_borrowed;
    wl_model *model;
    wl_partition *part;
    topo_physnet pn;
    int pn_built;
    sim_engine *eng;
    sim_net *net;
    topo_graph graph;
    int graph_built;
    topo_mixing *mix;
    sim_compute *compute;
    int64_t *hist;          /* staleness histogram (run.staleness_cap counts) */
    algo_fault *faults;     /* [faults] schedule, sorted by time */
    double *fault_rate0;    /* per event: a link's configured rate (for up) */
    int n_faults;
    int rejoins_pending;    /* rejoin events scheduled and not yet run */
    sim_dist mtbf, downtime; /* [faults] mtbf, downtime (random crashes) */
    int has_mtbf, has_downtime;
    gsl_rng **rng_fault;    /* per worker when mtbf is set (SIM_STREAM_FAULT) */
    algo_fault *log;        /* faults that happened, in time order (faults table) */
    int n_log, cap_log;
    int threads;            /* xp_env_opts.threads */
    sim_pool *pool;         /* threads > 1 */
    algo_runner run;        /* the runner's bookkeeping; env.run points here */
    algo_env env;
};

static void on_net_loss(void *ctx, int src, int dst, double bytes, int resent);

/* Prefixes err's message with the config key it came from. */
static int key_error(const sim_config *c, const char *section, const char *key, sim_err *err)
{
    char msg[sizeof err->msg];
    int code = err->code ? err->code : SIM_EINTERNAL;
    memcpy(msg, err->msg, sizeof msg);
    return sim_config_error(c, section, key, code, err, "%s", msg);
}

/* 1 when the user wrote [section] key (in the file or with --set). */
static int user_wrote(const sim_config *c, const char *section, const char *key)
{
    const sim_entry *e = sim_config_find(c, section, key);
    return e && e->line != 0;
}

/* The proxy preset, if any: NULL for none; SIM_ECONFIG for an unknown name. */
static int find_proxy(const sim_config *c, const wl_proxy **out, sim_err *err)
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
    return sim_config_error(c, "workload", "proxy", SIM_ECONFIG, err,
                            "unknown proxy '%s' (%sknown: none, %s)", c->proxy,
                            sim_suggest(c->proxy, known, hint, sizeof hint), known);
}

/* [topology] weights, mapped by name (the config's enum is not topology's). */
static topo_weights weights_of(sim_weights_kind k)
{
    switch (k) {
    case SIM_WEIGHTS_UNIFORM:
        return TOPO_WEIGHTS_UNIFORM;
    case SIM_WEIGHTS_METROPOLIS_LAZY:
        return TOPO_WEIGHTS_METROPOLIS_LAZY;
    case SIM_WEIGHTS_METROPOLIS:
        break;
    }
    return TOPO_WEIGHTS_METROPOLIS;
}

static wl_dataset *load_dataset(const sim_config *c, gsl_rng *rng, sim_err *err)
{
    wl_dataset_opts dso = {
        .spec = c->dataset,
        .test_fraction = c->test_fraction,
        .normalize = c->normalize == SIM_NORMALIZE_STANDARD,
        .rng = rng,
        .data_dir = NULL,
    };
    wl_dataset *ds = wl_dataset_create(&dso, err);
    if (!ds)
        key_error(c, "workload", "dataset", err);
    return ds;
}

wl_dataset *xp_env_dataset_create(const sim_config *cfg, sim_err *err)
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
    const sim_config *c = x->cfg;
    if (!x->ds->sparse)
        return 0;
    int off = c->sparse == SIM_SPARSE_OFF;
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
        return key_error(c, "workload", "dataset", err);
    return 0;
}

/* Workers: buffers for the largest step, their streams, the initial model
 * (worker 0's draw copied to all, or one draw each with init = independent). */
static int build_workers(xp_env *x, sim_err *err)
{
    algo_env *env = &x->env;
    const sim_config *c = x->cfg;
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
        if (c->init == SIM_INIT_INDEPENDENT) {
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
    const sim_config *c = x->cfg;
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
    x->run.staleness_cap = 4 * (int64_t)c->n_workers + 64;
    x->hist = calloc((size_t)x->run.staleness_cap, sizeof *x->hist);
    if (!x->hist)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    x->run.staleness_hist = x->hist;
    return build_workers(x, err);
}

/* Multi-GPU servers: the intra-server links of hierarchical(...), and the
 * keys that need servers or a method that supports them. */
static int check_servers(xp_env *x, sim_err *err)
{
    const sim_config *c = x->cfg;
    topo_physnet_set_intra(&x->pn, c->intra_latency, c->intra_bandwidth);
    if (c->collective == SIM_COLL_HIER && x->pn.per_node < 1)
        return sim_config_error(c, "network", "collective", SIM_ECONFIG, err,
                                "hierarchical needs servers of GPUs: topology = "
                                "hierarchical(NODES, PER_NODE) or a server preset, got '%s'",
                                c->net_topology);
    if (c->collective == SIM_COLL_HIER && c->n_workers % x->pn.per_node != 0)
        return sim_config_error(c, "network", "collective", SIM_ECONFIG, err,
                                "hierarchical needs whole servers: %d workers on servers of %d",
                                c->n_workers, x->pn.per_node);
    return algo_bucket_check(x->vt, c, err);
}

/* A batch larger than a worker's shard would draw the same samples twice
 * in one step: an error naming the smallest shard. */
static int check_batch(xp_env *x, sim_err *err)
{
    const sim_config *c = x->cfg;
    if (c->batch <= 0)
        return 0;
    int small = 0;
    for (int i = 1; i < c->n_workers; i++)
        if (wl_partition_size(x->part, i) < wl_partition_size(x->part, small))
            small = i;
    int64_t shard = wl_partition_size(x->part, small);
    if (c->batch <= shard)
        return 0;
    return sim_config_error(c, "algorithm", "batch", SIM_ECONFIG, err,
                            "%d is larger than worker %d's shard of %lld samples (%lld "
                            "training samples over %d workers, partition %s); use at most "
                            "%lld, or full",
                            c->batch, small, (long long)shard, (long long)x->ds->train.n,
                            c->n_workers, c->partition, (long long)shard);
}

/* The engine's advance hook: the gradients queued in the instant that
 * ends run before time moves on. */
static void join_grads(void *ctx) { algo_env_grad_join(ctx); }

/* Gradients on threads > 1 threads: the pool, one job slot per worker, and
 * the join at every time advance. */
static int start_pool(xp_env *x, sim_err *err)
{
    if (x->threads <= 1)
        return 0;
    x->run.jobs = calloc((size_t)x->env.n, sizeof *x->run.jobs);
    x->pool = x->run.jobs ? sim_pool_create(x->threads) : NULL;
    if (!x->pool)
        return sim_err_set(err, SIM_ENOMEM, "cannot start %d threads for the gradients",
                           x->threads);
    x->run.pool = x->pool;
    sim_engine_set_advance_hook(x->eng, join_grads, &x->env);
    return 0;
}

static int build(xp_env *x, sim_err *err)
{
    const sim_config *c = x->cfg;
    const wl_proxy *proxy;
    int rc = find_proxy(c, &proxy, err);
    if (rc < 0)
        return rc;
    if (!x->vt)
        x->vt = algo_find(c->algorithm);
    if (!x->vt)
        return sim_config_error(c, "algorithm", "name", SIM_ECONFIG, err,
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
    x->model = wl_model_create(c->model, x->ds, err);
    if (!x->model)
        return key_error(c, "workload", "model", err);
    rc = dense_rows(x, err);
    if (rc < 0)
        return rc;
    x->part = wl_partition_create(x->ds, c->n_workers, c->partition, x->rng_part, err);
    if (!x->part)
        return key_error(c, "workload", "partition", err);
    rc = check_batch(x, err);
    if (rc < 0)
        return rc;

    int server = algo_needs_server(x->vt, c);
    int hosts = c->n_workers + (server ? 1 : 0);
    rc = topo_physnet_build(&x->pn, c->net_topology, hosts, err);
    if (rc < 0)
        return key_error(c, "network", "topology", err);
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
    /* a lost message is re-sent when the methods' timeout fires */
    sim_time rto = 0;
    rc = sim_config_get_time(c, "faults", "sync_timeout", &rto, err);
    if (rc < 0)
        return rc;
    nd.retransmit_timeout = sim_time_to_s(rto);
    x->net = sim_net_create(x->eng, &nd, err);
    if (!x->net)
        return err->code ? err->code : SIM_EINTERNAL;
    sim_net_set_loss_hook(x->net, on_net_loss, x);
    if (x->vt->uses_graph) {
        rc = topo_graph_build(&x->graph, c->graph, c->n_workers, x->rng_topo, err);
        if (rc < 0)
            return key_error(c, "topology", "graph", err);
        x->graph_built = 1;
        x->mix = topo_mixing_create(&x->graph, weights_of(c->weights), err);
        if (!x->mix)
            return key_error(c, "topology", "weights", err);
        x->env.graph = &x->graph;
        x->env.mix = x->mix;
    } else if (user_wrote(c, "topology", "graph") || user_wrote(c, "topology", "weights")) {
        /* unused by this method, but a value the user wrote must be valid:
         * built once and dropped (the topology stream serves nothing else) */
        rc = topo_graph_build(&x->graph, c->graph, c->n_workers, x->rng_topo, err);
        if (rc < 0)
            return key_error(c, "topology", "graph", err);
        x->graph_built = 1;
        topo_mixing *mix = topo_mixing_create(&x->graph, weights_of(c->weights), err);
        if (!mix)
            return key_error(c, "topology", "weights", err);
        topo_mixing_destroy(mix);
    }
    x->compute = sim_compute_create(&c->compute, c->n_workers, err);
    if (!x->compute)
        return key_error(c, "workers", "compute", err);
    char why[256];
    const char *spec = sim_config_get_string(c, "workload", "grad_noise");
    if (algo_noise_parse(spec, &x->env.noise, why, sizeof why) < 0)
        return sim_config_error(c, "workload", "grad_noise", SIM_ECONFIG, err, "%s", why);
    if (x->check_only)
        return 0;
    rc = fill_env(x, proxy, server, err);
    if (rc < 0)
        return rc;
    return start_pool(x, err);
}

xp_env *xp_env_create(const sim_config *cfg, const xp_env_opts *opts, sim_err *err)
{
    xp_env *x = calloc(1, sizeof *x);
    if (!x) {
        sim_err_set(err, SIM_ENOMEM, "out of memory");
        return NULL;
    }
    x->cfg = cfg;
    x->env.run = &x->run;
    if (opts) {
        x->vt = opts->vt;
        x->check_only = opts->check_only;
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

/* Appends an applied fault to the log (the faults table). Grows by
 * doubling: faults are rare events, not a hot loop. */
static void fault_log(xp_env *x, const algo_fault *ev)
{
    if (x->n_log == x->cap_log) {
        int cap = x->cap_log ? 2 * x->cap_log : 16;
        algo_fault *log = realloc(x->log, (size_t)cap * sizeof *log);
        if (!log) {
            algo_env_fail(&x->env, SIM_ENOMEM, "out of memory for the fault log");
            return;
        }
        x->log = log;
        x->cap_log = cap;
    }
    algo_fault *l = &x->log[x->n_log++];
    *l = *ev;
    l->time = sim_engine_now(x->eng);
}

/* A message attempt lost on a link that went down, or its re-send: a
 * `lost` row of the faults table (target SRC-DST hosts, value = bytes sent
 * before the loss) or a `resent` row (value = the message's bytes). */
static void on_net_loss(void *ctx, int src, int dst, double bytes, int resent)
{
    xp_env *x = ctx;
    algo_fault ev = {.kind = resent ? ALGO_FAULT_RESENT : ALGO_FAULT_LOST,
                     .target = src,
                     .target2 = dst,
                     .value = bytes};
    fault_log(x, &ev);
}

/* 1 when every worker is down and no rejoin is scheduled: nothing can
 * happen any more (without this check a run with time-based evaluations
 * would evaluate the same model forever). */
static int all_down_for_good(const xp_env *x)
{
    if (x->rejoins_pending > 0)
        return 0;
    for (int i = 0; i < x->env.n; i++)
        if (!x->env.w[i].down)
            return 0;
    return 1;
}

/* Applies a fault now: the environment's part (down, slowdown, link rate),
 * the method's hook, and a log row. rate0: a link's configured rate (for
 * up). Returns 1 when it was applied (a crash of a crashed worker and a
 * rejoin of a live one are not). */
static int fault_apply(xp_env *x, const algo_fault *ev, double rate0)
{
    if (ev->kind == ALGO_FAULT_LINK) {
        /* value 0: down (its row logged before the `lost` rows it causes);
         * a rate or up (the configured rate) also brings a down link up */
        double rate = ev->value > 0 ? ev->value : ev->value == 0 ? 0 : rate0;
        algo_fault logged = *ev;
        logged.value = rate;
        fault_log(x, &logged);
        sim_err e = {0};
        int rc = rate == 0 ? sim_net_link_set_down(x->net, ev->target, ev->target2, 1, &e)
                           : sim_net_link_set_rate(x->net, ev->target, ev->target2, rate, &e);
        if (rc < 0) {
            algo_env_fail(&x->env, e.code, "[faults] link %d-%d: %s", ev->target, ev->target2,
                          e.msg);
            return 0;
        }
        return 1;
    }
    algo_worker *w = &x->env.w[ev->target];
    switch (ev->kind) {
    case ALGO_FAULT_CRASH:
        if (w->down)
            return 0;
        w->down = 1;
        if (all_down_for_good(x)) {
            fault_log(x, ev);
            algo_env_fail(&x->env, SIM_EINPUT,
                          "[faults]: every worker is down at %.9g s and none rejoins "
                          "(downtime = none and no later rejoin row): the run cannot go on",
                          sim_time_to_s(sim_engine_now(x->eng)));
            return 0;
        }
        break;
    case ALGO_FAULT_REJOIN:
        if (!w->down)
            return 0;
        w->down = 0;
        break;
    case ALGO_FAULT_SLOWDOWN:
        w->slowdown = ev->value;
        break;
    case ALGO_FAULT_LINK:
    case ALGO_FAULT_LOST:
    case ALGO_FAULT_RESENT:
        return 0;
    }
    fault_log(x, ev);
    if (x->vt->fault && ev->kind != ALGO_FAULT_SLOWDOWN)
        x->vt->fault(x->alg, ev);
    return 1;
}

/* A scheduled fault event at its time (arg: its index in x->faults). */
static void on_fault(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    xp_env *x = ctx;
    algo_fault ev = x->faults[arg];
    if (ev.kind == ALGO_FAULT_REJOIN)
        x->rejoins_pending--;
    if (ev.kind == ALGO_FAULT_CRASH || ev.kind == ALGO_FAULT_REJOIN)
        ev.value = NAN;
    fault_apply(x, &ev, x->fault_rate0[arg]);
}

/* ---- random faults ([faults] mtbf, downtime) ---------------------------- */

static void on_random_crash(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

/* Schedules worker w's next random crash after an up-time drawn from mtbf. */
static int random_next_crash(xp_env *x, int w)
{
    double up = sim_dist_sample(&x->mtbf, x->rng_fault[w]);
    if (!(up >= 0))
        up = 0;
    if (sim_engine_schedule(x->eng, sim_time_from_s(up), on_random_crash, x, (uint64_t)w, NULL,
                            NULL) == 0)
        return algo_env_fail(&x->env, SIM_ENOMEM, "out of memory for a random fault");
    return 0;
}

static void on_random_rejoin(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    xp_env *x = ctx;
    int w = (int)arg;
    x->rejoins_pending--;
    algo_fault ev = {.kind = ALGO_FAULT_REJOIN, .target = w, .target2 = -1, .value = NAN};
    fault_apply(x, &ev, 0);
    random_next_crash(x, w);
}

/* A random crash; the worker rejoins after a downtime draw (none when
 * downtime = none: then its process ends). The crash row's value is the
 * downtime drawn (NULL without one). A worker already down (a scheduled
 * crash) is left alone but its process goes on. */
static void on_random_crash(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    xp_env *x = ctx;
    int w = (int)arg;
    double down = x->has_downtime ? sim_dist_sample(&x->downtime, x->rng_fault[w]) : NAN;
    if (x->has_downtime && !(down >= 0))
        down = 0;
    algo_fault ev = {.kind = ALGO_FAULT_CRASH, .target = w, .target2 = -1, .value = down};
    /* counted before the crash applies, so it knows a rejoin is coming;
     * scheduled after it, as always (event order on equal times) */
    if (x->has_downtime)
        x->rejoins_pending++;
    fault_apply(x, &ev, 0);
    if (x->has_downtime &&
        sim_engine_schedule(x->eng, sim_time_from_s(down), on_random_rejoin, x, (uint64_t)w,
                            NULL, NULL) == 0)
        algo_env_fail(&x->env, SIM_ENOMEM, "out of memory for a random fault");
}

/* Parses a [faults] distribution key; *set = 0 for none. */
static int fault_dist(xp_env *x, const char *key, sim_dist *d, int *set, sim_err *err)
{
    const sim_config *c = x->cfg;
    const char *spec = sim_config_get_string(c, "faults", key);
    *set = 0;
    if (!spec || !spec[0] || strcmp(spec, "none") == 0)
        return 0;
    if (sim_dist_parse(spec, d, err) < 0)
        return key_error(c, "faults", key, err);
    if (d->kind == SIM_DIST_MODEL || d->kind == SIM_DIST_TRACE)
        return sim_config_error(c, "faults", key, SIM_ECONFIG, err,
                                "expected none or a distribution of times such as "
                                "exponential(300s), got '%s'", spec);
    if (!(sim_dist_mean(d) > 0))
        return sim_config_error(c, "faults", key, SIM_ECONFIG, err,
                                "the mean must be positive, got '%s'", spec);
    *set = 1;
    return 0;
}

/* [faults] mtbf and downtime: parsed before the method is created (it may
 * refuse crashes); streams made when mtbf is set. downtime alone does
 * nothing (so that a sweep can switch mtbf off). */
static int faults_random_load(xp_env *x, sim_err *err)
{
    int rc = fault_dist(x, "mtbf", &x->mtbf, &x->has_mtbf, err);
    if (rc == 0)
        rc = fault_dist(x, "downtime", &x->downtime, &x->has_downtime, err);
    if (rc < 0)
        return rc;
    if (!x->has_mtbf)
        return 0;
    int n = x->cfg->n_workers;
    x->rng_fault = calloc((size_t)n, sizeof *x->rng_fault);
    if (!x->rng_fault)
        return sim_err_set(err, SIM_ENOMEM, "out of memory for random faults");
    for (int i = 0; i < n; i++) {
        x->rng_fault[i] = sim_rng_create(x->cfg->seed, SIM_STREAM_FAULT, (uint64_t)i);
        if (!x->rng_fault[i])
            return sim_err_set(err, SIM_ENOMEM, "out of memory for random faults");
    }
    x->run.crashes = 1;
    return 0;
}

/* Loads [faults] schedule (before the method is created, which may refuse
 * crashes: run.crashes says whether any can happen). */
static int faults_schedule_load(xp_env *x, sim_err *err)
{
    const sim_config *c = x->cfg;
    const char *path = sim_config_get_string(c, "faults", "schedule");
    if (!path || !path[0] || strcmp(path, "none") == 0)
        return 0;
    int n_vertices = sim_net_n_hosts(x->net);
    for (int l = 0; l < sim_net_n_links(x->net); l++) {
        int from, to;
        if (sim_net_link_ends(x->net, l, &from, &to) == 0 && from + 1 > n_vertices)
            n_vertices = from + 1;
    }
    int rc = algo_fault_load(path, c->n_workers, n_vertices, &x->faults, &x->n_faults, err);
    if (rc < 0)
        return key_error(c, "faults", "schedule", err);
    x->fault_rate0 = calloc((size_t)x->n_faults + 1, sizeof *x->fault_rate0);
    if (!x->fault_rate0)
        return sim_err_set(err, SIM_ENOMEM, "out of memory for the fault schedule");
    for (int i = 0; i < x->n_faults; i++) {
        const algo_fault *ev = &x->faults[i];
        if (ev->kind == ALGO_FAULT_LINK) {
            x->fault_rate0[i] = sim_net_link_rate(x->net, ev->target, ev->target2);
            if (x->fault_rate0[i] <= 0)
                return sim_config_error(c, "faults", "schedule", SIM_ECONFIG, err,
                                        "%s: no link %d-%d in the physical network", path,
                                        ev->target, ev->target2);
        } else if (ev->kind == ALGO_FAULT_CRASH || ev->kind == ALGO_FAULT_REJOIN) {
            x->run.crashes = 1;
        }
    }
    return 0;
}

/* Checks that the method supports the faults, then schedules the schedule's
 * events and each worker's first random crash (engine at time 0). */
static int faults_start(xp_env *x, sim_err *err)
{
    const sim_config *c = x->cfg;
    const char *path = sim_config_get_string(c, "faults", "schedule");
    for (int i = 0; i < x->n_faults; i++) {
        const algo_fault *ev = &x->faults[i];
        if (!x->vt->fault && (ev->kind == ALGO_FAULT_CRASH || ev->kind == ALGO_FAULT_REJOIN))
            return sim_config_error(c, "faults", "schedule", SIM_ECONFIG, err,
                                    "%s: %s does not support %s events", path, x->vt->name,
                                    algo_fault_kind_name(ev->kind));
    }
    if (x->has_mtbf && !x->vt->fault)
        return sim_config_error(c, "faults", "mtbf", SIM_ECONFIG, err,
                                "%s does not support worker crashes", x->vt->name);
    sim_time now = sim_engine_now(x->eng);
    for (int i = 0; i < x->n_faults; i++) {
        sim_time dt = x->faults[i].time > now ? x->faults[i].time - now : 0;
        if (sim_engine_schedule(x->eng, dt, on_fault, x, (uint64_t)i, NULL, NULL) == 0)
            return sim_err_set(err, SIM_ENOMEM, "out of memory for the fault schedule");
        if (x->faults[i].kind == ALGO_FAULT_REJOIN)
            x->rejoins_pending++;
    }
    for (int w = 0; x->has_mtbf && w < x->cfg->n_workers; w++)
        if (random_next_crash(x, w) < 0)
            return sim_err_set(err, SIM_ENOMEM, "out of memory for random faults");
    return 0;
}

const algo_fault *xp_env_fault_log(const xp_env *x, int *n)
{
    *n = x->n_log;
    return x->log;
}

int xp_env_algo_create(xp_env *x, sim_err *err)
{
    if (x->check_only || x->alg)
        return sim_err_set(err, SIM_EINTERNAL, "%s: environment not ready for the method",
                           x->vt->name);
    int rc = faults_schedule_load(x, err);
    if (rc == 0)
        rc = faults_random_load(x, err);
    if (rc == 0)
        rc = x->vt->create(&x->env, &x->alg, err);
    if (rc < 0)
        return rc;
    return faults_start(x, err);
}

void xp_env_destroy(xp_env *x)
{
    if (!x)
        return;
    if (x->vt && x->alg)
        x->vt->destroy(x->alg);
    /* queued gradients are dropped: nothing runs on the pool between joins */
    sim_pool_destroy(x->pool);
    free(x->run.jobs);
    free_workers(&x->env);
    free(x->faults);
    free(x->fault_rate0);
    free(x->log);
    for (int i = 0; x->rng_fault && i < x->cfg->n_workers; i++)
        if (x->rng_fault[i])
            gsl_rng_free(x->rng_fault[i]);
    free(x->rng_fault);
    free(x->hist);
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
void *xp_env_state(const xp_env *x) { return x->alg; }
const sim_config *xp_env_config(const xp_env *x) { return x->cfg; }
sim_engine *xp_env_engine(const xp_env *x) { return x->eng; }
sim_net *xp_env_net(const xp_env *x) { return x->net; }
wl_model *xp_env_model(const xp_env *x) { return x->model; }
const wl_dataset *xp_env_dataset(const xp_env *x) { return x->ds; }
const wl_partition *xp_env_partition(const xp_env *x) { return x->part; }
