/* Flow-level network model and physical networks, against closed forms:
 * alpha-beta costs on one link and on a star, max-min fair rates worked out
 * by hand, counters, routes, and the error paths. */
#include <criterion/criterion.h>

#include <math.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/network.h"
#include "topology/physnet.h"

#define MAXMSG 64
#define REL 1e-6

typedef struct rec {
    int n;
    sim_time t[MAXMSG];
    int src[MAXMSG], dst[MAXMSG];
    double bytes[MAXMSG];
} rec;

static void on_rec(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    rec *r = ctx;
    cr_assert(arg < MAXMSG);
    r->t[arg] = sim_engine_now(eng);
    r->src[arg] = src;
    r->dst[arg] = dst;
    r->bytes[arg] = bytes;
    r->n++;
}

static sim_net *mk(sim_engine *eng, const char *spec, int n, double lat, double bw,
                   sim_sharing sh)
{
    topo_physnet pn;
    sim_err err;
    cr_assert_eq(topo_physnet_build(&pn, spec, n, &err), 0, "%s", err.msg);
    sim_net_desc d;
    topo_physnet_desc(&pn, lat, bw, sh, &d);
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    topo_physnet_release(&pn); /* the network keeps its own copy */
    return net;
}

static void send_ok(sim_net *net, int s, int d, double bytes, rec *r, uint64_t arg)
{
    sim_err err;
    cr_assert_eq(sim_net_send(net, s, d, bytes, on_rec, r, arg, &err), 0, "%s", err.msg);
}

static void run_all(sim_engine *eng)
{
    while (sim_engine_step(eng))
        ;
}

static void assert_time(sim_time got, double want_s)
{
    double g = sim_time_to_s(got);
    cr_assert(fabs(g - want_s) <= REL * want_s + 1e-12, "time %.12g s, want %.12g s", g, want_s);
}

/* The directed link of edge e that leaves vertex v. */
static int link_from(const igraph_t *g, int e, int v)
{
    return IGRAPH_FROM(g, e) == v ? 2 * e : 2 * e + 1;
}

Test(network, one_link_alpha_beta)
{
    const char *specs[] = {"ring", "complete"};
    for (int k = 0; k < 2; k++)
        for (int sh = 0; sh < 2; sh++) {
            sim_engine *eng = sim_engine_create(0);
            sim_net *net = mk(eng, specs[k], 2, 10e-6, 1e9, (sim_sharing)sh);
            cr_assert_eq(sim_net_n_links(net), 2);
            rec r = {0};
            send_ok(net, 0, 1, 1e6, &r, 0);
            run_all(eng);
            cr_assert_eq(r.n, 1);
            assert_time(r.t[0], 10e-6 + 1e6 / 1e9);
            cr_assert_eq(r.src[0], 0);
            cr_assert_eq(r.dst[0], 1);
            cr_assert_eq(r.bytes[0], 1e6);
            cr_assert_eq(sim_net_active_flows(net), 0);
            sim_net_destroy(net);
            sim_engine_destroy(eng);
        }
}

Test(network, star_two_hops)
{
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk(eng, "star", 4, 5e-6, 1.25e9, SIM_SHARE_FAIR);
    rec r = {0};
    send_ok(net, 1, 3, 250e3, &r, 0);
    run_all(eng);
    assert_time(r.t[0], 2 * 5e-6 + 250e3 / 1.25e9);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

/* k hosts send S to host 0 at once: they share host 0's downlink. */
Test(network, star_incast_fair_and_none)
{
    const int k = 6;
    const double L = 20e-6, B = 1e9, S = 500e3;
    for (int sh = 0; sh < 2; sh++) {
        sim_engine *eng = sim_engine_create(0);
        sim_net *net = mk(eng, "star", k + 1, L, B, (sim_sharing)sh);
        rec r = {0};
        for (int i = 1; i <= k; i++)
            send_ok(net, i, 0, S, &r, (uint64_t)i);
        double rates[16];
        cr_assert_eq(sim_net_flow_rates(net, rates, 16), k);
        for (int i = 0; i < k; i++)
            cr_assert(fabs(rates[i] - (sh == SIM_SHARE_FAIR ? B / k : B)) <= 1e-9 * B);
        run_all(eng);
        cr_assert_eq(r.n, k);
        double want = sh == SIM_SHARE_FAIR ? 2 * L + k * S / B : 2 * L + S / B;
        for (int i = 1; i <= k; i++)
            assert_time(r.t[i], want);
        sim_net_destroy(net);
        sim_engine_destroy(eng);
    }
}

/* Line a-b-c-d with bandwidths 1, 2, 1 GB/s. f1 a->d, f2 a->b, f3 b->c.
 * Max-min: a-b saturates first (f1, f2 at 0.5 GB/s), then f3 takes what is
 * left of b-c: 1.5 GB/s. f2 (0.5 MB) ends at 1 ms; then f1 and f3 share b-c
 * at 1 GB/s each; f1 (1 MB) ends at 1.5 ms; f3 (3 MB) alone at 2 GB/s ends
 * at 2 ms. */
Test(network, max_min_partial_paths)
{
    igraph_t g;
    igraph_vector_int_t ev;
    igraph_vector_int_init_int(&ev, 6, 0, 1, 1, 2, 2, 3);
    igraph_create(&g, &ev, 4, IGRAPH_UNDIRECTED);
    igraph_vector_int_destroy(&ev);
    const double bw[3] = {1e9, 2e9, 1e9};
    const double L = 1e-6;
    sim_net_desc d = {.graph = &g, .n_hosts = 4, .bandwidth = bw, .default_latency = L,
                      .sharing = SIM_SHARE_FAIR};
    sim_engine *eng = sim_engine_create(0);
    sim_err err;
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    igraph_destroy(&g); /* copied */
    rec r = {0};
    send_ok(net, 0, 3, 1e6, &r, 1);
    send_ok(net, 0, 1, 0.5e6, &r, 2);
    send_ok(net, 1, 2, 3e6, &r, 3);
    double rates[4];
    cr_assert_eq(sim_net_flow_rates(net, rates, 4), 3);
    cr_assert_float_eq(rates[0], 0.5e9, 1.0);
    cr_assert_float_eq(rates[1], 0.5e9, 1.0);
    cr_assert_float_eq(rates[2], 1.5e9, 1.0);

    sim_engine_run_until(eng, sim_time_from_s(1.2e-3));
    cr_assert_eq(sim_net_active_flows(net), 2);
    cr_assert_eq(sim_net_flow_rates(net, rates, 4), 2);
    cr_assert_float_eq(rates[0], 1e9, 1.0);
    cr_assert_float_eq(rates[1], 1e9, 1.0);

    sim_engine_run_until(eng, sim_time_from_s(1.7e-3));
    cr_assert_eq(sim_net_flow_rates(net, rates, 4), 1);
    cr_assert_float_eq(rates[0], 2e9, 1.0);

    run_all(eng);
    cr_assert_eq(r.n, 3);
    assert_time(r.t[2], 1e-3 + L);
    assert_time(r.t[1], 1.5e-3 + 3 * L);
    assert_time(r.t[3], 2e-3 + L);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

/* The same three flows with sharing = none: each at its bottleneck. */
Test(network, no_sharing_uses_bottleneck)
{
    igraph_t g;
    igraph_vector_int_t ev;
    igraph_vector_int_init_int(&ev, 6, 0, 1, 1, 2, 2, 3);
    igraph_create(&g, &ev, 4, IGRAPH_UNDIRECTED);
    igraph_vector_int_destroy(&ev);
    const double bw[3] = {1e9, 2e9, 0.5e9};
    sim_net_desc d = {.graph = &g, .n_hosts = 4, .bandwidth = bw, .default_latency = 2e-6,
                      .sharing = SIM_SHARE_NONE};
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = sim_net_create(eng, &d, NULL);
    cr_assert_not_null(net);
    igraph_destroy(&g);
    rec r = {0};
    send_ok(net, 0, 3, 1e6, &r, 1);
    send_ok(net, 0, 1, 1e6, &r, 2);
    send_ok(net, 1, 2, 1e6, &r, 3);
    double rates[4];
    cr_assert_eq(sim_net_flow_rates(net, rates, 4), 3);
    cr_assert_float_eq(rates[0], 0.5e9, 1.0);
    cr_assert_float_eq(rates[1], 1e9, 1.0);
    cr_assert_float_eq(rates[2], 2e9, 1.0);
    double lat, bn;
    int hops;
    cr_assert_eq(sim_net_route_info(net, 0, 3, &lat, &hops, &bn), 0);
    cr_assert_eq(hops, 3);
    cr_assert_float_eq(lat, 6e-6, 1e-15);
    cr_assert_float_eq(bn, 0.5e9, 1.0);
    run_all(eng);
    assert_time(r.t[1], 6e-6 + 2e-3);
    assert_time(r.t[2], 2e-6 + 1e-3);
    assert_time(r.t[3], 2e-6 + 0.5e-3);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

typedef struct later {
    sim_net *net;
    rec *r;
    int src, dst;
    double bytes;
    uint64_t arg;
} later;

static void send_later(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)arg;
    (void)payload;
    later *l = ctx;
    send_ok(l->net, l->src, l->dst, l->bytes, l->r, l->arg);
}

/* Star, 1 GB/s: A (1 MB, 1 -> 0) at 0, B (1 MB, 2 -> 0) at 0.5 ms share the
 * downlink of host 0: A alone for 0.5 ms, both at 0.5 GB/s until A is done
 * at 1.5 ms, then B alone: B done at 2 ms. */
Test(network, staggered_starts)
{
    const double L = 3e-6;
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk(eng, "star", 3, L, 1e9, SIM_SHARE_FAIR);
    rec r = {0};
    send_ok(net, 1, 0, 1e6, &r, 0);
    later l = {net, &r, 2, 0, 1e6, 1};
    sim_engine_schedule(eng, sim_time_from_s(0.5e-3), send_later, &l, 0, NULL, NULL);
    run_all(eng);
    cr_assert_eq(r.n, 2);
    assert_time(r.t[0], 1.5e-3 + 2 * L);
    assert_time(r.t[1], 2e-3 + 2 * L);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

Test(network, zero_bytes_pay_latency_only)
{
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk(eng, "star", 3, 7e-6, 1e6, SIM_SHARE_FAIR);
    rec r = {0};
    send_ok(net, 0, 2, 0.0, &r, 0);
    cr_assert_eq(sim_net_active_flows(net), 0);
    run_all(eng);
    cr_assert_eq(sim_engine_now(eng), 14000);
    cr_assert_eq(r.t[0], 14000);
    cr_assert_eq(sim_net_messages(net), 1);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

Test(network, ideal_and_self_deliver_at_once)
{
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk(eng, "ideal", 4, 1e-3, 1e6, SIM_SHARE_FAIR);
    cr_assert_eq(sim_net_n_links(net), 0);
    rec r = {0};
    send_ok(net, 0, 3, 1e9, &r, 0);
    send_ok(net, 2, 2, 1e9, &r, 1);
    run_all(eng);
    cr_assert_eq(r.n, 2);
    cr_assert_eq(r.t[0], 0);
    cr_assert_eq(r.t[1], 0);
    cr_assert_eq(sim_net_bytes_sent_host(net, 0), 1e9);
    cr_assert_eq(sim_net_bytes_sent_host(net, 2), 0.0); /* to itself: no bytes */
    cr_assert_eq(sim_net_bytes_sent_total(net), 1e9);
    double lat, bn;
    int hops;
    cr_assert_eq(sim_net_route_info(net, 0, 3, &lat, &hops, &bn), 0);
    cr_assert_eq(hops, 0);
    cr_assert_eq(lat, 0.0);
    sim_net_destroy(net);
    sim_engine_destroy(eng);

    /* On a real network a message to oneself is free too. */
    eng = sim_engine_create(0);
    net = mk(eng, "star", 2, 1e-3, 1e6, SIM_SHARE_FAIR);
    memset(&r, 0, sizeof r);
    send_ok(net, 1, 1, 5e6, &r, 0);
    run_all(eng);
    cr_assert_eq(r.t[0], 0);
    cr_assert_eq(sim_net_bytes_sent_total(net), 0.0);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

Test(network, byte_counters)
{
    topo_physnet pn;
    sim_err err;
    cr_assert_eq(topo_physnet_build(&pn, "star", 3, &err), 0, "%s", err.msg);
    sim_net_desc d;
    topo_physnet_desc(&pn, 1e-6, 1e9, SIM_SHARE_FAIR, &d);
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    rec r = {0};
    send_ok(net, 0, 1, 1000, &r, 0);
    send_ok(net, 0, 2, 3000, &r, 1);
    send_ok(net, 2, 1, 500, &r, 2);
    send_ok(net, 1, 1, 7777, &r, 3);
    cr_assert_eq(sim_net_messages(net), 4);
    cr_assert_eq(sim_net_bytes_sent_host(net, 0), 4000.0);
    cr_assert_eq(sim_net_bytes_sent_host(net, 1), 0.0);
    cr_assert_eq(sim_net_bytes_sent_host(net, 2), 500.0);
    cr_assert_eq(sim_net_bytes_sent_total(net), 4500.0);
    run_all(eng);
    /* Star edge i joins host i and the switch (vertex 3). */
    const igraph_t *g = &pn.graph;
    const int sw = 3;
    cr_assert_eq(sim_net_bytes_link(net, link_from(g, 0, 0)), 4000.0); /* uplink 0 */
    cr_assert_eq(sim_net_bytes_link(net, link_from(g, 0, sw)), 0.0);
    cr_assert_eq(sim_net_bytes_link(net, link_from(g, 1, sw)), 1500.0); /* downlink 1 */
    cr_assert_eq(sim_net_bytes_link(net, link_from(g, 1, 1)), 0.0);
    cr_assert_eq(sim_net_bytes_link(net, link_from(g, 2, sw)), 3000.0);
    cr_assert_eq(sim_net_bytes_link(net, link_from(g, 2, 2)), 500.0);
    double sum = 0;
    for (int l = 0; l < sim_net_n_links(net); l++)
        sum += sim_net_bytes_link(net, l);
    cr_assert_eq(sum, 2 * 4500.0); /* every route is two links */
    /* link ends: every link joins a host and the switch, in both directions */
    for (int l = 0; l < sim_net_n_links(net); l++) {
        int from, to, rfrom, rto;
        cr_assert_eq(sim_net_link_ends(net, l, &from, &to), 0);
        cr_assert_eq(sim_net_link_ends(net, l ^ 1, &rfrom, &rto), 0);
        cr_assert(from == rto && to == rfrom);
        cr_assert((from == sw) != (to == sw), "link %d: %d -> %d", l, from, to);
        cr_assert_eq(link_from(g, l / 2, from), l);
    }
    int f, t;
    cr_assert_lt(sim_net_link_ends(net, 99, &f, &t), 0);
    cr_assert_eq(sim_net_bytes_link(net, -1), 0.0);
    cr_assert_eq(sim_net_bytes_link(net, 99), 0.0);
    topo_physnet_release(&pn);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

Test(network, route_info_hops)
{
    sim_engine *eng = sim_engine_create(0);
    sim_net *star = mk(eng, "star", 5, 2e-6, 3e9, SIM_SHARE_FAIR);
    double lat, bn;
    int hops;
    cr_assert_eq(sim_net_route_info(star, 1, 4, &lat, &hops, &bn), 0);
    cr_assert_eq(hops, 2);
    cr_assert_float_eq(lat, 4e-6, 1e-15);
    cr_assert_float_eq(bn, 3e9, 1.0);
    cr_assert_eq(sim_net_route_info(star, 2, 2, &lat, &hops, NULL), 0);
    cr_assert_eq(hops, 0);
    cr_assert_lt(sim_net_route_info(star, 0, 5, &lat, &hops, &bn), 0);

    sim_net *ring = mk(eng, "ring", 8, 1e-6, 1e9, SIM_SHARE_FAIR);
    const int want[8] = {0, 1, 2, 3, 4, 3, 2, 1};
    for (int d = 0; d < 8; d++) {
        cr_assert_eq(sim_net_route_info(ring, 0, d, &lat, &hops, NULL), 0);
        cr_assert_eq(hops, want[d], "0 -> %d: %d hops", d, hops);
        cr_assert_float_eq(lat, want[d] * 1e-6, 1e-15);
    }
    cr_assert_eq(sim_net_route_info(ring, 5, 2, NULL, &hops, NULL), 0);
    cr_assert_eq(hops, 3);
    sim_net_destroy(ring);
    sim_net_destroy(star);
    sim_engine_destroy(eng);
}

/* The route a flow takes on a ring is the short way round: 0 -> 2 on a ring
 * of 8 crosses links 0->1 and 1->2 only, so a flow 5 -> 7 never meets it. */
Test(network, ring_routes_are_disjoint)
{
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk(eng, "ring", 8, 1e-6, 1e9, SIM_SHARE_FAIR);
    rec r = {0};
    send_ok(net, 0, 2, 1e6, &r, 0);
    send_ok(net, 5, 7, 1e6, &r, 1);
    send_ok(net, 1, 2, 1e6, &r, 2); /* shares link 1->2 with the first */
    double rates[3];
    cr_assert_eq(sim_net_flow_rates(net, rates, 3), 3);
    cr_assert_float_eq(rates[0], 0.5e9, 1.0);
    cr_assert_float_eq(rates[1], 1e9, 1.0);
    cr_assert_float_eq(rates[2], 0.5e9, 1.0);
    run_all(eng);
    assert_time(r.t[0], 2e-3 + 2e-6);
    assert_time(r.t[1], 1e-3 + 2e-6);
    assert_time(r.t[2], 2e-3 + 1e-6);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

Test(network, unreachable_and_bad_input)
{
    igraph_t g;
    igraph_empty(&g, 3, IGRAPH_UNDIRECTED);
    igraph_add_edge(&g, 0, 1);
    sim_net_desc d = {.graph = &g, .n_hosts = 3, .default_latency = 1e-6,
                      .default_bandwidth = 1e9};
    sim_engine *eng = sim_engine_create(0);
    sim_err err;
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    rec r = {0};
    cr_assert_eq(sim_net_send(net, 0, 2, 10, on_rec, &r, 0, &err), SIM_EINPUT);
    cr_assert_str_eq(err.msg, "no route from host 0 to host 2");
    cr_assert_lt(sim_net_route_info(net, 2, 1, NULL, NULL, NULL), 0);
    cr_assert_eq(sim_net_send(net, 0, 3, 10, on_rec, &r, 0, &err), SIM_EINPUT);
    cr_assert_eq(sim_net_send(net, -1, 0, 10, on_rec, &r, 0, &err), SIM_EINPUT);
    cr_assert_eq(sim_net_send(net, 0, 1, -1.0, on_rec, &r, 0, &err), SIM_EINPUT);
    cr_assert_eq(sim_net_send(net, 0, 1, NAN, on_rec, &r, 0, &err), SIM_EINPUT);
    cr_assert_eq(sim_net_messages(net), 0);
    cr_assert_eq(sim_net_bytes_sent_total(net), 0.0);
    sim_net_destroy(net);

    d.n_hosts = 4; /* more hosts than vertices */
    cr_assert_null(sim_net_create(eng, &d, &err));
    cr_assert_eq(err.code, SIM_EINPUT);
    d.n_hosts = 3;
    d.default_bandwidth = 0.0;
    cr_assert_null(sim_net_create(eng, &d, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    const double badbw[1] = {-5.0};
    d.bandwidth = badbw;
    cr_assert_null(sim_net_create(eng, &d, &err));
    cr_assert_eq(err.code, SIM_EINPUT);
    d.bandwidth = NULL;
    d.default_bandwidth = 1e9;
    d.graph = NULL;
    cr_assert_null(sim_net_create(eng, &d, &err));
    igraph_destroy(&g);
    sim_engine_destroy(eng);
    sim_net_destroy(NULL);
}

/* Flows that come and go: at every moment the rates on the bottleneck sum
 * to its bandwidth, and the last delivery is at total bytes / B + 2L (the
 * downlink of host 0 never idles while some flow is active). */
Test(network, work_conserving_incast)
{
    const double B = 1e9, L = 1e-6;
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk(eng, "star", 9, L, B, SIM_SHARE_FAIR);
    rec r = {0};
    later l[8];
    double total = 0;
    for (int i = 0; i < 8; i++) {
        l[i] = (later){net, &r, i + 1, 0, 1e5 * (i + 1), (uint64_t)i};
        total += l[i].bytes;
        sim_engine_schedule(eng, (sim_time)(i * 37000), send_later, &l[i], 0, NULL, NULL);
    }
    for (sim_time t = 1000; t < 4000000; t += 50000) {
        sim_engine_run_until(eng, t);
        double rates[8], sum = 0;
        int k = sim_net_flow_rates(net, rates, 8);
        for (int i = 0; i < k; i++)
            sum += rates[i];
        if (k > 0)
            cr_assert_float_eq(sum, B, 1e-6 * B);
    }
    run_all(eng);
    cr_assert_eq(r.n, 8);
    sim_time last = 0;
    for (int i = 0; i < 8; i++)
        last = r.t[i] > last ? r.t[i] : last;
    assert_time(last, total / B + 2 * L);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

Test(network, physnet_shapes)
{
    topo_physnet pn;
    sim_err err;
    cr_assert_eq(topo_physnet_build(&pn, "star", 5, &err), 0, "%s", err.msg);
    cr_assert_eq(igraph_vcount(&pn.graph), 6);
    cr_assert_eq(igraph_ecount(&pn.graph), 5);
    cr_assert_eq(pn.n_hosts, 5);
    cr_assert_eq(pn.ideal, 0);
    topo_physnet_release(&pn);

    const int n[4] = {1, 2, 3, 6}, ring_e[4] = {0, 1, 3, 6}, comp_e[4] = {0, 1, 3, 15};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(topo_physnet_build(&pn, "ring", n[i], &err), 0, "%s", err.msg);
        cr_assert_eq(igraph_vcount(&pn.graph), n[i]);
        cr_assert_eq(igraph_ecount(&pn.graph), ring_e[i]);
        topo_physnet_release(&pn);
        cr_assert_eq(topo_physnet_build(&pn, " complete ", n[i], &err), 0, "%s", err.msg);
        cr_assert_eq(igraph_ecount(&pn.graph), comp_e[i]);
        topo_physnet_release(&pn);
    }
    cr_assert_eq(topo_physnet_build(&pn, "ideal", 7, &err), 0, "%s", err.msg);
    cr_assert_eq(pn.ideal, 1);
    cr_assert_eq(igraph_vcount(&pn.graph), 7);
    cr_assert_eq(igraph_ecount(&pn.graph), 0);
    sim_net_desc d;
    topo_physnet_desc(&pn, 1e-6, 2e9, SIM_SHARE_NONE, &d);
    cr_assert_eq(d.ideal, 1);
    cr_assert_eq(d.n_hosts, 7);
    cr_assert_eq(d.default_bandwidth, 2e9);
    cr_assert_eq(d.sharing, SIM_SHARE_NONE);
    topo_physnet_release(&pn);
    topo_physnet_release(&pn); /* released twice is harmless */

    int names = 0;
    for (int i = 0; topo_physnet_registry[i]; i++)
        names += topo_physnet_registry[i]->build != NULL;
    cr_assert_geq(names, 4);
}

Test(network, physnet_errors)
{
    topo_physnet pn;
    sim_err err;
    cr_assert_eq(topo_physnet_build(&pn, "hypercube", 4, &err), SIM_ECONFIG);
    cr_assert(strncmp(err.msg, "unknown network topology 'hypercube' (known: star, ring, complete, ideal",
                      strlen("unknown network topology 'hypercube' (known: star, ring, complete, ideal")) == 0,
              "%s", err.msg);
    cr_assert_eq(topo_physnet_build(&pn, "star(3)", 4, &err), SIM_ECONFIG);
    cr_assert_eq(topo_physnet_build(&pn, "ring", 0, &err), SIM_ECONFIG);
    topo_physnet_release(&pn);
}
