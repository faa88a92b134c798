/* The synchronous-round driver (see sync.h for the contract).
 *
 * State: the groups (oldest first) and, per group, one collective per slot
 * of desc.slots over its members; the oldest round not completed (round),
 * the phases of it already formed (formed), the completions it still
 * counts (need) and has (done); per worker its round, phase, status,
 * incarnation (wgen: every event of the worker carries it), the
 * incarnation of its pending timeout (tgen) and the round whose entry
 * waits the timeout (late_round). Without crashes there is one group and
 * no timeout, crash or join ever happens: the same code is the plain run. */
#include "algorithms/drivers/sync.h"

#include <stdlib.h>
#include <string.h>

#include "algorithms/drivers/overlap.h"
#include "sim/units.h"

/* S_ENCODING: compute charged before a phase (encode, statistics) */
enum { S_OFF = 0, S_COMPUTING, S_ENCODING, S_WAITING, S_ENTERED, S_DECODING, S_JOINING };

typedef struct slot_ctx {
    algo_sync *sy;
    algo_group *g;
    int slot;
} slot_ctx;

/* What the driver adds to a group: its collectives, one per slot. */
typedef struct gext {
    slot_ctx ctx[ALGO_SYNC_SLOTS_MAX];
    sim_coll *coll[ALGO_SYNC_SLOTS_MAX];
} gext;

struct algo_sync {
    algo_env *env;
    algo_sync_desc d;
    void *m;
    algo_groups groups;
    gext **ext;          /* per group id */
    int ext_cap;
    algo_overlap *ov;    /* [algorithm] bucket > 0 and desc.buckets */
    int crashes;         /* env->crashes when created */
    sim_time timeout;    /* [faults] sync_timeout */
    int64_t round;       /* the oldest round not completed */
    int formed;          /* phases of it formed */
    int need, done;      /* completions it counts, and has */
    int64_t samples;     /* its samples, summed at its last phase's form */
    int64_t *wround;
    int *wphase, *wstat, *pending, *scratch;
    uint32_t *wgen, *tgen;
    int64_t *late_round;
    double *wbytes;      /* the message of the worker's current phase */
    sim_time *wenc;      /* with buckets: encoding charged after the last bucket */
};

static void work_begin(algo_sync *sy, int w, int64_t round);
static void phase_begin(algo_sync *sy, int w, int p);
static void on_slot_done(sim_engine *eng, void *ctx, int rank);

static int fail(algo_sync *sy, int code, const char *what)
{
    return algo_env_fail(sy->env, code, "%s: %s", sy->d.who, what);
}

static uint64_t warg(const algo_sync *sy, int w) { return algo_group_arg(w, sy->wgen[w]); }

/* The worker of a driver event, or -1 when it is stale (an earlier
 * incarnation, or the worker is no longer in status stat). */
static int event_worker(const algo_sync *sy, uint64_t arg, int stat)
{
    int w = algo_group_arg_w(arg);
    if (sy->wgen[w] != algo_group_arg_gen(arg) || sy->wstat[w] != stat)
        return -1;
    return w;
}

static int plan(const algo_sync *sy, int64_t round, int *slots)
{
    if (!sy->d.hooks.plan) {
        slots[0] = 0;
        return 1;
    }
    return sy->d.hooks.plan(sy->m, round, slots);
}

static int phase_slot(const algo_sync *sy, int64_t round, int p, int *n_phases)
{
    int slots[ALGO_SYNC_PHASES_MAX];
    *n_phases = plan(sy, round, slots);
    return slots[p];
}

/* ---- groups and their collectives --------------------------------------- */

static sim_coll *slot_coll(algo_sync *sy, algo_group *g, int s)
{
    algo_env *env = sy->env;
    gext *x = sy->ext[g->id];
    x->ctx[s] = (slot_ctx){sy, g, s};
    sim_coll_desc desc = {.n = g->n, .hosts = g->members, .ps_host = env->server_host,
                          .per_node = env->per_node, .done = on_slot_done, .ctx = &x->ctx[s]};
    int *off = NULL, *nbr = NULL;
    switch (sy->d.slots[s]) {
    case ALGO_SYNC_ALLREDUCE:
        desc.kind = env->allreduce_kind;
        break;
    case ALGO_SYNC_ALLGATHER:
        desc.kind = SIM_COLL_ALLGATHER;
        break;
    case ALGO_SYNC_HIER_INTRA:
    case ALGO_SYNC_HIER_INTER:
        desc.kind = SIM_COLL_HIER;
        break;
    case ALGO_SYNC_ALLTOALL: {
        if (g->n < 2)
            return NULL; /* nothing to exchange: entering completes at once */
        off = malloc((size_t)(g->n + 1) * sizeof *off);
        nbr = malloc((size_t)g->n * (size_t)g->n * sizeof *nbr);
        if (!off || !nbr) {
            free(off);
            free(nbr);
            fail(sy, SIM_ENOMEM, "out of memory for a group");
            return NULL;
        }
        int k = 0;
        for (int i = 0; i < g->n; i++) {
            off[i] = k;
            for (int j = 0; j < g->n; j++)
                if (j != i)
                    nbr[k++] = j;
        }
        off[g->n] = k;
        desc.kind = SIM_COLL_NEIGHBOR;
        desc.nbr_off = off;
        desc.nbr = nbr;
        break;
    }
    }
    sim_err e = {0};
    sim_coll *c = sim_coll_create(env->net, &desc, &e);
    free(off);
    free(nbr);
    if (!c)
        algo_env_fail(env, e.code ? e.code : SIM_EINTERNAL, "%s: %s", sy->d.who, e.msg);
    return c;
}

/* A new group of the given workers (ascending) from round first on. NULL
 * on failure (reported through algo_env_fail). */
static algo_group *group_add(algo_sync *sy, const int *members, int n, int64_t first)
{
    algo_group_colls c = {.none = 1, .owner = sy, .who = sy->d.who};
    algo_group *g = algo_groups_add(&sy->groups, sy->env, members, n, first, &c);
    if (!g) {
        if (!sy->env->error.code)
            fail(sy, SIM_ENOMEM, "out of memory for a group");
        return NULL;
    }
    if (g->id >= sy->ext_cap) {
        int cap = sy->ext_cap ? 2 * sy->ext_cap : 8;
        gext **x = realloc(sy->ext, (size_t)cap * sizeof *x);
        if (!x) {
            fail(sy, SIM_ENOMEM, "out of memory for a group");
            return NULL;
        }
        memset(x + sy->ext_cap, 0, (size_t)(cap - sy->ext_cap) * sizeof *x);
        sy->ext = x;
        sy->ext_cap = cap;
    }
    sy->ext[g->id] = calloc(1, sizeof(gext));
    if (!sy->ext[g->id]) {
        fail(sy, SIM_ENOMEM, "out of memory for a group");
        return NULL;
    }
    for (int s = 0; n > 0 && s < sy->d.n_slots; s++) {
        sy->ext[g->id]->coll[s] = slot_coll(sy, g, s);
        if (!sy->ext[g->id]->coll[s] && sy->env->error.code)
            return NULL;
    }
    if (sy->d.hooks.regroup)
        sy->d.hooks.regroup(sy->m, g);
    return g;
}

static algo_group *group_for(const algo_sync *sy, int64_t round)
{
    return algo_groups_for(&sy->groups, round);
}

/* ---- the round ----------------------------------------------------------- */

static void on_step_end(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

/* A compute step of w: its gradient, then its simulated time. */
static void step_begin(algo_sync *sy, int w)
{
    algo_env *env = sy->env;
    sy->d.hooks.grad(sy->m, w);
    if (sy->ov) {
        /* bucketed: the message must be known before the first bucket */
        algo_sync_msg msg = {0};
        sy->d.hooks.contribute(sy->m, w, sy->wround[w], 0, &msg);
        sy->wbytes[w] = msg.bytes;
        sy->wenc[w] = msg.encode;
        sy->wstat[w] = S_ENTERED;
        algo_overlap_step(sy->ov, w, algo_env_step_samples(env, w), msg.bytes);
        return;
    }
    algo_env_compute(env, w, algo_env_step_samples(env, w), on_step_end, sy, warg(sy, w));
}

static void work_begin(algo_sync *sy, int w, int64_t round)
{
    sy->wround[w] = round;
    sy->wphase[w] = 0;
    sy->wstat[w] = S_COMPUTING;
    step_begin(sy, w);
}

static void on_step_end(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    algo_sync *sy = ctx;
    int w = event_worker(sy, arg, S_COMPUTING);
    if (w < 0)
        return;
    if (sy->d.hooks.step_done && !sy->d.hooks.step_done(sy->m, w)) {
        step_begin(sy, w);
        return;
    }
    phase_begin(sy, w, 0);
}

static void on_timeout(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

static void wait_timeout(algo_sync *sy, int w)
{
    sy->wstat[w] = S_WAITING;
    sy->tgen[w]++;
    if (!sim_engine_schedule(sy->env->eng, sy->timeout, on_timeout, sy,
                             algo_group_arg(w, sy->tgen[w]), NULL, NULL))
        fail(sy, SIM_ENOMEM, "cannot schedule a timeout");
}

static void enter(algo_sync *sy, int w)
{
    algo_group *g = group_for(sy, sy->wround[w]);
    int rank = g ? g->rank_of[w] : -1;
    if (rank < 0) {
        algo_env_fail(sy->env, SIM_EINTERNAL, "%s: worker %d is in no group of round %lld",
                      sy->d.who, w, (long long)sy->wround[w]);
        return;
    }
    int n_phases, s = phase_slot(sy, sy->wround[w], sy->wphase[w], &n_phases);
    sy->wstat[w] = S_ENTERED;
    sim_coll *c = sy->ext[g->id]->coll[s];
    if (!c) {
        on_slot_done(sy->env->eng, &sy->ext[g->id]->ctx[s], rank); /* alone */
        return;
    }
    algo_env_coll_enter(sy->env, c, rank, sy->wbytes[w]);
}

static void on_timeout(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    algo_sync *sy = ctx;
    int w = algo_group_arg_w(arg);
    if (sy->tgen[w] != algo_group_arg_gen(arg) || sy->wstat[w] != S_WAITING)
        return;
    sy->late_round[w] = -1;
    enter(sy, w);
}

/* w's message of its phase is ready: it enters, or waits out the timeout
 * when its round was aborted. */
static void ready(algo_sync *sy, int w)
{
    algo_env_idle_begin(sy->env, w);
    if (sy->late_round[w] == sy->wround[w])
        wait_timeout(sy, w);
    else
        enter(sy, w);
}

static void on_encoded(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    algo_sync *sy = ctx;
    int w = event_worker(sy, arg, S_ENCODING);
    if (w >= 0)
        ready(sy, w);
}

static void phase_begin(algo_sync *sy, int w, int p)
{
    algo_env *env = sy->env;
    algo_sync_msg msg = {0};
    sy->wphase[w] = p;
    sy->d.hooks.contribute(sy->m, w, sy->wround[w], p, &msg);
    sy->wbytes[w] = msg.bytes;
    if (msg.samples > 0) {
        sy->wstat[w] = S_ENCODING;
        algo_env_idle_end(env, w);
        algo_env_compute(env, w, msg.samples, on_encoded, sy, warg(sy, w));
        return;
    }
    if (msg.encode > 0) {
        /* the encoding is compute: the worker is idle only once it is done */
        sy->wstat[w] = S_ENCODING;
        algo_env_idle_end(env, w);
        env->w[w].compute_time += sim_time_to_s(msg.encode);
        if (!sim_engine_schedule(env->eng, msg.encode, on_encoded, sy, warg(sy, w), NULL, NULL))
            fail(sy, SIM_ENOMEM, "cannot schedule compression");
        return;
    }
    ready(sy, w);
}

/* Counts round `round` when every completion it needs is in. */
static void round_check(algo_sync *sy)
{
    if (sy->need <= 0 || sy->done < sy->need)
        return;
    int64_t samples = sy->samples;
    sy->round++;
    sy->done = 0;
    sy->formed = 0;
    algo_group *g = group_for(sy, sy->round);
    sy->need = g ? g->n : 0;
    if (sy->d.count == ALGO_SYNC_COUNT_LAST)
        algo_env_iteration(sy->env, samples);
}

static void on_join_model(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst,
                          double bytes)
{
    (void)eng;
    (void)src;
    (void)dst;
    (void)bytes;
    algo_sync *sy = ctx;
    int w = event_worker(sy, arg, S_JOINING);
    if (w < 0)
        return;
    algo_env_idle_end(sy->env, w);
    work_begin(sy, w, sy->wround[w]);
}

/* The pending joiners join from the next round: w, which formed the
 * round's result, sends it to them. */
static void joiners(algo_sync *sy, int w)
{
    algo_env *env = sy->env;
    algo_group *next = group_for(sy, sy->round + 1);
    int k = algo_group_members_joining(next, sy->pending, env, sy->scratch);
    if (!k || !group_add(sy, sy->scratch, k, sy->round + 1))
        return;
    double bytes = sy->d.join_bytes > 0 ? sy->d.join_bytes : env->msg_bytes;
    for (int i = 0; i < env->n; i++) {
        if (!sy->pending[i] || env->w[i].down)
            continue;
        sy->pending[i] = 0;
        sy->wround[i] = sy->round + 1;
        sy->wstat[i] = S_JOINING;
        sy->late_round[i] = -1;
        if (sy->d.hooks.join)
            sy->d.hooks.join(sy->m, i, w);
        algo_env_send(env, w, i, bytes, on_join_model, sy, warg(sy, i));
    }
}

/* w's last phase (and its decoding) is over. */
static void finish(algo_sync *sy, int w)
{
    algo_env *env = sy->env;
    int64_t k = sy->wround[w];
    int p = sy->wphase[w];
    if (sy->formed <= p) {
        algo_group *g = group_for(sy, k);
        sy->d.hooks.form(sy->m, g, k, p, w);
        sy->formed = p + 1;
        sy->samples = 0;
        for (int r = 0; r < g->n; r++)
            sy->samples += env->w[g->members[r]].grad_samples;
        if (sy->d.count == ALGO_SYNC_COUNT_FIRST)
            algo_env_iteration(env, sy->samples);
        joiners(sy, w);
    }
    if (sy->d.hooks.take)
        sy->d.hooks.take(sy->m, w, k, p);
    sy->done++;
    if (!sy->crashes) {
        round_check(sy);
        work_begin(sy, w, k + 1);
    } else {
        work_begin(sy, w, k + 1);
        round_check(sy);
    }
}

static void on_decoded(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    algo_sync *sy = ctx;
    int w = event_worker(sy, arg, S_DECODING);
    if (w >= 0)
        finish(sy, w);
}

/* Worker w (rank of g) completed its phase. */
static void phase_done(algo_sync *sy, algo_group *g, int w)
{
    algo_env *env = sy->env;
    int64_t k = sy->wround[w];
    int p = sy->wphase[w], n_phases;
    phase_slot(sy, k, p, &n_phases);
    if (p < n_phases - 1) {
        if (sy->formed <= p) {
            sy->d.hooks.form(sy->m, g, k, p, w);
            sy->formed = p + 1;
        }
        if (sy->d.hooks.take)
            sy->d.hooks.take(sy->m, w, k, p);
        phase_begin(sy, w, p + 1);
        return;
    }
    algo_env_idle_end(env, w);
    sim_time dt = sy->d.hooks.decode ? sy->d.hooks.decode(sy->m, g, k) : 0;
    if (sy->ov)
        dt += sy->wenc[w];
    if (dt > 0) {
        /* decoding is compute; the round counts the worker once it is done */
        sy->wstat[w] = S_DECODING;
        env->w[w].compute_time += sim_time_to_s(dt);
        if (!sim_engine_schedule(env->eng, dt, on_decoded, sy, warg(sy, w), NULL, NULL))
            fail(sy, SIM_ENOMEM, "cannot schedule decompression");
        return;
    }
    finish(sy, w);
}

static void on_slot_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    slot_ctx *c = ctx;
    algo_sync *sy = c->sy;
    int w = c->g->members[rank];
    int64_t k = sy->wround[w];
    int n_phases;
    if (sy->wstat[w] != S_ENTERED || k != sy->round || group_for(sy, k) != c->g ||
        phase_slot(sy, k, sy->wphase[w], &n_phases) != c->slot)
        return; /* a crashed worker, or an aborted round's collective */
    phase_done(sy, c->g, w);
}

/* With buckets (no crashes: one group of every worker, rank = worker). */
static void on_buckets_done(sim_engine *eng, void *ctx, int w)
{
    (void)eng;
    algo_sync *sy = ctx;
    phase_done(sy, sy->groups.g[0], w);
}

/* ---- crashes and rejoins ------------------------------------------------- */

/* Worker c crashed: sync.h, "Crashes and rejoins". */
static void crash(algo_sync *sy, int c)
{
    int64_t a = sy->formed ? sy->round + 1 : sy->round;
    if (sy->formed && sy->wround[c] == sy->round &&
        (sy->wstat[c] == S_ENTERED || sy->wstat[c] == S_DECODING))
        sy->need--; /* the finishing round does not wait for it */
    sy->wgen[c]++;
    sy->tgen[c]++;
    sy->wstat[c] = S_OFF;
    sy->pending[c] = 0;
    algo_env_idle_end(sy->env, c);
    algo_group *g = group_for(sy, a);
    if (g && g->rank_of[c] >= 0) {
        int k = algo_group_members_except(g, c, sy->scratch);
        algo_group *ng = group_add(sy, sy->scratch, k, a);
        if (!ng)
            return;
        if (a == sy->round)
            sy->need = ng->n; /* nobody has completed round a */
        for (int r = 0; r < ng->n; r++) {
            int s = ng->members[r];
            sy->late_round[s] = a;
            if (sy->wround[s] == a && (sy->wstat[s] == S_ENTERED || sy->wstat[s] == S_WAITING)) {
                sy->wphase[s] = 0;
                wait_timeout(sy, s);
            }
        }
    }
    if (sy->d.hooks.crash)
        sy->d.hooks.crash(sy->m, c);
    round_check(sy);
}

/* Worker j rejoined: it joins at the next formed result; when nobody is
 * left to form one, it starts a group of its own at once. */
static void rejoin(algo_sync *sy, int j)
{
    sy->wgen[j]++;
    sy->pending[j] = 1;
    algo_group *g = group_for(sy, sy->round);
    if (g && g->n > 0)
        return;
    int m = j;
    if (!group_add(sy, &m, 1, sy->round))
        return;
    sy->pending[j] = 0;
    sy->done = 0;
    sy->formed = 0;
    sy->need = 1;
    sy->late_round[j] = -1;
    if (sy->d.hooks.join)
        sy->d.hooks.join(sy->m, j, -1);
    work_begin(sy, j, sy->round);
}

void algo_sync_fault(algo_sync *sy, const algo_fault *ev)
{
    if (ev->kind == ALGO_FAULT_CRASH)
        crash(sy, ev->target);
    else if (ev->kind == ALGO_FAULT_REJOIN)
        rejoin(sy, ev->target);
}

/* ---- life cycle ---------------------------------------------------------- */

void algo_sync_destroy(algo_sync *sy)
{
    if (!sy)
        return;
    for (int i = 0; i < sy->groups.n; i++) {
        for (int s = 0; sy->ext && sy->ext[i] && s < ALGO_SYNC_SLOTS_MAX; s++)
            sim_coll_destroy(sy->ext[i]->coll[s]);
        if (sy->ext)
            free(sy->ext[i]);
    }
    free(sy->ext);
    algo_groups_release(&sy->groups);
    algo_overlap_destroy(sy->ov);
    free(sy->wround);
    free(sy->wphase);
    free(sy->wstat);
    free(sy->pending);
    free(sy->scratch);
    free(sy->wgen);
    free(sy->tgen);
    free(sy->late_round);
    free(sy->wbytes);
    free(sy->wenc);
    free(sy);
}

static int create_fail(algo_sync *sy, int rc, sim_err *err)
{
    algo_env *env = sy->env;
    if (err && !err->code) {
        if (env->error.code)
            sim_err_set(err, env->error.code, "%s", env->error.msg);
        else
            sim_err_set(err, rc, "%s: out of memory", sy->d.who);
    }
    algo_sync_destroy(sy);
    return err && err->code ? err->code : rc;
}

static sim_coll_kind overlap_kind(const algo_sync *sy)
{
    return sy->d.slots[0] == ALGO_SYNC_ALLGATHER ? SIM_COLL_ALLGATHER : sy->env->allreduce_kind;
}

int algo_sync_create(algo_env *env, const algo_sync_desc *desc, algo_sync **out, sim_err *err)
{
    const sim_config *cfg = env->cfg;
    *out = NULL;
    algo_sync *sy = calloc(1, sizeof *sy);
    if (!sy)
        return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", desc->who);
    sy->env = env;
    sy->d = *desc;
    sy->m = desc->method;
    sy->crashes = env->crashes;
    int bucketed = desc->buckets && cfg->bucket > 0;
    if (sy->crashes) {
        if (bucketed) {
            algo_sync_destroy(sy);
            return sim_config_error(cfg, "algorithm", "bucket", SIM_ECONFIG, err,
                                    "gradient buckets do not support worker crashes "
                                    "([faults]); use bucket = 0");
        }
        int rc = sim_config_get_time(cfg, "faults", "sync_timeout", &sy->timeout, err);
        if (rc < 0) {
            algo_sync_destroy(sy);
            return rc;
        }
        if (sy->timeout < 0) {
            algo_sync_destroy(sy);
            return sim_config_error(cfg, "faults", "sync_timeout", SIM_ECONFIG, err,
                                    "must not be negative");
        }
    }
    size_t n = (size_t)env->n;
    sy->wround = calloc(n, sizeof *sy->wround);
    sy->wphase = calloc(n, sizeof *sy->wphase);
    sy->wstat = calloc(n, sizeof *sy->wstat);
    sy->pending = calloc(n, sizeof *sy->pending);
    sy->scratch = malloc(n * sizeof *sy->scratch);
    sy->wgen = calloc(n, sizeof *sy->wgen);
    sy->tgen = calloc(n, sizeof *sy->tgen);
    sy->late_round = malloc(n * sizeof *sy->late_round);
    sy->wbytes = calloc(n, sizeof *sy->wbytes);
    sy->wenc = calloc(n, sizeof *sy->wenc);
    if (!sy->wround || !sy->wphase || !sy->wstat || !sy->pending || !sy->scratch || !sy->wgen ||
        !sy->tgen || !sy->late_round || !sy->wbytes || !sy->wenc)
        return create_fail(sy, SIM_ENOMEM, err);
    for (int i = 0; i < env->n; i++) {
        sy->late_round[i] = -1;
        sy->scratch[i] = i;
    }
    if (bucketed) {
        /* one group of every worker, whose collectives are the buckets' */
        algo_group_colls c = {.none = 1, .owner = sy, .who = desc->who};
        if (!algo_groups_add(&sy->groups, env, sy->scratch, env->n, 0, &c))
            return create_fail(sy, SIM_ENOMEM, err);
        sy->ov = algo_overlap_create(env, cfg->bucket, overlap_kind(sy), on_buckets_done, sy,
                                     err);
        if (!sy->ov)
            return create_fail(sy, SIM_EINTERNAL, err);
    } else if (!group_add(sy, sy->scratch, env->n, 0)) {
        return create_fail(sy, SIM_ENOMEM, err);
    }
    sy->need = env->n;
    *out = sy;
    return 0;
}

int algo_sync_start(algo_sync *sy, sim_err *err)
{
    (void)err;
    for (int w = 0; w < sy->env->n; w++)
        work_begin(sy, w, 0);
    return sy->env->error.code;
}

/* ---- queries ------------------------------------------------------------- */

int64_t algo_sync_round(const algo_sync *sy) { return sy->round; }

int algo_sync_formed(const algo_sync *sy)
{
    int slots[ALGO_SYNC_PHASES_MAX];
    return sy->formed > 0 && sy->formed >= plan(sy, sy->round, slots);
}

int64_t algo_sync_worker_round(const algo_sync *sy, int w) { return sy->wround[w]; }

int algo_sync_live(const algo_sync *sy, int w)
{
    return sy->wstat[w] != S_OFF && !sy->pending[w];
}

const algo_group *algo_sync_group(const algo_sync *sy, int64_t round)
{
    return group_for(sy, round);
}

uint64_t algo_sync_arg(const algo_sync *sy, int w) { return warg(sy, w); }

int algo_sync_current(const algo_sync *sy, uint64_t arg)
{
    return sy->wgen[algo_group_arg_w(arg)] == algo_group_arg_gen(arg);
}
