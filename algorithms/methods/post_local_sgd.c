/* post_local_sgd (docs/algorithms.md 1.5): synchronous SGD (H = 1) until
 * the epoch reaches switch_epoch, decided at each average, then Local SGD
 * with local_steps. The round is local_round.h's. */
#include "algorithms/methods/local_round.h"

static const cfg_key keys[] = {
    {"algorithm", "local_steps", "16", CFG_KEY_INT, NULL,
     "H after the switch: local steps between two averages (>= 1)"},
    {"algorithm", "switch_epoch", "-1", CFG_KEY_DOUBLE, NULL,
     "epoch from which local_steps applies (synchronous SGD before); < 0: the first lr milestone"},
    ALGO_LSGD_KEY_BUFFERS,
    {0},
};

/* After the average (and its iteration): the next round's H. */
static void formed(algo_lsgd *s)
{
    const double *sw = s->ext;
    s->H_cur = algo_env_epoch(s->env) >= *sw ? s->H : 1;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    static const algo_lsgd_ops ops = {.formed = formed, .ext_size = sizeof(double)};
    const cfg_config *c = env->cfg;
    algo_lsgd *s = algo_lsgd_alloc(env, &ops, err);
    if (!s)
        return err->code;
    double *sw = s->ext;
    int rc = cfg_get_double(c, "algorithm", "switch_epoch", sw, err);
    if (!rc && *sw < 0) {
        if (c->n_lr_milestones == 0)
            rc = cfg_error(c, "algorithm", "switch_epoch", SIM_ECONFIG, err,
                                  "is not set and there is no lr milestone to default to");
        else
            *sw = c->lr_milestones[0];
    }
    if (!rc)
        s->H_cur = *sw <= 0 ? s->H : 1;
    return algo_lsgd_finish(s, rc, 1, out, err);
}

const algo_vt algo_post_local_sgd =
    ALGO_LSGD_VT("post_local_sgd", "synchronous SGD until switch_epoch, then Local SGD", "1.5",
                 keys, create, 0);
