/* dpsgd: D-PSGD (docs/algorithms.md 1.2), AWC form by default: every worker sends
 * x_i^k to its neighbours at the start of iteration k, computes g_i^k at
 * x_i^k meanwhile, and sets x_i^{k+1} = sum_j W_ij x_j^k - lr g_i^k (local
 * momentum with the momentum key). It waits only for its neighbours' x^k.
 * form = atc gives the ATC variant, which with W = J is exactly mini-batch
 * SGD; the AWC form is not (each worker keeps its own last gradient step).
 * With [algorithm] compressor other than none the exchange is CHOCO's
 * compressed gossip (choco_rule.c) in the same form. */
#include "algorithms/methods/gossip_rules.h"
#include "algorithms/methods/method.h"

static const cfg_key keys[] = {
    ALGO_GOSSIP_STEPS_KEY,
    ALGO_GOSSIP_FORM_KEY("awc"),
    ALGO_CHOCO_STEP_KEY,
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    return algo_choco_create(env, algo_gossip_form_read(env->cfg, ALGO_GOSSIP_AWC), out, err);
}

const algo_vt algo_dpsgd = {
    ALGO_METHOD("dpsgd",
                "D-PSGD: neighbour averaging overlapped with the gradient (AWC), local momentum",
                "1.2"),
    .supports_compression = 1,
    ALGO_GOSSIP_SLOTS,
};
