/* The Local SGD round on the synchronous-round driver (see local_round.h). */
#include "algorithms/methods/local_round.h"
#include "algorithms/methods/method.h"

#include <stdlib.h>
#include <string.h>

enum { BUF_LOCAL = 0, BUF_AVERAGE, BUF_RESET };

double algo_lsgd_lr(const algo_env *env, int64_t applied)
{
    return algo_lr_at(env->cfg, (double)(applied * env->n) / (double)env->ds->train.n);
}

void algo_lsgd_local_step(algo_env *env, algo_local_optim *lo, int64_t *applied, int i)
{
    algo_worker *w = &env->w[i];
    algo_optim_step(lo->s[i], w->x, w->grad, algo_lsgd_lr(env, applied[i]));
    applied[i] += w->grad_samples;
}

/* The average worker w takes. */
static const float *avg_of(algo_lsgd *s, int w)
{
    return s->ops.avg_of ? s->ops.avg_of(s, w) : s->avg;
}

/* Worker i completed the round's phase 0 (its work was over: s->take[i]):
 * it takes the average and the buffers. Applied by i's next hook, which
 * the driver runs at the instant of the completion (sync.h, TAKE). */
static void take(algo_lsgd *s, int i)
{
    if (!s->take[i])
        return;
    s->take[i] = 0;
    float *mv, *v;
    memcpy(s->env->w[i].x, avg_of(s, i), (size_t)s->d * sizeof(float));
    s->since[i] = 0;
    if (s->buf == BUF_AVERAGE) {
        if ((mv = algo_optim_m(s->lo.s[i])))
            memcpy(mv, s->avg_m, (size_t)s->d * sizeof(float));
        if ((v = algo_optim_v(s->lo.s[i])))
            memcpy(v, s->avg_v, (size_t)s->d * sizeof(float));
    } else if (s->buf == BUF_RESET) {
        algo_optim_reset(s->lo.s[i]);
    }
}

/* A local step's gradient, after the previous round's average is taken;
 * 1 when it is the round's last step (with buckets: bucketed). */
static int h_grad(void *m, int w)
{
    algo_lsgd *s = m;
    take(s, w);
    algo_env_grad(s->env, w, s->env->w[w].x, s->env->w[w].grad);
    return s->since[w] + 1 >= s->H_cur;
}

/* The end of a local step: its update; 1 when the round's H_cur are done
 * (the average is to be taken at the round's completion). */
static int h_step_done(void *m, int i)
{
    algo_lsgd *s = m;
    algo_lsgd_local_step(s->env, &s->lo, s->applied, i);
    return s->take[i] = ++s->since[i] >= s->H_cur;
}

static int h_plan(void *m, int64_t round, int *slots)
{
    algo_lsgd *s = m;
    slots[0] = s->ops.plan ? s->ops.plan(s, round) : 0;
    slots[1] = 1;
    return s->ops.contribute2 ? 2 : 1;
}

static void h_contribute(void *m, int w, int64_t round SIM_UNUSED, int phase,
                         algo_sync_msg *msg)
{
    algo_lsgd *s = m;
    if (phase == 0) {
        msg->bytes = s->env->msg_bytes;
        return;
    }
    take(s, w); /* phase 0 is complete */
    s->ops.contribute2(s, w, msg);
}

/* The mean over g's members of a vector of theirs (worker-id order). */
static void mean_of(algo_lsgd *s, const algo_group *g, float *out,
                    float *(*get)(const algo_optim_state *))
{
    for (int r = 0; r < g->n; r++)
        s->ptrs[r] = get ? get(s->lo.s[g->members[r]]) : s->env->w[g->members[r]].x;
    algo_mean(out, s->ptrs, g->n, s->d);
}

/* The round's first completion: every member has entered, so every x_i
 * has its round's value. */
static void h_form(void *m, const algo_group *g, int64_t round, int phase, int w SIM_UNUSED)
{
    algo_lsgd *s = m;
    if (phase == 1) {
        s->ops.form2(s, g);
        return;
    }
    if (!s->ops.mean || !s->ops.mean(s, g, round))
        mean_of(s, g, s->avg, NULL);
    if (s->buf == BUF_AVERAGE) {
        if (algo_optim_m(s->lo.s[0]))
            mean_of(s, g, s->avg_m, algo_optim_m);
        if (algo_optim_v(s->lo.s[0]))
            mean_of(s, g, s->avg_v, algo_optim_v);
    }
    if (s->ops.outer)
        s->ops.outer(s);
    algo_sync_report(s->sy);
    if (s->ops.formed)
        s->ops.formed(s);
}

/* A joiner takes the average with a fresh optimizer state; its lr position
 * is the sender's. */
static double h_join(void *m, int j, int sender)
{
    algo_lsgd *s = m;
    s->take[j] = 0;
    s->since[j] = 0;
    if (sender >= 0)
        s->applied[j] = s->applied[sender];
    memcpy(s->env->w[j].x, sender >= 0 ? avg_of(s, sender) : s->avg,
           (size_t)s->d * sizeof(float));
    algo_optim_reset(s->lo.s[j]);
    return 0;
}

int algo_lsgd_choice(const cfg_config *c, const char *key, const char *const *words)
{
    const char *v = cfg_get_string(c, "algorithm", key);
    for (int k = 0; v && words[k]; k++)
        if (strcmp(v, words[k]) == 0)
            return k;
    return 0;
}

int algo_lsgd_alloc(algo_env *env, const algo_lsgd_ops *ops, algo_lsgd **out, sim_err *err)
{
    const cfg_config *c = env->cfg;
    algo_lsgd *s = algo_env_calloc(env, 1, sizeof *s);
    void *ext = ops->ext_size ? algo_env_calloc(env, 1, ops->ext_size) : NULL;
    int rc = algo_env_alloc_check(env, c->algorithm, err);
    if (rc < 0)
        return rc;
    s->ext = ext;
    s->env = env;
    s->n = env->n;
    s->d = env->d;
    s->ops = *ops;
    if ((rc = algo_keys_read(c, ops->keys, s, ext, err)) < 0)
        return rc;
    s->H_cur = s->H;
    static const char *const bufw[] = {"local", "average", "reset", NULL};
    s->buf = algo_lsgd_choice(c, "buffers", bufw);
    *out = s;
    return 0;
}

int algo_lsgd_build(algo_lsgd *s, sim_err *err)
{
    algo_env *env = s->env;
    const size_t n = (size_t)s->n, bytes = (size_t)s->d * sizeof(float);
    s->since = algo_env_calloc(env, n, sizeof *s->since);
    s->take = algo_env_calloc(env, n, sizeof *s->take);
    s->applied = algo_env_calloc(env, n, sizeof *s->applied);
    s->avg = algo_env_alloc(env, bytes);
    s->avg_m = algo_env_alloc(env, bytes);
    s->avg_v = algo_env_alloc(env, bytes);
    s->ptrs = algo_env_alloc(env, n * sizeof *s->ptrs);
    int rc = algo_env_alloc_check(env, env->cfg->algorithm, err);
    if (rc == 0)
        rc = algo_local_optim_init(&s->lo, env, 0, err);
    if (rc < 0)
        return rc;
    /* avg starts as the mean of the initial models (a lone rejoiner's model
     * when every worker crashed before the first average) */
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = env->w[i].x;
    algo_mean(s->avg, s->ptrs, s->n, s->d);
    algo_sync_desc desc = {
        .who = env->cfg->algorithm, .method = s, .n_slots = s->ops.contribute2 ? 2 : 1,
        .slots = {ALGO_SYNC_ALLREDUCE, ALGO_SYNC_ALLREDUCE}, .count = ALGO_SYNC_COUNT_STEPS,
        .span = s->H + 2, .joiner_idle = 1,
        .hooks = {.grad = h_grad, .step_done = h_step_done, .plan = h_plan,
                  .contribute = h_contribute, .form = h_form, .join = h_join},
    };
    if (s->ops.n_slots) {
        desc.n_slots = s->ops.n_slots;
        desc.slots[0] = s->ops.slots[0];
        desc.slots[1] = s->ops.slots[1];
    }
    return algo_sync_create(env, &desc, &s->sy, err);
}

int algo_lsgd_finish(algo_lsgd *s, int rc, int build, void **out, sim_err *err)
{
    if (!rc && build)
        rc = algo_lsgd_build(s, err);
    if (rc)
        return rc < 0 ? rc : SIM_EINTERNAL;
    *out = s;
    return 0;
}

int algo_lsgd_start(void *p, sim_err *err)
{
    algo_lsgd *s = p;
    if (s->base)
        return algo_gossip_start(s->base, err);
    if (s->ops.start)
        s->ops.start(s);
    return algo_sync_start(s->sy, err);
}

/* The average from its formation until the round is over, else the mean
 * of the live workers' models (every worker's without crashes). */
const float *algo_lsgd_model(void *p, float *scratch)
{
    algo_lsgd *s = p;
    if (s->base)
        return algo_gossip_model(s->base, scratch);
    int avg = algo_sync_phases_formed(s->sy) > 0;
    if (avg && !s->ops.avg_of)
        return s->avg;
    int k = 0, same = 1;
    for (int i = 0; i < s->n; i++)
        if (algo_sync_live(s->sy, i)) {
            s->ptrs[k] = avg ? avg_of(s, i) : s->env->w[i].x;
            same = same && s->ptrs[k] == s->ptrs[0];
            k++;
        }
    if (k == 0)
        return s->avg;
    if (avg && same) /* every worker takes the same average: it is the model */
        return s->ptrs[0];
    algo_mean(scratch, s->ptrs, k, s->d);
    return scratch;
}

void algo_lsgd_worker_models(void *p, const float **xs)
{
    algo_lsgd *s = p;
    if (s->base) {
        algo_gossip_worker_models(s->base, xs);
        return;
    }
    int avg = algo_sync_phases_formed(s->sy) > 0;
    for (int i = 0; i < s->n; i++)
        xs[i] = avg && algo_sync_live(s->sy, i) ? avg_of(s, i) : s->env->w[i].x;
}

void algo_lsgd_fault(void *p, const algo_fault *ev)
{
    algo_lsgd *s = p;
    if (s->base) { /* slowmo with base = dpsgd: the gossip driver's rules */
        algo_gossip_fault(s->base, ev);
        return;
    }
    if (s->sy)
        algo_sync_fault(s->sy, ev);
}
