/* Flow-level network model on a physical graph.
 *
 * The graph (igraph, undirected) has n_nodes vertices; vertices 0..n_hosts-1
 * are hosts (worker i runs on host i; extra hosts, e.g. a parameter server,
 * follow), the rest are switches. Every undirected edge is a full-duplex
 * link: two directed links, each with the edge's latency and bandwidth.
 * Messages follow hop-count shortest paths; ties are broken
 * deterministically (igraph BFS order over the edge list as built).
 *
 * A message of s bytes sent at t0 becomes an active flow at once; it drains
 * at its current rate and is delivered at (drain time + path latency).
 * sharing = SIM_SHARE_FAIR: the active flows' rates are max-min fair over the
 * directed links they cross (progressive filling), recomputed when a flow
 * starts or ends, only for the flows connected to it through shared links.
 * sharing = SIM_SHARE_NONE: every flow drains at its path's bottleneck
 * bandwidth (pure alpha-beta). A network built with ideal = 1 delivers every
 * message at once (zero latency, infinite bandwidth). A message from a host
 * to itself is delivered at once and counts no bytes. */
#ifndef DTSIM_SIM_NETWORK_H
#define DTSIM_SIM_NETWORK_H

#include <igraph.h>
#include <stdint.h>

#include "sim/engine.h"
#include "sim/err.h"

typedef struct sim_net sim_net;

typedef enum sim_sharing { SIM_SHARE_FAIR = 0, SIM_SHARE_NONE = 1 } sim_sharing;

typedef struct sim_net_desc {
    const igraph_t *graph;  /* borrowed; copied by sim_net_create */
    int n_hosts;            /* vertices 0..n_hosts-1 are hosts */
    const double *latency;  /* per edge id, seconds; NULL = default_latency */
    const double *bandwidth;/* per edge id, bytes/s; NULL = default_bandwidth */
    double default_latency;   /* seconds */
    double default_bandwidth; /* bytes per second */
    sim_sharing sharing;
    int ideal;              /* 1: zero-cost network (graph may be NULL) */
} sim_net_desc;

/* Called (from an engine event) when a message has fully arrived at dst. */
typedef void (*sim_net_deliver)(sim_engine *eng, void *ctx, uint64_t arg, int src,
                                int dst, double bytes);

sim_net *sim_net_create(sim_engine *eng, const sim_net_desc *desc, sim_err *err);
void sim_net_destroy(sim_net *net);

/* Sends bytes (>= 0) from host src to host dst. on_delivery(ctx, arg, ...)
 * runs at arrival. Returns 0, or a negative code (bad host, no route, no
 * memory) with err filled. */
int sim_net_send(sim_net *net, int src, int dst, double bytes, sim_net_deliver on_delivery,
                 void *ctx, uint64_t arg, sim_err *err);

int sim_net_n_hosts(const sim_net *net);
/* The engine the network schedules on (borrowed). */
sim_engine *sim_net_engine(const sim_net *net);
int sim_net_n_links(const sim_net *net); /* directed links = 2 x edges */
/* Path latency in seconds and hop count between two hosts (for tests and
 * closed forms). Returns negative if no route. */
int sim_net_route_info(sim_net *net, int src, int dst, double *latency, int *hops,
                       double *bottleneck);

/* Counters. */
double sim_net_bytes_sent_host(const sim_net *net, int host);   /* bytes injected by host */
double sim_net_bytes_sent_total(const sim_net *net);
double sim_net_bytes_link(const sim_net *net, int link);        /* bytes carried by a directed link */
/* Sets the bandwidth of every link between vertices a and b (both
 * directions) to rate bytes/s (finite, > 0) from now on. With fair sharing
 * the flows crossing it are re-shared at once; with SIM_SHARE_NONE flows
 * in flight keep their rate and new ones see the new bottleneck. Returns 0,
 * SIM_EINPUT (bad rate, no such link), SIM_EUSAGE (ideal network) or
 * SIM_ENOMEM. */
int sim_net_link_set_rate(sim_net *net, int a, int b, double rate, sim_err *err);
/* The bandwidth of the link from a to b in bytes/s, or -1 when there is none. */
double sim_net_link_rate(const sim_net *net, int a, int b);
/* The vertices a directed link leaves from and enters (hosts first). */
int sim_net_link_ends(const sim_net *net, int link, int *from, int *to);
uint64_t sim_net_messages(const sim_net *net);                  /* messages sent so far */
uint64_t sim_net_active_flows(const sim_net *net);
/* Current rate of the flows (for tests of max-min sharing): fills rates of
 * the active flows in send order, returns how many were written. */
int sim_net_flow_rates(const sim_net *net, double *rates, int max);

#endif
