/* The 1-bit round (onebit_round.h). */
#include "algorithms/methods/onebit_round.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "sim/units.h"

/* The driver's collective slots. */
enum { SLOT_DENSE = 0, SLOT_GATHER = 1, SLOT_ALLTOALL = 2 };

/* The first compressed round: freeze v. */
static void freeze(algo_obit *st)
{
    algo_optim_freeze_v(st->opt, 1);
    st->kappa_set = 1;
    if (st->ops->freeze)
        st->ops->freeze(st);
}

/* Worker w's momentum m_w = beta1 m + (1 - beta1) g_w (lamb: times kappa_l). */
static void form_momentum(algo_obit *st, int w)
{
    algo_env *env = st->env;
    const algo_optim_hp *hp = algo_optim_params(st->opt);
    const float b1 = (float)hp->beta1, a1 = (float)(1.0 - hp->beta1);
    const float *m = algo_optim_m(st->opt), *g = env->w[w].grad;
    float *mw = st->mi + (size_t)w * (size_t)env->d;
    algo_env_grad_wait(env, w); /* with buckets the step has not run yet */
    for (int64_t j = 0; j < env->d; j++)
        mw[j] = b1 * m[j] + a1 * g[j];
    if (st->ops->lamb)
        for (int l = 0; l < st->n_layers; l++) {
            const float k = (float)st->kappa[l];
            for (int64_t j = 0; j < st->len[l]; j++)
                mw[st->off[l] + j] *= k;
        }
}

static int dense(const algo_obit *st, int64_t round) { return round < st->freeze_step; }

static int h_grad(void *m, int w)
{
    algo_obit *st = m;
    algo_env_grad(st->env, w, st->x, st->env->w[w].grad);
    return 1;
}

/* A warm-up round: the dense all-reduce; a 1-bit round: the all-to-all,
 * then the all-gather (a group of one: the all-to-all alone, which it
 * completes at once). */
static int h_plan(void *m, int64_t round, int *slots)
{
    algo_obit *st = m;
    if (dense(st, round)) {
        slots[0] = SLOT_DENSE;
        return 1;
    }
    slots[0] = SLOT_ALLTOALL;
    slots[1] = SLOT_GATHER;
    const algo_group *g = algo_sync_group(st->sy, round);
    return g && g->n < 2 ? 1 : 2;
}

/* The size of w's message in round k's group (a 1-bit phase message
 * depends on the partition), also when it re-enters a smaller one. */
static void h_reenter(void *m, int w SIM_UNUSED, int64_t round, int phase SIM_UNUSED,
                      algo_sync_msg *msg)
{
    algo_obit *st = m;
    msg->bytes = dense(st, round) ? st->env->msg_bytes
                                  : algo_onebit_phase_bytes(algo_sync_group(st->sy, round)->n,
                                                            st->env->wire_params);
}

/* A 1-bit round: w's momentum, compressed before phase 1. */
static void h_contribute(void *m, int w, int64_t round, int phase, algo_sync_msg *msg)
{
    algo_obit *st = m;
    h_reenter(m, w, round, phase, msg);
    if (dense(st, round) || phase > 0)
        return;
    if (!st->kappa_set) /* first compressed round: the warm-up is over */
        freeze(st);
    form_momentum(st, w);
    msg->encode = st->cost > 0 ? sim_time_from_s(st->cost) : 0;
}

/* The 1-bit all-reduce over g's members: built anew, errors zero, for
 * every new group (a new partition) the first time a round forms in it. */
static int regroup(algo_obit *st, const algo_group *g)
{
    if (st->ob_group == g->id + 1)
        return 0;
    st->ob_group = g->id + 1;
    algo_onebit_release(&st->ob);
    sim_err e = {0};
    int rc = algo_onebit_init(&st->ob, g->n, st->env->d, st->env->cfg->error_feedback, &e);
    if (rc)
        return algo_env_fail(st->env, rc < 0 ? rc : SIM_ENOMEM, "%s: %s", st->ops->who, e.msg);
    return 0;
}

/* Phase 1: the 1-bit all-reduce of the members' momenta; the last phase:
 * the update (the warm-up's: the optimizer step on the mean gradient). */
static void h_form(void *m, const algo_group *g, int64_t round, int phase, int w SIM_UNUSED)
{
    algo_obit *st = m;
    algo_env *env = st->env;
    if (dense(st, round)) {
        for (int r = 0; r < g->n; r++)
            st->gptr[r] = env->w[g->members[r]].grad;
        algo_mean(st->gbar, st->gptr, g->n, env->d);
        algo_optim_step(st->opt, st->x, st->gbar, algo_env_lr(env));
        if (st->ops->warmed)
            st->ops->warmed(st);
        return;
    }
    if (phase == 0) {
        if (regroup(st, g) < 0)
            return;
        for (int r = 0; r < g->n; r++)
            st->gptr[r] = st->mi + (size_t)g->members[r] * (size_t)env->d;
        algo_onebit_allreduce(&st->ob, st->gptr, st->mnew);
        if (g->n > 1)
            return;
    }
    st->ops->update(st);
}

/* A joiner is sent x, m and v (onebit_lamb after the freeze also its
 * fresh variance); the shared state is all it needs. */
static double h_join(void *m, int j SIM_UNUSED, int sender SIM_UNUSED)
{
    algo_obit *st = m;
    return (st->ops->lamb && st->kappa_set ? 4.0 : 3.0) * st->env->msg_bytes;
}

void algo_obit_fault(void *p, const algo_fault *ev) { algo_sync_fault(((algo_obit *)p)->sy, ev); }

/* At the run's end: the 1-bit all-reduce, rebuilt at each regroup. */
static void ob_free(void *ob) { algo_onebit_release(ob); }

int algo_obit_create(algo_env *env, const algo_obit_ops *ops, void **out, sim_err *err)
{
    const cfg_config *cfg = env->cfg;
    algo_obit *st = algo_env_calloc(env, 1, sizeof *st);
    if (!st)
        return algo_env_alloc_check(env, "onebit", err);
    algo_env_own(env, &st->ob, ob_free);
    st->env = env;
    st->ops = ops;
    int rc = algo_keys_read(cfg, ops->keys, st, NULL, err);
    st->cost *= (double)env->wire_params; /* d_wire */
    if (!rc && ops->check)
        rc = ops->check(st, cfg, err);
    if (rc)
        return rc;
    const size_t n = (size_t)env->n, d = (size_t)env->d;
    st->x = algo_env_alloc(env, d * sizeof *st->x);
    st->gbar = algo_env_alloc(env, d * sizeof *st->gbar);
    st->gptr = algo_env_alloc(env, n * sizeof *st->gptr);
    st->mi = algo_env_alloc(env, n * d * sizeof *st->mi);
    st->mnew = algo_env_alloc(env, d * sizeof *st->mnew);
    st->v_fresh = ops->lamb ? algo_env_alloc(env, d * sizeof *st->v_fresh) : NULL;
    if ((rc = algo_env_alloc_check(env, "onebit", err)) < 0)
        return rc;
    algo_optim_hp hp;
    algo_optim_hp_from_config(cfg, &hp);
    hp.bias_correction = 0; /* DeepSpeed's 1-bit optimizers apply none */
    const wl_layer *layers = env->model ? env->model->layers : NULL;
    int nl = env->model ? env->model->n_layers : 0;
    if ((rc = algo_env_optim_create(env, algo_optim_find(ops->optim), &hp, &st->opt, err)) < 0)
        return rc;
    st->n_layers = nl <= 0 || nl > 16 ? 1 : nl; /* else one layer of d */
    st->len[0] = env->d;
    for (int l = 0; st->n_layers == nl && l < nl; l++) {
        st->off[l] = layers[l].offset;
        st->len[l] = layers[l].size;
    }
    memcpy(st->x, env->w[0].x, d * sizeof *st->x);
    algo_sync_desc desc = {
        .who = st->ops->who, .method = st, .n_slots = 3,
        .slots = {[SLOT_DENSE] = ALGO_SYNC_ALLREDUCE, [SLOT_GATHER] = ALGO_SYNC_ALLGATHER,
                  [SLOT_ALLTOALL] = ALGO_SYNC_ALLTOALL},
        .count = ALGO_SYNC_COUNT_FIRST, .restart_round = 1,
        .hooks = {.grad = h_grad, .plan = h_plan, .contribute = h_contribute, .form = h_form,
                  .reenter = h_reenter, .join = h_join},
    };
    if ((rc = algo_sync_create(env, &desc, &st->sy, err)))
        return rc;
    *out = st;
    return 0;
}

int algo_obit_start(void *p, sim_err *err) { return algo_sync_start(((algo_obit *)p)->sy, err); }
