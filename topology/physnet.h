/* Physical networks: the graphs messages travel on ([network] topology).
 * A builder makes an igraph graph whose first n_hosts vertices are hosts
 * (worker i on host i, then any extra hosts such as a parameter server) and
 * whose remaining vertices are switches; each edge may carry its own latency
 * and bandwidth (else the [network] defaults apply). New kinds are one entry
 * in topo_physnet_registry.
 *
 * Fixed-size networks (torus(r, c), fat_tree(k), file(...)) keep all their
 * hosts: pn->n_hosts is then the network's host count, which may exceed the
 * hosts the experiment asked for (the extra hosts stay idle; the parameter
 * server, host n_workers, is simply the next host). A network with fewer
 * hosts than asked for is an error.
 *
 * file(NET.graphml): GraphML (or an edge list of 0-based id pairs, every
 * vertex a host). A vertex attribute `host` (numeric or boolean, nonzero =
 * host; or a string 1/true/yes) marks the hosts; without it every vertex is
 * a host. Hosts are renumbered first, in file order (host i = the i-th host
 * vertex in the file), switches after them. Edge attributes `latency`
 * (numeric seconds, or a string with a unit such as 5us) and `bandwidth`
 * (numeric bytes/s, or a string such as 10Gbps) override the defaults for
 * that link; a missing value means the default. */
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
    /* file(...) networks: the file's per-edge values, NaN where the file
     * gives none; NULL when the file has no such attribute at all.
     * topo_physnet_desc merges them with the defaults into latency/bandwidth. */
    double *latency_file, *bandwidth_file;
    int per_node;          /* servers of GPUs (hierarchical and the presets):
                              hosts per server; 0 for the other kinds */
} topo_physnet;

/* A multi-GPU server preset ([network] topology = dgx1_v100(NODES), ...):
 * the links inside one server. The server's network interface is the
 * [network] latency and bandwidth. */
typedef struct topo_server {
    const char *name;
    int per_node;           /* GPUs per server */
    double intra_latency;   /* seconds per intra-server link */
    double intra_bandwidth; /* bytes per second per GPU and direction */
    const char *source;
} topo_server;

const topo_server *topo_server_find(const char *name);
/* The i-th preset, NULL past the end. */
const topo_server *topo_server_at(int i);
/* hierarchical(...) networks: the intra-server links' latency and bandwidth
 * (seconds, bytes/s; the [network] intra_* keys). A no-op for other kinds
 * and for the presets, whose intra links are fixed. */
void topo_physnet_set_intra(topo_physnet *pn, double latency, double bandwidth);

typedef struct topo_physnet_vt {
    const char *name;
    const char *args;      /* "" or "(r, c)" */
    const char *summary;
    /* Builds the network for n_hosts hosts from the spec's arguments. */
    int (*build)(topo_physnet *pn, int n_hosts, const char *const *args, int nargs,
                 sim_err *err);
} topo_physnet_vt;

extern const topo_physnet_vt *const topo_physnet_registry[]; /* NULL-terminated */

/* Parses spec ("star", "ring", "torus(4, 4)", "fat_tree(4)", "complete",
 * "ideal", "file(NET.graphml)") and builds it for at least n_hosts hosts,
 * every one of hosts 0..n_hosts-1 connected to every other.
 * SIM_ECONFIG for an unknown kind, bad arguments or too few hosts;
 * SIM_EINPUT for a network file that cannot be read, or whose hosts are
 * not all connected (naming the file and an unreachable host pair). */
int topo_physnet_build(topo_physnet *pn, const char *spec, int n_hosts, sim_err *err);
/* The same with the file name of file(PATH) resolved against the folder
 * dir (the experiment file's, sim/path.h; NULL = the current directory):
 * topo_physnet_build is this with dir NULL. */
int topo_physnet_build_in(topo_physnet *pn, const char *spec, const char *dir, int n_hosts,
                          sim_err *err);
void topo_physnet_release(topo_physnet *pn);
/* Fills a sim_net_desc from the built network plus the defaults. For file
 * networks with per-edge values, first fills pn's latency/bandwidth arrays
 * from the file's values and these defaults (the desc borrows them). */
void topo_physnet_desc(const topo_physnet *pn, double default_latency,
                       double default_bandwidth, sim_sharing sharing, sim_net_desc *desc);

/* Reads a network file (see above) into pn (graph, n_hosts, per-edge
 * file values). SIM_EINPUT naming the file on error; nothing to release
 * then. */
int topo_physnet_read_file(topo_physnet *pn, const char *path, sim_err *err);

#endif
