/* Local-momentum decentralized SGD (gossip_rules.h, algo_dsgd_create;
 * docs/algorithms.md 0.3, 1.2, 3.1). ATC sends y_i = x_i - lr d_i after
 * the compute step, AWC x_i at the step start. */
#include <stdlib.h>
#include <string.h>

#include "algorithms/methods/gossip_rules.h"

static void atc_prepare(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr,
                        float *send)
{
    const algo_local_optim *s = p;
    algo_worker *w = &env->w[i];
    algo_optim_step_from(s->s[i], send, w->x, w->x, w->grad, lr);
}

static void atc_finish(void *p SIM_UNUSED, algo_env *env, int i, int64_t k SIM_UNUSED,
                       double lr SIM_UNUSED, const float *mixed)
{
    memcpy(env->w[i].x, mixed, (size_t)env->d * sizeof(float));
}

static void awc_prepare(void *p SIM_UNUSED, algo_env *env, int i, int64_t k SIM_UNUSED,
                        double lr SIM_UNUSED, float *send)
{
    memcpy(send, env->w[i].x, (size_t)env->d * sizeof(float));
}

static void awc_finish(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr,
                       const float *mixed)
{
    const algo_local_optim *s = p;
    algo_worker *w = &env->w[i];
    algo_optim_step_from(s->s[i], w->x, mixed, w->x, w->grad, lr);
}

static void atc_combine(void *p SIM_UNUSED, algo_env *env, int i, int64_t k SIM_UNUSED,
                        double lr SIM_UNUSED, const topo_wmat *W, const float *const *in,
                        const float *x_old SIM_UNUSED, float *x_new)
{
    algo_gossip_row(W, i, in, 0, env->d, x_new);
}

static void awc_combine(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr,
                        const topo_wmat *W, const float *const *in, const float *x_old,
                        float *x_new)
{
    const algo_local_optim *s = p;
    float *g = env->w[i].grad;
    const int64_t d = env->d;
    /* g becomes the direction, read before x_old is overwritten */
    algo_optim_direction(s->s[i], x_old, g);
    for (int64_t c = 0; c < d; c += ALGO_ROW_CHUNK) {
        int64_t len = d - c < ALGO_ROW_CHUNK ? d - c : ALGO_ROW_CHUNK;
        algo_gossip_row_step(W, i, in, c, len, x_new + c, g + c, lr);
    }
}

static void dsgd_reset(void *m, algo_env *env SIM_UNUSED, int i)
{
    algo_local_optim *lo = m;
    algo_optim_reset(lo->s[i]);
}

void algo_dsgd_ops(algo_gossip_form form, algo_gossip_ops *ops)
{
    *ops = (algo_gossip_ops){
        .form = form,
        .width = 1,
        .prepare = form == ALGO_GOSSIP_ATC ? atc_prepare : awc_prepare,
        .finish = form == ALGO_GOSSIP_ATC ? atc_finish : awc_finish,
        .combine_finish = form == ALGO_GOSSIP_ATC ? atc_combine : awc_combine,
        .sends_model = form == ALGO_GOSSIP_AWC,
        .reset = dsgd_reset,
    };
}

int algo_dsgd_create(algo_env *env, algo_gossip_form form, void **out, sim_err *err)
{
    algo_local_optim *s = algo_env_alloc(env, sizeof *s);
    int rc = s ? algo_local_optim_init(s, env, 0, err)
               : algo_env_alloc_check(env, env->cfg->algorithm, err);
    if (rc < 0)
        return rc;
    algo_gossip_ops ops;
    algo_dsgd_ops(form, &ops);
    return algo_gossip_create_state(env, &ops, s, out, err);
}
