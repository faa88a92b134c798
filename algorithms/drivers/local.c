/* Shared pieces of the local-step methods (see local.h): the batch tests of
 * docs/algorithms.md section 2 and the local-step iteration counter. */
#include "algorithms/drivers/local.h"

#include <math.h>

static double ratio(double num, double den)
{
    if (den > 0)
        return num / den;
    return num > 0 ? INFINITY : 0.0;
}

double algo_batch_test_proposal(algo_batch_test kind, const wl_batch_stats *s, double eta,
                                double theta, double nu)
{
    switch (kind) {
    case ALGO_BATCH_NORM:
        return ratio(s->v_norm, eta * eta * s->gnorm2);
    case ALGO_BATCH_INNER_PRODUCT:
        return ratio(s->v_ip, theta * theta * s->gnorm2 * s->gnorm2);
    case ALGO_BATCH_AUGMENTED: {
        double ip = ratio(s->v_ip, theta * theta * s->gnorm2 * s->gnorm2);
        double orth = ratio(s->v_orth, nu * nu * s->gnorm2);
        return ip > orth ? ip : orth;
    }
    }
    return 0.0;
}

int algo_batch_test_next(int b, double proposal, int b_max)
{
    double next = b;
    if (proposal > next)
        next = ceil(proposal);
    if (b_max > 0 && next > b_max)
        next = b_max;
    if (next > 1e9)
        next = 1e9;
    return next > b ? (int)next : b;
}

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

void algo_slowmo_outer(const algo_slowmo_params *p, float *x0, float *u, float *avg, int64_t d,
                       double lr)
{
    for (int64_t j = 0; j < d; j++) {
        if (p->bmuf == ALGO_BMUF_NONE) {
            double uj = p->beta * u[j] + ((double)x0[j] - (double)avg[j]) / lr;
            double xj = (double)x0[j] - p->alpha * lr * uj;
            u[j] = (float)uj;
            x0[j] = (float)xj;
            avg[j] = (float)xj;
        } else {
            /* the block's gradient is taken from where the workers started:
             * x_g, or x_g + beta Delta (nesterov) */
            double start = (double)x0[j];
            if (p->bmuf == ALGO_BMUF_NESTEROV)
                start += p->beta * (double)u[j];
            double dj = p->beta * u[j] + p->alpha * ((double)avg[j] - start);
            double xg = (double)x0[j] + dj;
            u[j] = (float)dj;
            x0[j] = (float)xg;
            avg[j] = (float)(p->bmuf == ALGO_BMUF_NESTEROV ? xg + p->beta * dj : xg);
        }
    }
}
