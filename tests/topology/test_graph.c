/* Logical graphs: edge counts, degrees and connectivity of every builder,
 * the one-peer schedule, determinism of random graphs, file graphs
 * (edge lists and GraphML, export then import) and the error paths. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sim/rng.h"
#include "tests/common.h"
#include "topology/graph.h"

static void build_ok(topo_graph *g, const char *spec, int n, uint64_t seed)
{
    gsl_rng *r = sim_rng_create(seed, SIM_STREAM_TOPOLOGY, 0);
    sim_err err = {0};
    int rc = topo_graph_build(g, spec, n, r, &err);
    gsl_rng_free(r);
    cr_assert_eq(rc, 0, "%s (n = %d): %s", spec, n, err.msg);
}

/* Builds, expects failure with code and a message containing want. */
static void build_fails(const char *spec, int n, int code, const char *want)
{
    gsl_rng *r = sim_rng_create(1, SIM_STREAM_TOPOLOGY, 0);
    sim_err err = {0};
    topo_graph g;
    int rc = topo_graph_build(&g, spec, n, r, &err);
    gsl_rng_free(r);
    cr_assert_eq(rc, code, "%s (n = %d): rc %d, want %d (%s)", spec, n, rc, code, err.msg);
    cr_assert(strstr(err.msg, want), "%s: message '%s' lacks '%s'", spec, err.msg, want);
}

/* Every builder's invariants: CSR matches the igraph graph, sorted, simple. */
static void check_consistent(const topo_graph *g)
{
    cr_assert_eq(igraph_vcount(&g->graph), g->n);
    cr_assert_eq(igraph_ecount(&g->graph), g->n_edges);
    cr_assert_eq(g->nbr_off[g->n], 2 * g->n_edges);
    for (int i = 0; i < g->n; i++) {
        const int *nb;
        int deg = topo_graph_neighbors(g, i, &nb);
        cr_assert(deg >= g->deg_min && deg <= g->deg_max);
        for (int k = 0; k < deg; k++) {
            cr_assert(nb[k] != i, "self-loop at %d", i);
            cr_assert(k == 0 || nb[k] > nb[k - 1], "node %d: neighbours not strictly ascending", i);
            igraph_integer_t eid;
            igraph_get_eid(&g->graph, &eid, i, nb[k], IGRAPH_UNDIRECTED, 0);
            cr_assert(eid >= 0, "CSR edge %d-%d not in the graph", i, nb[k]);
        }
    }
}

static void expect(const char *spec, int n, int64_t edges, int dmin, int dmax, int connected)
{
    topo_graph g;
    build_ok(&g, spec, n, 1);
    check_consistent(&g);
    cr_assert_eq(g.n_edges, edges, "%s n=%d: %lld edges, want %lld", spec, n, (long long)g.n_edges,
                 (long long)edges);
    cr_assert_eq(g.deg_min, dmin, "%s n=%d: min degree %d, want %d", spec, n, g.deg_min, dmin);
    cr_assert_eq(g.deg_max, dmax, "%s n=%d: max degree %d, want %d", spec, n, g.deg_max, dmax);
    cr_assert_eq(g.connected, connected, "%s n=%d: connected %d", spec, n, g.connected);
    topo_graph_release(&g);
}

Test(graph, ring)
{
    expect("ring", 8, 8, 2, 2, 1);
    expect("ring", 3, 3, 2, 2, 1);
    expect("ring", 2, 1, 1, 1, 1);
    expect("ring", 1, 0, 0, 0, 1);
    topo_graph g;
    build_ok(&g, "ring", 10, 1);
    const int *nb;
    cr_assert_eq(topo_graph_neighbors(&g, 0, &nb), 2);
    cr_assert(nb[0] == 1 && nb[1] == 9);
    cr_assert_not(topo_graph_is_time_varying(&g));
    cr_assert_eq(topo_graph_period(&g), 1);
    topo_graph_release(&g);
}

Test(graph, torus)
{
    expect("torus(4, 4)", 16, 32, 4, 4, 1);
    expect("torus(3, 5)", 15, 30, 4, 4, 1);
    expect("torus(2, 2)", 4, 4, 2, 2, 1);  /* wrap-around edges coincide: a 4-cycle */
    expect("torus(1, 6)", 6, 6, 2, 2, 1);  /* a ring */
    topo_graph g;
    build_ok(&g, "torus(3, 4)", 12, 1);
    const int *nb;
    /* node (1, 2) = 6: (1, 1) = 5, (1, 3) = 7, (0, 2) = 2, (2, 2) = 10 */
    cr_assert_eq(topo_graph_neighbors(&g, 6, &nb), 4);
    cr_assert(nb[0] == 2 && nb[1] == 5 && nb[2] == 7 && nb[3] == 10);
    topo_graph_release(&g);
    build_fails("torus(4, 4)", 15, SIM_ECONFIG, "4 x 4 torus has 16 nodes, but there are 15 workers");
    build_fails("torus(4)", 4, SIM_ECONFIG, "expected torus or torus(rows, columns)");
    build_fails("torus(0, 4)", 4, SIM_ECONFIG, "rows must be an integer in 1..2^30");
}

/* Same vertices and the same neighbour lists. */
static void expect_same_graph(const char *a, const char *b, int n)
{
    topo_graph ga, gb;
    build_ok(&ga, a, n, 1);
    build_ok(&gb, b, n, 1);
    cr_assert_eq(ga.n, gb.n);
    cr_assert_eq(ga.n_edges, gb.n_edges, "%s vs %s", a, b);
    for (int i = 0; i < ga.n; i++) {
        const int *na, *nb;
        int da = topo_graph_neighbors(&ga, i, &na), db = topo_graph_neighbors(&gb, i, &nb);
        cr_assert_eq(da, db);
        cr_assert_eq(memcmp(na, nb, sizeof *na * (size_t)da), 0, "%s vs %s: node %d", a, b, i);
    }
    topo_graph_release(&ga);
    topo_graph_release(&gb);
}

/* torus without arguments: the most square r x c = n with r <= c; a prime
 * n (no r, c >= 2) is an error that names ring and torus(1, n). */
Test(graph, torus_sizes_itself)
{
    expect_same_graph("torus", "torus(4, 4)", 16);
    expect_same_graph("torus", "torus(3, 4)", 12);
    expect_same_graph("torus", "torus(2, 4)", 8);
    expect_same_graph("torus", "torus(6, 6)", 36);
    expect_same_graph("torus", "torus(5, 7)", 35);
    expect_same_graph("torus", "torus(2, 2)", 4);
    build_fails("torus", 7, SIM_ECONFIG,
                "7 workers have no factorization r x c with r, c >= 2 (use ring, or torus(1, 7))");
    build_fails("torus", 2, SIM_ECONFIG, "no factorization");
    build_fails("torus", 0, SIM_ECONFIG, "torus without arguments needs the node count");
}

Test(graph, hypercube)
{
    expect("hypercube", 16, 32, 4, 4, 1);
    expect("hypercube", 2, 1, 1, 1, 1);
    expect("hypercube", 1, 0, 0, 0, 1);
    build_fails("hypercube", 12, SIM_ECONFIG, "power-of-two number of nodes (workers), got 12");
}

Test(graph, complete_and_star)
{
    expect("complete", 7, 21, 6, 6, 1);
    expect("star", 6, 5, 1, 5, 1);
    topo_graph g;
    build_ok(&g, "star", 6, 1);
    const int *nb;
    cr_assert_eq(topo_graph_neighbors(&g, 0, &nb), 5); /* node 0 is the hub */
    cr_assert_eq(topo_graph_neighbors(&g, 3, &nb), 1);
    cr_assert_eq(nb[0], 0);
    topo_graph_release(&g);
}

Test(graph, exponential_degrees)
{
    /* n = 2^m: shifts +-1 .. +-2^(m-1), with +2^(m-1) = -2^(m-1): degree 2m - 1. */
    expect("exponential", 16, 16 * 7 / 2, 7, 7, 1);
    expect("exponential", 64, 64 * 11 / 2, 11, 11, 1);
    /* n = 12: shifts 1, 2, 4, 8 and 8 = -4 mod 12: {1, 2, 4, 8, 10, 11}, degree 6. */
    expect("exponential", 12, 36, 6, 6, 1);
    topo_graph g;
    build_ok(&g, "exponential", 16, 1);
    const int *nb;
    int want[] = {1, 2, 4, 8, 12, 14, 15};
    cr_assert_eq(topo_graph_neighbors(&g, 0, &nb), 7);
    for (int k = 0; k < 7; k++)
        cr_assert_eq(nb[k], want[k]);
    topo_graph_release(&g);
}

Test(graph, one_peer_schedule)
{
    topo_graph g;
    build_ok(&g, "one_peer_exponential", 8, 1);
    check_consistent(&g);
    cr_assert(topo_graph_is_time_varying(&g));
    cr_assert_eq(topo_graph_period(&g), 3);
    /* the union over a period is the exponential graph */
    cr_assert_eq(g.n_edges, 8 * 5 / 2);
    const int *p;
    for (int64_t t = 0; t < 7; t++)
        for (int i = 0; i < 8; i++) {
            int s = 1 << (t % 3);
            cr_assert_eq(topo_graph_in_at(&g, t, i, &p), 1);
            cr_assert_eq(p[0], (i + s) % 8, "t %lld node %d receives from %d", (long long)t, i, p[0]);
            cr_assert_eq(topo_graph_out_at(&g, t, i, &p), 1);
            cr_assert_eq(p[0], (i - s + 8) % 8);
        }
    igraph_t gt;
    sim_err err;
    cr_assert_eq(topo_graph_at(&g, 1, &gt, &err), 0, "%s", err.msg);
    cr_assert(igraph_is_directed(&gt));
    cr_assert_eq(igraph_ecount(&gt), 8);
    igraph_integer_t eid;
    igraph_get_eid(&gt, &eid, 2, 0, IGRAPH_DIRECTED, 0); /* at t = 1, node 0 receives from 2 */
    cr_assert(eid >= 0);
    igraph_destroy(&gt);
    topo_graph_release(&g);
    build_ok(&g, "one_peer_exponential", 1, 1);
    cr_assert_eq(topo_graph_in_at(&g, 5, 0, &p), 0);
    topo_graph_release(&g);
    build_fails("one_peer_exponential", 24, SIM_ECONFIG, "power-of-two number of nodes");
}

static void same_graph(const topo_graph *a, const topo_graph *b)
{
    cr_assert_eq(a->n, b->n);
    cr_assert_eq(a->n_edges, b->n_edges);
    cr_assert_eq(memcmp(a->nbr_off, b->nbr_off, sizeof *a->nbr_off * (size_t)(a->n + 1)), 0);
    cr_assert_eq(memcmp(a->nbr, b->nbr, sizeof *a->nbr * (size_t)(2 * a->n_edges)), 0);
}

static int differs(const topo_graph *a, const topo_graph *b)
{
    return a->n_edges != b->n_edges ||
           memcmp(a->nbr, b->nbr, sizeof *a->nbr * (size_t)(2 * a->n_edges)) != 0;
}

Test(graph, random_regular)
{
    topo_graph a, b, c;
    build_ok(&a, "random_regular(4)", 64, 7);
    build_ok(&b, "random_regular(4)", 64, 7);
    build_ok(&c, "random_regular(4)", 64, 8);
    check_consistent(&a);
    cr_assert_eq(a.n_edges, 128);
    cr_assert(a.deg_min == 4 && a.deg_max == 4);
    cr_assert(a.connected);
    same_graph(&a, &b);
    cr_assert(differs(&a, &c), "seeds 7 and 8 gave the same graph");
    topo_graph_release(&a);
    topo_graph_release(&b);
    topo_graph_release(&c);
    build_fails("random_regular(3)", 15, SIM_ECONFIG, "must be even");
    build_fails("random_regular(8)", 8, SIM_ECONFIG, "needs more than 8 nodes");
    build_fails("random_regular", 8, SIM_ECONFIG, "random_regular(degree)");
}

Test(graph, erdos_renyi)
{
    topo_graph a, b;
    build_ok(&a, "erdos_renyi(0.3)", 30, 3);
    build_ok(&b, "erdos_renyi(0.3)", 30, 3);
    check_consistent(&a);
    cr_assert(a.connected);
    same_graph(&a, &b);
    topo_graph_release(&a);
    topo_graph_release(&b);
    /* expected degree 0.05: practically never connected */
    build_fails("erdos_renyi(0.001)", 50, SIM_ECONFIG, "no connected graph in 100 random draws");
    build_fails("erdos_renyi(1.5)", 10, SIM_ECONFIG, "probability");
    build_fails("erdos_renyi(0)", 10, SIM_ECONFIG, "probability");
}

Test(graph, small_world)
{
    topo_graph a, b, lattice;
    build_ok(&a, "small_world(4, 0.1)", 40, 5);
    build_ok(&b, "small_world(4, 0.1)", 40, 5);
    check_consistent(&a);
    cr_assert(a.connected);
    cr_assert_eq(a.n_edges, 80); /* rewiring keeps the edge count n k / 2 */
    same_graph(&a, &b);
    /* p = 0: the ring lattice, each node linked to its 2 nearest on each side */
    build_ok(&lattice, "small_world(4, 0)", 12, 5);
    cr_assert_eq(lattice.n_edges, 24);
    const int *nb;
    cr_assert_eq(topo_graph_neighbors(&lattice, 0, &nb), 4);
    cr_assert(nb[0] == 1 && nb[1] == 2 && nb[2] == 10 && nb[3] == 11);
    topo_graph_release(&a);
    topo_graph_release(&b);
    topo_graph_release(&lattice);
    build_fails("small_world(3, 0.1)", 20, SIM_ECONFIG, "k must be even");
    build_fails("small_world(4)", 20, SIM_ECONFIG, "small_world(k, p)");
}

Test(graph, spec_errors)
{
    build_fails("moebius", 8, SIM_ECONFIG, "unknown graph 'moebius' (known: ring, torus");
    build_fails("ring(3)", 8, SIM_ECONFIG, "takes no arguments");
    build_fails("ring", -1, SIM_ECONFIG, "at least 1 node");
}

Test(graph, natural_size)
{
    /* n = 0: a torus's r x c, a file's node count, else TOPO_GRAPH_DEFAULT_N */
    topo_graph g;
    build_ok(&g, "torus(3, 5)", 0, 1);
    cr_assert_eq(g.n, 15);
    topo_graph_release(&g);
    build_ok(&g, "ring", 0, 1);
    cr_assert_eq(g.n, TOPO_GRAPH_DEFAULT_N);
    cr_assert_eq(g.n_edges, TOPO_GRAPH_DEFAULT_N);
    topo_graph_release(&g);
    const char *dir = test_tmpdir();
    char spec[4200];
    snprintf(spec, sizeof spec, "file(%s)", test_write_file(dir, "p.txt", "0 1\n1 2\n2 3\n3 4\n"));
    build_ok(&g, spec, 0, 1);
    cr_assert_eq(g.n, 5);
    topo_graph_release(&g);
}

Test(graph, edge_list_file)
{
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir);
    char path[4096], spec[4200];
    snprintf(path, sizeof path, "%s",
             test_write_file(dir, "g.txt", "# a triangle plus a tail\n0 1\n1 2  # comment\n\n2 0\n2 3\n1 0\n"));
    snprintf(spec, sizeof spec, "file(%s)", path);
    topo_graph g;
    build_ok(&g, spec, 4, 1);
    check_consistent(&g);
    cr_assert_eq(g.n_edges, 4); /* 1 0 repeats 0 1 */
    cr_assert(g.deg_min == 1 && g.deg_max == 3);
    cr_assert(g.connected);
    topo_graph_release(&g);

    char want[4300];
    snprintf(want, sizeof want, "%s: the graph has 4 nodes, but there are 5 workers", path);
    build_fails(spec, 5, SIM_EINPUT, want);

    snprintf(path, sizeof path, "%s", test_write_file(dir, "bad.txt", "0 1\n1 x\n"));
    snprintf(spec, sizeof spec, "file(%s)", path);
    snprintf(want, sizeof want, "%s:2: expected two 0-based node ids per line, got '1 x'", path);
    build_fails(spec, 2, SIM_EINPUT, want);

    snprintf(path, sizeof path, "%s", test_write_file(dir, "three.txt", "0 1 2\n"));
    snprintf(spec, sizeof spec, "file(%s)", path);
    build_fails(spec, 3, SIM_EINPUT, "three.txt:1: expected two 0-based node ids");

    snprintf(path, sizeof path, "%s", test_write_file(dir, "empty.txt", "# nothing\n"));
    snprintf(spec, sizeof spec, "file(%s)", path);
    build_fails(spec, 3, SIM_EINPUT, "empty.txt: no edges found");

    snprintf(spec, sizeof spec, "file(%s/missing.txt)", dir);
    build_fails(spec, 3, SIM_EINPUT, "missing.txt: cannot open");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

Test(graph, file_node_id_out_of_range)
{
    /* 16 bytes naming node 399999999: refused at its line before igraph
     * allocates 400 million vertices. */
    const char *dir = test_tmpdir();
    char path[4096], spec[4200], want[4300];
    snprintf(path, sizeof path, "%s", test_write_file(dir, "big.txt", "0 1\n0 399999999\n"));
    snprintf(spec, sizeof spec, "file(%s)", path);
    double t0 = now_s();
    snprintf(want, sizeof want, "%s:2: node id 399999999 out of range: 2 workers have ids 0..1", path);
    build_fails(spec, 2, SIM_EINPUT, want);
    snprintf(want, sizeof want,
             "%s:2: node id 399999999 out of range: a graph or network file has ids 0..%d", path,
             TOPO_FILE_MAX_NODES - 1);
    build_fails(spec, 0, SIM_EINPUT, want);
    cr_assert_lt(now_s() - t0, 1.0, "refusing the file took %.2f s", now_s() - t0);

    /* The bound is the worker count: ids 0..n-1. */
    snprintf(path, sizeof path, "%s", test_write_file(dir, "three.txt", "0 1\n1 2\n# end\n2 3\n"));
    snprintf(spec, sizeof spec, "file(%s)", path);
    snprintf(want, sizeof want, "%s:4: node id 3 out of range: 3 workers have ids 0..2", path);
    build_fails(spec, 3, SIM_EINPUT, want);
    topo_graph g;
    build_ok(&g, spec, 4, 1);
    cr_assert_eq(g.n_edges, 3);
    topo_graph_release(&g);

    /* GraphML declares each node: more nodes than workers is refused too. */
    snprintf(path, sizeof path, "%s",
             test_write_file(dir, "three.graphml",
                             "<?xml version=\"1.0\"?>\n<graphml><graph edgedefault=\"undirected\">"
                             "<node id=\"a\"/><node id=\"b\"/><node id=\"c\"/>"
                             "<edge source=\"a\" target=\"b\"/></graph></graphml>\n"));
    snprintf(spec, sizeof spec, "file(%s)", path);
    snprintf(want, sizeof want, "%s: the graph has 3 nodes, but there are 2 workers", path);
    build_fails(spec, 2, SIM_EINPUT, want);
}

Test(graph, malformed_graphml)
{
    const char *dir = test_tmpdir();
    char path[4096], spec[4200];
    snprintf(path, sizeof path, "%s",
             test_write_file(dir, "bad.graphml",
                             "<?xml version=\"1.0\"?>\n<graphml><graph edgedefault=\"undirected\">"
                             "<node id=\"a\"/><edge source=\"a\" target=\n"));
    snprintf(spec, sizeof spec, "file(%s)", path);
    char want[4300];
    snprintf(want, sizeof want, "%s: not a valid GraphML file", path);
    build_fails(spec, 1, SIM_EINPUT, want);
}

Test(graph, graphml_round_trip)
{
    const char *dir = test_tmpdir();
    char path[4096], spec[4200];
    topo_graph a, b;
    sim_err err;
    build_ok(&a, "random_regular(4)", 20, 11);
    snprintf(path, sizeof path, "%s/g.graphml", dir);
    cr_assert_eq(topo_graph_export(&a, path, &err), 0, "%s", err.msg);
    snprintf(spec, sizeof spec, "file(%s)", path);
    build_ok(&b, spec, 20, 1);
    same_graph(&a, &b);
    topo_graph_release(&b);

    snprintf(path, sizeof path, "%s/g.dot", dir);
    cr_assert_eq(topo_graph_export(&a, path, &err), 0, "%s", err.msg);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char buf[256] = {0};
    cr_assert(fread(buf, 1, sizeof buf - 1, f) > 0);
    fclose(f);
    cr_assert(strstr(buf, "graph"), "dot output: %s", buf);

    snprintf(path, sizeof path, "%s/g.png", dir);
    cr_assert_eq(topo_graph_export(&a, path, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, ".graphml or .dot"));
    topo_graph_release(&a);
}

Test(graph, file_disconnected_is_reported)
{
    const char *dir = test_tmpdir();
    char spec[4200];
    snprintf(spec, sizeof spec, "file(%s)", test_write_file(dir, "two.txt", "0 1\n2 3\n"));
    topo_graph g;
    build_ok(&g, spec, 4, 1);
    cr_assert_not(g.connected);
    cr_assert_eq(g.n_edges, 2);
    topo_graph_release(&g);
}
