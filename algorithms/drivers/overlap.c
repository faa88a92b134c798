/* Bucketed all-reduce overlapping the backward pass (see overlap.h).
 *
 * Per worker: ready[w] buckets have their gradients, next[w] is the next
 * bucket to reduce, busy[w] = 1 while one is being reduced. Bucket-ready
 * events carry (worker, bucket, step parity); the end of the compute step
 * (scheduled by algo_env_compute, the source of the step's time) makes
 * every bucket ready. A stale ready event cannot outlive its step (the
 * step ends after its last all-reduce, which starts at or after the end of
 * the compute), and the parity check makes that explicit. */
#include "algorithms/drivers/overlap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/drivers/group.h"

struct algo_overlap {
    algo_env *env;
    algo_bucket_plan plan;
    sim_coll **coll;     /* one per bucket, each with the overlap as ctx */
    int *members;        /* rank -> worker (m ranks) */
    int *rank_of;        /* worker -> rank, -1 when not a member */
    int *ready, *next, *busy, *parity, *stopped; /* per worker */
    double *scale;       /* per worker: this step's message / env->msg_bytes */
    sim_coll_done done;
    int (*computed)(void *ctx, int w);
    void *ctx;
    int64_t events;      /* its ready and compute-end events not yet run */
};

/* The workload's layer profile in backward order into out (cap >=
 * WL_PROXY_LAYERS_MAX); returns the layer count. */
static int layer_profile(const algo_env *env, wl_proxy_layer *out, int cap)
{
    const wl_proxy *p = wl_proxy_find(env->cfg->proxy);
    if (p)
        return wl_proxy_layers(p, out, cap);
    const wl_model *m = env->model;
    int n = m->n_layers > 0 ? m->n_layers : 1;
    for (int i = 0; i < n && i < cap; i++) {
        /* dense layers: FLOPs in proportion to parameters, backward 2x */
        const wl_layer *l = m->n_layers > 0 ? &m->layers[n - 1 - i] : NULL;
        wl_proxy_layer *o = &out[i];
        snprintf(o->name, sizeof o->name, "%s", l ? l->name : "all");
        o->params = l ? l->size : m->n_params;
        o->forward_flops = (double)o->params;
        o->backward_flops = 2.0 * (double)o->params;
    }
    return n;
}

static void try_enter(algo_overlap *ov, int w)
{
    if (ov->stopped[w] || ov->busy[w] || ov->next[w] >= ov->ready[w])
        return;
    int b = ov->next[w];
    ov->busy[w] = 1;
    algo_env_coll_enter(ov->env, ov->coll[b], ov->rank_of[w],
                        ov->plan.buckets[b].bytes * ov->scale[w]);
}

static void on_bucket_done(sim_engine *eng, void *ctx, int rank)
{
    algo_overlap *ov = ctx;
    int w = ov->members[rank];
    if (ov->stopped[w])
        return;
    ov->busy[w] = 0;
    if (++ov->next[w] < ov->plan.n) {
        try_enter(ov, w);
        return;
    }
    ov->next[w] = ov->ready[w] = 0;
    ov->parity[w] ^= 1;
    ov->done(eng, ov->ctx, w);
}

static uint64_t ready_arg(int w, int b, int parity)
{
    return (uint64_t)(uint32_t)w | (uint64_t)(uint32_t)b << 32 | (uint64_t)parity << 62;
}

static ALGO_ON_EVENT(on_ready)
{
    algo_overlap *ov = ctx;
    int w = (int)(arg & 0xffffffffu), b = (int)((arg >> 32) & 0x3fffffffu);
    ov->events--;
    if ((int)(arg >> 62) != ov->parity[w] || b + 1 <= ov->ready[w])
        return;
    ov->ready[w] = b + 1;
    try_enter(ov, w);
}

static ALGO_ON_EVENT(on_compute_end)
{
    algo_overlap *ov = ctx;
    int w = (int)(arg & 0xffffffffu);
    ov->events--;
    if ((int)(arg >> 62) != ov->parity[w] || ov->stopped[w])
        return;
    if (ov->computed && !ov->computed(ov->ctx, w)) {
        algo_overlap_stop(ov, w);
        return;
    }
    algo_env_idle_begin(ov->env, w);
    ov->ready[w] = ov->plan.n;
    try_enter(ov, w);
}

void algo_overlap_enter(algo_overlap *ov, int w, double bytes)
{
    ov->scale[w] = ov->env->msg_bytes > 0 ? bytes / ov->env->msg_bytes : 0.0;
    ov->stopped[w] = 0;
    ov->ready[w] = ov->plan.n;
    try_enter(ov, w);
}

int algo_overlap_step(algo_overlap *ov, int w, int samples, double bytes)
{
    algo_env *env = ov->env;
    sim_time now = sim_engine_now(env->eng);
    ov->scale[w] = env->msg_bytes > 0 ? bytes / env->msg_bytes : 0.0;
    ov->stopped[w] = 0;
    int rc = algo_env_compute(env, w, samples, on_compute_end, ov, ready_arg(w, 0, ov->parity[w]));
    if (rc)
        return rc;
    ov->events++;
    double dt = (double)(env->w[w].busy_until - now);
    for (int b = 0; b < ov->plan.n - 1; b++) {
        sim_time at = (sim_time)llround(dt * ov->plan.buckets[b].ready);
        if (sim_engine_schedule(env->eng, at, on_ready, ov, ready_arg(w, b, ov->parity[w]),
                                NULL, NULL) == 0)
            return algo_env_fail(env, SIM_ENOMEM, "worker %d: cannot schedule bucket %d", w,
                                 b);
        ov->events++;
    }
    return 0;
}

int algo_overlap_busy(const algo_overlap *ov)
{
    if (!ov)
        return 0;
    if (ov->events > 0)
        return 1;
    for (int b = 0; ov->coll && b < ov->plan.n; b++)
        if (sim_coll_busy(ov->coll[b]))
            return 1;
    return 0;
}

void algo_overlap_stop(algo_overlap *ov, int w)
{
    ov->stopped[w] = 1;
    ov->busy[w] = ov->next[w] = ov->ready[w] = 0;
    ov->parity[w] ^= 1;
}

void algo_overlap_destroy(algo_overlap *ov)
{
    if (!ov)
        return;
    for (int b = 0; ov->coll && b < ov->plan.n; b++)
        sim_coll_destroy(ov->coll[b]);
    free(ov->coll);
    free(ov->ready);
    free(ov->next);
    free(ov->busy);
    free(ov->parity);
    free(ov->stopped);
    free(ov->members);
    free(ov->rank_of);
    free(ov->scale);
    algo_bucket_plan_release(&ov->plan);
    free(ov);
}

int algo_overlap_create(algo_env *env, const algo_overlap_desc *d, algo_overlap **out,
                        sim_err *err)
{
    algo_overlap *ov = calloc(1, sizeof *ov);
    if (!ov)
        return sim_err_set(err, SIM_ENOMEM, "bucket: out of memory");
    int rc;
    ov->env = env;
    ov->done = d->done;
    ov->computed = d->computed;
    ov->ctx = d->ctx;
    const int m = d->members ? d->n_members : env->n;
    wl_proxy_layer layers[WL_PROXY_LAYERS_MAX];
    int n_layers = layer_profile(env, layers, WL_PROXY_LAYERS_MAX);
    if (n_layers > WL_PROXY_LAYERS_MAX)
        n_layers = WL_PROXY_LAYERS_MAX;
    if ((rc = algo_bucket_plan_init(&ov->plan, layers, n_layers, env->msg_bytes, d->cap,
                                    err)) < 0)
        goto fail;
    size_t n = (size_t)env->n;
    ov->coll = calloc((size_t)ov->plan.n, sizeof *ov->coll);
    ov->ready = calloc(n, sizeof *ov->ready);
    ov->next = calloc(n, sizeof *ov->next);
    ov->busy = calloc(n, sizeof *ov->busy);
    ov->parity = calloc(n, sizeof *ov->parity);
    ov->stopped = calloc(n, sizeof *ov->stopped);
    ov->scale = calloc(n, sizeof *ov->scale);
    ov->members = malloc((size_t)(m > 0 ? m : 1) * sizeof *ov->members);
    ov->rank_of = malloc(n * sizeof *ov->rank_of);
    if (!ov->coll || !ov->ready || !ov->next || !ov->busy || !ov->parity ||
        !ov->stopped || !ov->scale || !ov->members || !ov->rank_of) {
        rc = sim_err_set(err, SIM_ENOMEM, "bucket: out of memory");
        goto fail;
    }
    for (int i = 0; i < env->n; i++)
        ov->rank_of[i] = -1;
    for (int r = 0; r < m; r++) {
        ov->members[r] = d->members ? d->members[r] : r;
        ov->rank_of[ov->members[r]] = r;
    }
    for (int b = 0; b < ov->plan.n; b++) {
        sim_coll_desc cd = {.kind = d->kind, .n = m, .hosts = d->members,
                            .ps_host = env->server_host, .per_node = env->per_node,
                            .done = on_bucket_done, .ctx = ov};
        algo_group g = {.n = m, .members = ov->members};
        rc = 0;
        if (d->alltoall) /* fails through algo_env_fail */
            ov->coll[b] = algo_group_coll(env, &g, 1, d->kind, cd.done, cd.ctx, "bucket");
        else if (d->members)
            rc = algo_env_coll_create(env, &cd, &ov->coll[b], err);
        else
            rc = algo_env_coll(env, d->kind, cd.done, cd.ctx, &ov->coll[b], err);
        if (rc < 0 || !ov->coll[b]) {
            rc = rc < 0 ? rc : env->error.code; /* the all-to-all's, reported */
            goto fail;
        }
    }
    *out = ov;
    return 0;
fail:
    algo_overlap_destroy(ov);
    return rc < 0 ? rc : SIM_ENOMEM;
}
