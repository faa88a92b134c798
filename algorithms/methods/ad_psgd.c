/* ad_psgd: asynchronous decentralized parallel SGD (docs/algorithms.md 1.4).
 * Every worker loops on its own: it takes the gradient at its current model
 * (the snapshot x_hat = x_i, read when the step starts) and applies it when
 * the step ends, x_i <- x_i - lr g (local momentum with the momentum key),
 * so the gradient comes from before any averaging that happened meanwhile.
 * An ACTIVE worker, when its step starts, also sends its model (S bytes) to
 * one neighbour j drawn uniformly from its algorithm stream; on arrival the
 * pair is averaged atomically, x_i, x_j <- (x_i + x_j)/2 (the models' values
 * at that moment: the global view W_k X of the paper, doubly stochastic,
 * so the sum of the models is unchanged), and j answers with its model
 * (S bytes). The active worker applies its gradient only after the answer
 * (steps 3 then 4 of the paper), so it waits for it if its compute ends
 * first; a passive worker never waits (answering does not block its
 * computation).
 * Active set (key active): auto = a bipartite 2-colouring, colour 0 (the
 * component's lowest id; on a ring of even n: the even ids) active, and on
 * a non-bipartite graph every worker active; even = the even ids; all =
 * every worker. Atomic averaging makes every choice deadlock-free and
 * mean-preserving.
 * One iteration = one applied gradient (samples = the batch). Staleness of
 * an applied gradient = the number of averagings that changed the worker's
 * model between the read of its snapshot and the application (an active
 * worker on a bipartite graph: exactly 1, its own averaging). The step
 * loop's gradient, update, counters and evaluated model are the pairwise
 * core's (pairwise.h); this file adds the active set and the blocking.
 *
 * Crashes ([faults], docs/faults.md): partners are drawn among the live
 * neighbours. A request to a worker that crashes (or from one that crashed)
 * is dropped; the active worker gives up waiting for its answer [faults]
 * sync_timeout after it sent the request, applies its gradient and draws
 * a live partner at its next step. A crashed worker's step and messages in
 * flight are discarded (each crash and rejoin starts a new incarnation). A
 * rejoining worker starts from the mean of its live neighbours' models
 * with a fresh optimizer state, once the lowest of them has sent it the
 * model (S bytes). Without crashes no timeout is scheduled. */
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
    apsgd *s = algo_env_calloc(env, 1, sizeof *s);
    if (!s)
        return algo_env_alloc_check(env, "ad_psgd", err);
    s->active = algo_env_calloc(env, (size_t)env->n, sizeof *s->active);
    s->rq = algo_env_calloc(env, (size_t)env->n, sizeof *s->rq);
    int rc = algo_pairwise_init(&s->core, env, begin_step, err);
    if (!rc)
        rc = algo_env_alloc_check(env, "ad_psgd", err);
    const char *rule = cfg_get_string(c, "algorithm", "active");
    int even = rule && strcmp(rule, "even") == 0, all = rule && strcmp(rule, "all") == 0;
    int bip = rc || even || all ? 0 : algo_graph_bipartite(env->graph, s->active);
    if (bip < 0)
        rc = sim_err_set(err, SIM_ENOMEM, "ad_psgd: out of memory");
    for (int i = 0; !rc && i < env->n; i++)
        s->active[i] = even ? i % 2 == 0 : all || !bip ? 1 : s->active[i] == 0;
    *out = s;
    return rc;
}

const algo_vt algo_ad_psgd = {
    ALGO_METHOD("ad_psgd",
                "AD-PSGD: asynchronous pairwise averaging with one neighbour, bipartite initiators",
                "1.4"),
    .fault = on_fault,
    ALGO_PAIRWISE_SLOTS,
};
