/* The local-step iteration counter (see local.h). */
#include "algorithms/drivers/local.h"

void algo_live_steps_init(algo_live_steps *c, algo_env *env, int span)
{
    c->n = env->n;
    c->span = span;
    c->reported = c->late = 0;
    c->step = algo_env_calloc(env, (size_t)env->n, sizeof *c->step);
    c->slot = algo_env_calloc(env, (size_t)span, sizeof *c->slot);
}

void algo_live_steps_done(algo_live_steps *c, int i, int64_t samples)
{
    int64_t k = ++c->step[i];
    if (k <= c->reported)
        c->late += samples;
    else
        c->slot[k % c->span] += samples;
}

void algo_live_steps_count(algo_live_steps *c, algo_env *env, int (*live)(const void *, int),
                           const void *ctx)
{
    int64_t m = INT64_MAX;
    for (int i = 0; i < c->n; i++)
        if (live(ctx, i) && c->step[i] < m)
            m = c->step[i];
    while (m != INT64_MAX && c->reported < m) {
        int k = (int)(++c->reported % c->span);
        int64_t samples = c->slot[k] + c->late;
        c->slot[k] = 0;
        c->late = 0;
        algo_env_iteration(env, samples);
    }
}
