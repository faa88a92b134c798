/* dmsgd: decentralized momentum SGD (docs/algorithms.md 3.1), the DecentLaM
 * paper's baseline. ATC form by default:
 *   m_i <- beta m_i + g_i;  y_i = x_i - lr m_i (sent, blocking);
 *   x_i <- sum_j W_ij y_j
 * form = awc: x_i <- sum_j W_ij x_j - lr m_i, exchange overlapped with the
 * gradient. beta is the common momentum key (nesterov supported). Momentum
 * SGD is the method's definition, so [algorithm] optimizer must be sgd
 * (dsgd_atc and dpsgd take any optimizer as their local step).
 * Crashes ([faults], docs/faults.md): the gossip driver's rules; a
 * rejoining worker takes its live neighbours' mean and m_i = 0 (the
 * optimizer state reset of algo_dsgd_create). */
#include "algorithms/methods/gossip_rules.h"
#include "algorithms/methods/method.h"

static const cfg_key keys[] = {
    ALGO_GOSSIP_STEPS_KEY,
    ALGO_GOSSIP_FORM_KEY("atc"),
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    int rc = algo_optim_require_sgd(env->cfg,
                                    "decentralized momentum SGD is the method, docs/algorithms.md "
                                    "section 3.1; dsgd_atc and dpsgd take any optimizer",
                                    err);
    if (rc < 0)
        return rc;
    return algo_dsgd_create(env, algo_gossip_form_read(env->cfg, ALGO_GOSSIP_ATC), out, err);
}

const algo_vt algo_dmsgd = {
    ALGO_METHOD("dmsgd", "decentralized momentum SGD (DmSGD), ATC by default, AWC option", "3.1"),
    ALGO_GOSSIP_SLOTS,
};
