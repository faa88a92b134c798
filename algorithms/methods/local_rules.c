/* The local-step methods' update rules (see local_rules.h): the batch
 * tests of docs/algorithms.md section 2 and SlowMo's outer step. */
#include "algorithms/methods/local_rules.h"

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
