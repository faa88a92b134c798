/* The experiment runner (see experiment.h): builds the environment
 * (env.c), the database row (record.c) and the method, then runs the
 * engine. Evaluation happens every eval_every iterations (or simulated
 * seconds), at t = 0 and at the end, on the evaluated model: train loss on
 * a fixed subset of eval_train_samples training samples, test loss and
 * accuracy on the test split. Stop rules: max_iterations, max_epochs
 * (samples applied / training samples), max_time, target_accuracy, a
 * diverged loss, and any failure: every failure once the method exists
 * (an event's, the database's, a signal) goes through algo_env_fail, so
 * the run ends on one path (run_failed). */
#include "experiment/experiment.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algorithms/core/algo.h"
#include "algorithms/core/runner.h"
#include "experiment/env.h"
#include "experiment/record.h"
#include "experiment/estimate.h"
#include "experiment/trace.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "sim/path.h"
#include "topology/mixing.h"
#include "workloads/dataset.h"
#include "workloads/model.h"
#include "workloads/presets.h"

void openblas_set_num_threads(int num_threads);

#define EVAL_CHUNK 1000
#define FAULT_FLUSH 256 /* logged faults written at an evaluation: memory bounded, few writes */
/* A run with no iteration or epoch limit that completes this many
 * iterations without the simulated clock moving would never reach its
 * time limit: it fails (livelock). */
#define STALL_ITERATIONS 100000

enum { RUNNING, STOP_LIMIT, STOP_TARGET, STOP_DIVERGED };

typedef struct run_state {
    const cfg_config *cfg;
    const xp_run_opts *opts;
    an_db *db;              /* opts->db or NULL */
    xp_env *x;
    algo_env *env;
    const algo_vt *vt;
    void *alg;
    const wl_dataset *ds;
    const wl_model *model;
    sim_engine *eng;
    sim_net *net;

    /* evaluation */
    float *eval_x, *eval_y; /* fixed training subset (eval_x NULL when sparse) */
    int64_t *eval_rows;     /* sparse data sets: its training rows */
    int64_t eval_n;
    float *eval_ws;
    float *eval_ws_test;    /* the test split's workspace with a pool, else eval_ws */
    float *avg;             /* scratch: evaluated model / average */
    const float **xs;       /* per-worker model pointers */
    double *mean_scratch;   /* d doubles for the consensus distance */
    double last_train_loss, last_test_loss, last_test_acc, last_consensus;
    int64_t last_eval_iteration;
    sim_time last_eval_time;
    int evaluated_once;

    xp_trace *trace;        /* [experiment] trace = on, or NULL */
    int64_t run_id;
    int stop_reason;        /* RUNNING, STOP_* */
    sim_time stall_time;    /* the clock at the last iteration */
    int64_t stall_iterations; /* iterations since the clock last moved */
    struct timespec wall0;
    double last_progress_wall;
} run_state;

static double wall_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static const char *algo_name_at(int i)
{
    for (int k = 0; algo_registry[k]; k++)
        if (k == i)
            return algo_registry[k]->name;
    return NULL;
}

/* cfg_precision and wl_precision name the same arithmetic by the same values. */
_Static_assert(CFG_PRECISION_FP32 == (int)WL_FP32 && CFG_PRECISION_TF32 == (int)WL_TF32 &&
                   CFG_PRECISION_FP16 == (int)WL_FP16 && CFG_PRECISION_BF16 == (int)WL_BF16,
               "cfg_precision and wl_precision differ");

static double device_flops(const char *name, int precision, char *names, size_t len)
{
    const wl_device *d = wl_device_find(name);
    if (!d)
        return 0.0;
    double peak = wl_device_peak(d, precision);
    if (peak > 0)
        return peak;
    size_t used = 0;
    for (int p = 0; names && p < WL_PRECISIONS && used < len; p++)
        if (wl_device_peak(d, p) > 0)
            used += (size_t)snprintf(names + used, len - used, "%s%s", used ? ", " : "",
                                     wl_precision_name(p));
    return -1.0;
}

const cfg_schema *xp_experiment_schema(void)
{
    static const cfg_schema schema = {
        .algo_keys = algo_keys,
        .algo_name = algo_name_at,
        .optim_name = algo_optim_name_at,
        .device_flops = device_flops,
    };
    return &schema;
}

/* ---- evaluation --------------------------------------------------------- */

/* The workers' average (the method's own model() for single-model methods),
 * or worker 0's model with eval_model = worker0. */
static const float *evaluated_model(run_state *e)
{
    if (e->cfg->eval_model == CFG_EVAL_WORKER0 && e->vt->worker_models) {
        e->vt->worker_models(e->alg, e->xs);
        return e->xs[0];
    }
    return e->vt->model(e->alg, e->avg);
}

/* The models whose consensus distance is reported, into e->xs: every
 * worker's; when workers may crash, the live workers' only (the models
 * the evaluated one averages; docs/faults.md). Their count, 0: none. */
static int consensus_models(run_state *e)
{
    if (!e->vt->worker_models)
        return 0;
    int m = e->env->n;
    if (!algo_env_crashes(e->env)) {
        e->vt->worker_models(e->alg, e->xs);
    } else if (e->vt->live_models) { /* the models the evaluated one averages */
        m = e->vt->live_models(e->alg, e->xs);
    } else { /* the workers that are up (all when none is) */
        e->vt->worker_models(e->alg, e->xs);
        int up = 0;
        for (int i = 0; i < e->env->n; i++)
            if (!e->env->w[i].down)
                e->xs[up++] = e->xs[i];
        if (up > 0)
            m = up;
        else
            e->vt->worker_models(e->alg, e->xs);
    }
    return m;
}

/* The bytes sent by now (docs/database.md): a message still draining
 * counts the part that has left its sender, so the exchange of an
 * iteration begun at the instant of a row is not in it. */
static double total_bytes(run_state *e)
{
    return e->net ? sim_net_bytes_sent_total(e->net) - sim_net_bytes_unsent(e->net, -1) : 0.0;
}

static void stop(run_state *e, int reason)
{
    e->stop_reason = reason;
    sim_engine_stop(e->eng);
}

/* The three parts of an evaluation: the training subset's loss, the test
 * split's loss and accuracy, the consensus distance of the m models in
 * e->xs. They share nothing written (each its own workspace), so with a
 * pool they run at once, each exactly as alone. */
typedef struct eval_parts {
    run_state *e;
    const float *x; /* the evaluated model */
    int m;
    wl_eval tr, te;
    double consensus;
} eval_parts;

static void eval_part(void *ctx, int64_t k)
{
    eval_parts *p = ctx;
    run_state *e = p->e;
    const wl_model *m = e->model;
    const wl_dataset *ds = e->ds;
    if (k == 0 && ds->sparse)
        p->tr = m->vt->evaluate_sparse(m, p->x, &ds->train.csr, e->eval_rows, e->eval_y,
                                       e->eval_n, e->eval_ws, EVAL_CHUNK);
    else if (k == 0)
        p->tr = m->vt->evaluate(m, p->x, e->eval_x, e->eval_y, e->eval_n, e->eval_ws,
                                EVAL_CHUNK);
    else if (k == 1 && ds->test.n > 0 && ds->sparse)
        p->te = m->vt->evaluate_sparse(m, p->x, &ds->test.csr, NULL, ds->test.y, ds->test.n,
                                       e->eval_ws_test, EVAL_CHUNK);
    else if (k == 1 && ds->test.n > 0)
        p->te = m->vt->evaluate(m, p->x, ds->test.x, ds->test.y, ds->test.n, e->eval_ws_test,
                                EVAL_CHUNK);
    else if (k == 2 && p->m > 0)
        p->consensus = topo_consensus_distance(e->xs, p->m, e->env->d, e->mean_scratch);
}

static void evaluate(run_state *e)
{
    if (e->opts && e->opts->time_only)
        return;
    /* the models are gathered first: a method may join its deferred work */
    eval_parts p = {.e = e, .te = {NAN, NAN}};
    p.x = evaluated_model(e);
    p.m = consensus_models(e);
    if (e->env->run->pool)
        sim_pool_run(e->env->run->pool, 3, eval_part, &p);
    else
        for (int k = 0; k < 3; k++)
            eval_part(&p, k);
    wl_eval tr = p.tr, te = p.te;
    sim_err me;
    if (wl_model_failed(e->model, &me))
        algo_env_fail(e->env, me.code, "%s", me.msg);
    e->last_train_loss = tr.loss;
    e->last_test_loss = te.loss;
    e->last_test_acc = te.accuracy;
    e->last_consensus = p.consensus;
    e->last_eval_iteration = e->env->iterations;
    e->last_eval_time = sim_engine_now(e->eng);
    e->evaluated_once = 1;

    an_metric_row row = {
        .sim_time = sim_time_to_s(sim_engine_now(e->eng)),
        .iteration = e->env->iterations,
        .epoch = (double)e->env->samples / (double)e->ds->train.n,
        .samples = e->env->samples,
        .train_loss = tr.loss,
        .test_loss = te.loss,
        .test_accuracy = te.accuracy,
        .consensus_distance = e->last_consensus,
        .bytes_sent = (int64_t)llround(total_bytes(e)),
    };
    if (e->db && e->run_id > 0) {
        sim_err dberr = {0};
        int n_faults = 0;
        xp_env_fault_log(e->x, &n_faults);
        if (an_db_metric(e->db, e->run_id, &row, &dberr) < 0 ||
            (n_faults >= FAULT_FLUSH && xp_record_faults(e->db, e->run_id, e->x, &dberr) < 0)) {
            algo_env_fail(e->env, dberr.code, "%s", dberr.msg);
            return;
        }
    }
    if (e->opts && e->opts->on_metric)
        e->opts->on_metric(e->opts->ctx, &row);
    if (!isfinite(tr.loss) || (e->ds->test.n > 0 && !isfinite(te.loss))) {
        stop(e, STOP_DIVERGED);
        return;
    }
    if (e->cfg->target_accuracy > 0 && isfinite(te.accuracy) &&
        te.accuracy >= e->cfg->target_accuracy)
        stop(e, STOP_TARGET);
}

static double progress_fraction(run_state *e)
{
    const cfg_config *c = e->cfg;
    double f = -1;
    if (c->max_iterations > 0)
        f = fmax(f, (double)e->env->iterations / (double)c->max_iterations);
    if (c->max_epochs > 0)
        f = fmax(f, ((double)e->env->samples / (double)e->ds->train.n) / c->max_epochs);
    if (c->max_time > 0)
        f = fmax(f, (double)sim_engine_now(e->eng) / (double)c->max_time);
    return f > 1 ? 1 : f;
}

static void report_progress(run_state *e, int force)
{
    const xp_run_opts *o = e->opts;
    if (!o || !o->on_progress)
        return;
    double wall = wall_since(&e->wall0);
    if (!force && wall - e->last_progress_wall < o->progress_interval)
        return;
    e->last_progress_wall = wall;
    xp_progress p = {
        .iteration = e->env->iterations,
        .sim_time = sim_time_to_s(sim_engine_now(e->eng)),
        .epoch = (double)e->env->samples / (double)e->ds->train.n,
        .train_loss = e->evaluated_once ? e->last_train_loss : NAN,
        .test_accuracy = e->evaluated_once ? e->last_test_acc : NAN,
        .wall_seconds = wall,
        .fraction = progress_fraction(e),
    };
    o->on_progress(o->ctx, &p);
}

/* A signal asked the run to stop: it ends as 'failed'. */
static int interrupted(run_state *e)
{
    if (!e->opts || !e->opts->interrupt || !*e->opts->interrupt)
        return 0;
    algo_env_fail(e->env, SIM_EINTR, "interrupted by a signal; the run is marked failed");
    return 1;
}

/* Only the clock can end this run: fail it when the clock stands still for
 * STALL_ITERATIONS iterations (zero compute and communication times). */
static void stall_check(run_state *e)
{
    sim_time now = sim_engine_now(e->eng);
    if (now != e->stall_time) {
        e->stall_time = now;
        e->stall_iterations = 0;
        return;
    }
    if (++e->stall_iterations < STALL_ITERATIONS)
        return;
    algo_env_fail(e->env, SIM_ECONFIG,
                  "no simulated progress: %d iterations without the simulated clock"
                  " moving (compute and communication take no time?), so the run would"
                  " never reach [experiment] max_time; set [experiment] max_iterations or"
                  " max_epochs, or give compute or the network a non-zero time",
                  STALL_ITERATIONS);
}

/* The algorithms' iteration hook: evaluation and stopping rules. */
static void on_iteration(void *p)
{
    run_state *e = p;
    const cfg_config *c = e->cfg;
    algo_env_grad_join(e->env); /* env->diverged counts every gradient so far */
    if (e->env->error.code || interrupted(e))
        return;
    if (e->env->diverged) {
        stop(e, STOP_DIVERGED);
        return;
    }
    if (c->eval_every_iters > 0 && e->env->iterations % c->eval_every_iters == 0) {
        evaluate(e);
        if (e->stop_reason || e->env->error.code)
            return;
    }
    if ((c->max_iterations > 0 && e->env->iterations >= c->max_iterations) ||
        (c->max_epochs > 0 &&
         (double)e->env->samples >= c->max_epochs * (double)e->ds->train.n))
        stop(e, STOP_LIMIT);
    else if (c->max_iterations <= 0 && c->max_epochs <= 0)
        stall_check(e);
    report_progress(e, 0);
}

static void on_eval_timer(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)arg;
    (void)payload;
    run_state *e = ctx;
    if (interrupted(e))
        return;
    algo_env_grad_join(e->env);
    evaluate(e);
    if (!e->stop_reason && !e->env->error.code &&
        !sim_engine_schedule(eng, e->cfg->eval_every_time, on_eval_timer, e, 0, NULL, NULL))
        algo_env_fail(e->env, SIM_ENOMEM, "cannot schedule the next evaluation");
}

/* The algorithms' series hook: one row in the database and to on_series. */
static void on_series(void *p, double sim_time, int64_t iteration, int worker,
                      const char *name, double value)
{
    run_state *e = p;
    an_series_row row = {.sim_time = sim_time, .iteration = iteration, .worker = worker,
                         .name = name, .value = value};
    if (e->db && e->run_id > 0) {
        sim_err dberr = {0};
        if (an_db_series(e->db, e->run_id, &row, &dberr) < 0) {
            algo_env_fail(e->env, dberr.code, "%s", dberr.msg);
            return;
        }
    }
    if (e->opts && e->opts->on_series)
        e->opts->on_series(e->opts->ctx, &row);
}

/* ---- building ----------------------------------------------------------- */

static int build_eval_subset(run_state *e, sim_err *err)
{
    const wl_split *tr = &e->ds->train;
    int64_t k = e->cfg->eval_train_samples;
    if (k == CFG_EVAL_ALL || k > tr->n)
        k = tr->n;
    int dim = e->ds->dim;
    const int sparse = e->ds->sparse;
    e->eval_n = k;
    if (sparse)
        e->eval_rows = malloc(((size_t)k + 1) * sizeof *e->eval_rows);
    else
        e->eval_x = malloc((size_t)k * (size_t)dim * sizeof(float));
    e->eval_y = malloc((size_t)k * sizeof(float));
    e->eval_ws = malloc(wl_model_workspace_floats(e->model, EVAL_CHUNK) * sizeof(float));
    e->eval_ws_test = e->env->run->pool ? malloc(wl_model_workspace_floats(e->model, EVAL_CHUNK) *
                                                 sizeof(float))
                                        : e->eval_ws;
    if ((!e->eval_x && !e->eval_rows) || !e->eval_y || !e->eval_ws || !e->eval_ws_test)
        return sim_err_set(err, SIM_ENOMEM, "out of memory for the evaluation set");
    /* evenly strided, deterministic, covers the whole file order */
    for (int64_t i = 0; i < k; i++) {
        int64_t s = (int64_t)((double)i * (double)tr->n / (double)k);
        if (sparse)
            e->eval_rows[i] = s;
        else
            memcpy(e->eval_x + i * dim, tr->x + s * dim, (size_t)dim * sizeof(float));
        e->eval_y[i] = tr->y[s];
    }
    return 0;
}

/* Out of memory while building an experiment: its sizes are the cause, so
 * it is an input error (exit 2) that says which keys set them. */
static int too_large(int rc, sim_err *err)
{
    if (rc != SIM_ENOMEM)
        return rc;
    char msg[600];
    snprintf(msg, sizeof msg, "%.580s", err->msg);
    return sim_err_set(err, SIM_EINPUT,
                       "%s: the configuration needs more memory than this machine gives"
                       " (workload.model, workload.dataset, workers.count)", msg);
}

/* The environment, the runner's hooks and its evaluation buffers. */
static int build(run_state *e, sim_err *err)
{
    xp_env_opts xo = {.vt = e->opts ? e->opts->algorithm : NULL,
                      .threads = e->opts ? e->opts->threads : 1};
    e->x = xp_env_create(e->cfg, &xo, err);
    if (!e->x)
        return err->code ? err->code : SIM_EINTERNAL;
    e->env = xp_env_algo_env(e->x);
    e->vt = xp_env_vt(e->x);
    e->ds = xp_env_dataset(e->x);
    e->model = xp_env_model(e->x);
    e->eng = xp_env_engine(e->x);
    e->net = xp_env_net(e->x);
    e->env->run->hooks.iteration = on_iteration;
    e->env->run->hooks.series = on_series;
    e->env->run->hooks.exp = e;
    e->avg = malloc((size_t)e->env->d * sizeof(float));
    e->xs = malloc((size_t)e->env->n * sizeof *e->xs);
    e->mean_scratch = malloc((size_t)e->env->d * sizeof *e->mean_scratch);
    if (!e->avg || !e->xs || !e->mean_scratch)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    return build_eval_subset(e, err);
}

static void teardown(run_state *e)
{
    xp_trace_destroy(e->trace);
    xp_env_destroy(e->x); /* the method's state first, then the environment */
    free(e->xs);
    free(e->avg);
    if (e->eval_ws_test != e->eval_ws)
        free(e->eval_ws_test);
    free(e->eval_ws);
    free(e->eval_y);
    free(e->eval_x);
    free(e->eval_rows);
    free(e->mean_scratch);
}

/* The runner's span hook: to the timeline recorder. */
static void on_span(void *p, int worker, int kind, sim_time t0, sim_time t1)
{
    run_state *e = p;
    xp_trace_span(e->trace, worker, kind, t0, t1);
}

/* ---- running ------------------------------------------------------------ */

static void fill_result(run_state *e, xp_run_result *r, const char *status)
{
    algo_env *env = e->env;
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
    for (int i = 0; i < env->n; i++) {
        algo_worker *w = &env->w[i];
        algo_env_idle_end(env, i); /* close open idle intervals at the end */
        /* a step still computing at the stop: count only its elapsed
         * part, and not as a step (its gradient was never used) */
        algo_env_step_cut(env, i, 0);
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

/* The one way a run fails after its row exists: the message (env->error,
 * or err for a failure outside events) goes to err, prefixed with where the
 * run was, and to the run row, marked failed. Returns the code. */
static int run_failed(run_state *e, sim_err *err)
{
    if (e->env->error.code) {
        *err = e->env->error;
        sim_err_prefix(err, "%s: %s: at %.9g s simulated, iteration %lld", e->cfg->path,
                       e->vt->name, sim_time_to_s(sim_engine_now(e->eng)),
                       (long long)e->env->iterations);
    }
    if (!err->code)
        sim_err_set(err, SIM_EINTERNAL, "%s: %s: failed", e->cfg->path, e->vt->name);
    if (e->db && e->run_id > 0)
        xp_record_fail(e->db, e->run_id, err->msg);
    teardown(e);
    return err->code;
}

int xp_experiment_run(const cfg_config *cfg, const xp_run_opts *opts, xp_run_result *res,
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
    e.db = opts ? opts->db : NULL;
    e.last_train_loss = e.last_test_loss = e.last_test_acc = NAN;
    clock_gettime(CLOCK_MONOTONIC, &e.wall0);

    /* the method and the faults are built before the run row exists, so
     * that a configuration error they find writes nothing */
    int rc = too_large(build(&e, err), err);
    if (rc == 0)
        rc = too_large(xp_env_algo_create(e.x, err), err);
    if (rc == 0)
        rc = xp_trace_create(e.x, e.db, opts && opts->time_only, &e.trace, err);
    if (rc == 0 && opts && opts->time_only) {
        e.env->run->time_only = 1;
        e.env->run->hooks.span = on_span;
    }
    if (rc == 0 && e.db)
        rc = xp_record_begin(e.db, e.x, opts->claim, &e.run_id, err);
    if (rc == 0 && e.trace) {
        xp_trace_run(e.trace, e.run_id);
        xp_env_set_trace(e.x, e.trace);
        e.env->run->hooks.span = on_span;
    }
    if (rc == AN_DB_CLAIMED) {
        /* another process runs or ran this configuration */
        if (res) {
            memset(res, 0, sizeof *res);
            res->run_id = e.run_id;
            snprintf(res->status, sizeof res->status, "skipped");
            res->sim_time = res->final_train_loss = res->final_test_accuracy = NAN;
            snprintf(res->algorithm, sizeof res->algorithm, "%s", e.vt->name);
        }
        teardown(&e);
        return 0;
    }
    if (rc < 0) {
        if (e.run_id > 0)
            xp_record_fail(e.db, e.run_id, err->msg);
        teardown(&e);
        return rc;
    }
    e.alg = xp_env_state(e.x);
    evaluate(&e); /* the starting point, t = 0, before any message */
    if (e.env->error.code)
        return run_failed(&e, err);
    if (e.vt->start(e.alg, err) < 0 || e.env->error.code)
        return run_failed(&e, err);

    if (cfg->eval_every_time > 0 &&
        !sim_engine_schedule(e.eng, cfg->eval_every_time, on_eval_timer, &e, 0, NULL, NULL))
        algo_env_fail(e.env, SIM_ENOMEM, "cannot schedule the first evaluation");
    if (opts && opts->interrupt)
        sim_engine_set_interrupt(e.eng, opts->interrupt);
    if (!e.stop_reason && !e.env->error.code)
        sim_engine_run_until(e.eng, cfg->max_time > 0 ? cfg->max_time : SIM_TIME_MAX);
    algo_env_grad_join(e.env);
    if (!e.env->error.code && sim_engine_overflowed(e.eng))
        algo_env_fail(e.env, SIM_ECONFIG,
                      "simulated time overflows: an event falls at or after %.3f s, the end of"
                      " the 64-bit nanosecond clock (a slowdown, time, size or trace value is"
                      " too large)", sim_time_to_s(SIM_TIME_MAX));
    if (!e.env->error.code)
        interrupted(&e); /* between two events */
    if (e.env->error.code)
        return run_failed(&e, err);
    /* the end row: also after a divergence, so the final loss is the
     * diverged model's (NULL for NaN), not an earlier evaluation's */
    int diverged = e.stop_reason == STOP_DIVERGED || e.env->diverged;
    if (e.last_eval_iteration != e.env->iterations || e.last_eval_time != sim_engine_now(e.eng))
        evaluate(&e);
    if (e.env->error.code)
        return run_failed(&e, err);
    if (diverged)
        e.stop_reason = STOP_DIVERGED;
    xp_run_result r;
    fill_result(&e, &r, e.stop_reason == STOP_DIVERGED ? "diverged" : "done");
    report_progress(&e, 1);
    if (e.trace && (rc = xp_trace_finish(e.trace, &r.trace_dropped, err)) < 0) {
        xp_record_fail(e.db, e.run_id, err->msg);
    } else if (opts && opts->time_only && opts->time_stats) {
        rc = xp_time_stats_fill(opts->time_stats, e.env, e.net, xp_trace_totals(e.trace),
                                r.sim_time, err);
    } else if (e.db && e.run_id > 0) {
        rc = xp_record_finish(e.db, e.run_id, e.x, &r, err);
        if (rc < 0)
            xp_record_fail(e.db, e.run_id, err->msg);
    }
    if (res)
        *res = r;
    teardown(&e);
    return rc;
}

/* ---- checking ----------------------------------------------------------- */

struct xp_check {
    char key[1800];  /* dataset spec, the folder its file names resolve against,
                        test fraction, normalize of the cached ds */
    wl_dataset *ds;
};

xp_check *xp_check_create(void) { return calloc(1, sizeof(xp_check)); }

void xp_check_destroy(xp_check *chk)
{
    if (!chk)
        return;
    wl_dataset_destroy(chk->ds);
    free(chk);
}

int xp_experiment_check(const cfg_config *cfg, xp_check *chk, sim_err *err)
{
    sim_err local;
    if (!err)
        err = &local;
    xp_env_opts xo = {.check_only = 1, .check_method = 1};
    if (chk) {
        char key[sizeof chk->key], dir[sizeof cfg->path];
        sim_path_dir(cfg->path, dir, sizeof dir);
        snprintf(key, sizeof key, "%s|%s|%.17g|%d", cfg->dataset, dir, cfg->test_fraction,
                 (int)cfg->normalize);
        if (!chk->ds || strcmp(chk->key, key) != 0) {
            wl_dataset *ds = xp_env_dataset_create(cfg, err);
            if (!ds)
                return err->code ? too_large(err->code, err) : SIM_EINTERNAL;
            wl_dataset_destroy(chk->ds);
            chk->ds = ds;
            snprintf(chk->key, sizeof chk->key, "%s", key);
        }
        xo.dataset = chk->ds;
    }
    xp_env *x = xp_env_create(cfg, &xo, err);
    if (!x)
        return err->code ? too_large(err->code, err) : SIM_EINTERNAL;
    int rc = too_large(xp_env_algo_create(x, err), err);
    xp_env_destroy(x);
    return rc;
}
