/* Local SGD and the methods built on its round (docs/algorithms.md 1.5, 2,
 * 4): local_sgd, post_local_sgd, adaptive_local_sgd and slowmo.
 *
 * Every worker keeps its own model x_i and its own optimizer state (the
 * configured optimizer, [algorithm] optimizer) and takes local steps: the
 * gradient at x_i when the step starts, x_i <- x_i - lr dir_i when it
 * ends, with lr at the worker's own point of training (its applied
 * samples times n). After H local steps it enters a blocking all-reduce of
 * its parameters (S bytes). When the round's first rank completes, every
 * x_i has its round's value: the mean xbar (worker-id order) is formed
 * there once, with the method's outer step, and each rank takes it when
 * its own part completes. Buffers ([algorithm] buffers): local (untouched),
 * average (first and second moments averaged like x) or reset (zeroed).
 *
 *  - post_local_sgd: H = 1 until the epoch reaches switch_epoch (decided
 *    at each synchronization), then local_steps.
 *  - adaptive_local_sgd: after the average each worker computes per-sample
 *    statistics of its last local batch (at most test_samples samples) at
 *    xbar, charged as a compute step of that many samples, and enters a
 *    scalar all-reduce (32 bytes); its first completion takes the means and
 *    sets the batch of every worker by the configured test.
 *  - slowmo: the outer update on the average (u <- beta u + (x0 - xbar)/lr,
 *    x0 <- x0 - alpha lr u) or BMUF's block momentum (classic, nesterov).
 *
 * One iteration = one local step of every worker; a step that ends with a
 * synchronization is reported when the synchronization's first rank
 * completes. The evaluated model is the mean of the workers' models.
 *
 * Crashes ([faults] schedule or mtbf, docs/faults.md): when workers can
 * crash, the synchronizations run over GROUPS of live workers
 * (algorithms/group.h), as allreduce_sgd's rounds do; see "the group path"
 * below. A crash aborts the first synchronization not yet formed; the
 * survivors enter a collective over themselves [faults] sync_timeout after
 * they entered the aborted one (or after the crash), and the average (with
 * the buffers, the outer step, the batch statistics) is over who took part.
 * A rejoining worker is idle until the next formed average, which the rank
 * that formed it sends it (S bytes); it starts the next round from it with
 * a fresh optimizer state. slowmo's outer state (x0, u) is shared and
 * stays. An iteration is then one local step of every live worker. slowmo
 * with base = dpsgd follows the gossip driver's rules (gossip_group.c).
 * Without crashes nothing of this runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/drivers/gossip.h"
#include "algorithms/drivers/group.h"
#include "algorithms/drivers/local.h"

typedef enum mode { LOCAL, POST, ADAPTIVE, SLOWMO } mode;
typedef enum buffers { BUF_LOCAL, BUF_AVERAGE, BUF_RESET } buffers;
typedef struct lfaults lfaults;

typedef struct lsgd {
    algo_env *env;
    mode mode;
    int n;
    int64_t d;
    int H;               /* local steps per round (after the switch for post) */
    int H_cur;           /* local steps of the current round */
    buffers buf;
    double switch_epoch; /* post_local_sgd */
    /* adaptive */
    algo_batch_test test;
    double eta, theta, nu;
    int max_batch, test_samples;
    wl_batch_stats *stats; /* n */
    float *stats_ws;
    sim_coll *scoll;
    /* slowmo */
    algo_slowmo_params sp;
    float *x0, *u;       /* outer iterate and slow momentum (or BMUF's x_g and Delta) */
    void *base;          /* slowmo with base = dpsgd: its gossip driver, which runs it */
    /* state */
    algo_local_optim lo;     /* one optimizer state per worker */
    sim_coll *coll;
    algo_local_steps steps;
    int *since;          /* n: local steps since the last synchronization */
    int64_t *applied;    /* n: samples the worker has applied */
    float *avg, *avg_m, *avg_v;
    const float **ptrs;
    int first_done;      /* the round's mean is formed */
    int done_in_round;
    int sfirst, sdone;
    lfaults *f;          /* workers may crash ([faults]): the group path, else NULL */
} lsgd;

static void begin_step(lsgd *s, int i);

static double worker_lr(const lsgd *s, int i)
{
    const algo_env *env = s->env;
    return algo_lr_at(env->cfg, (double)(s->applied[i] * s->n) / (double)env->ds->train.n);
}

static void on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    lsgd *s = ctx;
    algo_env *env = s->env;
    int i = (int)arg;
    algo_worker *w = &env->w[i];
    algo_optim_step(s->lo.s[i], w->x, w->grad, worker_lr(s, i));
    s->applied[i] += w->grad_samples;
    int sync = ++s->since[i] >= s->H_cur;
    algo_local_steps_done(&s->steps, env, i, w->grad_samples, !sync);
    if (!sync) {
        begin_step(s, i);
        return;
    }
    algo_env_idle_begin(env, i);
    algo_env_coll_enter(env, s->coll, i, env->msg_bytes);
}

static void mean_of(lsgd *s, float *out, float *(*get)(const algo_optim_state *))
{
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = get(s->lo.s[i]);
    algo_mean(out, s->ptrs, s->n, s->d);
}

/* SlowMo's outer step (docs/algorithms.md 4) on avg: avg becomes the
 * model every worker restarts from. */
static void outer_step(lsgd *s)
{
    algo_slowmo_outer(&s->sp, s->x0, s->u, s->avg, s->d, algo_env_lr(s->env));
}

/* The round's first completion: every worker has entered, so every x_i is
 * its round's value. */
static void round_mean(lsgd *s)
{
    algo_env *env = s->env;
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = env->w[i].x;
    algo_mean(s->avg, s->ptrs, s->n, s->d);
    if (s->buf == BUF_AVERAGE) {
        if (algo_optim_m(s->lo.s[0]))
            mean_of(s, s->avg_m, algo_optim_m);
        if (algo_optim_v(s->lo.s[0]))
            mean_of(s, s->avg_v, algo_optim_v);
    }
    if (s->mode == SLOWMO)
        outer_step(s);
    algo_local_steps_flush(&s->steps, env, s->steps.step[0]);
    if (s->mode == POST)
        s->H_cur = algo_env_epoch(env) >= s->switch_epoch ? s->H : 1;
}

static void take_mean(lsgd *s, int i)
{
    float *m, *v;
    memcpy(s->env->w[i].x, s->avg, (size_t)s->d * sizeof(float));
    s->since[i] = 0;
    if (s->buf == BUF_AVERAGE) {
        if ((m = algo_optim_m(s->lo.s[i])))
            memcpy(m, s->avg_m, (size_t)s->d * sizeof(float));
        if ((v = algo_optim_v(s->lo.s[i])))
            memcpy(v, s->avg_v, (size_t)s->d * sizeof(float));
    } else if (s->buf == BUF_RESET) {
        algo_optim_reset(s->lo.s[i]);
    }
}

static void on_test_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    lsgd *s = ctx;
    algo_env_idle_begin(s->env, (int)arg);
    algo_env_coll_enter(s->env, s->scoll, (int)arg, 32.0);
}

/* Adaptive: worker i's statistics at xbar on its last local batch. */
static void batch_stats(lsgd *s, int i)
{
    algo_env *env = s->env;
    algo_worker *w = &env->w[i];
    int64_t b = algo_env_step_samples(env, i);
    if (b > s->test_samples)
        b = s->test_samples;
    wl_model_batch_stats(env->model, w->x, w->bx, w->by, b, &s->stats[i], s->stats_ws);
    algo_env_compute(env, i, (int)b, on_test_done, s, (uint64_t)i);
}

static void on_coll_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    lsgd *s = ctx;
    if (!s->first_done) {
        s->first_done = 1; /* from here on the model is avg (model()) */
        round_mean(s);
    }
    take_mean(s, rank);
    algo_env_idle_end(s->env, rank);
    if (++s->done_in_round == s->n) {
        s->done_in_round = 0;
        s->first_done = 0;
    }
    if (s->mode == ADAPTIVE)
        batch_stats(s, rank);
    else
        begin_step(s, rank);
}

/* Adaptive: the scalar all-reduce's first completion sets the batch. */
static void on_scoll_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    lsgd *s = ctx;
    algo_env *env = s->env;
    if (!s->sfirst) {
        s->sfirst = 1;
        wl_batch_stats m = {0};
        for (int i = 0; i < s->n; i++) {
            m.gnorm2 += s->stats[i].gnorm2;
            m.v_norm += s->stats[i].v_norm;
            m.v_ip += s->stats[i].v_ip;
            m.v_orth += s->stats[i].v_orth;
        }
        m.gnorm2 /= s->n;
        m.v_norm /= s->n;
        m.v_ip /= s->n;
        m.v_orth /= s->n;
        int b = env->w[0].batch;
        double prop = algo_batch_test_proposal(s->test, &m, s->eta, s->theta, s->nu);
        int next = algo_batch_test_next(b, prop, s->max_batch);
        if (next != b) {
            for (int i = 0; i < s->n; i++)
                algo_env_set_batch(env, i, next);
            algo_env_series(env, -1, "batch", next);
        }
    }
    algo_env_idle_end(env, rank);
    if (++s->sdone == s->n) {
        s->sdone = 0;
        s->sfirst = 0;
    }
    begin_step(s, rank);
}

static void begin_step(lsgd *s, int i)
{
    algo_env *env = s->env;
    algo_env_grad(env, i, env->w[i].x, env->w[i].grad);
    algo_env_compute(env, i, algo_env_step_samples(env, i), on_compute_done, s, (uint64_t)i);
}

/* ---- crashes ([faults], docs/faults.md): the group path ------------------
 *
 * The synchronizations are numbered collectives q (for adaptive_local_sgd
 * two per round: q even averages the parameters, q odd all-reduces the
 * batch statistics). Each runs over the group of live workers that owns q
 * (algorithms/group.h), with its own collective over the members' hosts.
 * Before entering collective q a member works: its H local steps (or, for
 * q odd, its batch statistics). A crash of worker c aborts the first
 * collective not yet formed (a, formed = its first rank has completed,
 * which needs every member to have entered): a group of the survivors takes
 * over from a; a survivor enters the new collective [faults] sync_timeout
 * after it entered a (after the crash, when it had entered before). If a is
 * the one after the collective being finished, that one finishes in its
 * old collective without c. The mean (and the averaged buffers, the outer
 * step, the statistics) is over the members (renormalized over who took
 * part); c's local steps are lost. A rejoining worker is idle until the
 * next formed average closes a round: the rank that formed it sends it the
 * average (S bytes) and it starts the next round from it with a fresh
 * optimizer state (its lr position is the sender's). Iterations: iteration
 * K completes when every live worker (joiners in flight included) has
 * completed its K-th local step; the step that ends with a synchronization
 * counts once the worker holds the average. */

enum { L_OFF = 0, L_COMPUTING, L_WAITING, L_ENTERED, L_JOINING };

struct lfaults {
    algo_groups groups;
    int64_t round;       /* the oldest collective not completed */
    int need;            /* completions it still counts */
    int done;            /* completions so far */
    int formed;          /* its first rank has completed */
    int64_t *wround;     /* per worker: the collective it works towards */
    int *wstat;          /* L_* */
    uint32_t *wgen;      /* per worker: incarnation of its events */
    uint32_t *tgen;      /* per worker: its pending timeout */
    int64_t *late_round; /* per worker: the collective whose entry waits the timeout */
    int *pending;        /* rejoined, joins at the next formed average */
    int *m;              /* n: scratch member list */
    sim_time timeout;
    /* iterations */
    int64_t *step;       /* per worker: local steps completed */
    int64_t reported;    /* iterations reported */
    int64_t *slot;       /* span: samples of the steps of each unreported index */
    int span;
    int64_t late;        /* samples of steps at an index already reported */
};

static int g_is_stats(const lsgd *s, int64_t q) { return s->mode == ADAPTIVE && (q & 1); }

static void g_on_done(sim_engine *eng, void *ctx, int rank);
static void g_on_sdone(sim_engine *eng, void *ctx, int rank);

static algo_group *g_add(lsgd *s, const int *members, int n, int64_t first)
{
    algo_group_colls c = {.kind = s->env->allreduce_kind, .done = g_on_done,
                          .aux_done = s->mode == ADAPTIVE ? g_on_sdone : NULL, .owner = s,
                          .who = s->env->cfg->algorithm};
    algo_group *g = algo_groups_add(&s->f->groups, s->env, members, n, first, &c);
    if (!g && !s->env->error.code)
        algo_env_fail(s->env, SIM_ENOMEM, "%s: out of memory for a group", s->env->cfg->algorithm);
    return g;
}

static int g_live(const lfaults *f, int i) { return f->wstat[i] != L_OFF && !f->pending[i]; }

/* Reports the iterations every live worker has completed. */
static void g_count(lsgd *s)
{
    lfaults *f = s->f;
    int64_t m = INT64_MAX;
    for (int i = 0; i < s->n; i++)
        if (g_live(f, i) && f->step[i] < m)
            m = f->step[i];
    while (m != INT64_MAX && f->reported < m) {
        int k = (int)(++f->reported % f->span);
        int64_t samples = f->slot[k] + f->late;
        f->slot[k] = 0;
        f->late = 0;
        algo_env_iteration(s->env, samples);
    }
}

/* Worker i completed a local step of `samples` samples. */
static void g_step_done(lsgd *s, int i, int64_t samples)
{
    lfaults *f = s->f;
    int64_t k = ++f->step[i];
    if (k <= f->reported)
        f->late += samples;
    else
        f->slot[k % f->span] += samples;
}

static void g_begin_step(lsgd *s, int i);

static void g_on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

static void g_enter(lsgd *s, int w)
{
    lfaults *f = s->f;
    algo_group *g = algo_groups_for(&f->groups, f->wround[w]);
    int rank = g ? g->rank_of[w] : -1;
    if (rank < 0) {
        algo_env_fail(s->env, SIM_EINTERNAL, "%s: worker %d is in no group of collective %lld",
                      s->env->cfg->algorithm, w, (long long)f->wround[w]);
        return;
    }
    f->wstat[w] = L_ENTERED;
    if (g_is_stats(s, f->wround[w]))
        algo_env_coll_enter(s->env, g->aux, rank, 32.0);
    else
        algo_env_coll_enter(s->env, g->coll, rank, s->env->msg_bytes);
}

static void g_on_timeout(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    lsgd *s = ctx;
    lfaults *f = s->f;
    int w = algo_group_arg_w(arg);
    if (f->tgen[w] != algo_group_arg_gen(arg) || f->wstat[w] != L_WAITING)
        return;
    f->late_round[w] = -1;
    g_enter(s, w);
}

static void g_wait(lsgd *s, int w)
{
    lfaults *f = s->f;
    f->wstat[w] = L_WAITING;
    f->tgen[w]++;
    if (!sim_engine_schedule(s->env->eng, f->timeout, g_on_timeout, s,
                             algo_group_arg(w, f->tgen[w]), NULL, NULL))
        algo_env_fail(s->env, SIM_ENOMEM, "%s: cannot schedule a timeout", s->env->cfg->algorithm);
}

/* Worker w's work before its collective is done: it enters it, or waits
 * out the timeout when the collective was aborted. */
static void g_work_done(lsgd *s, int w)
{
    lfaults *f = s->f;
    algo_env_idle_begin(s->env, w);
    if (f->late_round[w] == f->wround[w])
        g_wait(s, w);
    else
        g_enter(s, w);
}

/* Counts the collective when every completion it needs is in. */
static void g_round_check(lsgd *s)
{
    lfaults *f = s->f;
    if (f->need <= 0 || f->done < f->need)
        return;
    f->round++;
    f->done = 0;
    f->formed = 0;
    algo_group *g = algo_groups_for(&f->groups, f->round);
    f->need = g ? g->n : 0;
}

static void g_begin_round(lsgd *s, int w, int64_t q)
{
    lfaults *f = s->f;
    f->wround[w] = q;
    f->wstat[w] = L_COMPUTING;
    s->since[w] = 0;
    g_begin_step(s, w);
}

static void g_on_join_model(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst,
                            double bytes)
{
    (void)eng;
    (void)src;
    (void)dst;
    (void)bytes;
    lsgd *s = ctx;
    lfaults *f = s->f;
    int w = algo_group_arg_w(arg);
    if (f->wgen[w] != algo_group_arg_gen(arg) || f->wstat[w] != L_JOINING)
        return;
    algo_env_idle_end(s->env, w);
    g_begin_round(s, w, f->wround[w]);
}

/* The pending joiners join from the next round: w, which formed the
 * average that closes the current one (and holds it), sends it to them. */
static void g_joiners(lsgd *s, int w)
{
    algo_env *env = s->env;
    lfaults *f = s->f;
    algo_group *next = algo_groups_for(&f->groups, f->round + 1);
    int k = 0;
    k = algo_group_members_joining(next, f->pending, env, f->m);
    if (!k)
        return;
    if (!g_add(s, f->m, k, f->round + 1))
        return;
    for (int i = 0; i < s->n; i++) {
        if (!f->pending[i] || env->w[i].down)
            continue;
        f->pending[i] = 0;
        f->wround[i] = f->round + 1;
        f->wstat[i] = L_JOINING;
        f->late_round[i] = -1;
        f->step[i] = f->step[w];
        s->applied[i] = s->applied[w];
        memcpy(env->w[i].x, s->avg, (size_t)s->d * sizeof(float));
        algo_optim_reset(s->lo.s[i]);
        algo_env_send(env, w, i, env->msg_bytes, g_on_join_model, s,
                      algo_group_arg(i, f->wgen[i]));
    }
}

/* The mean over g's members of a vector of theirs (worker-id order). */
static void g_mean_of(lsgd *s, const algo_group *g, float *out,
                      float *(*get)(const algo_optim_state *))
{
    for (int r = 0; r < g->n; r++)
        s->ptrs[r] = get ? get(s->lo.s[g->members[r]]) : s->env->w[g->members[r]].x;
    algo_mean(out, s->ptrs, g->n, s->d);
}

/* The round's average over the members of g (every one has entered). */
static void g_form(lsgd *s, const algo_group *g)
{
    g_mean_of(s, g, s->avg, NULL);
    if (s->buf == BUF_AVERAGE) {
        if (algo_optim_m(s->lo.s[0]))
            g_mean_of(s, g, s->avg_m, algo_optim_m);
        if (algo_optim_v(s->lo.s[0]))
            g_mean_of(s, g, s->avg_v, algo_optim_v);
    }
    if (s->mode == SLOWMO)
        outer_step(s);
    if (s->mode == POST)
        s->H_cur = algo_env_epoch(s->env) >= s->switch_epoch ? s->H : 1;
}

/* Adaptive: the mean of the members' statistics sets every worker's batch. */
static void g_sform(lsgd *s, const algo_group *g)
{
    algo_env *env = s->env;
    wl_batch_stats m = {0};
    for (int r = 0; r < g->n; r++) {
        const wl_batch_stats *b = &s->stats[g->members[r]];
        m.gnorm2 += b->gnorm2;
        m.v_norm += b->v_norm;
        m.v_ip += b->v_ip;
        m.v_orth += b->v_orth;
    }
    m.gnorm2 /= g->n;
    m.v_norm /= g->n;
    m.v_ip /= g->n;
    m.v_orth /= g->n;
    int b = env->w[0].batch;
    double prop = algo_batch_test_proposal(s->test, &m, s->eta, s->theta, s->nu);
    int next = algo_batch_test_next(b, prop, s->max_batch);
    if (next != b) {
        for (int i = 0; i < s->n; i++)
            algo_env_set_batch(env, i, next);
        algo_env_series(env, -1, "batch", next);
    }
}

static void g_on_test_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    lsgd *s = ctx;
    lfaults *f = s->f;
    int w = algo_group_arg_w(arg);
    if (f->wgen[w] != algo_group_arg_gen(arg) || f->wstat[w] != L_COMPUTING)
        return;
    g_work_done(s, w);
}

/* Rank's part of a collective of group g is over (stats: the statistics'
 * all-reduce): the worker, or -1 when the event is stale (a crashed worker,
 * an aborted collective). */
static int g_done_worker(lsgd *s, algo_group *g, int rank, int stats)
{
    lfaults *f = s->f;
    int w = g->members[rank];
    int64_t q = f->wround[w];
    if (f->wstat[w] != L_ENTERED || q != f->round || algo_groups_for(&f->groups, q) != g ||
        g_is_stats(s, q) != stats)
        return -1;
    return w;
}

static void g_on_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    algo_group *g = ctx;
    lsgd *s = g->owner;
    lfaults *f = s->f;
    int w = g_done_worker(s, g, rank, 0);
    if (w < 0)
        return;
    int64_t q = f->wround[w];
    int first = !f->formed;
    if (first) {
        g_form(s, g);
        f->formed = 1;
    }
    take_mean(s, w);
    g_step_done(s, w, s->env->w[w].grad_samples);
    if (first && s->mode != ADAPTIVE)
        g_joiners(s, w);
    algo_env_idle_end(s->env, w);
    f->done++;
    if (s->mode == ADAPTIVE) {
        f->wround[w] = q + 1;
        f->wstat[w] = L_COMPUTING;
        algo_worker *wk = &s->env->w[w];
        int64_t b = algo_env_step_samples(s->env, w);
        if (b > s->test_samples)
            b = s->test_samples;
        wl_model_batch_stats(s->env->model, wk->x, wk->bx, wk->by, b, &s->stats[w], s->stats_ws);
        algo_env_compute(s->env, w, (int)b, g_on_test_done, s, algo_group_arg(w, f->wgen[w]));
    } else {
        g_begin_round(s, w, q + 1);
    }
    g_round_check(s);
    g_count(s);
}

static void g_on_sdone(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    algo_group *g = ctx;
    lsgd *s = g->owner;
    lfaults *f = s->f;
    int w = g_done_worker(s, g, rank, 1);
    if (w < 0)
        return;
    if (!f->formed) {
        g_sform(s, g);
        f->formed = 1;
        g_joiners(s, w);
    }
    algo_env_idle_end(s->env, w);
    f->done++;
    g_begin_round(s, w, f->wround[w] + 1);
    g_round_check(s);
}

static void g_on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    lsgd *s = ctx;
    lfaults *f = s->f;
    int i = algo_group_arg_w(arg);
    if (f->wgen[i] != algo_group_arg_gen(arg) || f->wstat[i] != L_COMPUTING)
        return;
    algo_worker *w = &s->env->w[i];
    algo_optim_step(s->lo.s[i], w->x, w->grad, worker_lr(s, i));
    s->applied[i] += w->grad_samples;
    if (++s->since[i] < s->H_cur) {
        g_step_done(s, i, w->grad_samples);
        g_begin_step(s, i);
        g_count(s);
        return;
    }
    g_work_done(s, i); /* the sync step counts once it holds the average */
}

static void g_begin_step(lsgd *s, int i)
{
    algo_env *env = s->env;
    algo_env_grad(env, i, env->w[i].x, env->w[i].grad);
    algo_env_compute(env, i, algo_env_step_samples(env, i), g_on_compute_done, s,
                     algo_group_arg(i, s->f->wgen[i]));
}

/* Worker c crashed: see the top of this section. */
static void g_crash(lsgd *s, int c)
{
    algo_env *env = s->env;
    lfaults *f = s->f;
    int64_t a = f->formed ? f->round + 1 : f->round;
    if (f->formed && f->wround[c] == f->round && f->wstat[c] == L_ENTERED)
        f->need--; /* the finishing collective does not wait for it */
    f->wgen[c]++;
    f->tgen[c]++;
    f->wstat[c] = L_OFF;
    f->pending[c] = 0;
    algo_env_idle_end(env, c);
    algo_group *g = algo_groups_for(&f->groups, a);
    if (g && g->rank_of[c] >= 0) {
        int k = 0;
        k = algo_group_members_except(g, c, f->m);
        algo_group *ng = g_add(s, f->m, k, a);
        if (!ng)
            return;
        if (a == f->round)
            f->need = ng->n; /* nobody has completed collective a */
        for (int r = 0; r < ng->n; r++) {
            int w = ng->members[r];
            f->late_round[w] = a;
            if (f->wround[w] == a && (f->wstat[w] == L_ENTERED || f->wstat[w] == L_WAITING))
                g_wait(s, w);
        }
    }
    g_round_check(s);
    g_count(s);
}

/* Worker j rejoined: it waits (idle) for the next formed average; when no
 * worker is live it starts a group of its own at once from the last
 * average, at the next round. */
static void g_rejoin(lsgd *s, int j)
{
    lfaults *f = s->f;
    f->wgen[j]++;
    f->pending[j] = 1;
    algo_env_idle_begin(s->env, j);
    for (int i = 0; i < s->n; i++)
        if (i != j && g_live(f, i))
            return;
    int64_t q = f->round + (g_is_stats(s, f->round) ? 1 : 0);
    if (!g_add(s, &j, 1, q))
        return;
    f->round = q;
    f->pending[j] = 0;
    f->done = 0;
    f->formed = 0;
    f->need = 1;
    f->late_round[j] = -1;
    f->step[j] = f->reported;
    memcpy(s->env->w[j].x, s->avg, (size_t)s->d * sizeof(float));
    algo_optim_reset(s->lo.s[j]);
    algo_env_idle_end(s->env, j);
    g_begin_round(s, j, q);
}

static void g_on_fault(void *p, const algo_fault *ev)
{
    lsgd *s = p;
    if (s->base) { /* base = dpsgd: the gossip driver's rules */
        algo_gossip_fault(s->base, ev);
        return;
    }
    if (!s->f)
        return;
    if (ev->kind == ALGO_FAULT_CRASH)
        g_crash(s, ev->target);
    else if (ev->kind == ALGO_FAULT_REJOIN)
        g_rejoin(s, ev->target);
}

static void g_free(lfaults *f)
{
    if (!f)
        return;
    algo_groups_release(&f->groups);
    free(f->wround);
    free(f->wstat);
    free(f->wgen);
    free(f->tgen);
    free(f->late_round);
    free(f->pending);
    free(f->m);
    free(f->step);
    free(f->slot);
    free(f);
}

/* The group path's state: one group of every worker from collective 0;
 * avg starts as the mean of the initial models (a lone rejoiner's model
 * when every worker crashed before the first average). */
static int g_create(lsgd *s, sim_err *err)
{
    algo_env *env = s->env;
    const sim_config *cfg = env->cfg;
    lfaults *f = calloc(1, sizeof *f);
    if (!f)
        return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", cfg->algorithm);
    s->f = f;
    int rc = sim_config_get_time(cfg, "faults", "sync_timeout", &f->timeout, err);
    if (rc < 0)
        return rc;
    if (f->timeout < 0)
        return sim_config_error(cfg, "faults", "sync_timeout", SIM_ECONFIG, err,
                                "must not be negative");
    size_t n = (size_t)s->n;
    f->span = 2 * s->H + 4;
    f->wround = calloc(n, sizeof *f->wround);
    f->wstat = calloc(n, sizeof *f->wstat);
    f->wgen = calloc(n, sizeof *f->wgen);
    f->tgen = calloc(n, sizeof *f->tgen);
    f->late_round = malloc(n * sizeof *f->late_round);
    f->pending = calloc(n, sizeof *f->pending);
    f->m = malloc(n * sizeof *f->m);
    f->step = calloc(n, sizeof *f->step);
    f->slot = calloc((size_t)f->span, sizeof *f->slot);
    if (!f->wround || !f->wstat || !f->wgen || !f->tgen || !f->late_round || !f->pending ||
        !f->m || !f->step || !f->slot)
        return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", cfg->algorithm);
    for (int i = 0; i < s->n; i++) {
        f->late_round[i] = -1;
        f->m[i] = i;
    }
    if (!g_add(s, f->m, s->n, 0))
        return env->error.code ? sim_err_set(err, env->error.code, "%s", env->error.msg)
                               : sim_err_set(err, SIM_ENOMEM, "%s: out of memory",
                                             cfg->algorithm);
    f->need = s->n;
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = env->w[i].x;
    algo_mean(s->avg, s->ptrs, s->n, s->d);
    return 0;
}

/* The evaluated model under crashes: the average while the current
 * collective's members take it, else the mean of the live workers. */
static const float *g_model(lsgd *s, float *scratch)
{
    lfaults *f = s->f;
    if (f->formed || g_is_stats(s, f->round))
        return s->avg;
    int k = 0;
    for (int i = 0; i < s->n; i++)
        if (g_live(f, i))
            s->ptrs[k++] = s->env->w[i].x;
    if (k == 0)
        return s->avg;
    algo_mean(scratch, s->ptrs, k, s->d);
    return scratch;
}

static void destroy(void *p)
{
    lsgd *s = p;
    if (!s)
        return;
    algo_gossip_destroy(s->base);
    algo_local_optim_release(&s->lo);
    sim_coll_destroy(s->coll);
    sim_coll_destroy(s->scoll);
    algo_local_steps_release(&s->steps);
    free(s->since);
    free(s->applied);
    free(s->avg);
    free(s->avg_m);
    free(s->avg_v);
    free(s->ptrs);
    free(s->stats);
    free(s->stats_ws);
    free(s->x0);
    free(s->u);
    g_free(s->f);
    free(s);
}

static int choice(const sim_config *c, const char *key, const char *const *words)
{
    const char *v = sim_config_get_string(c, "algorithm", key);
    for (int k = 0; v && words[k]; k++)
        if (strcmp(v, words[k]) == 0)
            return k;
    return 0;
}

static int read_keys(lsgd *s, const sim_config *c, sim_err *err)
{
    int64_t H;
    int rc = sim_config_get_int(c, "algorithm", "local_steps", &H, err);
    if (rc < 0)
        return rc;
    if (H < 1 || H > 1000000)
        return sim_config_error(c, "algorithm", "local_steps", SIM_ECONFIG, err,
                                "must be in [1, 1000000], got %lld", (long long)H);
    s->H = s->H_cur = (int)H;
    static const char *const bufw[] = {"local", "average", "reset", NULL};
    s->buf = (buffers)choice(c, "buffers", bufw);
    if (s->mode == POST) {
        if ((rc = sim_config_get_double(c, "algorithm", "switch_epoch", &s->switch_epoch, err)))
            return rc;
        if (s->switch_epoch < 0) {
            if (c->n_lr_milestones == 0)
                return sim_config_error(c, "algorithm", "switch_epoch", SIM_ECONFIG, err,
                                        "is not set and there is no lr milestone to default to");
            s->switch_epoch = c->lr_milestones[0];
        }
        s->H_cur = s->switch_epoch <= 0 ? s->H : 1;
    }
    if (s->mode == ADAPTIVE) {
        static const char *const tw[] = {"norm", "inner_product", "augmented", NULL};
        s->test = (algo_batch_test)choice(c, "batch_test", tw);
        int64_t mb, ts;
        if ((rc = sim_config_get_double(c, "algorithm", "eta", &s->eta, err)) ||
            (rc = sim_config_get_double(c, "algorithm", "theta", &s->theta, err)) ||
            (rc = sim_config_get_double(c, "algorithm", "nu", &s->nu, err)) ||
            (rc = sim_config_get_int(c, "algorithm", "max_batch", &mb, err)) ||
            (rc = sim_config_get_int(c, "algorithm", "test_samples", &ts, err)))
            return rc;
        if (!(s->eta > 0))
            return sim_config_error(c, "algorithm", "eta", SIM_ECONFIG, err, "must be > 0");
        if (!(s->theta > 0))
            return sim_config_error(c, "algorithm", "theta", SIM_ECONFIG, err, "must be > 0");
        if (!(s->nu > 0))
            return sim_config_error(c, "algorithm", "nu", SIM_ECONFIG, err, "must be > 0");
        if (mb < 0 || mb > 100000000)
            return sim_config_error(c, "algorithm", "max_batch", SIM_ECONFIG, err,
                                    "must be in [0, 1e8], got %lld", (long long)mb);
        if (ts < 2 || ts > 1000000)
            return sim_config_error(c, "algorithm", "test_samples", SIM_ECONFIG, err,
                                    "must be in [2, 1000000], got %lld", (long long)ts);
        if (c->batch == 0)
            return sim_config_error(c, "algorithm", "batch", SIM_ECONFIG, err,
                                    "adaptive_local_sgd needs a batch size, not the full shard");
        s->max_batch = (int)mb;
        s->test_samples = (int)ts;
    }
    if (s->mode == SLOWMO) {
        algo_slowmo_params *sp = &s->sp;
        if ((rc = sim_config_get_double(c, "algorithm", "slow_momentum", &sp->beta, err)) ||
            (rc = sim_config_get_double(c, "algorithm", "slow_lr", &sp->alpha, err)))
            return rc;
        if (!(sp->beta >= 0 && sp->beta < 1))
            return sim_config_error(c, "algorithm", "slow_momentum", SIM_ECONFIG, err,
                                    "must be in [0, 1), got %g", sp->beta);
        if (!(sp->alpha > 0) || !isfinite(sp->alpha))
            return sim_config_error(c, "algorithm", "slow_lr", SIM_ECONFIG, err,
                                    "must be > 0, got %g", sp->alpha);
        static const char *const bw[] = {"none", "classic", "nesterov", NULL};
        sp->bmuf = (algo_bmuf)choice(c, "bmuf", bw);
        sp->tau = s->H;
        sp->buffers = (int)s->buf;
    }
    return 0;
}

static int create_mode(algo_env *env, void **out, sim_err *err, mode m)
{
    lsgd *s = calloc(1, sizeof *s);
    if (!s)
        return sim_err_set(err, SIM_ENOMEM, "local_sgd: out of memory");
    s->env = env;
    s->mode = m;
    s->n = env->n;
    s->d = env->d;
    int rc = read_keys(s, env->cfg, err);
    if (rc < 0) {
        destroy(s);
        return rc;
    }
    const char *base = m == SLOWMO ? sim_config_get_string(env->cfg, "algorithm", "base") : NULL;
    if (base && strcmp(base, "dpsgd") == 0) {
        if ((rc = algo_slowmo_dpsgd_create(env, &s->sp, &s->base, err)) < 0) {
            destroy(s);
            return rc;
        }
        *out = s;
        return 0;
    }
    const size_t n = (size_t)s->n, bytes = (size_t)s->d * sizeof(float);
    s->since = calloc(n, sizeof *s->since);
    s->applied = calloc(n, sizeof *s->applied);
    s->avg = malloc(bytes);
    s->avg_m = malloc(bytes);
    s->avg_v = malloc(bytes);
    s->ptrs = malloc(n * sizeof *s->ptrs);
    if (!s->since || !s->applied || !s->avg || !s->avg_m || !s->avg_v || !s->ptrs ||
        algo_local_steps_init(&s->steps, s->n, s->H + 2) < 0) {
        destroy(s);
        return sim_err_set(err, SIM_ENOMEM, "local_sgd: out of memory");
    }
    if ((rc = algo_local_optim_init(&s->lo, env, 0, err)) < 0) {
        destroy(s);
        return rc;
    }
    if (m == SLOWMO) {
        s->x0 = malloc(bytes);
        s->u = calloc((size_t)s->d, sizeof(float));
        if (!s->x0 || !s->u) {
            destroy(s);
            return sim_err_set(err, SIM_ENOMEM, "slowmo: out of memory");
        }
        for (int i = 0; i < s->n; i++)
            s->ptrs[i] = env->w[i].x;
        algo_mean(s->x0, s->ptrs, s->n, s->d);
    }
    if (m == ADAPTIVE) {
        if (env->ds->sparse) { /* the batch statistics read dense rows (w->bx) */
            destroy(s);
            return sim_config_error(env->cfg, "workload", "sparse", SIM_ECONFIG, err,
                                    "adaptive_local_sgd needs dense rows for its batch "
                                    "statistics: set [workload] sparse = off");
        }
        s->stats = calloc(n, sizeof *s->stats);
        s->stats_ws = malloc(wl_model_stats_workspace_floats(env->model, s->test_samples) *
                             sizeof(float));
        if (!s->stats || !s->stats_ws) {
            destroy(s);
            return sim_err_set(err, SIM_ENOMEM, "adaptive_local_sgd: out of memory");
        }
        if (!env->crashes)
            s->scoll = algo_env_coll(env, env->allreduce_kind, on_scoll_done, s, err);
        if (!env->crashes && !s->scoll) {
            destroy(s);
            return err ? err->code : SIM_EINTERNAL;
        }
    }
    if (env->crashes) {
        if ((rc = g_create(s, err)) < 0) {
            destroy(s);
            return rc;
        }
        *out = s;
        return 0;
    }
    s->coll = algo_env_coll(env, env->allreduce_kind, on_coll_done, s, err);
    if (!s->coll) {
        destroy(s);
        return err ? err->code : SIM_EINTERNAL;
    }
    *out = s;
    return 0;
}

static int start(void *p, sim_err *err)
{
    lsgd *s = p;
    if (s->base)
        return algo_gossip_start(s->base, err);
    if (s->mode == ADAPTIVE)
        algo_env_series(s->env, -1, "batch", s->env->w[0].batch);
    for (int i = 0; i < s->n; i++) {
        if (s->f)
            g_begin_round(s, i, 0);
        else
            begin_step(s, i);
    }
    return 0;
}

/* While a round's ranks take the mean, every worker logically holds it. */
static const float *model(void *p, float *scratch)
{
    lsgd *s = p;
    if (s->base)
        return algo_gossip_model(s->base, scratch);
    if (s->f)
        return g_model(s, scratch);
    if (s->first_done)
        return s->avg;
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = s->env->w[i].x;
    algo_mean(scratch, s->ptrs, s->n, s->d);
    return scratch;
}

static void worker_models(void *p, const float **xs)
{
    lsgd *s = p;
    if (s->base) {
        algo_gossip_worker_models(s->base, xs);
        return;
    }
    if (s->f) {
        int avg = s->f->formed || g_is_stats(s, s->f->round);
        for (int i = 0; i < s->n; i++)
            xs[i] = avg && g_live(s->f, i) ? s->avg : s->env->w[i].x;
        return;
    }
    for (int i = 0; i < s->n; i++)
        xs[i] = s->first_done ? s->avg : s->env->w[i].x;
}

static int needs_server(const sim_config *cfg) { return cfg->collective == SIM_COLL_PS; }

static int create_local(algo_env *e, void **o, sim_err *r) { return create_mode(e, o, r, LOCAL); }
static int create_post(algo_env *e, void **o, sim_err *r) { return create_mode(e, o, r, POST); }
static int create_adaptive(algo_env *e, void **o, sim_err *r)
{
    return create_mode(e, o, r, ADAPTIVE);
}
static int create_slowmo(algo_env *e, void **o, sim_err *r) { return create_mode(e, o, r, SLOWMO); }

#define KEY_BUFFERS                                                                            \
    {"algorithm", "buffers", "local", SIM_KEY_CHOICE, "local|average|reset",                   \
     "optimizer buffers at a synchronization: kept local, averaged like x, or reset to 0"}

static const sim_key local_keys[] = {
    {"algorithm", "local_steps", "4", SIM_KEY_INT, NULL,
     "H: local steps between two blocking averages of the parameters (>= 1)"},
    KEY_BUFFERS,
    {0},
};

static const sim_key post_keys[] = {
    {"algorithm", "local_steps", "16", SIM_KEY_INT, NULL,
     "H after the switch: local steps between two averages (>= 1)"},
    {"algorithm", "switch_epoch", "-1", SIM_KEY_DOUBLE, NULL,
     "epoch from which local_steps applies (synchronous SGD before); < 0: the first lr milestone"},
    KEY_BUFFERS,
    {0},
};

static const sim_key adaptive_keys[] = {
    {"algorithm", "local_steps", "4", SIM_KEY_INT, NULL,
     "H: local steps between two averages (>= 1)"},
    KEY_BUFFERS,
    {"algorithm", "batch_test", "norm", SIM_KEY_CHOICE, "norm|inner_product|augmented",
     "variance test that grows the local batch at each synchronization"},
    {"algorithm", "eta", "0.1", SIM_KEY_DOUBLE, NULL, "norm test constant (> 0)"},
    {"algorithm", "theta", "0.5", SIM_KEY_DOUBLE, NULL, "inner-product test constant (> 0)"},
    {"algorithm", "nu", "1", SIM_KEY_DOUBLE, NULL, "orthogonality test constant (> 0)"},
    {"algorithm", "max_batch", "4096", SIM_KEY_INT, NULL,
     "largest local batch the test may set (0 = no cap)"},
    {"algorithm", "test_samples", "64", SIM_KEY_INT, NULL,
     "per-sample gradients per worker and test (at most the batch; >= 2)"},
    {0},
};

static const sim_key slowmo_keys[] = {
    {"algorithm", "local_steps", "12", SIM_KEY_INT, NULL,
     "tau: base steps per outer iteration (>= 1)"},
    KEY_BUFFERS,
    {"algorithm", "slow_momentum", "0.5", SIM_KEY_DOUBLE, NULL,
     "beta: slow (outer) momentum, or BMUF's block momentum eta, in [0, 1)"},
    {"algorithm", "slow_lr", "1", SIM_KEY_DOUBLE, NULL,
     "alpha: slow learning rate, or BMUF's block learning rate zeta (> 0)"},
    {"algorithm", "bmuf", "none", SIM_KEY_CHOICE, "none|classic|nesterov",
     "none: SlowMo's update in gradient units; classic or nesterov: BMUF block momentum"},
    {"algorithm", "base", "local_sgd", SIM_KEY_CHOICE, "local_sgd|dpsgd",
     "base of the inner steps: local optimizer steps, or D-PSGD steps on the [topology] graph"},
    {"algorithm", "form", "awc", SIM_KEY_CHOICE, "atc|awc",
     "base = dpsgd: awc x <- Wx - lr d (exchange overlaps the gradient), atc x <- W(x - lr d)"},
    {"algorithm", "gossip_steps", "1", SIM_KEY_INT, NULL,
     "base = dpsgd: gossip steps q per base step (each a neighbour exchange of S bytes)"},
    {0},
};

#define LOCAL_VT(NAME, SUMMARY, REF, KEYS, CREATE, GRAPH)                                       \
    {                                                                                          \
        .name = NAME, .summary = SUMMARY, .reference = REF, .keys = KEYS, .async = 0,          \
        .uses_graph = GRAPH, .supports_compression = 0, .needs_server = needs_server,          \
        .create = CREATE, .destroy = destroy, .start = start, .model = model,                  \
        .worker_models = worker_models, .fault = g_on_fault,                                   \
    }

const algo_vt algo_local_sgd =
    LOCAL_VT("local_sgd", "Local SGD: H local steps, then a blocking average of the parameters",
             "1.5", local_keys, create_local, 0);
const algo_vt algo_post_local_sgd =
    LOCAL_VT("post_local_sgd", "synchronous SGD until switch_epoch, then Local SGD", "1.5",
             post_keys, create_post, 0);
const algo_vt algo_adaptive_local_sgd =
    LOCAL_VT("adaptive_local_sgd",
             "Local SGD whose local batch grows by a variance test at each synchronization", "2",
             adaptive_keys, create_adaptive, 0);
const algo_vt algo_slowmo =
    LOCAL_VT("slowmo", "SlowMo: Local SGD or D-PSGD rounds, then an outer slow momentum (or BMUF)",
             "4", slowmo_keys, create_slowmo, 1);
