/* Physical networks: the graphs messages travel on ([network] topology).
 * A builder makes an igraph graph whose first n_hosts vertices are hosts
 * (worker i on host i, then any extra hosts such as a parameter server) and
 * whose remaining vertices are switches; each edge may carry its own latency
 * and bandwidth (else the [network] defaults apply). New kinds are one entry
 * in topo_physnet_registry. */
#ifndef DTSIM_TOPO_PHYSNET_H
#define DTSIM_TOPO_PHYSNET_H

#include <igraph.h>

#include "sim/err.h"
#include "sim/network.h"

typedef struct topo_physnet {
    igraph_t graph;        /* owned */
    int n_hosts;
    int ideal;             /* 1: zero-cost network, graph has n_hosts isolated vertices */
    double *latency;       /* per edge, seconds, or NULL = defaults */
    double *bandwidth;     /* per edge, bytes/s, or NULL = defaults */
} topo_physnet;

typedef struct topo_physnet_vt {
    const char *name;
    const char *args;      /* "" or "(r, c)" */
    const char *summary;
    /* Builds the network for n_hosts hosts from the spec's arguments. */
    int (*build)(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                 sim_err *err);
} topo_physnet_vt;

extern const topo_physnet_vt *const topo_physnet_registry[]; /* NULL-terminated */

/* Parses spec ("star", "ring", "complete", "ideal", ...) and builds it for
 * n_hosts hosts. SIM_ECONFIG for an unknown kind or bad arguments. */
int topo_physnet_build(topo_physnet *pn, const char *spec, int n_hosts, sim_err *err);
void topo_physnet_release(topo_physnet *pn);
/* Fills a sim_net_desc from the built network plus the defaults. */
void topo_physnet_desc(const topo_physnet *pn, double default_latency,
                       double default_bandwidth, sim_sharing sharing, sim_net_desc *desc);

#endif
