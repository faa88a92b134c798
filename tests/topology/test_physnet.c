/* Physical networks: sizes and routes of torus and fat-tree networks,
 * fixed-size networks keeping their extra hosts, file networks with host
 * marks and per-link latency and bandwidth, the refusal of hosts that are
 * not all connected, and the error paths. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sim/engine.h"
#include "sim/network.h"
#include "tests/common.h"
#include "topology/graph.h"
#include "topology/physnet.h"

static void build_ok(topo_physnet *pn, const char *spec, int hosts)
{
    sim_err err = {0};
    cr_assert_eq(topo_physnet_build(pn, spec, hosts, &err), 0, "%s: %s", spec, err.msg);
}

static void build_fails(const char *spec, int hosts, int code, const char *want)
{
    sim_err err = {0};
    topo_physnet pn;
    int rc = topo_physnet_build(&pn, spec, hosts, &err);
    cr_assert_eq(rc, code, "%s: rc %d (%s)", spec, rc, err.msg);
    cr_assert(strstr(err.msg, want), "%s: '%s' lacks '%s'", spec, err.msg, want);
}

static sim_net *net_of(sim_engine *eng, topo_physnet *pn, double lat, double bw)
{
    sim_net_desc d;
    sim_err err = {0};
    topo_physnet_desc(pn, lat, bw, SIM_SHARE_FAIR, &d);
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    return net;
}

static int hops(sim_net *net, int a, int b)
{
    int h = -1;
    cr_assert_eq(sim_net_route_info(net, a, b, NULL, &h, NULL), 0, "no route %d -> %d", a, b);
    return h;
}

Test(physnet, registry_lists_every_kind)
{
    const char *want[] = {"star", "ring", "torus", "complete", "fat_tree", "ideal", "file"};
    for (int k = 0; k < 7; k++) {
        int found = 0;
        for (int i = 0; topo_physnet_registry[i]; i++)
            found |= strcmp(topo_physnet_registry[i]->name, want[k]) == 0;
        cr_assert(found, "%s missing", want[k]);
    }
}

Test(physnet, torus)
{
    topo_physnet pn;
    build_ok(&pn, "torus(4, 4)", 16);
    cr_assert_eq(pn.n_hosts, 16);
    cr_assert_eq(igraph_vcount(&pn.graph), 16);
    cr_assert_eq(igraph_ecount(&pn.graph), 32);
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = net_of(eng, &pn, 1e-6, 1e9);
    /* host (a, b) = 4a + b; hop distance = torus Manhattan distance */
    for (int x = 0; x < 16; x++)
        for (int y = 0; y < 16; y++) {
            int da = abs(x / 4 - y / 4), db = abs(x % 4 - y % 4);
            da = da < 4 - da ? da : 4 - da;
            db = db < 4 - db ? db : 4 - db;
            cr_assert_eq(hops(net, x, y), da + db, "%d -> %d", x, y);
        }
    sim_net_destroy(net);
    sim_engine_destroy(eng);
    topo_physnet_release(&pn);

    /* fewer workers than hosts: all 16 kept, the extra hosts idle */
    build_ok(&pn, "torus(4, 4)", 10);
    cr_assert_eq(pn.n_hosts, 16);
    topo_physnet_release(&pn);
    build_fails("torus(4, 4)", 17, SIM_ECONFIG, "has 16 hosts, fewer than the 17 needed");
    build_fails("torus(4)", 4, SIM_ECONFIG, "torus(rows, columns)");
}

Test(physnet, fat_tree_4)
{
    topo_physnet pn;
    build_ok(&pn, "fat_tree(4)", 16);
    cr_assert_eq(pn.n_hosts, 16);
    /* 16 hosts + 8 edge + 8 aggregation + 4 core switches; 16 + 16 + 16 links */
    cr_assert_eq(igraph_vcount(&pn.graph), 36);
    cr_assert_eq(igraph_ecount(&pn.graph), 48);
    igraph_vector_int_t deg;
    igraph_vector_int_init(&deg, 0);
    igraph_degree(&pn.graph, &deg, igraph_vss_all(), IGRAPH_ALL, 1);
    for (int v = 0; v < 36; v++)
        cr_assert_eq(VECTOR(deg)[v], v < 16 ? 1 : 4, "vertex %d degree %ld", v, (long)VECTOR(deg)[v]);
    igraph_vector_int_destroy(&deg);

    sim_engine *eng = sim_engine_create(0);
    sim_net *net = net_of(eng, &pn, 1e-6, 1e9);
    for (int a = 0; a < 16; a++)
        for (int b = 0; b < 16; b++) {
            int want = a == b ? 0 : a / 2 == b / 2 ? 2 : a / 4 == b / 4 ? 4 : 6;
            int h = hops(net, a, b);
            cr_assert_eq(h, want, "%d -> %d: %d links, want %d", a, b, h, want);
        }
    double lat;
    sim_net_route_info(net, 0, 15, &lat, NULL, NULL);
    cr_assert(fabs(lat - 6e-6) < 1e-12);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
    topo_physnet_release(&pn);

    /* 5 workers plus a server on a fat tree: 16 hosts, the server is host 5 */
    build_ok(&pn, "fat_tree(4)", 6);
    cr_assert_eq(pn.n_hosts, 16);
    topo_physnet_release(&pn);
    build_ok(&pn, "fat_tree(6)", 54);
    cr_assert_eq(pn.n_hosts, 54);
    cr_assert_eq(igraph_vcount(&pn.graph), 54 + 18 + 18 + 9);
    topo_physnet_release(&pn);
    build_fails("fat_tree(4)", 17, SIM_ECONFIG, "has 16 hosts, fewer than the 17 needed");
    build_fails("fat_tree(3)", 4, SIM_ECONFIG, "k must be even");
    build_fails("fat_tree", 4, SIM_ECONFIG, "fat_tree(k)");
}

static const char *net_graphml =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n"
    "  <key id=\"h\" for=\"node\" attr.name=\"host\" attr.type=\"int\"/>\n"
    "  <key id=\"l\" for=\"edge\" attr.name=\"latency\" attr.type=\"double\"/>\n"
    "  <key id=\"b\" for=\"edge\" attr.name=\"bandwidth\" attr.type=\"string\"/>\n"
    "  <graph id=\"G\" edgedefault=\"undirected\">\n"
    "    <node id=\"sw\"><data key=\"h\">0</data></node>\n"
    "    <node id=\"a\"><data key=\"h\">1</data></node>\n"
    "    <node id=\"b\"><data key=\"h\">1</data></node>\n"
    "    <node id=\"c\"><data key=\"h\">1</data></node>\n"
    "    <edge source=\"a\" target=\"sw\"><data key=\"l\">0.001</data></edge>\n"
    "    <edge source=\"b\" target=\"sw\"><data key=\"b\">1Gbps</data></edge>\n"
    "    <edge source=\"c\" target=\"sw\"/>\n"
    "  </graph>\n"
    "</graphml>\n";

Test(physnet, file_graphml_with_attributes)
{
    const char *dir = test_tmpdir();
    char spec[4200];
    snprintf(spec, sizeof spec, "file(%s)", test_write_file(dir, "net.graphml", net_graphml));
    topo_physnet pn;
    build_ok(&pn, spec, 3);
    cr_assert_eq(pn.n_hosts, 3);
    cr_assert_eq(igraph_vcount(&pn.graph), 4);
    /* the switch (first in the file) is renumbered after the hosts */
    igraph_vector_int_t deg;
    igraph_vector_int_init(&deg, 0);
    igraph_degree(&pn.graph, &deg, igraph_vss_all(), IGRAPH_ALL, 1);
    cr_assert_eq(VECTOR(deg)[3], 3);
    igraph_vector_int_destroy(&deg);

    sim_engine *eng = sim_engine_create(0);
    sim_net *net = net_of(eng, &pn, 5e-6, 1.25e9);
    double lat, bn;
    int h;
    /* host 0 = a: 1 ms link plus a default 5 us link to b (1 Gbps = 1.25e8 B/s) */
    cr_assert_eq(sim_net_route_info(net, 0, 1, &lat, &h, &bn), 0);
    cr_assert_eq(h, 2);
    cr_assert(fabs(lat - 1.005e-3) < 1e-12, "latency %.12g", lat);
    cr_assert(fabs(bn - 1.25e8) < 1e-3, "bottleneck %.6g", bn);
    /* c's link has neither attribute: the defaults */
    cr_assert_eq(sim_net_route_info(net, 2, 0, &lat, &h, &bn), 0);
    cr_assert(fabs(lat - 1.005e-3) < 1e-12);
    cr_assert(fabs(bn - 1.25e9) < 1e-3);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
    topo_physnet_release(&pn);

    char want[4300];
    snprintf(want, sizeof want, "'%s' has 3 hosts, fewer than the 4 needed", spec);
    build_fails(spec, 4, SIM_ECONFIG, want);
}

Test(physnet, file_without_host_marks)
{
    const char *dir = test_tmpdir();
    char spec[4200];
    /* a path 0 - 1 - 2 - 3 as an edge list: every vertex is a host */
    snprintf(spec, sizeof spec, "file(%s)", test_write_file(dir, "path.txt", "0 1\n1 2\n2 3\n"));
    topo_physnet pn;
    build_ok(&pn, spec, 2);
    cr_assert_eq(pn.n_hosts, 4);
    cr_assert_null(pn.latency);
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = net_of(eng, &pn, 1e-6, 1e9);
    cr_assert_eq(hops(net, 0, 3), 3);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
    topo_physnet_release(&pn);
}

Test(physnet, file_errors)
{
    const char *dir = test_tmpdir();
    char spec[4200], want[4300];
    const char *p = test_write_file(dir, "broken.graphml", "<graphml><graph><node id=\"a\"></graph>");
    snprintf(spec, sizeof spec, "file(%s)", p);
    snprintf(want, sizeof want, "%s: not a valid GraphML file", p);
    build_fails(spec, 1, SIM_EINPUT, want);

    p = test_write_file(dir, "neg.graphml",
                        "<?xml version=\"1.0\"?>\n<graphml>\n"
                        "<key id=\"l\" for=\"edge\" attr.name=\"latency\" attr.type=\"double\"/>\n"
                        "<graph edgedefault=\"undirected\"><node id=\"a\"/><node id=\"b\"/>\n"
                        "<edge source=\"a\" target=\"b\"><data key=\"l\">-1</data></edge>\n"
                        "</graph></graphml>\n");
    snprintf(spec, sizeof spec, "file(%s)", p);
    build_fails(spec, 2, SIM_EINPUT, "neg.graphml: edge 0 (a-b): latency must be a time >= 0");

    p = test_write_file(dir, "unit.graphml",
                        "<?xml version=\"1.0\"?>\n<graphml>\n"
                        "<key id=\"b\" for=\"edge\" attr.name=\"bandwidth\" attr.type=\"string\"/>\n"
                        "<graph edgedefault=\"undirected\"><node id=\"a\"/><node id=\"b\"/>\n"
                        "<edge source=\"a\" target=\"b\"><data key=\"b\">fast</data></edge>\n"
                        "</graph></graphml>\n");
    snprintf(spec, sizeof spec, "file(%s)", p);
    build_fails(spec, 2, SIM_EINPUT, "unit.graphml: edge 0: bandwidth: expected a rate");

    p = test_write_file(dir, "nohost.graphml",
                        "<?xml version=\"1.0\"?>\n<graphml>\n"
                        "<key id=\"h\" for=\"node\" attr.name=\"host\" attr.type=\"boolean\"/>\n"
                        "<graph edgedefault=\"undirected\"><node id=\"a\"><data key=\"h\">false</data></node>\n"
                        "</graph></graphml>\n");
    snprintf(spec, sizeof spec, "file(%s)", p);
    build_fails(spec, 1, SIM_EINPUT, "no vertex is marked as a host");

    snprintf(spec, sizeof spec, "file(%s/none.graphml)", dir);
    build_fails(spec, 1, SIM_EINPUT, "none.graphml: cannot open");
}

Test(physnet, file_node_id_out_of_range)
{
    /* An edge-list network naming node 399999999 is refused at its line,
     * before igraph allocates for 400 million vertices. */
    const char *dir = test_tmpdir();
    char spec[4200], want[4300];
    const char *p = test_write_file(dir, "big.txt", "0 1\n0 399999999\n");
    snprintf(spec, sizeof spec, "file(%s)", p);
    snprintf(want, sizeof want,
             "%s:2: node id 399999999 out of range: a graph or network file has ids 0..%d", p,
             TOPO_FILE_MAX_NODES - 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    build_fails(spec, 2, SIM_EINPUT, want);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_assert_lt(took, 1.0, "refusing the file took %.2f s", took);
}

Test(physnet, attribute_table_restored)
{
    /* Reading a file network must not leave igraph's attribute table set. */
    const char *dir = test_tmpdir();
    char spec[4200];
    snprintf(spec, sizeof spec, "file(%s)", test_write_file(dir, "n.graphml", net_graphml));
    topo_physnet pn;
    cr_assert_not(igraph_has_attribute_table());
    build_ok(&pn, spec, 3);
    cr_assert_not(igraph_has_attribute_table());
    topo_physnet_release(&pn);
}

Test(physnet, hosts_not_all_connected_are_refused)
{
    const char *dir = test_tmpdir();
    char spec[4200], want[4300];
    /* two islands: 0 - 1 and 2 - 3 */
    const char *p = test_write_file(dir, "net.txt", "0 1\n2 3\n");
    snprintf(spec, sizeof spec, "file(%s)", p);
    snprintf(want, sizeof want, "%s: host 0 and host 2 are not connected", p);
    build_fails(spec, 4, SIM_EINPUT, want);
    build_fails(spec, 3, SIM_EINPUT, want);
    /* only the hosts the experiment uses must be connected: the idle hosts
     * 2 and 3 of a 2-host experiment may be cut off */
    topo_physnet pn;
    build_ok(&pn, spec, 2);
    cr_assert_eq(pn.n_hosts, 4);
    topo_physnet_release(&pn);

    /* hosts joined only through a switch are connected; an isolated host is not */
    p = test_write_file(dir, "sw.graphml",
                        "<?xml version=\"1.0\"?>\n<graphml>\n"
                        "<key id=\"h\" for=\"node\" attr.name=\"host\" attr.type=\"boolean\"/>\n"
                        "<graph edgedefault=\"undirected\">\n"
                        "<node id=\"s\"><data key=\"h\">false</data></node>\n"
                        "<node id=\"a\"><data key=\"h\">true</data></node>\n"
                        "<node id=\"b\"><data key=\"h\">true</data></node>\n"
                        "<node id=\"c\"><data key=\"h\">true</data></node>\n"
                        "<edge source=\"a\" target=\"s\"/><edge source=\"b\" target=\"s\"/>\n"
                        "</graph></graphml>\n");
    snprintf(spec, sizeof spec, "file(%s)", p);
    build_ok(&pn, spec, 2);
    topo_physnet_release(&pn);
    snprintf(want, sizeof want, "%s: host 0 and host 2 are not connected", p);
    build_fails(spec, 3, SIM_EINPUT, want);

    /* the ideal network has no links and is never refused */
    build_ok(&pn, "ideal", 4);
    topo_physnet_release(&pn);
}

/* hierarchical(2, 4): hosts 0..7 (server 0: 0..3), server switches 8, 9,
 * top switch 10; inside a server 2 intra links, across servers 2 intra
 * links and the two interfaces. */
Test(physnet, hierarchical_servers)
{
    topo_physnet pn;
    build_ok(&pn, "hierarchical(2, 4)", 8);
    cr_assert_eq(pn.n_hosts, 8);
    cr_assert_eq(pn.per_node, 4);
    cr_assert_eq(igraph_vcount(&pn.graph), 11);
    cr_assert_eq(igraph_ecount(&pn.graph), 10);
    topo_physnet_set_intra(&pn, 1e-6, 100e9);
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = net_of(eng, &pn, 5e-6, 12.5e9);
    double lat = 0, bottleneck = 0;
    int h = 0;
    cr_assert_eq(sim_net_route_info(net, 1, 2, &lat, &h, &bottleneck), 0);
    cr_assert_eq(h, 2);
    cr_assert_float_eq(lat, 2e-6, 1e-15);
    cr_assert_float_eq(bottleneck, 100e9, 1);
    cr_assert_eq(sim_net_route_info(net, 3, 4, &lat, &h, &bottleneck), 0);
    cr_assert_eq(h, 4);
    cr_assert_float_eq(lat, 12e-6, 1e-15);
    cr_assert_float_eq(bottleneck, 12.5e9, 1);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
    topo_physnet_release(&pn);

    /* without set_intra the intra links take the defaults */
    build_ok(&pn, "hierarchical(3, 2)", 5);
    cr_assert_eq(pn.n_hosts, 6);
    eng = sim_engine_create(0);
    net = net_of(eng, &pn, 5e-6, 12.5e9);
    cr_assert_eq(sim_net_route_info(net, 0, 1, &lat, &h, &bottleneck), 0);
    cr_assert_float_eq(lat, 10e-6, 1e-15);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
    topo_physnet_release(&pn);

    build_fails("hierarchical(2)", 4, SIM_ECONFIG, "hierarchical(NODES, PER_NODE)");
    build_fails("hierarchical(0, 4)", 4, SIM_ECONFIG, "NODES must be an integer");
    build_fails("hierarchical(2, 4)", 9, SIM_ECONFIG, "fewer than the 9 needed");
    build_fails("dgx_a100(2, 8)", 16, SIM_ECONFIG, "expected dgx_a100(NODES)");
}

/* The server presets: GPUs per server and their intra links, which
 * set_intra leaves alone. */
Test(physnet, server_presets)
{
    static const struct {
        const char *spec;
        int hosts;
        double bw;
    } want[] = {{"dgx1_v100(2)", 16, 150e9}, {"dgx_a100(4)", 32, 300e9}, {"pcie4(2)", 8, 15.75e9}};
    for (int i = 0; i < 3; i++) {
        topo_physnet pn;
        build_ok(&pn, want[i].spec, 1);
        cr_assert_eq(pn.n_hosts, want[i].hosts);
        topo_physnet_set_intra(&pn, 1, 1);
        sim_engine *eng = sim_engine_create(0);
        sim_net *net = net_of(eng, &pn, 5e-6, 1e12);
        double bottleneck = 0;
        cr_assert_eq(sim_net_route_info(net, 0, 1, NULL, NULL, &bottleneck), 0);
        cr_assert_float_eq(bottleneck, want[i].bw, 1, "%s", want[i].spec);
        sim_net_destroy(net);
        sim_engine_destroy(eng);
        topo_physnet_release(&pn);
    }
    for (int i = 0; topo_server_at(i); i++) {
        const topo_server *s = topo_server_at(i);
        cr_assert_eq(topo_server_find(s->name), s);
        cr_assert(s->per_node > 0 && s->intra_bandwidth > 1e9 && strlen(s->source) > 40);
    }
    cr_assert_null(topo_server_find("dgx2"));
    cr_assert_null(topo_server_at(3));
}
