/* The synchronous gossip driver (see gossip.h).
 *
 * Per worker i the state is (k, t, round): its iteration, the global index
 * of its current gossip step and the steps done in iteration k. Invariants:
 *  - slot[p] holds what i sent (or will send) at its last step of parity p;
 *    pend[p] counts the out-neighbours that have not combined it yet, and a
 *    slot is refilled only when pend[p] == 0 (else i waits, wait_slot);
 *  - recv holds (step, count) pairs: the delivered, not yet combined
 *    messages of each step s >= t. On a static graph flow control keeps
 *    senders at most one step ahead of their receivers; on a time-varying
 *    graph the receiver of step s + 2 is not the one whose consumption
 *    freed the slot, so a sender can be further ahead, but by less than
 *    R = n (period + 1) + 4 steps (each node receives from its period's
 *    in-neighbours within every period, so no node passes another by more
 *    than period + 1 steps per hop). The pairs are few all the same: a
 *    sender j refills slot[p] only after every receiver has combined it,
 *    so at most two of j's messages (one per parity) wait at i, and the
 *    senders are i's neighbours over a period (the static lists). Worker i
 *    keeps room for 2 deg(i) + 2 pairs, so the bookkeeping is linear in
 *    the edges, not n x R;
 *  - a combine reads the senders' slots, never a message copy, so the
 *    network carries sizes and the slots carry contents.
 * Iteration k of the whole system completes when done_cnt[k mod R] reaches
 * n; workers are fewer than R iterations apart by the same bound. A
 * violation (impossible on a connected graph) stops the run as failed
 * (algo_env_fail). iter_samples[k mod R] sums the samples of the gradients
 * of global iteration k, which is what its completion adds to env->samples
 * (the batches may change between iterations). */
#include "algorithms/drivers/gossip.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct recv_cnt {
    int64_t step;
    int count;
} recv_cnt;

typedef struct gworker {
    int64_t k;             /* iteration in progress */
    int64_t t;             /* global index of the current gossip step */
    int round;             /* gossip steps completed in iteration k */
    int compute_done;      /* the gradient of iteration k has been computed */
    int mixed_done;        /* mixing of iteration k is complete (result set) */
    int published;         /* step t's vectors have been sent */
    int wait_slot;         /* waiting for pend[t & 1] to reach 0 */
    int ready_last;        /* AWC: last step's messages in, combine at compute end */
    recv_cnt *recv;        /* delivered messages per step: recv[0 .. nrecv) */
    int nrecv, cap_recv;
    int pend[2];
    float *slot[2];        /* send buffers (len floats) */
    float *mix;            /* result of the last combine (len floats) */
    const float *result;   /* mixed vectors handed to finish */
    double delta;          /* ||sent - combined||^2 of the last step (x part) */
    double lr;             /* learning rate of iteration k */
    algo_gossip_plan plan; /* mixing of iteration k */
    int64_t rounds_total;
    float *x;              /* the model: env->w[i].x, or a slot in place */
    /* crashes ([faults], crash mode only) */
    uint32_t gen;          /* incarnation: +1 at every crash and rejoin */
    uint32_t tseq;         /* timer sequence: a timeout is live while it matches */
    int timed_out;         /* the wait of step t has lasted sync_timeout */
    int64_t kc;            /* iteration in progress at the last crash */
    int64_t join_t;        /* first gossip step of this incarnation */
    int64_t pub[2];        /* step last published per parity, -1 = none */
    struct gnb *nb;        /* in-neighbours (static graph; the union over a period
                            * on a time-varying one), nnb of them */
    int nnb;
    /* time-varying graphs in crash mode (see "time-varying graphs" below) */
    int dst[2];            /* receiver of the step pub[p] message, -1 = none */
    int64_t keep_t[2];     /* a crashed incarnation's message still delivered */
    uint32_t keep_gen[2];  /* that incarnation */
    struct tvmsg *tv;      /* delivered, uncombined messages: ntv of them */
    int ntv, cap_tv;
} gworker;

/* A delivered message on a time-varying graph in crash mode. */
typedef struct tvmsg {
    int64_t step;
    int src;
} tvmsg;

/* Worker i's view of in-neighbour j in crash mode. */
typedef struct gnb {
    int j;
    int64_t got[2];        /* step of j's delivered, uncombined message per parity */
    uint32_t dead_gen;     /* j's incarnation i has timed out on (UINT32_MAX: none) */
} gnb;

typedef struct frame {
    int64_t k;             /* iteration whose results it holds, -1 = free */
    int count;
    float *x;              /* n x d */
    unsigned char *has;    /* crash mode: row i filled by worker i */
} frame;

struct algo_gossip {
    algo_env *env;
    algo_gossip_ops ops;
    void *m;
    int n;
    int64_t d, len;        /* len = width x d */
    int steps;             /* gossip_steps */
    int in_place;          /* x_i^k lives in slot[k & 1] (see sends_model) */
    double msg_bytes;      /* width x S */
    gworker *w;
    float *slab;           /* every worker's slots and mix */
    const float **sp[2];   /* sp[p][j] = w[j].slot[p] */
    const float **ptrs;    /* scratch: n model pointers */
    sim_coll *coll_exact, *coll_scalar, *coll_sync;
    float *avg;            /* exact mean of the current exact round */
    float *savg;           /* the mean of the current synchronization (sync_after) */
    int exact_done, scalar_done, sync_done;
    double est, est_first; /* adaptive: estimate of the current step, of the first */
    int64_t spi;           /* samples of one global iteration at the current batches */
    int64_t spi_changes;   /* env->batch_changes when spi was summed */
    int64_t *iter_samples; /* R slots: samples of global iteration s at [s mod R] */
    int64_t *done_cnt;
    recv_cnt *recv_slab;   /* every worker's recv pairs */
    int R;
    int64_t k_lo;          /* lowest incomplete global iteration */
    frame **frames;
    int n_frames;
    frame *last;           /* frame of the latest completed global iteration */
    algo_gossip_profile *prof;
    int crash;             /* algo_env_crashes: crash mode (docs/faults.md) */
    sim_time timeout;      /* [faults] sync_timeout */
    gnb *nb_slab;
    int tv;                /* crash mode on a time-varying graph */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fail(algo_gossip *g, int code, const char *what)
{
    algo_env_fail(g->env, code, "%s: %s", g->env->cfg->algorithm, what);
}

/* Sums spi again when a worker's batch has changed since the last sum. */
static void refresh_spi(algo_gossip *g)
{
    if (g->spi_changes == g->env->batch_changes)
        return;
    g->spi = 0;
    for (int i = 0; i < g->n; i++)
        g->spi += algo_env_step_samples(g->env, i);
    g->spi_changes = g->env->batch_changes;
}

/* Samples applied before global iteration k starts: exact up to k_lo
 * (env->samples), then spi per iteration (exact while no batch changes). */
static int64_t samples_before(const algo_gossip *g, int64_t k)
{
    return g->env->samples + (k - g->k_lo) * g->spi;
}

/* The delivered messages of step t at worker w (0 if none). */
static int recv_of(const gworker *w, int64_t t)
{
    for (int e = 0; e < w->nrecv; e++)
        if (w->recv[e].step == t)
            return w->recv[e].count;
    return 0;
}

/* Adds delta messages of step t; a pair that falls to 0 is removed.
 * -1 when w has no room left (impossible, see the header comment). */
static int recv_add(gworker *w, int64_t t, int delta)
{
    int e = 0;
    while (e < w->nrecv && w->recv[e].step != t)
        e++;
    if (e == w->nrecv) {
        if (delta == 0)
            return 0;
        if (w->nrecv == w->cap_recv)
            return -1;
        w->recv[w->nrecv++] = (recv_cnt){.step = t, .count = 0};
    }
    w->recv[e].count += delta;
    if (w->recv[e].count == 0)
        w->recv[e] = w->recv[--w->nrecv];
    return 0;
}

static void begin_iter(algo_gossip *g, int i);
static void try_publish(algo_gossip *g, int i);
static void check_round(algo_gossip *g, int i);

double algo_gossip_epoch_at(const algo_gossip *g, int64_t k)
{
    return (double)samples_before(g, k) / (double)g->env->ds->train.n;
}

int64_t algo_gossip_rounds(const algo_gossip *g, int i) { return g->w[i].rounds_total; }

float *algo_gossip_x(const algo_gossip *g, int i) { return g->w[i].x; }

void algo_gossip_set_profile(algo_gossip *g, algo_gossip_profile *p) { g->prof = p; }

/* ---- evaluation snapshots ----------------------------------------------- */

/* The runner evaluates after global iteration k when this holds (its
 * eval_every count, max_iterations and max_epochs rules). */
static int need_snapshot(const algo_gossip *g, int64_t k)
{
    const sim_config *c = g->env->cfg;
    int64_t it = k + 1;
    if (c->eval_every_iters > 0 && it % c->eval_every_iters == 0)
        return 1;
    if (c->max_iterations > 0 && it == c->max_iterations)
        return 1;
    if (c->max_epochs > 0) {
        double lim = c->max_epochs * (double)g->env->ds->train.n;
        int64_t before = samples_before(g, k), through = before + g->spi;
        if ((double)through >= lim && (double)before < lim)
            return 1;
        /* with changing batches the later iterations' samples are a guess:
         * one iteration's worth of margin either side */
        if (g->env->batch_changes > 0 && (double)(through + g->spi) >= lim &&
            (double)(before - g->spi) < lim)
            return 1;
    }
    return 0;
}

static frame *frame_find(algo_gossip *g, int64_t k)
{
    for (int f = 0; f < g->n_frames; f++)
        if (g->frames[f]->k == k)
            return g->frames[f];
    return NULL;
}

static frame *frame_get(algo_gossip *g, int64_t k)
{
    frame *f = frame_find(g, k);
    if (f)
        return f;
    for (int j = 0; j < g->n_frames; j++)
        if (g->frames[j]->k < 0 && g->frames[j] != g->last) {
            f = g->frames[j];
            break;
        }
    if (!f) { /* grows only while the lead between workers grows */
        frame **fs = realloc(g->frames, (size_t)(g->n_frames + 1) * sizeof *fs);
        if (!fs)
            return NULL;
        g->frames = fs;
        f = calloc(1, sizeof *f);
        if (f)
            f->x = malloc((size_t)g->n * (size_t)g->d * sizeof(float));
        if (f && g->crash)
            f->has = malloc((size_t)g->n);
        if (!f || !f->x || (g->crash && !f->has)) {
            if (f) {
                free(f->x);
                free(f->has);
                free(f);
            }
            return NULL;
        }
        g->frames[g->n_frames++] = f;
    }
    f->k = k;
    f->count = 0;
    if (f->has)
        memset(f->has, 0, (size_t)g->n);
    return f;
}

/* Crash mode: iteration k is complete when the workers that completed it
 * and the ghosts (down since an iteration <= k) make n, and one did. */
static int crash_complete(const algo_gossip *g, int64_t k)
{
    int c = (int)g->done_cnt[k % g->R];
    if (c == 0)
        return 0;
    for (int j = 0; j < g->n; j++)
        if (g->env->w[j].down && g->w[j].kc <= k)
            c++;
    return c >= g->n;
}

static void complete_lo(algo_gossip *g);

/* Crash mode: the live graph may fall apart while workers are down, and its
 * parts drift apart without bound, so the window of iterations doubles
 * until iteration k fits (rare; the counts move to their new slots). */
static int window_fit(algo_gossip *g, int64_t k)
{
    while (k - g->k_lo >= g->R) {
        int R2 = 2 * g->R;
        int64_t *dc = calloc((size_t)R2, sizeof *dc), *is = calloc((size_t)R2, sizeof *is);
        if (!dc || !is) {
            free(dc);
            free(is);
            fail(g, SIM_ENOMEM, "out of memory for the iteration window");
            return -1;
        }
        for (int64_t q = g->k_lo; q < g->k_lo + g->R; q++) {
            dc[q % R2] = g->done_cnt[q % g->R];
            is[q % R2] = g->iter_samples[q % g->R];
        }
        free(g->done_cnt);
        free(g->iter_samples);
        g->done_cnt = dc;
        g->iter_samples = is;
        g->R = R2;
    }
    return 0;
}

static void iteration_done(algo_gossip *g, int64_t k)
{
    if (g->crash && window_fit(g, k + 1) < 0)
        return;
    if (k - g->k_lo >= g->R) { /* cannot happen on a connected graph */
        fail(g, SIM_EINTERNAL, "a worker is a full window of iterations ahead of the slowest");
        return;
    }
    int s = (int)(k % g->R);
    if (g->crash) {
        g->done_cnt[s]++;
        while (!g->env->error.code && crash_complete(g, g->k_lo))
            complete_lo(g);
        return;
    }
    if (++g->done_cnt[s] < g->n || k != g->k_lo)
        return;
    complete_lo(g);
}

/* Global iteration k_lo is complete: count it. */
static void complete_lo(algo_gossip *g)
{
    int64_t k = g->k_lo;
    int s = (int)(k % g->R);
    g->done_cnt[s] = 0;
    int64_t samples = g->iter_samples[s];
    g->iter_samples[s] = 0;
    frame *f = frame_find(g, k);
    if (f) {
        if (g->last && g->last != f)
            g->last->k = -1;
        g->last = f;
    }
    g->k_lo++;
    algo_env_iteration(g->env, samples);
}

int algo_gossip_live_models(void *p, const float **xs)
{
    algo_gossip *g = p;
    if (g->crash) { /* the live workers (those in the snapshot) */
        frame *f = g->last;
        int snap = f && g->env->iterations == f->k + 1, m = 0;
        for (int i = 0; i < g->n; i++) {
            if (snap ? f->has[i] : !g->env->w[i].down)
                xs[m++] = snap ? f->x + (int64_t)i * g->d : g->w[i].x;
        }
        if (m > 0)
            return m;
    }
    algo_gossip_worker_models(g, xs);
    return g->n;
}

const float *algo_gossip_model(void *p, float *scratch)
{
    algo_gossip *g = p;
    int m = algo_gossip_live_models(g, g->ptrs);
    algo_mean(scratch, g->ptrs, m, g->d);
    return scratch;
}

void algo_gossip_worker_models(void *p, const float **xs)
{
    algo_gossip *g = p;
    frame *f = g->last;
    int snap = f && g->env->iterations == f->k + 1;
    for (int i = 0; i < g->n; i++)
        xs[i] = snap && (!f->has || f->has[i]) ? f->x + (int64_t)i * g->d : g->w[i].x;
}

/* ---- the iteration ------------------------------------------------------ */

/* Worker i's iteration k is over (synchronization included): snapshot,
 * count, go on. */
static void end_iter(algo_gossip *g, int i)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    algo_env_idle_end(env, i);
    int64_t k = w->k;
    refresh_spi(g);
    if (need_snapshot(g, k)) {
        frame *f = frame_get(g, k);
        if (!f) {
            fail(g, SIM_ENOMEM, "out of memory for an evaluation snapshot");
        } else {
            memcpy(f->x + (int64_t)i * g->d, w->x, (size_t)g->d * sizeof(float));
            if (f->has)
                f->has[i] = 1;
            f->count++;
        }
    }
    w->k++;
    iteration_done(g, k);
    begin_iter(g, i);
}

/* x_i^{k+1} is set (by finish(result) unless fused): synchronize when the
 * method asks for it, else end the iteration. */
static void finish_iter(algo_gossip *g, int i, int fused)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    if (!fused) {
        double t0 = g->prof ? now_s() : 0;
        g->ops.finish(g->m, env, i, w->k, w->lr, w->result);
        if (g->prof)
            g->prof->update_s += now_s() - t0;
    }
    if (g->ops.sync_after && g->ops.sync_after(g->m, w->k)) {
        algo_env_idle_begin(env, i);
        algo_env_coll_enter(env, g->coll_sync, i, env->msg_bytes);
        return;
    }
    end_iter(g, i);
}

static void mixing_done(algo_gossip *g, int i, const float *result)
{
    gworker *w = &g->w[i];
    w->result = result;
    w->mixed_done = 1;
    if (g->ops.form == ALGO_GOSSIP_ATC || w->compute_done)
        finish_iter(g, i, 0);
}

/* ---- crash mode --------------------------------------------------------- */

#define MSG_T_MASK ((UINT64_C(1) << 40) - 1)

/* A message's tag in crash mode: step, sender's and receiver's incarnations. */
static uint64_t msg_arg(int64_t t, uint32_t sgen, uint32_t dgen)
{
    return ((uint64_t)t & MSG_T_MASK) | ((uint64_t)(sgen & 0xfff) << 40) |
           ((uint64_t)(dgen & 0xfff) << 52);
}

static gnb *nb_of(gworker *w, int j)
{
    for (int a = 0; a < w->nnb; a++)
        if (w->nb[a].j == j)
            return &w->nb[a];
    return NULL;
}

/* 1 when j takes part in gossip step t (it is up and joined by then). */
static int takes_part(const algo_gossip *g, int j, int64_t t)
{
    return !g->env->w[j].down && t >= g->w[j].join_t;
}

static int tv_source(const algo_gossip *g, gworker *w, int i, int *src);

/* Crash mode: can worker i combine step t? Every in-neighbour's message is
 * in, or the neighbour is not part of step t: joined later, or down and
 * either already known dead or waited for sync_timeout. */
static int crash_ready(const algo_gossip *g, const gworker *w)
{
    int64_t t = w->t;
    if (g->tv) {
        int src;
        return tv_source(g, (gworker *)w, (int)(w - g->w), &src);
    }
    for (int a = 0; a < w->nnb; a++) {
        const gnb *b = &w->nb[a];
        if (b->got[t & 1] == t)
            continue;
        int j = b->j;
        if (g->env->w[j].down) {
            if (!w->timed_out && b->dead_gen != g->w[j].gen)
                return 0;
        } else if (t >= g->w[j].join_t) {
            return 0;
        }
    }
    return 1;
}

/* ---- time-varying graphs in crash mode ----------------------------------
 *
 * W_t = (I + P_t)/2 with P_t a permutation (one_peer_exponential): worker i
 * receives from one peer and sends to another, so the weight of a dead peer
 * moved to the diagonal would keep the rows stochastic but not the columns
 * (the dead peer's sender would lose its share). Instead the dead worker is
 * bypassed in P_t's cycle: a sender whose step-t peer does not take part
 * sends to the first worker along the cycle that does (out_at, out_at, ...),
 * and a receiver whose peer is down (known dead: it waited sync_timeout
 * for it at this step or at an earlier one) waits for the first peer along
 * the cycle (in_at, in_at, ...) that takes part, so the live workers' P_t
 * stays a permutation and W_t doubly stochastic over them; a worker whose
 * whole cycle is down keeps its model (the weight goes to the diagonal).
 * At a crash of j: a message to j that j has not combined is sent again at
 * once to the next worker along the cycle that takes part; j's own message
 * of a step j has not combined is void (dropped at its receiver, or on
 * arrival); j's message of a step it has combined is still delivered and
 * combined (j's model took its sender's share). */

static int tv_peer(const algo_gossip *g, int64_t t, int x, int out)
{
    const int *nb;
    int c = out ? topo_graph_out_at(g->env->graph, t, x, &nb)
                : topo_graph_in_at(g->env->graph, t, x, &nb);
    return c > 0 ? nb[0] : x;
}

/* The first worker after `from` along step t's out-cycle that takes part in
 * step t; -1 when the walk comes back to `self` first. */
static int tv_next_out(const algo_gossip *g, int64_t t, int from, int self)
{
    int r = tv_peer(g, t, from, 1);
    for (int c = 0; c < g->n && r != self && !takes_part(g, r, t); c++)
        r = tv_peer(g, t, r, 1);
    return r == self || !takes_part(g, r, t) ? -1 : r;
}

static int tv_find(const gworker *w, int64_t t, int src)
{
    for (int e = 0; e < w->ntv; e++)
        if (w->tv[e].step == t && w->tv[e].src == src)
            return e;
    return -1;
}

static void tv_remove(gworker *w, int64_t t, int src)
{
    int e = tv_find(w, t, src);
    if (e >= 0)
        w->tv[e] = w->tv[--w->ntv];
}

static int tv_add(gworker *w, int64_t t, int src)
{
    if (w->ntv == w->cap_tv) { /* rare: grows with the lead of the senders */
        int cap = 2 * w->cap_tv;
        tvmsg *m = realloc(w->tv, (size_t)cap * sizeof *m);
        if (!m)
            return -1;
        w->tv = m;
        w->cap_tv = cap;
    }
    w->tv[w->ntv++] = (tvmsg){.step = t, .src = src};
    return 0;
}

static int tv_known_dead(const algo_gossip *g, gworker *w, int e)
{
    const gnb *b = nb_of(w, e);
    return w->timed_out || (b && b->dead_gen == g->w[e].gen);
}

/* Can worker i combine step t? 1 with *src the sender to combine (-1: none,
 * the diagonal), 0 while it waits. */
static int tv_source(const algo_gossip *g, gworker *w, int i, int *src)
{
    int64_t t = w->t;
    int e = tv_peer(g, t, i, 0);
    for (int c = 0; c < g->n && e != i; c++) {
        if (tv_find(w, t, e) >= 0) {
            *src = e;
            return 1;
        }
        if (!g->env->w[e].down) {
            if (t >= g->w[e].join_t)
                return 0;
        } else if (!tv_known_dead(g, w, e)) {
            return 0;
        }
        e = tv_peer(g, t, e, 0);
    }
    *src = -1;
    return 1;
}

static void on_timeout(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    algo_gossip *g = ctx;
    int i = (int)(arg & 0xffffffffu);
    gworker *w = &g->w[i];
    if (g->env->w[i].down || w->tseq != (uint32_t)(arg >> 32) || !w->published)
        return;
    w->timed_out = 1;
    check_round(g, i);
}

static void on_msg(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    (void)eng;
    (void)src;
    (void)bytes;
    algo_gossip *g = ctx;
    gworker *w = &g->w[dst];
    int64_t t = (int64_t)arg;
    if (g->tv) {
        t = (int64_t)(arg & MSG_T_MASK);
        gworker *ws = &g->w[src];
        uint32_t sg = (uint32_t)(arg >> 40) & 0xfff, dg = (uint32_t)(arg >> 52) & 0xfff;
        int live = !g->env->w[src].down && (ws->gen & 0xfff) == sg;
        int kept = (ws->keep_gen[t & 1] & 0xfff) == sg && ws->keep_t[t & 1] == t;
        if (!(live || kept) || g->env->w[dst].down || (w->gen & 0xfff) != dg || t < w->t)
            return; /* void with a crashed incarnation (its sender was released) */
        if (tv_add(w, t, src) < 0) {
            fail(g, SIM_ENOMEM, "out of memory for a gossip message");
            return;
        }
        if (w->published && t == w->t)
            check_round(g, dst);
        return;
    }
    if (g->crash) {
        t = (int64_t)(arg & MSG_T_MASK);
        gworker *ws = &g->w[src];
        if (g->env->w[src].down || g->env->w[dst].down || msg_arg(t, ws->gen, w->gen) != arg ||
            t < w->t)
            return; /* lost with a crashed incarnation (its sender was released) */
        gnb *b = nb_of(w, src);
        if (!b) {
            fail(g, SIM_EINTERNAL, "a gossip message from a non-neighbour");
            return;
        }
        b->got[t & 1] = t;
        if (w->published && t == w->t)
            check_round(g, dst);
        return;
    }
    if (t < w->t || t - w->t >= g->R || recv_add(w, t, 1) < 0) {
        fail(g, SIM_EINTERNAL, "a gossip message outside the receive window");
        return;
    }
    if (w->published && t == w->t)
        check_round(g, dst);
}

static void release(algo_gossip *g, int j, int p)
{
    gworker *w = &g->w[j];
    if (--w->pend[p] == 0 && w->wait_slot && (int)(w->t & 1) == p && !g->env->w[j].down) {
        w->wait_slot = 0;
        try_publish(g, j);
    }
}

static void complete_round(algo_gossip *g, int i)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    int64_t t = w->t;
    int p = (int)(t & 1);
    const topo_wmat *W = topo_mixing_at(env->mix, t);
    int fused = g->ops.combine_finish && w->plan.mode == ALGO_MIX_GOSSIP &&
                w->round + 1 >= w->plan.rounds;
    if (fused && g->ops.form == ALGO_GOSSIP_AWC && !w->compute_done) {
        /* On a static graph no neighbour can need this step's slots back
         * before our next send (after our compute), so the combine waits
         * for the gradient and runs fused with the update. */
        if (topo_graph_period(env->graph) == 1) {
            w->ready_last = 1;
            return;
        }
        fused = 0;
    }
    double t0 = g->prof ? now_s() : 0;
    int tv_src = -1, tv_j0 = i;
    if (g->tv) { /* W_t's peer replaced by the first live one along the cycle */
        tv_source(g, w, i, &tv_src);
        tv_j0 = tv_peer(g, t, i, 0);
        for (int e = tv_j0; e != i && e != tv_src; e = tv_peer(g, t, e, 0)) {
            gnb *b = nb_of(w, e);
            if (b && env->w[e].down)
                b->dead_gen = g->w[e].gen;
        }
        if (tv_j0 != i)
            g->sp[p][tv_j0] = tv_src >= 0 ? g->w[tv_src].slot[p] : w->slot[p];
    } else if (g->crash) { /* a missing neighbour's weight goes to the diagonal */
        for (int a = 0; a < w->nnb; a++) {
            gnb *b = &w->nb[a];
            if (b->got[p] == t)
                continue;
            g->sp[p][b->j] = w->slot[p];
            if (g->env->w[b->j].down)
                b->dead_gen = g->w[b->j].gen;
        }
    }
    if (fused && g->in_place) {
        if (w->pend[p ^ 1] > 0) { /* impossible on a static symmetric graph */
            fail(g, SIM_EINTERNAL, "in-place combine into a send buffer still in use");
            return;
        }
        g->ops.combine_finish(g->m, env, i, w->k, w->lr, W, g->sp[p], w->slot[p],
                              w->slot[p ^ 1]);
        w->x = w->slot[p ^ 1];
    } else if (fused)
        g->ops.combine_finish(g->m, env, i, w->k, w->lr, W, g->sp[p], w->x, w->x);
    else
        topo_mixing_apply_row(W, i, g->sp[p], w->mix, g->len);
    if (g->tv && tv_j0 != i)
        g->sp[p][tv_j0] = g->w[tv_j0].slot[p];
    else if (g->crash)
        for (int a = 0; a < w->nnb; a++)
            g->sp[p][w->nb[a].j] = g->w[w->nb[a].j].slot[p];
    if (w->plan.mode == ALGO_MIX_ADAPTIVE) {
        const float *a = w->slot[p], *b = w->mix;
        double s = 0;
        for (int64_t j = 0; j < g->d; j++) {
            double r = (double)a[j] - (double)b[j];
            s += r * r;
        }
        w->delta = s;
    }
    if (g->prof) {
        g->prof->mix_s += now_s() - t0;
        g->prof->rounds++;
    }
    const int *in;
    int nin = topo_graph_in_at(env->graph, t, i, &in);
    if (!g->crash)
        recv_add(w, t, -nin); /* check_round saw nin of them: the pair goes */
    w->published = 0;
    w->timed_out = 0;
    w->round++;
    w->t++;
    w->rounds_total++;
    env->w[i].gossip_rounds++;
    if (g->tv) {
        if (tv_src >= 0) {
            tv_remove(w, t, tv_src);
            release(g, tv_src, p);
        }
    } else if (g->crash) {
        for (int a = 0; a < w->nnb; a++)
            if (w->nb[a].got[p] == t)
                release(g, w->nb[a].j, p);
    } else {
        for (int a = 0; a < nin; a++)
            release(g, in[a], p);
    }
    if (fused) {
        w->mixed_done = 1;
        finish_iter(g, i, 1);
        return;
    }
    if (w->plan.mode == ALGO_MIX_ADAPTIVE) {
        algo_env_coll_enter(env, g->coll_scalar, i, 8.0);
        return;
    }
    if (w->round < w->plan.rounds)
        try_publish(g, i);
    else
        mixing_done(g, i, w->mix);
}

static void check_round(algo_gossip *g, int i)
{
    gworker *w = &g->w[i];
    if (g->crash) {
        if (!w->ready_last && crash_ready(g, w))
            complete_round(g, i);
        return;
    }
    const int *in;
    int nin = topo_graph_in_at(g->env->graph, w->t, i, &in);
    if (recv_of(w, w->t) >= nin)
        complete_round(g, i);
}

/* Fills slot[t & 1] once it is free and sends it (or enters the exact
 * all-reduce with it). */
static void try_publish(algo_gossip *g, int i)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    int p = (int)(w->t & 1);
    if (w->pend[p] > 0) {
        w->wait_slot = 1;
        return;
    }
    float *s = w->slot[p];
    if (g->in_place) {
        if (s != w->x) { /* x_i^k must be in the slot of step k */
            fail(g, SIM_EINTERNAL, "the model is not in its send buffer");
            return;
        }
    } else if (w->round == 0) {
        double t0 = g->prof ? now_s() : 0;
        g->ops.prepare(g->m, env, i, w->k, w->lr, s);
        if (g->prof)
            g->prof->update_s += now_s() - t0;
    } else {
        memcpy(s, w->mix, (size_t)g->len * sizeof(float));
    }
    if (w->plan.mode == ALGO_MIX_EXACT) {
        algo_env_coll_enter(env, g->coll_exact, i, g->msg_bytes);
        return;
    }
    const int *out;
    int nout = topo_graph_out_at(env->graph, w->t, i, &out);
    w->pend[p] = nout;
    w->published = 1;
    const double bytes = g->ops.bytes ? g->ops.bytes(g->m, i) : g->msg_bytes;
    if (g->crash) { /* only to who takes part in step t (nothing reaches a dead host) */
        w->pend[p] = 0;
        w->pub[p] = w->t;
        w->timed_out = 0;
        if (g->tv) { /* to the first worker along P_t's cycle that takes part */
            int r = tv_next_out(g, w->t, i, i);
            w->dst[p] = r;
            w->keep_t[p] = -1;
            nout = 0;
            if (r >= 0) {
                w->pend[p] = 1;
                if (algo_env_send(env, i, r, bytes, on_msg, g,
                                  msg_arg(w->t, w->gen, g->w[r].gen)) < 0)
                    return;
            }
        }
        for (int a = 0; a < nout; a++) {
            if (!takes_part(g, out[a], w->t))
                continue;
            w->pend[p]++;
            if (algo_env_send(env, i, out[a], bytes, on_msg, g,
                              msg_arg(w->t, w->gen, g->w[out[a]].gen)) < 0)
                return;
        }
        if (crash_ready(g, w)) {
            check_round(g, i);
        } else if (!sim_engine_schedule(env->eng, g->timeout, on_timeout, g,
                                        (uint64_t)(uint32_t)i | (uint64_t)(++w->tseq) << 32,
                                        NULL, NULL)) {
            fail(g, SIM_ENOMEM, "cannot schedule a timeout");
        }
        return;
    }
    for (int a = 0; a < nout; a++)
        if (algo_env_send(env, i, out[a], bytes, on_msg, g, (uint64_t)w->t) < 0)
            return;
    check_round(g, i);
}

static void start_mixing(algo_gossip *g, int i)
{
    gworker *w = &g->w[i];
    if (w->plan.mode == ALGO_MIX_GOSSIP && w->plan.rounds == 0) {
        double t0 = g->prof ? now_s() : 0;
        g->ops.prepare(g->m, g->env, i, w->k, w->lr, w->mix);
        if (g->prof)
            g->prof->update_s += now_s() - t0;
        mixing_done(g, i, w->mix);
        return;
    }
    try_publish(g, i);
}

static void on_compute(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    algo_gossip *g = ctx;
    int i = (int)(arg & 0xffffffffu);
    gworker *w = &g->w[i];
    if (g->crash && (g->env->w[i].down || w->gen != (uint32_t)(arg >> 32)))
        return; /* a crashed incarnation's step */
    w->compute_done = 1;
    if (g->ops.form == ALGO_GOSSIP_ATC) {
        algo_env_idle_begin(g->env, i);
        start_mixing(g, i);
    } else if (w->ready_last) {
        w->ready_last = 0;
        complete_round(g, i);
    } else if (w->mixed_done) {
        finish_iter(g, i, 0);
    } else {
        algo_env_idle_begin(g->env, i);
    }
}

static void plan_of(const algo_gossip *g, int64_t k, algo_gossip_plan *out)
{
    *out = (algo_gossip_plan){.mode = ALGO_MIX_GOSSIP, .rounds = g->steps};
    if (g->ops.plan)
        g->ops.plan(g->m, k, algo_gossip_epoch_at(g, k), out);
}

static void begin_iter(algo_gossip *g, int i)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    refresh_spi(g);
    w->lr = algo_lr_at(env->cfg, algo_gossip_epoch_at(g, w->k));
    plan_of(g, w->k, &w->plan);
    w->round = 0;
    w->compute_done = 0;
    w->mixed_done = 0;
    w->result = NULL;
    algo_env_grad(env, i, w->x, env->w[i].grad);
    g->iter_samples[w->k % g->R] += env->w[i].grad_samples;
    algo_env_compute(env, i, algo_env_step_samples(env, i), on_compute, g,
                     (uint64_t)(uint32_t)i | (uint64_t)w->gen << 32);
    if (g->ops.form == ALGO_GOSSIP_AWC)
        start_mixing(g, i);
}

/* ---- crashes and rejoins ------------------------------------------------ */

/* Time-varying graph: worker j has just crashed (see "time-varying graphs"
 * above for the rules). */
static void tv_crash(algo_gossip *g, int j)
{
    algo_env *env = g->env;
    gworker *wj = &g->w[j];
    wj->ntv = 0;
    for (int p = 0; p < 2; p++) {
        /* j's own message: void unless j has combined its step */
        if (wj->pend[p] > 0 && wj->keep_t[p] < 0) {
            int64_t st = wj->pub[p];
            if (st < wj->t && wj->dst[p] >= 0 && !env->w[wj->dst[p]].down) {
                wj->keep_t[p] = st;
                wj->keep_gen[p] = wj->gen - 1; /* the incarnation that sent it */
            } else {
                if (wj->dst[p] >= 0)
                    tv_remove(&g->w[wj->dst[p]], st, j);
                wj->pend[p] = 0;
            }
        }
        /* messages to j that j has not combined go on along the cycle */
        for (int h = 0; h < g->n; h++) {
            gworker *wh = &g->w[h];
            if (h == j || wh->pend[p] == 0 || wh->dst[p] != j || wh->pub[p] < wj->t)
                continue;
            if (env->w[h].down) { /* a kept message of a crashed worker: void */
                wh->keep_t[p] = -1;
                wh->pend[p] = 0;
                continue;
            }
            int64_t st = wh->pub[p];
            int r = tv_next_out(g, st, j, h);
            wh->dst[p] = r;
            if (r < 0) {
                release(g, h, p);
            } else if (algo_env_send(env, h, r, g->msg_bytes, on_msg, g,
                                     msg_arg(st, wh->gen, g->w[r].gen)) < 0) {
                return;
            }
        }
    }
    for (int r = 0; r < g->n && !env->error.code; r++)
        if (g->w[r].published && !env->w[r].down)
            check_round(g, r);
    while (!env->error.code && crash_complete(g, g->k_lo))
        complete_lo(g);
}

/* Worker j has just crashed: the sends that will now never be combined
 * free their buffers, the neighbours waiting for j re-check. */
static void crash(algo_gossip *g, int j)
{
    algo_env *env = g->env;
    gworker *wj = &g->w[j];
    algo_env_grad_wait(env, j);
    algo_env_idle_end(env, j);
    wj->gen++;
    wj->tseq++;
    wj->kc = wj->k;
    g->iter_samples[wj->k % g->R] -= env->w[j].grad_samples; /* lost gradient */
    wj->published = 0;
    wj->wait_slot = 0;
    wj->ready_last = 0;
    wj->timed_out = 0;
    if (g->tv) {
        tv_crash(g, j);
        return;
    }
    /* senders to j: what j has not combined never will be */
    for (int a = 0; a < wj->nnb; a++) {
        gworker *wa = &g->w[wj->nb[a].j];
        for (int p = 0; p < 2; p++)
            if (wa->pub[p] >= wj->t && wa->pend[p] > 0)
                release(g, wj->nb[a].j, p);
    }
    /* j's own messages still in flight are dropped on arrival: their
     * receivers will not release j */
    for (int a = 0; a < wj->nnb; a++) {
        int r = wj->nb[a].j;
        gworker *wr = &g->w[r];
        gnb *b = nb_of(wr, j);
        if (!b || env->w[r].down)
            continue;
        for (int p = 0; p < 2; p++) {
            int64_t st = wj->pub[p];
            if (st >= 0 && st >= wr->t && st >= wr->join_t && b->got[p] != st &&
                wj->pend[p] > 0)
                wj->pend[p]--;
        }
    }
    for (int a = 0; a < wj->nnb; a++) {
        gworker *wa = &g->w[wj->nb[a].j];
        if (wa->published && !env->w[wj->nb[a].j].down)
            check_round(g, wj->nb[a].j);
    }
    while (!env->error.code && crash_complete(g, g->k_lo))
        complete_lo(g);
}

/* Worker j rejoins: its live neighbours' mean, a fresh optimizer state, at
 * the first iteration none of them has published a step of. */
static void rejoin(algo_gossip *g, int j)
{
    algo_env *env = g->env;
    gworker *wj = &g->w[j];
    algo_env_grad_wait(env, j);
    wj->gen++;
    wj->tseq++;
    int up = 0;
    int64_t k = wj->kc > g->k_lo ? wj->kc : g->k_lo;
    for (int a = 0; a < wj->nnb; a++) {
        int r = wj->nb[a].j;
        if (env->w[r].down)
            continue;
        gworker *wr = &g->w[r];
        g->ptrs[up++] = wr->x;
        int64_t next = wr->t + (wr->published || wr->ready_last ? 1 : 0);
        int64_t kr = g->steps > 0 ? (next + g->steps - 1) / g->steps : wr->k;
        if (kr < wr->k)
            kr = wr->k;
        if (kr > k)
            k = kr;
    }
    if (g->tv) { /* a sender anywhere along a cycle may reach j: start after all */
        wj->ntv = 0;
        for (int r = 0; r < g->n; r++) {
            gworker *wr = &g->w[r];
            if (r == j || env->w[r].down)
                continue;
            int64_t next = wr->t + (wr->published || wr->ready_last ? 1 : 0);
            int64_t kr = g->steps > 0 ? (next + g->steps - 1) / g->steps : wr->k;
            if (kr < wr->k)
                kr = wr->k;
            if (kr > k)
                k = kr;
        }
    }
    if (up > 0)
        algo_mean(wj->x, g->ptrs, up, g->d);
    if (g->ops.reset)
        g->ops.reset(g->m, env, j);
    for (int a = 0; a < wj->nnb; a++) {
        wj->nb[a].got[0] = wj->nb[a].got[1] = -1;
        wj->nb[a].dead_gen = UINT32_MAX;
    }
    /* the iterations it missed count as done by it */
    int64_t from = wj->kc > g->k_lo ? wj->kc : g->k_lo;
    if (window_fit(g, k + 1) < 0)
        return;
    for (int64_t q = from; q < k; q++)
        g->done_cnt[q % g->R]++;
    wj->kc = INT64_MAX;
    wj->k = k;
    wj->t = k * g->steps;
    wj->join_t = wj->t;
    wj->published = 0;
    wj->timed_out = 0;
    wj->ready_last = 0;
    wj->wait_slot = 0;
    while (!env->error.code && crash_complete(g, g->k_lo))
        complete_lo(g);
    begin_iter(g, j);
    if (g->tv) {
        for (int r = 0; r < g->n && !env->error.code; r++)
            if (r != j && g->w[r].published && !env->w[r].down)
                check_round(g, r);
        return;
    }
    for (int a = 0; a < wj->nnb; a++) {
        int r = wj->nb[a].j;
        if (g->w[r].published && !env->w[r].down)
            check_round(g, r);
    }
}

void algo_gossip_fault(void *p, const algo_fault *ev)
{
    algo_gossip *g = p;
    if (!g->crash || ev->target < 0 || ev->target >= g->n)
        return;
    if (ev->kind == ALGO_FAULT_CRASH)
        crash(g, ev->target);
    else if (ev->kind == ALGO_FAULT_REJOIN)
        rejoin(g, ev->target);
}

/* ---- collectives -------------------------------------------------------- */

static void on_exact_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    algo_gossip *g = ctx;
    gworker *w = &g->w[rank];
    if (g->exact_done++ == 0) {
        /* every rank has entered: all slots of this round are filled */
        double t0 = g->prof ? now_s() : 0;
        algo_mean(g->avg, g->sp[w->t & 1], g->n, g->len);
        if (g->prof)
            g->prof->mix_s += now_s() - t0;
    }
    if (g->exact_done == g->n)
        g->exact_done = 0;
    mixing_done(g, rank, g->avg);
}

/* Every rank has entered, so every x_j is x_j^{k+1}: the first completion
 * sets them all to the (rewritten) mean; a rank waiting for its own part
 * already logically holds it. */
static void on_sync_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    algo_gossip *g = ctx;
    gworker *w = &g->w[rank];
    if (g->sync_done++ == 0) {
        double t0 = g->prof ? now_s() : 0;
        for (int j = 0; j < g->n; j++)
            g->ptrs[j] = g->w[j].x;
        algo_mean(g->savg, g->ptrs, g->n, g->d);
        if (g->ops.sync_mean)
            g->ops.sync_mean(g->m, g->env, w->k, w->lr, g->savg);
        for (int j = 0; j < g->n; j++)
            memcpy(g->w[j].x, g->savg, (size_t)g->d * sizeof(float));
        if (g->prof)
            g->prof->mix_s += now_s() - t0;
    }
    if (g->sync_done == g->n)
        g->sync_done = 0;
    end_iter(g, rank);
}

static void on_scalar_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    algo_gossip *g = ctx;
    gworker *w = &g->w[rank];
    if (g->scalar_done++ == 0) {
        double s = 0;
        for (int i = 0; i < g->n; i++)
            s += g->w[i].delta;
        g->est = sqrt(s / g->n);
        if (w->round == 1)
            g->est_first = g->est;
    }
    if (g->scalar_done == g->n)
        g->scalar_done = 0;
    double target = w->plan.target > 0 ? w->plan.target : w->plan.fraction * g->est_first;
    if (g->est > target && w->round < w->plan.rounds)
        try_publish(g, rank);
    else
        mixing_done(g, rank, w->mix);
}

/* ---- lifetime ----------------------------------------------------------- */

void algo_gossip_destroy(void *p)
{
    algo_gossip *g = p;
    if (!g)
        return;
    if (g->ops.release)
        g->ops.release(g->m);
    sim_coll_destroy(g->coll_exact);
    sim_coll_destroy(g->coll_scalar);
    sim_coll_destroy(g->coll_sync);
    free(g->savg);
    free(g->nb_slab);
    for (int i = 0; g->w && i < g->n; i++)
        free(g->w[i].tv);
    for (int f = 0; f < g->n_frames; f++) {
        free(g->frames[f]->has);
        free(g->frames[f]->x);
        free(g->frames[f]);
    }
    free(g->frames);
    free(g->done_cnt);
    free(g->iter_samples);
    free(g->recv_slab);
    free(g->avg);
    free(g->ptrs);
    free(g->sp[0]);
    free(g->sp[1]);
    free(g->slab);
    free(g->w);
    free(g);
}

algo_gossip *algo_gossip_create(algo_env *env, const algo_gossip_ops *ops, void *m,
                                sim_err *err)
{
    algo_gossip *g = calloc(1, sizeof *g);
    if (!g) {
        if (ops->release)
            ops->release(m);
        sim_err_set(err, SIM_ENOMEM, "%s: out of memory", env->cfg->algorithm);
        return NULL;
    }
    g->env = env;
    g->ops = *ops;
    g->m = m;
    if (!env->graph || !env->mix) {
        sim_err_set(err, SIM_EINTERNAL, "%s: no logical graph", env->cfg->algorithm);
        goto fail;
    }
    int64_t steps = 1;
    if (sim_config_find(env->cfg, "algorithm", "gossip_steps") &&
        sim_config_get_int(env->cfg, "algorithm", "gossip_steps", &steps, err) < 0)
        goto fail;
    if (steps < 0 || steps > 1000000) {
        sim_config_error(env->cfg, "algorithm", "gossip_steps", SIM_ECONFIG, err,
                         "must be in [0, 1000000], got %lld", (long long)steps);
        goto fail;
    }
    g->steps = (int)steps;
    g->n = env->n;
    g->d = env->d;
    g->len = (int64_t)ops->width * env->d;
    g->msg_bytes = (double)ops->width * env->msg_bytes;
    g->R = env->n * (topo_graph_period(env->graph) + 1) + 4;
    for (int i = 0; i < env->n; i++)
        g->spi += algo_env_step_samples(env, i);
    g->spi_changes = env->batch_changes;
    size_t n = (size_t)g->n, len = (size_t)g->len;
    g->w = calloc(n, sizeof *g->w);
    g->slab = malloc(3 * n * len * sizeof(float));
    g->sp[0] = malloc(n * sizeof(float *));
    g->sp[1] = malloc(n * sizeof(float *));
    g->ptrs = malloc(n * sizeof(float *));
    g->done_cnt = calloc((size_t)g->R, sizeof *g->done_cnt);
    g->iter_samples = calloc((size_t)g->R, sizeof *g->iter_samples);
    size_t n_recv = 0;
    for (int i = 0; i < env->n; i++) {
        const int *nb;
        n_recv += 2 * (size_t)topo_graph_neighbors(env->graph, i, &nb) + 2;
    }
    g->recv_slab = malloc(n_recv * sizeof *g->recv_slab);
    if (!g->w || !g->slab || !g->sp[0] || !g->sp[1] || !g->ptrs || !g->done_cnt ||
        !g->iter_samples || !g->recv_slab) {
        sim_err_set(err, SIM_ENOMEM, "%s: out of memory for %d workers", env->cfg->algorithm,
                    env->n);
        goto fail;
    }
    n_recv = 0;
    for (size_t i = 0; i < n; i++) {
        gworker *w = &g->w[i];
        w->slot[0] = g->slab + (3 * i) * len;
        w->slot[1] = g->slab + (3 * i + 1) * len;
        w->mix = g->slab + (3 * i + 2) * len;
        const int *nb;
        w->cap_recv = 2 * topo_graph_neighbors(env->graph, (int)i, &nb) + 2;
        w->recv = g->recv_slab + n_recv;
        n_recv += (size_t)w->cap_recv;
        g->sp[0][i] = w->slot[0];
        g->sp[1][i] = w->slot[1];
    }
    g->crash = algo_env_crashes(env);
    if (g->crash) {
        const char *why = NULL, *sec = "faults", *key = "schedule";
        const char *sched = sim_config_get_string(env->cfg, "faults", "schedule");
        if (!sched || !strcmp(sched, "none")) /* the crashes come from mtbf */
            key = "mtbf";
        if (ops->bytes) {
            why = "compressed gossip";
            sec = "algorithm";
            key = "compressor";
        } else if (ops->plan) {
            why = "exact averaging or adaptive gossip";
        } else if (ops->sync_after) {
            why = "periodic averaging";
        } else if (!ops->reset) {
            why = "this method's gossip";
        }
        if (why) {
            sim_config_error(env->cfg, sec, key, SIM_ECONFIG, err,
                             "%s: %s does not support worker crashes ([faults])",
                             env->cfg->algorithm, why);
            goto fail;
        }
        if (sim_config_get_time(env->cfg, "faults", "sync_timeout", &g->timeout, err) < 0)
            goto fail;
        g->tv = topo_graph_period(env->graph) != 1;
        size_t nn = 0;
        for (int i = 0; i < env->n; i++) {
            const int *nb;
            nn += (size_t)(g->tv ? topo_graph_neighbors(env->graph, i, &nb)
                                 : topo_graph_in_at(env->graph, 0, i, &nb));
        }
        g->nb_slab = malloc((nn ? nn : 1) * sizeof *g->nb_slab);
        if (!g->nb_slab) {
            sim_err_set(err, SIM_ENOMEM, "%s: out of memory", env->cfg->algorithm);
            goto fail;
        }
        nn = 0;
        for (int i = 0; i < env->n; i++) {
            gworker *w = &g->w[i];
            const int *nb;
            w->nnb = g->tv ? topo_graph_neighbors(env->graph, i, &nb)
                           : topo_graph_in_at(env->graph, 0, i, &nb);
            w->nb = g->nb_slab + nn;
            nn += (size_t)w->nnb;
            for (int a = 0; a < w->nnb; a++)
                w->nb[a] = (gnb){.j = nb[a], .got = {-1, -1}, .dead_gen = UINT32_MAX};
            w->kc = INT64_MAX;
            w->pub[0] = w->pub[1] = -1;
            w->dst[0] = w->dst[1] = -1;
            w->keep_t[0] = w->keep_t[1] = -1;
            if (g->tv) {
                w->cap_tv = 4;
                w->tv = malloc((size_t)w->cap_tv * sizeof *w->tv);
                if (!w->tv) {
                    sim_err_set(err, SIM_ENOMEM, "%s: out of memory", env->cfg->algorithm);
                    goto fail;
                }
            }
        }
    }
    g->in_place = !g->crash && ops->sends_model && ops->form == ALGO_GOSSIP_AWC &&
                  ops->width == 1 &&
                  ops->combine_finish && !ops->plan && !ops->sync_after &&
                  g->steps == 1 && topo_graph_period(env->graph) == 1;
    for (size_t i = 0; i < n; i++) {
        gworker *w = &g->w[i];
        w->x = env->w[i].x;
        if (g->in_place) {
            memcpy(w->slot[0], w->x, (size_t)env->d * sizeof(float));
            w->x = w->slot[0];
        }
    }
    if (ops->plan) { /* the method may use exact or adaptive mixing */
        g->avg = malloc(len * sizeof(float));
        if (!g->avg) {
            sim_err_set(err, SIM_ENOMEM, "%s: out of memory", env->cfg->algorithm);
            goto fail;
        }
        g->coll_exact = algo_env_coll(env, env->allreduce_kind, on_exact_done, g, err);
        if (!g->coll_exact)
            goto fail;
        g->coll_scalar = algo_env_coll(env, SIM_COLL_RING, on_scalar_done, g, err);
        if (!g->coll_scalar)
            goto fail;
    }
    if (ops->sync_after) {
        g->savg = malloc((size_t)env->d * sizeof(float));
        if (!g->savg) {
            sim_err_set(err, SIM_ENOMEM, "%s: out of memory", env->cfg->algorithm);
            goto fail;
        }
        g->coll_sync = algo_env_coll(env, env->allreduce_kind, on_sync_done, g, err);
        if (!g->coll_sync)
            goto fail;
    }
    return g;
fail:
    algo_gossip_destroy(g);
    return NULL;
}

int algo_gossip_create_state(algo_env *env, const algo_gossip_ops *ops, void *m, void **out,
                             sim_err *err)
{
    algo_gossip *g = algo_gossip_create(env, ops, m, err);
    if (!g)
        return err && err->code ? err->code : SIM_EINTERNAL;
    *out = g;
    return 0;
}

int algo_gossip_start(void *p, sim_err *err)
{
    (void)err;
    algo_gossip *g = p;
    for (int i = 0; i < g->n; i++)
        begin_iter(g, i);
    return 0;
}
