/* Collectives built from messages, against the closed forms of
 * docs/algorithms.md 0.8 on networks where they hold exactly: ring all-reduce
 * 2(n-1)(a + S/(nB)), tree 2 log2(n)(a + S/B), parameter server
 * 2(2a + nS/B) on a star, all-gather (n-1)(a + s/B) and with unequal
 * per-rank blocks, per-rank byte counters, neighbour exchange
 * a + S/B; stragglers, repeated rounds, n = 1 and the error paths. */
#include <criterion/criterion.h>

#include <math.h>
#include <string.h>

#include "sim/collective.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "topology/physnet.h"

#define MAXR 32

typedef struct st {
    sim_coll *c;
    int rounds;             /* rounds each rank runs back to back */
    double bytes;
    int done[MAXR];         /* rounds completed per rank */
    sim_time t[MAXR];       /* time of the last completion per rank */
    int reentrant;          /* set while inside sim_coll_enter */
    const int *next_off, *next_nbr; /* NEIGHBOR: lists for round 1 */
    int switched;
} st;

static void on_done(sim_engine *eng, void *ctx, int rank)
{
    st *s = ctx;
    cr_assert_eq(s->reentrant, 0, "done called from inside sim_coll_enter");
    cr_assert(rank >= 0 && rank < MAXR);
    s->done[rank]++;
    s->t[rank] = sim_engine_now(eng);
    if (s->next_off && !s->switched) {
        sim_err err;
        cr_assert_eq(sim_coll_set_neighbors(s->c, s->next_off, s->next_nbr, &err), 0, "%s",
                     err.msg);
        s->switched = 1;
    }
    if (s->done[rank] < s->rounds) {
        sim_err err;
        s->reentrant = 1;
        cr_assert_eq(sim_coll_enter(s->c, rank, s->bytes, &err), 0, "%s", err.msg);
        s->reentrant = 0;
    }
}

/* Transport parameters the next setup applies (efficiency, overheads), or
 * NULL for the pure model. */
static const sim_net_desc *g_model;

static void apply_model(sim_net_desc *d)
{
    if (!g_model)
        return;
    d->efficiency = g_model->efficiency;
    d->message_overhead = g_model->message_overhead;
    d->collective_overhead = g_model->collective_overhead;
}

typedef struct fix {
    sim_engine *eng;
    sim_net *net;
    st s;
} fix;

static void setup(fix *f, const char *spec, int n_hosts, double lat, double bw, sim_sharing sh)
{
    memset(f, 0, sizeof *f);
    f->eng = sim_engine_create(0);
    topo_physnet pn;
    sim_err err;
    cr_assert_eq(topo_physnet_build(&pn, spec, n_hosts, &err), 0, "%s", err.msg);
    sim_net_desc d;
    topo_physnet_desc(&pn, lat, bw, sh, &d);
    apply_model(&d);
    f->net = sim_net_create(f->eng, &d, &err);
    cr_assert_not_null(f->net, "%s", err.msg);
    topo_physnet_release(&pn);
    f->s.rounds = 1;
}

static void make_coll(fix *f, sim_coll_kind kind, int n, int ps_host, const int *off,
                      const int *nbr)
{
    sim_coll_desc d = {.kind = kind, .n = n, .ps_host = ps_host, .nbr_off = off, .nbr = nbr,
                       .done = on_done, .ctx = &f->s};
    sim_err err;
    f->s.c = sim_coll_create(f->net, &d, &err);
    cr_assert_not_null(f->s.c, "%s", err.msg);
}

static void enter_all(fix *f, int n, double bytes)
{
    f->s.bytes = bytes;
    for (int r = 0; r < n; r++) {
        sim_err err;
        f->s.reentrant = 1;
        cr_assert_eq(sim_coll_enter(f->s.c, r, bytes, &err), 0, "%s", err.msg);
        f->s.reentrant = 0;
    }
}

static void run_all(fix *f)
{
    while (sim_engine_step(f->eng))
        ;
}

static void teardown(fix *f)
{
    sim_coll_destroy(f->s.c);
    sim_net_destroy(f->net);
    sim_engine_destroy(f->eng);
}

/* Every rank done `rounds` times, the last one at want_s (relative tol). */
static double last_done(fix *f, int n, int rounds)
{
    sim_time last = 0;
    for (int r = 0; r < n; r++) {
        cr_assert_eq(f->s.done[r], rounds, "rank %d finished %d rounds", r, f->s.done[r]);
        last = f->s.t[r] > last ? f->s.t[r] : last;
    }
    return sim_time_to_s(last);
}

#define ASSERT_REL(got, want, tol)                                                           \
    cr_assert(fabs((got) - (want)) <= (tol) * (want), "got %.12g s, want %.12g s", (got),  \
              (want))

Test(collective, ring_allreduce_on_ring)
{
    const double L = 10e-6, B = 1e9, S = 8e6;
    const int ns[3] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        int n = ns[i];
        fix f;
        setup(&f, "ring", n, L, B, SIM_SHARE_FAIR);
        make_coll(&f, SIM_COLL_RING, n, 0, NULL, NULL);
        enter_all(&f, n, S);
        run_all(&f);
        double want = 2.0 * (n - 1) * (L + S / (n * B));
        ASSERT_REL(last_done(&f, n, 1), want, 1e-3);
        for (int r = 0; r < n; r++) /* lock-step: all at once */
            cr_assert_eq(f.s.t[r], f.s.t[0]);
        /* Each rank sends 2(n-1) chunks of S/n. */
        cr_assert_float_eq(sim_net_bytes_sent_total(f.net), 2.0 * (n - 1) * S, 1e-6);
        cr_assert_eq(sim_net_messages(f.net), (uint64_t)(2 * (n - 1) * n));
        teardown(&f);
    }
}

/* On a star each step every host sends once and receives once: no link is
 * shared, each message costs 2a + S/(nB). */
Test(collective, ring_allreduce_on_star)
{
    const double L = 5e-6, B = 1.25e9, S = 4e6;
    const int ns[2] = {4, 8};
    for (int i = 0; i < 2; i++) {
        int n = ns[i];
        fix f;
        setup(&f, "star", n, L, B, SIM_SHARE_FAIR);
        make_coll(&f, SIM_COLL_RING, n, 0, NULL, NULL);
        enter_all(&f, n, S);
        run_all(&f);
        ASSERT_REL(last_done(&f, n, 1), 2.0 * (n - 1) * (2 * L + S / (n * B)), 1e-6);
        teardown(&f);
    }
}

/* Binomial reduce then broadcast on a complete network: log2(n) levels each
 * way, each level one full-vector message on its own link. */
Test(collective, tree_on_complete)
{
    const double L = 20e-6, B = 2e9, S = 1e6;
    const int ns[3] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        int n = ns[i];
        fix f;
        setup(&f, "complete", n, L, B, SIM_SHARE_FAIR);
        make_coll(&f, SIM_COLL_TREE, n, 0, NULL, NULL);
        enter_all(&f, n, S);
        run_all(&f);
        double lg = log2((double)n);
        ASSERT_REL(last_done(&f, n, 1), 2.0 * lg * (L + S / B), 1e-6);
        /* Rank 0 is done when its broadcast has reached its children. */
        ASSERT_REL(sim_time_to_s(f.s.t[0]), (lg + 1) * (L + S / B), 1e-6);
        /* n-1 reduce messages and n-1 broadcast messages of S. */
        cr_assert_eq(sim_net_messages(f.net), (uint64_t)(2 * (n - 1)));
        cr_assert_float_eq(sim_net_bytes_sent_total(f.net), 2.0 * (n - 1) * S, 1e-6);
        teardown(&f);
    }
}

/* Server on host n of a star: n pushes share its downlink, n pulls its
 * uplink. */
Test(collective, ps_on_star)
{
    const double L = 4e-6, B = 1e9, S = 2e5;
    const int n = 6;
    fix f;
    setup(&f, "star", n + 1, L, B, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_PS, n, n, NULL, NULL);
    enter_all(&f, n, S);
    run_all(&f);
    double want = 2.0 * (2 * L + n * S / B);
    ASSERT_REL(last_done(&f, n, 1), want, 1e-6);
    for (int r = 0; r < n; r++)
        cr_assert_eq(f.s.t[r], f.s.t[0]);
    cr_assert_float_eq(sim_net_bytes_sent_host(f.net, n), n * S, 1e-6);
    cr_assert_float_eq(sim_net_bytes_sent_host(f.net, 0), S, 1e-6);
    teardown(&f);

    /* With sharing = none the server link serves every flow at full rate. */
    setup(&f, "star", n + 1, L, B, SIM_SHARE_NONE);
    make_coll(&f, SIM_COLL_PS, n, n, NULL, NULL);
    enter_all(&f, n, S);
    run_all(&f);
    ASSERT_REL(last_done(&f, n, 1), 2.0 * (2 * L + S / B), 1e-6);
    teardown(&f);
}

Test(collective, allgather_on_ring)
{
    const double L = 3e-6, B = 5e9, s = 1e5;
    const int n = 8;
    fix f;
    setup(&f, "ring", n, L, B, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_ALLGATHER, n, 0, NULL, NULL);
    enter_all(&f, n, s);
    run_all(&f);
    ASSERT_REL(last_done(&f, n, 1), (n - 1) * (L + s / B), 1e-6);
    cr_assert_float_eq(sim_net_bytes_sent_total(f.net), (double)(n - 1) * n * s, 1e-6);
    teardown(&f);
}

/* Per-rank block sizes: rank 0 contributes b0, every other rank s. In step k
 * rank r forwards the block of rank (r - k) mod n once it holds it and its
 * own previous message has arrived, so the delivery time of its step-k
 * message is T(r, k) = c(r - k) + max(T(r - 1, k - 1), T(r, k - 1)) with
 * c(q) = a + b_q/B (one message per directed link at a time: nothing is
 * shared). The max-plus path through T keeps the big block on the critical
 * path as long as it can: with C = a + b0/B and c = a + s/B, rank r
 * finishes (last receive and own last delivery) at
 *   r = 0:          (n-2) c + C
 *   1 <= r <= n-2:  (n-2-r) c + (r+1) C
 *   r = n-1:        (n-1) C
 * and sends every block but that of rank r+1. */
Test(collective, allgather_unequal_sizes_on_ring)
{
    const double L = 3e-6, B = 5e9, s = 1e5, b0 = 7e5;
    const int n = 6;
    const sim_sharing modes[2] = {SIM_SHARE_FAIR, SIM_SHARE_NONE};
    for (int m = 0; m < 2; m++) {
        fix f;
        setup(&f, "ring", n, L, B, modes[m]);
        make_coll(&f, SIM_COLL_ALLGATHER, n, 0, NULL, NULL);
        double b[6], total = 0;
        for (int r = 0; r < n; r++) {
            b[r] = r == 0 ? b0 : s;
            total += b[r];
            sim_err err;
            cr_assert_eq(sim_coll_enter(f.s.c, r, b[r], &err), 0, "%s", err.msg);
        }
        run_all(&f);
        const double C = L + b0 / B, c = L + s / B;
        for (int r = 0; r < n; r++) {
            double want = r == 0       ? (n - 2) * c + C
                          : r < n - 1 ? (n - 2 - r) * c + (r + 1) * C
                                      : (n - 1) * C;
            cr_assert_eq(f.s.done[r], 1);
            ASSERT_REL(sim_time_to_s(f.s.t[r]), want, 1e-6);
            double sent = total - b[(r + 1) % n];
            cr_assert_float_eq(sim_coll_bytes_sent(f.s.c, r), sent, 1e-6);
            cr_assert_float_eq(sim_coll_round_bytes_sent(f.s.c, r), sent, 1e-6);
            cr_assert_float_eq(sim_net_bytes_sent_host(f.net, r), sent, 1e-6);
        }
        cr_assert_float_eq(sim_net_bytes_sent_total(f.net), (n - 1) * total, 1e-6);
        cr_assert_eq(sim_coll_bytes_sent(f.s.c, n), 0.0);
        teardown(&f);
    }
}

/* Per-rank counters over repeated rounds: the round count resets at each
 * enter, the total accumulates; equal to the network's counters. */
Test(collective, bytes_sent_per_rank)
{
    const double L = 1e-6, B = 1e9, S = 8e5;
    const int n = 4;
    fix f;
    setup(&f, "ring", n, L, B, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_RING, n, 0, NULL, NULL);
    f.s.rounds = 3;
    enter_all(&f, n, S);
    run_all(&f);
    for (int r = 0; r < n; r++) {
        cr_assert_eq(f.s.done[r], 3);
        cr_assert_float_eq(sim_coll_round_bytes_sent(f.s.c, r), 2.0 * (n - 1) * S / n, 1e-6);
        cr_assert_float_eq(sim_coll_bytes_sent(f.s.c, r), 3 * 2.0 * (n - 1) * S / n, 1e-6);
        cr_assert_float_eq(sim_coll_bytes_sent(f.s.c, r), sim_net_bytes_sent_host(f.net, r),
                           1e-6);
    }
    teardown(&f);
}

/* Every rank sends S to both ring neighbours: the two directed links out of
 * a host carry one message each, so a + S/B. */
Test(collective, neighbor_on_ring)
{
    const double L = 50e-6, B = 1e9, S = 1e6;
    enum { n = 8 };
    int off[n + 1], nbr[2 * n];
    for (int r = 0; r <= n; r++)
        off[r] = 2 * r;
    for (int r = 0; r < n; r++) {
        nbr[2 * r] = (r + n - 1) % n;
        nbr[2 * r + 1] = (r + 1) % n;
    }
    fix f;
    setup(&f, "ring", n, L, B, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_NEIGHBOR, n, 0, off, nbr);
    enter_all(&f, n, S);
    run_all(&f);
    ASSERT_REL(last_done(&f, n, 1), L + S / B, 1e-6);
    teardown(&f);

    /* On a star both messages leave through the host's uplink: a shared NIC
     * costs 2a + 2S/B. */
    setup(&f, "star", n, L, B, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_NEIGHBOR, n, 0, off, nbr);
    enter_all(&f, n, S);
    run_all(&f);
    ASSERT_REL(last_done(&f, n, 1), 2 * L + 2 * S / B, 1e-6);
    teardown(&f);
}

/* Round 0: r -> r+1; round 1 (set from the first done callback): r -> r+2,
 * on a complete network; each round costs a + S/B. */
Test(collective, neighbor_lists_change_per_round)
{
    const double L = 10e-6, B = 1e9, S = 1e5;
    enum { n = 8 };
    int off[n + 1], nbr1[n], nbr2[n];
    for (int r = 0; r <= n; r++)
        off[r] = r;
    for (int r = 0; r < n; r++) {
        nbr1[r] = (r + 1) % n;
        nbr2[r] = (r + 2) % n;
    }
    fix f;
    setup(&f, "complete", n, L, B, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_NEIGHBOR, n, 0, off, nbr1);
    f.s.rounds = 3;
    f.s.next_off = off;
    f.s.next_nbr = nbr2;
    enter_all(&f, n, S);
    run_all(&f);
    ASSERT_REL(last_done(&f, n, 3), 3 * (L + S / B), 1e-6);
    teardown(&f);
}

typedef struct late {
    fix *f;
    int rank;
} late;

static void enter_late(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)arg;
    (void)payload;
    late *l = ctx;
    sim_err err;
    cr_assert_eq(sim_coll_enter(l->f->s.c, l->rank, l->f->s.bytes, &err), 0, "%s", err.msg);
}

/* One rank enters D late: every rank finishes at exactly D + closed form. */
Test(collective, ring_straggler)
{
    const double L = 10e-6, B = 1e9, S = 4e6, D = 3e-3;
    const int n = 4;
    const char *specs[2] = {"ring", "star"};
    for (int k = 0; k < 2; k++) {
        double hop = k == 0 ? L : 2 * L;
        for (int who = 0; who < n; who += 3) {
            fix f;
            setup(&f, specs[k], n, L, B, SIM_SHARE_FAIR);
            make_coll(&f, SIM_COLL_RING, n, 0, NULL, NULL);
            f.s.bytes = S;
            for (int r = 0; r < n; r++)
                if (r != who)
                    cr_assert_eq(sim_coll_enter(f.s.c, r, S, NULL), 0);
            late l = {&f, who};
            sim_engine_schedule(f.eng, sim_time_from_s(D), enter_late, &l, 0, NULL, NULL);
            run_all(&f);
            last_done(&f, n, 1);
            double want = D + 2.0 * (n - 1) * (hop + S / (n * B));
            for (int r = 0; r < n; r++)
                ASSERT_REL(sim_time_to_s(f.s.t[r]), want, 1e-6);
            teardown(&f);
        }
    }
}

/* Three rounds back to back from the done callback: 3 x one round. */
Test(collective, repeated_rounds)
{
    const double L = 10e-6, B = 1e9, S = 2e6;
    const int n = 4;
    fix f;
    setup(&f, "ring", n, L, B, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_RING, n, 0, NULL, NULL);
    f.s.rounds = 3;
    enter_all(&f, n, S);
    run_all(&f);
    ASSERT_REL(last_done(&f, n, 3), 3 * 2.0 * (n - 1) * (L + S / (n * B)), 1e-6);
    teardown(&f);

    setup(&f, "star", n + 1, L, B, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_PS, n, n, NULL, NULL);
    f.s.rounds = 3;
    enter_all(&f, n, S);
    run_all(&f);
    ASSERT_REL(last_done(&f, n, 3), 3 * 2.0 * (2 * L + n * S / B), 1e-6);
    teardown(&f);

    /* Tree ranks finish at different times, but rank n-1 is both the last
     * one done and the deepest leaf: each round adds its full critical path
     * (reduce up, broadcast down), so three rounds are 3 x one round. */
    setup(&f, "complete", 8, L, B, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_TREE, 8, 0, NULL, NULL);
    f.s.rounds = 3;
    enter_all(&f, 8, S);
    run_all(&f);
    ASSERT_REL(last_done(&f, 8, 3), 3 * 6 * (L + S / B), 1e-6);
    teardown(&f);
}

Test(collective, single_rank_done_at_zero)
{
    const sim_coll_kind kinds[3] = {SIM_COLL_RING, SIM_COLL_TREE, SIM_COLL_ALLGATHER};
    for (int k = 0; k < 3; k++) {
        fix f;
        setup(&f, "star", 1, 1e-3, 1e6, SIM_SHARE_FAIR);
        make_coll(&f, kinds[k], 1, 0, NULL, NULL);
        f.s.rounds = 2;
        enter_all(&f, 1, 1e6);
        cr_assert_eq(f.s.done[0], 0); /* never inside enter */
        run_all(&f);
        cr_assert_eq(f.s.done[0], 2);
        cr_assert_eq(f.s.t[0], 0);
        cr_assert_eq(sim_net_messages(f.net), 0);
        teardown(&f);
    }
    /* A rank with no neighbours is done at once too. */
    int off[3] = {0, 0, 0}, nbr[1] = {0};
    fix f;
    setup(&f, "ring", 2, 1e-3, 1e6, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_NEIGHBOR, 2, 0, off, nbr);
    enter_all(&f, 2, 1e6);
    cr_assert_eq(f.s.done[0] + f.s.done[1], 0);
    run_all(&f);
    last_done(&f, 2, 1);
    cr_assert_eq(f.s.t[0], 0);
    teardown(&f);

    /* PS with one worker still talks to its server (host 1). */
    setup(&f, "star", 2, 1e-6, 1e9, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_PS, 1, 1, NULL, NULL);
    enter_all(&f, 1, 1e6);
    run_all(&f);
    ASSERT_REL(last_done(&f, 1, 1), 2 * (2e-6 + 1e-3), 1e-6);
    teardown(&f);
}

/* Ranks mapped onto hosts out of order: the ring follows ranks, so on a
 * ring network a scrambled mapping makes multi-hop, link-sharing routes and
 * the round can only get slower than the identity mapping. */
Test(collective, host_mapping)
{
    const double L = 1e-6, B = 1e9, S = 8e6;
    const int n = 8;
    const int hosts[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    fix f;
    setup(&f, "ring", n, L, B, SIM_SHARE_FAIR);
    sim_coll_desc d = {.kind = SIM_COLL_RING, .n = n, .hosts = hosts, .done = on_done,
                       .ctx = &f.s};
    f.s.c = sim_coll_create(f.net, &d, NULL);
    cr_assert_not_null(f.s.c);
    enter_all(&f, n, S);
    run_all(&f);
    double t = last_done(&f, n, 1);
    cr_assert_gt(t, 2.0 * (n - 1) * (L + S / (n * B)) * 1.5);
    /* Each message crosses 4 or 3 links: the hosts' byte counts still add up. */
    cr_assert_float_eq(sim_net_bytes_sent_total(f.net), 2.0 * (n - 1) * S, 1e-6);
    teardown(&f);
}

Test(collective, errors)
{
    fix f;
    setup(&f, "ring", 4, 1e-6, 1e9, SIM_SHARE_FAIR);
    sim_err err;
    sim_coll_desc d = {.kind = SIM_COLL_RING, .n = 0, .done = on_done, .ctx = &f.s};
    cr_assert_null(sim_coll_create(f.net, &d, &err));
    cr_assert_eq(err.code, SIM_EINPUT);
    d.n = 5; /* more ranks than hosts with the identity mapping */
    cr_assert_null(sim_coll_create(f.net, &d, &err));
    cr_assert_eq(err.code, SIM_EINPUT);
    d.n = 4;
    d.kind = SIM_COLL_PS;
    d.ps_host = 4;
    cr_assert_null(sim_coll_create(f.net, &d, &err));
    d.kind = SIM_COLL_NEIGHBOR;
    int off[5] = {0, 1, 2, 3, 4}, bad[4] = {1, 2, 3, 9};
    d.nbr_off = off;
    d.nbr = bad;
    cr_assert_null(sim_coll_create(f.net, &d, &err));
    cr_assert_eq(err.code, SIM_EINPUT);
    d.nbr = NULL;
    cr_assert_null(sim_coll_create(f.net, &d, &err));

    d.kind = SIM_COLL_RING;
    make_coll(&f, SIM_COLL_RING, 4, 0, NULL, NULL);
    cr_assert_eq(sim_coll_enter(f.s.c, 4, 1e3, &err), SIM_EINPUT);
    cr_assert_eq(sim_coll_enter(f.s.c, 0, -1.0, &err), SIM_EINPUT);
    cr_assert_eq(sim_coll_enter(f.s.c, 0, 1e3, &err), 0);
    cr_assert_eq(sim_coll_enter(f.s.c, 0, 1e3, &err), SIM_EINTERNAL); /* round not done */
    cr_assert_eq(sim_coll_set_neighbors(f.s.c, off, bad, &err), SIM_EINPUT);
    teardown(&f);

    /* Unreachable ranks are refused at creation. */
    igraph_t g;
    igraph_empty(&g, 2, IGRAPH_UNDIRECTED);
    sim_net_desc nd = {.graph = &g, .n_hosts = 2, .default_latency = 1e-6,
                       .default_bandwidth = 1e9};
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = sim_net_create(eng, &nd, NULL);
    cr_assert_not_null(net);
    igraph_destroy(&g);
    sim_coll_desc rd = {.kind = SIM_COLL_TREE, .n = 2};
    cr_assert_null(sim_coll_create(net, &rd, &err));
    cr_assert_str_eq(err.msg, "collective: no route from host 1 to host 0");
    sim_coll_destroy(NULL);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

/* ---- hierarchical all-reduce on an ideal two-level network ------------- */

/* N servers of p hosts: host h is linked to its server switch (vertex
 * N p + h / p) by an intra link (ai, Bi); each server switch to one top
 * switch (vertex N p + N) by its interface (ae, Be). */
static void setup_two_level(fix *f, int N, int p, double ai, double Bi, double ae, double Be)
{
    memset(f, 0, sizeof *f);
    f->eng = sim_engine_create(0);
    int hosts = N * p, m = hosts + N;
    igraph_vector_int_t edges;
    cr_assert_eq(igraph_vector_int_init(&edges, 2 * m), IGRAPH_SUCCESS);
    double lat[64], bw[64];
    for (int h = 0; h < hosts; h++) {
        VECTOR(edges)[2 * h] = h;
        VECTOR(edges)[2 * h + 1] = hosts + h / p;
        lat[h] = ai;
        bw[h] = Bi;
    }
    for (int s = 0; s < N; s++) {
        VECTOR(edges)[2 * (hosts + s)] = hosts + s;
        VECTOR(edges)[2 * (hosts + s) + 1] = hosts + N;
        lat[hosts + s] = ae;
        bw[hosts + s] = Be;
    }
    igraph_t g;
    cr_assert_eq(igraph_create(&g, &edges, hosts + N + 1, IGRAPH_UNDIRECTED), IGRAPH_SUCCESS);
    igraph_vector_int_destroy(&edges);
    sim_net_desc d = {.graph = &g, .n_hosts = hosts, .latency = lat, .bandwidth = bw,
                      .default_latency = ae, .default_bandwidth = Be,
                      .sharing = SIM_SHARE_FAIR};
    apply_model(&d);
    sim_err err;
    f->net = sim_net_create(f->eng, &d, &err);
    cr_assert_not_null(f->net, "%s", err.msg);
    igraph_destroy(&g);
    f->s.rounds = 1;
}

static void make_hier(fix *f, int n, int per_node)
{
    sim_coll_desc d = {.kind = SIM_COLL_HIER, .n = n, .per_node = per_node, .done = on_done,
                       .ctx = &f->s};
    sim_err err;
    f->s.c = sim_coll_create(f->net, &d, &err);
    cr_assert_not_null(f->s.c, "%s", err.msg);
}

/* Reduce inside the servers (binomial tree, ceil(log2 p) levels of
 * 2 ai + S/Bi: a child sends when its subtree is reduced and its parent
 * takes one vector at a time), ring among the N leaders (2 (N - 1) steps of
 * 2 ai + 2 ae + S/(N Be): each server interface carries one message each
 * way), then broadcast inside (ceil(log2 p) levels, one forward in flight
 * per rank): docs/algorithms.md 1.8, for any p. With p a power of two
 * two rounds back to back take twice as long. */
Test(collective, hierarchical_allreduce_on_two_levels)
{
    const double ai = 1e-6, Bi = 100e9, ae = 5e-6, Be = 12.5e9, S = 1e8;
    const int Ns[8] = {4, 2, 1, 2, 3, 2, 1, 2}, ps[8] = {4, 8, 8, 3, 5, 6, 7, 12};
    for (int i = 0; i < 8; i++) {
        int N = Ns[i], p = ps[i], n = N * p;
        fix f;
        setup_two_level(&f, N, p, ai, Bi, ae, Be);
        make_hier(&f, n, p);
        /* with p not a power of two some ranks have their result early and
         * start the next round's reduce sooner: one round */
        int rounds = (p & (p - 1)) ? 1 : 2;
        f.s.rounds = rounds;
        enter_all(&f, n, S);
        run_all(&f);
        double intra = ceil(log2((double)p)) * (2 * ai + S / Bi);
        double ring = 2.0 * (N - 1) * (2 * ai + 2 * ae + S / (N * Be));
        /* each message's time is rounded to the nanosecond */
        double ns = rounds * (2 * ceil(log2((double)p)) + 2 * (N - 1)) * 1e-9;
        cr_assert(fabs(last_done(&f, n, rounds) - rounds * (2 * intra + ring)) <=
                      1e-9 * rounds * (2 * intra + ring) + ns,
                  "N %d, p %d: got %.12g s, want %.12g s", N, p, last_done(&f, n, rounds),
                  rounds * (2 * intra + ring));
        /* per round: 2 (p - 1) intra messages per server, 2 (N - 1) ring
         * messages per leader */
        cr_assert_eq(sim_net_messages(f.net),
                     (uint64_t)(rounds * (2 * (p - 1) * N + 2 * (N - 1) * N)));
        teardown(&f);
    }
}

/* The flat ring over all N p ranks on the same network: 2 (Np - 1) steps
 * paced by the slowest edge, a server crossing of 2 ai + 2 ae + S/(Np Be)
 * (the intra edges are faster and keep up). */
Test(collective, flat_ring_on_two_levels)
{
    const double ai = 1e-6, Bi = 100e9, ae = 5e-6, Be = 12.5e9, S = 1e8;
    const int N = 4, p = 4, n = N * p;
    fix f;
    setup_two_level(&f, N, p, ai, Bi, ae, Be);
    make_coll(&f, SIM_COLL_RING, n, 0, NULL, NULL);
    enter_all(&f, n, S);
    run_all(&f);
    ASSERT_REL(last_done(&f, n, 1), 2.0 * (n - 1) * (2 * ai + 2 * ae + S / (n * Be)), 1e-9);
    teardown(&f);
}

/* REDUCE and BCAST alone on a star: ceil(log2 n) levels of 2a + S/B each,
 * for any n (one message in flight per rank; a REDUCE parent taking two
 * vectors at once, n = 3, took 2S/B + 2a). */
Test(collective, reduce_and_bcast_on_star)
{
    const double L = 2e-6, B = 1e9, S = 1e6;
    const sim_coll_kind kinds[2] = {SIM_COLL_REDUCE, SIM_COLL_BCAST};
    for (int k = 0; k < 2; k++)
        for (int n = 1; n <= 13; n++) {
            fix f;
            setup(&f, "star", n, L, B, SIM_SHARE_FAIR);
            make_coll(&f, kinds[k], n, 0, NULL, NULL);
            enter_all(&f, n, S);
            run_all(&f);
            double want = ceil(log2((double)n)) * (2 * L + S / B);
            double got = last_done(&f, n, 1);
            cr_assert(fabs(got - want) <= 1e-9 * want + 1e-9, "n %d: got %g want %g", n, got,
                      want);
            cr_assert_eq(sim_net_messages(f.net), (uint64_t)(n - 1));
            teardown(&f);
        }
}

Test(collective, hierarchical_refuses_partial_servers)
{
    fix f;
    setup(&f, "star", 6, 1e-6, 1e9, SIM_SHARE_FAIR);
    sim_coll_desc d = {.kind = SIM_COLL_HIER, .n = 6, .per_node = 4, .done = on_done,
                       .ctx = &f.s};
    sim_err err;
    cr_assert_null(sim_coll_create(f.net, &d, &err));
    cr_assert(strstr(err.msg, "not whole servers of 4"), "%s", err.msg);
    teardown(&f);
}

/* A hierarchical all-reduce over some of the hosts (a group of live
 * workers, algorithms/drivers/group.c): rank r is on server hosts[r] / p. On the
 * two-level network of 4 servers of 2: hosts {0..5} are 3 whole servers
 * and hosts {0, 1, 4, 5} 2 of them, each round 2 (2 ai + S/Bi) + 2 (N - 1)
 * (2 ai + 2 ae + S/(N Be)) over the N servers they are on, with 2 (p - 1) N
 * intra and 2 (N - 1) N ring messages (times are whole ns, so a round
 * of 1/3 ns fractions ends within 20 ns of the closed form). Hosts {0..6}
 * leave server 3 one rank, whose reduce and bcast are done at once: it
 * enters the ring at 0, ahead of the others, and its first ring message
 * shares rank 0's intra link with rank 1's reduce message, so the round
 * lies between the closed form over 4 servers and that plus S/Bi (one
 * intra transfer), with 2 fewer intra messages. */
static void make_hier_on(fix *f, int n, int per_node, const int *hosts, sim_err *err)
{
    sim_coll_desc d = {.kind = SIM_COLL_HIER, .n = n, .hosts = hosts, .per_node = per_node,
                       .done = on_done, .ctx = &f->s};
    f->s.c = sim_coll_create(f->net, &d, err);
}

Test(collective, hierarchical_allreduce_over_some_hosts)
{
    const double ai = 1e-6, Bi = 100e9, ae = 5e-6, Be = 12.5e9, S = 1e8;
    const int h6[] = {0, 1, 2, 3, 4, 5}, h4[] = {0, 1, 4, 5}, h7[] = {0, 1, 2, 3, 4, 5, 6};
    struct {
        const int *hosts;
        int n, N;
        uint64_t msgs;
    } cases[] = {{h6, 6, 3, 2 * 3 + 2 * 2 * 3}, {h4, 4, 2, 2 * 2 + 2 * 1 * 2},
                 {h7, 7, 4, 2 * 3 + 2 * 3 * 4}};
    for (int i = 0; i < 3; i++) {
        fix f;
        sim_err err;
        setup_two_level(&f, 4, 2, ai, Bi, ae, Be);
        make_hier_on(&f, cases[i].n, 2, cases[i].hosts, &err);
        cr_assert_not_null(f.s.c, "%s", err.msg);
        int R = i < 2 ? 2 : 1, bound = i == 2;
        f.s.rounds = R;
        enter_all(&f, cases[i].n, S);
        run_all(&f);
        int N = cases[i].N;
        double round = 2 * (2 * ai + S / Bi) + 2.0 * (N - 1) * (2 * ai + 2 * ae + S / (N * Be));
        double got = last_done(&f, cases[i].n, R);
        if (bound)
            cr_assert(got > round && got < round + S / Bi, "%.12g s vs %.12g s", got, round);
        else
            cr_assert(fabs(got - R * round) < 20e-9, "case %d: %.12g s vs %.12g s", i, got,
                      R * round);
        cr_assert_eq(sim_net_messages(f.net), R * cases[i].msgs, "case %d: %llu messages", i,
                     (unsigned long long)sim_net_messages(f.net));
        teardown(&f);
    }
    /* the servers must ascend with the ranks */
    fix f;
    sim_err err;
    const int bad[] = {2, 3, 0, 1};
    setup_two_level(&f, 4, 2, ai, Bi, ae, Be);
    make_hier_on(&f, 4, 2, bad, &err);
    cr_assert_null(f.s.c);
    cr_assert_str_eq(err.msg, "collective: hierarchical: rank 2 is on server 0, below rank 1's "
                              "server 1 (the ranks' servers must ascend)");
    teardown(&f);
}

/* ---- transport parameters: efficiency e, message overhead o, launch c -- */

/* Ring all-reduce on a star, two calls back to back: each call costs
 * c + 2(n-1)(o + 2 alpha + S/(n e B)). */
Test(collective, ring_allreduce_with_overheads)
{
    const double L = 5e-6, B = 1.25e9, S = 4e6;
    const sim_net_desc m = {.efficiency = 0.9, .message_overhead = 7e-6,
                            .collective_overhead = 40e-6};
    const int ns[3] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        int n = ns[i];
        fix f;
        g_model = &m;
        setup(&f, "star", n, L, B, SIM_SHARE_FAIR);
        g_model = NULL;
        make_coll(&f, SIM_COLL_RING, n, 0, NULL, NULL);
        f.s.rounds = 2;
        enter_all(&f, n, S);
        run_all(&f);
        double call = m.collective_overhead +
                      2.0 * (n - 1) * (m.message_overhead + 2 * L + S / (n * m.efficiency * B));
        ASSERT_REL(last_done(&f, n, 2), 2 * call, 1e-6);
        cr_assert_float_eq(sim_net_bytes_sent_total(f.net), 2 * 2.0 * (n - 1) * S, 1e-6);
        teardown(&f);
    }
}

/* Tree all-reduce on a complete network: c + 2 log2(n) (o + alpha + S/(e B)). */
Test(collective, tree_with_overheads)
{
    const double L = 20e-6, B = 2e9, S = 1e6;
    const sim_net_desc m = {.efficiency = 0.75, .message_overhead = 3e-6,
                            .collective_overhead = 25e-6};
    const int ns[3] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        int n = ns[i];
        fix f;
        g_model = &m;
        setup(&f, "complete", n, L, B, SIM_SHARE_FAIR);
        g_model = NULL;
        make_coll(&f, SIM_COLL_TREE, n, 0, NULL, NULL);
        enter_all(&f, n, S);
        run_all(&f);
        double lg = log2((double)n);
        double want = m.collective_overhead +
                      2.0 * lg * (m.message_overhead + L + S / (m.efficiency * B));
        ASSERT_REL(last_done(&f, n, 1), want, 1e-6);
        teardown(&f);
    }
}

/* Hierarchical all-reduce, two calls: one launch per call (its reduce,
 * ring and broadcast parts pay none), every message o and e:
 *   c + 2 log2(p) (o + 2 ai + S/(e Bi)) + 2 (N - 1) (o + 2 ai + 2 ae + S/(N e Be)). */
Test(collective, hierarchical_with_overheads)
{
    const double ai = 1e-6, Bi = 100e9, ae = 5e-6, Be = 12.5e9, S = 1e8;
    const sim_net_desc m = {.efficiency = 0.8, .message_overhead = 2e-6,
                            .collective_overhead = 30e-6};
    const int Ns[3] = {4, 2, 1}, ps[3] = {4, 8, 8};
    for (int i = 0; i < 3; i++) {
        int N = Ns[i], p = ps[i], n = N * p;
        fix f;
        g_model = &m;
        setup_two_level(&f, N, p, ai, Bi, ae, Be);
        g_model = NULL;
        make_hier(&f, n, p);
        f.s.rounds = 2;
        enter_all(&f, n, S);
        run_all(&f);
        double e = m.efficiency, o = m.message_overhead;
        double intra = log2((double)p) * (o + 2 * ai + S / (e * Bi));
        double ring = 2.0 * (N - 1) * (o + 2 * ai + 2 * ae + S / (N * e * Be));
        ASSERT_REL(last_done(&f, n, 2), 2 * (m.collective_overhead + 2 * intra + ring), 1e-9);
        teardown(&f);
    }
}

/* The parameter server and the neighbour exchange are point-to-point: no
 * launch, only the message overhead. */
Test(collective, point_to_point_kinds_pay_no_launch)
{
    const double L = 4e-6, B = 1e9, S = 2e5, o = 5e-6;
    const sim_net_desc m = {.message_overhead = o, .collective_overhead = 1e-3};
    const int n = 6;
    fix f;
    g_model = &m;
    setup(&f, "star", n + 1, L, B, SIM_SHARE_FAIR);
    make_coll(&f, SIM_COLL_PS, n, n, NULL, NULL);
    enter_all(&f, n, S);
    run_all(&f);
    ASSERT_REL(last_done(&f, n, 1), 2 * (o + 2 * L + n * S / B), 1e-6);
    teardown(&f);
    /* a ring of neighbours on a star: each host sends S to both neighbours */
    int off[5], nbr[8];
    for (int r = 0; r < 4; r++) {
        off[r] = 2 * r;
        nbr[2 * r] = (r + 1) % 4;
        nbr[2 * r + 1] = (r + 3) % 4;
    }
    off[4] = 8;
    setup(&f, "star", 4, L, B, SIM_SHARE_FAIR);
    g_model = NULL;
    make_coll(&f, SIM_COLL_NEIGHBOR, 4, 0, off, nbr);
    enter_all(&f, 4, S);
    run_all(&f);
    ASSERT_REL(last_done(&f, 4, 1), o + 2 * L + 2 * S / B, 1e-6);
    teardown(&f);
}
