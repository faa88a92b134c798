/* post_local_sgd (docs/algorithms.md 1.5): synchronous SGD (H = 1) until
 * the epoch reaches switch_epoch, decided at each average, then Local SGD
 * with local_steps. The round is local_round.h's. */
#include "algorithms/methods/local_round.h"

typedef struct post {
    double sw; /* switch_epoch (the first lr milestone when < 0) */
} post;

static const cfg_key keys[] = {
    ALGO_LSGD_KEY_STEPS("16", "H after the switch: local steps between two averages"),
    ALGO_KEY_DOUBLE_EXT("switch_epoch", "-1", 0, 0, NULL, post, sw,
                        "epoch from which local_steps applies (synchronous SGD before); < 0: the "
                        "first lr milestone"),
    ALGO_LSGD_KEY_BUFFERS,
    {0},
};

/* After the average (and its iteration): the next round's H. */
static void formed(algo_lsgd *s)
{
    const post *p = s->ext;
    s->H_cur = algo_env_epoch(s->env) >= p->sw ? s->H : 1;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    static const algo_lsgd_ops ops = {.keys = keys, .formed = formed, .ext_size = sizeof(post)};
    const cfg_config *c = env->cfg;
    algo_lsgd *s;
    int rc = algo_lsgd_alloc(env, &ops, &s, err);
    if (rc)
        return rc;
    post *p = s->ext;
    rc = 0;
    if (p->sw < 0 && c->n_lr_milestones == 0)
        rc = cfg_error(c, "algorithm", "switch_epoch", SIM_ECONFIG, err,
                       "is not set and there is no lr milestone to default to");
    else if (p->sw < 0)
        p->sw = c->lr_milestones[0];
    if (!rc)
        s->H_cur = p->sw <= 0 ? s->H : 1;
    return algo_lsgd_finish(s, rc, 1, out, err);
}

const algo_vt algo_post_local_sgd =
    ALGO_LSGD_VT("post_local_sgd", "synchronous SGD until switch_epoch, then Local SGD", "1.5",
                 keys, create, 0);
