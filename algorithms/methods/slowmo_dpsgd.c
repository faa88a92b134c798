/* SlowMo over D-PSGD (docs/algorithms.md 4; the slowmo method with
 * base = dpsgd): outer iteration t is tau D-PSGD iterations on the logical
 * graph (the dpsgd update through algo_dsgd_ops: AWC x_i <- sum_j W_ij x_j
 * - lr d_i by default, ATC with form = atc, the worker's own optimizer
 * state), then a blocking exact average of the parameters (S bytes) and
 * the outer step on it (algo_slowmo_outer); every worker restarts from
 * the result. The gossip driver runs the events; this file supplies the
 * synchronization schedule and the outer step (algo_gossip_ops sync_after,
 * sync_mean). Optimizer buffers at a synchronization ([algorithm] buffers):
 * local, averaged like x, or reset. */
#include <stdlib.h>
#include <string.h>

#include "algorithms/methods/gossip_rules.h"
#include "algorithms/methods/local_rules.h"
#include "algorithms/methods/method.h"

typedef struct smd {
    algo_local_optim lo; /* first: the dsgd callbacks read it */
    algo_slowmo_params p;
    int n;
    int64_t d;
    float *x0, *u;       /* outer iterate and slow momentum (BMUF: x_g and Delta) */
    float *avg_b;        /* buffers = average: the mean of one buffer kind */
    float *xs;           /* the model the workers took at the last synchronization */
    const float **ptrs;
} smd;

static int sync_after(void *p, int64_t k)
{
    const smd *s = p;
    return (k + 1) % s->p.tau == 0;
}

/* The mean of one buffer kind over the members (NULL: all nm = n), which
 * all take it. */
static void mean_buffer(smd *s, const int *members, int nm,
                        float *(*get)(const algo_optim_state *))
{
    if (!get(s->lo.s[0]))
        return;
    for (int r = 0; r < nm; r++)
        s->ptrs[r] = get(s->lo.s[members ? members[r] : r]);
    algo_mean(s->avg_b, s->ptrs, nm, s->d);
    for (int r = 0; r < nm; r++)
        memcpy(get(s->lo.s[members ? members[r] : r]), s->avg_b, (size_t)s->d * sizeof(float));
}

/* Every member is in the all-reduce, so their buffers can be set here. */
static void sync_mean(void *p, algo_env *env SIM_UNUSED, int64_t k SIM_UNUSED, double lr,
                      const int *members, int nm, float *mean)
{
    smd *s = p;
    if (s->p.buffers == 1) {
        mean_buffer(s, members, nm, algo_optim_m);
        mean_buffer(s, members, nm, algo_optim_v);
    } else if (s->p.buffers == 2) {
        for (int r = 0; r < nm; r++)
            algo_optim_reset(s->lo.s[members ? members[r] : r]);
    }
    algo_slowmo_outer(&s->p, s->x0, s->u, mean, s->d, lr);
    memcpy(s->xs, mean, (size_t)s->d * sizeof(float));
}

/* A rejoining worker (docs/faults.md): the current outer model (what the
 * members took at the last synchronization) and a fresh optimizer state;
 * the outer state (x0, u) is shared and stays. */
static void reset(void *p, algo_env *env, int i)
{
    smd *s = p;
    memcpy(env->w[i].x, s->xs, (size_t)s->d * sizeof(float));
    algo_optim_reset(s->lo.s[i]);
}

int algo_slowmo_dpsgd_create(algo_env *env, const algo_slowmo_params *p, void **out,
                             sim_err *err)
{
    if (!env->graph || !env->mix)
        return sim_err_set(err, SIM_EINTERNAL, "slowmo: base = dpsgd needs the logical graph");
    smd *s = algo_env_calloc(env, 1, sizeof *s);
    if (!s)
        return algo_env_alloc_check(env, "slowmo", err);
    s->p = *p;
    s->n = env->n;
    s->d = env->d;
    int rc = algo_local_optim_init(&s->lo, env, 0, err);
    if (rc < 0)
        return rc;
    const size_t bytes = (size_t)s->d * sizeof(float);
    s->x0 = algo_env_alloc(env, bytes);
    s->u = algo_env_calloc(env, (size_t)s->d, sizeof(float));
    s->avg_b = algo_env_alloc(env, bytes);
    s->xs = algo_env_alloc(env, bytes);
    s->ptrs = algo_env_alloc(env, (size_t)s->n * sizeof *s->ptrs);
    if ((rc = algo_env_alloc_check(env, "slowmo", err)) < 0)
        return rc;
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = env->w[i].x;
    algo_mean(s->x0, s->ptrs, s->n, s->d);
    memcpy(s->xs, s->x0, bytes);
    algo_gossip_ops ops;
    algo_dsgd_ops(algo_gossip_form_read(env->cfg, ALGO_GOSSIP_AWC), &ops);
    ops.sync_after = sync_after;
    ops.sync_mean = sync_mean;
    ops.reset = reset;
    return algo_gossip_create_state(env, &ops, s, out, err);
}
