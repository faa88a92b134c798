/* Links that go down (sim_net_link_set_down), against closed forms: a lost
 * message is re-sent a retransmission timeout after the loss, again and
 * again while no up route exists; routes avoid down links; the flows that
 * share a link with a lost one speed up at once; the counters count what
 * was sent. */
#include <criterion/criterion.h>

#include <math.h>

#include "sim/engine.h"
#include "sim/network.h"
#include "topology/physnet.h"

#define MAXMSG 16
#define REL 1e-9

typedef struct rec {
    int n;
    sim_time t[MAXMSG];
} rec;

static void on_rec(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    (void)src;
    (void)dst;
    (void)bytes;
    rec *r = ctx;
    cr_assert(arg < MAXMSG);
    r->t[arg] = sim_engine_now(eng);
    r->n++;
}

typedef struct losses {
    int n;
    int src[MAXMSG], dst[MAXMSG];
    double sent[MAXMSG];
    sim_time t[MAXMSG];
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
    cr_assert(l->n < MAXMSG);
    l->src[l->n] = src;
    l->dst[l->n] = dst;
    l->sent[l->n] = sent;
    l->t[l->n] = sim_engine_now(l->eng);
    l->n++;
}

static sim_net *mk(sim_engine *eng, const char *spec, int n, double lat, double bw,
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

static void run_all(sim_engine *eng)
{
    while (sim_engine_step(eng))
        ;
}

static void assert_near(double got, double want, const char *what)
{
    cr_assert(fabs(got - want) <= REL * fabs(want) + 1e-9, "%s: %.15g, want %.15g", what, got,
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
Test(net_down, lost_message_is_resent_at_the_timeout_after_the_link_is_up)
{
    const double S = 1e6, B = 1e8, L = 10e-6, rto = 0.1, td = 0.004;
    const double tu[] = {0.05, 0.25};      /* before the first re-send, after two */
    const double tr[] = {0.104, 0.304};    /* the re-send that goes through */
    const int lost[] = {1, 3};
    for (int sh = 0; sh < 2; sh++)
        for (int c = 0; c < 2; c++) {
            sim_engine *eng = sim_engine_create(0);
            sim_net *net = mk(eng, "star", 2, L, B, (sim_sharing)sh, rto);
            losses ls = {.eng = eng};
            sim_net_set_loss_hook(net, on_loss, &ls);
            rec r = {0};
            sim_err err;
            cr_assert_eq(sim_net_send(net, 0, 1, S, on_rec, &r, 0, &err), 0, "%s", err.msg);
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
Test(net_down, send_on_a_cut_path_and_propagating_messages)
{
    const double B = 1e8, L = 0.01, rto = 0.5;
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk(eng, "star", 2, L, B, SIM_SHARE_FAIR, rto);
    sim_err err;
    rec r = {0};
    /* 1e5 bytes drain in 1 ms; the link goes down at 5 ms, mid-propagation */
    cr_assert_eq(sim_net_send(net, 0, 1, 1e5, on_rec, &r, 0, &err), 0, "%s", err.msg);
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
    cr_assert_eq(sim_net_send(net, 0, 1, 1e5, on_rec, &r, 1, &err), 0, "%s", err.msg);
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
    net = mk(eng, "star", 2, L, B, SIM_SHARE_NONE, rto);
    r = (rec){0};
    cr_assert_eq(sim_net_link_set_down(net, 0, 2, 1, &err), 0);
    cr_assert_eq(sim_net_send(net, 0, 1, 1e5, on_rec, &r, 0, &err), 0, "%s", err.msg);
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
Test(net_down, a_message_retries_while_the_link_stays_down)
{
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk(eng, "star", 2, 1e-6, 1e8, SIM_SHARE_FAIR, 0.25);
    sim_err err;
    rec r = {0};
    cr_assert_eq(sim_net_link_set_down(net, 1, 2, 1, &err), 0);
    cr_assert_eq(sim_net_send(net, 0, 1, 1e3, on_rec, &r, 0, &err), 0, "%s", err.msg);
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
Test(net_down, routes_go_around_a_down_link)
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
            rec r = {0};
            int hops = 0;
            cr_assert_eq(sim_net_route_info(net, 0, 1, NULL, &hops, NULL), 0);
            cr_assert_eq(hops, 1);
            /* in flight when 0-1 goes down at td */
            cr_assert_eq(sim_net_send(net, 0, 1, S, on_rec, &r, 0, &err), 0, "%s", err.msg);
            link_ev down = {net, 1, 0, 1};
            at(eng, td, &down);
            while (sim_engine_now(eng) < sim_time_from_s(td) && sim_engine_step(eng))
                ;
            cr_assert_eq(sim_net_route_info(net, 0, 1, NULL, &hops, NULL), 0);
            cr_assert_eq(hops, 5);
            /* sent after the link is down: the long way at once */
            double t1 = sim_time_to_s(sim_engine_now(eng));
            cr_assert_eq(sim_net_send(net, 0, 1, S, on_rec, &r, 1, &err), 0, "%s", err.msg);
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
Test(net_down, the_flow_sharing_a_link_with_a_lost_one_speeds_up_at_once)
{
    const double S = 1e6, B = 1e8, L = 1e-5, td = 0.004, rto = 1.0;
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk(eng, "star", 3, L, B, SIM_SHARE_FAIR, rto);
    sim_err err;
    rec r = {0};
    cr_assert_eq(sim_net_send(net, 0, 2, S, on_rec, &r, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(sim_net_send(net, 1, 2, S, on_rec, &r, 1, &err), 0, "%s", err.msg);
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
Test(net_down, errors)
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
    rec r = {0};
    cr_assert_eq(sim_net_send(net, 0, 2, 10, on_rec, &r, 0, &err), SIM_EINPUT);
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
Test(net_down, ecmp_spreads_over_the_up_paths_only)
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
        rec r = {0};
        for (int k = 0; k < MAXMSG; k++)
            cr_assert_eq(sim_net_send(net, 0, 15, S, on_rec, &r, (uint64_t)k, &err), 0, "%s",
                         err.msg);
        for (int k = MAXMSG; k < 64; k++)
            cr_assert_eq(sim_net_send(net, 0, 15, S, NULL, NULL, 0, &err), 0, "%s", err.msg);
        run_all(eng);
        cr_assert_eq(r.n, MAXMSG);
        for (int k = 0; k < MAXMSG; k++)
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
