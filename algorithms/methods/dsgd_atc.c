/* dsgd_atc: decentralized SGD in adapt-then-combine form (docs/algorithms.md 0.3):
 * x_i <- sum_j W_ij (x_j - lr d_j), where d_j is the local gradient, or the
 * local heavy-ball / Nesterov direction when momentum > 0 (then it is the
 * same update as dmsgd with form = atc). The message depends on the
 * gradient, so the exchange is blocking. With [algorithm] compressor other
 * than none the exchange is CHOCO's compressed gossip (choco_rule.c). */
#include "algorithms/methods/gossip_rules.h"
#include "algorithms/methods/method.h"

static const cfg_key keys[] = {
    ALGO_GOSSIP_STEPS_KEY,
    ALGO_CHOCO_STEP_KEY,
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    return algo_choco_create(env, ALGO_GOSSIP_ATC, out, err);
}

const algo_vt algo_dsgd_atc = {
    ALGO_METHOD("dsgd_atc",
                "decentralized SGD, adapt-then-combine: x <- W(x - lr g), blocking exchange",
                "0.3"),
    .supports_compression = 1,
    ALGO_GOSSIP_SLOTS,
};
