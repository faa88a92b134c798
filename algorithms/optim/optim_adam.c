/* adam and adamw (Kingma and Ba; Loshchilov and Hutter), per coordinate:
 *   m <- beta1 m + (1 - beta1) g;  v <- beta2 v + (1 - beta2) g^2
 *   dir = m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1 - beta1^t),
 *   v_hat = v / (1 - beta2^t) with bias_correction, else m and v as they are
 *   (DeepSpeed's 1-bit Adam warm-up, docs/algorithms.md section 7.2).
 * adam couples weight decay like torch.optim.Adam (g <- g + wd x first, so
 * the decay is scaled by the preconditioner); adamw decouples it:
 * dir += wd x, i.e. x <- x - lr (m_hat / (sqrt(v_hat) + eps) + wd x), the
 * form of section 7.2. m, v are floats; the bias-correction factors are
 * computed in double once per step. Also the moment kernel lamb shares. */
#include <math.h>

#include "algorithms/optim/optim_impl.h"
#include "algorithms/optim/sgd_kernel.h"

/* Bias-correction factors for step t as floats: 1/(1 - beta1^t) and
 * 1/(1 - beta2^t), both 1 without bias correction. */
static void bias(const algo_optim_state *s, float *c1, float *c2)
{
    if (!s->hp.bias_correction) {
        *c1 = 1.0f;
        *c2 = 1.0f;
        return;
    }
    double t = (double)s->t;
    *c1 = (float)(1.0 / (1.0 - pow(s->hp.beta1, t)));
    *c2 = (float)(1.0 / (1.0 - pow(s->hp.beta2, t)));
}

void algo_optim_adam_dir(algo_optim_state *s, float *restrict g)
{
    const float b1 = (float)s->hp.beta1, a1 = (float)(1.0 - s->hp.beta1);
    const float b2 = (float)s->hp.beta2, a2 = (float)(1.0 - s->hp.beta2);
    const float eps = (float)s->hp.eps;
    float c1, c2;
    bias(s, &c1, &c2);
    float *restrict m = s->vec[0], *restrict v = s->vec[1];
    if (!s->freeze_v)
        for (int64_t j = 0; j < s->d; j++)
            v[j] = b2 * v[j] + a2 * g[j] * g[j];
    for (int64_t j = 0; j < s->d; j++) {
        m[j] = b1 * m[j] + a1 * g[j];
        g[j] = (m[j] * c1) / (sqrtf(v[j] * c2) + eps);
    }
}

static void adam_direction(algo_optim_state *s, const float *x, float *g)
{
    algo_add_decay(g, x, s->hp.weight_decay, s->d);
    algo_optim_adam_dir(s, g);
}

static void adamw_direction(algo_optim_state *s, const float *x, float *g)
{
    algo_optim_adam_dir(s, g);
    algo_add_decay(g, x, s->hp.weight_decay, s->d);
}

/* The moment keys of adam, adamw and lamb (lamb reads them through base). */
static const cfg_key adam_keys[] = {
#include "config/optim_keys_adam.def"
    {0},
};

const algo_optim algo_optim_adam = {
    .name = "adam",
    .summary = "Adam like torch.optim.Adam (beta1, beta2, eps, bias_correction)",
    .keys = adam_keys,
    .direction = adam_direction,
};

const algo_optim algo_optim_adamw = {
    .name = "adamw",
    .summary = "Adam, decay outside: x -= lr (m_hat / (sqrt(v_hat) + eps) + wd x)",
    .decoupled_wd = 1,
    .base = &algo_optim_adam,
    .direction = adamw_direction,
};
