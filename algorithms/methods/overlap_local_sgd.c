/* overlap_local_sgd: Overlap-Local-SGD (docs/algorithms.md 8). Workers
 * take local steps (their own optimizer state, lr at their own point of
 * training, as local_sgd). After every tau local steps worker i
 * synchronizes:
 *   1. it waits for the all-reduce it started at its previous sync (the
 *      only point where it can block); its result is the anchor z (x^0
 *      before the first);
 *   2. pull: x_i <- (1 - alpha) x_i + alpha z;
 *   3. anchor momentum (gmf > 0): v_i <- gmf v_i + (z - x_i)/lr (v_i =
 *      (z - x_i)/lr at the first sync), buf_i = z - lr v_i; gmf = 0:
 *      buf_i = x_i;
 *   4. it starts a NON-blocking all-reduce of buf_i (S bytes) and goes on
 *      computing; the mean of the buf_i (worker-id order, formed at the
 *      round's first completion, when all have entered) is the next z.
 * One iteration = one local step of every worker, reported when its last
 * worker completes it. The evaluated model is the mean of the x_i.
 *
 * Crashes ([faults] schedule or mtbf, docs/faults.md): the all-reduces run
 * over GROUPS of live workers (algorithms/group.h); see "the group path"
 * below. Without crashes nothing of it runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/drivers/gossip.h"
#include "algorithms/drivers/group.h"
#include "algorithms/drivers/local.h"

typedef struct ofaults ofaults;

typedef struct overlap {
    algo_env *env;
    int n;
    int64_t d;
    int tau;
    double alpha, gmf;
    algo_local_optim lo;     /* one optimizer state per worker */
    sim_coll *coll;
    algo_local_steps steps;
    int *since;        /* n: local steps since the last sync */
    int64_t *applied;  /* n: samples applied */
    int64_t *started;  /* n: all-reduces the worker has started */
    int64_t *finished; /* n: of those, completed for the worker */
    int *waiting;      /* n: blocked at a sync */
    float *z;          /* anchor */
    float *buf;        /* n x d */
    float *v;          /* n x d, gmf > 0 */
    const float **ptrs;
    int first_done, done_in_round;
    ofaults *f;        /* workers may crash ([faults]): the group path, else NULL */
} overlap;

static void begin_step(overlap *s, int i);

static double worker_lr(const overlap *s, int i)
{
    const algo_env *env = s->env;
    return algo_lr_at(env->cfg, (double)(s->applied[i] * s->n) / (double)env->ds->train.n);
}

/* Steps 2-3 of the sync and buf_i; z is the result of the previous
 * all-reduce. */
static void sync_buf(overlap *s, int i)
{
    float *x = s->env->w[i].x, *buf = s->buf + (int64_t)i * s->d;
    const float a = (float)s->alpha, b = 1.0f - a;
    if (s->alpha != 0)
        for (int64_t j = 0; j < s->d; j++)
            x[j] = b * x[j] + a * s->z[j];
    if (s->gmf > 0) {
        const double lr = worker_lr(s, i);
        float *v = s->v + (int64_t)i * s->d;
        const double g = s->started[i] == 0 ? 0.0 : s->gmf;
        for (int64_t j = 0; j < s->d; j++) {
            double vj = g * v[j] + ((double)s->z[j] - (double)x[j]) / lr;
            v[j] = (float)vj;
            buf[j] = (float)((double)s->z[j] - lr * vj);
        }
    } else {
        memcpy(buf, x, (size_t)s->d * sizeof(float));
    }
}

/* Steps 2-4 of the sync. */
static void sync(overlap *s, int i)
{
    algo_env *env = s->env;
    sync_buf(s, i);
    s->since[i] = 0;
    s->started[i]++;
    algo_env_coll_enter(env, s->coll, i, env->msg_bytes);
    begin_step(s, i);
}

static void on_coll_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    overlap *s = ctx;
    if (!s->first_done) {
        for (int i = 0; i < s->n; i++)
            s->ptrs[i] = s->buf + (int64_t)i * s->d;
        algo_mean(s->z, s->ptrs, s->n, s->d);
        s->first_done = 1;
    }
    if (++s->done_in_round == s->n) {
        s->done_in_round = 0;
        s->first_done = 0;
    }
    s->finished[rank]++;
    if (s->waiting[rank]) {
        s->waiting[rank] = 0;
        algo_env_idle_end(s->env, rank);
        sync(s, rank);
    }
}

static void on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    overlap *s = ctx;
    algo_env *env = s->env;
    int i = (int)arg;
    algo_worker *w = &env->w[i];
    algo_optim_step(s->lo.s[i], w->x, w->grad, worker_lr(s, i));
    s->applied[i] += w->grad_samples;
    algo_local_steps_done(&s->steps, env, i, w->grad_samples, 1);
    if (++s->since[i] < s->tau) {
        begin_step(s, i);
        return;
    }
    if (s->finished[i] < s->started[i]) {
        s->waiting[i] = 1;
        algo_env_idle_begin(env, i);
        return;
    }
    sync(s, i);
}

static void begin_step(overlap *s, int i)
{
    algo_env *env = s->env;
    algo_env_grad(env, i, env->w[i].x, env->w[i].grad);
    algo_env_compute(env, i, algo_env_step_samples(env, i), on_compute_done, s, (uint64_t)i);
}

/* ---- crashes ([faults], docs/faults.md): the group path ------------------
 *
 * The all-reduces are numbered q = 0, 1, ...: worker i enters all-reduce q
 * at its sync q (after its (q+1) tau-th local step) and needs its result
 * (the anchor z_q) at its sync q + 1, where it blocks (idle) until its part
 * of all-reduce q has completed. Each all-reduce runs over the group of
 * live workers that owns q (algorithms/group.h), with its own collective
 * over the members' hosts. Formed: its first rank has completed (every
 * member has entered): z_q is the mean of the members' buf_i.
 *
 * A crash of worker c aborts the first all-reduce not yet formed (a): a
 * group of the survivors takes over from a. A survivor that had entered a
 * re-enters it in the new collective sync_timeout after the crash; one
 * that had not enters it sync_timeout after its sync a. Meanwhile it goes
 * on with its local steps (the all-reduce is non-blocking); it blocks only
 * at its sync a + 1, as without crashes. If a is the one after an
 * all-reduce being finished, that one finishes in its old collective
 * without c. c's local steps and its buf are lost.
 *
 * A rejoining worker is idle until the next formed anchor z_q: the rank
 * that formed it sends it z_q (S bytes); it takes z_q as its model with a
 * fresh optimizer state and anchor momentum v = 0 (its lr position is the
 * sender's), counts as having done all-reduce q and starts its local steps
 * when z_q arrives; it is a member from all-reduce q + 1 on, whose
 * collective waits for its sync. Iterations: iteration K completes when
 * every live worker (a joiner counts from the iterations reported when z_q
 * is sent to it) has completed its K-th local step. */

enum { O_OFF = 0, O_ON, O_JOINING };

struct ofaults {
    algo_groups groups;
    int64_t round;       /* the oldest all-reduce not completed */
    int need;            /* completions it still counts */
    int done;            /* completions so far */
    int formed;          /* its first rank has completed */
    int *wstat;          /* O_* */
    uint32_t *wgen;      /* per worker: incarnation of its events */
    uint32_t *tgen;      /* per worker: its pending timeout */
    int *late;           /* its entry into all-reduce started - 1 waits for the timeout */
    int64_t *late_round; /* per worker: the all-reduce whose entry waits the timeout */
    int *pending;        /* rejoined, joins at the next formed anchor */
    int *m;              /* n: scratch member list */
    sim_time timeout;
    /* iterations */
    int64_t *step;       /* per worker: local steps completed */
    int64_t reported;    /* iterations reported */
    int64_t *slot;       /* span: samples of the steps of each unreported index */
    int span;
    int64_t lost;        /* samples of steps at an index already reported */
};

static void o_on_done(sim_engine *eng, void *ctx, int rank);

static algo_group *o_add(overlap *s, const int *members, int n, int64_t first)
{
    algo_group_colls c = {.kind = s->env->allreduce_kind, .done = o_on_done, .owner = s,
                          .who = "overlap_local_sgd"};
    algo_group *g = algo_groups_add(&s->f->groups, s->env, members, n, first, &c);
    if (!g && !s->env->error.code)
        algo_env_fail(s->env, SIM_ENOMEM, "overlap_local_sgd: out of memory for a group");
    return g;
}

static int o_live(const ofaults *f, int i) { return f->wstat[i] != O_OFF && !f->pending[i]; }

/* Reports the iterations every live worker has completed. */
static void o_count(overlap *s)
{
    ofaults *f = s->f;
    int64_t m = INT64_MAX;
    for (int i = 0; i < s->n; i++)
        if (o_live(f, i) && f->step[i] < m)
            m = f->step[i];
    while (m != INT64_MAX && f->reported < m) {
        int k = (int)(++f->reported % f->span);
        int64_t samples = f->slot[k] + f->lost;
        f->slot[k] = 0;
        f->lost = 0;
        algo_env_iteration(s->env, samples);
    }
}

static void o_step_done(overlap *s, int i, int64_t samples)
{
    ofaults *f = s->f;
    int64_t k = ++f->step[i];
    if (k <= f->reported)
        f->lost += samples;
    else
        f->slot[k % f->span] += samples;
}

/* Worker w enters all-reduce started[w] - 1 in the collective of its group. */
static void o_enter(overlap *s, int w)
{
    ofaults *f = s->f;
    int64_t q = s->started[w] - 1;
    algo_group *g = algo_groups_for(&f->groups, q);
    int rank = g ? g->rank_of[w] : -1;
    if (rank < 0) {
        algo_env_fail(s->env, SIM_EINTERNAL,
                      "overlap_local_sgd: worker %d is in no group of all-reduce %lld", w,
                      (long long)q);
        return;
    }
    f->late[w] = 0;
    algo_env_coll_enter(s->env, g->coll, rank, s->env->msg_bytes);
}

static void o_on_timeout(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    overlap *s = ctx;
    ofaults *f = s->f;
    int w = algo_group_arg_w(arg);
    if (f->tgen[w] != algo_group_arg_gen(arg) || f->wstat[w] != O_ON || !f->late[w])
        return;
    f->late_round[w] = -1;
    o_enter(s, w);
}

/* Worker w enters its all-reduce sync_timeout from now. */
static void o_wait(overlap *s, int w)
{
    ofaults *f = s->f;
    f->late[w] = 1;
    f->tgen[w]++;
    if (!sim_engine_schedule(s->env->eng, f->timeout, o_on_timeout, s,
                             algo_group_arg(w, f->tgen[w]), NULL, NULL))
        algo_env_fail(s->env, SIM_ENOMEM, "overlap_local_sgd: cannot schedule a timeout");
}

static void o_on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

static void o_begin_step(overlap *s, int i)
{
    algo_env *env = s->env;
    algo_env_grad(env, i, env->w[i].x, env->w[i].grad);
    algo_env_compute(env, i, algo_env_step_samples(env, i), o_on_compute_done, s,
                     algo_group_arg(i, s->f->wgen[i]));
}

/* Steps 2-4 of the sync (pull, anchor momentum, buf) as without crashes,
 * then worker i enters all-reduce started[i] (or waits out the timeout when
 * that one was aborted) and goes on. */
static void o_sync(overlap *s, int i)
{
    sync_buf(s, i);
    s->since[i] = 0;
    s->started[i]++;
    if (s->f->late_round[i] == s->started[i] - 1)
        o_wait(s, i);
    else
        o_enter(s, i);
    o_begin_step(s, i);
}

static void o_on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    overlap *s = ctx;
    ofaults *f = s->f;
    int i = algo_group_arg_w(arg);
    if (f->wgen[i] != algo_group_arg_gen(arg) || f->wstat[i] != O_ON)
        return;
    algo_worker *w = &s->env->w[i];
    algo_optim_step(s->lo.s[i], w->x, w->grad, worker_lr(s, i));
    s->applied[i] += w->grad_samples;
    o_step_done(s, i, w->grad_samples);
    o_count(s); /* before the sync, as without crashes */
    if (++s->since[i] < s->tau)
        o_begin_step(s, i);
    else if (s->finished[i] < s->started[i]) {
        s->waiting[i] = 1;
        algo_env_idle_begin(s->env, i);
    } else {
        o_sync(s, i);
    }
}

static void o_on_join_model(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst,
                            double bytes)
{
    (void)eng;
    (void)src;
    (void)dst;
    (void)bytes;
    overlap *s = ctx;
    ofaults *f = s->f;
    int w = algo_group_arg_w(arg);
    if (f->wgen[w] != algo_group_arg_gen(arg) || f->wstat[w] != O_JOINING)
        return;
    algo_env_idle_end(s->env, w);
    f->wstat[w] = O_ON;
    o_begin_step(s, w);
}

/* Worker i starts afresh from the anchor z as having done all-reduce q. */
static void o_fresh(overlap *s, int i, int64_t q)
{
    ofaults *f = s->f;
    f->late_round[i] = -1;
    f->late[i] = 0;
    f->step[i] = f->reported;
    memcpy(s->env->w[i].x, s->z, (size_t)s->d * sizeof(float));
    algo_optim_reset(s->lo.s[i]);
    if (s->v)
        memset(s->v + (int64_t)i * s->d, 0, (size_t)s->d * sizeof(float));
    s->started[i] = s->finished[i] = q + 1;
    s->since[i] = 0;
    s->waiting[i] = 0;
}

/* The pending joiners are members from all-reduce round + 1 on: w, which
 * formed z_round, sends it to them. */
static void o_joiners(overlap *s, int w)
{
    algo_env *env = s->env;
    ofaults *f = s->f;
    algo_group *next = algo_groups_for(&f->groups, f->round + 1);
    int k = 0;
    k = algo_group_members_joining(next, f->pending, env, f->m);
    if (!k)
        return;
    if (!o_add(s, f->m, k, f->round + 1))
        return;
    for (int i = 0; i < s->n; i++) {
        if (!f->pending[i] || env->w[i].down)
            continue;
        f->pending[i] = 0;
        f->wstat[i] = O_JOINING;
        o_fresh(s, i, f->round);
        s->applied[i] = s->applied[w];
        algo_env_send(env, w, i, env->msg_bytes, o_on_join_model, s,
                      algo_group_arg(i, f->wgen[i]));
    }
}

static void o_round_check(overlap *s)
{
    ofaults *f = s->f;
    if (f->need <= 0 || f->done < f->need)
        return;
    f->round++;
    f->done = 0;
    f->formed = 0;
    algo_group *g = algo_groups_for(&f->groups, f->round);
    f->need = g ? g->n : 0;
}

static void o_on_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    algo_group *g = ctx;
    overlap *s = g->owner;
    ofaults *f = s->f;
    int w = g->members[rank];
    int64_t q = s->started[w] - 1;
    if (f->wstat[w] != O_ON || f->late[w] || s->finished[w] >= s->started[w] ||
        q != f->round || algo_groups_for(&f->groups, q) != g)
        return; /* a crashed worker's, or an aborted collective's */
    if (!f->formed) {
        for (int r = 0; r < g->n; r++)
            s->ptrs[r] = s->buf + (int64_t)g->members[r] * s->d;
        algo_mean(s->z, s->ptrs, g->n, s->d);
        f->formed = 1;
        o_joiners(s, w);
    }
    s->finished[w]++;
    f->done++;
    if (s->waiting[w]) {
        s->waiting[w] = 0;
        algo_env_idle_end(s->env, w);
        o_sync(s, w);
    }
    o_round_check(s);
    o_count(s);
}

/* Worker c crashed: see the top of this section. */
static void o_crash(overlap *s, int c)
{
    algo_env *env = s->env;
    ofaults *f = s->f;
    int64_t a = f->formed ? f->round + 1 : f->round;
    if (f->formed && f->wstat[c] == O_ON && s->started[c] - 1 == f->round &&
        s->finished[c] < s->started[c])
        f->need--; /* the finishing all-reduce does not wait for it */
    f->wgen[c]++;
    f->tgen[c]++;
    f->wstat[c] = O_OFF;
    f->pending[c] = 0;
    f->late[c] = 0;
    s->waiting[c] = 0;
    algo_env_idle_end(env, c);
    algo_group *g = algo_groups_for(&f->groups, a);
    if (g && g->rank_of[c] >= 0) {
        int k = 0;
        k = algo_group_members_except(g, c, f->m);
        algo_group *ng = o_add(s, f->m, k, a);
        if (!ng)
            return;
        if (a == f->round)
            f->need = ng->n; /* nobody has completed all-reduce a */
        for (int r = 0; r < ng->n; r++) {
            int w = ng->members[r];
            f->late_round[w] = a;
            if (f->wstat[w] == O_ON && s->started[w] - 1 == a)
                o_wait(s, w); /* it had entered a: it re-enters */
        }
    }
    o_round_check(s);
    o_count(s);
}

/* Worker j rejoined: it waits (idle) for the next formed anchor; when no
 * worker is live it starts a group of its own at once from the last
 * anchor. */
static void o_rejoin(overlap *s, int j)
{
    ofaults *f = s->f;
    f->wgen[j]++;
    f->pending[j] = 1;
    algo_env_idle_begin(s->env, j);
    for (int i = 0; i < s->n; i++)
        if (i != j && o_live(f, i))
            return;
    int64_t q = f->round + f->formed;
    if (!o_add(s, &j, 1, q))
        return;
    f->round = q;
    f->pending[j] = 0;
    f->done = 0;
    f->formed = 0;
    f->need = 1;
    o_fresh(s, j, q - 1);
    algo_env_idle_end(s->env, j);
    f->wstat[j] = O_ON;
    o_begin_step(s, j);
}

static void o_on_fault(void *p, const algo_fault *ev)
{
    overlap *s = p;
    if (!s->f)
        return;
    if (ev->kind == ALGO_FAULT_CRASH)
        o_crash(s, ev->target);
    else if (ev->kind == ALGO_FAULT_REJOIN)
        o_rejoin(s, ev->target);
}

static void o_free(ofaults *f)
{
    if (!f)
        return;
    algo_groups_release(&f->groups);
    free(f->wstat);
    free(f->wgen);
    free(f->tgen);
    free(f->late);
    free(f->late_round);
    free(f->pending);
    free(f->m);
    free(f->step);
    free(f->slot);
    free(f);
}

/* The group path's state: one group of every worker from all-reduce 0. */
static int o_create(overlap *s, sim_err *err)
{
    algo_env *env = s->env;
    const cfg_config *cfg = env->cfg;
    ofaults *f = calloc(1, sizeof *f);
    if (!f)
        return sim_err_set(err, SIM_ENOMEM, "overlap_local_sgd: out of memory");
    s->f = f;
    int rc = cfg_get_time(cfg, "faults", "sync_timeout", &f->timeout, err);
    if (rc < 0)
        return rc;
    if (f->timeout < 0)
        return cfg_error(cfg, "faults", "sync_timeout", SIM_ECONFIG, err,
                                "must not be negative");
    size_t n = (size_t)s->n;
    f->span = 2 * s->tau + 4;
    f->wstat = malloc(n * sizeof *f->wstat);
    f->wgen = calloc(n, sizeof *f->wgen);
    f->tgen = calloc(n, sizeof *f->tgen);
    f->late = calloc(n, sizeof *f->late);
    f->late_round = malloc(n * sizeof *f->late_round);
    f->pending = calloc(n, sizeof *f->pending);
    f->m = malloc(n * sizeof *f->m);
    f->step = calloc(n, sizeof *f->step);
    f->slot = calloc((size_t)f->span, sizeof *f->slot);
    if (!f->wstat || !f->wgen || !f->tgen || !f->late || !f->late_round || !f->pending ||
        !f->m || !f->step || !f->slot)
        return sim_err_set(err, SIM_ENOMEM, "overlap_local_sgd: out of memory");
    for (int i = 0; i < s->n; i++) {
        f->wstat[i] = O_ON;
        f->late_round[i] = -1;
        f->m[i] = i;
    }
    if (!o_add(s, f->m, s->n, 0))
        return env->error.code ? sim_err_set(err, env->error.code, "%s", env->error.msg)
                               : sim_err_set(err, SIM_ENOMEM, "overlap_local_sgd: out of memory");
    f->need = s->n;
    return 0;
}

/* The workers the evaluated model averages under crashes: the live ones. */
static int o_live_models(void *p, const float **xs)
{
    overlap *s = p;
    int k = 0;
    for (int i = 0; i < s->n; i++)
        if (!s->f || o_live(s->f, i))
            xs[k++] = s->env->w[i].x;
    if (k == 0)
        xs[k++] = s->z;
    return k;
}

static void destroy(void *p)
{
    overlap *s = p;
    if (!s)
        return;
    algo_local_optim_release(&s->lo);
    o_free(s->f);
    sim_coll_destroy(s->coll);
    algo_local_steps_release(&s->steps);
    free(s->since);
    free(s->applied);
    free(s->started);
    free(s->finished);
    free(s->waiting);
    free(s->z);
    free(s->buf);
    free(s->v);
    free(s->ptrs);
    free(s);
}

static int read_keys(overlap *s, const cfg_config *c, sim_err *err)
{
    int64_t H;
    int rc;
    if ((rc = cfg_get_int(c, "algorithm", "local_steps", &H, err)) ||
        (rc = cfg_get_double(c, "algorithm", "pull", &s->alpha, err)) ||
        (rc = cfg_get_double(c, "algorithm", "anchor_momentum", &s->gmf, err)))
        return rc;
    if (H < 1 || H > 1000000)
        return cfg_error(c, "algorithm", "local_steps", SIM_ECONFIG, err,
                                "must be in [1, 1000000], got %lld", (long long)H);
    if (!(s->alpha >= 0 && s->alpha <= 1))
        return cfg_error(c, "algorithm", "pull", SIM_ECONFIG, err,
                                "must be in [0, 1], got %g", s->alpha);
    if (!(s->gmf >= 0 && s->gmf < 1))
        return cfg_error(c, "algorithm", "anchor_momentum", SIM_ECONFIG, err,
                                "must be in [0, 1), got %g", s->gmf);
    s->tau = (int)H;
    return 0;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    overlap *s = calloc(1, sizeof *s);
    if (!s)
        return sim_err_set(err, SIM_ENOMEM, "overlap_local_sgd: out of memory");
    s->env = env;
    s->n = env->n;
    s->d = env->d;
    int rc = read_keys(s, env->cfg, err);
    if (rc < 0) {
        destroy(s);
        return rc;
    }
    const size_t n = (size_t)s->n, d = (size_t)s->d;
    s->since = calloc(n, sizeof *s->since);
    s->applied = calloc(n, sizeof *s->applied);
    s->started = calloc(n, sizeof *s->started);
    s->finished = calloc(n, sizeof *s->finished);
    s->waiting = calloc(n, sizeof *s->waiting);
    s->z = malloc(d * sizeof(float));
    s->buf = malloc(n * d * sizeof(float));
    s->v = s->gmf > 0 ? calloc(n * d, sizeof(float)) : NULL;
    s->ptrs = malloc(n * sizeof *s->ptrs);
    if (!s->since || !s->applied || !s->started || !s->finished || !s->waiting ||
        !s->z || !s->buf || (s->gmf > 0 && !s->v) || !s->ptrs ||
        algo_local_steps_init(&s->steps, s->n, 2 * s->tau + 2) < 0) {
        destroy(s);
        return sim_err_set(err, SIM_ENOMEM, "overlap_local_sgd: out of memory");
    }
    rc = algo_local_optim_init(&s->lo, env, 0, err);
    if (rc < 0) {
        destroy(s);
        return rc;
    }
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = env->w[i].x;
    algo_mean(s->z, s->ptrs, s->n, s->d); /* z = x^0 */
    if (algo_env_crashes(env)) {
        if ((rc = o_create(s, err)) < 0) {
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
    (void)err;
    overlap *s = p;
    for (int i = 0; i < s->n; i++) {
        if (s->f)
            o_begin_step(s, i);
        else
            begin_step(s, i);
    }
    return 0;
}

static const float *model(void *p, float *scratch)
{
    overlap *s = p;
    if (s->f) {
        int k = o_live_models(s, s->ptrs);
        if (k == 1)
            return s->ptrs[0];
        algo_mean(scratch, s->ptrs, k, s->d);
        return scratch;
    }
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = s->env->w[i].x;
    algo_mean(scratch, s->ptrs, s->n, s->d);
    return scratch;
}

static void worker_models(void *p, const float **xs)
{
    overlap *s = p;
    for (int i = 0; i < s->n; i++)
        xs[i] = s->env->w[i].x;
}

static const cfg_key keys[] = {
    {"algorithm", "local_steps", "2", CFG_KEY_INT, NULL,
     "tau: local steps between two syncs (>= 1)"},
    {"algorithm", "pull", "0.2", CFG_KEY_DOUBLE, NULL,
     "alpha: pull toward the anchor at a sync, x <- (1 - alpha) x + alpha z, in [0, 1]"},
    {"algorithm", "anchor_momentum", "0", CFG_KEY_DOUBLE, NULL,
     "gmf: momentum of the anchor update in [0, 1) (0: the anchor is the mean of the pulled models)"},
    {0},
};

const algo_vt algo_overlap_local_sgd = {
    .name = "overlap_local_sgd",
    .summary = "Local SGD whose averaging runs in the background, pulling toward a one-round-old "
               "anchor",
    .reference = "8",
    .keys = keys,
    .async = 0,
    .uses_graph = 0,
    .supports_compression = 0,
    .server = ALGO_SERVER_PS,
    .create = create,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = worker_models,
    .live_models = o_live_models,
    .fault = o_on_fault,
};
