/* Physical networks ([network] topology): igraph graphs whose first n_hosts
 * vertices are hosts and whose remaining vertices are switches. Each kind is
 * one builder in topo_physnet_registry; a builder fills pn->graph and may
 * leave the per-edge latency/bandwidth arrays NULL (the [network] defaults
 * then apply to every link). Fixed-size kinds set pn->n_hosts to their own
 * host count. Invariant after a successful build: pn->graph is initialised,
 * undirected, and has at least pn->n_hosts >= the requested hosts vertices. */
#include "topology/physnet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <math.h>

#include "sim/path.h"
#include "sim/units.h"
#include "topology/graph.h"

/* Builds an undirected graph with n vertices from a flat edge list. */
static int graph_from_edges(topo_physnet *pn, int n, const igraph_integer_t *pairs,
                            int n_edges, sim_err *err)
{
    igraph_vector_int_t ev;
    if (igraph_vector_int_init(&ev, 2 * (igraph_integer_t)n_edges) != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_ENOMEM, "physical network: out of memory");
    for (int i = 0; i < 2 * n_edges; i++)
        VECTOR(ev)[i] = pairs[i];
    int rc = igraph_create(&pn->graph, &ev, n, IGRAPH_UNDIRECTED);
    igraph_vector_int_destroy(&ev);
    if (rc != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_EINTERNAL, "physical network: igraph_create failed: %s",
                           sim_err_library_last());
    return 0;
}

static int no_args(const char *kind, int nargs, sim_err *err)
{
    if (nargs != 0)
        return sim_err_set(err, SIM_ECONFIG, "network topology '%s' takes no arguments", kind);
    return 0;
}

/* Every host linked to one switch (vertex n_hosts): edge i = (i, switch). */
static int build_star(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                      sim_err *err)
{
    (void)args;
    int rc = no_args("star", nargs, err);
    if (rc)
        return rc;
    igraph_integer_t *pairs = malloc(sizeof *pairs * 2 * (size_t)n_hosts);
    if (!pairs)
        return sim_err_set(err, SIM_ENOMEM, "physical network: out of memory");
    for (int i = 0; i < n_hosts; i++) {
        pairs[2 * i] = i;
        pairs[2 * i + 1] = n_hosts;
    }
    rc = graph_from_edges(pn, n_hosts + 1, pairs, n_hosts, err);
    free(pairs);
    return rc;
}

/* Hosts in a cycle: edge i = (i, i+1 mod n); n = 2 gives one link, n = 1 none. */
static int build_ring(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                      sim_err *err)
{
    (void)args;
    int rc = no_args("ring", nargs, err);
    if (rc)
        return rc;
    int n_edges = n_hosts >= 3 ? n_hosts : n_hosts - 1;
    igraph_integer_t *pairs = malloc(sizeof *pairs * 2 * (size_t)(n_edges > 0 ? n_edges : 1));
    if (!pairs)
        return sim_err_set(err, SIM_ENOMEM, "physical network: out of memory");
    for (int i = 0; i < n_edges; i++) {
        pairs[2 * i] = i;
        pairs[2 * i + 1] = (i + 1) % n_hosts;
    }
    rc = graph_from_edges(pn, n_hosts, pairs, n_edges, err);
    free(pairs);
    return rc;
}

/* A link between every pair of hosts, in lexicographic (i, j), i < j order. */
static int build_complete(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                          sim_err *err)
{
    (void)args;
    int rc = no_args("complete", nargs, err);
    if (rc)
        return rc;
    size_t n_edges = (size_t)n_hosts * (size_t)(n_hosts - 1) / 2;
    igraph_integer_t *pairs = malloc(sizeof *pairs * 2 * (n_edges > 0 ? n_edges : 1));
    if (!pairs)
        return sim_err_set(err, SIM_ENOMEM, "physical network: out of memory");
    size_t k = 0;
    for (int i = 0; i < n_hosts; i++)
        for (int j = i + 1; j < n_hosts; j++) {
            pairs[2 * k] = i;
            pairs[2 * k + 1] = j;
            k++;
        }
    rc = graph_from_edges(pn, n_hosts, pairs, (int)n_edges, err);
    free(pairs);
    return rc;
}

/* Zero-cost network: isolated hosts, the network model delivers at once. */
static int build_ideal(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                       sim_err *err)
{
    (void)args;
    int rc = no_args("ideal", nargs, err);
    if (rc)
        return rc;
    rc = graph_from_edges(pn, n_hosts, NULL, 0, err);
    if (rc == 0)
        pn->ideal = 1;
    return rc;
}

static int int_arg(const char *kind, const char *s, const char *what, int64_t lo, int64_t hi,
                   int64_t *out, sim_err *err)
{
    sim_err e2;
    if (sim_parse_int(s, out, &e2) < 0 || *out < lo || *out > hi)
        return sim_err_set(err, SIM_ECONFIG,
                           "network topology '%s': %s must be an integer in %lld..%lld, got '%s'",
                           kind, what, (long long)lo, (long long)hi, s);
    return 0;
}

/* Hosts on an r x c torus, no switches: host (a, b) = a * c + b linked to
 * (a, b + 1 mod c) and (a + 1 mod r, b); a 1- or 2-wide side has no
 * duplicate links. All r * c hosts are kept. */
static int build_torus(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                       sim_err *err)
{
    if (nargs != 2)
        return sim_err_set(err, SIM_ECONFIG, "network topology 'torus': expected torus(rows, columns)");
    int64_t r, c;
    int rc;
    if ((rc = int_arg("torus", args[0], "rows", 1, 1 << 15, &r, err)) ||
        (rc = int_arg("torus", args[1], "columns", 1, 1 << 15, &c, err)))
        return rc;
    if (r * c > (1 << 24))
        return sim_err_set(err, SIM_ECONFIG, "network topology 'torus(%lld, %lld)': too many hosts",
                           (long long)r, (long long)c);
    (void)n_hosts;
    pn->n_hosts = (int)(r * c);
    igraph_integer_t *pairs = malloc(sizeof *pairs * 4 * (size_t)(r * c));
    if (!pairs)
        return sim_err_set(err, SIM_ENOMEM, "physical network: out of memory");
    int64_t k = 0;
    for (int64_t a = 0; a < r; a++)
        for (int64_t b = 0; b < c; b++) {
            pairs[k++] = a * c + b;
            pairs[k++] = a * c + (b + 1) % c;
            pairs[k++] = a * c + b;
            pairs[k++] = ((a + 1) % r) * c + b;
        }
    rc = topo_graph_from_pairs(&pn->graph, (int)(r * c), pairs, k / 2, err);
    free(pairs);
    return rc;
}

/* k-ary fat tree (k even): k pods of k/2 edge and k/2 aggregation switches,
 * (k/2)^2 core switches, k^3/4 hosts (k/2 per edge switch). Vertices: hosts
 * 0..H-1 (host h on edge switch h / (k/2)), then edge switches (pod p's e-th
 * is p*k/2 + e), aggregation switches (same numbering), core switches (the
 * a-th aggregation switch of every pod links to cores a*k/2 .. a*k/2+k/2-1).
 * Host-to-host routes: 2 links under one edge switch, 4 within a pod, 6
 * across pods (one path per pair with routing = shortest; routing = ecmp
 * spreads messages over the k/2 aggregation and (k/2)^2 core paths). */
static int build_fat_tree(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                          sim_err *err)
{
    (void)n_hosts;
    if (nargs != 1)
        return sim_err_set(err, SIM_ECONFIG, "network topology 'fat_tree': expected fat_tree(k), k even");
    int64_t k;
    int rc = int_arg("fat_tree", args[0], "k", 2, 256, &k, err);
    if (rc)
        return rc;
    if (k % 2)
        return sim_err_set(err, SIM_ECONFIG, "network topology 'fat_tree(%lld)': k must be even",
                           (long long)k);
    int64_t h = k / 2, H = k * k * k / 4, E = k * h, A = k * h, C = h * h;
    int64_t n_edges = H + k * h * h + A * h;
    igraph_integer_t *pairs = malloc(sizeof *pairs * 2 * (size_t)n_edges);
    if (!pairs)
        return sim_err_set(err, SIM_ENOMEM, "physical network: out of memory");
    int64_t q = 0;
    for (int64_t x = 0; x < H; x++) {
        pairs[q++] = x;
        pairs[q++] = H + x / h;
    }
    for (int64_t p = 0; p < k; p++)
        for (int64_t e = 0; e < h; e++)
            for (int64_t a = 0; a < h; a++) {
                pairs[q++] = H + p * h + e;
                pairs[q++] = H + E + p * h + a;
            }
    for (int64_t p = 0; p < k; p++)
        for (int64_t a = 0; a < h; a++)
            for (int64_t j = 0; j < h; j++) {
                pairs[q++] = H + E + p * h + a;
                pairs[q++] = H + E + A + a * h + j;
            }
    pn->n_hosts = (int)H;
    rc = graph_from_edges(pn, (int)(H + E + A + C), pairs, (int)n_edges, err);
    free(pairs);
    return rc;
}

/* Multi-GPU servers. Server presets: the links inside one server, modelled
 * as every GPU on a server switch with a link of the GPU's own bandwidth
 * (an upper bound for the hybrid cube-mesh of the DGX-1, exact in kind for
 * the NVSwitch of the DGX A100). Latencies are assumptions (NVLink and PCIe
 * hops of about a microsecond), bandwidths per direction from the sources. */
static const topo_server topo_server_table[] = {
    {"dgx1_v100", 8, 1e-6, 150e9,
     "NVIDIA DGX-1 with Tesla V100 System Architecture (WP-08437-002): 8 V100 SXM2, 6 NVLink "
     "2.0 links of 25 GB/s per direction per GPU; network 4 x 100 Gb/s EDR InfiniBand"},
    {"dgx_a100", 8, 1e-6, 300e9,
     "NVIDIA DGX A100 System Architecture (2020): 8 A100 SXM4 on 6 NVSwitches, 12 NVLink 3.0 "
     "links of 25 GB/s per direction per GPU (600 GB/s both ways); network 8 x 200 Gb/s HDR "
     "InfiniBand"},
    {"pcie4", 4, 2e-6, 15.75e9,
     "a server of 4 GPUs on PCIe 3.0 x16 (8 GT/s x 16 lanes x 128/130 = 15.75 GB/s per "
     "direction per GPU) behind one PCIe switch; network e.g. 25 Gb/s Ethernet"},
    {NULL, 0, 0, 0, NULL},
};

const topo_server *topo_server_find(const char *name)
{
    for (int i = 0; name && topo_server_table[i].name; i++)
        if (strcasecmp(topo_server_table[i].name, name) == 0)
            return &topo_server_table[i];
    return NULL;
}

const topo_server *topo_server_at(int i)
{
    return i >= 0 && i < (int)(sizeof topo_server_table / sizeof topo_server_table[0]) - 1
               ? &topo_server_table[i]
               : NULL;
}

/* nodes servers of per_node GPUs: GPU h (host h = server * per_node + local)
 * is linked to its server switch (vertex H + h / per_node) by edge h, an
 * intra-server link; server switch s to the top switch (vertex H + nodes)
 * by edge H + s, the server's network interface ([network] latency and
 * bandwidth). Intra links carry intra_lat / intra_bw when those are > 0
 * (a preset, or topo_physnet_set_intra), else the defaults. */
static int build_servers(topo_physnet *pn, int64_t nodes, int64_t per_node, double intra_lat,
                         double intra_bw, sim_err *err)
{
    int64_t H = nodes * per_node, m = H + nodes;
    igraph_integer_t *pairs = malloc(sizeof *pairs * 2 * (size_t)m);
    pn->latency = malloc(sizeof *pn->latency * (size_t)m);
    pn->bandwidth = malloc(sizeof *pn->bandwidth * (size_t)m);
    pn->latency_file = malloc(sizeof *pn->latency_file * (size_t)m);
    pn->bandwidth_file = malloc(sizeof *pn->bandwidth_file * (size_t)m);
    if (!pairs || !pn->latency || !pn->bandwidth || !pn->latency_file || !pn->bandwidth_file) {
        free(pairs);
        return sim_err_set(err, SIM_ENOMEM, "physical network: out of memory");
    }
    for (int64_t h = 0; h < H; h++) {
        pairs[2 * h] = h;
        pairs[2 * h + 1] = H + h / per_node;
    }
    for (int64_t s = 0; s < nodes; s++) {
        pairs[2 * (H + s)] = H + s;
        pairs[2 * (H + s) + 1] = H + nodes;
    }
    for (int64_t e = 0; e < m; e++) {
        pn->latency_file[e] = e < H && intra_lat > 0 ? intra_lat : NAN;
        pn->bandwidth_file[e] = e < H && intra_bw > 0 ? intra_bw : NAN;
    }
    pn->n_hosts = (int)H;
    pn->per_node = (int)per_node;
    int rc = graph_from_edges(pn, (int)(H + nodes + 1), pairs, (int)m, err);
    free(pairs);
    return rc;
}

static int build_hierarchical(topo_physnet *pn, int n_hosts, const char *const *args,
                              int nargs, sim_err *err)
{
    (void)n_hosts;
    if (nargs != 2)
        return sim_err_set(err, SIM_ECONFIG, "network topology 'hierarchical': expected "
                                             "hierarchical(NODES, PER_NODE)");
    int64_t nodes, per;
    int rc = int_arg("hierarchical", args[0], "NODES", 1, 65536, &nodes, err);
    if (rc == 0)
        rc = int_arg("hierarchical", args[1], "PER_NODE", 1, 65536, &per, err);
    if (rc == 0 && nodes * per > 65536)
        rc = sim_err_set(err, SIM_ECONFIG, "network topology 'hierarchical(%lld, %lld)': at "
                                           "most 65536 GPUs", (long long)nodes, (long long)per);
    return rc ? rc : build_servers(pn, nodes, per, 0, 0, err);
}

/* A server preset NAME(NODES). */
static int build_preset(const char *name, topo_physnet *pn, const char *const *args, int nargs,
                        sim_err *err)
{
    const topo_server *sv = topo_server_find(name);
    if (nargs != 1)
        return sim_err_set(err, SIM_ECONFIG, "network topology '%s': expected %s(NODES)", name,
                           name);
    int64_t nodes;
    int rc = int_arg(name, args[0], "NODES", 1, 65536 / sv->per_node, &nodes, err);
    return rc ? rc
              : build_servers(pn, nodes, sv->per_node, sv->intra_latency, sv->intra_bandwidth,
                              err);
}

static int build_dgx1(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                      sim_err *err)
{
    (void)n_hosts;
    return build_preset("dgx1_v100", pn, args, nargs, err);
}

static int build_dgx_a100(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                          sim_err *err)
{
    (void)n_hosts;
    return build_preset("dgx_a100", pn, args, nargs, err);
}

static int build_pcie4(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                       sim_err *err)
{
    (void)n_hosts;
    return build_preset("pcie4", pn, args, nargs, err);
}

void topo_physnet_set_intra(topo_physnet *pn, double latency, double bandwidth)
{
    if (pn->per_node <= 0 || !pn->latency_file || !pn->bandwidth_file)
        return;
    for (int e = 0; e < pn->n_hosts; e++) {
        if (isnan(pn->latency_file[e]))
            pn->latency_file[e] = latency;
        if (isnan(pn->bandwidth_file[e]))
            pn->bandwidth_file[e] = bandwidth;
    }
}

static int build_file(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                      sim_err *err)
{
    (void)n_hosts;
    if (nargs != 1)
        return sim_err_set(err, SIM_ECONFIG, "network topology 'file': expected file(NET.graphml)");
    return topo_physnet_read_file(pn, args[0], err);
}

static const topo_physnet_vt physnet_star = {
    "star", "", "every host on one switch (a host-to-host route is 2 links)", build_star};
static const topo_physnet_vt physnet_ring = {
    "ring", "", "hosts in a cycle, no switches", build_ring};
static const topo_physnet_vt physnet_complete = {
    "complete", "", "a dedicated link between every pair of hosts", build_complete};
static const topo_physnet_vt physnet_ideal = {
    "ideal", "", "zero latency, infinite bandwidth", build_ideal};
static const topo_physnet_vt physnet_torus = {
    "torus", "(r, c)", "r x c hosts on a 2-D torus, no switches (all r x c hosts kept)",
    build_torus};
static const topo_physnet_vt physnet_fat_tree = {
    "fat_tree", "(k)",
    "k-ary fat tree (k even): k^3/4 hosts, k^2/2 edge + k^2/2 aggregation + k^2/4 core "
    "switches; routes of 2, 4 or 6 links",
    build_fat_tree};
static const topo_physnet_vt physnet_file = {
    "file", "(NET.graphml)",
    "GraphML network: vertex attribute host = 1 marks hosts (else all are hosts); edge "
    "attributes latency (s) and bandwidth (bytes/s) override the defaults",
    build_file};

static const topo_physnet_vt physnet_hierarchical = {
    "hierarchical", "(NODES, PER_NODE)",
    "NODES servers of PER_NODE GPUs: each GPU on its server's switch by an intra link "
    "(intra_latency, intra_bandwidth), each server on one top switch by its network "
    "interface (latency, bandwidth)",
    build_hierarchical};
static const topo_physnet_vt physnet_dgx1 = {
    "dgx1_v100", "(NODES)",
    "hierarchical(NODES, 8) with NVLink 2.0 links of 150 GB/s per GPU (dtsim list networks)",
    build_dgx1};
static const topo_physnet_vt physnet_dgx_a100 = {
    "dgx_a100", "(NODES)",
    "hierarchical(NODES, 8) with NVSwitch links of 300 GB/s per GPU (dtsim list networks)",
    build_dgx_a100};
static const topo_physnet_vt physnet_pcie4 = {
    "pcie4", "(NODES)",
    "hierarchical(NODES, 4) with PCIe 3.0 x16 links of 15.75 GB/s per GPU",
    build_pcie4};

const topo_physnet_vt *const topo_physnet_registry[] = {
    &physnet_star,
    &physnet_ring,
    &physnet_complete,
    &physnet_ideal,
    &physnet_torus,
    &physnet_fat_tree,
    &physnet_file,
    &physnet_hierarchical,
    &physnet_dgx1,
    &physnet_dgx_a100,
    &physnet_pcie4,
    NULL,
};

/* Every host the experiment uses (0..n_hosts-1) must reach every other:
 * the first host outside host 0's component is named, with the file for
 * file(...) networks (SIM_EINPUT) or the spec for built-in ones. */
static int check_connected(const topo_physnet *pn, int n_hosts, const char *what, int code,
                           sim_err *err)
{
    if (pn->ideal || n_hosts < 2)
        return 0;
    igraph_vector_int_t membership;
    if (igraph_vector_int_init(&membership, 0) != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", what);
    int rc = 0;
    if (igraph_connected_components(&pn->graph, &membership, NULL, NULL, IGRAPH_WEAK) !=
        IGRAPH_SUCCESS) {
        rc = sim_err_set(err, SIM_EINTERNAL, "%s: connected components: %s", what,
                         sim_err_library_last());
    } else {
        igraph_integer_t c0 = VECTOR(membership)[0];
        for (int h = 1; h < n_hosts; h++)
            if (VECTOR(membership)[h] != c0) {
                rc = sim_err_set(err, code,
                                 "%s: host %d and host %d are not connected (no path between "
                                 "them); every worker and server host must reach every other",
                                 what, 0, h);
                break;
            }
    }
    igraph_vector_int_destroy(&membership);
    return rc;
}

static void known_list(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; topo_physnet_registry[i] && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "",
                         topo_physnet_registry[i]->name);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

int topo_physnet_build(topo_physnet *pn, const char *spec, int n_hosts, sim_err *err)
{
    return topo_physnet_build_in(pn, spec, NULL, n_hosts, err);
}

int topo_physnet_build_in(topo_physnet *pn, const char *spec, const char *dir, int n_hosts,
                          sim_err *err)
{
    memset(pn, 0, sizeof *pn);
    if (n_hosts < 1)
        return sim_err_set(err, SIM_ECONFIG, "network topology '%s': need at least 1 host, got %d",
                           spec ? spec : "", n_hosts);
    sim_spec sp;
    int rc = sim_spec_parse(spec ? spec : "", &sp, err);
    if (rc)
        return rc;
    const topo_physnet_vt *vt = NULL;
    for (int i = 0; topo_physnet_registry[i]; i++)
        if (strcmp(topo_physnet_registry[i]->name, sp.name) == 0) {
            vt = topo_physnet_registry[i];
            break;
        }
    if (!vt) {
        char known[512];
        char hint[96];
        known_list(known, sizeof known);
        return sim_err_set(err, SIM_ECONFIG, "unknown network topology '%s' (%sknown: %s)",
                           sp.name, sim_suggest(sp.name, known, hint, sizeof hint),
                           known);
    }
    const char *argv[SIM_SPEC_MAX_ARGS];
    for (int i = 0; i < sp.nargs; i++)
        argv[i] = sp.args[i];
    char path[SIM_PATH_MAX];
    if (vt == &physnet_file && sp.nargs >= 1 && sp.args[0][0]) {
        if ((rc = sim_path_resolve(dir, sp.args[0], path, sizeof path, err)))
            return rc;
        argv[0] = path;
    }
    pn->n_hosts = n_hosts;
    rc = vt->build(pn, n_hosts, argv, sp.nargs, err);
    if (rc == 0 && pn->n_hosts < n_hosts)
        rc = sim_err_set(err, SIM_ECONFIG,
                         "network topology '%s' has %d hosts, fewer than the %d needed (one per "
                         "worker, plus one for a parameter server if the algorithm uses it)",
                         spec, pn->n_hosts, n_hosts);
    if (rc == 0) {
        int is_file = vt == &physnet_file;
        char what[600];
        snprintf(what, sizeof what, is_file ? "%s" : "network topology '%s'",
                 is_file ? argv[0] : spec);
        rc = check_connected(pn, n_hosts, what, is_file ? SIM_EINPUT : SIM_ECONFIG, err);
    }
    if (rc) {
        /* A builder that failed may have created the graph before failing. */
        topo_physnet_release(pn);
        return rc;
    }
    return 0;
}

void topo_physnet_release(topo_physnet *pn)
{
    if (!pn)
        return;
    /* igraph_t has no "unset" marker; an initialised graph has its vector
     * storage allocated, a zeroed one does not. */
    if (pn->graph.from.stor_begin)
        igraph_destroy(&pn->graph);
    free(pn->latency);
    free(pn->bandwidth);
    free(pn->latency_file);
    free(pn->bandwidth_file);
    memset(pn, 0, sizeof *pn);
}

void topo_physnet_desc(const topo_physnet *pn, double default_latency, double default_bandwidth,
                       sim_sharing sharing, sim_net_desc *desc)
{
    memset(desc, 0, sizeof *desc);
    /* File values where given, the defaults elsewhere; the arrays were
     * allocated with the file values, so this cannot fail. */
    igraph_integer_t m = igraph_ecount(&pn->graph);
    if (pn->latency_file && pn->latency)
        for (igraph_integer_t e = 0; e < m; e++)
            pn->latency[e] = isnan(pn->latency_file[e]) ? default_latency : pn->latency_file[e];
    if (pn->bandwidth_file && pn->bandwidth)
        for (igraph_integer_t e = 0; e < m; e++)
            pn->bandwidth[e] =
                isnan(pn->bandwidth_file[e]) ? default_bandwidth : pn->bandwidth_file[e];
    desc->graph = &pn->graph;
    desc->n_hosts = pn->n_hosts;
    desc->latency = pn->latency;
    desc->bandwidth = pn->bandwidth;
    desc->default_latency = default_latency;
    desc->default_bandwidth = default_bandwidth;
    desc->sharing = sharing;
    desc->ideal = pn->ideal;
}
