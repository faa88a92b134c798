/* consensus_control: decentralized momentum SGD in ATC form whose
 * communication follows the lr phases (Kong et al., ICML 2021), on the
 * gossip driver (its base step is dsgd.c's ATC update, algo_dsgd_ops):
 *   m_i <- beta m_i + g_i,  y_i = x_i - lr d_i,  then per iteration k:
 *   exact:     x_i = (1/n) sum_j y_j            (all-reduce of S bytes)
 *   adaptive:  y <- W y while Xi_hat = sqrt(mean_i delta_i) > target,
 *              delta_i = ||y_i - sum_j W_ij y_j||^2  (scalar all-reduce)
 *   gossip:    gossip_steps (or 1) steps of y <- W y
 * This file adds the plan. docs/algorithms.md, section 10 (crashes:
 * docs/faults.md). */
#include <math.h>
#include <stdlib.h>

#include "algorithms/drivers/gossip.h"
#include "algorithms/methods/method.h"

typedef struct cc {
    algo_local_optim lo; /* first: the dsgd callbacks read it */
    const cfg_config *cfg;
    uint32_t exact_mask, adaptive_mask, gossip_mask;
    double exact_until;
    int steps, max_steps;
    double target, fraction;
} cc;

static void release(void *p)
{
    cc *s = p;
    if (!s)
        return;
    algo_local_optim_release(&s->lo);
    free(s);
}

static void plan(void *p, int64_t k ALGO_UNUSED, double epoch, algo_gossip_plan *out)
{
    cc *s = p;
    int ph = algo_phase_at(s->cfg, epoch);
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
    {"algorithm", "exact_until_epoch", "0", CFG_KEY_DOUBLE, NULL,
     "exact averaging while the epoch is below this (0 = off)"},
    {"algorithm", "adaptive_phases", "none", CFG_KEY_STRING, NULL,
     "lr phases with adaptive gossip until the consensus estimate meets the target"},
    {"algorithm", "target_consensus", "0", CFG_KEY_DOUBLE, NULL,
     "adaptive: absolute target on Xi_hat = sqrt(mean_i ||y_i - (Wy)_i||^2); 0 = use the fraction"},
    {"algorithm", "target_fraction", "0.5", CFG_KEY_DOUBLE, NULL,
     "adaptive: target = fraction x Xi_hat of the iteration's first gossip step"},
    {"algorithm", "max_gossip_steps", "64", CFG_KEY_INT, NULL,
     "adaptive: at most this many gossip steps per iteration"},
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
    int64_t steps, max_steps;
    int rc = phases(c, "gossip_phases", &s->gossip_mask, err);
    if (rc == 0)
        rc = phases(c, "exact_phases", &s->exact_mask, err);
    if (rc == 0)
        rc = phases(c, "adaptive_phases", &s->adaptive_mask, err);
    if (rc == 0)
        rc = cfg_get_double(c, "algorithm", "exact_until_epoch", &s->exact_until, err);
    if (rc == 0)
        rc = algo_key_double(c, "target_consensus", 0, INFINITY, "[]", &s->target, err);
    if (rc == 0)
        rc = algo_key_double(c, "target_fraction", 0, 1, "()", &s->fraction, err);
    if (rc == 0)
        rc = algo_key_int(c, "max_gossip_steps", 1, 100000, &max_steps, err);
    if (rc == 0)
        rc = cfg_get_int(c, "algorithm", "gossip_steps", &steps, err);
    if (rc < 0)
        return rc;
    s->max_steps = (int)max_steps;
    s->steps = (int)(steps < 0 ? 0 : steps > 1000000 ? 1000000 : steps);
    return 0;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    const cfg_config *c = env->cfg;
    cc *s = calloc(1, sizeof *s);
    if (!s)
        return sim_err_set(err, SIM_ENOMEM, "consensus_control: out of memory");
    s->cfg = c;
    int rc = read_keys(s, c, err);
    if (rc == 0)
        rc = algo_local_optim_init(&s->lo, env, 0, err);
    if (rc < 0) {
        release(s);
        return rc;
    }
    algo_gossip_ops ops;
    algo_dsgd_ops(ALGO_GOSSIP_ATC, &ops);
    ops.plan = plan;
    ops.release = release;
    return algo_gossip_create_state(env, &ops, s, out, err);
}

const algo_vt algo_consensus_control = {
    ALGO_METHOD("consensus_control",
                "ATC momentum D-SGD with phase-wise exact averaging, extra or adaptive gossip",
                "10"),
    .server = ALGO_SERVER_PS,
    ALGO_GOSSIP_SLOTS,
};
