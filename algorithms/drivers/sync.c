/* The synchronous-round driver: the round, crashes and rejoins (the
 * contract is sync.h, the state sync_impl.h). */
#include "algorithms/drivers/sync_impl.h"

#include <stdlib.h>

#include "sim/units.h"

/* S_ENCODING: compute charged before a phase (encode, statistics) */
static void phase_begin(algo_sync *sy, int w, int p);
static void on_slot_done(sim_engine *eng, void *ctx, int rank);
static void on_buckets_done(sim_engine *eng, void *ctx, int w);
static int on_computed(void *ctx, int w);
static algo_overlap *bucket_ov(algo_sync *sy, const int *members, int n, sim_coll_kind kind,
                               slot_ctx *ctx);
static void count_live(algo_sync *sy);
static void bg_ready(algo_sync *sy, int w);

/* The contract stays fixed (sync.h): a method varies through its own state
 * and these hooks, not through new slots. */
_Static_assert(sizeof(algo_sync_hooks) == 7 * sizeof(void (*)(void)),
               "algo_sync_hooks has seven hooks (sync.h, docs/architecture.md)");

static int fail(algo_sync *sy, int code, const char *what)
{
    return algo_env_fail(sy->env, code, "%s: %s", sy->d.who, what);
}

/* The worker of a driver event, or -1 when it is stale (an earlier
 * incarnation, or the worker is no longer in status stat). */
static int event_worker(const algo_sync *sy, uint64_t arg, int stat)
{
    int w = algo_group_arg_w(arg);
    if (sy->wgen[w] != algo_group_arg_gen(arg) || sy->wstat[w] != stat)
        return -1;
    return w;
}

/* The phases of round (slots filled); desc.hooks.plan or one phase. */
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

static sim_coll_kind slot_kind(const algo_sync *sy, int s)
{
    switch (sy->d.slots[s]) {
    case ALGO_SYNC_ALLGATHER:
        return SIM_COLL_ALLGATHER;
    case ALGO_SYNC_HIER_INTRA:
        /* inside one server: the hierarchical all-reduce's own intra-server
         * part (reduce to the leader, broadcast back; its ring skipped for
         * one server); on a flat network every "server" is one worker */
        return sy->env->per_node > 0 ? SIM_COLL_HIER : SIM_COLL_TREE;
    case ALGO_SYNC_HIER_INTER:
        return SIM_COLL_HIER;
    case ALGO_SYNC_ALLTOALL:
        return SIM_COLL_NEIGHBOR;
    default:
        return sy->env->allreduce_kind;
    }
}

/* With buckets: the bucketed collectives of a slot over members (NULL:
 * every worker), completions to ctx. NULL on failure (algo_env_fail). */
static algo_overlap *bucket_ov(algo_sync *sy, const int *members, int n, sim_coll_kind kind,
                               slot_ctx *ctx)
{
    algo_overlap_desc od = {.cap = sy->env->cfg->bucket, .kind = kind, .members = members,
                            .n_members = n, .done = on_buckets_done, .computed = on_computed,
                            .ctx = ctx, .alltoall = sy->d.slots[ctx->slot] == ALGO_SYNC_ALLTOALL};
    sim_err e = {0};
    algo_overlap *ov = NULL;
    int rc = algo_overlap_create(sy->env, &od, &ov, &e);
    if (rc < 0)
        algo_env_fail(sy->env, rc, "%s: %s", sy->d.who, e.msg);
    return ov;
}

/* The server (index of x->subctx[s]) of rank in a HIER_INTRA slot. */
static int server_of(const gext *x, int s, int rank)
{
    int k = 0;
    for (int i = 0; i < x->n_sub[s]; i++)
        if (x->subctx[s][i].offset <= rank)
            k = i;
    return k;
}

/* A slot of kind HIER_INTRA: one collective per server of g's members
 * (worker w on server w / per_node; members ascending, so a server's
 * members are a run of g->members). */
static int intra_colls(algo_sync *sy, algo_group *g, gext *x, int s, int plain)
{
    const int p = sy->env->per_node > 0 ? sy->env->per_node : 1;
    int runs = 0;
    for (int r = 0; r < g->n; r++)
        runs += r == 0 || g->members[r] / p != g->members[r - 1] / p;
    x->sub[s] = calloc((size_t)runs, sizeof *x->sub[s]);
    x->subctx[s] = calloc((size_t)runs, sizeof *x->subctx[s]);
    x->subov[s] = calloc((size_t)runs, sizeof *x->subov[s]);
    if (!x->sub[s] || !x->subctx[s] || !x->subov[s])
        return fail(sy, SIM_ENOMEM, "out of memory for a group");
    for (int r = 0, k = 0; r < g->n; k++) {
        int e = r + 1;
        while (e < g->n && g->members[e] / p == g->members[r] / p)
            e++;
        x->subctx[s][k] = (slot_ctx){sy, g, s, r};
        x->n_sub[s] = k + 1;
        if (sy->bucketed && !(x->subov[s][k] = bucket_ov(sy, g->members + r, e - r,
                                                        slot_kind(sy, s), &x->subctx[s][k])))
            return -1;
        sim_coll_desc desc = {.kind = slot_kind(sy, s), .n = e - r, .hosts = g->members + r,
                              .ps_host = sy->env->server_host, .per_node = p,
                              .done = on_slot_done, .ctx = &x->subctx[s][k]};
        sim_err err = {0};
        if (plain && !(x->sub[s][k] = sim_coll_create(sy->env->net, &desc, &err)))
            return algo_env_fail(sy->env, err.code ? err.code : SIM_EINTERNAL, "%s: %s",
                                 sy->d.who, err.msg);
        r = e;
    }
    return 0;
}

algo_group *algo_sync_group_add(algo_sync *sy, const int *members, int n, int64_t first)
{
    algo_group_colls c = {.none = 1, .owner = sy, .who = sy->d.who};
    algo_group *g = algo_groups_add(&sy->groups, sy->env, members, n, first, &c);
    if (!g) {
        if (!sy->env->error.code)
            fail(sy, SIM_ENOMEM, "out of memory for a group");
        return NULL;
    }
    gext *x = g->ext = calloc(1, sizeof(gext));
    if (!x) {
        fail(sy, SIM_ENOMEM, "out of memory for a group");
        return NULL;
    }
    /* with buckets, one-slot rounds use the plain collectives only after a
     * crash (the rest of an aborted round) */
    int plain = sy->crashes || !sy->bucketed || sy->d.n_slots > 1;
    for (int s = 0; n > 0 && s < sy->d.n_slots; s++) {
        x->ctx[s] = (slot_ctx){sy, g, s, 0};
        if (sy->d.slots[s] == ALGO_SYNC_HIER_INTRA) {
            if (intra_colls(sy, g, x, s, plain) < 0)
                return NULL;
            continue;
        }
        if (plain) {
            x->coll[s] = algo_group_coll(sy->env, g, sy->d.slots[s] == ALGO_SYNC_ALLTOALL,
                                         slot_kind(sy, s), on_slot_done, &x->ctx[s], sy->d.who);
            if (!x->coll[s] && sy->env->error.code)
                return NULL;
        }
        if (sy->bucketed && (n > 1 || sy->d.slots[s] != ALGO_SYNC_ALLTOALL) &&
            !(x->ov[s] = bucket_ov(sy, g->id == 0 ? NULL : g->members, n, slot_kind(sy, s),
                                   &x->ctx[s])))
            return NULL;
    }
    x->ctx[0] = (slot_ctx){sy, g, 0, 0};
    return g;
}

/* The group of worker w's current step. */
static algo_group *wgroup(const algo_sync *sy, int w)
{
    return algo_groups_for(&sy->groups, step_of(sy->wround[w], sy->wphase[w]));
}

/* With buckets: w's bucketed collectives of phase 0 of round k in g (NULL:
 * none, as for the all-to-all of a group of one). */
static algo_overlap *ov_of(const algo_sync *sy, const algo_group *g, int64_t k, int w)
{
    if (!sy->bucketed)
        return NULL;
    int n_phases, s = phase_slot(sy, k, 0, &n_phases);
    const gext *x = g->ext;
    return x->subov[s] ? x->subov[s][server_of(x, s, g->rank_of[w])] : x->ov[s];
}

/* ---- the round ----------------------------------------------------------- */

static void on_step_end(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

/* A compute step of w: its gradient, then its simulated time. */
static void step_begin(algo_sync *sy, int w)
{
    algo_env *env = sy->env;
    int last = 1;
    if (sy->d.hooks.grad)
        last = sy->d.hooks.grad(sy->m, w);
    else
        algo_env_grad(env, w, env->w[w].x, env->w[w].grad);
    algo_overlap *ov = NULL; /* the work-ending step is bucketed (sync.h) */
    if (sy->bucketed && !sy->d.background && last) {
        algo_group *g = wgroup(sy, w);
        if (sy->late[w] == step_of(sy->wround[w], 0)) /* aborted: the group it knew */
            g = sy->lateg[w];
        ov = ov_of(sy, g, sy->wround[w], w);
    }
    sy->computed[w] = !ov;
    sy->wenc[w] = 0;
    if (ov) {
        algo_sync_msg msg = {0};
        sy->d.hooks.contribute(sy->m, w, sy->wround[w], 0, &msg);
        sy->wbytes[w] = msg.bytes;
        sy->wenc[w] = msg.encode;
        sy->wdec[w] = msg.decode;
        sy->wstat[w] = S_ENTERED;
        sy->wov[w] = ov;
        algo_overlap_step(ov, w, algo_env_step_samples(env, w), msg.bytes);
        return;
    }
    algo_env_compute(env, w, algo_env_step_samples(env, w), on_step_end, sy, warg(sy, w));
}

void algo_sync_work_begin(algo_sync *sy, int w, int64_t round)
{
    sy->wround[w] = round;
    sy->wphase[w] = 0;
    sy->wstat[w] = S_COMPUTING;
    step_begin(sy, w);
}

static ALGO_ON_EVENT(on_step_end)
{
    algo_sync *sy = ctx;
    int w = event_worker(sy, arg, S_COMPUTING);
    if (w < 0)
        return;
    int over = sy->d.hooks.step_done ? sy->d.hooks.step_done(sy->m, w) : 1;
    if (sy->d.count == ALGO_SYNC_COUNT_STEPS && (!over || sy->d.background)) {
        algo_live_steps_done(&sy->live, w, sy->env->w[w].grad_samples);
        count_live(sy);
    }
    if (over && sy->d.background)
        bg_ready(sy, w);
    else if (over)
        phase_begin(sy, w, 0);
    else
        step_begin(sy, w);
}

static void on_timeout(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

static int live_of(const void *ctx, int w) { return algo_sync_live(ctx, w); }

/* COUNT_STEPS: reports what every live worker has completed. */
static void count_live(algo_sync *sy)
{
    if (sy->d.count == ALGO_SYNC_COUNT_STEPS)
        algo_live_steps_count(&sy->live, sy->env, live_of, sy);
}

void algo_sync_report(algo_sync *sy)
{
    if (!sy->countable || sy->reported)
        return;
    sy->reported = 1;
    if (sy->d.count == ALGO_SYNC_COUNT_FIRST) {
        algo_env_iteration(sy->env, sy->samples);
        return;
    }
    const algo_group *g = algo_sync_group(sy, sy->round);
    for (int r = 0; g && r < g->n; r++)
        algo_live_steps_done(&sy->live, g->members[r], sy->env->w[g->members[r]].grad_samples);
    count_live(sy);
}

/* Phase p's first completion (w) in g: the method forms the result, and
 * the round is counted there by COUNT_STEPS (phase 0) or COUNT_FIRST (the
 * last phase, last = 1; the members' samples are summed before). */
static void form(algo_sync *sy, algo_group *g, int64_t k, int p, int w, int last)
{
    sy->formed = p + 1;
    if (last) {
        sy->samples = 0;
        for (int r = 0; r < g->n; r++)
            sy->samples += sy->env->w[g->members[r]].grad_samples;
    }
    sy->countable = !sy->d.background && ((sy->d.count == ALGO_SYNC_COUNT_STEPS && p == 0) ||
                                          (sy->d.count == ALGO_SYNC_COUNT_FIRST && last));
    sy->d.hooks.form(sy->m, g, k, p, w);
    algo_sync_report(sy);
    sy->countable = 0;
}

static void wait_timeout(algo_sync *sy, int w)
{
    sy->wstat[w] = S_WAITING;
    algo_group_timeout(sy->env, on_timeout, sy, w, ++sy->tgen[w]);
}

/* Background: w enters its round's collective after the timeout; its work
 * goes on meanwhile. */
static void bg_wait(algo_sync *sy, int w)
{
    sy->bglate[w] = 1;
    algo_group_timeout(sy->env, on_timeout, sy, w, ++sy->tgen[w]);
}

/* w enters phase p of round k in the collective of its group. */
static void enter_at(algo_sync *sy, int w, int64_t k, int p)
{
    algo_group *g = algo_groups_for(&sy->groups, step_of(k, p));
    int rank = g ? g->rank_of[w] : -1;
    if (rank < 0) {
        algo_env_fail(sy->env, SIM_EINTERNAL, "%s: worker %d is in no group of round %lld",
                      sy->d.who, w, (long long)k);
        return;
    }
    int n_phases, s = phase_slot(sy, k, p, &n_phases);
    gext *x = g->ext;
    sim_coll *c = x->coll[s];
    slot_ctx *ctx = &x->ctx[s];
    if (x->n_sub[s] > 0) { /* HIER_INTRA: its server's collective */
        int k = server_of(x, s, rank);
        c = x->sub[s][k];
        ctx = &x->subctx[s][k];
    }
    rank -= ctx->offset;
    if (!c) {
        on_slot_done(sy->env->eng, ctx, rank); /* alone */
        return;
    }
    algo_env_coll_enter(sy->env, c, rank, sy->wbytes[w]);
}

static void enter(algo_sync *sy, int w)
{
    sy->wstat[w] = S_ENTERED;
    enter_at(sy, w, sy->wround[w], sy->wphase[w]);
}

static ALGO_ON_EVENT(on_timeout)
{
    algo_sync *sy = ctx;
    int w = algo_group_arg_w(arg);
    if (sy->tgen[w] != algo_group_arg_gen(arg))
        return;
    if (sy->d.background) {
        if (!sy->bglate[w] || sy->wstat[w] == S_OFF)
            return;
        sy->bglate[w] = 0;
        sy->late[w] = -1;
        enter_at(sy, w, sy->bg[w], 0);
        return;
    }
    if (sy->wstat[w] != S_WAITING)
        return;
    sy->late[w] = -1;
    if (sy->d.hooks.reenter) {
        algo_sync_msg msg = {.bytes = sy->wbytes[w], .decode = sy->wdec[w]};
        sy->d.hooks.reenter(sy->m, w, sy->wround[w], sy->wphase[w], &msg);
        sy->wbytes[w] = msg.bytes;
        sy->wdec[w] = msg.decode;
    }
    enter(sy, w);
}

/* w's message of its phase is ready: it enters, or waits out the timeout
 * when its round was aborted. */
static void ready(algo_sync *sy, int w)
{
    algo_env_idle_begin(sy->env, w);
    if (sy->late[w] == step_of(sy->wround[w], sy->wphase[w]))
        wait_timeout(sy, w);
    else
        enter(sy, w);
}

static void on_charged(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

/* dt of compute (encoding, decoding) in status stat, then on_charged. */
static void charge(algo_sync *sy, int w, int stat, sim_time dt)
{
    sy->wstat[w] = stat;
    algo_env_compute_charge(sy->env, w, dt);
    if (!sim_engine_schedule(sy->env->eng, dt, on_charged, sy, warg(sy, w), NULL, NULL))
        fail(sy, SIM_ENOMEM, "cannot schedule compute");
}

static void phase_begin(algo_sync *sy, int w, int p)
{
    algo_env *env = sy->env;
    algo_sync_msg msg = {0};
    sy->wphase[w] = p;
    sy->d.hooks.contribute(sy->m, w, sy->wround[w], p, &msg);
    sy->wbytes[w] = msg.bytes;
    sy->wdec[w] = msg.decode;
    if (msg.samples > 0 || msg.encode > 0) {
        /* compute: the worker is idle only once it is done */
        sy->wstat[w] = S_ENCODING;
        algo_env_idle_end(env, w);
        if (msg.samples > 0)
            algo_env_compute(env, w, msg.samples, on_charged, sy, warg(sy, w));
        else
            charge(sy, w, S_ENCODING, msg.encode);
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
    sy->reported = 0;
    const algo_group *g = algo_sync_group(sy, sy->round);
    sy->need = g ? g->n : 0;
    if (sy->d.count == ALGO_SYNC_COUNT_LAST)
        algo_env_iteration(sy->env, samples);
    int slots[ALGO_SYNC_PHASES_MAX];
    plan(sy, sy->round, slots); /* the method's decisions apply from here (sync.h) */
}

static ALGO_ON_MESSAGE(on_join_model)
{
    algo_sync *sy = ctx;
    int w = event_worker(sy, arg, S_JOINING);
    if (w < 0)
        return;
    algo_env_idle_end(sy->env, w);
    algo_sync_work_begin(sy, w, sy->wround[w]);
}

/* The pending joiners join from the next round: w, which formed the
 * round's result, sends it to them. */
static void joiners(algo_sync *sy, int w)
{
    algo_env *env = sy->env;
    const algo_group *next = algo_sync_group(sy, sy->round + 1);
    int k = algo_group_members_joining(next, sy->pending, env, sy->scratch);
    if (!k || !algo_sync_group_add(sy, sy->scratch, k, step_of(sy->round + 1, 0)))
        return;
    for (int i = 0; i < env->n; i++) {
        if (!sy->pending[i] || env->w[i].down)
            continue;
        sy->pending[i] = 0;
        sy->wround[i] = sy->round + 1;
        sy->wstat[i] = S_JOINING;
        sy->late[i] = -1;
        if (sy->d.count == ALGO_SYNC_COUNT_STEPS)
            sy->live.step[i] = sy->live.reported;
        double bytes = sy->d.hooks.join ? sy->d.hooks.join(sy->m, i, w) : 0;
        if (!(bytes > 0))
            bytes = sy->d.join_bytes;
        if (!(bytes > 0))
            bytes = env->msg_bytes;
        algo_env_send(env, w, i, bytes, on_join_model, sy, warg(sy, i));
    }
}

/* w's last phase (and its decoding) is over. */
static void finish(algo_sync *sy, int w)
{
    int64_t k = sy->wround[w];
    int p = sy->wphase[w];
    if (sy->formed <= p) {
        form(sy, wgroup(sy, w), k, p, w, 1);
        joiners(sy, w);
    }
    sy->done++;
    round_check(sy);
    algo_sync_work_begin(sy, w, k + 1);
}

/* The end of compute the driver charged: an encoding or statistics step
 * (S_ENCODING: w enters), a decoding (S_DECODING: w finishes). */
static ALGO_ON_EVENT(on_charged)
{
    algo_sync *sy = ctx;
    int w = event_worker(sy, arg, S_ENCODING);
    if (w >= 0)
        ready(sy, w);
    else if ((w = event_worker(sy, arg, S_DECODING)) >= 0)
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
        if (sy->formed <= p)
            form(sy, g, k, p, w, 0);
        phase_begin(sy, w, p + 1);
        return;
    }
    algo_env_idle_end(env, w);
    sim_time dt = sy->wdec[w];
    dt += sy->wenc[w]; /* with buckets: the encoding (0 without) */
    if (dt > 0) /* decoding is compute; the round counts the worker once it is done */
        charge(sy, w, S_DECODING, dt);
    else
        finish(sy, w);
}

/* ---- background rounds (desc.background) -------------------------------- */

/* w's work for its round is over (sync.h, "Background rounds"). */
static void bg_ready(algo_sync *sy, int w)
{
    if (sy->bg[w] >= 0) {
        sy->wstat[w] = S_BLOCKED;
        algo_env_idle_begin(sy->env, w);
        return;
    }
    int64_t k = sy->wround[w];
    algo_sync_msg msg = {0};
    sy->wphase[w] = 0;
    sy->d.hooks.contribute(sy->m, w, k, 0, &msg);
    sy->wbytes[w] = msg.bytes;
    sy->bg[w] = k;
    sy->wov[w] = NULL;
    if (sy->late[w] == step_of(k, 0))
        bg_wait(sy, w);
    else if ((sy->wov[w] = ov_of(sy, algo_sync_group(sy, k), k, w)))
        algo_overlap_enter(sy->wov[w], w, msg.bytes);
    else
        enter_at(sy, w, k, 0);
    algo_sync_work_begin(sy, w, k + 1);
}

/* w's part of round bg[w]'s collective (in g) is over. */
static void bg_done(algo_sync *sy, algo_group *g, int w)
{
    int64_t k = sy->bg[w];
    if (sy->formed < 1) {
        form(sy, g, k, 0, w, 1);
        joiners(sy, w);
    }
    sy->bg[w] = -1;
    sy->wov[w] = NULL;
    sy->done++;
    round_check(sy);
    if (sy->wstat[w] == S_BLOCKED) {
        algo_env_idle_end(sy->env, w);
        bg_ready(sy, w);
    }
}

/* w's part of a slot's collective in c->g is over (with buckets: its last
 * bucket is reduced; ctx is c). */
static void on_buckets_done(sim_engine *eng SIM_UNUSED, void *ctx, int w)
{
    slot_ctx *c = ctx;
    algo_sync *sy = c->sy;
    int64_t k = sy->wround[w];
    int n_phases;
    if (sy->d.background) {
        if (sy->wstat[w] != S_OFF && sy->wstat[w] != S_JOINING && sy->bg[w] == sy->round &&
            !sy->bglate[w] && algo_sync_group(sy, sy->round) == c->g)
            bg_done(sy, c->g, w);
        return;
    }
    if (sy->wstat[w] != S_ENTERED || k != sy->round || wgroup(sy, w) != c->g ||
        phase_slot(sy, k, sy->wphase[w], &n_phases) != c->slot)
        return; /* a crashed worker, or an aborted round's collective */
    phase_done(sy, c->g, w);
}

static void on_slot_done(sim_engine *eng, void *ctx, int rank)
{
    on_buckets_done(eng, ctx, ((slot_ctx *)ctx)->g->members[((slot_ctx *)ctx)->offset + rank]);
}

/* With buckets: w's work-ending compute step has ended: its update (a
 * local step's, hooks.step_done) applies now, its buckets are reduced on.
 * In an aborted round they stop there and it waits out the timeout (0). */
static int on_computed(void *ctx, int w)
{
    algo_sync *sy = ((slot_ctx *)ctx)->sy;
    sy->computed[w] = 1;
    if (sy->d.hooks.step_done)
        sy->d.hooks.step_done(sy->m, w);
    if (sy->late[w] != step_of(sy->wround[w], 0))
        return 1;
    algo_env_idle_begin(sy->env, w);
    wait_timeout(sy, w);
    return 0;
}

/* ---- crashes and rejoins ------------------------------------------------- */

/* Worker c crashed (sync.h, "Crashes and rejoins"; a: the aborted step). */
static void crash(algo_sync *sy, int c)
{
    int slots[ALGO_SYNC_PHASES_MAX];
    int n_phases = plan(sy, sy->round, slots);
    int finishing = sy->formed >= n_phases;
    int from = sy->d.restart_round ? 0 : sy->formed;
    int64_t a = finishing ? step_of(sy->round + 1, 0) : step_of(sy->round, from);
    if (finishing && (sy->d.background ? sy->bg[c] == sy->round
                                         : sy->wround[c] == sy->round &&
                                               sy->wphase[c] == n_phases - 1 &&
                                               (sy->wstat[c] == S_ENTERED ||
                                                sy->wstat[c] == S_DECODING)))
        sy->need--; /* the finishing round does not wait for it */
    sy->wgen[c]++;
    sy->tgen[c]++;
    sy->wstat[c] = S_OFF;
    sy->pending[c] = 0;
    sy->bg[c] = -1;
    sy->bglate[c] = 0;
    if (sy->bucketed && sy->wov[c])
        algo_overlap_stop(sy->wov[c], c);
    algo_env_idle_end(sy->env, c);
    algo_group *g = algo_groups_for(&sy->groups, a);
    if (g && g->rank_of[c] >= 0) {
        int k = algo_group_members_except(g, c, sy->scratch);
        algo_group *ng = algo_sync_group_add(sy, sy->scratch, k, a);
        if (!ng)
            return;
        if (!finishing) {
            sy->need = ng->n; /* nobody has completed the round's last phase */
            sy->formed = from;
        }
        for (int r = 0; r < ng->n; r++) {
            int s = ng->members[r];
            if (sy->late[s] != a)
                sy->lateg[s] = g;
            sy->late[s] = a;
            if (sy->d.background) {
                if (sy->bg[s] < 0 || step_of(sy->bg[s], 0) != a)
                    continue;
                if (sy->wov[s]) /* its reduced buckets are lost */
                    algo_overlap_stop(sy->wov[s], s);
                bg_wait(sy, s); /* it had entered a: it re-enters */
                continue;
            }
            if (step_of(sy->wround[s], sy->wphase[s]) < a ||
                (sy->wstat[s] != S_ENTERED && sy->wstat[s] != S_WAITING))
                continue;
            if (sy->bucketed && sy->wstat[s] == S_ENTERED) {
                /* still computing: it times out from its compute end */
                if (!sy->computed[s])
                    continue;
                if (sy->wov[s]) /* its reduced buckets are lost */
                    algo_overlap_stop(sy->wov[s], s);
            }
            /* it re-enters the aborted step, with the message it holds */
            sy->wphase[s] = (int)(a % ALGO_SYNC_PHASES_MAX);
            wait_timeout(sy, s);
        }
    }
    round_check(sy);
    count_live(sy);
}

/* Worker j rejoined (sync.h, "Crashes and rejoins"). */
static void rejoin(algo_sync *sy, int j)
{
    int slots[ALGO_SYNC_PHASES_MAX];
    sy->wgen[j]++;
    sy->pending[j] = 1;
    if (sy->d.joiner_idle)
        algo_env_idle_begin(sy->env, j);
    algo_group *g = algo_groups_for(&sy->groups, step_of(sy->round, sy->formed));
    if (g && g->n > 0)
        return;
    /* a multi-phase round past its first phase is over for the joiner */
    if (sy->formed > 0 && plan(sy, sy->round, slots) > 1)
        sy->round++;
    int m = j;
    if (!algo_sync_group_add(sy, &m, 1, step_of(sy->round, 0)))
        return;
    sy->pending[j] = 0;
    sy->done = 0;
    sy->formed = 0;
    sy->reported = 0;
    sy->need = 1;
    sy->late[j] = -1;
    if (sy->d.count == ALGO_SYNC_COUNT_STEPS)
        sy->live.step[j] = sy->live.reported;
    if (sy->d.hooks.join)
        sy->d.hooks.join(sy->m, j, -1);
    algo_env_idle_end(sy->env, j);
    algo_sync_work_begin(sy, j, sy->round);
}

void algo_sync_fault(algo_sync *sy, const algo_fault *ev)
{
    if (ev->kind == ALGO_FAULT_CRASH)
        crash(sy, ev->target);
    else if (ev->kind == ALGO_FAULT_REJOIN)
        rejoin(sy, ev->target);
    algo_sync_collect(sy);
}
