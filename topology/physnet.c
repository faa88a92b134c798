/* Physical networks ([network] topology): igraph graphs whose first n_hosts
 * vertices are hosts and whose remaining vertices are switches. Each kind is
 * one builder in topo_physnet_registry; a builder fills pn->graph and may
 * leave the per-edge latency/bandwidth arrays NULL (the [network] defaults
 * then apply to every link). Invariant after a successful build: pn->graph
 * is initialised, undirected, and has at least n_hosts vertices. */
#include "topology/physnet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"

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

static const topo_physnet_vt physnet_star = {
    "star", "", "every host on one switch (a host-to-host route is 2 links)", build_star};
static const topo_physnet_vt physnet_ring = {
    "ring", "", "hosts in a cycle, no switches", build_ring};
static const topo_physnet_vt physnet_complete = {
    "complete", "", "a dedicated link between every pair of hosts", build_complete};
static const topo_physnet_vt physnet_ideal = {
    "ideal", "", "zero latency, infinite bandwidth", build_ideal};

const topo_physnet_vt *const topo_physnet_registry[] = {
    &physnet_star,
    &physnet_ring,
    &physnet_complete,
    &physnet_ideal,
    NULL,
};

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
        known_list(known, sizeof known);
        return sim_err_set(err, SIM_ECONFIG, "unknown network topology '%s' (known: %s)", sp.name,
                           known);
    }
    const char *argv[SIM_SPEC_MAX_ARGS];
    for (int i = 0; i < sp.nargs; i++)
        argv[i] = sp.args[i];
    pn->n_hosts = n_hosts;
    rc = vt->build(pn, n_hosts, argv, sp.nargs, err);
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
    memset(pn, 0, sizeof *pn);
}

void topo_physnet_desc(const topo_physnet *pn, double default_latency, double default_bandwidth,
                       sim_sharing sharing, sim_net_desc *desc)
{
    memset(desc, 0, sizeof *desc);
    desc->graph = &pn->graph;
    desc->n_hosts = pn->n_hosts;
    desc->latency = pn->latency;
    desc->bandwidth = pn->bandwidth;
    desc->default_latency = default_latency;
    desc->default_bandwidth = default_bandwidth;
    desc->sharing = sharing;
    desc->ideal = pn->ideal;
}
