/* The experiment builder and runner (see experiment.h). Build order:
 * streams, dataset, model, partition, algorithm lookup, physical network,
 * compute model, workers (buffers, samplers, initial models), database
 * row, algorithm; teardown is the reverse. Evaluation happens every
 * eval_every iterations (or simulated seconds), at t = 0 and at the end,
 * on the evaluated model: train loss on a fixed subset of
 * eval_train_samples training samples, test loss and accuracy on the test
 * split. */
#include "experiment/experiment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algorithms/algo.h"
#include "algorithms/compress.h"
#include "sim/compute.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "sim/rng.h"
#include "topology/graph.h"
#include "topology/mixing.h"
#include "topology/physnet.h"
#include "workloads/dataset.h"
#include "workloads/model.h"
#include "workloads/partition.h"
#include "workloads/presets.h"

void openblas_set_num_threads(int num_threads);

#define EVAL_CHUNK 1000

typedef struct run_state {
    const sim_config *cfg;
    const sim_run_opts *opts;
    sim_err *err;

    wl_dataset *ds;
    int ds_borrowed;        /* ds belongs to a sim_check cache */
    int check_only;         /* build everything a run needs, then stop */
    wl_model *model;
    wl_partition *part;
    const algo_vt *vt;
    topo_physnet pn;
    int pn_built;
    topo_graph graph;
    int graph_built;
    topo_mixing *mix;
    double *mean_scratch;   /* d doubles for the consensus distance */
    sim_engine *eng;
    sim_net *net;
    sim_compute *compute;
    algo_env env;
    void *alg;
    gsl_rng *rng_data, *rng_part, *rng_init, *rng_topo;

    /* evaluation */
    float *eval_x, *eval_y; /* fixed training subset */
    int64_t eval_n;
    float *eval_ws;
    float *avg;             /* scratch: evaluated model / average */
    const float **xs;       /* per-worker model pointers */
    double last_train_loss, last_test_loss, last_test_acc, last_consensus;
    int64_t last_eval_iteration;
    sim_time last_eval_time;
    int evaluated_once;

    int64_t run_id;
    int stop_reason;        /* 0 running, 1 limit, 2 target, 3 diverged, 4 error */
    int64_t *hist;
    struct timespec wall0;
    double last_progress_wall;
} run_state;

static double wall_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static double device_flops(const char *name)
{
    const wl_device *d = wl_device_find(name);
    return d ? d->peak_flops : 0.0;
}

void sim_experiment_init(void)
{
    sim_config_set_algo_resolver(algo_keys);
    sim_config_set_device_resolver(device_flops);
    sim_config_set_optim_resolver(algo_optim_name_at);
}

/* ---- evaluation --------------------------------------------------------- */

/* The workers' average (the method's own model() for single-model methods),
 * or worker 0's model with eval_model = worker0. */
static const float *evaluated_model(run_state *e)
{
    if (e->cfg->eval_model == 1 && e->vt->worker_models) {
        e->vt->worker_models(e->alg, e->xs);
        return e->xs[0];
    }
    return e->vt->model(e->alg, e->avg);
}

static double consensus_distance(run_state *e)
{
    if (!e->vt->worker_models)
        return 0.0;
    e->vt->worker_models(e->alg, e->xs);
    return topo_consensus_distance(e->xs, e->env.n, e->env.d, e->mean_scratch);
}

static double total_bytes(run_state *e)
{
    return e->net ? sim_net_bytes_sent_total(e->net) : 0.0;
}

static void evaluate(run_state *e)
{
    const float *x = evaluated_model(e);
    const wl_model *m = e->model;
    wl_eval tr = m->vt->evaluate(m, x, e->eval_x, e->eval_y, e->eval_n, e->eval_ws,
                                 EVAL_CHUNK);
    wl_eval te = {NAN, NAN};
    if (e->ds->test.n > 0)
        te = m->vt->evaluate(m, x, e->ds->test.x, e->ds->test.y, e->ds->test.n, e->eval_ws,
                             EVAL_CHUNK);
    e->last_train_loss = tr.loss;
    e->last_test_loss = te.loss;
    e->last_test_acc = te.accuracy;
    e->last_consensus = consensus_distance(e);
    e->last_eval_iteration = e->env.iterations;
    e->last_eval_time = sim_engine_now(e->eng);
    e->evaluated_once = 1;

    an_metric_row row = {
        .sim_time = sim_time_to_s(sim_engine_now(e->eng)),
        .iteration = e->env.iterations,
        .epoch = (double)e->env.samples / (double)e->ds->train.n,
        .samples = e->env.samples,
        .train_loss = tr.loss,
        .test_loss = te.loss,
        .test_accuracy = te.accuracy,
        .consensus_distance = e->last_consensus,
        .bytes_sent = (int64_t)llround(total_bytes(e)),
    };
    if (e->opts && e->opts->db && e->run_id > 0) {
        if (an_db_metric(e->opts->db, e->run_id, &row, e->err) < 0) {
            e->stop_reason = 4;
            sim_engine_stop(e->eng);
            return;
        }
    }
    if (e->opts && e->opts->on_metric)
        e->opts->on_metric(e->opts->ctx, &row);
    if (!isfinite(tr.loss) || (e->ds->test.n > 0 && !isfinite(te.loss))) {
        e->stop_reason = 3;
        sim_engine_stop(e->eng);
        return;
    }
    if (e->cfg->target_accuracy > 0 && isfinite(te.accuracy) &&
        te.accuracy >= e->cfg->target_accuracy) {
        e->stop_reason = 2;
        sim_engine_stop(e->eng);
    }
}

static double progress_fraction(run_state *e)
{
    const sim_config *c = e->cfg;
    double f = -1;
    if (c->max_iterations > 0)
        f = fmax(f, (double)e->env.iterations / (double)c->max_iterations);
    if (c->max_epochs > 0)
        f = fmax(f, ((double)e->env.samples / (double)e->ds->train.n) / c->max_epochs);
    if (c->max_time > 0)
        f = fmax(f, (double)sim_engine_now(e->eng) / (double)c->max_time);
    return f > 1 ? 1 : f;
}

static void report_progress(run_state *e, int force)
{
    const sim_run_opts *o = e->opts;
    if (!o || !o->on_progress)
        return;
    double wall = wall_since(&e->wall0);
    if (!force && wall - e->last_progress_wall < o->progress_interval)
        return;
    e->last_progress_wall = wall;
    sim_progress p = {
        .iteration = e->env.iterations,
        .sim_time = sim_time_to_s(sim_engine_now(e->eng)),
        .epoch = (double)e->env.samples / (double)e->ds->train.n,
        .train_loss = e->evaluated_once ? e->last_train_loss : NAN,
        .test_accuracy = e->evaluated_once ? e->last_test_acc : NAN,
        .wall_seconds = wall,
        .fraction = progress_fraction(e),
    };
    o->on_progress(o->ctx, &p);
}

/* The algorithms' iteration hook: evaluation and stopping rules. */
/* A signal asked the run to stop: it ends as 'failed'. */
static int interrupted(run_state *e)
{
    if (!e->opts || !e->opts->interrupt || !*e->opts->interrupt)
        return 0;
    sim_err_set(e->err, SIM_EINTR, "%s: interrupted by a signal; the run is marked failed",
                e->cfg->path);
    e->stop_reason = 4;
    sim_engine_stop(e->eng);
    return 1;
}

static void on_iteration(void *p)
{
    run_state *e = p;
    const sim_config *c = e->cfg;
    if (interrupted(e))
        return;
    if (e->env.diverged) {
        e->stop_reason = e->env.diverged < 0 ? 4 : 3;
        if (e->env.diverged < 0)
            sim_err_set(e->err, SIM_EINTERNAL, "%s: communication failed",
                        e->vt->name);
        sim_engine_stop(e->eng);
        return;
    }
    if (c->eval_every_iters > 0 && e->env.iterations % c->eval_every_iters == 0) {
        evaluate(e);
        if (e->stop_reason)
            return;
    }
    if ((c->max_iterations > 0 && e->env.iterations >= c->max_iterations) ||
        (c->max_epochs > 0 &&
         (double)e->env.samples >= c->max_epochs * (double)e->ds->train.n)) {
        e->stop_reason = 1;
        sim_engine_stop(e->eng);
    }
    report_progress(e, 0);
}

static void on_eval_timer(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)arg;
    (void)payload;
    run_state *e = ctx;
    if (interrupted(e))
        return;
    evaluate(e);
    if (!e->stop_reason)
        sim_engine_schedule(eng, e->cfg->eval_every_time, on_eval_timer, e, 0, NULL, NULL);
}

/* ---- building ----------------------------------------------------------- */

static int build_eval_subset(run_state *e)
{
    const wl_split *tr = &e->ds->train;
    int64_t k = e->cfg->eval_train_samples;
    if (k == SIM_CFG_EVAL_ALL || k > tr->n)
        k = tr->n;
    int dim = e->ds->dim;
    e->eval_n = k;
    e->eval_x = malloc((size_t)k * (size_t)dim * sizeof(float));
    e->eval_y = malloc((size_t)k * sizeof(float));
    e->eval_ws = malloc(wl_model_workspace_floats(e->model, EVAL_CHUNK) * sizeof(float));
    if (!e->eval_x || !e->eval_y || !e->eval_ws)
        return sim_err_set(e->err, SIM_ENOMEM, "out of memory for the evaluation set");
    /* evenly strided, deterministic, covers the whole file order */
    for (int64_t i = 0; i < k; i++) {
        int64_t s = (int64_t)((double)i * (double)tr->n / (double)k);
        memcpy(e->eval_x + i * dim, tr->x + s * dim, (size_t)dim * sizeof(float));
        e->eval_y[i] = tr->y[s];
    }
    return 0;
}

static int build_workers(run_state *e)
{
    algo_env *env = &e->env;
    int n = env->n;
    int64_t d = env->d;
    int dim = e->ds->dim;
    env->w = calloc((size_t)n, sizeof *env->w);
    if (!env->w)
        return sim_err_set(e->err, SIM_ENOMEM, "out of memory for %d workers", n);
    int64_t maxb = 0;
    for (int i = 0; i < n; i++) {
        int64_t b = env->batch > 0 ? env->batch : wl_partition_size(e->part, i);
        if (b > maxb)
            maxb = b;
    }
    size_t wsf = wl_model_workspace_floats(e->model, maxb);
    for (int i = 0; i < n; i++) {
        algo_worker *w = &env->w[i];
        w->id = i;
        w->idle_since = -1;
        w->x = malloc((size_t)d * sizeof(float));
        w->grad = calloc((size_t)d, sizeof(float));
        w->ws = malloc(wsf * sizeof(float));
        w->bx = malloc((size_t)maxb * (size_t)dim * sizeof(float));
        w->by = malloc((size_t)maxb * sizeof(float));
        w->rng_compute = sim_rng_create(e->cfg->seed, SIM_STREAM_COMPUTE, (uint64_t)i);
        w->rng_algo = sim_rng_create(e->cfg->seed, SIM_STREAM_ALGORITHM, (uint64_t)i);
        gsl_rng *rs = sim_rng_create(e->cfg->seed, SIM_STREAM_SAMPLING, (uint64_t)i);
        if (!w->x || !w->grad || !w->ws || !w->bx || !w->by || !w->rng_compute ||
            !w->rng_algo || !rs) {
            if (rs)
                gsl_rng_free(rs);
            return sim_err_set(e->err, SIM_ENOMEM, "out of memory for worker %d", i);
        }
        /* the sampler borrows its stream; keep it in rng_algo's sibling slot */
        int rc = wl_sampler_init(&w->sampler, e->ds, e->part, i, rs, e->err);
        if (rc < 0) {
            gsl_rng_free(rs);
            return rc;
        }
        if (e->cfg->init == 1) {
            gsl_rng *ri = sim_rng_create(e->cfg->seed, SIM_STREAM_INIT, (uint64_t)i);
            if (!ri)
                return sim_err_set(e->err, SIM_ENOMEM, "out of memory");
            e->model->vt->init(e->model, w->x, ri);
            gsl_rng_free(ri);
        } else if (i == 0) {
            e->model->vt->init(e->model, w->x, e->rng_init);
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
        free(w->by);
        if (w->rng_compute)
            gsl_rng_free(w->rng_compute);
        if (w->rng_algo)
            gsl_rng_free(w->rng_algo);
    }
    free(env->w);
    env->w = NULL;
}

static void teardown(run_state *e)
{
    if (e->vt && e->alg)
        e->vt->destroy(e->alg);
    free_workers(&e->env);
    if (e->env.rng_global)
        gsl_rng_free(e->env.rng_global);
    free(e->hist);
    free(e->xs);
    free(e->avg);
    free(e->eval_ws);
    free(e->eval_y);
    free(e->eval_x);
    free(e->mean_scratch);
    sim_compute_destroy(e->compute);
    sim_net_destroy(e->net);
    topo_mixing_destroy(e->mix);
    if (e->graph_built)
        topo_graph_release(&e->graph);
    if (e->pn_built)
        topo_physnet_release(&e->pn);
    sim_engine_destroy(e->eng);
    wl_partition_destroy(e->part);
    wl_model_destroy(e->model);
    if (!e->ds_borrowed)
        wl_dataset_destroy(e->ds);
    if (e->rng_init)
        gsl_rng_free(e->rng_init);
    if (e->rng_topo)
        gsl_rng_free(e->rng_topo);
    if (e->rng_part)
        gsl_rng_free(e->rng_part);
    if (e->rng_data)
        gsl_rng_free(e->rng_data);
}

static int begin_db_run(run_state *e)
{
    an_db *db = e->opts ? e->opts->db : NULL;
    if (!db)
        return 0;
    const sim_config *c = e->cfg;
    char *canon = sim_config_canonical(c);
    const char **keys = malloc((size_t)c->n_entries * sizeof *keys);
    const char **vals = malloc((size_t)c->n_entries * sizeof *vals);
    char *keybuf = malloc((size_t)c->n_entries * 96);
    int rc = 0;
    if (!canon || !keys || !vals || !keybuf) {
        rc = sim_err_set(e->err, SIM_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < c->n_entries; i++) {
        char *k = keybuf + (size_t)i * 96;
        snprintf(k, 96, "%s.%s", c->entries[i].section, c->entries[i].key);
        keys[i] = k;
        vals[i] = c->entries[i].value;
    }
    an_run_info info = {
        .name = c->name,
        .algorithm = e->vt->name,
        .seed = c->seed,
        .n_workers = c->n_workers,
        .config = canon,
        .version = DTSIM_VERSION,
        .n_params = c->n_entries,
        .param_keys = keys,
        .param_values = vals,
    };
    rc = an_db_run_begin(db, &info, &e->run_id, e->err);
    if (rc == 0 && e->ds->classes >= 2) {
        int n = c->n_workers, k = e->ds->classes;
        int64_t *counts = calloc((size_t)n * (size_t)k, sizeof *counts);
        if (!counts) {
            rc = sim_err_set(e->err, SIM_ENOMEM, "out of memory");
            goto out;
        }
        for (int w = 0; rc == 0 && w < n; w++)
            rc = wl_partition_label_histogram(e->part, e->ds, w, counts + (int64_t)w * k);
        if (rc == 0)
            rc = an_db_run_labels(db, e->run_id, n, k, counts, e->err);
        free(counts);
    }
out:
    free(canon);
    free(keys);
    free(vals);
    free(keybuf);
    return rc;
}

/* Prefixes err's message with the config key it came from. */
static int key_error(const sim_config *c, const char *section, const char *key, sim_err *err)
{
    char msg[sizeof err->msg];
    int code = err->code ? err->code : SIM_EINTERNAL;
    memcpy(msg, err->msg, sizeof msg);
    return sim_config_error(c, section, key, code, err, "%s", msg);
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
    return sim_config_error(c, "workload", "proxy", SIM_ECONFIG, err,
                            "unknown proxy '%s' (known: none, %s)", c->proxy, known);
}

static int build(run_state *e)
{
    const sim_config *c = e->cfg;
    sim_err *err = e->err;
    const wl_proxy *proxy;
    int rc = find_proxy(c, &proxy, err);
    if (rc < 0)
        return rc;
    e->vt = algo_find(c->algorithm);
    if (!e->vt)
        return sim_config_error(c, "algorithm", "name", SIM_ECONFIG, err,
                                "unknown algorithm '%s'", c->algorithm);
    rc = algo_compress_check(e->vt, c, err);
    if (rc < 0)
        return rc;
    e->rng_data = sim_rng_create(c->seed, SIM_STREAM_DATA, 0);
    e->rng_part = sim_rng_create(c->seed, SIM_STREAM_PARTITION, 0);
    e->rng_init = sim_rng_create(c->seed, SIM_STREAM_INIT, 0);
    e->rng_topo = sim_rng_create(c->seed, SIM_STREAM_TOPOLOGY, 0);
    e->env.rng_global = sim_rng_create(c->seed, SIM_STREAM_ALGORITHM, (uint64_t)c->n_workers);
    if (!e->rng_data || !e->rng_part || !e->rng_init || !e->rng_topo || !e->env.rng_global)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");

    wl_dataset_opts dso = {
        .spec = c->dataset,
        .test_fraction = c->test_fraction,
        .normalize = c->normalize,
        .rng = e->rng_data,
        .data_dir = NULL,
    };
    if (!e->ds)
        e->ds = wl_dataset_create(&dso, err);
    if (!e->ds)
        return key_error(c, "workload", "dataset", err);
    e->model = wl_model_create(c->model, e->ds, err);
    if (!e->model)
        return key_error(c, "workload", "model", err);
    e->part = wl_partition_create(e->ds, c->n_workers, c->partition, e->rng_part, err);
    if (!e->part)
        return key_error(c, "workload", "partition", err);

    int server = e->vt->needs_server && e->vt->needs_server(c);
    int hosts = c->n_workers + (server ? 1 : 0);
    rc = topo_physnet_build(&e->pn, c->net_topology, hosts, err);
    if (rc < 0)
        return key_error(c, "network", "topology", err);
    e->pn_built = 1;
    e->eng = sim_engine_create(1024);
    if (!e->eng)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    sim_net_desc nd;
    topo_physnet_desc(&e->pn, c->latency, c->bandwidth, (sim_sharing)c->sharing, &nd);
    e->net = sim_net_create(e->eng, &nd, err);
    if (!e->net)
        return err->code;
    if (e->vt->uses_graph) {
        rc = topo_graph_build(&e->graph, c->graph, c->n_workers, e->rng_topo, err);
        if (rc < 0)
            return key_error(c, "topology", "graph", err);
        e->graph_built = 1;
        e->mix = topo_mixing_create(&e->graph, (topo_weights)c->weights, err);
        if (!e->mix)
            return key_error(c, "topology", "weights", err);
        e->env.graph = &e->graph;
        e->env.mix = e->mix;
    }
    e->compute = sim_compute_create(&c->compute, c->n_workers, err);
    if (!e->compute)
        return key_error(c, "workers", "compute", err);
    if (e->check_only)
        return 0;

    algo_env *env = &e->env;
    env->cfg = c;
    env->eng = e->eng;
    env->net = e->net;
    env->compute = e->compute;
    env->model = e->model;
    env->ds = e->ds;
    env->n = c->n_workers;
    env->d = e->model->n_params;
    /* explicit sim_params / sim_flops win over a proxy preset, which wins
     * over the model's own numbers */
    int64_t wire_params = c->sim_params > 0 ? c->sim_params
                          : proxy          ? proxy->params
                                           : env->d;
    env->msg_bytes = (double)wire_params * (double)c->wire_bytes;
    env->wire_params = wire_params;
    env->wire_value_bytes = c->wire_bytes;
    env->flops_per_sample = c->sim_flops > 0 ? c->sim_flops
                            : proxy          ? proxy->flops_per_sample
                                             : e->model->flops_per_sample;
    env->batch = c->batch;
    env->server_host = server ? c->n_workers : -1;
    env->allreduce_kind = c->collective == 0   ? SIM_COLL_RING
                          : c->collective == 1 ? SIM_COLL_TREE
                                               : SIM_COLL_PS;
    env->staleness_cap = 4 * (int64_t)c->n_workers + 64;
    e->hist = calloc((size_t)env->staleness_cap, sizeof *e->hist);
    env->staleness_hist = e->hist;
    env->hooks.iteration = on_iteration;
    env->hooks.exp = e;
    e->avg = malloc((size_t)env->d * sizeof(float));
    e->xs = malloc((size_t)env->n * sizeof *e->xs);
    e->mean_scratch = malloc((size_t)env->d * sizeof *e->mean_scratch);
    if (!e->hist || !e->avg || !e->xs || !e->mean_scratch)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    rc = build_workers(e);
    if (rc < 0)
        return rc;
    return build_eval_subset(e);
}

/* ---- running ------------------------------------------------------------ */

static void fill_result(run_state *e, sim_run_result *r, const char *status)
{
    algo_env *env = &e->env;
    memset(r, 0, sizeof *r);
    r->run_id = e->run_id;
    snprintf(r->status, sizeof r->status, "%s", status);
    r->sim_time = sim_time_to_s(sim_engine_now(e->eng));
    r->iterations = env->iterations;
    r->epochs = (double)env->samples / (double)e->ds->train.n;
    r->final_train_loss = e->last_train_loss;
    r->final_test_loss = e->last_test_loss;
    r->final_test_accuracy = e->last_test_acc;
    r->consensus_distance = e->last_consensus;
    r->wall_seconds = wall_since(&e->wall0);
    r->bytes_sent = total_bytes(e);
    double idle = 0, st_sum = 0;
    int64_t st_n = 0;
    sim_time now = sim_engine_now(e->eng);
    for (int i = 0; i < env->n; i++) {
        algo_worker *w = &env->w[i];
        algo_env_idle_end(env, i); /* close open idle intervals at the end */
        if (w->busy_until > now) {
            /* a step still computing at the stop: count only its elapsed
             * part, and not as a step (its gradient was never used) */
            w->compute_time -= sim_time_to_s(w->busy_until - now);
            w->busy_until = now;
            w->steps--;
        }
        idle += w->idle_time;
        st_sum += w->staleness_sum;
        st_n += w->staleness_n;
        r->gradients += w->steps;
    }
    r->idle_fraction = r->sim_time > 0 ? idle / (env->n * r->sim_time) : 0.0;
    r->mean_staleness = st_n > 0 ? st_sum / (double)st_n : NAN;
    r->events = sim_engine_processed(e->eng);
    r->n_params = env->d;
    r->n_workers = env->n;
    snprintf(r->algorithm, sizeof r->algorithm, "%s", e->vt->name);
}

static int finish_db_run(run_state *e, const sim_run_result *r)
{
    an_db *db = e->opts ? e->opts->db : NULL;
    if (!db || e->run_id <= 0)
        return 0;
    algo_env *env = &e->env;
    an_worker_row *rows = calloc((size_t)env->n, sizeof *rows);
    if (!rows)
        return sim_err_set(e->err, SIM_ENOMEM, "out of memory");
    for (int i = 0; i < env->n; i++) {
        algo_worker *w = &env->w[i];
        rows[i] = (an_worker_row){
            .worker = i,
            .steps = w->steps,
            .compute_time = w->compute_time,
            .idle_time = w->idle_time,
            .bytes_sent = (int64_t)llround(sim_net_bytes_sent_host(e->net, i)),
            .mean_staleness = w->staleness_n > 0 ? w->staleness_sum / (double)w->staleness_n
                                                 : NAN,
            .gossip_rounds = w->gossip_rounds,
        };
    }
    an_run_summary sum = {
        .status = r->status,
        .sim_time = r->sim_time,
        .iterations = r->iterations,
        .wall_seconds = r->wall_seconds,
        .bytes_sent = (int64_t)llround(r->bytes_sent),
        .final_train_loss = r->final_train_loss,
        .final_test_accuracy = r->final_test_accuracy,
        .mean_staleness = r->mean_staleness,
        .idle_fraction = r->idle_fraction,
        .consensus_distance = r->consensus_distance,
    };
    int nl = sim_net_n_links(e->net), used = 0;
    an_link_row *links = calloc((size_t)(nl > 0 ? nl : 1), sizeof *links);
    if (!links) {
        free(rows);
        return sim_err_set(e->err, SIM_ENOMEM, "out of memory");
    }
    for (int l = 0; l < nl; l++) {
        double b = sim_net_bytes_link(e->net, l);
        if (b <= 0)
            continue;
        an_link_row *lr = &links[used++];
        lr->link = l;
        lr->bytes = (int64_t)llround(b);
        sim_net_link_ends(e->net, l, &lr->src, &lr->dst);
    }
    int lrc = an_db_run_links(db, e->run_id, links, used, e->err);
    free(links);
    if (lrc < 0) {
        free(rows);
        return lrc;
    }
    int64_t nh = 0;
    for (int64_t s = 0; s < env->staleness_cap; s++)
        if (e->hist[s])
            nh = s + 1;
    int rc = an_db_run_finish(db, e->run_id, &sum, rows, env->n, e->hist, nh, e->err);
    free(rows);
    return rc;
}

struct sim_check {
    char key[1200];  /* dataset spec, test fraction, normalize of the cached ds */
    wl_dataset *ds;
};

sim_check *sim_check_create(void) { return calloc(1, sizeof(sim_check)); }

void sim_check_destroy(sim_check *chk)
{
    if (!chk)
        return;
    wl_dataset_destroy(chk->ds);
    free(chk);
}

int sim_experiment_check(const sim_config *cfg, sim_check *chk, sim_err *err)
{
    sim_err local;
    if (!err)
        err = &local;
    run_state e;
    memset(&e, 0, sizeof e);
    e.cfg = cfg;
    e.err = err;
    e.check_only = 1;
    char key[sizeof chk->key];
    snprintf(key, sizeof key, "%s|%.17g|%d", cfg->dataset, cfg->test_fraction, cfg->normalize);
    if (chk && chk->ds && strcmp(chk->key, key) == 0) {
        e.ds = chk->ds;
        e.ds_borrowed = 1;
    }
    int rc = build(&e);
    if (rc == 0 && chk && !e.ds_borrowed && e.ds) {
        wl_dataset_destroy(chk->ds);
        chk->ds = e.ds;
        snprintf(chk->key, sizeof chk->key, "%s", key);
        e.ds_borrowed = 1;
    }
    teardown(&e);
    return rc;
}

int sim_experiment_run(const sim_config *cfg, const sim_run_opts *opts, sim_run_result *res,
                       sim_err *err)
{
    sim_err local;
    if (!err)
        err = &local;
    sim_err_clear(err);
    openblas_set_num_threads(1);
    run_state e;
    memset(&e, 0, sizeof e);
    e.cfg = cfg;
    e.opts = opts;
    e.err = err;
    e.last_train_loss = e.last_test_loss = e.last_test_acc = NAN;
    clock_gettime(CLOCK_MONOTONIC, &e.wall0);

    int rc = build(&e);
    if (rc == 0)
        rc = begin_db_run(&e);
    if (rc == 0)
        rc = e.vt->create(&e.env, &e.alg, err);
    if (rc == 0) {
        evaluate(&e); /* the starting point, t = 0, before any message */
        if (e.stop_reason == 4)
            rc = err->code ? err->code : SIM_EINTERNAL;
    }
    if (rc == 0)
        rc = e.vt->start(e.alg, err);
    if (rc < 0) {
        if (e.run_id > 0) {
            sim_err ignore;
            an_db_run_fail(opts->db, e.run_id, &ignore);
        }
        teardown(&e);
        return rc;
    }

    if (cfg->eval_every_time > 0)
        sim_engine_schedule(e.eng, cfg->eval_every_time, on_eval_timer, &e, 0, NULL, NULL);
    if (!e.stop_reason)
        sim_engine_run_until(e.eng, cfg->max_time > 0 ? cfg->max_time : SIM_TIME_MAX);

    if (e.stop_reason == 4) {
        if (e.run_id > 0) {
            sim_err ignore;
            an_db_run_fail(opts->db, e.run_id, &ignore);
        }
        teardown(&e);
        return err->code ? err->code : SIM_EINTERNAL;
    }
    /* the end row: also after a divergence, so the final loss is the
     * diverged model's (NULL for NaN), not an earlier evaluation's */
    int diverged = e.stop_reason == 3 || e.env.diverged > 0;
    if (e.last_eval_iteration != e.env.iterations || e.last_eval_time != sim_engine_now(e.eng))
        evaluate(&e);
    if (e.stop_reason == 4) {
        if (e.run_id > 0) {
            sim_err ignore;
            an_db_run_fail(opts->db, e.run_id, &ignore);
        }
        teardown(&e);
        return err->code ? err->code : SIM_EINTERNAL;
    }
    if (diverged)
        e.stop_reason = 3;
    sim_run_result r;
    fill_result(&e, &r, e.stop_reason == 3 ? "diverged" : "done");
    report_progress(&e, 1);
    rc = finish_db_run(&e, &r);
    if (rc < 0 && e.run_id > 0) {
        sim_err ignore;
        an_db_run_fail(opts->db, e.run_id, &ignore);
    }
    if (res)
        *res = r;
    teardown(&e);
    return rc;
}
