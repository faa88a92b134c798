/* Routes (sim/net_route.c): the routes computed on demand are those of a
 * full breadth-first search per source (the previous route tables, rebuilt
 * here as the oracle) on every pair of several networks; a 65,536-host star
 * routes far hosts in two links and in bounded memory, and carries one
 * message per host at the alpha-beta closed form; ECMP on a fat tree
 * spreads cross-pod flows over more core links than shortest routing and
 * finishes sooner, repeatably; the route cache stays within its budget
 * and still gives the oracle's routes after it is emptied. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/engine.h"
#include "sim/net_internal.h"
#include "sim/network.h"
#include "topology/physnet.h"

static sim_net *mk(sim_engine *eng, topo_physnet *pn, const char *spec, int hosts, double lat,
                   double bw, sim_routing routing)
{
    sim_err err;
    cr_assert_eq(topo_physnet_build(pn, spec, hosts, &err), 0, "%s", err.msg);
    sim_net_desc d;
    topo_physnet_desc(pn, lat, bw, SIM_SHARE_FAIR, &d);
    d.routing = routing;
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    return net;
}

/* The previous router: a full BFS from src (vertices in BFS order, incident
 * edges in igraph's order, first discovery wins), then the walk back. */
static int oracle_route(const igraph_t *g, igraph_inclist_t *inc, int src, int dst, int *links)
{
    int nv = (int)igraph_vcount(g);
    int *pred = malloc(sizeof *pred * (size_t)nv), *queue = malloc(sizeof *queue * (size_t)nv);
    for (int v = 0; v < nv; v++)
        pred[v] = -1;
    pred[src] = -2;
    int head = 0, tail = 0;
    queue[tail++] = src;
    while (head < tail) {
        int u = queue[head++];
        igraph_vector_int_t *iv = igraph_inclist_get(inc, u);
        for (igraph_integer_t i = 0; i < igraph_vector_int_size(iv); i++) {
            igraph_integer_t e = VECTOR(*iv)[i];
            int from = (int)IGRAPH_FROM(g, e), to = (int)IGRAPH_TO(g, e);
            if (from == to)
                continue;
            int v = from == u ? to : from;
            if (pred[v] != -1)
                continue;
            pred[v] = (int)(from == u ? 2 * e : 2 * e + 1);
            queue[tail++] = v;
        }
    }
    int n = 0;
    if (pred[dst] != -1)
        for (int v = dst; pred[v] != -2;) {
            links[n++] = pred[v];
            int e = pred[v] / 2;
            v = (pred[v] & 1) ? (int)IGRAPH_TO(g, e) : (int)IGRAPH_FROM(g, e);
        }
    for (int i = 0; i < n / 2; i++) {
        int t = links[i];
        links[i] = links[n - 1 - i];
        links[n - 1 - i] = t;
    }
    int found = pred[dst] != -1;
    free(pred);
    free(queue);
    return found ? n : -1;
}

/* Asserts that the route from s to d is the oracle's. */
static void assert_oracle_route(sim_net *net, topo_physnet *pn, igraph_inclist_t *inc,
                                const char *what, int s, int d)
{
    int a[64], b[64];
    int na = sim_net_route_links(net, s, d, a, 64);
    int nb = oracle_route(&pn->graph, inc, s, d, b);
    cr_assert_eq(na, nb, "%s %d -> %d: %d vs %d hops", what, s, d, na, nb);
    for (int i = 0; i < na; i++)
        cr_assert_eq(a[i], b[i], "%s %d -> %d hop %d", what, s, d, i);
}

Test(net_route, same_routes_as_full_bfs)
{
    const char *specs[] = {"star",       "ring",        "ring",         "complete",
                           "torus(3, 4)", "torus(4, 4)", "fat_tree(4)", "torus(1, 5)"};
    const int hosts[] = {7, 8, 9, 5, 12, 16, 16, 5};
    for (int k = 0; k < 8; k++) {
        sim_engine *eng = sim_engine_create(0);
        topo_physnet pn;
        sim_net *net = mk(eng, &pn, specs[k], hosts[k], 1e-6, 1e9, SIM_ROUTE_SHORTEST);
        igraph_inclist_t inc;
        igraph_inclist_init(&pn.graph, &inc, IGRAPH_ALL, IGRAPH_LOOPS_ONCE);
        int pairs = 0;
        for (int s = 0; s < pn.n_hosts; s++)
            for (int d = 0; d < pn.n_hosts; d++) {
                if (s == d)
                    continue;
                assert_oracle_route(net, &pn, &inc, specs[k], s, d);
                pairs++;
            }
        cr_assert_eq(pairs, pn.n_hosts * (pn.n_hosts - 1));
        igraph_inclist_destroy(&inc);
        sim_net_destroy(net);
        topo_physnet_release(&pn);
        sim_engine_destroy(eng);
    }
}

/* A 256-host torus asks 65,280 routes of up to 16 links: far more than a
 * 64 kB route cache holds, so it is emptied many times; every route is
 * still the oracle's, and the cache never holds more than its budget. */
Test(net_route, route_cache_stays_within_its_budget)
{
    const size_t budget = 64 << 10;
    sim_engine *eng = sim_engine_create(0);
    topo_physnet pn;
    sim_net *net = mk(eng, &pn, "torus(16, 16)", 256, 1e-6, 1e9, SIM_ROUTE_SHORTEST);
    sim_net_set_route_budget(net, budget);
    igraph_inclist_t inc;
    igraph_inclist_init(&pn.graph, &inc, IGRAPH_ALL, IGRAPH_LOOPS_ONCE);
    int emptied = 0;
    size_t last_n = 0;
    for (int s = 0; s < pn.n_hosts; s++)
        for (int d = 0; d < pn.n_hosts; d++) {
            if (s == d)
                continue;
            assert_oracle_route(net, &pn, &inc, "torus(16, 16)", s, d);
            const route_cache *rc = &net->rc;
            size_t bytes = rc->cap * (sizeof *rc->key + sizeof *rc->off) +
                           rc->pool_cap * sizeof *rc->pool;
            cr_assert_leq(bytes, budget, "%zu bytes after %d -> %d", bytes, s, d);
            emptied += rc->n < last_n;
            last_n = rc->n;
        }
    cr_assert_gt(emptied, 10, "the cache was emptied %d times", emptied);
    igraph_inclist_destroy(&inc);
    sim_net_destroy(net);
    topo_physnet_release(&pn);
    sim_engine_destroy(eng);
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

typedef struct count {
    int n;
    sim_time last;
} count;

static void on_count(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    (void)arg;
    (void)src;
    (void)dst;
    (void)bytes;
    count *c = ctx;
    c->n++;
    c->last = sim_engine_now(eng);
}

/* 65,536 hosts on one switch (edge i = host i - switch): the route between
 * any two hosts is host i's uplink then host j's downlink, computed without
 * per-source tables (they would take (n+1)^2 x 4 bytes = 17 GB). */
Test(net_route, star_65536_hosts_bounded_memory)
{
    const int n = 65536;
    const double L = 5e-6, B = 1.25e9, S = 1e6;
    sim_engine *eng = sim_engine_create(0);
    topo_physnet pn;
    sim_net *net = mk(eng, &pn, "star", n, L, B, SIM_ROUTE_SHORTEST);
    const int pairs[3][2] = {{10503, 10504}, {0, 65535}, {65535, 1}};
    for (int k = 0; k < 3; k++) {
        int s = pairs[k][0], d = pairs[k][1], links[4];
        cr_assert_eq(sim_net_route_links(net, s, d, links, 4), 2);
        int up = IGRAPH_FROM(&pn.graph, s) == s ? 2 * s : 2 * s + 1;
        int down = IGRAPH_FROM(&pn.graph, d) == n ? 2 * d : 2 * d + 1;
        cr_assert_eq(links[0], up);
        cr_assert_eq(links[1], down);
        int from, to;
        cr_assert_eq(sim_net_link_ends(net, links[0], &from, &to), 0);
        cr_assert(from == s && to == n);
        cr_assert_eq(sim_net_link_ends(net, links[1], &from, &to), 0);
        cr_assert(from == n && to == d);
    }
    long before = rss_kb();
    for (int s = 0; s < n; s++) {
        double lat;
        int hops;
        cr_assert_eq(sim_net_route_info(net, s, (s + n / 2 + 1) % n, &lat, &hops, NULL), 0);
        cr_assert_eq(hops, 2);
    }
    long grown = rss_kb() - before;
    cr_assert_lt(grown, 16 * 1024, "routing every host grew the RSS by %ld kB", grown);

    /* One message per host to the next, all at once: 2 alpha + S/B each. */
    count c = {0};
    sim_err err;
    for (int s = 0; s < n; s++)
        cr_assert_eq(sim_net_send(net, s, (s + 1) % n, S, on_count, &c, 0, &err), 0, "%s",
                     err.msg);
    while (sim_engine_step(eng))
        ;
    cr_assert_eq(c.n, n);
    cr_assert(fabs(sim_time_to_s(c.last) - (2 * L + S / B)) <= 1e-9);
    sim_net_destroy(net);
    topo_physnet_release(&pn);
    sim_engine_destroy(eng);
}

/* fat_tree(4): 16 hosts, pods of 4 (hosts 4p..4p+3), cores are vertices
 * 32..35. Host h sends S to host (h + 8) mod 16: 16 cross-pod flows of 6
 * links each. */
static void fat_tree_run(sim_routing routing, int *core_links, sim_time *last, double *bytes)
{
    const double L = 1e-6, B = 1e9, S = 1e6;
    sim_engine *eng = sim_engine_create(0);
    topo_physnet pn;
    sim_net *net = mk(eng, &pn, "fat_tree(4)", 16, L, B, routing);
    count c = {0};
    sim_err err;
    for (int h = 0; h < 16; h++)
        cr_assert_eq(sim_net_send(net, h, (h + 8) % 16, S, on_count, &c, 0, &err), 0, "%s",
                     err.msg);
    while (sim_engine_step(eng))
        ;
    cr_assert_eq(c.n, 16);
    *core_links = 0;
    *bytes = 0.0;
    for (int l = 0; l < sim_net_n_links(net); l++) {
        int from, to;
        sim_net_link_ends(net, l, &from, &to);
        *bytes += sim_net_bytes_link(net, l);
        if ((from >= 32 || to >= 32) && sim_net_bytes_link(net, l) > 0.0)
            (*core_links)++;
    }
    *last = c.last;
    sim_net_destroy(net);
    topo_physnet_release(&pn);
    sim_engine_destroy(eng);
}

Test(net_route, ecmp_spreads_fat_tree_flows)
{
    int core_s, core_e, core_e2;
    sim_time last_s, last_e, last_e2;
    double bytes_s, bytes_e, bytes_e2;
    fat_tree_run(SIM_ROUTE_SHORTEST, &core_s, &last_s, &bytes_s);
    fat_tree_run(SIM_ROUTE_ECMP, &core_e, &last_e, &bytes_e);
    fat_tree_run(SIM_ROUTE_ECMP, &core_e2, &last_e2, &bytes_e2);
    cr_log_info("shortest: %d core links, %.9f s; ecmp: %d core links, %.9f s", core_s,
                sim_time_to_s(last_s), core_e, sim_time_to_s(last_e));
    /* Every route is a shortest one: 6 links per flow either way. */
    cr_assert_float_eq(bytes_s, 16 * 6 * 1e6, 1e-3);
    cr_assert_float_eq(bytes_e, 16 * 6 * 1e6, 1e-3);
    /* Shortest routing sends each pod's 4 flows through one aggregation
     * switch and one core: 4 flows share each of those links, so the last
     * message arrives at 6 alpha + 4 S / B. */
    cr_assert_eq(last_s, sim_time_from_s(6 * 1e-6 + 4 * 1e6 / 1e9));
    cr_assert_eq(core_s, 8);
    cr_assert_gt(core_e, core_s);
    cr_assert_lt(last_e, last_s);
    /* Deterministic: the same hash, the same paths. */
    cr_assert_eq(core_e2, core_e);
    cr_assert_eq(last_e2, last_e);
}
