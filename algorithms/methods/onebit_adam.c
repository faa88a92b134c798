/* onebit_adam: 1-bit Adam (docs/algorithms.md 7.2, DeepSpeed's
 * onebit/adam.py): a dense adamw warm-up, then v frozen and the momentum
 * 1-bit compressed (the round: onebit_round.h). Its update:
 *   x -= lr (m / (sqrt(v) + eps) + wd x), m the reduced momentum. */
#include <math.h>
#include <string.h>

#include "algorithms/methods/onebit_round.h"

static const cfg_key adam_keys[] = {
    ALGO_OBIT_KEY_FREEZE("rounds of dense warm-up before v is frozen and momenta go 1-bit"),
    ALGO_KEY_COMPRESS_TIME(algo_obit, cost, "to compress one message"),
    {0},
};

static void adam_update(algo_obit *st)
{
    algo_env *env = st->env;
    const algo_optim_hp *hp = algo_optim_params(st->opt);
    const float eps = (float)hp->eps, fwd = (float)hp->weight_decay;
    const float flr = (float)algo_env_lr(env);
    float *m = algo_optim_m(st->opt);
    const float *v = algo_optim_v(st->opt);
    memcpy(m, st->mnew, (size_t)env->d * sizeof *m);
    for (int64_t j = 0; j < env->d; j++) {
        float u = m[j] / (sqrtf(v[j]) + eps);
        if (hp->weight_decay != 0)
            u += fwd * st->x[j];
        st->x[j] -= flr * u;
    }
}

static const algo_obit_ops ops = {.who = "onebit_adam", .optim = "adamw", .keys = adam_keys,
                                  .update = adam_update};

static int create(algo_env *env, void **out, sim_err *err)
{
    return algo_obit_create(env, &ops, out, err);
}

const algo_vt algo_onebit_adam = ALGO_OBIT_VT(
    "onebit_adam", "1-bit Adam: dense Adam warm-up, then v frozen and 1-bit compressed momentum",
    "7.2", adam_keys, "adamw", create);
