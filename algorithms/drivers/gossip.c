/* The synchronous gossip driver (see gossip.h): the iteration of a worker
 * (gradient, publish, combine, finish), the exact and adaptive mixing
 * collectives, the periodic synchronization, and the lifetime. The state
 * and its invariants are in gossip_impl.h; the iteration window and the
 * evaluation snapshots in gossip_window.c; every crash and rejoin rule in
 * gossip_crash.c, which this file calls only in crash mode. */
#include "algorithms/drivers/gossip_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void algo_gossip_fail(algo_gossip *g, int code, const char *what)
{
    algo_env_fail(g->env, code, "%s: %s", g->env->cfg->algorithm, what);
}

/* The delivered messages of step t at worker w (0 if none). */
static int recv_of(const gworker *w, int64_t t)
{
    for (int e = 0; e < w->nrecv; e++)
        if (w->recv[e].step == t)
            return w->recv[e].count;
    return 0;
}

/* Adds delta messages of step t; a pair that falls to 0 is removed.
 * -1 when w has no room left (impossible, see the header comment). */
static int recv_add(gworker *w, int64_t t, int delta)
{
    int e = 0;
    while (e < w->nrecv && w->recv[e].step != t)
        e++;
    if (e == w->nrecv) {
        if (delta == 0)
            return 0;
        if (w->nrecv == w->cap_recv)
            return -1;
        w->recv[w->nrecv++] = (recv_cnt){.step = t, .count = 0};
    }
    w->recv[e].count += delta;
    if (w->recv[e].count == 0)
        w->recv[e] = w->recv[--w->nrecv];
    return 0;
}

static void try_publish(algo_gossip *g, int i);
static void coll_enter(algo_gossip *g, algo_gossip_coll kind, int i);

float *algo_gossip_x(const algo_gossip *g, int i)
{
    algo_env_defer_wait(g->env, i);
    return g->w[i].x;
}

void algo_gossip_set_profile(algo_gossip *g, algo_gossip_profile *p) { g->prof = p; }
/* ---- the iteration ------------------------------------------------------ */

/* Worker i's iteration k is over (synchronization included): snapshot,
 * count, go on. */
static void end_iter(algo_gossip *g, int i)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    algo_env_idle_end(env, i);
    int64_t k = w->k;
    algo_gossip_snapshot(g, i, k);
    w->k++;
    algo_gossip_iteration_done(g, k);
    algo_gossip_begin_iter(g, i);
}

/* x_i^{k+1} is set (by finish(result) unless fused): synchronize when the
 * method asks for it, else end the iteration. */
static void finish_iter(algo_gossip *g, int i, int fused)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    if (!fused) {
        double t0 = g->prof ? now_s() : 0;
        algo_env_defer_wait(env, i); /* finish reads and writes its model */
        g->ops.finish(g->m, env, i, w->k, w->lr, w->result);
        if (g->prof)
            g->prof->update_s += now_s() - t0;
    }
    if (g->ops.sync_after && g->ops.sync_after(g->m, w->k)) {
        algo_env_idle_begin(env, i);
        coll_enter(g, ALGO_GC_SYNC, i);
        return;
    }
    end_iter(g, i);
}

static void mixing_done(algo_gossip *g, int i, const float *result)
{
    gworker *w = &g->w[i];
    w->result = result;
    w->mixed_done = 1;
    if (g->ops.form == ALGO_GOSSIP_ATC || w->compute_done)
        finish_iter(g, i, 0);
}

static void on_msg(sim_engine *eng SIM_UNUSED, void *ctx, uint64_t arg, int src SIM_UNUSED,
                   int dst, double bytes SIM_UNUSED)
{
    algo_gossip *g = ctx;
    gworker *w = &g->w[dst];
    int64_t t = (int64_t)arg;
    if (t < w->t || t - w->t >= g->R || recv_add(w, t, 1) < 0) {
        algo_gossip_fail(g, SIM_EINTERNAL, "a gossip message outside the receive window");
        return;
    }
    if (w->published && t == w->t)
        algo_gossip_check_round(g, dst);
}

void algo_gossip_release(algo_gossip *g, int j, int p)
{
    gworker *w = &g->w[j];
    if (--w->pend[p] == 0 && w->wait_slot && (int)(w->t & 1) == p && !g->env->w[j].down) {
        w->wait_slot = 0;
        try_publish(g, j);
    }
}

/* Worker i's deferred fused combine (gworker's d* fields), then the
 * snapshot of its result when one was asked for meanwhile. */
static void combine_job(void *ctx, int i)
{
    algo_gossip *g = ctx;
    gworker *w = &g->w[i];
    g->ops.combine_finish(g->m, g->env, i, w->dk, w->dlr, w->dW, g->sp[w->dpar], w->dold,
                          w->dnew);
    if (w->dsnap)
        memcpy(w->dsnap, w->dnew, (size_t)g->d * sizeof(float));
    w->dsnap = NULL;
    w->dpending = 0;
}

/* The fused combine of worker i's step of parity p: x_new = combine and
 * update of the neighbours' slots of parity p and of x_old. It writes only
 * what i owns (x_new, its gradient and optimizer state), so on a pool it
 * waits for the join (algo_env_defer), beside the other workers'; a
 * pending combine of the other parity reads or writes these slots, so it
 * runs first. Crash mode swaps inputs in sp around the call: at once. */
static void combine_fused(algo_gossip *g, int i, const topo_wmat *W, int p, const float *x_old,
                          float *x_new)
{
    gworker *w = &g->w[i];
    algo_env_grad_wait(g->env, i); /* its earlier combine and the gradient it reads */
    w->dW = W;
    w->dpar = p;
    w->dk = w->k;
    w->dlr = w->lr;
    w->dold = x_old;
    w->dnew = x_new;
    w->dsnap = NULL;
    if (g->crash) {
        combine_job(g, i);
        return;
    }
    if (g->def_par >= 0 && g->def_par != p)
        algo_env_defer_join(g->env);
    g->def_par = p;
    w->dpending = 1;
    algo_env_defer(g->env, i, combine_job, g);
}

/* Before slots of parity p are written outside a combine: the pending
 * combines that read them run. */
static void slots_free(algo_gossip *g, int p)
{
    if (g->def_par == p)
        algo_env_defer_join(g->env);
}

static void complete_round(algo_gossip *g, int i)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    int64_t t = w->t;
    int p = (int)(t & 1);
    const topo_wmat *W = topo_mixing_at(env->mix, t);
    int fused = g->ops.combine_finish && w->plan.mode == ALGO_MIX_GOSSIP &&
                w->round + 1 >= w->plan.rounds;
    if (fused && g->ops.form == ALGO_GOSSIP_AWC && !w->compute_done) {
        /* On a static graph no neighbour can need this step's slots back
         * before our next send (after our compute), so the combine waits
         * for the gradient and runs fused with the update. */
        if (topo_graph_period(env->graph) == 1) {
            w->ready_last = 1;
            return;
        }
        fused = 0;
    }
    double t0 = g->prof ? now_s() : 0;
    int src = -1, j0 = i; /* crash mode: missing inputs replaced (gossip_crash.c) */
    if (g->crash)
        algo_gossip_crash_substitute(g, i, t, &src, &j0);
    if (fused && g->in_place) {
        if (w->pend[p ^ 1] > 0) { /* impossible on a static symmetric graph */
            algo_gossip_fail(g, SIM_EINTERNAL, "in-place combine into a send buffer still in use");
            return;
        }
        combine_fused(g, i, W, p, w->slot[p], w->slot[p ^ 1]);
        w->x = w->slot[p ^ 1];
    } else if (fused)
        combine_fused(g, i, W, p, w->x, w->x);
    else
        topo_mixing_apply_row(W, i, g->sp[p], w->mix, g->len);
    if (g->crash)
        algo_gossip_crash_restore(g, i, t, j0);
    if (w->plan.mode == ALGO_MIX_ADAPTIVE) {
        const float *a = w->slot[p], *b = w->mix;
        double s = 0;
        for (int64_t j = 0; j < g->d; j++) {
            double r = (double)a[j] - (double)b[j];
            s += r * r;
        }
        w->delta = s;
    }
    if (g->prof) {
        g->prof->mix_s += now_s() - t0;
        g->prof->rounds++;
    }
    const int *in;
    int nin = topo_graph_in_at(env->graph, t, i, &in);
    if (!g->crash)
        recv_add(w, t, -nin); /* check_round saw nin of them: the pair goes */
    w->published = 0;
    w->timed_out = 0;
    w->round++;
    w->t++;
    env->w[i].gossip_rounds++;
    if (g->crash) {
        algo_gossip_crash_release(g, i, t, src);
    } else {
        for (int a = 0; a < nin; a++)
            algo_gossip_release(g, in[a], p);
    }
    if (fused) {
        w->mixed_done = 1;
        finish_iter(g, i, 1);
        return;
    }
    if (w->plan.mode == ALGO_MIX_ADAPTIVE) {
        coll_enter(g, ALGO_GC_SCALAR, i);
        return;
    }
    if (w->round < w->plan.rounds)
        try_publish(g, i);
    else
        mixing_done(g, i, w->mix);
}

void algo_gossip_check_round(algo_gossip *g, int i)
{
    gworker *w = &g->w[i];
    if (g->crash) {
        if (!w->ready_last && algo_gossip_crash_ready(g, i))
            complete_round(g, i);
        return;
    }
    const int *in;
    int nin = topo_graph_in_at(g->env->graph, w->t, i, &in);
    if (recv_of(w, w->t) >= nin)
        complete_round(g, i);
}

/* Fills slot[t & 1] once it is free and sends it (or enters the exact
 * all-reduce with it). */
static void try_publish(algo_gossip *g, int i)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    int p = (int)(w->t & 1);
    if (w->pend[p] > 0) {
        w->wait_slot = 1;
        return;
    }
    float *s = w->slot[p];
    if (g->in_place) {
        if (s != w->x) { /* x_i^k must be in the slot of step k */
            algo_gossip_fail(g, SIM_EINTERNAL, "the model is not in its send buffer");
            return;
        }
    } else if (w->round == 0) {
        double t0 = g->prof ? now_s() : 0;
        slots_free(g, p);
        algo_env_defer_wait(env, i); /* prepare reads its model */
        g->ops.prepare(g->m, env, i, w->k, w->lr, s);
        if (g->prof)
            g->prof->update_s += now_s() - t0;
    } else {
        slots_free(g, p);
        memcpy(s, w->mix, (size_t)g->len * sizeof(float));
    }
    if (w->plan.mode == ALGO_MIX_EXACT) {
        coll_enter(g, ALGO_GC_EXACT, i);
        return;
    }
    w->published = 1;
    const double bytes = g->ops.bytes ? g->ops.bytes(g->m, i) : g->msg_bytes;
    if (g->crash) { /* to who takes part in step t, with a timeout */
        algo_gossip_crash_send(g, i, p, bytes);
        return;
    }
    const int *out;
    int nout = topo_graph_out_at(env->graph, w->t, i, &out);
    w->pend[p] = nout;
    for (int a = 0; a < nout; a++)
        if (algo_gossip_send(g, i, out[a], bytes, on_msg, (uint64_t)w->t) < 0)
            return;
    algo_gossip_check_round(g, i);
}

static void start_mixing(algo_gossip *g, int i)
{
    gworker *w = &g->w[i];
    if (w->plan.mode == ALGO_MIX_GOSSIP && w->plan.rounds == 0) {
        double t0 = g->prof ? now_s() : 0;
        algo_env_defer_wait(g->env, i); /* prepare reads its model */
        g->ops.prepare(g->m, g->env, i, w->k, w->lr, w->mix);
        if (g->prof)
            g->prof->update_s += now_s() - t0;
        mixing_done(g, i, w->mix);
        return;
    }
    try_publish(g, i);
}

static ALGO_ON_EVENT(on_compute)
{
    algo_gossip *g = ctx;
    int i = (int)(arg & 0xffffffffu);
    gworker *w = &g->w[i];
    if (g->crash && (g->env->w[i].down || w->gen != (uint32_t)(arg >> 32)))
        return; /* a crashed incarnation's step */
    w->compute_done = 1;
    if (g->ops.form == ALGO_GOSSIP_ATC) {
        algo_env_idle_begin(g->env, i);
        start_mixing(g, i);
    } else if (w->ready_last) {
        w->ready_last = 0;
        complete_round(g, i);
    } else if (w->mixed_done) {
        finish_iter(g, i, 0);
    } else {
        algo_env_idle_begin(g->env, i);
    }
}

static void plan_of(const algo_gossip *g, int64_t k, algo_gossip_plan *out)
{
    *out = (algo_gossip_plan){.mode = ALGO_MIX_GOSSIP, .rounds = g->steps};
    if (g->ops.plan)
        g->ops.plan(g->m, k, algo_gossip_epoch_at(g, k), out);
}

void algo_gossip_begin_iter(algo_gossip *g, int i)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    if (g->gc) /* the joiners waiting for iteration k start with it */
        algo_gossip_group_begin(g, i);
    algo_gossip_refresh_spi(g);
    w->lr = algo_lr_at(env->cfg, algo_gossip_epoch_at(g, w->k));
    plan_of(g, w->k, &w->plan);
    w->round = 0;
    w->compute_done = 0;
    w->mixed_done = 0;
    w->result = NULL;
    algo_env_grad(env, i, w->x, env->w[i].grad);
    g->iter_samples[w->k % g->R] += env->w[i].grad_samples;
    algo_env_compute(env, i, algo_env_step_samples(env, i), on_compute, g,
                     (uint64_t)(uint32_t)i | (uint64_t)w->gen << 32);
    if (g->ops.form == ALGO_GOSSIP_AWC)
        start_mixing(g, i);
}

/* ---- collectives -------------------------------------------------------- */

void algo_gossip_coll_form(algo_gossip *g, algo_gossip_coll kind, int i, const int *members,
                           int nm)
{
    gworker *w = &g->w[i];
    double t0 = g->prof ? now_s() : 0;
    if (kind == ALGO_GC_SCALAR) {
        double s = 0;
        for (int r = 0; r < nm; r++)
            s += g->w[members ? members[r] : r].delta;
        g->est = sqrt(s / nm);
        if (w->round == 1)
            g->est_first = g->est;
        return;
    }
    const float **in = g->ptrs;
    for (int r = 0; r < nm; r++) {
        int j = members ? members[r] : r;
        in[r] = kind == ALGO_GC_EXACT ? g->sp[w->t & 1][j] : g->w[j].x;
    }
    if (kind == ALGO_GC_EXACT) {
        algo_mean(g->avg, in, nm, g->len);
    } else {
        algo_env_defer_join(g->env); /* every model is read and rewritten */
        algo_mean(g->savg, in, nm, g->d);
        if (g->ops.sync_mean)
            g->ops.sync_mean(g->m, g->env, w->k, w->lr, members, nm, g->savg);
        for (int r = 0; r < nm; r++)
            memcpy(g->w[members ? members[r] : r].x, g->savg, (size_t)g->d * sizeof(float));
    }
    if (g->prof)
        g->prof->mix_s += now_s() - t0;
}

void algo_gossip_part_done(algo_gossip *g, algo_gossip_coll kind, int i)
{
    gworker *w = &g->w[i];
    if (kind == ALGO_GC_EXACT) {
        mixing_done(g, i, g->avg);
    } else if (kind == ALGO_GC_SYNC) {
        end_iter(g, i);
    } else {
        double target = w->plan.target > 0 ? w->plan.target : w->plan.fraction * g->est_first;
        if (g->est > target && w->round < w->plan.rounds)
            try_publish(g, i);
        else
            mixing_done(g, i, w->mix);
    }
}

/* Without crashes every worker is rank i of the collectives over all n. */
static void on_coll_done(sim_engine *eng SIM_UNUSED, void *ctx, int rank)
{
    struct gcoll *c = ctx;
    algo_gossip *g = c->g;
    if (c->done++ == 0)
        algo_gossip_coll_form(g, (algo_gossip_coll)c->kind, rank, NULL, g->n);
    if (c->done == g->n)
        c->done = 0;
    algo_gossip_part_done(g, (algo_gossip_coll)c->kind, rank);
}

/* The collective of a kind over all n workers; 0 or -1 with err filled. */
static int make_coll(algo_gossip *g, algo_gossip_coll kind, sim_coll_kind ck, sim_err *err)
{
    g->cctx[kind] = (struct gcoll){.g = g, .kind = (int)kind, .done = 0};
    return algo_env_coll(g->env, ck, on_coll_done, &g->cctx[kind], &g->coll[kind], err);
}

/* Worker i enters its next collective: over every worker, or in crash
 * mode over the group of live workers (gossip_group.c). */
static void coll_enter(algo_gossip *g, algo_gossip_coll kind, int i)
{
    if (g->gc) {
        algo_gossip_group_enter(g, i, kind);
        return;
    }
    algo_env_coll_enter(g->env, g->coll[kind], i, algo_gossip_coll_bytes(g, kind));
}

double algo_gossip_coll_bytes(const algo_gossip *g, algo_gossip_coll kind)
{
    return kind == ALGO_GC_EXACT ? g->msg_bytes : kind == ALGO_GC_SCALAR ? 8.0 : g->env->msg_bytes;
}

/* ---- lifetime ----------------------------------------------------------- */

/* At the run's end: what the driver grows while it runs (the run owns
 * the rest). */
static void gossip_free(void *p)
{
    algo_gossip *g = p;
    algo_gossip_fifo_free(g);
    for (int k = 0; k < 3; k++)
        sim_coll_destroy(g->coll[k]);
    for (int i = 0; g->w && i < g->n; i++)
        free(g->w[i].tv);
    for (int f = 0; f < g->n_frames; f++) {
        free(g->frames[f]->has);
        free(g->frames[f]->x);
        free(g->frames[f]);
    }
    free(g->frames);
    free(g->done_cnt);
    free(g->iter_samples);
}

int algo_gossip_create_state(algo_env *env, const algo_gossip_ops *ops, void *m, void **out,
                             sim_err *err)
{
    algo_gossip *g = algo_env_calloc(env, 1, sizeof *g);
    if (!g)
        return algo_env_alloc_check(env, env->cfg->algorithm, err);
    int rc;
    g->env = env;
    g->ops = *ops;
    g->m = m;
    g->def_par = -1;
    if (!env->graph || !env->mix)
        return sim_err_set(err, SIM_EINTERNAL, "%s: no logical graph", env->cfg->algorithm);
    int64_t steps = 1;
    if (cfg_find(env->cfg, "algorithm", "gossip_steps") &&
        (rc = cfg_get_int(env->cfg, "algorithm", "gossip_steps", &steps, err)) < 0)
        return rc;
    if (steps < 0 || steps > 1000000)
        return cfg_error(env->cfg, "algorithm", "gossip_steps", SIM_ECONFIG, err,
                         "must be in [0, 1000000], got %lld", (long long)steps);
    g->steps = (int)steps;
    g->n = env->n;
    g->d = env->d;
    g->len = (int64_t)ops->width * env->d;
    g->msg_bytes = (double)ops->width * env->msg_bytes;
    g->R = env->n * (topo_graph_period(env->graph) + 1) + 4;
    for (int i = 0; i < env->n; i++)
        g->spi += algo_env_step_samples(env, i);
    g->spi_changes = env->batch_changes;
    size_t n = (size_t)g->n, len = (size_t)g->len;
    g->w = algo_env_calloc(env, n, sizeof *g->w);
    algo_env_own(env, g, gossip_free); /* reads g->w: after it, so it runs before */
    g->slab = algo_env_alloc(env, 3 * n * len * sizeof(float));
    g->sp[0] = algo_env_alloc(env, n * sizeof(float *));
    g->sp[1] = algo_env_alloc(env, n * sizeof(float *));
    g->ptrs = algo_env_alloc(env, n * sizeof(float *));
    g->done_cnt = calloc((size_t)g->R, sizeof *g->done_cnt); /* grown by gossip_window.c */
    g->iter_samples = calloc((size_t)g->R, sizeof *g->iter_samples);
    size_t n_recv = 0;
    for (int i = 0; g->w && i < env->n; i++) {
        const int *nb;
        g->w[i].cap_recv = 2 * topo_graph_neighbors(env->graph, i, &nb) + 2;
        n_recv += (size_t)g->w[i].cap_recv;
    }
    g->recv_slab = algo_env_alloc(env, n_recv * sizeof *g->recv_slab);
    if (ops->plan) /* the method may use exact or adaptive mixing */
        g->avg = algo_env_alloc(env, len * sizeof(float));
    if (ops->sync_after)
        g->savg = algo_env_alloc(env, (size_t)env->d * sizeof(float));
    if (!g->done_cnt || !g->iter_samples ||
        algo_env_alloc_check(env, env->cfg->algorithm, err) < 0)
        return sim_err_set(err, SIM_ENOMEM, "%s: out of memory for %d workers",
                           env->cfg->algorithm, env->n);
    n_recv = 0;
    for (size_t i = 0; i < n; i++) {
        gworker *w = &g->w[i];
        w->slot[0] = g->slab + (3 * i) * len;
        w->slot[1] = g->slab + (3 * i + 1) * len;
        w->mix = g->slab + (3 * i + 2) * len;
        w->recv = g->recv_slab + n_recv;
        n_recv += (size_t)w->cap_recv;
        g->sp[0][i] = w->slot[0];
        g->sp[1][i] = w->slot[1];
    }
    g->crash = algo_env_crashes(env);
    if (g->crash && (rc = algo_gossip_crash_init(g, err)) < 0)
        return rc;
    g->in_place = !g->crash && ops->sends_model && ops->form == ALGO_GOSSIP_AWC &&
                  ops->width == 1 &&
                  ops->combine_finish && !ops->plan && !ops->sync_after &&
                  g->steps == 1 && topo_graph_period(env->graph) == 1;
    for (size_t i = 0; i < n; i++) {
        gworker *w = &g->w[i];
        w->x = env->w[i].x;
        if (g->in_place) {
            memcpy(w->slot[0], w->x, (size_t)env->d * sizeof(float));
            w->x = w->slot[0];
        }
    }
    if (ops->plan && ((rc = make_coll(g, ALGO_GC_EXACT, env->allreduce_kind, err)) < 0 ||
                      (rc = make_coll(g, ALGO_GC_SCALAR, SIM_COLL_RING, err)) < 0))
        return rc;
    if (ops->sync_after && (rc = make_coll(g, ALGO_GC_SYNC, env->allreduce_kind, err)) < 0)
        return rc;
    if (g->crash && (ops->plan || ops->sync_after) && (rc = algo_gossip_group_init(g, err)) < 0)
        return rc;
    *out = g;
    return 0;
}

int algo_gossip_start(void *p, sim_err *err SIM_UNUSED)
{
    algo_gossip *g = p;
    for (int i = 0; i < g->n; i++)
        algo_gossip_begin_iter(g, i);
    return 0;
}
