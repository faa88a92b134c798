/* The common core of the asynchronous pairwise methods (see pairwise.h).
 * Every function works on one or two workers' d floats in place and
 * allocates nothing after algo_pairwise_init. */
#include "algorithms/drivers/pairwise.h"

#include <gsl/gsl_rng.h>
#include <stdlib.h>

int algo_pairwise_init(algo_pairwise *pw, algo_env *env, const algo_pairwise_ops *ops,
                       sim_err *err)
{
    size_t n = (size_t)env->n;
    *pw = (algo_pairwise){.env = env, .n = env->n, .d = env->d, .ops = ops};
    int rc = algo_local_optim_init(&pw->lo, env, 1, err);
    if (rc < 0)
        return rc;
    pw->ver = algo_env_calloc(env, n, sizeof *pw->ver);
    pw->grad_ver = algo_env_calloc(env, n, sizeof *pw->grad_ver);
    pw->ptrs = algo_env_alloc(env, n * sizeof *pw->ptrs);
    pw->live = algo_env_alloc(env, n * sizeof *pw->live);
    pw->gen = algo_env_calloc(env, n, sizeof *pw->gen);
    pw->rq = algo_env_calloc(env, n, sizeof *pw->rq);
    return algo_env_alloc_check(env, env->cfg->algorithm, err);
}

/* i's gradient (algo_pairwise_begin), remembering the version read. */
static void grad(algo_pairwise *pw, int i)
{
    algo_worker *w = &pw->env->w[i];
    /* coupled weight decay at the snapshot, inside the (maybe deferred) job */
    algo_env_grad_wd(pw->env, i, w->x, w->grad, pw->lo.snapshot_wd);
    pw->grad_ver[i] = pw->ver[i];
}

void algo_pairwise_apply(algo_pairwise *pw, int i)
{
    algo_env *env = pw->env;
    algo_env_grad_wait(env, i);
    algo_env_staleness(env, i, pw->ver[i] - pw->grad_ver[i]);
    algo_optim_step(pw->lo.s[i], env->w[i].x, env->w[i].grad, algo_env_lr(env));
    algo_env_iteration(env, env->w[i].grad_samples);
}

int algo_pairwise_partner(algo_pairwise *pw, int i)
{
    const int *nb;
    int deg = topo_graph_neighbors(pw->env->graph, i, &nb);
    int up = 0;
    for (int k = 0; k < deg; k++)
        if (!pw->env->w[nb[k]].down)
            pw->live[up++] = nb[k];
    if (up == 0)
        return -1;
    return pw->live[gsl_rng_uniform_int(pw->env->w[i].rng_algo, (unsigned long)up)];
}

/* A rejoining i's model and optimizer state (algo_pairwise_fault); the
 * lowest live neighbour, or -1. */
static int rejoin(algo_pairwise *pw, int i)
{
    algo_env *env = pw->env;
    const int *nb;
    int deg = topo_graph_neighbors(env->graph, i, &nb), up = 0;
    for (int k = 0; k < deg; k++)
        if (!env->w[nb[k]].down)
            pw->ptrs[up++] = env->w[nb[k]].x;
    if (up > 0)
        algo_mean(env->w[i].x, pw->ptrs, up, pw->d);
    algo_optim_reset(pw->lo.s[i]);
    int first = -1;
    for (int k = 0; k < deg; k++)
        if (!env->w[nb[k]].down && (first < 0 || nb[k] < first))
            first = nb[k];
    return first;
}

static ALGO_ON_EVENT(on_compute)
{
    algo_pairwise *pw = ctx;
    int i = algo_group_arg_w(arg);
    if (pw->gen[i] != algo_group_arg_gen(arg))
        return; /* a crashed incarnation's step */
    pw->rq[i].computed = 1;
    pw->ops->computed(pw, i);
}

void algo_pairwise_begin(algo_pairwise *pw, int i)
{
    algo_env *env = pw->env;
    grad(pw, i);
    pw->rq[i].computed = 0;
    if (pw->ops->begin)
        pw->ops->begin(pw, i);
    algo_env_compute(env, i, algo_env_step_samples(env, i), on_compute, pw,
                     algo_group_arg(i, pw->gen[i]));
}

static int current(const algo_pairwise *pw, int i, uint64_t arg)
{
    return !pw->env->w[i].down && pw->rq[i].gen == algo_group_arg_gen(arg);
}

int algo_pairwise_live(const algo_pairwise *pw, int i, int j, uint64_t arg)
{
    return current(pw, i, arg) && !pw->env->w[j].down;
}

int algo_pairwise_done(algo_pairwise *pw, int i, uint64_t arg)
{
    if (!current(pw, i, arg) || !pw->rq[i].pending)
        return 0;
    pw->rq[i].pending = 0;
    return 1;
}

/* i's interaction has not completed within the timeout: it gives it up. */
static ALGO_ON_EVENT(on_timeout)
{
    algo_pairwise *pw = ctx;
    int i = algo_group_arg_w(arg);
    if (!algo_pairwise_done(pw, i, arg))
        return;
    pw->rq[i].gen++;
    if (pw->ops->expired)
        pw->ops->expired(pw, i);
}

void algo_pairwise_request(algo_pairwise *pw, int i, int j, double bytes, sim_net_deliver handler)
{
    algo_env *env = pw->env;
    pw->rq[i].pending = 1;
    algo_env_send(env, i, j, bytes, handler, pw, algo_group_arg(i, ++pw->rq[i].gen));
    if (algo_env_crashes(env))
        algo_group_timeout(env, on_timeout, pw, i, pw->rq[i].gen);
}

static ALGO_ON_MESSAGE(on_rejoin_model)
{
    algo_pairwise *pw = ctx;
    if (!pw->env->w[dst].down && pw->gen[dst] == algo_group_arg_gen(arg))
        algo_pairwise_begin(pw, dst);
}

void algo_pairwise_fault(void *state, const algo_fault *ev)
{
    algo_pairwise *pw = state;
    int i = ev->target;
    pw->gen[i]++;
    pw->rq[i].gen++;
    pw->rq[i].pending = 0;
    if (ev->kind == ALGO_FAULT_CRASH) {
        algo_env_idle_end(pw->env, i);
        return;
    }
    int j = rejoin(pw, i);
    if (pw->ops->rejoined)
        pw->ops->rejoined(pw, i);
    if (j < 0)
        algo_pairwise_begin(pw, i);
    else
        algo_env_send(pw->env, j, i, pw->env->msg_bytes, on_rejoin_model, pw,
                      algo_group_arg(i, pw->gen[i]));
}

void algo_pairwise_mark(algo_pairwise *pw, int i)
{
    pw->ver[i]++;
    pw->env->w[i].gossip_rounds++;
}

void algo_pairwise_average(algo_pairwise *pw, int i, int j)
{
    float *xi = pw->env->w[i].x, *xj = pw->env->w[j].x;
    algo_env_grad_wait(pw->env, i); /* a step started in this instant reads them */
    algo_env_grad_wait(pw->env, j);
    for (int64_t e = 0; e < pw->d; e++) {
        float a = 0.5f * (xi[e] + xj[e]);
        xi[e] = a;
        xj[e] = a;
    }
    algo_pairwise_mark(pw, i);
    algo_pairwise_mark(pw, j);
}

int algo_pairwise_start(void *state, sim_err *err SIM_UNUSED)
{
    algo_pairwise *pw = state;
    for (int i = 0; i < pw->n; i++)
        algo_pairwise_begin(pw, i);
    return 0;
}

void algo_pairwise_worker_models(void *state, const float **xs)
{
    algo_pairwise *pw = state;
    for (int i = 0; i < pw->n; i++)
        xs[i] = pw->env->w[i].x;
}

const float *algo_pairwise_model(void *state, float *scratch)
{
    algo_pairwise *pw = state;
    int up = 0;
    for (int i = 0; i < pw->n; i++)
        if (!pw->env->w[i].down)
            pw->ptrs[up++] = pw->env->w[i].x;
    if (up == 0) {
        algo_pairwise_worker_models(pw, pw->ptrs);
        up = pw->n;
    }
    algo_mean(scratch, pw->ptrs, up, pw->d);
    return scratch;
}
