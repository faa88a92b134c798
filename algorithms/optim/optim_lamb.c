/* lamb (You et al.; docs/algorithms.md section 7.3, warm-up form): Adam's
 * moments, then per layer l of the model's layer table
 *   u_l = m_hat_l / (sqrt(v_hat_l) + eps) + wd x_l       (decoupled decay)
 *   coeff_l = clip(||x_l|| / ||u_l||, lamb_min_trust, lamb_max_trust),
 *             coeff_l = 1 when either norm is 0
 *   dir_l = coeff_l u_l
 * Norms are computed in double; coeff_l is kept (algo_optim_trust) for
 * methods that track it (1-bit LAMB). u is built in the gradient buffer,
 * so a step needs no scratch. */
#include <math.h>

#include "algorithms/optim/optim_impl.h"
#include "algorithms/optim/sgd_kernel.h"

static void direction(algo_optim_state *s, const float *x, float *g)
{
    algo_optim_adam_dir(s, g);
    for (int l = 0; l < s->n_layers; l++) {
        const float *xl = x + s->layer_off[l];
        float *u = g + s->layer_off[l];
        const int64_t len = s->layer_len[l];
        algo_add_decay(u, xl, s->hp.weight_decay, len);
        double xn = 0, un = 0;
        for (int64_t j = 0; j < len; j++) {
            xn += (double)xl[j] * (double)xl[j];
            un += (double)u[j] * (double)u[j];
        }
        xn = sqrt(xn);
        un = sqrt(un);
        double coeff = 1.0;
        if (xn > 0 && un > 0) {
            coeff = xn / un;
            if (coeff < s->hp.min_trust)
                coeff = s->hp.min_trust;
            if (coeff > s->hp.max_trust)
                coeff = s->hp.max_trust;
        }
        s->trust[l] = coeff;
        if (coeff != 1.0) {
            const float fc = (float)coeff;
            for (int64_t j = 0; j < len; j++)
                u[j] *= fc;
        }
    }
}

static const cfg_key lamb_keys[] = {
#include "config/optim_keys_lamb.def"
    {0},
};

const algo_optim algo_optim_lamb = {
    .name = "lamb",
    .summary = "LAMB: Adam moments, per-layer trust ratio in [lamb_min_trust, lamb_max_trust]",
    .decoupled_wd = 1,
    .trust_ratio = 1,
    .keys = lamb_keys,
    .base = &algo_optim_adam,
    .direction = direction,
};
