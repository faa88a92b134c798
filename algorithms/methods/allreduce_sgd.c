/* allreduce_sgd: parallel momentum SGD (PmSGD, docs/algorithms.md 1.1). Every
 * worker holds the same x and m. Each round every worker computes its
 * gradient at x, enters a blocking all-reduce of S bytes (the configured
 * collective: ring, tree or parameter server, built from point-to-point
 * messages), and updates with the averaged gradient. The update is the
 * configured optimizer's ([algorithm] optimizer, default sgd), with one
 * state for the shared model.
 *
 * Timing: a worker starts its next step as soon as ITS part of the
 * collective has completed (it then holds the reduced gradient), so
 * workers wait only for what they need. The update itself is applied once
 * per round, at the first rank's completion: by then every gradient of the
 * round exists, because a rank can only complete after all ranks entered.
 * The round is counted (algo_env_iteration: evaluation, stop rules) when
 * the LAST rank completes, so a synchronous round costs the whole
 * collective, e.g. 2 log2(n) S/B for the binomial tree (its broadcast
 * included). x is unchanged between the two: the next update needs every
 * rank in the next round.
 *
 * Compression ([algorithm] compressor other than none, docs/algorithms.md
 * section 1.7, docs/compressors.md): the optimizer must be sgd (error
 * feedback compresses a linear update). When its compute step ends, worker
 * i turns its gradient into the direction of its OWN optimizer state
 * (dir_i = m_i with m_i = beta m_i + g_i, after g_i += wd x; g_i when
 * momentum = 0; g_i + beta m_i for Nesterov), compresses u_i = lr dir_i
 * with error feedback and enters an all-gather of its message (a
 * compressor whose messages can be summed would use the configured
 * all-reduce instead); the round applies x -= (1/n) sum_i Delta_i, summed
 * in worker-id order. Momentum being linear, the mean of the workers'
 * momenta is the momentum of the mean gradient, so topk(1.0) gives PmSGD
 * up to rounding. With compressor = none nothing of this runs: the dense
 * path is the one above.
 *
 * Compression time ([algorithm] compress_time_per_value = c, only with a
 * compressor, docs/compressors.md): encoding costs c x d_wire seconds of
 * compute between the end of the worker's compute step and its entering
 * the collective; decoding costs c x (the values it decodes: n x
 * entries(d_wire) after an all-gather, entries(d_wire) after an
 * all-reduce) after its part of the collective, before its next step. Both
 * count in the worker's compute time. With buckets the message is encoded
 * before the step, and both costs are charged after the last bucket. Under
 * crashes (below) the same costs are charged, the decoding of an
 * all-gather counting the messages of the group's members; a rejoining
 * worker is sent the model once the rank that applied the update has
 * decoded it.
 *
 * Buckets ([algorithm] bucket > 0, algorithms/overlap.h): the compute step
 * and the all-reduce are replaced by bucketed all-reduces that overlap the
 * backward pass; on_coll_done then runs when the worker's last bucket is
 * reduced. Gradients and updates are unchanged.
 *
 * Crashes ([faults] schedule or mtbf, docs/faults.md): when workers can
 * crash, the rounds run over a GROUP of live workers, each group with its
 * own collective over its members' hosts (rank r = the r-th member;
 * algorithms/group.h, shared with the Local SGD family). A
 * crash of worker c aborts the first round whose update has not been
 * applied (A): a new group of the survivors takes over from round A. A
 * survivor only learns of the crash by timing out: it enters the new
 * group's collective [faults] sync_timeout after it entered round A (or
 * after the crash, when it had entered before), so the round costs the
 * timeout plus a collective over n - 1 ranks. The update is the mean over
 * the members' gradients (renormalized over who took part). If round A - 1
 * was still finishing (its update applied, its all-gather still running),
 * it finishes in its old collective without waiting for c. A rejoining
 * worker joins at the next applied update: the rank that applied it sends
 * it the model (S bytes), it starts the next round from that model (the
 * optimizer state is the shared one) and the group grows from that round
 * on. Without crashes nothing of this runs (the original path above). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/compress/compress.h"
#include "algorithms/drivers/group.h"
#include "algorithms/drivers/overlap.h"
#include "sim/units.h"

typedef struct faults faults;
typedef algo_group group;

typedef struct state {
    algo_env *env;
    sim_coll *coll;
    algo_overlap *ov; /* [algorithm] bucket > 0: bucketed, overlapped all-reduces */
    float *x;        /* the shared model */
    algo_optim_state *opt; /* the configured optimizer's state for x */
    float *gbar;     /* averaged gradient */
    const float **gptr;
    int done_in_round;
    int applied;     /* the round's update has been applied */
    int64_t round_samples; /* the round's samples, counted at its first completion */
    /* compression; comp == NULL on the dense path */
    algo_compressor *comp;
    algo_compress_worker *cw;  /* n: each worker's residual and message */
    algo_optim_state **wopt;   /* n: each worker's optimizer state */
    float *u;                  /* d: one worker's update */
    sim_time enc_dt, dec_dt;   /* compression compute per step (encode, decode) */
    double dec_cost;           /* decoding seconds per message (c x entries(d_wire)) */
    faults *f;                 /* workers may crash, else NULL */
} state;

static const sim_key keys[] = {
    {"algorithm", "compress_time_per_value", "1e-9", SIM_KEY_DOUBLE, NULL,
     "compute seconds per parameter (d_wire) encoded or value decoded, with a compressor (>= 0)"},
    {0},
};

static void begin_step(state *st, int w);

/* ---- crashes: groups of live workers ----------------------------------- */

/* W_ENCODING, W_DECODING: the compression time around the collective */
enum { W_OFF = 0, W_COMPUTING, W_WAITING, W_ENTERED, W_ENCODING, W_DECODING };

struct faults {
    algo_groups groups;  /* every group made (algorithms/group.h) */
    int64_t round;       /* the oldest round not completed */
    int need;            /* completions round `round` still counts */
    int done;            /* completions so far */
    int applied;         /* round `round`'s update is applied */
    int64_t round_samples;
    int64_t *wround;     /* per worker: the round it computes or waits in */
    int *wstat;          /* W_* */
    uint32_t *wgen;      /* per worker: incarnation of its events */
    uint32_t *tgen;      /* per worker: its pending timeout event */
    int64_t *late_round; /* per worker: the round whose entry waits the timeout */
    double *wbytes;      /* per worker: its message of the round */
    int *pending;        /* rejoined, joins at the next applied update */
    int applier;         /* the worker that applied round `round`'s update */
    int *scratch;        /* n ints: member lists of new groups */
    sim_time timeout;
};

/* Worker w's update u = lr dir_w (see the top of the file), compressed into
 * its message; returns the message's wire size. */
static double compressed_encode(state *st, int w)
{
    algo_env *env = st->env;
    const int64_t d = env->d;
    float *g = env->w[w].grad, *u = st->u;
    const float flr = (float)algo_env_lr(env);
    algo_optim_direction(st->wopt[w], st->x, g);
    for (int64_t j = 0; j < d; j++)
        u[j] = flr * g[j];
    return algo_compress_worker_encode(&st->cw[w], u)->bytes;
}

/* x -= (1/n) sum_i Delta_i, in worker-id order. */
static void compressed_apply(state *st)
{
    algo_env *env = st->env;
    const int64_t d = env->d;
    float *sum = st->gbar;
    memset(sum, 0, (size_t)d * sizeof *sum);
    for (int i = 0; i < env->n; i++)
        algo_compress_decode_add(st->comp, &st->cw[i].msg, 1.0f, sum);
    const float inv = 1.0f / (float)env->n;
    for (int64_t j = 0; j < d; j++)
        st->x[j] -= inv * sum[j];
}

/* Rank's part of the round is over (after its decoding, if charged);
 * idle: it still has to end its idle interval. */
static void rank_done(state *st, int rank, int idle)
{
    algo_env *env = st->env;
    if (!st->applied) {
        if (st->comp) {
            compressed_apply(st);
        } else {
            algo_mean(st->gbar, st->gptr, env->n, env->d);
            algo_optim_step(st->opt, st->x, st->gbar, algo_env_lr(env));
        }
        st->applied = 1;
        st->round_samples = 0;
        for (int i = 0; i < env->n; i++)
            st->round_samples += env->w[i].grad_samples;
    }
    if (++st->done_in_round == env->n) {
        st->done_in_round = 0;
        st->applied = 0;
        algo_env_iteration(env, st->round_samples);
    }
    if (idle)
        algo_env_idle_end(env, rank);
    begin_step(st, rank);
}

static void on_decoded(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    rank_done(ctx, (int)arg, 0);
}

static void on_coll_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    state *st = ctx;
    algo_env *env = st->env;
    sim_time dt = st->dec_dt + (st->ov ? st->enc_dt : 0);
    if (st->comp && dt > 0) {
        algo_env_idle_end(env, rank);
        /* decoding (and with buckets the encoding) is compute */
        env->w[rank].compute_time += sim_time_to_s(dt);
        if (!sim_engine_schedule(env->eng, dt, on_decoded, st, (uint64_t)rank, NULL, NULL))
            algo_env_fail(env, SIM_ENOMEM, "allreduce_sgd: cannot schedule decompression");
        return;
    }
    rank_done(st, rank, 1);
}

static void on_encoded(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    int w = (int)arg;
    algo_env_coll_enter(st->env, st->coll, w, st->cw[w].msg.bytes);
}

static void on_encoded_idle(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    state *st = ctx;
    algo_env_idle_begin(st->env, (int)arg);
    on_encoded(eng, ctx, arg, payload);
}

static void on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    int w = (int)arg;
    algo_env *env = st->env;
    if (!st->comp) {
        algo_env_idle_begin(env, w);
        algo_env_coll_enter(env, st->coll, w, env->msg_bytes);
        return;
    }
    compressed_encode(st, w);
    if (st->enc_dt <= 0) {
        algo_env_idle_begin(env, w);
        on_encoded(eng, ctx, arg, payload);
        return;
    }
    /* the encoding is compute: the worker is idle only once it is done */
    env->w[w].compute_time += sim_time_to_s(st->enc_dt);
    if (!sim_engine_schedule(env->eng, st->enc_dt, on_encoded_idle, st, arg, NULL, NULL))
        algo_env_fail(env, SIM_ENOMEM, "allreduce_sgd: cannot schedule compression");
}

static void begin_step(state *st, int w)
{
    algo_env *env = st->env;
    algo_env_grad(env, w, st->x, env->w[w].grad);
    if (st->ov) {
        /* bucketed: the message is known at the start of the step (the
         * gradient is, and a compressed one depends on nothing that can
         * change before its compute step ends) */
        if (st->comp)
            algo_env_grad_wait(env, w);
        double bytes = st->comp ? compressed_encode(st, w) : env->msg_bytes;
        algo_overlap_step(st->ov, w, algo_env_step_samples(env, w), bytes);
        return;
    }
    algo_env_compute(env, w, algo_env_step_samples(env, w), on_compute_done, st,
                     (uint64_t)w);
}


/* ---- crashes ([faults]): the group path --------------------------------- */

static group *group_for(const faults *f, int64_t round)
{
    return algo_groups_for(&f->groups, round);
}

static void on_group_done(sim_engine *eng, void *ctx, int rank);

/* A new group of the given workers (ascending) from round first on. */
static group *group_add(state *st, const int *members, int n, int64_t first)
{
    algo_env *env = st->env;
    sim_coll_kind kind = st->comp && st->comp->vt->agg == ALGO_COMPRESS_ALLGATHER
                             ? SIM_COLL_ALLGATHER
                             : env->allreduce_kind;
    algo_group_colls c = {.kind = kind, .done = on_group_done, .owner = st,
                          .who = "allreduce_sgd"};
    return algo_groups_add(&st->f->groups, env, members, n, first, &c);
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

static void g_begin_step(state *st, int w, int64_t round);
static void g_after_encode(state *st, int w);
static void g_on_encoded(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

static void g_enter(state *st, int w)
{
    faults *f = st->f;
    group *g = group_for(f, f->wround[w]);
    int rank = g ? g->rank_of[w] : -1;
    if (rank < 0) {
        algo_env_fail(st->env, SIM_EINTERNAL, "allreduce_sgd: worker %d is in no group of "
                      "round %lld", w, (long long)f->wround[w]);
        return;
    }
    f->wstat[w] = W_ENTERED;
    algo_env_coll_enter(st->env, g->coll, rank, f->wbytes[w]);
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
    if (!sim_engine_schedule(st->env->eng, f->timeout, on_timeout, st, algo_group_arg(w, f->tgen[w]),
                             NULL, NULL))
        algo_env_fail(st->env, SIM_ENOMEM, "allreduce_sgd: cannot schedule a timeout");
}

/* Counts the round when every completion it needs is in. */
static void g_round_check(state *st)
{
    faults *f = st->f;
    if (f->need <= 0 || f->done < f->need)
        return;
    int64_t samples = f->round_samples;
    f->round++;
    f->done = 0;
    f->applied = 0;
    group *g = group_for(f, f->round);
    f->need = g ? g->n : 0;
    algo_env_iteration(st->env, samples);
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

/* The round's update over the members of g (worker w applies it first). */
static void g_apply(state *st, group *g, int w)
{
    algo_env *env = st->env;
    faults *f = st->f;
    const int64_t d = env->d;
    if (st->comp) {
        float *sum = st->gbar;
        memset(sum, 0, (size_t)d * sizeof *sum);
        for (int r = 0; r < g->n; r++)
            algo_compress_decode_add(st->comp, &st->cw[g->members[r]].msg, 1.0f, sum);
        const float inv = 1.0f / (float)g->n;
        for (int64_t j = 0; j < d; j++)
            st->x[j] -= inv * sum[j];
    } else {
        for (int r = 0; r < g->n; r++)
            st->gptr[r] = env->w[g->members[r]].grad;
        algo_mean(st->gbar, st->gptr, g->n, d);
        algo_optim_step(st->opt, st->x, st->gbar, algo_env_lr(env));
    }
    f->applied = 1;
    f->applier = w;
    f->round_samples = 0;
    for (int r = 0; r < g->n; r++)
        f->round_samples += env->w[g->members[r]].grad_samples;
}

/* The pending joiners join from the next round: w, which applied the
 * round's update, sends them x. */
static void g_joiners(state *st, int w)
{
    algo_env *env = st->env;
    faults *f = st->f;
    group *next = group_for(f, f->round + 1);
    int k = algo_group_members_joining(next, f->pending, env, f->scratch);
    if (!k)
        return;
    if (!group_add(st, f->scratch, k, f->round + 1)) {
        algo_env_fail(env, SIM_ENOMEM, "allreduce_sgd: out of memory for a group");
        return;
    }
    for (int i = 0; i < env->n; i++) {
        if (!f->pending[i] || env->w[i].down)
            continue;
        f->pending[i] = 0;
        f->wround[i] = f->round + 1;
        f->wstat[i] = W_COMPUTING;
        f->late_round[i] = -1;
        algo_env_send(env, w, i, env->msg_bytes, on_join_model, st, algo_group_arg(i, f->wgen[i]));
    }
}

/* The decoding time of a round in group g: c x entries(d_wire) per message
 * decoded (every member's after an all-gather, one after an all-reduce). */
static sim_time group_decode_time(const state *st, const group *g)
{
    if (!st->comp || st->dec_dt <= 0)
        return 0;
    double decoded = st->comp->vt->agg == ALGO_COMPRESS_ALLGATHER ? (double)g->n : 1.0;
    return sim_time_from_s(st->dec_cost * decoded);
}

static void g_on_decoded(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    faults *f = st->f;
    int w = algo_group_arg_w(arg);
    if (f->wgen[w] != algo_group_arg_gen(arg) || f->wstat[w] != W_DECODING)
        return;
    if (f->applier == w)
        g_joiners(st, w);
    f->done++;
    g_begin_step(st, w, f->wround[w] + 1);
    g_round_check(st);
}

static void on_group_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    group *g = ctx;
    state *st = g->owner;
    faults *f = st->f;
    int w = g->members[rank];
    int64_t k = f->wround[w];
    if (f->wstat[w] != W_ENTERED || k != f->round || group_for(f, k) != g)
        return; /* a crashed worker, or an aborted round's collective */
    sim_time dec = group_decode_time(st, g);
    if (!f->applied) {
        g_apply(st, g, w);
        if (dec <= 0)
            g_joiners(st, w);
    }
    algo_env_idle_end(st->env, w);
    if (dec > 0) {
        /* decoding is compute; the round counts the worker once it is done */
        f->wstat[w] = W_DECODING;
        st->env->w[w].compute_time += sim_time_to_s(dec);
        if (!sim_engine_schedule(st->env->eng, dec, g_on_decoded, st, algo_group_arg(w, f->wgen[w]), NULL,
                                 NULL))
            algo_env_fail(st->env, SIM_ENOMEM, "allreduce_sgd: cannot schedule decompression");
        return;
    }
    f->done++;
    g_begin_step(st, w, k + 1);
    g_round_check(st);
}

static void g_on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    faults *f = st->f;
    int w = algo_group_arg_w(arg);
    if (f->wgen[w] != algo_group_arg_gen(arg) || f->wstat[w] != W_COMPUTING)
        return;
    f->wbytes[w] = st->comp ? compressed_encode(st, w) : st->env->msg_bytes;
    if (st->comp && st->enc_dt > 0) {
        /* the encoding is compute: the worker is idle only once it is done */
        f->wstat[w] = W_ENCODING;
        st->env->w[w].compute_time += sim_time_to_s(st->enc_dt);
        if (!sim_engine_schedule(st->env->eng, st->enc_dt, g_on_encoded, st, arg, NULL, NULL))
            algo_env_fail(st->env, SIM_ENOMEM, "allreduce_sgd: cannot schedule compression");
        return;
    }
    g_after_encode(st, w);
}

static void g_on_encoded(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    int w = algo_group_arg_w(arg);
    if (st->f->wgen[w] != algo_group_arg_gen(arg) || st->f->wstat[w] != W_ENCODING)
        return;
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

/* Worker c crashed: see the top of the file. */
static void g_crash(state *st, int c)
{
    algo_env *env = st->env;
    faults *f = st->f;
    int64_t a = f->applied ? f->round + 1 : f->round;
    if (f->applied && f->wround[c] == f->round &&
        (f->wstat[c] == W_ENTERED || f->wstat[c] == W_DECODING))
        f->need--; /* the finishing round does not wait for it */
    f->wgen[c]++;
    f->tgen[c]++;
    f->wstat[c] = W_OFF;
    f->pending[c] = 0;
    algo_env_idle_end(env, c);
    group *g = group_for(f, a);
    if (g && g->rank_of[c] >= 0) {
        int k = algo_group_members_except(g, c, f->scratch);
        group *ng = group_add(st, f->scratch, k, a);
        if (!ng) {
            algo_env_fail(env, SIM_ENOMEM, "allreduce_sgd: out of memory for a group");
            return;
        }
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

/* Worker j rejoined: it joins at the next applied update; when nobody is
 * left to apply one, it starts a group of its own at once. */
static void g_rejoin(state *st, int j)
{
    faults *f = st->f;
    f->wgen[j]++;
    f->pending[j] = 1;
    group *g = group_for(f, f->round);
    if (g && g->n > 0)
        return;
    int m = j;
    if (!group_add(st, &m, 1, f->round)) {
        algo_env_fail(st->env, SIM_ENOMEM, "allreduce_sgd: out of memory for a group");
        return;
    }
    f->pending[j] = 0;
    f->done = 0;
    f->applied = 0;
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
    if (cfg->bucket > 0)
        return sim_config_error(cfg, "algorithm", "bucket", SIM_ECONFIG, err,
                                "gradient buckets do not support worker crashes ([faults]); "
                                "use bucket = 0");
    faults *f = calloc(1, sizeof *f);
    if (!f)
        return sim_err_set(err, SIM_ENOMEM, "allreduce_sgd: out of memory");
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
    int *m = f->scratch;
    if (!f->wround || !f->wstat || !f->wgen || !f->tgen || !f->late_round || !f->wbytes ||
        !f->pending || !m)
        return sim_err_set(err, SIM_ENOMEM, "allreduce_sgd: out of memory");
    for (int i = 0; i < env->n; i++) {
        f->late_round[i] = -1;
        m[i] = i;
    }
    group *g = group_add(st, m, env->n, 0);
    if (!g)
        return env->error.code ? sim_err_set(err, env->error.code, "%s", env->error.msg)
                               : sim_err_set(err, SIM_ENOMEM, "allreduce_sgd: out of memory");
    f->need = env->n;
    return 0;
}

/* Builds the compression state from [algorithm] compressor and
 * error_feedback; none (the identity) leaves st->comp NULL. */
static int compressed_create(state *st, sim_err *err)
{
    algo_env *env = st->env;
    const sim_config *cfg = env->cfg;
    algo_compressor *c = algo_compress_from_config(cfg, err);
    if (!c)
        return err && err->code ? err->code : SIM_ECONFIG;
    if (c->vt->identity) {
        algo_compress_destroy(c);
        return 0;
    }
    st->comp = c;
    int rc = algo_optim_require_sgd(cfg, "with a compressor: error feedback needs a linear update",
                                    err);
    if (rc)
        return rc;
    const size_t n = (size_t)env->n, d = (size_t)env->d;
    st->cw = calloc(n, sizeof *st->cw);
    st->wopt = calloc(n, sizeof *st->wopt);
    st->u = malloc(d * sizeof *st->u);
    if (!st->cw || !st->wopt || !st->u)
        return sim_err_set(err, SIM_ENOMEM, "allreduce_sgd: out of memory");
    int64_t d_wire = env->wire_params > 0 ? env->wire_params : env->d;
    int value_bytes = env->wire_value_bytes > 0 ? env->wire_value_bytes : 4;
    for (int i = 0; i < env->n; i++) {
        st->wopt[i] = algo_optim_state_from_config(cfg, env->model, env->d, err);
        if (!st->wopt[i])
            return err && err->code ? err->code : SIM_EINTERNAL;
        rc = algo_compress_worker_init(&st->cw[i], c, env->d, d_wire, value_bytes,
                                       cfg->error_feedback, cfg->seed, i, err);
        if (rc)
            return rc;
    }
    double cost;
    rc = sim_config_get_double(cfg, "algorithm", "compress_time_per_value", &cost, err);
    if (rc)
        return rc;
    if (!(cost >= 0) || !isfinite(cost))
        return sim_config_error(cfg, "algorithm", "compress_time_per_value", SIM_ECONFIG, err,
                                "must be >= 0, got %g", cost);
    /* encode: one pass over d_wire values; decode: the values received */
    double decoded = (double)c->vt->entries(c, d_wire);
    if (c->vt->agg == ALGO_COMPRESS_ALLGATHER)
        decoded *= env->n;
    st->enc_dt = sim_time_from_s(cost * (double)d_wire);
    st->dec_dt = sim_time_from_s(cost * decoded);
    st->dec_cost = cost * (double)c->vt->entries(c, d_wire);
    return 0;
}

static void destroy(void *p)
{
    state *st = p;
    if (!st)
        return;
    for (int i = 0; st->cw && i < st->env->n; i++)
        algo_compress_worker_release(&st->cw[i]);
    for (int i = 0; st->wopt && i < st->env->n; i++)
        algo_optim_state_destroy(st->wopt[i]);
    free(st->cw);
    free(st->wopt);
    free(st->u);
    algo_compress_destroy(st->comp);
    sim_coll_destroy(st->coll);
    algo_overlap_destroy(st->ov);
    free(st->x);
    algo_optim_state_destroy(st->opt);
    free(st->gbar);
    free(st->gptr);
    faults_free(st->f);
    free(st);
}

static int create(algo_env *env, void **out, sim_err *err)
{
    state *st = calloc(1, sizeof *st);
    if (!st)
        return sim_err_set(err, SIM_ENOMEM, "allreduce_sgd: out of memory");
    st->env = env;
    size_t bytes = (size_t)env->d * sizeof(float);
    st->x = malloc(bytes);
    st->gbar = malloc(bytes);
    st->gptr = malloc((size_t)env->n * sizeof *st->gptr);
    if (!st->x || !st->gbar || !st->gptr) {
        destroy(st);
        return sim_err_set(err, SIM_ENOMEM, "allreduce_sgd: out of memory");
    }
    st->opt = algo_optim_state_from_config(env->cfg, env->model, env->d, err);
    if (!st->opt) {
        destroy(st);
        return err && err->code ? err->code : SIM_EINTERNAL;
    }
    for (int i = 0; i < env->n; i++)
        st->gptr[i] = env->w[i].grad;
    /* every worker starts from worker 0's initial model (init = same or not:
     * one shared model is the method's definition) */
    memcpy(st->x, env->w[0].x, bytes);
    int rc = compressed_create(st, err);
    if (rc) {
        destroy(st);
        return rc;
    }
    if (algo_env_crashes(env)) {
        rc = faults_create(st, err);
        if (rc) {
            destroy(st);
            return rc;
        }
        *out = st;
        return 0;
    }
    sim_coll_kind kind = st->comp && st->comp->vt->agg == ALGO_COMPRESS_ALLGATHER
                             ? SIM_COLL_ALLGATHER
                             : env->allreduce_kind;
    if (env->cfg->bucket > 0)
        st->ov = algo_overlap_create(env, env->cfg->bucket, kind, on_coll_done, st, err);
    else
        st->coll = algo_env_coll(env, kind, on_coll_done, st, err);
    if (!st->coll && !st->ov) {
        destroy(st);
        return err ? err->code : SIM_EINTERNAL;
    }
    *out = st;
    return 0;
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

const algo_vt algo_allreduce_sgd = {
    .name = "allreduce_sgd",
    .summary = "synchronous all-reduce SGD with heavy-ball or Nesterov momentum (PmSGD)",
    .reference = "1.1",
    .keys = keys,
    .async = 0,
    .supports_compression = 1,
    .supports_bucket = 1,
    .server = ALGO_SERVER_PS,
    .create = create,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = NULL,
    .fault = on_fault,
};
