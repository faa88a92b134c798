/* consensus_control: decentralized momentum SGD in ATC form whose
 * communication follows the lr phases (Kong et al., ICML 2021), on the
 * gossip driver (its base step is dsgd_rule.c's ATC update, algo_dsgd_ops):
 *   m_i <- beta m_i + g_i,  y_i = x_i - lr d_i,  then per iteration k:
 *   exact:     x_i = (1/n) sum_j y_j            (all-reduce of S bytes)
 *   adaptive:  y <- W y while Xi_hat = sqrt(mean_i delta_i) > target,
 *              delta_i = ||y_i - sum_j W_ij y_j||^2  (scalar all-reduce)
 *   gossip:    gossip_steps (or 1) steps of y <- W y
 * This file adds the plan. docs/algorithms.md, section 10 (crashes:
 * docs/faults.md). */
#include <math.h>
#include <stdlib.h>

#include "algorithms/methods/gossip_rules.h"
#include "algorithms/methods/method.h"

typedef struct cc {
    algo_local_optim lo; /* first: the dsgd callbacks read it */
    const cfg_config *cfg;
    uint32_t exact_mask, adaptive_mask, gossip_mask;
    double exact_until;
    int steps, max_steps;
    double target, fraction;
} cc;

static void plan(void *p, int64_t k SIM_UNUSED, double epoch, algo_gossip_plan *out)
{
    cc *s = p;
    int ph = 1; /* the epoch's phase: 1 + the lr milestones at or before it */
    for (int i = 0; i < s->cfg->n_lr_milestones; i++)
        ph += epoch >= s->cfg->lr_milestones[i];
    uint32_t bit = ph < 31 ? 1u << ph : 0;
    if ((s->exact_mask & bit) || epoch < s->exact_until) {
        *out = (algo_gossip_plan){.mode = ALGO_MIX_EXACT};
    } else if (s->adaptive_mask & bit) {
        *out = (algo_gossip_plan){.mode = ALGO_MIX_ADAPTIVE, .rounds = s->max_steps,
                                  .target = s->target, .fraction = s->fraction};
    } else {
        *out = (algo_gossip_plan){.mode = ALGO_MIX_GOSSIP,
                                  .rounds = (s->gossip_mask & bit) ? s->steps : 1};
    }
}

static const cfg_key keys[] = {
    ALGO_GOSSIP_STEPS_KEY,
    {"algorithm", "gossip_phases", "all", CFG_KEY_STRING, NULL,
     "lr phases (1 = before the first milestone) that take gossip_steps steps; others take 1"},
    {"algorithm", "exact_phases", "none", CFG_KEY_STRING, NULL,
     "lr phases with exact averaging (all-reduce of S bytes) instead of gossip, e.g. 1"},
    ALGO_KEY_DOUBLE("exact_until_epoch", "0", 0, 0, NULL, cc, exact_until,
                    "exact averaging while the epoch is below this (0 = off)"),
    {"algorithm", "adaptive_phases", "none", CFG_KEY_STRING, NULL,
     "lr phases with adaptive gossip until the consensus estimate meets the target"},
    ALGO_KEY_DOUBLE("target_consensus", "0", 0, INFINITY, "[]", cc, target,
                    "adaptive: absolute target on Xi_hat = sqrt(mean_i ||y_i - (Wy)_i||^2); 0 = "
                    "use the fraction"),
    ALGO_KEY_DOUBLE("target_fraction", "0.5", 0, 1, "()", cc, fraction,
                    "adaptive: target = fraction x Xi_hat of the iteration's first gossip step"),
    ALGO_KEY_INT("max_gossip_steps", "64", 1, 100000, cc, max_steps,
                 "adaptive: at most this many gossip steps per iteration"),
    {0},
};

static int phases(const cfg_config *c, const char *key, uint32_t *mask, sim_err *err)
{
    const char *t = cfg_get_string(c, "algorithm", key);
    if (algo_phase_mask(t ? t : "none", mask) < 0)
        return cfg_error(c, "algorithm", key, SIM_ECONFIG, err,
                                "expected none, all or a list of phases 1..30 such as "
                                "'1, 3', got '%s'", t ? t : "");
    return 0;
}

static int read_keys(cc *s, const cfg_config *c, sim_err *err)
{
    int64_t steps;
    int rc = phases(c, "gossip_phases", &s->gossip_mask, err);
    if (rc == 0)
        rc = phases(c, "exact_phases", &s->exact_mask, err);
    if (rc == 0)
        rc = phases(c, "adaptive_phases", &s->adaptive_mask, err);
    if (rc == 0)
        rc = algo_keys_read(c, keys, s, NULL, err);
    if (rc == 0)
        rc = cfg_get_int(c, "algorithm", "gossip_steps", &steps, err);
    if (rc < 0)
        return rc;
    s->steps = (int)(steps < 0 ? 0 : steps > 1000000 ? 1000000 : steps);
    return 0;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    const cfg_config *c = env->cfg;
    cc *s = algo_env_calloc(env, 1, sizeof *s);
    if (!s)
        return algo_env_alloc_check(env, "consensus_control", err);
    s->cfg = c;
    int rc = read_keys(s, c, err);
    if (rc == 0)
        rc = algo_local_optim_init(&s->lo, env, 0, err);
    if (rc < 0)
        return rc;
    algo_gossip_ops ops;
    algo_dsgd_ops(ALGO_GOSSIP_ATC, &ops);
    ops.plan = plan;
    return algo_gossip_create_state(env, &ops, s, out, err);
}

static const char *data_time(const cfg_config *cfg)
{
    uint32_t mask = 0;
    const char *t = cfg_get_string(cfg, "algorithm", "adaptive_phases");
    if (algo_phase_mask(t ? t : "none", &mask) < 0 || mask == 0)
        return NULL;
    return "in its adaptive_phases the gossip steps per iteration follow the consensus"
           " estimate of the models";
}

const algo_vt algo_consensus_control = {
    ALGO_METHOD("consensus_control",
                "ATC momentum D-SGD with phase-wise exact averaging, extra or adaptive gossip",
                "10"),
    .server = ALGO_SERVER_PS,
    .data_time = data_time,
    ALGO_GOSSIP_SLOTS,
};
