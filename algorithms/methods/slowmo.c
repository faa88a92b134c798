/* slowmo (docs/algorithms.md 4): SlowMo's outer update on the average of a
 * Local SGD round (u <- beta u + (x0 - xbar)/lr, x0 <- x0 - alpha lr u),
 * or BMUF's block momentum (classic, nesterov). The round is
 * local_round.h's; with base = dpsgd the inner steps are D-PSGD steps on
 * the gossip driver (slowmo_dpsgd.c), which then runs the method, its
 * crash rules included (gossip_group.c, docs/faults.md). x0 and u are
 * shared and stay under crashes. */
#include "algorithms/methods/local_round.h"
#include "algorithms/methods/method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct slowmo {
    algo_slowmo_params sp;
    float *x0, *u; /* outer iterate and slow momentum (or BMUF's x_g and Delta) */
} slowmo;

static const cfg_key keys[] = {
    ALGO_LSGD_KEY_STEPS("12", "tau: base steps per outer iteration"),
    ALGO_LSGD_KEY_BUFFERS,
    ALGO_KEY_DOUBLE_EXT("slow_momentum", "0.5", 0, 1, "[)", slowmo, sp.beta,
                        "beta: slow (outer) momentum, or BMUF's block momentum eta"),
    ALGO_KEY_DOUBLE_EXT("slow_lr", "1", 0, INFINITY, "()", slowmo, sp.alpha,
                        "alpha: slow learning rate, or BMUF's block learning rate zeta"),
    {"algorithm", "bmuf", "none", CFG_KEY_CHOICE, "none|classic|nesterov",
     "none: SlowMo's update in gradient units; classic or nesterov: BMUF block momentum"},
    {"algorithm", "base", "local_sgd", CFG_KEY_CHOICE, "local_sgd|dpsgd",
     "base of the inner steps: local optimizer steps, or D-PSGD steps on the [topology] graph"},
    {"algorithm", "form", "awc", CFG_KEY_CHOICE, "atc|awc",
     "base = dpsgd: awc x <- Wx - lr d (exchange overlaps the gradient), atc x <- W(x - lr d)"},
    {"algorithm", "gossip_steps", "1", CFG_KEY_INT, NULL,
     "base = dpsgd: gossip steps q per base step (each a neighbour exchange of S bytes)"},
    {0},
};

/* The outer step on the average: it becomes the model every worker
 * restarts from. */
static void outer(algo_lsgd *s)
{
    slowmo *o = s->ext;
    algo_slowmo_outer(&o->sp, o->x0, o->u, s->avg, s->d, algo_env_lr(s->env));
}

static void read_keys(algo_lsgd *s, slowmo *o, const cfg_config *c)
{
    algo_slowmo_params *sp = &o->sp;
    static const char *const bw[] = {"none", "classic", "nesterov", NULL};
    sp->bmuf = (algo_bmuf)algo_lsgd_choice(c, "bmuf", bw);
    sp->tau = s->H;
    sp->buffers = s->buf;
}

/* slowmo over local steps: x0 starts as the mean of the initial models. */
static int build_local(algo_lsgd *s, slowmo *o, sim_err *err)
{
    algo_env *env = s->env;
    int rc = algo_lsgd_build(s, err);
    if (rc)
        return rc;
    o->x0 = algo_env_alloc(env, (size_t)s->d * sizeof(float));
    o->u = algo_env_calloc(env, (size_t)s->d, sizeof(float));
    if ((rc = algo_env_alloc_check(env, "slowmo", err)) < 0)
        return rc;
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = env->w[i].x;
    algo_mean(o->x0, s->ptrs, s->n, s->d);
    return 0;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    static const algo_lsgd_ops ops = {.keys = keys, .outer = outer, .ext_size = sizeof(slowmo)};
    algo_lsgd *s;
    int rc = algo_lsgd_alloc(env, &ops, &s, err);
    if (rc)
        return rc;
    slowmo *o = s->ext;
    read_keys(s, o, env->cfg);
    rc = 0;
    const char *base = cfg_get_string(env->cfg, "algorithm", "base");
    if (!rc && base && strcmp(base, "dpsgd") == 0 && env->cfg->bucket > 0) {
        rc = cfg_error(env->cfg, "algorithm", "bucket", SIM_ECONFIG, err,
                       "slowmo with base = dpsgd: its D-PSGD steps gossip with neighbours, "
                       "not in a bucketed all-reduce (use bucket = 0)");
    } else if (!rc && base && strcmp(base, "dpsgd") == 0) {
        rc = algo_slowmo_dpsgd_create(env, &o->sp, &s->base, err);
    } else if (!rc) {
        rc = build_local(s, o, err);
    }
    return algo_lsgd_finish(s, rc, 0, out, err);
}

const algo_vt algo_slowmo =
    ALGO_LSGD_VT("slowmo", "SlowMo: Local SGD or D-PSGD rounds, then an outer slow momentum (or BMUF)",
                 "4", keys, create, 1);
