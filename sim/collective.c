/* Collectives as per-rank state machines driven by message deliveries (see
 * collective.h). Nothing here computes a time: every cost comes from the
 * messages sim_net carries, or from sim_net_bulk_step for a RING round in
 * closed form (sim/coll_ring.c; on_ring_done replays its end).
 *
 * ALLGATHER blocks: each rank's contribution is kept per round parity
 * (ag_bytes); the step-k message of rank r carries the block of rank
 * (r - k) mod n and has its size. The originating rank entered the round
 * before its block could reach r, and it cannot enter the round after next
 * before its block has reached every rank, so the parity slot is right.
 *
 * Rounds: rank r has entered `rounds` rounds; while active it is in round
 * rounds-1. A message's tag carries its round mod 4, a type bit and the
 * sender and receiver ranks. Ranks are at most one round apart, so a rank
 * can receive messages of its current round and of the next one: receive
 * counters are kept per round parity, and a message of any other round is
 * reported as an error.
 *
 * Completion (all kinds): a rank is done when it has received what its
 * kind needs AND all its own messages of the round have been delivered.
 * With that rule every event of a round that touches a rank happens before
 * the rank is done, so its per-round counters can be reset at completion.
 * In lock-step runs the rule changes no closed form (a rank's last send
 * arrives together with its last receive).
 *
 * RING / ALLGATHER: at step s rank r sends to r+1 once it has received the
 * step s-1 message from r-1 and its own step s-1 message has arrived (one
 * message in flight per rank: a late rank releases its steps one at a time
 * instead of in a burst, so a straggler delays the round by exactly its
 * lateness). Completion: steps received and steps delivered.
 * TREE: binomial tree rooted at rank 0 (parent of r = r with its lowest set
 * bit cleared; children r + 2^k for 2^k below that bit). A rank sends the
 * full vector to its parent once it has entered and heard from all its
 * children; rank 0 then broadcasts, every rank forwarding to its children
 * on receipt. Done: broadcast received (rank 0: reduction complete) and own
 * sends delivered; on a complete network the last rank finishes at
 * 2 log2(n) (latency + bytes/bandwidth) for n a power of two.
 * PS: a push to ps_host per rank; when the server has all n pushes of the
 * round it sends one pull to every rank; done when the pull has arrived.
 * PS talks to its server even for n = 1 (the server is another host).
 * NEIGHBOR: sends at enter to every out-neighbour; done when all
 * in-neighbour messages of the round have arrived and own sends delivered.
 * Neighbour lists are kept per round parity; a set_neighbors takes effect
 * at the first enter of the next round.
 *
 * REDUCE / BCAST: the two halves of TREE, with its rules, except that each
 * keeps one message in flight per rank: BCAST forwards to one child at a
 * time (largest subtree first) and a REDUCE parent takes one child's
 * vector at a time (a ready child waits while another child's vector is
 * in flight to its parent; at each arrival the parent takes the ready
 * child of smallest offset). A rank's link so never carries two vectors
 * at once, and with every rank entering together each takes
 * ceil(log2 n) (latency + bytes/bandwidth) on a star, for any n. HIER is a
 * composite of REDUCE, RING and BCAST collectives (sim/coll_hier.c) that
 * keeps no rank state here.
 *
 * The done callback runs from an engine event: directly from the delivery
 * that completes the rank, or from a zero-delay event when a rank is
 * complete at enter (n = 1, or no neighbours). */
#include "sim/collective.h"
#include "sim/coll_hier.h"
#include "sim/coll_impl.h"
#include "sim/coll_ring.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { RANK_IDLE = 0, RANK_ACTIVE, RANK_PENDING, RANK_LAUNCH };
enum { TYPE_UP = 0, TYPE_DOWN = 1 }; /* tree reduce/bcast, PS push/pull */
#define RANK_MAX 0x1fffffff

/* Collectives made and not destroyed, in the process (sim_coll_live). */
static atomic_llong live_colls;

static uint64_t tag_make(int64_t round, int type, int src, int dst)
{
    return ((uint64_t)round & 3u) | ((uint64_t)type << 2) | ((uint64_t)src << 3) |
           ((uint64_t)dst << 33);
}

static int tag_round(uint64_t t) { return (int)(t & 3u); }
static int tag_type(uint64_t t) { return (int)((t >> 2) & 1u); }
static int tag_src(uint64_t t) { return (int)((t >> 3) & 0x3fffffffu); }
static int tag_dst(uint64_t t) { return (int)(t >> 33); }

static int lowbit(int r) { return r & -r; }

static int tree_parent(int r) { return r - lowbit(r); }

/* Children of r are r + 2^k for 2^k < lowbit(r) (rank 0: any k), below n. */
static int tree_n_children(const sim_coll *c, int r)
{
    int lim = r ? lowbit(r) : c->n, k = 0;
    for (int d = 1; d < lim && r + d < c->n; d <<= 1)
        k++;
    return k;
}

static int ring_steps(const sim_coll *c)
{
    return c->kind == SIM_COLL_RING ? 2 * (c->n - 1) : c->n - 1;
}

static void fail(sim_coll *c, int code, const char *msg)
{
    if (!c->failed) {
        c->failed = 1;
        sim_err_set(&c->err, code, "collective: %s", msg);
    }
}

static void on_message(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst,
                       double bytes);

static int send_msg(sim_coll *c, int from, int to, int type, int64_t round, double bytes)
{
    int hs = from == c->n ? c->ps_host : c->hosts[from];
    int hd = to == c->n ? c->ps_host : c->hosts[to];
    sim_err e;
    int *flow = c->fast && from < c->n && c->rank[from].sent == 0
                    ? coll_ring_flow_slot(c->fast, from)
                    : NULL;
    c->inflight++; /* before: a delivery may come at once */
    int rc = sim_net_send_flow(c->net, hs, hd, bytes, on_message, c,
                               tag_make(round, type, from, to), flow, &e);
    if (rc) {
        c->inflight--;
        fail(c, rc, e.msg);
        return rc;
    }
    if (from < c->n) {
        c->rank[from].sent++;
        c->rank[from].bytes_round += bytes;
        c->rank[from].bytes_total += bytes;
    }
    return 0;
}

/* Tree broadcast from r to its children, largest subtree first. */
static int tree_forward(sim_coll *c, int r, int64_t round, double bytes)
{
    int lim = r ? lowbit(r) : c->n;
    int top = 1;
    while (top * 2 < lim && r + top * 2 < c->n)
        top *= 2;
    for (int d = top; d >= 1; d >>= 1)
        if (d < lim && r + d < c->n && send_msg(c, r, r + d, TYPE_DOWN, round, bytes))
            return -1;
    return 0;
}

/* Sends whatever rank r's state allows now. */
static int advance(sim_coll *c, int r)
{
    coll_rank *R = &c->rank[r];
    if (R->state != RANK_ACTIVE)
        return 0;
    int64_t round = R->rounds - 1;
    int p = (int)(round & 1);
    switch (c->kind) {
    case SIM_COLL_RING:
    case SIM_COLL_ALLGATHER: {
        int steps = ring_steps(c);
        while (R->sent < steps &&
               (R->sent == 0 || (R->recv[p] >= R->sent && R->delivered >= R->sent))) {
            double sz = c->kind == SIM_COLL_RING
                            ? R->bytes / c->n
                            : c->ag_bytes[p * c->n + (r - R->sent + c->n) % c->n];
            if (send_msg(c, r, (r + 1) % c->n, TYPE_UP, round, sz))
                return -1;
        }
        break;
    }
    case SIM_COLL_TREE:
    case SIM_COLL_REDUCE:
        if (!R->up_done && R->recv[p] == tree_n_children(c, r)) {
            if (c->kind == SIM_COLL_REDUCE && r != 0) {
                int *busy = &c->rank[tree_parent(r)].taking[p];
                if (*busy)
                    break; /* the parent takes it once the vector in flight is in */
                *busy = 1;
            }
            R->up_done = 1;
            if (r != 0 && send_msg(c, r, tree_parent(r), TYPE_UP, round, R->bytes))
                return -1;
        }
        if (c->kind == SIM_COLL_TREE && R->up_done && !R->down_sent &&
            (r == 0 || R->down[p] > 0)) {
            R->down_sent = 1;
            if (tree_forward(c, r, round, R->bytes))
                return -1;
        }
        break;
    case SIM_COLL_BCAST:
        /* one forward in flight at a time, largest subtree first */
        if (r == 0 || R->down[p] > 0) {
            int nc = tree_n_children(c, r);
            if (R->down_sent < nc && R->delivered == R->sent) {
                int d = 1 << (nc - 1 - R->down_sent);
                R->down_sent++;
                if (send_msg(c, r, r + d, TYPE_DOWN, round, R->bytes))
                    return -1;
            }
        }
        break;
    case SIM_COLL_HIER:
        break;
    case SIM_COLL_PS:
        if (!R->up_done) {
            R->up_done = 1;
            if (send_msg(c, r, c->n, TYPE_UP, round, R->bytes))
                return -1;
        }
        break;
    case SIM_COLL_NEIGHBOR:
        if (R->sent == 0) {
            const nbr_lists *L = &c->slot[p];
            for (int k = L->off[r]; k < L->off[r + 1]; k++)
                if (send_msg(c, r, L->nbr[k], TYPE_UP, round, R->bytes))
                    return -1;
        }
        break;
    }
    return 0;
}

static int is_complete(const sim_coll *c, int r)
{
    const coll_rank *R = &c->rank[r];
    if (R->state != RANK_ACTIVE || R->delivered != R->sent)
        return 0;
    int p = (int)((R->rounds - 1) & 1);
    switch (c->kind) {
    case SIM_COLL_RING:
    case SIM_COLL_ALLGATHER:
        return R->recv[p] == ring_steps(c) && R->sent == ring_steps(c);
    case SIM_COLL_TREE:
        return R->up_done && R->down_sent && (r == 0 || R->down[p] > 0);
    case SIM_COLL_REDUCE:
        return R->up_done;
    case SIM_COLL_BCAST:
        return (r == 0 || R->down[p] > 0) && R->down_sent == tree_n_children(c, r);
    case SIM_COLL_HIER:
        return 0;
    case SIM_COLL_PS:
        return R->up_done && R->down[p] > 0;
    case SIM_COLL_NEIGHBOR:
        return R->recv[p] == c->slot[p].in_deg[r] &&
               R->sent == c->slot[p].off[r + 1] - c->slot[p].off[r];
    }
    return 0;
}

/* Clears the finished round's counters; the rank is no longer active. */
static void finish(sim_coll *c, int r, int state)
{
    coll_rank *R = &c->rank[r];
    int p = (int)((R->rounds - 1) & 1);
    R->state = state;
    R->sent = R->delivered = R->up_done = R->down_sent = 0;
    R->recv[p] = R->down[p] = 0;
}

/* Checks that a message of `round` (mod 4) may reach rank r now. */
static int round_ok(const sim_coll *c, int r, int round)
{
    const coll_rank *R = &c->rank[r];
    int64_t base = R->state == RANK_ACTIVE ? R->rounds - 1 : R->rounds;
    int d = (int)(((int64_t)round - base) & 3);
    return d == 0 || d == 1;
}

/* REDUCE: a child's vector of round parity p has reached r: r takes the
 * next one, from its ready child of smallest offset. */
static int take_next(sim_coll *c, int r, int p)
{
    c->rank[r].taking[p] = 0;
    int lim = r ? lowbit(r) : c->n;
    for (int d = 1; d < lim && r + d < c->n && !c->rank[r].taking[p]; d <<= 1) {
        const coll_rank *C = &c->rank[r + d];
        if (C->state == RANK_ACTIVE && (int)((C->rounds - 1) & 1) == p && !C->up_done &&
            advance(c, r + d))
            return -1;
    }
    return 0;
}

static void on_message(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst,
                       double bytes)
{
    (void)eng;
    (void)src;
    (void)dst;
    sim_coll *c = ctx;
    c->inflight--;
    if (c->failed)
        return;
    int round = tag_round(arg), type = tag_type(arg);
    int from = tag_src(arg), to = tag_dst(arg);
    int p = round & 1;
    int n_done = 0, done_list[2];

    if (from < c->n)
        c->rank[from].delivered++;
    if (to == c->n) {
        /* PS server: a push. */
        c->ps_bytes[p] = bytes;
        if (++c->ps_pushes[p] == c->n) {
            c->ps_pushes[p] = 0;
            for (int r = 0; r < c->n; r++)
                if (send_msg(c, c->n, r, TYPE_DOWN, round, c->ps_bytes[p]))
                    return;
        }
    } else {
        if (!round_ok(c, to, round)) {
            fail(c, SIM_EINTERNAL, "ranks more than one round apart");
            return;
        }
        if (type == TYPE_DOWN)
            c->rank[to].down[p]++;
        else
            c->rank[to].recv[p]++;
        if (c->kind == SIM_COLL_REDUCE && take_next(c, to, p))
            return;
        if (advance(c, to))
            return;
        if (is_complete(c, to)) {
            finish(c, to, RANK_IDLE);
            done_list[n_done++] = to;
        }
    }
    if (from < c->n && from != to) {
        if (advance(c, from))
            return;
        if (is_complete(c, from)) {
            finish(c, from, RANK_IDLE);
            done_list[n_done++] = from;
        }
    }
    /* All state is settled: the callbacks may re-enter their ranks. */
    for (int i = 0; i < n_done && c->done; i++)
        c->done(eng, c->ctx, done_list[i]);
}

static void on_done_event(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)payload;
    sim_coll *c = ctx;
    int r = (int)arg;
    c->inflight--;
    c->rank[r].state = RANK_IDLE;
    if (c->done)
        c->done(eng, c->ctx, r);
}

void sim_coll_destroy(sim_coll *c)
{
    if (!c)
        return;
    coll_lists_release(&c->slot[0]);
    coll_lists_release(&c->slot[1]);
    coll_lists_release(&c->pending);
    coll_hier_destroy(c->hier);
    coll_ring_destroy(c->fast);
    free(c->hosts);
    free(c->rank);
    free(c->ag_bytes);
    free(c);
    atomic_fetch_sub(&live_colls, 1);
}

int sim_coll_busy(const sim_coll *c)
{
    return c && (c->inflight > 0 || coll_hier_busy(c->hier));
}

int64_t sim_coll_live(void) { return (int64_t)atomic_load(&live_colls); }

sim_coll *sim_coll_create(sim_net *net, const sim_coll_desc *d, sim_err *err)
{
    if (!net || !d) {
        sim_err_set(err, SIM_EINTERNAL, "collective: missing network or description");
        return NULL;
    }
    if (d->n < 1 || d->n > RANK_MAX) {
        sim_err_set(err, SIM_EINPUT, "collective: rank count must be in 1..%d, got %d", RANK_MAX,
                    d->n);
        return NULL;
    }
    if (d->kind < SIM_COLL_RING || d->kind > SIM_COLL_HIER) {
        sim_err_set(err, SIM_EINPUT, "collective: unknown kind %d", (int)d->kind);
        return NULL;
    }
    int nh = sim_net_n_hosts(net);
    sim_coll *c = calloc(1, sizeof *c);
    if (!c)
        goto nomem;
    atomic_fetch_add(&live_colls, 1);
    c->net = net;
    c->kind = d->kind;
    c->n = d->n;
    c->ps_host = d->ps_host;
    c->done = d->done;
    c->ctx = d->ctx;
    c->max_round = -1;
    /* a launch per call of an all-reduce-like collective; the point-to-point
     * kinds (PS, NEIGHBOR) pay message_overhead per message instead */
    if (!d->no_launch && d->kind != SIM_COLL_PS && d->kind != SIM_COLL_NEIGHBOR)
        c->launch = sim_time_from_s(sim_net_collective_overhead(net));
    c->hosts = malloc(sizeof *c->hosts * (size_t)d->n);
    c->rank = calloc((size_t)d->n, sizeof *c->rank);
    if (!c->hosts || !c->rank)
        goto nomem;
    for (int r = 0; r < d->n; r++) {
        c->hosts[r] = d->hosts ? d->hosts[r] : r;
        if (c->hosts[r] < 0 || c->hosts[r] >= nh) {
            sim_err_set(err, SIM_EINPUT, "collective: rank %d on host %d, network has %d hosts", r,
                        c->hosts[r], nh);
            goto fail;
        }
    }
    int n = d->n;
    switch (d->kind) {
    case SIM_COLL_RING:
    case SIM_COLL_ALLGATHER:
        for (int r = 0; r < n && n > 1; r++)
            if (coll_check_route(c, r, (r + 1) % n, err))
                goto fail;
        if (d->kind == SIM_COLL_RING && n > 1 && !d->flows_only &&
            !(c->fast = coll_ring_create(n, c->hosts)))
            goto nomem;
        if (d->kind == SIM_COLL_ALLGATHER) {
            c->ag_bytes = calloc(2 * (size_t)n, sizeof *c->ag_bytes);
            if (!c->ag_bytes)
                goto nomem;
        }
        break;
    case SIM_COLL_TREE:
    case SIM_COLL_REDUCE:
    case SIM_COLL_BCAST:
        for (int r = 1; r < n; r++)
            if ((d->kind != SIM_COLL_BCAST && coll_check_route(c, r, tree_parent(r), err)) ||
                (d->kind != SIM_COLL_REDUCE && coll_check_route(c, tree_parent(r), r, err)))
                goto fail;
        break;
    case SIM_COLL_HIER:
        c->hier = coll_hier_create(net, d, c->hosts, err);
        if (!c->hier)
            goto fail;
        break;
    case SIM_COLL_PS:
        if (d->ps_host < 0 || d->ps_host >= nh) {
            sim_err_set(err, SIM_EINPUT, "collective: server host %d out of range (%d hosts)",
                        d->ps_host, nh);
            goto fail;
        }
        for (int r = 0; r < n; r++)
            if (coll_check_route(c, r, n, err) || coll_check_route(c, n, r, err))
                goto fail;
        break;
    case SIM_COLL_NEIGHBOR:
        if (coll_lists_set(c, &c->slot[0], d->nbr_off, d->nbr, err) ||
            coll_check_nbr_routes(c, &c->slot[0], err))
            goto fail;
        c->slot[0].version = 1;
        break;
    }
    return c;

nomem:
    sim_err_set(err, SIM_ENOMEM, "collective: out of memory");
fail:
    sim_coll_destroy(c);
    return NULL;
}

/* The end of a RING round charged in closed form (sim/coll_ring.c): the
 * counters its flows would have left, then the callbacks in their order,
 * grouped as the flows' last deliveries group them (one rank each, the
 * last delivery two: g+1 and g). When a callback stops the engine, the
 * ranks left wait for a continuation scheduled before any callback ran,
 * as their deliveries would wait ahead of the callbacks' events. */
static void on_ring_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)arg;
    (void)payload;
    sim_coll *c = ctx;
    int n = c->n, z = c->ring_next, last = coll_ring_last(c->fast);
    c->inflight--;
    if (z == 0) {
        double msg;
        int64_t steps;
        coll_ring_settle(c->fast, c->net, &msg, &steps);
        for (int r = 0; r < n; r++) {
            coll_rank *R = &c->rank[r];
            R->bytes_round = sim_fsum_repeat(R->bytes_round, msg, steps - 1);
            R->bytes_total = sim_fsum_repeat(R->bytes_total, msg, steps - 1);
        }
    }
    sim_event_id cont = 0;
    if (z < n - 2) {
        cont = sim_engine_schedule(eng, 0, on_ring_done, c, 0, NULL, NULL);
        if (!cont) {
            fail(c, SIM_ENOMEM, "out of memory");
            return;
        }
        c->inflight++;
    }
    while (z < n) {
        int k = z >= n - 2 ? n - z : 1, group[2];
        for (int i = 0; i < k; i++) {
            group[i] = (int)(((int64_t)last + n - 1 - z - i) % n);
            finish(c, group[i], RANK_IDLE);
        }
        z += k;
        c->ring_next = z < n ? z : 0;
        if (z == n && cont) { /* the last group: nothing left to wait */
            sim_engine_cancel(eng, cont);
            c->inflight--;
            cont = 0;
        }
        for (int i = 0; i < k && c->done; i++)
            c->done(eng, c->ctx, group[i]);
        if (z < n && sim_engine_stopping(eng))
            return; /* the continuation goes on */
    }
}

/* After a RING enter's sends: the round in closed form when it qualifies. */
static int ring_try_closed(sim_coll *c, sim_err *err)
{
    sim_time dur;
    if (!coll_ring_try(c->fast, c->net, &dur))
        return 0;
    c->inflight -= c->n; /* the first step's messages, taken back */
    if (!sim_engine_schedule(sim_net_engine(c->net), dur, on_ring_done, c, 0, NULL, NULL)) {
        fail(c, SIM_ENOMEM, "out of memory");
        return sim_err_set(err, SIM_ENOMEM, "collective: out of memory");
    }
    c->inflight++;
    return 0;
}

static void on_launch(sim_engine *eng, void *ctx, uint64_t arg, void *payload);
static int enter_now(sim_coll *c, int rank, double bytes, sim_err *err);

int sim_coll_enter(sim_coll *c, int rank, double bytes, sim_err *err)
{
    if (c->failed) {
        if (err)
            *err = c->err;
        return c->err.code;
    }
    if (rank < 0 || rank >= c->n)
        return sim_err_set(err, SIM_EINPUT, "collective: rank %d out of range (%d ranks)", rank,
                           c->n);
    if (!(bytes >= 0.0 && isfinite(bytes)))
        return sim_err_set(err, SIM_EINPUT, "collective: rank %d: size must be >= 0 bytes, got %g",
                           rank, bytes);
    if (c->launch > 0) {
        coll_rank *R = &c->rank[rank];
        if (R->state != RANK_IDLE && !c->hier)
            return sim_err_set(err, SIM_EINTERNAL,
                               "collective: rank %d entered round %lld before finishing round"
                               " %lld", rank, (long long)R->rounds, (long long)(R->rounds - 1));
        R->state = RANK_LAUNCH;
        R->bytes = bytes;
        if (!sim_engine_schedule(sim_net_engine(c->net), c->launch, on_launch, c,
                                 (uint64_t)rank, NULL, NULL))
            return sim_err_set(err, SIM_ENOMEM, "collective: out of memory");
        c->inflight++;
        return 0;
    }
    return enter_now(c, rank, bytes, err);
}

/* A rank's launch is over: it enters the round it called. */
static void on_launch(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    sim_coll *c = ctx;
    int rank = (int)arg;
    coll_rank *R = &c->rank[rank];
    c->inflight--;
    R->state = RANK_IDLE;
    sim_err e = {0};
    if (!c->failed && enter_now(c, rank, R->bytes, &e) < 0 && !c->failed) {
        c->failed = 1;
        c->err = e;
    }
}

/* Rank enters its next round now (checked by sim_coll_enter). */
static int enter_now(sim_coll *c, int rank, double bytes, sim_err *err)
{
    if (c->hier)
        return coll_hier_enter(c->hier, rank, bytes, err);
    coll_rank *R = &c->rank[rank];
    if (R->state != RANK_IDLE)
        return sim_err_set(err, SIM_EINTERNAL,
                           "collective: rank %d entered round %lld before finishing round %lld",
                           rank, (long long)R->rounds, (long long)(R->rounds - 1));
    int64_t round = R->rounds;
    if (c->kind == SIM_COLL_NEIGHBOR && round > c->max_round) {
        int rc = coll_lists_install(c, round, err);
        if (rc)
            return rc;
    }
    if (round > c->max_round)
        c->max_round = round;
    R->rounds++;
    R->state = RANK_ACTIVE;
    R->bytes = bytes;
    R->bytes_round = 0;
    if (c->kind == SIM_COLL_ALLGATHER)
        c->ag_bytes[(round & 1) * c->n + rank] = bytes;
    if (c->fast)
        coll_ring_enter(c->fast, round, sim_engine_now(sim_net_engine(c->net)), rank, bytes);
    if (advance(c, rank)) {
        if (err)
            *err = c->err;
        return c->err.code;
    }
    if (c->fast)
        return ring_try_closed(c, err);
    if (is_complete(c, rank)) {
        finish(c, rank, RANK_PENDING);
        if (!sim_engine_schedule(sim_net_engine(c->net), 0, on_done_event, c,
                                 (uint64_t)rank, NULL, NULL))
            return sim_err_set(err, SIM_ENOMEM, "collective: out of memory");
        c->inflight++;
    }
    return 0;
}

double sim_coll_bytes_sent(const sim_coll *c, int rank)
{
    return rank >= 0 && rank < c->n ? c->rank[rank].bytes_total : 0.0;
}

double sim_coll_round_bytes_sent(const sim_coll *c, int rank)
{
    return rank >= 0 && rank < c->n ? c->rank[rank].bytes_round : 0.0;
}
