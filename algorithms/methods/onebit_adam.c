/* onebit_adam and onebit_lamb (docs/algorithms.md section 7, DeepSpeed's
 * onebit/adam.py and onebit/lamb.py). One shared model x and one optimizer
 * state (adamw or lamb, no bias correction).
 *
 * Warm-up, rounds 1..freeze_step: the gradients are all-reduced dense (the
 * configured collective, S bytes) and the mean takes an adamw step
 * (x -= lr (m / (sqrt(v) + eps) + wd x)) or a lamb step; so with
 * freeze_step >= the rounds run, onebit_adam is allreduce_sgd with
 * optimizer = adamw, bias_correction = false (onebit_lamb: lamb).
 *
 * Compression stage, rounds > freeze_step: v is frozen; worker i forms
 * m_i = beta1 m + (1 - beta1) g_i from the synchronized m and its gradient
 * and the momentum is the 1-bit compressed all-reduce of the m_i
 * (onebit.h, section 7.1): phase 1 is an all-to-all (each worker sends
 * d_pad/(8n) + 4 bytes to each other one), phase 2 an all-gather of the
 * same size, 2(n-1)(d_pad/(8n) + 4) bytes per worker per step. Then
 *   onebit_adam: x -= lr (m / (sqrt(v) + eps) + wd x);
 *   onebit_lamb: per layer, scaled momenta (kappa), the gradient recovered
 *   from the momentum feeds a fresh variance, and the frozen trust ratio
 *   c_l is corrected by a bounded factor f (section 7.3):
 *   x_l -= lr c_l f_l u_l.
 * [algorithm] error_feedback = false drops both error buffers (ablation).
 *
 * Compression cost: before entering phase 1 a worker spends
 * compress_time_per_value x d_wire seconds of compute (one pass over the
 * vector for the worker side; the server side on d/n values is folded
 * into it), counted in its compute time.
 *
 * Crashes ([faults] schedule or mtbf, docs/faults.md): the warm-up and
 * the 1-bit rounds run over groups of live workers (algorithms/group.h:
 * the dense all-reduce as aux, phase 2 as coll, plus a phase-1
 * all-to-all per group), with allreduce_sgd's abort rule. Over m members
 * the 1-bit all-reduce is re-partitioned into m chunks; its error buffers
 * (workers' and servers') are set to 0 at every membership change (a
 * modelling choice: they are defined per partition). The shared x, m, v
 * (frozen or not) and the LAMB state stay; a joiner is sent x, m and v
 * (and v_fresh after a LAMB freeze) at the next applied update. Without
 * crashes nothing of this runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/drivers/group.h"
#include "algorithms/compress/onebit.h"
#include "sim/units.h"

typedef struct faults faults;
typedef algo_group group;

typedef struct state {
    algo_env *env;
    int lamb;
    int64_t freeze_step;
    double cost;          /* seconds of compression compute per step */
    sim_coll *dense;      /* warm-up all-reduce */
    sim_coll *p1, *p2;    /* phase 1 (all-to-all), phase 2 (all-gather) */
    float *x;
    algo_optim_state *opt;
    float *gbar;
    const float **gptr;
    int64_t *round;       /* n: the round each worker is in */
    int done_dense, done1, done2;
    int applied, reduced;
    double phase_bytes;
    algo_onebit ob;
    float *mi;            /* n x d: the workers' momenta */
    const float **mptr;
    float *mnew;          /* d: the reduced momentum */
    /* lamb */
    int n_layers;
    int64_t off[16], len[16];
    double coeff_ema[16]; /* c_l */
    double kappa[16];
    double f_last[16];
    int kappa_set;        /* the freeze has happened */
    float *v_fresh;
    double coeff_beta, factor_max, factor_min, factor_threshold;
    faults *f;            /* workers may crash, else NULL */
} state;

static const sim_key adam_keys[] = {
    {"algorithm", "freeze_step", "100000", SIM_KEY_INT, NULL,
     "rounds of dense warm-up before v is frozen and momenta go 1-bit (>= 0)"},
    {"algorithm", "compress_time_per_value", "1e-9", SIM_KEY_DOUBLE, NULL,
     "compute seconds per parameter (d_wire) to compress one message (>= 0)"},
    {0},
};

static const sim_key lamb_keys[] = {
    {"algorithm", "freeze_step", "100000", SIM_KEY_INT, NULL,
     "rounds of dense warm-up before v and the trust ratios are frozen (>= 0)"},
    {"algorithm", "compress_time_per_value", "1e-9", SIM_KEY_DOUBLE, NULL,
     "compute seconds per parameter (d_wire) to compress one message (>= 0)"},
    {"algorithm", "coeff_beta", "0.9", SIM_KEY_DOUBLE, NULL,
     "EWMA rate of the warm-up trust ratio c_l, in [0, 1)"},
    {"algorithm", "factor_max", "4.0", SIM_KEY_DOUBLE, NULL,
     "upper bound of the trust-ratio correction factor f"},
    {"algorithm", "factor_min", "0.5", SIM_KEY_DOUBLE, NULL,
     "lower bound of f (<= factor_max)"},
    {"algorithm", "factor_threshold", "0.1", SIM_KEY_DOUBLE, NULL,
     "phi: f moves by at most a factor 1 +- phi per step"},
    {0},
};

static void begin_step(state *st, int w);

static void apply_round_end(state *st)
{
    algo_env *env = st->env;
    int64_t samples = 0;
    for (int i = 0; i < env->n; i++)
        samples += env->w[i].grad_samples;
    algo_env_iteration(env, samples);
}

/* c_l <- beta c_l + (1 - beta) coeff_l, only when coeff_l != 1. */
static void track_trust(state *st)
{
    const double *tr = algo_optim_trust(st->opt);
    for (int l = 0; tr && l < st->n_layers; l++)
        if (tr[l] != 1.0)
            st->coeff_ema[l] = st->coeff_beta * st->coeff_ema[l] + (1.0 - st->coeff_beta) * tr[l];
}

static void on_dense_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    state *st = ctx;
    algo_env *env = st->env;
    if (!st->applied) {
        algo_mean(st->gbar, st->gptr, env->n, env->d);
        algo_optim_step(st->opt, st->x, st->gbar, algo_env_lr(env));
        if (st->lamb)
            track_trust(st);
        st->applied = 1;
        apply_round_end(st);
    }
    algo_env_idle_end(env, rank);
    if (++st->done_dense == env->n) {
        st->done_dense = 0;
        st->applied = 0;
    }
    begin_step(st, rank);
}

/* The first compressed round: freeze v (lamb: keep a fresh copy and fix
 * the per-layer momentum scales kappa_l = mean_l r_l / r_l). */
static void freeze(state *st)
{
    algo_optim_freeze_v(st->opt, 1);
    st->kappa_set = 1;
    if (!st->lamb)
        return;
    const float *m = algo_optim_m(st->opt), *v = algo_optim_v(st->opt);
    memcpy(st->v_fresh, v, (size_t)st->env->d * sizeof *v);
    double r[16], rbar = 0;
    for (int l = 0; l < st->n_layers; l++) {
        double s = 0;
        for (int64_t j = 0; j < st->len[l]; j++) {
            double mj = m[st->off[l] + j];
            s += mj * mj;
        }
        r[l] = sqrt(s) / sqrt((double)st->len[l]);
        rbar += r[l];
    }
    rbar /= st->n_layers;
    for (int l = 0; l < st->n_layers; l++) {
        st->kappa[l] = r[l] > 0 ? rbar / r[l] : 1.0;
        st->f_last[l] = -1.0; /* no bound before the first factor */
    }
}

/* Worker w's momentum m_w = beta1 m + (1 - beta1) g_w (lamb: times kappa_l). */
static void form_momentum(state *st, int w)
{
    algo_env *env = st->env;
    const algo_optim_hp *hp = algo_optim_params(st->opt);
    const float b1 = (float)hp->beta1, a1 = (float)(1.0 - hp->beta1);
    const float *m = algo_optim_m(st->opt), *g = env->w[w].grad;
    float *mw = st->mi + (size_t)w * (size_t)env->d;
    for (int64_t j = 0; j < env->d; j++)
        mw[j] = b1 * m[j] + a1 * g[j];
    if (st->lamb)
        for (int l = 0; l < st->n_layers; l++) {
            const float k = (float)st->kappa[l];
            for (int64_t j = 0; j < st->len[l]; j++)
                mw[st->off[l] + j] *= k;
        }
}

static void adam_update(state *st)
{
    algo_env *env = st->env;
    const algo_optim_hp *hp = algo_optim_params(st->opt);
    const float eps = (float)hp->eps, fwd = (float)hp->weight_decay;
    const float flr = (float)algo_env_lr(env);
    float *m = algo_optim_m(st->opt);
    const float *v = algo_optim_v(st->opt);
    memcpy(m, st->mnew, (size_t)env->d * sizeof *m);
    for (int64_t j = 0; j < env->d; j++) {
        float u = m[j] / (sqrtf(v[j]) + eps);
        if (hp->weight_decay != 0)
            u += fwd * st->x[j];
        st->x[j] -= flr * u;
    }
}

static void lamb_update(state *st)
{
    algo_env *env = st->env;
    const algo_optim_hp *hp = algo_optim_params(st->opt);
    const float eps = (float)hp->eps, fwd = (float)hp->weight_decay;
    const float b1 = (float)hp->beta1, b2 = (float)hp->beta2, a2 = (float)(1.0 - hp->beta2);
    const float inv_a1 = (float)(1.0 / (1.0 - hp->beta1));
    const float flr = (float)algo_env_lr(env);
    float *m = algo_optim_m(st->opt);
    const float *v = algo_optim_v(st->opt);
    float *vf = st->v_fresh, *x = st->x;
    for (int l = 0; l < st->n_layers; l++) {
        const int64_t o = st->off[l], len = st->len[l];
        const float ik = (float)(1.0 / st->kappa[l]);
        double f = 0, pn = 0, un = 0;
        for (int64_t j = o; j < o + len; j++) {
            float mn = st->mnew[j] * ik;
            float gh = (mn - b1 * m[j]) * inv_a1;
            vf[j] = b2 * vf[j] + a2 * gh * gh;
            m[j] = mn;
            float sv = sqrtf(v[j]) + eps;
            double ratio = (double)sv / ((double)sqrtf(vf[j]) + (double)eps);
            if (ratio > f)
                f = ratio;
            float p = mn / sv, u = p + fwd * x[j];
            pn += (double)p * p;
            un += (double)u * u;
        }
        if (hp->weight_decay > 0 && un > 0) {
            double rho = fmin(1.0, sqrt(pn) / sqrt(un));
            f = rho * f + (1.0 - rho);
        }
        f = fmin(fmax(f, st->factor_min), st->factor_max);
        if (st->f_last[l] > 0)
            f = fmin(fmax(f, (1.0 - st->factor_threshold) * st->f_last[l]),
                     (1.0 + st->factor_threshold) * st->f_last[l]);
        st->f_last[l] = f;
        const float scale = flr * (float)(st->coeff_ema[l] * f);
        for (int64_t j = o; j < o + len; j++) {
            float u = m[j] / (sqrtf(v[j]) + eps) + fwd * x[j];
            x[j] -= scale * u;
        }
    }
}

static void on_p2_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    state *st = ctx;
    algo_env *env = st->env;
    if (!st->applied) {
        if (st->lamb)
            lamb_update(st);
        else
            adam_update(st);
        st->applied = 1;
        apply_round_end(st);
    }
    algo_env_idle_end(env, rank);
    if (++st->done2 == env->n) {
        st->done2 = 0;
        st->applied = 0;
    }
    begin_step(st, rank);
}

static void on_p1_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    state *st = ctx;
    algo_env *env = st->env;
    if (!st->reduced) {
        /* every worker has entered: all momenta exist */
        algo_onebit_allreduce(&st->ob, st->mptr, st->mnew);
        st->reduced = 1;
    }
    if (++st->done1 == env->n) {
        st->done1 = 0;
        st->reduced = 0;
    }
    algo_env_coll_enter(env, st->p2, rank, st->phase_bytes);
}

static void on_compressed(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    int w = (int)arg;
    algo_env_idle_begin(st->env, w);
    algo_env_coll_enter(st->env, st->p1, w, st->phase_bytes);
}

static void on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    state *st = ctx;
    algo_env *env = st->env;
    int w = (int)arg;
    if (++st->round[w] <= st->freeze_step) {
        algo_env_idle_begin(env, w);
        algo_env_coll_enter(env, st->dense, w, env->msg_bytes);
        return;
    }
    if (!st->kappa_set) /* first compressed round: the warm-up is over on every worker */
        freeze(st);
    form_momentum(st, w);
    if (st->cost <= 0) {
        on_compressed(eng, ctx, arg, payload);
        return;
    }
    sim_time dt = sim_time_from_s(st->cost);
    env->w[w].compute_time += sim_time_to_s(dt);
    if (!sim_engine_schedule(env->eng, dt, on_compressed, st, arg, NULL, NULL))
        algo_env_fail(env, SIM_ENOMEM, "%s: cannot schedule compression",
                      st->lamb ? "onebit_lamb" : "onebit_adam");
}

static void begin_step(state *st, int w)
{
    algo_env *env = st->env;
    algo_env_grad(env, w, st->x, env->w[w].grad);
    algo_env_compute(env, w, algo_env_step_samples(env, w), on_compute_done, st,
                     (uint64_t)w);
}

/* ---- crashes ([faults]): rounds over groups of live workers ------------ */

/* W_ENTERED: the dense all-reduce (warm-up); W_ENTERED1, W_ENTERED2: the
 * two phases of the 1-bit all-reduce; W_ENCODING: the compression time. */
enum { W_OFF = 0, W_COMPUTING, W_WAITING, W_ENTERED, W_ENTERED1, W_ENTERED2, W_ENCODING };

struct faults {
    algo_groups groups;  /* every group made (algorithms/group.h) */
    sim_coll **p1;       /* per group id: its phase-1 all-to-all */
    int p1_cap;
    int ob_group;        /* the group the 1-bit errors belong to */
    int64_t round;       /* the oldest round not completed */
    int need;            /* completions round `round` still counts */
    int done;            /* completions so far */
    int applied;         /* round `round`'s update is applied */
    int64_t reduced;     /* the round whose 1-bit reduction is done, or -1 */
    int64_t *wround;     /* per worker: the round it computes or waits in */
    int *wstat;          /* W_* */
    uint32_t *wgen;      /* per worker: incarnation of its events */
    uint32_t *tgen;      /* per worker: its pending timeout event */
    int64_t *late_round; /* per worker: the round whose entry waits the timeout */
    int *pending;        /* rejoined, joins at the next applied update */
    int *scratch;        /* n worker ids */
    const float **ptr;   /* n: the members' vectors */
    sim_time timeout;
};

static const char *who(const state *st) { return st->lamb ? "onebit_lamb" : "onebit_adam"; }

static void g_begin_step(state *st, int w, int64_t round);
static void g_after_encode(state *st, int w);
static void on_group_done(sim_engine *eng, void *ctx, int rank);
static void on_group_p1_done(sim_engine *eng, void *ctx, int rank);

/* A new group of the given workers (ascending) from round first on: the
 * dense all-reduce (aux), the phase-2 all-gather (coll) and the phase-1
 * all-to-all over its members' hosts. */
static group *group_add(state *st, const int *members, int n, int64_t first)
{
    algo_env *env = st->env;
    faults *f = st->f;
    algo_group_colls c = {.kind = SIM_COLL_ALLGATHER, .done = on_group_done,
                          .aux_done = on_group_done, .owner = st, .who = who(st)};
    group *g = algo_groups_add(&f->groups, env, members, n, first, &c);
    if (!g) {
        if (!env->error.code)
            algo_env_fail(env, SIM_ENOMEM, "%s: out of memory for a group", who(st));
        return NULL;
    }
    if (g->id >= f->p1_cap) {
        int cap = f->p1_cap ? 2 * f->p1_cap : 8;
        sim_coll **p = realloc(f->p1, (size_t)cap * sizeof *p);
        if (!p) {
            algo_env_fail(env, SIM_ENOMEM, "%s: out of memory for a group", who(st));
            return NULL;
        }
        for (int i = f->p1_cap; i < cap; i++)
            p[i] = NULL;
        f->p1 = p;
        f->p1_cap = cap;
    }
    if (n < 2)
        return g; /* one member: nothing to exchange in phase 1 */
    int *off = malloc((size_t)(n + 1) * sizeof *off), *nbr = malloc((size_t)n * n * sizeof *nbr);
    if (!off || !nbr) {
        free(off);
        free(nbr);
        algo_env_fail(env, SIM_ENOMEM, "%s: out of memory for a group", who(st));
        return NULL;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        off[i] = k;
        for (int j = 0; j < n; j++)
            if (j != i)
                nbr[k++] = j;
    }
    off[n] = k;
    sim_coll_desc desc = {.kind = SIM_COLL_NEIGHBOR, .n = n, .hosts = g->members,
                          .ps_host = env->server_host, .nbr_off = off, .nbr = nbr,
                          .done = on_group_p1_done, .ctx = g};
    sim_err e = {0};
    f->p1[g->id] = sim_coll_create(env->net, &desc, &e);
    free(off);
    free(nbr);
    if (!f->p1[g->id]) {
        algo_env_fail(env, e.code ? e.code : SIM_EINTERNAL, "%s: %s", who(st), e.msg);
        return NULL;
    }
    return g;
}

static void faults_free(faults *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->p1_cap; i++)
        sim_coll_destroy(f->p1[i]);
    free(f->p1);
    algo_groups_release(&f->groups);
    free(f->wround);
    free(f->wstat);
    free(f->wgen);
    free(f->tgen);
    free(f->late_round);
    free(f->pending);
    free(f->scratch);
    free(f->ptr);
    free(f);
}

static int g_dense(const state *st, int64_t round) { return round < st->freeze_step; }

static double g_phase_bytes(const state *st, const group *g)
{
    int64_t d_wire = st->env->wire_params > 0 ? st->env->wire_params : st->env->d;
    return algo_onebit_phase_bytes(g->n, d_wire);
}

static void g_enter(state *st, int w)
{
    faults *f = st->f;
    group *g = algo_groups_for(&f->groups, f->wround[w]);
    int rank = g ? g->rank_of[w] : -1;
    if (rank < 0) {
        algo_env_fail(st->env, SIM_EINTERNAL, "%s: worker %d is in no group of round %lld",
                      who(st), w, (long long)f->wround[w]);
        return;
    }
    if (g_dense(st, f->wround[w])) {
        f->wstat[w] = W_ENTERED;
        algo_env_coll_enter(st->env, g->aux, rank, st->env->msg_bytes);
    } else if (g->n < 2) {
        f->wstat[w] = W_ENTERED1;
        on_group_p1_done(st->env->eng, g, rank);
    } else {
        f->wstat[w] = W_ENTERED1;
        algo_env_coll_enter(st->env, f->p1[g->id], rank, g_phase_bytes(st, g));
    }
}

/* A survivor's timeout has run out: it enters the new group. */
static void on_timeout(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    faults *f = st->f;
    int w = algo_group_arg_w(arg);
    if (f->tgen[w] != algo_group_arg_gen(arg) || f->wstat[w] != W_WAITING)
        return;
    f->late_round[w] = -1;
    g_enter(st, w);
}

static void g_wait(state *st, int w)
{
    faults *f = st->f;
    f->wstat[w] = W_WAITING;
    f->tgen[w]++;
    if (!sim_engine_schedule(st->env->eng, f->timeout, on_timeout, st,
                             algo_group_arg(w, f->tgen[w]), NULL, NULL))
        algo_env_fail(st->env, SIM_ENOMEM, "%s: cannot schedule a timeout", who(st));
}

static void g_round_check(state *st)
{
    faults *f = st->f;
    if (f->need <= 0 || f->done < f->need)
        return;
    f->round++;
    f->done = 0;
    f->applied = 0;
    group *g = algo_groups_for(&f->groups, f->round);
    f->need = g ? g->n : 0;
}

static void on_join_model(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst,
                          double bytes)
{
    (void)eng;
    (void)src;
    (void)dst;
    (void)bytes;
    state *st = ctx;
    int w = algo_group_arg_w(arg);
    if (st->f->wgen[w] != algo_group_arg_gen(arg))
        return;
    g_begin_step(st, w, st->f->wround[w]);
}

/* The pending joiners join from the next round: w, which applied the
 * round's update, sends them x, m and v (onebit_lamb after the freeze also
 * its fresh variance): 3S or 4S bytes. */
static void g_joiners(state *st, int w)
{
    algo_env *env = st->env;
    faults *f = st->f;
    group *next = algo_groups_for(&f->groups, f->round + 1);
    int *m = f->scratch, k = 0;
    k = algo_group_members_joining(next, f->pending, env, m);
    if (!k)
        return;
    if (!group_add(st, m, k, f->round + 1))
        return;
    double bytes = (st->lamb && st->kappa_set ? 4.0 : 3.0) * env->msg_bytes;
    for (int i = 0; i < env->n; i++) {
        if (!f->pending[i] || env->w[i].down)
            continue;
        f->pending[i] = 0;
        f->wround[i] = f->round + 1;
        f->wstat[i] = W_COMPUTING;
        f->late_round[i] = -1;
        algo_env_send(env, w, i, bytes, on_join_model, st, algo_group_arg(i, f->wgen[i]));
    }
}

/* Phase 1 is over for a rank: the first one reduces the members' momenta
 * (with the group's error buffers: zeroed when the membership changed). */
static void on_group_p1_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    group *g = ctx;
    state *st = g->owner;
    faults *f = st->f;
    int w = g->members[rank];
    int64_t k = f->wround[w];
    if (f->wstat[w] != W_ENTERED1 || k != f->round || algo_groups_for(&f->groups, k) != g)
        return;
    if (f->reduced != k) {
        if (f->ob_group != g->id) {
            algo_onebit_release(&st->ob);
            sim_err e = {0};
            if (algo_onebit_init(&st->ob, g->n, st->env->d, st->env->cfg->error_feedback, &e)) {
                algo_env_fail(st->env, SIM_ENOMEM, "%s: %s", who(st), e.msg);
                return;
            }
            f->ob_group = g->id;
        }
        for (int r = 0; r < g->n; r++)
            f->ptr[r] = st->mi + (size_t)g->members[r] * (size_t)st->env->d;
        algo_onebit_allreduce(&st->ob, f->ptr, st->mnew);
        f->reduced = k;
    }
    f->wstat[w] = W_ENTERED2;
    if (g->n < 2)
        on_group_done(eng, g, rank);
    else
        algo_env_coll_enter(st->env, g->coll, rank, g_phase_bytes(st, g));
}

/* The dense all-reduce or phase 2 is over for a rank: the first one applies
 * the round's update over the members. */
static void on_group_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    group *g = ctx;
    state *st = g->owner;
    faults *f = st->f;
    algo_env *env = st->env;
    int w = g->members[rank];
    int64_t k = f->wround[w];
    int dense = g_dense(st, k);
    if (f->wstat[w] != (dense ? W_ENTERED : W_ENTERED2) || k != f->round ||
        algo_groups_for(&f->groups, k) != g)
        return; /* a crashed worker, or an aborted round's collective */
    if (!f->applied) {
        if (dense) {
            for (int r = 0; r < g->n; r++)
                f->ptr[r] = env->w[g->members[r]].grad;
            algo_mean(st->gbar, f->ptr, g->n, env->d);
            algo_optim_step(st->opt, st->x, st->gbar, algo_env_lr(env));
            if (st->lamb)
                track_trust(st);
        } else if (st->lamb) {
            lamb_update(st);
        } else {
            adam_update(st);
        }
        f->applied = 1;
        int64_t samples = 0;
        for (int r = 0; r < g->n; r++)
            samples += env->w[g->members[r]].grad_samples;
        algo_env_iteration(env, samples);
        g_joiners(st, w);
    }
    algo_env_idle_end(env, w);
    f->done++;
    g_begin_step(st, w, k + 1);
    g_round_check(st);
}

static void on_g_encoded(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    int w = algo_group_arg_w(arg);
    if (st->f->wgen[w] != algo_group_arg_gen(arg) || st->f->wstat[w] != W_ENCODING)
        return;
    g_after_encode(st, w);
}

static void g_on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    faults *f = st->f;
    algo_env *env = st->env;
    int w = algo_group_arg_w(arg);
    if (f->wgen[w] != algo_group_arg_gen(arg) || f->wstat[w] != W_COMPUTING)
        return;
    if (g_dense(st, f->wround[w])) {
        g_after_encode(st, w);
        return;
    }
    if (!st->kappa_set) /* first compressed round: the warm-up is over */
        freeze(st);
    form_momentum(st, w);
    if (st->cost > 0) {
        sim_time dt = sim_time_from_s(st->cost);
        f->wstat[w] = W_ENCODING;
        env->w[w].compute_time += sim_time_to_s(dt);
        if (!sim_engine_schedule(env->eng, dt, on_g_encoded, st, arg, NULL, NULL))
            algo_env_fail(env, SIM_ENOMEM, "%s: cannot schedule compression", who(st));
        return;
    }
    g_after_encode(st, w);
}

/* Worker w's message is ready: it enters its round's collective, or waits
 * out the timeout when its round was aborted. */
static void g_after_encode(state *st, int w)
{
    faults *f = st->f;
    algo_env_idle_begin(st->env, w);
    if (f->late_round[w] == f->wround[w])
        g_wait(st, w);
    else
        g_enter(st, w);
}

static void g_begin_step(state *st, int w, int64_t round)
{
    algo_env *env = st->env;
    faults *f = st->f;
    f->wround[w] = round;
    f->wstat[w] = W_COMPUTING;
    algo_env_grad(env, w, st->x, env->w[w].grad);
    algo_env_compute(env, w, algo_env_step_samples(env, w), g_on_compute_done, st,
                     algo_group_arg(w, f->wgen[w]));
}

/* Worker c crashed: the first round whose update is not applied is
 * aborted and runs over the survivors (its 1-bit reduction, if done, is
 * redone over them with zeroed errors). */
static void g_crash(state *st, int c)
{
    algo_env *env = st->env;
    faults *f = st->f;
    int64_t a = f->applied ? f->round + 1 : f->round;
    if (f->applied && f->wround[c] == f->round &&
        (f->wstat[c] == W_ENTERED || f->wstat[c] == W_ENTERED2))
        f->need--; /* the finishing round does not wait for it */
    f->wgen[c]++;
    f->tgen[c]++;
    f->wstat[c] = W_OFF;
    f->pending[c] = 0;
    algo_env_idle_end(env, c);
    group *g = algo_groups_for(&f->groups, a);
    if (g && g->rank_of[c] >= 0) {
        int *m = f->scratch, k = 0;
        k = algo_group_members_except(g, c, m);
        group *ng = group_add(st, m, k, a);
        if (!ng)
            return;
        if (a == f->round) {
            f->need = ng->n; /* nobody has completed round a */
            f->reduced = -1;
        }
        for (int r = 0; r < ng->n; r++) {
            int s = ng->members[r];
            f->late_round[s] = a;
            if (f->wround[s] == a &&
                (f->wstat[s] == W_ENTERED || f->wstat[s] == W_ENTERED1 ||
                 f->wstat[s] == W_ENTERED2 || f->wstat[s] == W_WAITING))
                g_wait(st, s);
        }
    }
    g_round_check(st);
}

/* Worker j rejoined: it joins at the next applied update, or starts a
 * group of its own at once when nobody is left to apply one. */
static void g_rejoin(state *st, int j)
{
    faults *f = st->f;
    f->wgen[j]++;
    f->pending[j] = 1;
    group *g = algo_groups_for(&f->groups, f->round);
    if (g && g->n > 0)
        return;
    if (!group_add(st, &j, 1, f->round))
        return;
    f->pending[j] = 0;
    f->done = 0;
    f->applied = 0;
    f->reduced = -1;
    f->need = 1;
    f->late_round[j] = -1;
    g_begin_step(st, j, f->round);
}

static void on_fault(void *p, const algo_fault *ev)
{
    state *st = p;
    if (ev->kind == ALGO_FAULT_CRASH)
        g_crash(st, ev->target);
    else if (ev->kind == ALGO_FAULT_REJOIN)
        g_rejoin(st, ev->target);
}

/* The group path's state: one group of every worker from round 0. */
static int faults_create(state *st, sim_err *err)
{
    algo_env *env = st->env;
    const sim_config *cfg = env->cfg;
    if (env->allreduce_kind == SIM_COLL_HIER)
        return sim_config_error(cfg, "network", "collective", SIM_ECONFIG, err,
                                "the hierarchical collective does not support worker crashes "
                                "([faults]); use ring, tree or ps");
    faults *f = calloc(1, sizeof *f);
    if (!f)
        return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", who(st));
    st->f = f;
    int rc = sim_config_get_time(cfg, "faults", "sync_timeout", &f->timeout, err);
    if (rc < 0)
        return rc;
    if (f->timeout < 0)
        return sim_config_error(cfg, "faults", "sync_timeout", SIM_ECONFIG, err,
                                "must not be negative");
    size_t n = (size_t)env->n;
    f->reduced = -1;
    f->wround = calloc(n, sizeof *f->wround);
    f->wstat = calloc(n, sizeof *f->wstat);
    f->wgen = calloc(n, sizeof *f->wgen);
    f->tgen = calloc(n, sizeof *f->tgen);
    f->late_round = malloc(n * sizeof *f->late_round);
    f->pending = calloc(n, sizeof *f->pending);
    f->scratch = malloc(n * sizeof *f->scratch);
    f->ptr = malloc(n * sizeof *f->ptr);
    if (!f->wround || !f->wstat || !f->wgen || !f->tgen || !f->late_round || !f->pending ||
        !f->scratch || !f->ptr)
        return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", who(st));
    for (int i = 0; i < env->n; i++) {
        f->late_round[i] = -1;
        f->scratch[i] = i;
    }
    group *g = group_add(st, f->scratch, env->n, 0);
    if (!g)
        return sim_err_set(err, env->error.code ? env->error.code : SIM_ENOMEM, "%s",
                           env->error.code ? env->error.msg : "out of memory");
    f->ob_group = g->id; /* st->ob is over all n workers */
    f->need = env->n;
    return 0;
}

static void destroy(void *p)
{
    state *st = p;
    if (!st)
        return;
    sim_coll_destroy(st->dense);
    sim_coll_destroy(st->p1);
    sim_coll_destroy(st->p2);
    algo_optim_state_destroy(st->opt);
    algo_onebit_release(&st->ob);
    free(st->x);
    free(st->gbar);
    free(st->gptr);
    free(st->round);
    free(st->mi);
    free(st->mptr);
    free(st->mnew);
    free(st->v_fresh);
    faults_free(st->f);
    free(st);
}

static int read_keys(state *st, const sim_config *cfg, sim_err *err)
{
    int rc = sim_config_get_int(cfg, "algorithm", "freeze_step", &st->freeze_step, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "compress_time_per_value", &st->cost, err);
    if (rc)
        return rc;
    if (st->freeze_step < 0)
        return sim_config_error(cfg, "algorithm", "freeze_step", SIM_ECONFIG, err,
                                "must be >= 0, got %lld", (long long)st->freeze_step);
    if (!(st->cost >= 0))
        return sim_config_error(cfg, "algorithm", "compress_time_per_value", SIM_ECONFIG, err,
                                "must be >= 0, got %g", st->cost);
    int64_t d_wire = st->env->wire_params > 0 ? st->env->wire_params : st->env->d;
    st->cost *= (double)d_wire;
    if (!st->lamb)
        return 0;
    rc = sim_config_get_double(cfg, "algorithm", "coeff_beta", &st->coeff_beta, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "factor_max", &st->factor_max, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "factor_min", &st->factor_min, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "factor_threshold", &st->factor_threshold,
                                   err);
    if (rc)
        return rc;
    if (!(st->coeff_beta >= 0 && st->coeff_beta < 1))
        return sim_config_error(cfg, "algorithm", "coeff_beta", SIM_ECONFIG, err,
                                "must be in [0, 1), got %g", st->coeff_beta);
    if (!(st->factor_min > 0 && st->factor_min <= st->factor_max))
        return sim_config_error(cfg, "algorithm", "factor_min", SIM_ECONFIG, err,
                                "must be in (0, factor_max], got %g", st->factor_min);
    if (!(st->factor_threshold >= 0))
        return sim_config_error(cfg, "algorithm", "factor_threshold", SIM_ECONFIG, err,
                                "must be >= 0, got %g", st->factor_threshold);
    return 0;
}

static int create_common(algo_env *env, void **out, int lamb, sim_err *err)
{
    const sim_config *cfg = env->cfg;
    state *st = calloc(1, sizeof *st);
    if (!st)
        return sim_err_set(err, SIM_ENOMEM, "onebit: out of memory");
    st->env = env;
    st->lamb = lamb;
    int rc = read_keys(st, cfg, err);
    if (rc) {
        destroy(st);
        return rc;
    }
    const size_t n = (size_t)env->n, d = (size_t)env->d;
    st->x = malloc(d * sizeof *st->x);
    st->gbar = malloc(d * sizeof *st->gbar);
    st->gptr = malloc(n * sizeof *st->gptr);
    st->round = calloc(n, sizeof *st->round);
    st->mi = malloc(n * d * sizeof *st->mi);
    st->mptr = malloc(n * sizeof *st->mptr);
    st->mnew = malloc(d * sizeof *st->mnew);
    st->v_fresh = lamb ? malloc(d * sizeof *st->v_fresh) : NULL;
    if (!st->x || !st->gbar || !st->gptr || !st->round || !st->mi || !st->mptr || !st->mnew ||
        (lamb && !st->v_fresh)) {
        destroy(st);
        return sim_err_set(err, SIM_ENOMEM, "onebit: out of memory");
    }
    algo_optim_hp hp;
    algo_optim_hp_from_config(cfg, &hp);
    hp.bias_correction = 0; /* DeepSpeed's 1-bit optimizers apply none */
    const wl_layer *layers = env->model ? env->model->layers : NULL;
    int nl = env->model ? env->model->n_layers : 0;
    st->opt = algo_optim_state_create(algo_optim_find(lamb ? "lamb" : "adamw"), &hp, env->d,
                                      layers, nl, err);
    if (!st->opt) {
        destroy(st);
        return err && err->code ? err->code : SIM_EINTERNAL;
    }
    if (nl <= 0 || nl > 16) {
        st->n_layers = 1;
        st->off[0] = 0;
        st->len[0] = env->d;
    } else {
        st->n_layers = nl;
        for (int l = 0; l < nl; l++) {
            st->off[l] = layers[l].offset;
            st->len[l] = layers[l].size;
        }
    }
    for (int i = 0; i < env->n; i++) {
        st->gptr[i] = env->w[i].grad;
        st->mptr[i] = st->mi + (size_t)i * d;
    }
    memcpy(st->x, env->w[0].x, d * sizeof *st->x);
    rc = algo_onebit_init(&st->ob, env->n, env->d, cfg->error_feedback, err);
    if (rc) {
        destroy(st);
        return rc;
    }
    int64_t d_wire = env->wire_params > 0 ? env->wire_params : env->d;
    st->phase_bytes = algo_onebit_phase_bytes(env->n, d_wire);
    if (algo_env_crashes(env)) {
        rc = faults_create(st, err);
        if (rc) {
            destroy(st);
            return rc;
        }
        *out = st;
        return 0;
    }
    st->dense = algo_env_coll(env, env->allreduce_kind, on_dense_done, st, err);
    st->p2 = st->dense ? algo_env_coll(env, SIM_COLL_ALLGATHER, on_p2_done, st, err) : NULL;
    if (st->p2) {
        /* phase 1: every worker sends its chunk of bits to every other one */
        int *off = malloc((n + 1) * sizeof *off), *nbr = malloc(n * n * sizeof *nbr);
        if (!off || !nbr) {
            free(off);
            free(nbr);
            destroy(st);
            return sim_err_set(err, SIM_ENOMEM, "onebit: out of memory");
        }
        int k = 0;
        for (int i = 0; i < env->n; i++) {
            off[i] = k;
            for (int j = 0; j < env->n; j++)
                if (j != i)
                    nbr[k++] = j;
        }
        off[n] = k;
        sim_coll_desc desc = {.kind = SIM_COLL_NEIGHBOR, .n = env->n, .hosts = NULL,
                              .ps_host = env->server_host, .nbr_off = off, .nbr = nbr,
                              .done = on_p1_done, .ctx = st};
        st->p1 = sim_coll_create(env->net, &desc, err);
        free(off);
        free(nbr);
    }
    if (!st->p1) {
        destroy(st);
        return err && err->code ? err->code : SIM_EINTERNAL;
    }
    *out = st;
    return 0;
}

static int create_adam(algo_env *env, void **out, sim_err *err)
{
    return create_common(env, out, 0, err);
}

static int create_lamb(algo_env *env, void **out, sim_err *err)
{
    return create_common(env, out, 1, err);
}

static int start(void *p, sim_err *err)
{
    (void)err;
    state *st = p;
    for (int w = 0; w < st->env->n; w++) {
        if (st->f)
            g_begin_step(st, w, 0);
        else
            begin_step(st, w);
    }
    return 0;
}

static const float *model(void *p, float *scratch)
{
    (void)scratch;
    return ((state *)p)->x;
}

const algo_vt algo_onebit_adam = {
    .name = "onebit_adam",
    .summary = "1-bit Adam: dense Adam warm-up, then v frozen and 1-bit compressed momentum",
    .reference = "7.2",
    .keys = adam_keys,
    .async = 0,
    .supports_compression = 0,
    .server = ALGO_SERVER_PS,
    .optimizer = "adamw",
    .create = create_adam,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = NULL,
    .fault = on_fault,
};

const algo_vt algo_onebit_lamb = {
    .name = "onebit_lamb",
    .summary = "1-bit LAMB: dense LAMB warm-up, then frozen v and trust ratios, 1-bit momentum",
    .reference = "7.3",
    .keys = lamb_keys,
    .async = 0,
    .supports_compression = 0,
    .server = ALGO_SERVER_PS,
    .optimizer = "lamb",
    .create = create_lamb,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = NULL,
    .fault = on_fault,
};
