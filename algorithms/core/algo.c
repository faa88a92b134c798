/* The algorithm registry and the environment services every method uses:
 * gradients on the worker's own data stream, compute steps timed by the
 * compute model, idle and staleness accounting, collectives, and the
 * shared optimizer step. */
#include "algorithms/core/algo.h"
#include "algorithms/core/runner.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int algo_env_crashes(const algo_env *env) { return env->run->crashes; }

void algo_env_defer_clip(algo_env *env) { env->run->clip_deferred = 1; }

int algo_env_step_samples(const algo_env *env, int worker)
{
    const algo_worker *w = &env->w[worker];
    return w->batch > 0 ? w->batch : (int)w->sampler.shard_n;
}

int algo_grad_clip(float *g, int64_t d, double c)
{
    double s = 0;
    for (int64_t j = 0; j < d; j++)
        s += (double)g[j] * (double)g[j];
    double norm = sqrt(s);
    if (!(norm > c) || !isfinite(norm))
        return 0;
    const double scale = c / norm;
    for (int64_t j = 0; j < d; j++)
        g[j] = (float)((double)g[j] * scale);
    return 1;
}

/* The model's loss and gradient at params on the batch in w->bx, w->by
 * (sparse data: rows w->brows of the CSR training set). A model behind
 * another process (loss_grad_many) may fail: the run then fails. */
static double model_grad(algo_env *env, algo_worker *w, const float *params, float *grad,
                         int64_t b)
{
    const wl_model *m = env->model;
    if (env->ds->sparse)
        return m->vt->loss_grad_sparse(m, params, &env->ds->train.csr, w->brows, w->by, b, grad,
                                       w->ws);
    if (!m->vt->loss_grad_many)
        return m->vt->loss_grad(m, params, w->bx, w->by, b, grad, w->ws);
    wl_grad_req r = {.worker = w->id, .params = params, .x = w->bx, .y = w->by, .b = b,
                     .grad = grad};
    sim_err e = {0};
    if (m->vt->loss_grad_many(m, &r, 1, &e) < 0) {
        algo_env_fail(env, e.code, "%s", e.msg);
        return NAN;
    }
    return r.loss;
}

/* The part of a gradient after the model's (it touches only the worker's
 * own buffers and noise stream, so it may run on any thread): noise, clip,
 * coupled weight decay. */
static void grad_finish(algo_env *env, algo_worker *w, const float *params, float *grad,
                        double wd, int *clipped)
{
    if (env->noise.kind != ALGO_NOISE_NONE)
        algo_noise_add(&env->noise, grad, env->d, w->rng_noise, w->rng_noise_tmp);
    *clipped = env->cfg->clip > 0 && !env->run->clip_deferred &&
               algo_grad_clip(grad, env->d, env->cfg->clip);
    algo_add_decay(grad, params, wd, env->d);
}

static double grad_compute(algo_env *env, algo_worker *w, const float *params, float *grad,
                           int64_t b, double wd, int *clipped)
{
    double loss = model_grad(env, w, params, grad, b);
    grad_finish(env, w, params, grad, wd, clipped);
    return loss;
}

/* The queued gradients not yet computed, in one request of a model with
 * loss_grad_many (in queue order, in this thread: the model's helper is
 * one process), then each finished. */
static void jobs_run_many(algo_env *env, int n)
{
    wl_grad_req *reqs = env->run->reqs;
    int k = 0;
    for (int i = 0; i < n; i++) {
        algo_grad_job *j = &env->run->jobs[i];
        if (j->done)
            continue;
        algo_worker *w = &env->w[j->worker];
        reqs[k++] = (wl_grad_req){.worker = j->worker, .params = j->params, .x = w->bx,
                                  .y = w->by, .b = j->b, .grad = j->grad};
    }
    sim_err e = {0};
    int rc = k > 0 ? env->model->vt->loss_grad_many(env->model, reqs, k, &e) : 0;
    if (rc < 0)
        algo_env_fail(env, e.code, "%s", e.msg);
    k = 0;
    for (int i = 0; i < n; i++) {
        algo_grad_job *j = &env->run->jobs[i];
        if (j->done)
            continue;
        j->loss = rc < 0 ? NAN : reqs[k].loss;
        k++;
        grad_finish(env, &env->w[j->worker], j->params, j->grad, j->wd, &j->clipped);
        j->done = 1;
    }
}

static void job_run(algo_env *env, algo_grad_job *j)
{
    j->loss = grad_compute(env, &env->w[j->worker], j->params, j->grad, j->b, j->wd,
                           &j->clipped);
    j->done = 1;
}

static void job_run_at(void *ctx, int64_t i)
{
    algo_env *env = ctx;
    algo_grad_job *j = &env->run->jobs[i];
    if (!j->done)
        job_run(env, j);
}

/* fn over the n queued items: on the pool when two or more have not run
 * yet (todo), else in this thread (fn skips an item that has run). */
static void run_queue(algo_env *env, int n, int todo, sim_pool_fn fn)
{
    if (todo > 1 && env->run->pool)
        sim_pool_run(env->run->pool, n, fn, env);
    else
        for (int i = 0; i < n; i++)
            fn(env, i);
}

static void defer_run_at(void *ctx, int64_t i)
{
    algo_env *env = ctx;
    algo_defer_job *j = &env->run->defers[i];
    if (!j->done) {
        j->fn(j->ctx, j->worker);
        j->done = 1;
    }
}

void algo_env_defer_wait(algo_env *env, int worker)
{
    algo_worker *w = &env->w[worker];
    if (w->defer > 0)
        defer_run_at(env, w->defer - 1);
}

void algo_env_defer_join(algo_env *env)
{
    int n = env->run->n_defers;
    if (n == 0)
        return;
    int todo = 0;
    for (int i = 0; i < n && todo < 2; i++)
        todo += !env->run->defers[i].done;
    run_queue(env, n, todo, defer_run_at);
    for (int i = 0; i < n; i++)
        env->w[env->run->defers[i].worker].defer = 0;
    env->run->n_defers = 0;
}

void algo_env_defer(algo_env *env, int worker, void (*fn)(void *ctx, int worker), void *ctx)
{
    algo_worker *w = &env->w[worker];
    if (!env->run->jobs) {
        fn(ctx, worker);
        return;
    }
    algo_env_grad_wait(env, worker); /* runs its earlier deferred work too */
    if (w->defer == 0) /* one slot per worker: a done one is reused */
        w->defer = ++env->run->n_defers;
    env->run->defers[w->defer - 1] =
        (algo_defer_job){.worker = worker, .fn = fn, .ctx = ctx, .done = 0};
}

void algo_env_grad_wait(algo_env *env, int worker)
{
    algo_worker *w = &env->w[worker];
    algo_env_defer_wait(env, worker); /* the gradient may read what it writes */
    if (w->job > 0 && !env->run->jobs[w->job - 1].done)
        job_run(env, &env->run->jobs[w->job - 1]);
}

void algo_env_grad_join(algo_env *env)
{
    algo_env_defer_join(env);
    int n = env->run->n_jobs;
    if (n == 0)
        return;
    int todo = 0;
    for (int i = 0; i < n && todo < 2; i++)
        todo += !env->run->jobs[i].done;
    if (env->run->reqs && todo > 0)
        jobs_run_many(env, n);
    else
        run_queue(env, n, todo, job_run_at);
    for (int i = 0; i < n; i++) {
        algo_grad_job *j = &env->run->jobs[i];
        env->last_batch_loss = j->loss;
        if (!isfinite(j->loss))
            env->diverged = 1;
        env->clipped += j->clipped;
        env->w[j->worker].job = 0;
    }
    env->run->n_jobs = 0;
}

double algo_env_grad_wd(algo_env *env, int worker, const float *params, float *grad,
                        double wd)
{
    algo_worker *w = &env->w[worker];
    if (env->run->jobs && w->job > 0)
        algo_env_grad_join(env); /* its batch buffers are about to be refilled */
    int64_t b = env->ds->sparse /* CSR rows for the model's sparse kernel */
                    ? wl_sampler_next_rows(&w->sampler, w->batch, w->brows, w->by)
                    : wl_sampler_next(&w->sampler, w->batch, w->bx, w->by);
    w->steps++;
    w->samples += b;
    w->grad_samples = algo_env_step_samples(env, worker);
    if (env->run->time_only) {
        memset(grad, 0, (size_t)env->d * sizeof *grad);
        env->last_batch_loss = 0;
        return 0;
    }
    if (env->run->jobs) {
        algo_grad_job *j = &env->run->jobs[env->run->n_jobs];
        *j = (algo_grad_job){.worker = worker, .params = params, .grad = grad, .b = b,
                             .wd = wd};
        w->job = ++env->run->n_jobs;
        return NAN;
    }
    int clipped;
    double loss = grad_compute(env, w, params, grad, b, wd, &clipped);
    env->last_batch_loss = loss;
    if (!isfinite(loss))
        env->diverged = 1;
    env->clipped += clipped;
    return loss;
}

double algo_env_grad(algo_env *env, int worker, const float *params, float *grad)
{
    return algo_env_grad_wd(env, worker, params, grad, 0.0);
}

/* p grown to bytes by realloc while *ok; on a failure p stays as it was
 * (still valid, freed with the worker) and *ok becomes 0. */
static void *grow(void *p, size_t bytes, int *ok)
{
    void *q = *ok ? realloc(p, bytes) : NULL;
    *ok = q != NULL;
    return q ? q : p;
}

int algo_env_set_batch(algo_env *env, int worker, int batch)
{
    if (worker < 0 || worker >= env->n || batch < 0)
        return algo_env_fail(env, SIM_EINTERNAL, "worker %d: invalid batch %d", worker, batch);
    algo_worker *w = &env->w[worker];
    algo_env_grad_wait(env, worker); /* its buffers may move */
    int64_t need = batch > 0 ? batch : w->sampler.shard_n;
    if (need > w->batch_cap) {
        int ok = 1;
        if (env->ds->sparse)
            w->brows = grow(w->brows, (size_t)need * sizeof *w->brows, &ok);
        else
            w->bx = grow(w->bx, (size_t)need * (size_t)env->ds->dim * sizeof(float), &ok);
        w->by = grow(w->by, (size_t)need * sizeof(float), &ok);
        w->ws = grow(w->ws, wl_model_workspace_floats(env->model, need) * sizeof(float), &ok);
        if (!ok)
            return algo_env_fail(env, SIM_ENOMEM, "worker %d: out of memory for a batch of %lld",
                                 worker, (long long)need);
        w->batch_cap = need;
    }
    if (w->batch != batch) {
        w->batch = batch;
        env->batch_changes++;
    }
    return 0;
}

int algo_env_compute(algo_env *env, int worker, int samples, sim_handler fn, void *ctx,
                     uint64_t arg)
{
    algo_worker *w = &env->w[worker];
    double t = sim_compute_step_time(env->compute, worker, w->steps, samples,
                                     env->flops_per_sample, w->rng_compute);
    if (w->slowdown > 0 && w->slowdown != 1)
        t *= w->slowdown;
    sim_time dt = sim_time_from_s(t);
    if (dt == 0)
        algo_env_grad_wait(env, worker); /* its end is in this instant */
    w->compute_time += sim_time_to_s(dt);
    sim_time now = sim_engine_now(env->eng);
    w->busy_from = now;
    w->busy_until = dt > SIM_TIME_MAX - now ? SIM_TIME_MAX : now + dt;
    if (env->run->hooks.span)
        env->run->hooks.span(env->run->hooks.exp, worker, ALGO_SPAN_COMPUTE, now, w->busy_until);
    if (sim_engine_schedule(env->eng, dt, fn, ctx, arg, NULL, NULL) == 0)
        return algo_env_fail(env, SIM_ENOMEM,
                             "worker %d: cannot schedule the end of its compute step (out of "
                             "memory or too many pending events)",
                             worker);
    return 0;
}

void algo_env_compute_charge(algo_env *env, int worker, sim_time dt)
{
    env->w[worker].compute_time += sim_time_to_s(dt);
    if (env->run->hooks.span) {
        sim_time now = sim_engine_now(env->eng);
        env->run->hooks.span(env->run->hooks.exp, worker, ALGO_SPAN_COMPUTE, now, now + dt);
    }
}

void algo_env_step_cut(algo_env *env, int worker, int lost)
{
    algo_worker *w = &env->w[worker];
    sim_time now = sim_engine_now(env->eng);
    if (w->busy_until <= now)
        return;
    w->compute_time -= sim_time_to_s(w->busy_until - now);
    if (lost)
        w->compute_time -= sim_time_to_s(now - w->busy_from);
    if (env->run->hooks.span)
        env->run->hooks.span(env->run->hooks.exp, worker, lost ? ALGO_SPAN_LOST : ALGO_SPAN_CUT,
                             w->busy_from, now);
    w->busy_until = now;
    w->steps--;
}

int algo_env_fail(algo_env *env, int code, const char *fmt, ...)
{
    if (code >= 0)
        code = SIM_EINTERNAL;
    if (env->error.code == 0) {
        va_list ap;
        va_start(ap, fmt);
        sim_err_vset(&env->error, code, fmt, ap);
        va_end(ap);
    }
    if (env->eng)
        sim_engine_stop(env->eng);
    return code;
}

int algo_env_send(algo_env *env, int src, int dst, double bytes, sim_net_deliver fn,
                  void *ctx, uint64_t arg)
{
    sim_err e = {0};
    int rc = sim_net_send(env->net, src, dst, bytes, fn, ctx, arg, &e);
    if (rc < 0)
        return algo_env_fail(env, rc, "send of %.0f bytes from host %d to host %d: %s", bytes,
                             src, dst, e.msg);
    return 0;
}

int algo_env_coll_enter(algo_env *env, sim_coll *coll, int rank, double bytes)
{
    sim_err e = {0};
    int rc = sim_coll_enter(coll, rank, bytes, &e);
    if (rc < 0)
        return algo_env_fail(env, rc, "collective: rank %d: %s", rank, e.msg);
    return 0;
}

void algo_env_series(algo_env *env, int worker, const char *name, double value)
{
    if (env->run->hooks.series)
        env->run->hooks.series(env->run->hooks.exp, sim_time_to_s(sim_engine_now(env->eng)),
                          env->iterations, worker < 0 ? -1 : worker, name, value);
}

void algo_env_idle_begin(algo_env *env, int worker)
{
    algo_worker *w = &env->w[worker];
    if (w->idle_since < 0)
        w->idle_since = sim_engine_now(env->eng);
}

void algo_env_idle_end(algo_env *env, int worker)
{
    algo_worker *w = &env->w[worker];
    if (w->idle_since >= 0) {
        sim_time now = sim_engine_now(env->eng);
        w->idle_time += sim_time_to_s(now - w->idle_since);
        if (env->run->hooks.span)
            env->run->hooks.span(env->run->hooks.exp, worker, ALGO_SPAN_IDLE, w->idle_since, now);
        w->idle_since = -1;
    }
}

void algo_env_staleness(algo_env *env, int worker, int64_t staleness)
{
    algo_worker *w = &env->w[worker];
    w->staleness_sum += (double)staleness;
    w->staleness_n++;
    int64_t v = staleness < 0 ? 0 : staleness;
    if (v >= w->stale_len) {
        int64_t len = v + 1 > 2 * w->stale_len ? v + 1 : 2 * w->stale_len;
        int64_t *grown = realloc(w->stale_counts, (size_t)len * sizeof *grown);
        if (!grown) {
            algo_env_fail(env, SIM_ENOMEM, "staleness counts: out of memory");
            return;
        }
        memset(grown + w->stale_len, 0, (size_t)(len - w->stale_len) * sizeof *grown);
        w->stale_counts = grown;
        w->stale_len = len;
    }
    w->stale_counts[v]++;
}

void algo_env_iteration(algo_env *env, int64_t samples)
{
    env->iterations++;
    env->samples += samples;
    if (env->run->hooks.iteration)
        env->run->hooks.iteration(env->run->hooks.exp);
}

int algo_env_coll(algo_env *env, sim_coll_kind kind, sim_coll_done done, void *ctx,
                  sim_coll **out, sim_err *err)
{
    sim_coll_desc desc = {
        .kind = kind,
        .n = env->n,
        .ps_host = env->server_host,
        .per_node = env->per_node,
        .done = done,
        .ctx = ctx,
    };
    if (kind == SIM_COLL_PS && env->server_host < 0)
        return sim_err_set(err, SIM_EINTERNAL,
                           "parameter-server collective without a server host");
    return algo_env_coll_create(env, &desc, out, err);
}

int algo_env_coll_create(algo_env *env, const sim_coll_desc *desc, sim_coll **out,
                         sim_err *err)
{
    sim_err local = {0};
    if (!err)
        err = &local;
    /* sim_coll_create returns NULL with its code in err: the one place the
     * algorithms read a code back, at the engine's boundary */
    if (!(*out = sim_coll_create(env->net, desc, err)))
        return err->code < 0 ? err->code : SIM_EINTERNAL;
    return 0;
}

double algo_env_epoch(const algo_env *env)
{
    return (double)env->samples / (double)env->ds->train.n;
}

double algo_lr_at(const cfg_config *cfg, double epoch)
{
    double lr = cfg->lr;
    for (int i = 0; i < cfg->n_lr_milestones; i++)
        if (epoch >= cfg->lr_milestones[i])
            lr *= cfg->lr_decay;
    if (cfg->warmup_epochs > 0 && epoch < cfg->warmup_epochs)
        lr *= 0.1 + 0.9 * epoch / cfg->warmup_epochs;
    return lr;
}

double algo_env_lr(const algo_env *env) { return algo_lr_at(env->cfg, algo_env_epoch(env)); }

void algo_mean(float *out, const float *const *vs, int n, int64_t d)
{
    memcpy(out, vs[0], (size_t)d * sizeof *out);
    for (int i = 1; i < n; i++) {
        const float *v = vs[i];
        for (int64_t j = 0; j < d; j++)
            out[j] += v[j];
    }
    const float inv = 1.0f / (float)n;
    for (int64_t j = 0; j < d; j++)
        out[j] *= inv;
}
