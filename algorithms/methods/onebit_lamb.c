/* onebit_lamb: 1-bit LAMB (docs/algorithms.md 7.3, DeepSpeed's
 * onebit/lamb.py): a dense lamb warm-up that tracks the trust ratios c_l,
 * then v and c_l frozen and the scaled momenta 1-bit compressed (the
 * round: onebit_round.h). Its update, per layer: the gradient recovered
 * from the momentum feeds a fresh variance, and c_l is corrected by a
 * bounded factor f: x_l -= lr c_l f_l u_l. */
#include <math.h>
#include <string.h>

#include "algorithms/methods/onebit_round.h"

static const cfg_key lamb_keys[] = {
    ALGO_OBIT_KEY_FREEZE("rounds of dense warm-up before v and the trust ratios are frozen"),
    ALGO_KEY_COMPRESS_TIME(algo_obit, cost, "to compress one message"),
    ALGO_KEY_DOUBLE("coeff_beta", "0.9", 0, 1, "[)", algo_obit, coeff_beta,
                    "EWMA rate of the warm-up trust ratio c_l"),
    ALGO_KEY_DOUBLE("factor_max", "4.0", 0, 0, NULL, algo_obit, factor_max,
                    "upper bound of the trust-ratio correction factor f"),
    ALGO_KEY_DOUBLE("factor_min", "0.5", 0, 0, NULL, algo_obit, factor_min,
                    "lower bound of f, in (0, factor_max]"),
    ALGO_KEY_DOUBLE("factor_threshold", "0.1", 0, INFINITY, "[]", algo_obit, factor_threshold,
                    "phi: f moves by at most a factor 1 +- phi per step"),
    {0},
};

/* c_l <- beta c_l + (1 - beta) coeff_l, only when coeff_l != 1. */
static void track_trust(algo_obit *st)
{
    const double *tr = algo_optim_trust(st->opt);
    for (int l = 0; tr && l < st->n_layers; l++)
        if (tr[l] != 1.0)
            st->coeff_ema[l] = st->coeff_beta * st->coeff_ema[l] + (1.0 - st->coeff_beta) * tr[l];
}

/* At the freeze: keep a fresh copy of v and fix the per-layer momentum
 * scales kappa_l = mean_l r_l / r_l. */
static void lamb_freeze(algo_obit *st)
{
    const float *m = algo_optim_m(st->opt), *v = algo_optim_v(st->opt);
    memcpy(st->v_fresh, v, (size_t)st->env->d * sizeof *v);
    double r[16], rbar = 0;
    for (int l = 0; l < st->n_layers; l++) {
        double s = 0;
        for (int64_t j = 0; j < st->len[l]; j++) {
            double mj = m[st->off[l] + j];
            s += mj * mj;
        }
        r[l] = sqrt(s) / sqrt((double)st->len[l]);
        rbar += r[l];
    }
    rbar /= st->n_layers;
    for (int l = 0; l < st->n_layers; l++) {
        st->kappa[l] = r[l] > 0 ? rbar / r[l] : 1.0;
        st->f_last[l] = -1.0; /* no bound before the first factor */
    }
}

static void lamb_update(algo_obit *st)
{
    algo_env *env = st->env;
    const algo_optim_hp *hp = algo_optim_params(st->opt);
    const float eps = (float)hp->eps, fwd = (float)hp->weight_decay;
    const float b1 = (float)hp->beta1, b2 = (float)hp->beta2, a2 = (float)(1.0 - hp->beta2);
    const float inv_a1 = (float)(1.0 / (1.0 - hp->beta1));
    const float flr = (float)algo_env_lr(env);
    float *m = algo_optim_m(st->opt);
    const float *v = algo_optim_v(st->opt);
    float *vf = st->v_fresh, *x = st->x;
    for (int l = 0; l < st->n_layers; l++) {
        const int64_t o = st->off[l], len = st->len[l];
        const float ik = (float)(1.0 / st->kappa[l]);
        double f = 0, pn = 0, un = 0;
        for (int64_t j = o; j < o + len; j++) {
            float mn = st->mnew[j] * ik;
            float gh = (mn - b1 * m[j]) * inv_a1;
            vf[j] = b2 * vf[j] + a2 * gh * gh;
            m[j] = mn;
            float sv = sqrtf(v[j]) + eps;
            double ratio = (double)sv / ((double)sqrtf(vf[j]) + (double)eps);
            if (ratio > f)
                f = ratio;
            float p = mn / sv, u = p + fwd * x[j];
            pn += (double)p * p;
            un += (double)u * u;
        }
        if (hp->weight_decay > 0 && un > 0) {
            double rho = fmin(1.0, sqrt(pn) / sqrt(un));
            f = rho * f + (1.0 - rho);
        }
        f = fmin(fmax(f, st->factor_min), st->factor_max);
        if (st->f_last[l] > 0)
            f = fmin(fmax(f, (1.0 - st->factor_threshold) * st->f_last[l]),
                     (1.0 + st->factor_threshold) * st->f_last[l]);
        st->f_last[l] = f;
        const float scale = flr * (float)(st->coeff_ema[l] * f);
        for (int64_t j = o; j < o + len; j++) {
            float u = m[j] / (sqrtf(v[j]) + eps) + fwd * x[j];
            x[j] -= scale * u;
        }
    }
}

/* The cross-key check after the rows are read. */
static int lamb_check(algo_obit *st, const cfg_config *cfg, sim_err *err)
{
    if (!(st->factor_min > 0 && st->factor_min <= st->factor_max))
        return cfg_error(cfg, "algorithm", "factor_min", SIM_ECONFIG, err,
                         "must be in (0, factor_max], got %g", st->factor_min);
    return 0;
}

static const algo_obit_ops ops = {.who = "onebit_lamb", .optim = "lamb", .lamb = 1,
                                  .keys = lamb_keys, .update = lamb_update,
                                  .warmed = track_trust, .freeze = lamb_freeze,
                                  .check = lamb_check};

static int create(algo_env *env, void **out, sim_err *err)
{
    return algo_obit_create(env, &ops, out, err);
}

const algo_vt algo_onebit_lamb = ALGO_OBIT_VT(
    "onebit_lamb", "1-bit LAMB: dense LAMB warm-up, then frozen v and trust ratios, 1-bit momentum",
    "7.3", lamb_keys, "lamb", create);
