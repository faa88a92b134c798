/* ad_psgd: asynchronous decentralized parallel SGD (ALGORITHMS.md 1.4).
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
 * worker on a bipartite graph: exactly 1, its own averaging). */
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/gossip.h"

typedef struct apsgd {
    algo_env *env;
    int n;
    int64_t d;
    int *active;
    float *m;           /* n x d momentum, NULL without */
    int64_t *ver;       /* averagings applied to each model */
    int64_t *grad_ver;  /* ver when the step's gradient was read */
    int *compute_done, *pending;
    const float **ptrs; /* scratch: n model pointers */
    double beta, wd;
    int nesterov;
} apsgd;

static void begin_step(apsgd *s, int i);

static void apply(apsgd *s, int i)
{
    algo_env *env = s->env;
    algo_env_idle_end(env, i);
    algo_env_staleness(env, i, s->ver[i] - s->grad_ver[i]);
    float *m = s->m ? s->m + (int64_t)i * s->d : NULL;
    algo_sgd_step(env->w[i].x, m, env->w[i].grad, s->d, algo_env_lr(env), s->beta,
                  s->nesterov, 0);
    algo_env_iteration(env, algo_env_step_samples(env, i));
    begin_step(s, i);
}

static void on_reply(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    (void)eng;
    (void)arg;
    (void)src;
    (void)bytes;
    apsgd *s = ctx;
    int i = dst;
    s->pending[i] = 0;
    if (s->compute_done[i])
        apply(s, i);
}

static void on_request(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst,
                       double bytes)
{
    (void)eng;
    (void)arg;
    (void)bytes;
    apsgd *s = ctx;
    int i = src, j = dst;
    float *xi = s->env->w[i].x, *xj = s->env->w[j].x;
    for (int64_t e = 0; e < s->d; e++) {
        float a = 0.5f * (xi[e] + xj[e]);
        xi[e] = a;
        xj[e] = a;
    }
    s->ver[i]++;
    s->ver[j]++;
    s->env->w[i].gossip_rounds++;
    s->env->w[j].gossip_rounds++;
    sim_err err;
    if (sim_net_send(s->env->net, j, i, s->env->msg_bytes, on_reply, s, 0, &err) < 0)
        s->env->diverged = -1;
}

static void on_compute(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    apsgd *s = ctx;
    int i = (int)arg;
    s->compute_done[i] = 1;
    if (s->pending[i])
        algo_env_idle_begin(s->env, i);
    else
        apply(s, i);
}

static void begin_step(apsgd *s, int i)
{
    algo_env *env = s->env;
    algo_worker *w = &env->w[i];
    algo_env_grad(env, i, w->x, w->grad);
    if (s->wd != 0) { /* weight decay at the snapshot */
        const float fwd = (float)s->wd;
        for (int64_t e = 0; e < s->d; e++)
            w->grad[e] += fwd * w->x[e];
    }
    s->grad_ver[i] = s->ver[i];
    s->compute_done[i] = 0;
    const int *nb;
    int deg = topo_graph_neighbors(env->graph, i, &nb);
    if (s->active[i] && deg > 0) {
        int j = nb[gsl_rng_uniform_int(w->rng_algo, (unsigned long)deg)];
        s->pending[i] = 1;
        sim_err err;
        if (sim_net_send(env->net, i, j, env->msg_bytes, on_request, s, 0, &err) < 0)
            env->diverged = -1;
    }
    algo_env_compute(env, i, algo_env_step_samples(env, i), on_compute, s, (uint64_t)i);
}

static void destroy(void *p)
{
    apsgd *s = p;
    if (!s)
        return;
    free(s->active);
    free(s->m);
    free(s->ver);
    free(s->grad_ver);
    free(s->compute_done);
    free(s->pending);
    free(s->ptrs);
    free(s);
}

static const sim_key keys[] = {
    {"algorithm", "active", "auto", SIM_KEY_CHOICE, "auto|even|all",
     "initiators: auto = bipartite colour 0 (all workers if not bipartite), even ids, or all"},
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    const sim_config *c = env->cfg;
    if (!env->graph)
        return sim_err_set(err, SIM_EINTERNAL, "ad_psgd: no logical graph");
    apsgd *s = calloc(1, sizeof *s);
    if (!s)
        return sim_err_set(err, SIM_ENOMEM, "ad_psgd: out of memory");
    s->env = env;
    s->n = env->n;
    s->d = env->d;
    s->beta = c->momentum;
    s->wd = c->weight_decay;
    s->nesterov = c->nesterov;
    size_t n = (size_t)env->n;
    s->active = calloc(n, sizeof *s->active);
    s->ver = calloc(n, sizeof *s->ver);
    s->grad_ver = calloc(n, sizeof *s->grad_ver);
    s->compute_done = calloc(n, sizeof *s->compute_done);
    s->pending = calloc(n, sizeof *s->pending);
    s->ptrs = malloc(n * sizeof *s->ptrs);
    if (c->momentum != 0)
        s->m = calloc(n * (size_t)env->d, sizeof(float));
    if (!s->active || !s->ver || !s->grad_ver || !s->compute_done || !s->pending ||
        !s->ptrs || (c->momentum != 0 && !s->m)) {
        destroy(s);
        return sim_err_set(err, SIM_ENOMEM, "ad_psgd: out of memory");
    }
    const char *rule = sim_config_get_string(c, "algorithm", "active");
    if (rule && strcmp(rule, "even") == 0) {
        for (int i = 0; i < env->n; i++)
            s->active[i] = i % 2 == 0;
    } else if (rule && strcmp(rule, "all") == 0) {
        for (int i = 0; i < env->n; i++)
            s->active[i] = 1;
    } else {
        int bip = algo_graph_bipartite(env->graph, s->active);
        if (bip < 0) {
            destroy(s);
            return sim_err_set(err, SIM_ENOMEM, "ad_psgd: out of memory");
        }
        for (int i = 0; i < env->n; i++)
            s->active[i] = bip ? s->active[i] == 0 : 1;
    }
    *out = s;
    return 0;
}

static int start(void *p, sim_err *err)
{
    (void)err;
    apsgd *s = p;
    for (int i = 0; i < s->n; i++)
        begin_step(s, i);
    return 0;
}

static void worker_models(void *p, const float **xs)
{
    apsgd *s = p;
    for (int i = 0; i < s->n; i++)
        xs[i] = s->env->w[i].x;
}

/* The evaluated model: the average of the workers' current models. */
static const float *model(void *p, float *scratch)
{
    apsgd *s = p;
    worker_models(s, s->ptrs);
    algo_mean(scratch, s->ptrs, s->n, s->d);
    return scratch;
}

const algo_vt algo_ad_psgd = {
    .name = "ad_psgd",
    .summary = "AD-PSGD: asynchronous pairwise averaging with one neighbour, bipartite initiators",
    .reference = "1.4",
    .keys = keys,
    .async = 1,
    .uses_graph = 1,
    .needs_server = NULL,
    .create = create,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = worker_models,
};
