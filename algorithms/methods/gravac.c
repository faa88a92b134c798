/* gravac: GraVAC, Top-k with error feedback whose keep fraction theta is
 * chosen online (docs/algorithms.md section 9; Tyagi and Swany 2023, code
 * sahiltyagi4/GraVAC). Built like allreduce_sgd's compressed path: worker
 * i turns its gradient into u_i = lr dir_i with its own sgd state, and
 * keeps two Top-k compressors with their own residuals, one at theta_min
 * and one at the candidate theta_c; both encode u_i every step.
 *
 * Gain: gain(theta) = EWMA(|C_theta(u + e_theta)|) / EWMA(|u|), norms the
 * sum of per-layer L2 norms, averaged over the workers, EWMA rate
 * ewma_alpha (the first value starts it). Each round uses the decision
 * made at the end of the previous one (so every worker enters the same
 * collective):
 *   first `window` rounds:       send C_theta_min
 *   gain(theta_c) >= threshold:  send C_theta_c   (ring all-gather, 8k bytes)
 *   gain(theta_min) >= threshold: send C_theta_min
 *   else:                        dense all-reduce of u (S bytes)
 * and x -= (1/n) sum_i message_i (dense: the mean of the u_i).
 *
 * Search, at each epoch boundary while it is on: CT = samples/s over the
 * epoch x gain of the theta used is recorded; theta_c <- max(theta_max,
 * theta_c x cf_step) (a fresh residual and EWMA); the search stops when
 * the two best CT values differ relatively by less than ct_tolerance, and
 * theta_c is fixed to the more compressed of the two.
 *
 * Compression cost: each Top-k call costs compress_time_per_value x d_wire
 * seconds of compute (2 calls per step, 1 when theta_c = theta_min),
 * counted in the worker's compute time before it enters the collective.
 * Series: keep_fraction (the theta used) when it changes; gain (of
 * theta_c) every round.
 *
 * Crashes ([faults] schedule or mtbf, docs/faults.md): the rounds run over
 * groups of live workers (algorithms/group.h), each with its own
 * all-gather and dense all-reduce, with allreduce_sgd's rules: a crash
 * aborts the first round whose update is not applied; the survivors enter
 * the new group's collective sync_timeout after they entered it; the
 * update is x -= (1/m) sum over the m members. The round's gains are
 * averaged over the members; the mode decided at an applied update holds
 * for the next round; the search goes on unchanged. A rejoining worker is
 * sent x (S bytes) at the next applied update and starts with a fresh sgd
 * state and zero residuals. Without crashes nothing of this runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/compress/compress.h"
#include "algorithms/drivers/group.h"
#include "sim/units.h"

#define MAX_CT 64

typedef struct faults faults;
typedef algo_group group;

typedef struct state {
    algo_env *env;
    sim_coll *dense, *gather;
    float *x, *gbar, *u;     /* u: n x d, the workers' updates (dense fallback) */
    const float **uptr;
    const float **gptr;        /* n: scratch, the members' updates */
    algo_optim_state **wopt;
    algo_compressor *cmin, *ccand;
    algo_compress_worker *wmin, *wcand;
    double *nu, *nmin, *ncand; /* n: the round's norms */
    /* keys */
    int64_t window;
    double alpha, theta_min, theta_max, threshold, omega, cf_step, cost_per_value;
    int64_t d_wire;
    /* decision */
    double theta_c;
    int mode, next_mode;       /* 0 dense, 1 theta_min, 2 theta_c */
    int *wmode;                /* n: the mode of each worker's current round */
    double e_u, e_min, e_cand; /* EWMAs; < 0 = not started */
    int64_t rounds;
    int searching;
    double ct_theta[MAX_CT], ct_val[MAX_CT];
    int n_ct;
    double epoch_t0;
    int64_t epoch_samples0, epoch_idx;
    double last_theta;
    int done_in_round, applied;
    int n_layers;
    int64_t off[16], len[16];
    faults *f;                 /* workers may crash, else NULL */
} state;

static const sim_key keys[] = {
    {"algorithm", "theta_min", "0.1", SIM_KEY_DOUBLE, NULL,
     "least compression: keep fraction of the fallback compressor, in (0, 1]"},
    {"algorithm", "theta_max", "1e-4", SIM_KEY_DOUBLE, NULL,
     "most compression the search may reach, in (0, theta_min]"},
    {"algorithm", "gain_threshold", "0.75", SIM_KEY_DOUBLE, NULL,
     "epsilon: least compression gain for a keep fraction to be used"},
    {"algorithm", "window", "25", SIM_KEY_INT, NULL,
     "w: rounds at theta_min before the gains decide (>= 0)"},
    {"algorithm", "ewma_alpha", "0.05", SIM_KEY_DOUBLE, NULL,
     "a: EWMA rate of the norms, in (0, 1]"},
    {"algorithm", "ct_tolerance", "0.05", SIM_KEY_DOUBLE, NULL,
     "omega: the search stops when the two best throughputs differ by less"},
    {"algorithm", "cf_step", "0.5", SIM_KEY_DOUBLE, NULL,
     "the candidate keep fraction is multiplied by this each epoch, in (0, 1)"},
    {"algorithm", "compress_time_per_value", "1e-9", SIM_KEY_DOUBLE, NULL,
     "compute seconds per parameter (d_wire) of one Top-k call (>= 0)"},
    {0},
};

static void begin_step(state *st, int w);

static double layer_norm(const state *st, const float *v)
{
    double s = 0;
    for (int l = 0; l < st->n_layers; l++) {
        double q = 0;
        for (int64_t j = st->off[l]; j < st->off[l] + st->len[l]; j++)
            q += (double)v[j] * (double)v[j];
        s += sqrt(q);
    }
    return s;
}

static double msg_norm(const state *st, const algo_compress_msg *m)
{
    double q[16] = {0};
    int l = 0;
    for (int64_t i = 0; i < m->nnz; i++) {
        int64_t j = m->indices[i];
        while (l + 1 < st->n_layers && j >= st->off[l + 1])
            l++;
        q[l] += (double)m->values[i] * (double)m->values[i];
    }
    double s = 0;
    for (l = 0; l < st->n_layers; l++)
        s += sqrt(q[l]);
    return s;
}

static double ewma(double e, double x, double a) { return e < 0 ? x : (1.0 - a) * e + a * x; }

static double theta_used(const state *st, int mode)
{
    return mode == 0 ? 1.0 : mode == 1 ? st->theta_min : st->theta_c;
}

static void set_candidate(state *st, double theta)
{
    st->theta_c = theta;
    st->ccand->param[0] = theta;
    for (int i = 0; i < st->env->n; i++)
        memset(st->wcand[i].residual, 0, (size_t)st->env->d * sizeof(float));
    st->e_cand = -1;
}

/* End of an epoch: record CT, move the candidate, maybe stop. */
static void search_step(state *st)
{
    algo_env *env = st->env;
    double now = sim_time_to_s(sim_engine_now(env->eng));
    double dt = now - st->epoch_t0;
    double thr = dt > 0 ? (double)(env->samples - st->epoch_samples0) / dt : 0;
    st->epoch_t0 = now;
    st->epoch_samples0 = env->samples;
    if (!st->searching || st->e_u <= 0)
        return;
    double gain = st->mode == 0 ? 1.0 : (st->mode == 1 ? st->e_min : st->e_cand) / st->e_u;
    if (st->n_ct < MAX_CT) {
        st->ct_theta[st->n_ct] = theta_used(st, st->mode);
        st->ct_val[st->n_ct] = thr * gain;
        st->n_ct++;
    }
    if (st->n_ct >= 2) {
        int b1 = 0, b2 = -1;
        for (int i = 1; i < st->n_ct; i++)
            if (st->ct_val[i] > st->ct_val[b1])
                b1 = i;
        for (int i = 0; i < st->n_ct; i++)
            if (i != b1 && (b2 < 0 || st->ct_val[i] > st->ct_val[b2]))
                b2 = i;
        double rel = fabs(st->ct_val[b1] - st->ct_val[b2]) / fmax(st->ct_val[b1], 1e-300);
        if (rel < st->omega) {
            st->searching = 0;
            double th = fmin(st->ct_theta[b1], st->ct_theta[b2]);
            if (th < st->theta_min && th != st->theta_c)
                set_candidate(st, th);
            return;
        }
    }
    double next = fmax(st->theta_max, st->theta_c * st->cf_step);
    if (next < st->theta_c)
        set_candidate(st, next);
}

/* The round's update, gains and next decision over the m workers mem[]
 * (mem NULL: every worker, in id order). Counts the iteration. */
static void apply_round(state *st, const int *mem, int m)
{
    algo_env *env = st->env;
    const int64_t d = env->d;
#define MEMBER(r) (mem ? mem[r] : (r))
    float *sum = st->gbar;
    memset(sum, 0, (size_t)d * sizeof *sum);
    if (st->mode == 0) {
        if (mem) {
            for (int r = 0; r < m; r++)
                st->gptr[r] = st->uptr[mem[r]];
            algo_mean(sum, st->gptr, m, d);
        } else {
            algo_mean(sum, st->uptr, m, d);
        }
        for (int64_t j = 0; j < d; j++)
            st->x[j] -= sum[j];
    } else {
        for (int r = 0; r < m; r++) {
            int i = MEMBER(r);
            algo_compress_decode_add(st->mode == 1 ? st->cmin : st->ccand,
                                     st->mode == 1 ? &st->wmin[i].msg : &st->wcand[i].msg,
                                     1.0f, sum);
        }
        const float inv = 1.0f / (float)m;
        for (int64_t j = 0; j < d; j++)
            st->x[j] -= inv * sum[j];
    }
    /* gains from the round's norms, averaged over the workers who took part */
    double mu = 0, mm = 0, mc = 0;
    for (int r = 0; r < m; r++) {
        int i = MEMBER(r);
        mu += st->nu[i] / m;
        mm += st->nmin[i] / m;
        mc += st->ncand[i] / m;
    }
    st->e_u = ewma(st->e_u, mu, st->alpha);
    st->e_min = ewma(st->e_min, mm, st->alpha);
    st->e_cand = ewma(st->e_cand, mc, st->alpha);
    st->rounds++;
    double g_min = st->e_u > 0 ? st->e_min / st->e_u : 1.0;
    double g_c = st->e_u > 0 ? st->e_cand / st->e_u : 1.0;
    int64_t samples = 0;
    for (int r = 0; r < m; r++)
        samples += env->w[MEMBER(r)].grad_samples;
#undef MEMBER
    st->applied = 1;
    algo_env_iteration(env, samples);
    algo_env_series(env, -1, "gain", g_c);
    int64_t ep = (int64_t)floor(algo_env_epoch(env));
    if (ep > st->epoch_idx) {
        st->epoch_idx = ep;
        search_step(st);
        g_c = st->e_cand > 0 && st->e_u > 0 ? st->e_cand / st->e_u : g_c;
    }
    if (st->rounds < st->window)
        st->next_mode = 1;
    else if (st->theta_c < st->theta_min && st->e_cand >= 0 && g_c >= st->threshold)
        st->next_mode = 2;
    else if (g_min >= st->threshold)
        st->next_mode = 1;
    else
        st->next_mode = 0;
}

/* Every rank's round is over: the decision takes effect. */
static void round_over(state *st)
{
    st->applied = 0;
    st->mode = st->next_mode;
    double th = theta_used(st, st->mode);
    if (th != st->last_theta) {
        st->last_theta = th;
        algo_env_series(st->env, -1, "keep_fraction", th);
    }
}

static void on_coll_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    state *st = ctx;
    algo_env *env = st->env;
    const int n = env->n;
    if (!st->applied)
        apply_round(st, NULL, n);
    algo_env_idle_end(env, rank);
    st->wmode[rank] = st->next_mode; /* decided at the round's first completion */
    if (++st->done_in_round == n) {
        st->done_in_round = 0;
        round_over(st); /* every rank's round is over */
    }
    begin_step(st, rank);
}

static void on_encoded(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    int w = (int)arg;
    const int mode = st->wmode[w];
    algo_env_idle_begin(st->env, w);
    if (mode == 0)
        algo_env_coll_enter(st->env, st->dense, w, st->env->msg_bytes);
    else
        algo_env_coll_enter(st->env, st->gather, w,
                            mode == 1 ? st->wmin[w].msg.bytes : st->wcand[w].msg.bytes);
}

/* Worker w's update u_w, its norms and messages (both Top-k calls);
 * returns the number of calls. */
static int encode(state *st, int w)
{
    algo_env *env = st->env;
    const int64_t d = env->d;
    float *g = env->w[w].grad, *u = st->u + (size_t)w * (size_t)d;
    const float flr = (float)algo_env_lr(env);
    algo_optim_direction(st->wopt[w], st->x, g);
    for (int64_t j = 0; j < d; j++)
        u[j] = flr * g[j];
    st->nu[w] = layer_norm(st, u);
    st->nmin[w] = msg_norm(st, algo_compress_worker_encode(&st->wmin[w], u));
    if (st->theta_c < st->theta_min) {
        st->ncand[w] = msg_norm(st, algo_compress_worker_encode(&st->wcand[w], u));
        return 2;
    }
    st->ncand[w] = st->nmin[w];
    return 1;
}

static void on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    state *st = ctx;
    algo_env *env = st->env;
    int w = (int)arg;
    int calls = encode(st, w);
    double cost = st->cost_per_value * (double)st->d_wire * calls;
    if (cost <= 0) {
        on_encoded(eng, ctx, arg, payload);
        return;
    }
    sim_time dt = sim_time_from_s(cost);
    env->w[w].compute_time += sim_time_to_s(dt);
    if (!sim_engine_schedule(env->eng, dt, on_encoded, st, arg, NULL, NULL))
        algo_env_fail(env, SIM_ENOMEM, "gravac: cannot schedule compression");
}

static void begin_step(state *st, int w)
{
    algo_env *env = st->env;
    algo_env_grad(env, w, st->x, env->w[w].grad);
    algo_env_compute(env, w, algo_env_step_samples(env, w), on_compute_done, st,
                     (uint64_t)w);
}

/* ---- crashes ([faults]): rounds over groups of live workers ------------ */

/* W_ENCODING: the Top-k calls' compute time before entering */
enum { W_OFF = 0, W_COMPUTING, W_WAITING, W_ENTERED, W_ENCODING };

struct faults {
    algo_groups groups;  /* every group made (algorithms/group.h) */
    int64_t round;       /* the oldest round not completed */
    int need;            /* completions round `round` still counts */
    int done;            /* completions so far */
    int64_t *wround;     /* per worker: the round it computes or waits in */
    int *wstat;          /* W_* */
    uint32_t *wgen;      /* per worker: incarnation of its events */
    uint32_t *tgen;      /* per worker: its pending timeout event */
    int64_t *late_round; /* per worker: the round whose entry waits the timeout */
    double *wbytes;      /* per worker: its message of the round */
    int *pending;        /* rejoined, joins at the next applied update */
    int *scratch;        /* n worker ids */
    sim_time timeout;
};

static void g_begin_step(state *st, int w, int64_t round);
static void g_after_encode(state *st, int w);
static void on_group_done(sim_engine *eng, void *ctx, int rank);

/* A new group of the given workers (ascending) from round first on: an
 * all-gather of the Top-k messages and a dense all-reduce (the fallback). */
static group *group_add(state *st, const int *members, int n, int64_t first)
{
    algo_group_colls c = {.kind = SIM_COLL_ALLGATHER, .done = on_group_done,
                          .aux_done = on_group_done, .owner = st, .who = "gravac"};
    group *g = algo_groups_add(&st->f->groups, st->env, members, n, first, &c);
    if (!g && !st->env->error.code)
        algo_env_fail(st->env, SIM_ENOMEM, "gravac: out of memory for a group");
    return g;
}

static void faults_free(faults *f)
{
    if (!f)
        return;
    algo_groups_release(&f->groups);
    free(f->wround);
    free(f->wstat);
    free(f->wgen);
    free(f->tgen);
    free(f->late_round);
    free(f->wbytes);
    free(f->pending);
    free(f->scratch);
    free(f);
}

static void g_enter(state *st, int w)
{
    faults *f = st->f;
    group *g = algo_groups_for(&f->groups, f->wround[w]);
    int rank = g ? g->rank_of[w] : -1;
    if (rank < 0) {
        algo_env_fail(st->env, SIM_EINTERNAL, "gravac: worker %d is in no group of round %lld",
                      w, (long long)f->wround[w]);
        return;
    }
    f->wstat[w] = W_ENTERED;
    algo_env_coll_enter(st->env, st->wmode[w] == 0 ? g->aux : g->coll, rank, f->wbytes[w]);
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
        algo_env_fail(st->env, SIM_ENOMEM, "gravac: cannot schedule a timeout");
}

/* The round is over when every completion it needs is in: the next
 * round's decision takes effect. */
static void g_round_check(state *st)
{
    faults *f = st->f;
    if (f->need <= 0 || f->done < f->need)
        return;
    f->round++;
    f->done = 0;
    group *g = algo_groups_for(&f->groups, f->round);
    f->need = g ? g->n : 0;
    round_over(st);
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
 * round's update, sends them x (S bytes). */
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
    for (int i = 0; i < env->n; i++) {
        if (!f->pending[i] || env->w[i].down)
            continue;
        f->pending[i] = 0;
        f->wround[i] = f->round + 1;
        f->wstat[i] = W_COMPUTING;
        f->late_round[i] = -1;
        algo_env_send(env, w, i, env->msg_bytes, on_join_model, st,
                      algo_group_arg(i, f->wgen[i]));
    }
}

static void on_group_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    group *g = ctx;
    state *st = g->owner;
    faults *f = st->f;
    int w = g->members[rank];
    int64_t k = f->wround[w];
    if (f->wstat[w] != W_ENTERED || k != f->round || algo_groups_for(&f->groups, k) != g)
        return; /* a crashed worker, or an aborted round's collective */
    if (!st->applied) {
        apply_round(st, g->members, g->n);
        g_joiners(st, w);
    }
    algo_env_idle_end(st->env, w);
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
    int calls = encode(st, w);
    const int mode = st->wmode[w];
    f->wbytes[w] = mode == 0   ? env->msg_bytes
                   : mode == 1 ? st->wmin[w].msg.bytes
                               : st->wcand[w].msg.bytes;
    double cost = st->cost_per_value * (double)st->d_wire * calls;
    if (cost > 0) {
        /* the Top-k calls are compute: the worker is idle only once done */
        sim_time dt = sim_time_from_s(cost);
        f->wstat[w] = W_ENCODING;
        env->w[w].compute_time += sim_time_to_s(dt);
        if (!sim_engine_schedule(env->eng, dt, on_g_encoded, st, arg, NULL, NULL))
            algo_env_fail(env, SIM_ENOMEM, "gravac: cannot schedule compression");
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

/* Round `round`'s mode is the current one, or the one decided at the
 * current round's applied update for the next. */
static void g_begin_step(state *st, int w, int64_t round)
{
    algo_env *env = st->env;
    faults *f = st->f;
    f->wround[w] = round;
    f->wstat[w] = W_COMPUTING;
    st->wmode[w] = round > f->round ? st->next_mode : st->mode;
    algo_env_grad(env, w, st->x, env->w[w].grad);
    algo_env_compute(env, w, algo_env_step_samples(env, w), g_on_compute_done, st,
                     algo_group_arg(w, f->wgen[w]));
}

/* Worker c crashed: the first round whose update is not applied is
 * aborted and runs over the survivors (as allreduce_sgd's). */
static void g_crash(state *st, int c)
{
    algo_env *env = st->env;
    faults *f = st->f;
    int64_t a = st->applied ? f->round + 1 : f->round;
    if (st->applied && f->wround[c] == f->round && f->wstat[c] == W_ENTERED)
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
        if (a == f->round)
            f->need = ng->n; /* nobody has completed round a */
        for (int r = 0; r < ng->n; r++) {
            int s = ng->members[r];
            f->late_round[s] = a;
            if (f->wround[s] == a && (f->wstat[s] == W_ENTERED || f->wstat[s] == W_WAITING))
                g_wait(st, s);
        }
    }
    g_round_check(st);
}

/* Worker j rejoined: a fresh per-worker state (sgd momentum, both Top-k
 * residuals zero); it joins at the next applied update, or starts a group
 * of its own at once when nobody is left to apply one. */
static void g_rejoin(state *st, int j)
{
    algo_env *env = st->env;
    faults *f = st->f;
    f->wgen[j]++;
    f->pending[j] = 1;
    algo_optim_reset(st->wopt[j]);
    if (st->wmin[j].residual)
        memset(st->wmin[j].residual, 0, (size_t)env->d * sizeof(float));
    if (st->wcand[j].residual)
        memset(st->wcand[j].residual, 0, (size_t)env->d * sizeof(float));
    group *g = algo_groups_for(&f->groups, f->round);
    if (g && g->n > 0)
        return;
    if (!group_add(st, &j, 1, f->round))
        return;
    f->pending[j] = 0;
    f->done = 0;
    st->applied = 0;
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
        return sim_err_set(err, SIM_ENOMEM, "gravac: out of memory");
    st->f = f;
    int rc = sim_config_get_time(cfg, "faults", "sync_timeout", &f->timeout, err);
    if (rc < 0)
        return rc;
    if (f->timeout < 0)
        return sim_config_error(cfg, "faults", "sync_timeout", SIM_ECONFIG, err,
                                "must not be negative");
    size_t n = (size_t)env->n;
    f->wround = calloc(n, sizeof *f->wround);
    f->wstat = calloc(n, sizeof *f->wstat);
    f->wgen = calloc(n, sizeof *f->wgen);
    f->tgen = calloc(n, sizeof *f->tgen);
    f->late_round = malloc(n * sizeof *f->late_round);
    f->wbytes = calloc(n, sizeof *f->wbytes);
    f->pending = calloc(n, sizeof *f->pending);
    f->scratch = malloc(n * sizeof *f->scratch);
    if (!f->wround || !f->wstat || !f->wgen || !f->tgen || !f->late_round || !f->wbytes ||
        !f->pending || !f->scratch)
        return sim_err_set(err, SIM_ENOMEM, "gravac: out of memory");
    for (int i = 0; i < env->n; i++) {
        f->late_round[i] = -1;
        f->scratch[i] = i;
    }
    if (!group_add(st, f->scratch, env->n, 0))
        return sim_err_set(err, env->error.code ? env->error.code : SIM_ENOMEM, "%s",
                           env->error.code ? env->error.msg : "gravac: out of memory");
    f->need = env->n;
    return 0;
}

static void destroy(void *p)
{
    state *st = p;
    if (!st)
        return;
    for (int i = 0; i < st->env->n; i++) {
        if (st->wmin)
            algo_compress_worker_release(&st->wmin[i]);
        if (st->wcand)
            algo_compress_worker_release(&st->wcand[i]);
        if (st->wopt)
            algo_optim_state_destroy(st->wopt[i]);
    }
    free(st->wmin);
    free(st->wcand);
    free(st->wopt);
    algo_compress_destroy(st->cmin);
    algo_compress_destroy(st->ccand);
    sim_coll_destroy(st->dense);
    sim_coll_destroy(st->gather);
    free(st->x);
    free(st->gbar);
    free(st->u);
    free(st->uptr);
    free(st->nu);
    free(st->nmin);
    free(st->ncand);
    free(st->wmode);
    free(st->gptr);
    faults_free(st->f);
    free(st);
}

static int bad(const sim_config *cfg, const char *key, const char *what, double v, sim_err *err)
{
    return sim_config_error(cfg, "algorithm", key, SIM_ECONFIG, err, "must be %s, got %g", what,
                            v);
}

static int read_keys(state *st, const sim_config *cfg, sim_err *err)
{
    int rc = sim_config_get_double(cfg, "algorithm", "theta_min", &st->theta_min, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "theta_max", &st->theta_max, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "gain_threshold", &st->threshold, err);
    if (!rc)
        rc = sim_config_get_int(cfg, "algorithm", "window", &st->window, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "ewma_alpha", &st->alpha, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "ct_tolerance", &st->omega, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "cf_step", &st->cf_step, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "compress_time_per_value",
                                   &st->cost_per_value, err);
    if (rc)
        return rc;
    if (!(st->theta_min > 0 && st->theta_min <= 1))
        return bad(cfg, "theta_min", "in (0, 1]", st->theta_min, err);
    if (!(st->theta_max > 0 && st->theta_max <= st->theta_min))
        return bad(cfg, "theta_max", "in (0, theta_min]", st->theta_max, err);
    if (st->window < 0)
        return bad(cfg, "window", ">= 0", (double)st->window, err);
    if (!(st->alpha > 0 && st->alpha <= 1))
        return bad(cfg, "ewma_alpha", "in (0, 1]", st->alpha, err);
    if (!(st->cf_step > 0 && st->cf_step < 1))
        return bad(cfg, "cf_step", "in (0, 1)", st->cf_step, err);
    if (!(st->cost_per_value >= 0))
        return bad(cfg, "compress_time_per_value", ">= 0", st->cost_per_value, err);
    if (!(st->omega >= 0))
        return bad(cfg, "ct_tolerance", ">= 0", st->omega, err);
    return 0;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    const sim_config *cfg = env->cfg;
    state *st = calloc(1, sizeof *st);
    if (!st)
        return sim_err_set(err, SIM_ENOMEM, "gravac: out of memory");
    st->env = env;
    int rc = read_keys(st, cfg, err);
    if (!rc)
        rc = algo_optim_require_sgd(cfg, "error feedback needs a linear update", err);
    if (rc) {
        destroy(st);
        return rc;
    }
    const size_t n = (size_t)env->n, d = (size_t)env->d;
    st->x = malloc(d * sizeof *st->x);
    st->gbar = malloc(d * sizeof *st->gbar);
    st->u = malloc(n * d * sizeof *st->u);
    st->uptr = malloc(n * sizeof *st->uptr);
    st->gptr = malloc(n * sizeof *st->gptr);
    st->nu = calloc(n, sizeof *st->nu);
    st->nmin = calloc(n, sizeof *st->nmin);
    st->ncand = calloc(n, sizeof *st->ncand);
    st->wmin = calloc(n, sizeof *st->wmin);
    st->wcand = calloc(n, sizeof *st->wcand);
    st->wopt = calloc(n, sizeof *st->wopt);
    st->wmode = calloc(n, sizeof *st->wmode);
    char spec[64];
    snprintf(spec, sizeof spec, "topk(%.17g)", st->theta_min);
    st->cmin = algo_compress_create(spec, err);
    st->ccand = st->cmin ? algo_compress_create(spec, err) : NULL;
    if (!st->x || !st->gbar || !st->u || !st->uptr || !st->gptr || !st->nu || !st->nmin ||
        !st->ncand || !st->wmin || !st->wcand || !st->wopt || !st->wmode || !st->ccand) {
        destroy(st);
        return sim_err_set(err, SIM_ENOMEM, "gravac: out of memory");
    }
    const wl_layer *layers = env->model ? env->model->layers : NULL;
    int nl = env->model ? env->model->n_layers : 0;
    if (nl <= 0 || nl > 16) {
        st->n_layers = 1;
        st->len[0] = env->d;
    } else {
        st->n_layers = nl;
        for (int l = 0; l < nl; l++) {
            st->off[l] = layers[l].offset;
            st->len[l] = layers[l].size;
        }
    }
    st->d_wire = env->wire_params > 0 ? env->wire_params : env->d;
    int vb = env->wire_value_bytes > 0 ? env->wire_value_bytes : 4;
    for (int i = 0; i < env->n; i++) {
        st->uptr[i] = st->u + (size_t)i * d;
        st->wopt[i] = algo_optim_state_from_config(cfg, env->model, env->d, err);
        rc = st->wopt[i] ? 0 : (err && err->code ? err->code : SIM_EINTERNAL);
        if (!rc)
            rc = algo_compress_worker_init(&st->wmin[i], st->cmin, env->d, st->d_wire, vb, 1,
                                           cfg->seed, i, err);
        if (!rc)
            rc = algo_compress_worker_init(&st->wcand[i], st->ccand, env->d, st->d_wire, vb, 1,
                                           cfg->seed, i, err);
        if (rc) {
            destroy(st);
            return rc;
        }
    }
    memcpy(st->x, env->w[0].x, d * sizeof *st->x);
    st->theta_c = st->theta_min;
    st->e_u = st->e_min = st->e_cand = -1;
    st->searching = 1;
    st->mode = st->next_mode = 1;
    for (int i = 0; i < env->n; i++)
        st->wmode[i] = 1;
    st->last_theta = -1;
    if (algo_env_crashes(env)) {
        rc = faults_create(st, err);
        if (rc) {
            destroy(st);
            return rc;
        }
        *out = st;
        return 0;
    }
    st->dense = algo_env_coll(env, env->allreduce_kind, on_coll_done, st, err);
    st->gather = st->dense ? algo_env_coll(env, SIM_COLL_ALLGATHER, on_coll_done, st, err) : NULL;
    if (!st->gather) {
        destroy(st);
        return err && err->code ? err->code : SIM_EINTERNAL;
    }
    *out = st;
    return 0;
}

static int start(void *p, sim_err *err)
{
    (void)err;
    state *st = p;
    st->last_theta = theta_used(st, st->mode);
    algo_env_series(st->env, -1, "keep_fraction", st->last_theta);
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

const algo_vt algo_gravac = {
    .name = "gravac",
    .summary = "GraVAC: Top-k with error feedback, keep fraction chosen online from the gain",
    .reference = "9",
    .keys = keys,
    .async = 0,
    .supports_compression = 0,
    .server = ALGO_SERVER_PS,
    .create = create,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = NULL,
    .fault = on_fault,
};
