/* ad_psgd: asynchronous decentralized parallel SGD (Lian et al., ICML
 * 2018), on the pairwise driver (algorithms/drivers/pairwise.h):
 *   step start:  x_hat = x_i; g = grad F(x_hat); active i sends x_i to j
 *   on arrival:  x_i, x_j <- (x_i + x_j)/2      (atomic; j answers)
 *   step end:    x_i <- x_i - lr g              (active: after the answer)
 * This file adds the active set (key active) and the blocking.
 * docs/algorithms.md, section 1.4 (crashes: docs/faults.md). */
#include <stdlib.h>
#include <string.h>

#include "algorithms/drivers/pairwise.h"
#include "algorithms/methods/method.h"

/* A worker's request to its partner: its issue, pending until answered
 * (or given up), and whether the worker's compute step has ended. */
typedef struct request {
    uint32_t gen;
    int pending, compute_done;
} request;

typedef struct apsgd {
    algo_pairwise core; /* first: the pairwise slots take the state */
    int *active;
    request *rq;        /* per worker: its current request */
} apsgd;

static void begin_step(void *p, int i);
static ALGO_ON_EVENT(on_timeout);

static void apply(apsgd *s, int i)
{
    algo_env *env = s->core.env;
    algo_env_idle_end(env, i);
    algo_pairwise_apply(&s->core, i);
    algo_env_iteration(env, env->w[i].grad_samples);
    begin_step(s, i);
}

static ALGO_ON_MESSAGE(on_reply)
{
    apsgd *s = ctx;
    int i = dst;
    if (s->core.env->w[i].down || s->rq[i].gen != algo_group_arg_gen(arg) || !s->rq[i].pending)
        return; /* crashed, or it gave up waiting */
    s->rq[i].pending = 0;
    if (s->rq[i].compute_done)
        apply(s, i);
}

static ALGO_ON_MESSAGE(on_request)
{
    apsgd *s = ctx;
    algo_env *env = s->core.env;
    int i = src, j = dst;
    if (env->w[i].down || env->w[j].down || s->rq[i].gen != algo_group_arg_gen(arg))
        return; /* lost with a crashed worker, or its sender gave up */
    algo_pairwise_average(&s->core, i, j);
    algo_env_send(env, j, i, env->msg_bytes, on_reply, s, arg);
}

static ALGO_ON_EVENT(on_compute)
{
    apsgd *s = ctx;
    int i = algo_group_arg_w(arg);
    if (s->core.gen[i] != algo_group_arg_gen(arg))
        return; /* a crashed incarnation's step */
    s->rq[i].compute_done = 1;
    if (s->rq[i].pending)
        algo_env_idle_begin(s->core.env, i);
    else
        apply(s, i);
}

static void begin_step(void *p, int i)
{
    apsgd *s = p;
    algo_env *env = s->core.env;
    algo_pairwise_grad(&s->core, i);
    s->rq[i].compute_done = 0;
    int j = s->active[i] ? algo_pairwise_partner(&s->core, i) : -1;
    if (j >= 0) {
        s->rq[i].pending = 1;
        uint64_t arg = algo_group_arg(i, ++s->rq[i].gen);
        algo_env_send(env, i, j, env->msg_bytes, on_request, s, arg);
        if (algo_env_crashes(env))
            algo_group_timeout(env, s->core.timeout, on_timeout, s, i, s->rq[i].gen);
    }
    algo_env_compute(env, i, algo_env_step_samples(env, i), on_compute, s,
                     algo_group_arg(i, s->core.gen[i]));
}

/* The answer to worker i's request has not come within the timeout. */
static ALGO_ON_EVENT(on_timeout)
{
    apsgd *s = ctx;
    int i = algo_group_arg_w(arg);
    if (s->core.env->w[i].down || s->rq[i].gen != algo_group_arg_gen(arg) || !s->rq[i].pending)
        return;
    s->rq[i].gen++;
    s->rq[i].pending = 0;
    if (s->rq[i].compute_done)
        apply(s, i);
}

static void on_fault(void *p, const algo_fault *ev)
{
    apsgd *s = p;
    algo_env *env = s->core.env;
    int i = ev->target;
    s->core.gen[i]++;
    s->rq[i].gen++;
    s->rq[i].pending = 0;
    s->rq[i].compute_done = 0;
    if (ev->kind == ALGO_FAULT_CRASH) {
        algo_env_idle_end(env, i);
        return;
    }
    algo_pairwise_resume(&s->core, i, algo_pairwise_rejoin(&s->core, i));
}

static void destroy(void *p)
{
    apsgd *s = p;
    if (!s)
        return;
    algo_pairwise_release(&s->core);
    free(s->active);
    free(s->rq);
    free(s);
}

static const cfg_key keys[] = {
    {"algorithm", "active", "auto", CFG_KEY_CHOICE, "auto|even|all",
     "initiators: auto = bipartite colour 0 (all workers if not bipartite), even ids, or all"},
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    const cfg_config *c = env->cfg;
    if (!env->graph)
        return sim_err_set(err, SIM_EINTERNAL, "ad_psgd: no logical graph");
    apsgd *s = calloc(1, sizeof *s);
    if (!s)
        return sim_err_set(err, SIM_ENOMEM, "ad_psgd: out of memory");
    size_t n = (size_t)env->n;
    s->active = calloc(n, sizeof *s->active);
    s->rq = calloc(n, sizeof *s->rq);
    int rc = algo_pairwise_init(&s->core, env, begin_step, err);
    if (!rc && (!s->active || !s->rq))
        rc = sim_err_set(err, SIM_ENOMEM, "ad_psgd: out of memory");
    const char *rule = cfg_get_string(c, "algorithm", "active");
    int even = rule && strcmp(rule, "even") == 0, all = rule && strcmp(rule, "all") == 0;
    int bip = rc || even || all ? 0 : algo_graph_bipartite(env->graph, s->active);
    if (bip < 0)
        rc = sim_err_set(err, SIM_ENOMEM, "ad_psgd: out of memory");
    for (int i = 0; !rc && i < env->n; i++)
        s->active[i] = even ? i % 2 == 0 : all || !bip ? 1 : s->active[i] == 0;
    return algo_method_finish(s, rc, destroy, out);
}

const algo_vt algo_ad_psgd = {
    ALGO_METHOD("ad_psgd",
                "AD-PSGD: asynchronous pairwise averaging with one neighbour, bipartite initiators",
                "1.4"),
    .destroy = destroy,
    .fault = on_fault,
    ALGO_PAIRWISE_SLOTS,
};
