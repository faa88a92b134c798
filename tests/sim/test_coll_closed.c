/* The closed form of RING rounds (sim/coll_ring.c, sim/net_bulk.c) against
 * the flows: every scenario runs twice, with the closed form allowed and
 * with flows_only = 1, and the two runs must agree on every callback (its
 * rank, its order and its time to the nanosecond) and on every byte
 * counter bit for bit (per host, per link, in total, per rank of the
 * collective), and on the message count. Ring, tree and hierarchical
 * collectives; fair and no sharing; transport overheads; stragglers,
 * unequal links, other traffic and events inside the round (which must
 * fall back to flows); and, where the round qualifies, fewer events. */
#include <criterion/criterion.h>

#include <math.h>
#include <string.h>

#include "sim/collective.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "topology/physnet.h"

#define MAXR 64
#define MAXLOG 1024
#define MAXL 512

typedef struct scen {
    const char *spec;   /* physical network; NULL: two levels of servers */
    int N, p;           /* two levels: N servers of p hosts */
    int extra_hosts;    /* hosts beyond the ranks */
    sim_coll_kind kind;
    int n, per_node, rounds;
    sim_sharing sharing;
    double bytes, eff, ovh, coll_ovh;
    sim_time delay[3][8]; /* entry delay of ranks 0..7 per round (ns) */
    double slow_rate;     /* > 0: host 1's link runs at this rate */
    sim_time bg_at;       /* > 0: host n sends bg bytes to host 0 then (ns) */
    int bg_now;           /* 1: that message goes at time 0, before the enters */
    int stop_at;          /* > 0: the stop_at-th callback stops the engine */
} scen;

typedef struct run_log {
    int n_ev;
    int rank[MAXLOG];
    sim_time t[MAXLOG];
    uint64_t messages, processed;
    double total, host[MAXR + 2], link[MAXL], c_total[MAXR], c_round[MAXR];
    int n_links;
} run_log;

typedef struct ctx {
    const scen *s;
    sim_coll *c;
    sim_net *net;
    run_log *log;
    int done[MAXR];
} ctx;

static void enter(ctx *x, int r)
{
    sim_err err;
    cr_assert_eq(sim_coll_enter(x->c, r, x->s->bytes, &err), 0, "%s", err.msg);
}

static void on_enter(sim_engine *eng, void *c, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    enter(c, (int)arg);
}

/* Rank r enters round k now or after its delay. */
static void schedule_enter(sim_engine *eng, ctx *x, int r, int k)
{
    sim_time d = r < 8 && k < 3 ? x->s->delay[k][r] : 0;
    if (d > 0)
        cr_assert(sim_engine_schedule(eng, d, on_enter, x, (uint64_t)r, NULL, NULL));
    else
        enter(x, r);
}

static void on_done(sim_engine *eng, void *c, int rank)
{
    ctx *x = c;
    run_log *L = x->log;
    cr_assert_lt(L->n_ev, MAXLOG);
    L->rank[L->n_ev] = rank;
    L->t[L->n_ev++] = sim_engine_now(eng);
    if (L->n_ev == x->s->stop_at)
        sim_engine_stop(eng);
    if (++x->done[rank] < x->s->rounds)
        schedule_enter(eng, x, rank, x->done[rank]);
}

static void on_bg(sim_engine *eng, void *c, uint64_t arg, int src, int dst, double bytes)
{
    (void)eng, (void)c, (void)arg, (void)src, (void)dst, (void)bytes;
}

static void send_bg(ctx *x)
{
    sim_err err;
    cr_assert_eq(sim_net_send(x->net, x->s->n, 0, 3e5, on_bg, NULL, 0, &err), 0, "%s", err.msg);
}

static void on_bg_time(sim_engine *eng, void *c, uint64_t arg, void *payload)
{
    (void)eng, (void)arg, (void)payload;
    send_bg(c);
}

static sim_net *make_net(sim_engine *eng, const scen *s)
{
    sim_net_desc d;
    sim_err err;
    igraph_t g;
    topo_physnet pn;
    double lat[MAXL], bw[MAXL];
    int hosts = s->n + s->extra_hosts;
    if (s->spec) {
        cr_assert_eq(topo_physnet_build(&pn, s->spec, hosts, &err), 0, "%s", err.msg);
        topo_physnet_desc(&pn, 2e-6, 1.25e9, s->sharing, &d);
    } else {
        /* N servers of p hosts (100 GB/s, 1 us) under one switch (12.5 GB/s, 5 us) */
        hosts = s->N * s->p;
        int m = hosts + s->N;
        igraph_vector_int_t edges;
        cr_assert_eq(igraph_vector_int_init(&edges, 2 * m), IGRAPH_SUCCESS);
        for (int h = 0; h < hosts; h++) {
            VECTOR(edges)[2 * h] = h;
            VECTOR(edges)[2 * h + 1] = hosts + h / s->p;
            lat[h] = 1e-6;
            bw[h] = 100e9;
        }
        for (int k = 0; k < s->N; k++) {
            VECTOR(edges)[2 * (hosts + k)] = hosts + k;
            VECTOR(edges)[2 * (hosts + k) + 1] = hosts + s->N;
            lat[hosts + k] = 5e-6;
            bw[hosts + k] = 12.5e9;
        }
        cr_assert_eq(igraph_create(&g, &edges, hosts + s->N + 1, IGRAPH_UNDIRECTED),
                     IGRAPH_SUCCESS);
        igraph_vector_int_destroy(&edges);
        d = (sim_net_desc){.graph = &g, .n_hosts = hosts, .latency = lat, .bandwidth = bw,
                           .sharing = s->sharing};
    }
    d.efficiency = s->eff;
    d.message_overhead = s->ovh;
    d.collective_overhead = s->coll_ovh;
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    if (s->spec)
        topo_physnet_release(&pn);
    else
        igraph_destroy(&g);
    return net;
}

static void run(const scen *s, int flows_only, run_log *L)
{
    memset(L, 0, sizeof *L);
    sim_engine *eng = sim_engine_create(0);
    ctx x = {.s = s, .log = L};
    x.net = make_net(eng, s);
    sim_err err;
    if (s->slow_rate > 0)
        cr_assert_eq(sim_net_link_set_rate(x.net, 1, s->n + s->extra_hosts, s->slow_rate, &err),
                     0, "%s", err.msg);
    sim_coll_desc d = {.kind = s->kind, .n = s->n, .per_node = s->per_node,
                       .flows_only = flows_only, .done = on_done, .ctx = &x};
    x.c = sim_coll_create(x.net, &d, &err);
    cr_assert_not_null(x.c, "%s", err.msg);
    if (s->bg_now)
        send_bg(&x);
    if (s->bg_at > 0)
        cr_assert(sim_engine_schedule(eng, s->bg_at, on_bg_time, &x, 0, NULL, NULL));
    for (int r = 0; r < s->n; r++)
        schedule_enter(eng, &x, r, 0);
    /* run_until returns at a stop: the log marks it (rank -1) and the run
     * goes on */
    while (sim_engine_pending(eng) > 0) {
        sim_engine_run_until(eng, SIM_TIME_MAX);
        cr_assert_lt(L->n_ev, MAXLOG);
        L->rank[L->n_ev] = -1;
        L->t[L->n_ev++] = sim_engine_now(eng);
    }
    for (int r = 0; r < s->n; r++)
        cr_assert_eq(x.done[r], s->rounds, "rank %d finished %d rounds", r, x.done[r]);
    L->messages = sim_net_messages(x.net);
    L->processed = sim_engine_processed(eng);
    L->total = sim_net_bytes_sent_total(x.net);
    for (int h = 0; h < sim_net_n_hosts(x.net) && h < MAXR + 2; h++)
        L->host[h] = sim_net_bytes_sent_host(x.net, h);
    L->n_links = sim_net_n_links(x.net);
    cr_assert_leq(L->n_links, MAXL);
    for (int l = 0; l < L->n_links; l++)
        L->link[l] = sim_net_bytes_link(x.net, l);
    for (int r = 0; r < s->n; r++) {
        L->c_total[r] = sim_coll_bytes_sent(x.c, r);
        L->c_round[r] = sim_coll_round_bytes_sent(x.c, r);
    }
    sim_coll_destroy(x.c);
    sim_net_destroy(x.net);
    sim_engine_destroy(eng);
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Runs s both ways and compares; `closed`: 1 the closed form must have
 * saved events, 0 it must not have applied (same event count), 2 either. */
static void check(const char *name, const scen *s, int closed)
{
    static run_log a, b;
    run(s, 1, &a);
    run(s, 0, &b);
    cr_assert_eq(a.n_ev, b.n_ev, "%s: callbacks", name);
    for (int i = 0; i < a.n_ev; i++) {
        cr_assert_eq(a.rank[i], b.rank[i], "%s: callback %d: rank %d (flows) vs %d", name, i,
                     a.rank[i], b.rank[i]);
        cr_assert_eq(a.t[i], b.t[i], "%s: callback %d (rank %d): %lld ns (flows) vs %lld", name,
                     i, a.rank[i], (long long)a.t[i], (long long)b.t[i]);
    }
    cr_assert_eq(a.messages, b.messages, "%s: messages", name);
    cr_assert(same_bits(a.total, b.total), "%s: total %.17g vs %.17g", name, a.total, b.total);
    for (int h = 0; h < MAXR + 2; h++)
        cr_assert(same_bits(a.host[h], b.host[h]), "%s: host %d", name, h);
    for (int l = 0; l < a.n_links; l++)
        cr_assert(same_bits(a.link[l], b.link[l]), "%s: link %d %.17g vs %.17g", name, l,
                  a.link[l], b.link[l]);
    for (int r = 0; r < s->n; r++)
        cr_assert(same_bits(a.c_total[r], b.c_total[r]) && same_bits(a.c_round[r], b.c_round[r]),
                  "%s: rank %d bytes", name, r);
    if (closed)
        cr_assert_lt(b.processed, a.processed, "%s: the closed form did not apply", name);
    else if (closed == 0)
        cr_assert_eq(b.processed, a.processed, "%s: the closed form applied", name);
}

Test(coll_closed, ring_lock_step)
{
    const int ns[] = {2, 3, 5, 8, 16, 33};
    for (int sh = 0; sh < 2; sh++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            scen s = {.spec = "star", .kind = SIM_COLL_RING, .n = ns[i], .rounds = 3,
                      .sharing = sh ? SIM_SHARE_NONE : SIM_SHARE_FAIR,
                      .bytes = 12345678.9 * ns[i]};
            check("star", &s, 1);
            s.spec = "ring";
            s.bytes = 1e6 / 3;
            check("ring", &s, 1);
        }
}

Test(coll_closed, ring_with_overheads)
{
    for (int sh = 0; sh < 2; sh++) {
        scen s = {.spec = "star", .kind = SIM_COLL_RING, .n = 8, .rounds = 3,
                  .sharing = sh ? SIM_SHARE_NONE : SIM_SHARE_FAIR, .bytes = 4e6 + 0.7,
                  .eff = 0.93, .ovh = 3.3e-6, .coll_ovh = 7e-6};
        check("overheads", &s, 1);
        s.ovh = 0;
        check("efficiency and launch", &s, 1);
    }
}

Test(coll_closed, ring_stragglers)
{
    /* round 0 in step, round 1 with rank 3 late (flows), round 2 all
     * entering 2 us after their callbacks (in step again) */
    scen s = {.spec = "star", .kind = SIM_COLL_RING, .n = 8, .rounds = 3,
              .sharing = SIM_SHARE_FAIR, .bytes = 8e6};
    s.delay[1][3] = 5000;
    for (int r = 0; r < 8; r++)
        s.delay[2][r] = 2000;
    check("one straggler", &s, 1);
    s.sharing = SIM_SHARE_NONE;
    check("one straggler, no sharing", &s, 1);
    /* every round staggered: the flows throughout */
    scen t = {.spec = "star", .kind = SIM_COLL_RING, .n = 6, .rounds = 2,
              .sharing = SIM_SHARE_FAIR, .bytes = 6e6};
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < 6; r++)
            t.delay[k][r] = 1000 * (sim_time)((r * 7 + k) % 5);
    check("staggered", &t, 0);
}

Test(coll_closed, ring_falls_back)
{
    scen s = {.spec = "star", .kind = SIM_COLL_RING, .n = 8, .rounds = 2, .extra_hosts = 1,
              .sharing = SIM_SHARE_FAIR, .bytes = 8e6};
    s.slow_rate = 0.6e9;
    check("one slow link", &s, 0);
    s.slow_rate = 0;
    s.bg_now = 1;
    check("other traffic in flight", &s, 2); /* round 1 may be closed */
    s.bg_now = 0;
    s.rounds = 1;
    s.bg_at = 20000;
    check("a send during the round", &s, 0);
    s.sharing = SIM_SHARE_NONE;
    check("a send during the round, no sharing", &s, 0);
}

Test(coll_closed, ring_stopped_by_a_callback)
{
    /* a callback stops the run (a stop rule): the callbacks after it wait
     * as the flows' later deliveries would */
    for (int stop = 1; stop <= 9; stop += 2) {
        scen s = {.spec = "star", .kind = SIM_COLL_RING, .n = 8, .rounds = 2,
                  .sharing = SIM_SHARE_FAIR, .bytes = 8e6, .stop_at = stop};
        check("stopped", &s, 1);
    }
    scen s = {.spec = "star", .kind = SIM_COLL_RING, .n = 2, .rounds = 2,
              .sharing = SIM_SHARE_NONE, .bytes = 8e6, .stop_at = 1};
    check("stopped, 2 ranks", &s, 1);
}

Test(coll_closed, tree_and_hierarchical)
{
    scen t = {.spec = "star", .kind = SIM_COLL_TREE, .n = 8, .rounds = 2,
              .sharing = SIM_SHARE_FAIR, .bytes = 8e6};
    check("tree", &t, 0);
    const int Ns[] = {4, 8, 2}, ps[] = {4, 2, 8};
    for (int i = 0; i < 3; i++) {
        scen h = {.kind = SIM_COLL_HIER, .N = Ns[i], .p = ps[i], .n = Ns[i] * ps[i],
                  .per_node = ps[i], .rounds = 2, .sharing = SIM_SHARE_FAIR, .bytes = 1e8};
        check("hierarchical", &h, 1);
        h.delay[1][1] = 3000;
        check("hierarchical, a straggler", &h, 1);
    }
}

Test(coll_closed, repeated_sums)
{
    /* sim_fsum_repeat rounds as the loop does */
    const double xs[] = {0.0, 1.0, 123456.789, 1e15, 3.0e9};
    const double bs[] = {0.1, 1.0 / 3.0, 12345678.9, 0.5, 1e-9, 2.5e5 / 7.0};
    const int64_t ks[] = {1, 2, 3, 17, 1000, 123457};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        for (size_t j = 0; j < sizeof bs / sizeof bs[0]; j++)
            for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
                double want = xs[i];
                for (int64_t q = 0; q < ks[k]; q++)
                    want += bs[j];
                double got = sim_fsum_repeat(xs[i], bs[j], ks[k]);
                cr_assert(same_bits(want, got), "%g + %g x %lld: %.17g, loop %.17g", xs[i],
                          bs[j], (long long)ks[k], got, want);
            }
}
