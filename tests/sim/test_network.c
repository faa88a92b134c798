/* Flow-level network model and physical networks, against closed forms:
 * alpha-beta costs on one link and on a star, max-min fair rates worked out
 * by hand, counters, routes, and the error paths; then links that go down
 * (sim_net_link_set_down): a lost message is re-sent a retransmission
 * timeout after the loss, again and again while no up route exists;
 * routes avoid down links; the flows that share a link with a lost one
 * speed up at once; the counters count what was sent. */
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

/* A network of physnet spec; model (or NULL) gives the transport
 * parameters: efficiency, the overheads and their tables by size. */
static sim_net *mk_model(sim_engine *eng, const char *spec, int n, double lat, double bw,
                         sim_sharing sh, const sim_net_desc *model)
{
    topo_physnet pn;
    sim_err err;
    cr_assert_eq(topo_physnet_build(&pn, spec, n, &err), 0, "%s", err.msg);
    sim_net_desc d;
    topo_physnet_desc(&pn, lat, bw, sh, &d);
    if (model) {
        d.efficiency = model->efficiency;
        d.message_overhead = model->message_overhead;
        d.collective_overhead = model->collective_overhead;
        d.efficiency_by_size = model->efficiency_by_size;
        d.overhead_by_size = model->overhead_by_size;
    }
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    topo_physnet_release(&pn); /* the network keeps its own copy */
    return net;
}

static sim_net *mk(sim_engine *eng, const char *spec, int n, double lat, double bw,
                   sim_sharing sh)
{
    return mk_model(eng, spec, n, lat, bw, sh, NULL);
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

/* ---- links that go down ------------------------------------------------ */

#define DOWN_MAXMSG 16
#define DOWN_REL 1e-9

typedef struct down_rec {
    int n;
    sim_time t[DOWN_MAXMSG];
} down_rec;

static void down_on_rec(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    (void)src;
    (void)dst;
    (void)bytes;
    down_rec *r = ctx;
    cr_assert(arg < DOWN_MAXMSG);
    r->t[arg] = sim_engine_now(eng);
    r->n++;
}

typedef struct losses {
    int n;
    int src[DOWN_MAXMSG], dst[DOWN_MAXMSG];
    double sent[DOWN_MAXMSG];
    sim_time t[DOWN_MAXMSG];
    sim_engine *eng;
    double resent; /* bytes reported re-sent */
    int n_resent;
} losses;

static void on_loss(void *ctx, int src, int dst, double sent, int resent)
{
    losses *l = ctx;
    if (resent) {
        l->resent += sent;
        l->n_resent++;
        return;
    }
    cr_assert(l->n < DOWN_MAXMSG);
    l->src[l->n] = src;
    l->dst[l->n] = dst;
    l->sent[l->n] = sent;
    l->t[l->n] = sim_engine_now(l->eng);
    l->n++;
}

static sim_net *down_mk(sim_engine *eng, const char *spec, int n, double lat, double bw,
                   sim_sharing sh, double rto)
{
    topo_physnet pn;
    sim_err err;
    cr_assert_eq(topo_physnet_build(&pn, spec, n, &err), 0, "%s", err.msg);
    sim_net_desc d;
    topo_physnet_desc(&pn, lat, bw, sh, &d);
    d.retransmit_timeout = rto;
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    topo_physnet_release(&pn);
    return net;
}

/* A scheduled change of the link a-b: down (1) or up (0). */
typedef struct link_ev {
    sim_net *net;
    int a, b, down;
} link_ev;

static void on_link(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)arg;
    (void)payload;
    link_ev *e = ctx;
    sim_err err;
    cr_assert_eq(sim_net_link_set_down(e->net, e->a, e->b, e->down, &err), 0, "%s", err.msg);
}

static void at(sim_engine *eng, double t, link_ev *e)
{
    cr_assert(sim_engine_schedule(eng, sim_time_from_s(t), on_link, e, 0, NULL, NULL));
}

static void assert_near(double got, double want, const char *what)
{
    cr_assert(fabs(got - want) <= DOWN_REL * fabs(want) + 1e-9, "%s: %.15g, want %.15g", what, got,
              want);
}

/* The directed link from vertex a to vertex b. */
static int link_ab(const sim_net *net, int a, int b)
{
    for (int l = 0; l < sim_net_n_links(net); l++) {
        int f, t;
        sim_net_link_ends(net, l, &f, &t);
        if (f == a && t == b)
            return l;
    }
    cr_assert_fail("no link %d-%d", a, b);
    return -1;
}

/* One message of S bytes from host 0 to host 1 of a star (via switch 2,
 * two hops of latency L), sent at 0; the link 0-2 goes down at t_d and up
 * at t_u. The attempt is lost with t_d B bytes sent; re-sends at t_d + k
 * rto find no route until the link is up; the first at or after t_u is
 * delivered at t_r + S/B + 2L. Host and total bytes: t_d B + S; both links
 * of the path carried the same; messages 2; lost attempts 1 + the re-sends
 * that found no route. */
Test(network, lost_message_is_resent_at_the_timeout_after_the_link_is_up)
{
    const double S = 1e6, B = 1e8, L = 10e-6, rto = 0.1, td = 0.004;
    const double tu[] = {0.05, 0.25};      /* before the first re-send, after two */
    const double tr[] = {0.104, 0.304};    /* the re-send that goes through */
    const int lost[] = {1, 3};
    for (int sh = 0; sh < 2; sh++)
        for (int c = 0; c < 2; c++) {
            sim_engine *eng = sim_engine_create(0);
            sim_net *net = down_mk(eng, "star", 2, L, B, (sim_sharing)sh, rto);
            losses ls = {.eng = eng};
            sim_net_set_loss_hook(net, on_loss, &ls);
            down_rec r = {0};
            sim_err err;
            cr_assert_eq(sim_net_send(net, 0, 1, S, down_on_rec, &r, 0, &err), 0, "%s", err.msg);
            link_ev down = {net, 0, 2, 1}, up = {net, 2, 0, 0};
            at(eng, td, &down);
            at(eng, tu[c], &up);
            run_all(eng);
            cr_assert_eq(r.n, 1);
            assert_near(sim_time_to_s(r.t[0]), tr[c] + S / B + 2 * L, "delivery");
            assert_near(sim_net_bytes_sent_host(net, 0), td * B + S, "host bytes");
            assert_near(sim_net_bytes_sent_total(net), td * B + S, "total bytes");
            assert_near(sim_net_bytes_link(net, link_ab(net, 0, 2)), td * B + S, "link 0->2");
            assert_near(sim_net_bytes_link(net, link_ab(net, 2, 1)), td * B + S, "link 2->1");
            cr_assert_eq(sim_net_bytes_link(net, link_ab(net, 2, 0)), 0.0);
            assert_near(sim_net_resent_bytes(net), S, "re-sent bytes");
            cr_assert_eq(ls.n_resent, 1);
            assert_near(ls.resent, S, "re-sent bytes reported");
            cr_assert_eq(sim_net_messages(net), 2);
            cr_assert_eq(sim_net_lost_messages(net), (uint64_t)lost[c]);
            cr_assert_eq(ls.n, lost[c]);
            assert_near(ls.sent[0], td * B, "first loss");
            assert_near(sim_time_to_s(ls.t[0]), td, "first loss time");
            for (int k = 1; k < ls.n; k++) {
                cr_assert_eq(ls.sent[k], 0.0);
                assert_near(sim_time_to_s(ls.t[k]), td + k * rto, "later loss time");
            }
            cr_assert_eq(ls.src[0], 0);
            cr_assert_eq(ls.dst[0], 1);
            cr_assert_eq(sim_net_active_flows(net), 0);
            sim_net_destroy(net);
            sim_engine_destroy(eng);
        }
}

/* A message sent while the only path is down is lost at once (0 bytes)
 * and re-sent every rto; a rate change brings the link back up. A message
 * already in its propagation phase when the link goes down is delivered. */
Test(network, send_on_a_cut_path_and_propagating_messages)
{
    const double B = 1e8, L = 0.01, rto = 0.5;
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = down_mk(eng, "star", 2, L, B, SIM_SHARE_FAIR, rto);
    sim_err err;
    down_rec r = {0};
    /* 1e5 bytes drain in 1 ms; the link goes down at 5 ms, mid-propagation */
    cr_assert_eq(sim_net_send(net, 0, 1, 1e5, down_on_rec, &r, 0, &err), 0, "%s", err.msg);
    link_ev down = {net, 0, 2, 1};
    at(eng, 0.005, &down);
    while (sim_engine_now(eng) < sim_time_from_s(0.005) && sim_engine_step(eng))
        ;
    cr_assert_eq(sim_net_link_is_down(net, 2, 0), 1);
    cr_assert_eq(sim_net_link_is_down(net, 2, 1), 0);
    cr_assert_eq(sim_net_link_is_down(net, 0, 1), -1);
    /* route_info of a cut pair reports the graph's route */
    int hops = 0;
    cr_assert_eq(sim_net_route_info(net, 0, 1, NULL, &hops, NULL), 0);
    cr_assert_eq(hops, 2);
    cr_assert_eq(sim_net_send(net, 0, 1, 1e5, down_on_rec, &r, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(sim_net_lost_messages(net), 1);
    cr_assert_eq(sim_net_messages(net), 1);
    assert_near(sim_net_bytes_sent_total(net), 1e5, "bytes while cut");
    /* up at 0.7: the re-send at 0.505 finds no route, the one at 1.005 goes */
    link_ev up = {net, 0, 2, 0};
    at(eng, 0.7 - 0.005, &up);
    run_all(eng);
    cr_assert_eq(r.n, 2);
    assert_near(sim_time_to_s(r.t[0]), 1e5 / B + 2 * L, "propagating message");
    assert_near(sim_time_to_s(r.t[1]), 1.005 + 1e5 / B + 2 * L, "sent while cut");
    cr_assert_eq(sim_net_lost_messages(net), 2);
    cr_assert_eq(sim_net_messages(net), 2);
    assert_near(sim_net_bytes_sent_total(net), 2e5, "bytes");
    sim_net_destroy(net);
    sim_engine_destroy(eng);

    eng = sim_engine_create(0);
    net = down_mk(eng, "star", 2, L, B, SIM_SHARE_NONE, rto);
    r = (down_rec){0};
    cr_assert_eq(sim_net_link_set_down(net, 0, 2, 1, &err), 0);
    cr_assert_eq(sim_net_send(net, 0, 1, 1e5, down_on_rec, &r, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(sim_net_link_set_rate(net, 0, 2, B / 2, &err), 0, "%s", err.msg);
    cr_assert_eq(sim_net_link_is_down(net, 0, 2), 0);
    run_all(eng);
    cr_assert_eq(r.n, 1);
    /* sent at rto (not earlier: the sender has not noticed), at B/2 */
    assert_near(sim_time_to_s(r.t[0]), rto + 1e5 / (B / 2) + 2 * L, "after set_rate");
    cr_assert_eq(sim_net_lost_messages(net), 1);
    cr_assert_eq(sim_net_messages(net), 1);
    assert_near(sim_net_bytes_sent_total(net), 1e5, "bytes");
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

/* While the link stays down the message retries every rto, forever: the
 * engine always has its next re-send pending. */
Test(network, a_message_retries_while_the_link_stays_down)
{
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = down_mk(eng, "star", 2, 1e-6, 1e8, SIM_SHARE_FAIR, 0.25);
    sim_err err;
    down_rec r = {0};
    cr_assert_eq(sim_net_link_set_down(net, 1, 2, 1, &err), 0);
    cr_assert_eq(sim_net_send(net, 0, 1, 1e3, down_on_rec, &r, 0, &err), 0, "%s", err.msg);
    sim_engine_run_until(eng, sim_time_from_s(1.1));
    cr_assert_eq(r.n, 0);
    cr_assert_eq(sim_net_lost_messages(net), 5); /* at 0, 0.25, 0.5, 0.75, 1.0 */
    cr_assert_eq(sim_engine_pending(eng), 1);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

/* A ring of 6 hosts: with the link 0-1 down, 0 -> 1 goes the other way
 * round (5 hops); a message in flight on 0-1 when it goes down is re-sent
 * over the 5-hop path; after the link is up the direct route is back. */
Test(network, routes_go_around_a_down_link)
{
    const double S = 1e6, B = 1e8, L = 1e-3, rto = 0.2, td = 0.002;
    for (int sh = 0; sh < 2; sh++)
        for (int ecmp = 0; ecmp < 2; ecmp++) {
            topo_physnet pn;
            sim_err err;
            cr_assert_eq(topo_physnet_build(&pn, "ring", 6, &err), 0, "%s", err.msg);
            sim_net_desc d;
            topo_physnet_desc(&pn, L, B, (sim_sharing)sh, &d);
            d.retransmit_timeout = rto;
            d.routing = ecmp ? SIM_ROUTE_ECMP : SIM_ROUTE_SHORTEST;
            sim_engine *eng = sim_engine_create(0);
            sim_net *net = sim_net_create(eng, &d, &err);
            cr_assert_not_null(net, "%s", err.msg);
            topo_physnet_release(&pn);
            down_rec r = {0};
            int hops = 0;
            cr_assert_eq(sim_net_route_info(net, 0, 1, NULL, &hops, NULL), 0);
            cr_assert_eq(hops, 1);
            /* in flight when 0-1 goes down at td */
            cr_assert_eq(sim_net_send(net, 0, 1, S, down_on_rec, &r, 0, &err), 0, "%s", err.msg);
            link_ev down = {net, 1, 0, 1};
            at(eng, td, &down);
            while (sim_engine_now(eng) < sim_time_from_s(td) && sim_engine_step(eng))
                ;
            cr_assert_eq(sim_net_route_info(net, 0, 1, NULL, &hops, NULL), 0);
            cr_assert_eq(hops, 5);
            /* sent after the link is down: the long way at once */
            double t1 = sim_time_to_s(sim_engine_now(eng));
            cr_assert_eq(sim_net_send(net, 0, 1, S, down_on_rec, &r, 1, &err), 0, "%s", err.msg);
            run_all(eng);
            cr_assert_eq(r.n, 2);
            /* alone on its path until the re-send at td + rto */
            cr_assert(t1 + S / B < td + rto);
            assert_near(t1, td, "second send");
            assert_near(sim_time_to_s(r.t[1]), t1 + S / B + 5 * L, "sent while down");
            assert_near(sim_time_to_s(r.t[0]), td + rto + S / B + 5 * L, "re-sent");
            cr_assert_eq(sim_net_lost_messages(net), 1);
            assert_near(sim_net_bytes_sent_total(net), td * B + 2 * S, "total bytes");
            /* the re-sent copy crossed the 5 links of the long way */
            assert_near(sim_net_bytes_link(net, link_ab(net, 0, 5)), 2 * S, "link 0->5");
            assert_near(sim_net_bytes_link(net, link_ab(net, 0, 1)), td * B, "link 0->1");
            cr_assert_eq(sim_net_link_set_down(net, 0, 1, 0, &err), 0);
            cr_assert_eq(sim_net_route_info(net, 0, 1, NULL, &hops, NULL), 0);
            cr_assert_eq(hops, 1);
            sim_net_destroy(net);
            sim_engine_destroy(eng);
        }
}

/* Fair sharing: flows 0 -> 2 and 1 -> 2 on a star share the link
 * switch -> 2 at B/2 each. When 1-3 goes down at t_d, 1 -> 2 is lost and
 * 0 -> 2 runs at B at once: it ends at t_d + (S - t_d B/2)/B + 2L. */
Test(network, the_flow_sharing_a_link_with_a_lost_one_speeds_up_at_once)
{
    const double S = 1e6, B = 1e8, L = 1e-5, td = 0.004, rto = 1.0;
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = down_mk(eng, "star", 3, L, B, SIM_SHARE_FAIR, rto);
    sim_err err;
    down_rec r = {0};
    cr_assert_eq(sim_net_send(net, 0, 2, S, down_on_rec, &r, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(sim_net_send(net, 1, 2, S, down_on_rec, &r, 1, &err), 0, "%s", err.msg);
    double rates[2];
    cr_assert_eq(sim_net_flow_rates(net, rates, 2), 2);
    assert_near(rates[0], B / 2, "shared rate");
    link_ev down = {net, 1, 3, 1}, up = {net, 1, 3, 0};
    at(eng, td, &down);
    at(eng, 0.5, &up);
    while (sim_engine_now(eng) < sim_time_from_s(td) && sim_engine_step(eng))
        ;
    cr_assert_eq(sim_net_active_flows(net), 1);
    cr_assert_eq(sim_net_flow_rates(net, rates, 2), 1);
    assert_near(rates[0], B, "rate after the loss");
    double ref[2];
    cr_assert_eq(sim_net_flow_rates_reference(net, ref, 2), 1);
    assert_near(ref[0], B, "reference rate");
    run_all(eng);
    cr_assert_eq(r.n, 2);
    assert_near(sim_time_to_s(r.t[0]), td + (S - td * B / 2) / B + 2 * L, "survivor");
    assert_near(sim_time_to_s(r.t[1]), td + rto + S / B + 2 * L, "re-sent");
    assert_near(sim_net_bytes_sent_host(net, 1), td * B / 2 + S, "host 1 bytes");
    assert_near(sim_net_bytes_sent_host(net, 0), S, "host 0 bytes");
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

/* Errors: no such link, an ideal network; a pair the graph does not
 * connect stays an input error while a link is down. */
Test(network, errors)
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
    cr_assert_eq(sim_net_link_set_down(net, 1, 2, 1, &err), SIM_EINPUT);
    cr_assert_str_eq(err.msg, "network: no link between vertices 1 and 2");
    cr_assert_eq(sim_net_link_set_down(net, 0, 1, 1, &err), 0);
    cr_assert_eq(sim_net_link_set_down(net, 1, 0, 1, &err), 0); /* already down */
    down_rec r = {0};
    cr_assert_eq(sim_net_send(net, 0, 2, 10, down_on_rec, &r, 0, &err), SIM_EINPUT);
    cr_assert_str_eq(err.msg, "no route from host 0 to host 2");
    cr_assert_eq(sim_net_lost_messages(net), 0);
    sim_net_destroy(net);
    igraph_destroy(&g);

    sim_net_desc id = {.n_hosts = 2, .ideal = 1};
    net = sim_net_create(eng, &id, &err);
    cr_assert_not_null(net, "%s", err.msg);
    cr_assert_eq(sim_net_link_set_down(net, 0, 1, 1, &err), SIM_EUSAGE);
    cr_assert_eq(sim_net_link_is_down(net, 0, 1), -1);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

/* ECMP on fat_tree(4) (16 hosts, edge switches 16-23, aggregation 24-31,
 * core 32-35): 64 messages from host 0 to host 15 (another pod) spread
 * over the 4 core switches; with every link of core switch 32 down none
 * crosses it, and each still takes a 6-hop shortest path (S/B + 6L with
 * sharing = none). Without the fault some do cross it (the control). */
Test(network, ecmp_spreads_over_the_up_paths_only)
{
    const double S = 1e4, B = 1e9, L = 1e-6;
    for (int down = 0; down < 2; down++) {
        topo_physnet pn;
        sim_err err;
        cr_assert_eq(topo_physnet_build(&pn, "fat_tree(4)", 16, &err), 0, "%s", err.msg);
        sim_net_desc d;
        topo_physnet_desc(&pn, L, B, SIM_SHARE_NONE, &d);
        d.routing = SIM_ROUTE_ECMP;
        sim_engine *eng = sim_engine_create(0);
        sim_net *net = sim_net_create(eng, &d, &err);
        cr_assert_not_null(net, "%s", err.msg);
        topo_physnet_release(&pn);
        for (int l = 0; down && l < sim_net_n_links(net); l += 2) {
            int f, t;
            sim_net_link_ends(net, l, &f, &t);
            if (f == 32 || t == 32)
                cr_assert_eq(sim_net_link_set_down(net, f, t, 1, &err), 0, "%s", err.msg);
        }
        down_rec r = {0};
        for (int k = 0; k < DOWN_MAXMSG; k++)
            cr_assert_eq(sim_net_send(net, 0, 15, S, down_on_rec, &r, (uint64_t)k, &err), 0, "%s",
                         err.msg);
        for (int k = DOWN_MAXMSG; k < 64; k++)
            cr_assert_eq(sim_net_send(net, 0, 15, S, NULL, NULL, 0, &err), 0, "%s", err.msg);
        run_all(eng);
        cr_assert_eq(r.n, DOWN_MAXMSG);
        for (int k = 0; k < DOWN_MAXMSG; k++)
            assert_near(sim_time_to_s(r.t[k]), S / B + 6 * L, "ECMP delivery");
        double via32 = 0.0;
        for (int l = 0; l < sim_net_n_links(net); l++) {
            int f, t;
            sim_net_link_ends(net, l, &f, &t);
            if (f == 32 || t == 32)
                via32 += sim_net_bytes_link(net, l);
        }
        if (down)
            cr_assert_eq(via32, 0.0);
        else
            cr_assert_gt(via32, 0.0);
        cr_assert_eq(sim_net_lost_messages(net), 0);
        sim_net_destroy(net);
        sim_engine_destroy(eng);
    }
}

/* ---- transport parameters: efficiency, message overhead, by size ------- */

/* A message alone on a star: o + 2 alpha + S / (e B), with either sharing;
 * a 0-byte message pays o + 2 alpha. */
Test(network, efficiency_and_message_overhead_point_to_point)
{
    const double L = 5e-6, B = 1e9, e = 0.8, o = 30e-6;
    const double sizes[] = {0, 1000, 1e6, 64e6};
    sim_net_desc m = {.efficiency = e, .message_overhead = o};
    for (int sh = 0; sh < 2; sh++)
        for (int i = 0; i < 4; i++) {
            sim_engine *eng = sim_engine_create(0);
            sim_net *net = mk_model(eng, "star", 2, L, B, (sim_sharing)sh, &m);
            rec r = {0};
            send_ok(net, 0, 1, sizes[i], &r, 0);
            run_all(eng);
            cr_assert_eq(r.n, 1);
            assert_time(r.t[0], o + 2 * L + sizes[i] / (e * B));
            cr_assert_eq(sim_net_bytes_sent_host(net, 0), sizes[i]); /* payload bytes */
            sim_net_destroy(net);
            sim_engine_destroy(eng);
        }
}

/* k messages into one host at once (fair): each at o + 2 alpha + k S/(e B);
 * the link shares are those without efficiency (B / k of link rate), of
 * which payload gets e. Unequal sizes S, 2S, ..., kS: message i at
 * o + 2 alpha + (S / (e B)) sum_{j <= i} (k - j + 1). */
Test(network, max_min_shares_scale_with_efficiency)
{
    const int k = 4;
    const double L = 2e-6, B = 1e9, S = 1e6, e = 0.5, o = 10e-6;
    sim_net_desc m = {.efficiency = e, .message_overhead = o};
    for (int uneq = 0; uneq < 2; uneq++) {
        sim_engine *eng = sim_engine_create(0);
        sim_net *net = mk_model(eng, "star", k + 1, L, B, SIM_SHARE_FAIR, &m);
        rec r = {0};
        for (int i = 1; i <= k; i++)
            send_ok(net, i, 0, uneq ? i * S : S, &r, (uint64_t)i);
        /* the flows start after the overhead */
        cr_assert_eq(sim_net_active_flows(net), 0);
        sim_engine_run_until(eng, sim_time_from_s(o + 1e-9));
        double rates[8];
        cr_assert_eq(sim_net_flow_rates(net, rates, 8), k);
        for (int i = 0; i < k; i++)
            cr_assert(fabs(rates[i] - B / k) <= 1e-9 * B, "rate %g", rates[i]);
        run_all(eng);
        cr_assert_eq(r.n, k);
        double sum = 0;
        for (int i = 1; i <= k; i++) {
            sum += uneq ? (double)(k - i + 1) : 0;
            double want = uneq ? o + 2 * L + S / (e * B) * sum : o + 2 * L + k * S / (e * B);
            assert_time(r.t[i], want);
        }
        sim_net_destroy(net);
        sim_engine_destroy(eng);
    }
}

/* The trace hook: a message's start (its links) and the moment its last
 * byte leaves the source (before the latency), for both sharing models;
 * a message to itself is not reported. */
typedef struct trace_rec {
    int n;
    sim_time t[4];
    int start[4], hops[4], link0[4];
    double bytes[4];
    sim_engine *eng;
} trace_rec;

static void on_trace(void *ctx, int src, int dst, double bytes, const int *links, int hops,
                     int start)
{
    trace_rec *r = ctx;
    (void)src;
    (void)dst;
    cr_assert_lt(r->n, 4);
    r->t[r->n] = sim_engine_now(r->eng);
    r->start[r->n] = start;
    r->hops[r->n] = hops;
    r->link0[r->n] = hops > 0 ? links[0] : -1;
    r->bytes[r->n] = bytes;
    r->n++;
}

Test(network, trace_hook_reports_start_and_drain)
{
    for (int sh = 0; sh < 2; sh++) {
        sim_engine *eng = sim_engine_create(0);
        sim_net *net = mk(eng, "star", 2, 10e-6, 1e9, (sim_sharing)sh);
        trace_rec tr = {.eng = eng};
        sim_net_set_trace_hook(net, on_trace, &tr);
        rec r = {0};
        send_ok(net, 0, 1, 1e6, &r, 0);
        send_ok(net, 1, 1, 5, &r, 1); /* to itself: not reported */
        run_all(eng);
        cr_assert_eq(tr.n, 2);
        cr_assert_eq(tr.start[0], 1);
        cr_assert_eq(tr.start[1], 0);
        cr_assert_eq(tr.t[0], 0);
        assert_time(tr.t[1], 1e6 / 1e9); /* drained; delivered 2 x 10 us later */
        assert_time(r.t[0], 20e-6 + 1e6 / 1e9);
        cr_assert_eq(tr.hops[0], 2);
        cr_assert_eq(tr.hops[1], 2);
        cr_assert_eq(tr.link0[0], tr.link0[1]);
        cr_assert_eq(tr.bytes[0], 1e6);
        sim_net_set_trace_hook(net, NULL, NULL);
        sim_net_destroy(net);
        sim_engine_destroy(eng);
    }
}

/* Tables by size: the piece a message's size falls in gives its
 * efficiency and its overhead. */
Test(network, efficiency_and_overhead_by_size)
{
    const double L = 1e-6, B = 1e9;
    sim_net_desc m = {.efficiency = 1};
    sim_err err;
    cr_assert_eq(sim_net_by_size_parse("0:0.5, 64KiB:0.8, 1MiB:0.94", SIM_BY_SIZE_EFFICIENCY,
                                       &m.efficiency_by_size, &err), 0, "%s", err.msg);
    cr_assert_eq(sim_net_by_size_parse("0:20us, 1MiB:40us", SIM_BY_SIZE_TIME,
                                       &m.overhead_by_size, &err), 0, "%s", err.msg);
    const double sizes[] = {1000, 65535, 65536, 1048575, 1048576, 1e8};
    const double eff[] = {0.5, 0.5, 0.8, 0.8, 0.94, 0.94};
    const double ovh[] = {20e-6, 20e-6, 20e-6, 20e-6, 40e-6, 40e-6};
    for (int i = 0; i < 6; i++) {
        sim_engine *eng = sim_engine_create(0);
        sim_net *net = mk_model(eng, "star", 2, L, B, SIM_SHARE_FAIR, &m);
        rec r = {0};
        send_ok(net, 0, 1, sizes[i], &r, 0);
        run_all(eng);
        assert_time(r.t[0], ovh[i] + 2 * L + sizes[i] / (eff[i] * B));
        sim_net_destroy(net);
        sim_engine_destroy(eng);
    }
}

/* Defaults (a zero description) are the pure model; efficiency above 1
 * or a negative overhead is refused. */
Test(network, transport_parameter_errors)
{
    sim_engine *eng = sim_engine_create(0);
    topo_physnet pn;
    sim_err err;
    cr_assert_eq(topo_physnet_build(&pn, "star", 2, &err), 0, "%s", err.msg);
    sim_net_desc d;
    topo_physnet_desc(&pn, 1e-6, 1e9, SIM_SHARE_FAIR, &d);
    d.efficiency = 1.5;
    cr_assert_null(sim_net_create(eng, &d, &err));
    cr_assert(strstr(err.msg, "efficiency must be in (0, 1]"), "%s", err.msg);
    d.efficiency = 1;
    d.message_overhead = -1e-6;
    cr_assert_null(sim_net_create(eng, &d, &err));
    d.message_overhead = 0;
    d.collective_overhead = NAN;
    cr_assert_null(sim_net_create(eng, &d, &err));
    d.collective_overhead = 0;
    d.efficiency_by_size = (sim_net_by_size){.n = 1, .from = {5}, .value = {0.5}};
    cr_assert_null(sim_net_create(eng, &d, &err));
    cr_assert(strstr(err.msg, "must start at 0 bytes"), "%s", err.msg);
    topo_physnet_release(&pn);
    sim_engine_destroy(eng);
}

/* A lost message's counters are in payload bytes: a link of efficiency
 * 0.5 that goes down at td has carried td e B payload bytes. */
Test(network, lost_message_counts_payload_bytes)
{
    const double S = 1e6, B = 1e8, L = 10e-6, e = 0.5, td = 0.004;
    sim_net_desc m = {.efficiency = e};
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk_model(eng, "star", 2, L, B, SIM_SHARE_FAIR, &m);
    rec r = {0};
    send_ok(net, 0, 1, S, &r, 0);
    sim_engine_run_until(eng, sim_time_from_s(td));
    sim_err err;
    cr_assert_eq(sim_net_link_set_down(net, 0, 2, 1, &err), 0, "%s", err.msg);
    cr_assert(fabs(sim_net_bytes_sent_host(net, 0) - td * e * B) <= 1e-6 * S);
    cr_assert_eq(sim_net_link_set_down(net, 0, 2, 0, &err), 0, "%s", err.msg);
    run_all(eng);
    cr_assert_eq(r.n, 1);
    /* re-sent after 1 s (the default timeout), whole */
    assert_time(r.t[0], td + 1.0 + 2 * L + S / (e * B));
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

/* The parser of the tables: canonical text, and a clear error per fault. */
Test(network, by_size_parse_and_format)
{
    sim_net_by_size t;
    sim_err err;
    char buf[256];
    cr_assert_eq(sim_net_by_size_parse(" 0 : 0.5,64KiB:0.8 , 1MiB:1 ", SIM_BY_SIZE_EFFICIENCY,
                                       &t, &err), 0, "%s", err.msg);
    cr_assert_eq(t.n, 3);
    cr_assert_eq(sim_net_by_size_format(&t, SIM_BY_SIZE_EFFICIENCY, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "0B:0.5, 64KiB:0.8, 1MiB:1");
    cr_assert_eq(sim_net_by_size_at(&t, 65535, 9), 0.5);
    cr_assert_eq(sim_net_by_size_at(&t, 1e9, 9), 1.0);
    cr_assert_eq(sim_net_by_size_parse("0:5us, 1000B:1ms", SIM_BY_SIZE_TIME, &t, &err), 0);
    cr_assert_eq(sim_net_by_size_format(&t, SIM_BY_SIZE_TIME, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "0B:5000ns, 1000B:1000000ns");
    cr_assert_eq(sim_net_by_size_parse("none", SIM_BY_SIZE_TIME, &t, &err), 0);
    cr_assert_eq(t.n, 0);
    cr_assert_eq(sim_net_by_size_at(&t, 5, 7), 7.0);
    cr_assert_eq(sim_net_by_size_format(&t, SIM_BY_SIZE_TIME, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "none");
    const struct {
        const char *text, *msg;
        sim_net_by_size_kind kind;
    } bad[] = {
        {"64KiB:0.8", "the first size must be 0 in '64KiB:0.8'", SIM_BY_SIZE_EFFICIENCY},
        {"0:0.5, 1MiB:0.9, 64KiB:0.8", "sizes must increase in '64KiB:0.8'",
         SIM_BY_SIZE_EFFICIENCY},
        {"0:1.5", "bad efficiency in '0:1.5'", SIM_BY_SIZE_EFFICIENCY},
        {"0:0", "bad efficiency in '0:0'", SIM_BY_SIZE_EFFICIENCY},
        {"0 0.5", "missing ':' in '0 0.5'", SIM_BY_SIZE_EFFICIENCY},
        {"fast:0.5", "bad size in 'fast:0.5'", SIM_BY_SIZE_EFFICIENCY},
        {"0:5", "bad time in '0:5'", SIM_BY_SIZE_TIME},
        {", ,", "an empty piece in ', ,'", SIM_BY_SIZE_TIME},
        {"0:1us,", "an empty piece in '0:1us,'", SIM_BY_SIZE_TIME},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(sim_net_by_size_parse(bad[i].text, bad[i].kind, &t, &err), SIM_ECONFIG,
                     "%s", bad[i].text);
        cr_assert(strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)) == 0, "%s", err.msg);
    }
}
