/* Flow-level network model on a physical graph.
 *
 * The graph (igraph, undirected) has n_nodes vertices; vertices 0..n_hosts-1
 * are hosts (worker i runs on host i; extra hosts, e.g. a parameter server,
 * follow), the rest are switches. Every undirected edge is a full-duplex
 * link: two directed links, each with the edge's latency and bandwidth.
 * Messages follow hop-count shortest paths; ties are broken
 * deterministically (igraph BFS order over the edge list as built). With
 * routing = SIM_ROUTE_ECMP each message instead picks, hop by hop, one of
 * the equal-cost next hops by a fixed hash of (src, dst, message number,
 * hop): spreading over the paths of a fat tree, deterministic per run.
 * Routes are computed when first used: in closed form (walks to the
 * common ancestor) on forests such as the star, by a breadth-first search
 * that stops at the destination otherwise, and cached per host pair used;
 * memory grows with the pairs used, not with hosts squared.
 *
 * A message of s bytes sent at t0 becomes an active flow at once; it drains
 * at its current rate and is delivered at (drain time + path latency).
 * sharing = SIM_SHARE_FAIR: the active flows' rates are max-min fair over the
 * directed links they cross (progressive filling), recomputed when a flow
 * starts or ends. The rates are solved once per simulated instant (from a
 * zero-delay event after the instant's sends and ends), and only for the
 * flows whose rates can change: an incremental solver re-solves a small
 * set of flows around the changed links with the others held fixed,
 * verifies the max-min conditions on its border and grows the set until
 * they hold (docs/network.md). full_solve = 1 instead re-solves every flow
 * connected to a changed link (the reference solver; same rates).
 * sharing = SIM_SHARE_NONE: every flow drains at its path's bottleneck
 * bandwidth (pure alpha-beta). A network built with ideal = 1 delivers every
 * message at once (zero latency, infinite bandwidth). A message from a host
 * to itself is delivered at once and counts no bytes. */
#ifndef DTSIM_SIM_NETWORK_H
#define DTSIM_SIM_NETWORK_H

#include <igraph.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/engine.h"
#include "sim/err.h"

typedef struct sim_net sim_net;

typedef enum sim_sharing { SIM_SHARE_FAIR = 0, SIM_SHARE_NONE = 1 } sim_sharing;
typedef enum sim_routing { SIM_ROUTE_SHORTEST = 0, SIM_ROUTE_ECMP = 1 } sim_routing;

/* A value by message size, piecewise constant, as SimGrid's SMPI factors
 * (smpi/bw-factor): piece i covers sizes [from[i], from[i+1]) bytes, the
 * last one up to infinity; from[0] = 0 and from increases. n = 0: none. */
#define SIM_NET_BY_SIZE_MAX 32
typedef struct sim_net_by_size {
    int n;                            /* pieces; 0 = no table */
    double from[SIM_NET_BY_SIZE_MAX]; /* bytes */
    double value[SIM_NET_BY_SIZE_MAX];/* an efficiency, or an overhead in seconds */
} sim_net_by_size;

typedef enum sim_net_by_size_kind {
    SIM_BY_SIZE_EFFICIENCY = 0, /* values plain numbers in (0, 1] */
    SIM_BY_SIZE_TIME = 1        /* values times such as 5us, >= 0 (rounded to ns) */
} sim_net_by_size_kind;

typedef struct sim_net_desc {
    const igraph_t *graph;  /* borrowed; copied by sim_net_create */
    int n_hosts;            /* vertices 0..n_hosts-1 are hosts */
    const double *latency;  /* per edge id, seconds; NULL = default_latency */
    const double *bandwidth;/* per edge id, bytes/s; NULL = default_bandwidth */
    double default_latency;   /* seconds */
    double default_bandwidth; /* bytes per second */
    sim_sharing sharing;
    int ideal;              /* 1: zero-cost network (graph may be NULL) */
    sim_routing routing;    /* default (0) SIM_ROUTE_SHORTEST */
    int full_solve;         /* 1: reference max-min solver (slow); default 0 */
    double retransmit_timeout; /* seconds after a loss that the sender re-sends;
                                  <= 0: 1 s */
    /* Transport parameters (docs/network.md); zeros keep the pure model. */
    double efficiency;        /* payload fraction of a link's rate, (0, 1]; <= 0: 1 */
    double message_overhead;  /* seconds per message at its sender, before its
                                 bytes start; >= 0 */
    double collective_overhead; /* seconds per collective call (a launch), paid
                                   by each rank when it enters (collective.h) */
    sim_net_by_size efficiency_by_size; /* n > 0: the efficiency by size instead */
    sim_net_by_size overhead_by_size;   /* n > 0: message_overhead by size instead */
} sim_net_desc;

/* Called (from an engine event) when a message has fully arrived at dst. */
typedef void (*sim_net_deliver)(sim_engine *eng, void *ctx, uint64_t arg, int src,
                                int dst, double bytes);
/* Called when an attempt of a message is lost (resent = 0: a link on its
 * path went down while it drained, or no up route existed when it was
 * sent; bytes = what left src before the loss, 0 when there was no route)
 * and when a lost message is re-sent (resent = 1, bytes = its size). */
typedef void (*sim_net_loss_fn)(void *ctx, int src, int dst, double bytes, int resent);

sim_net *sim_net_create(sim_engine *eng, const sim_net_desc *desc, sim_err *err);
void sim_net_destroy(sim_net *net);

/* Sends bytes (>= 0) from host src to host dst. on_delivery(ctx, arg, ...)
 * runs at arrival. Returns 0, or a negative code (bad host, no route, no
 * memory) with err filled. */
int sim_net_send(sim_net *net, int src, int dst, double bytes, sim_net_deliver on_delivery,
                 void *ctx, uint64_t arg, sim_err *err);

/* sim_net_send that also gives the message's flow record (valid until it
 * is delivered) to *flow, for sim_net_bulk_withdraw. */
int sim_net_send_flow(sim_net *net, int src, int dst, double bytes,
                      sim_net_deliver on_delivery, void *ctx, uint64_t arg, int *flow,
                      sim_err *err);

/* Closed form of a step (net_bulk.c), for the collectives: n messages of
 * `bytes`, src[i] to dst[i], sent at one instant, alone on their links
 * (no link carries two of them, nothing else in flight), each on a route
 * with the same latency and bottleneck, deliver all at one time: the step
 * time *step = overhead + drain + latency, as the flows would give it to
 * the nanosecond. Returns 1 and fills *step when the network's state
 * allows the closed form for them (non-ideal, no link down, no trace
 * hook, single routes, bytes > 0, distinct links, equal routes); 0 when
 * the flows must be simulated. */
int sim_net_bulk_step(sim_net *net, const int *src, const int *dst, int n, double bytes,
                      sim_time *step);
/* Takes back the n messages flow[] (sent this instant by sim_net_send_flow,
 * each a src[i] to dst[i] message of the same size) when they are the only
 * traffic of the network and no other event is due before `until` (nor
 * after the run's horizon): their events are cancelled and their records
 * freed, the network's counters keep what their sends counted (*counted:
 * 1 when they had started and were counted, 0 when still in their
 * overhead). Returns 1 when taken, 0 (nothing changed) otherwise. */
int sim_net_bulk_withdraw(sim_net *net, const int *flow, int n, sim_time until, int *counted);
/* Counts what `sends` sends and `drains` drains of each of the n messages
 * src[i] -> dst[i] of `bytes` would have counted as flows, in the same
 * floating-point order (messages, host, total and link bytes). */
void sim_net_bulk_account(sim_net *net, const int *src, const int *dst, int n, double bytes,
                          int64_t sends, int64_t drains);

/* The value of table t for a message of `bytes`, or `otherwise` when t
 * has no pieces. */
double sim_net_by_size_at(const sim_net_by_size *t, double bytes, double otherwise);
/* Parses "SIZE:VALUE, SIZE:VALUE, ..." (sizes as 0, 64KiB, 1MiB, from 0
 * and increasing; values by kind), or "none" / "" for no table. Returns 0
 * or SIM_ECONFIG with a message naming the bad piece. */
int sim_net_by_size_parse(const char *text, sim_net_by_size_kind kind, sim_net_by_size *out,
                          sim_err *err);
/* The canonical text ("none", or "0B:0.5, 64KiB:0.8"; times in ns) into
 * out; returns 0, or -1 when it does not fit in len. */
int sim_net_by_size_format(const sim_net_by_size *t, sim_net_by_size_kind kind, char *out,
                           size_t len);
/* The per-collective overhead of the description (seconds). */
double sim_net_collective_overhead(const sim_net *net);

int sim_net_n_hosts(const sim_net *net);
/* The engine the network schedules on (borrowed). */
sim_engine *sim_net_engine(const sim_net *net);
int sim_net_n_links(const sim_net *net); /* directed links = 2 x edges */
/* Path latency in seconds, hop count and bottleneck bandwidth of the
 * (shortest) route between two hosts (with links down: over the up links,
 * or in the whole graph when they cut the pair; the same for
 * sim_net_route_links). Returns 0, SIM_EINPUT for a bad host
 * or no route, SIM_ENOMEM if computing the route ran out of memory. */
int sim_net_route_info(sim_net *net, int src, int dst, double *latency, int *hops,
                       double *bottleneck);
/* The directed links of the route from src to dst (the shortest route, also
 * under ECMP) into links[0..max-1]; returns the hop count (may exceed max),
 * SIM_EINPUT for a bad host or no route, SIM_ENOMEM. */
int sim_net_route_links(sim_net *net, int src, int dst, int *links, int max);
/* The bytes the shortest-route cache of a non-forest graph may hold (0:
 * the default, 64 MB): past it the cache is emptied and routes are
 * computed again when asked, so a long run over many host pairs keeps its
 * memory bounded; no route changes. */
void sim_net_set_route_budget(sim_net *net, size_t bytes);

/* Counters. */
double sim_net_bytes_sent_host(const sim_net *net, int host);   /* bytes injected by host */
double sim_net_bytes_sent_total(const sim_net *net);
/* Of those, the bytes of messages still draining that have not left host
 * (every host: host < 0) by now: the sent counters count a message whole
 * when it starts, so counter - unsent is what has been sent by now. */
double sim_net_bytes_unsent(const sim_net *net, int host);
double sim_net_bytes_link(const sim_net *net, int link);        /* bytes carried by a directed link */
/* Sets the bandwidth of every link between vertices a and b (both
 * directions) to rate bytes/s (finite, > 0) from now on, bringing it up
 * if it was down. With fair sharing
 * the flows crossing it are re-shared at once; with SIM_SHARE_NONE flows
 * in flight keep their rate and new ones see the new bottleneck. Returns 0,
 * SIM_EINPUT (bad rate, no such link), SIM_EUSAGE (ideal network) or
 * SIM_ENOMEM. */
int sim_net_link_set_rate(sim_net *net, int a, int b, double rate, sim_err *err);
/* The bandwidth of the link from a to b in bytes/s, or -1 when there is none. */
double sim_net_link_rate(const sim_net *net, int a, int b);
/* The vertices a directed link leaves from and enters (hosts first). */
int sim_net_link_ends(const sim_net *net, int link, int *from, int *to);
/* Links down. sim_net_link_set_down(net, a, b, 1) takes every link
 * between vertices a and b down (both directions): each flow still
 * draining whose path crosses one is lost at once (in send order; its
 * drain stops, the shares are re-solved; flows whose last byte has left
 * the source are delivered). Its sender re-sends the whole message
 * retransmit_timeout after the loss, as a new attempt on a route computed
 * then (counted again in bytes and messages; the delivery callback is the
 * same, so the receiver sees a late delivery). Routes avoid down links;
 * an attempt that finds no up route is lost at once with 0 bytes and
 * re-sent after another timeout. down = 0 (or sim_net_link_set_rate)
 * brings the links back; waiting re-sends still go at their timeout.
 * Counters count what was sent: a lost attempt its drained bytes (host,
 * total and link counters alike). Returns 0, SIM_EINPUT (no such link),
 * SIM_EUSAGE (ideal network) or SIM_ENOMEM. */
int sim_net_link_set_down(sim_net *net, int a, int b, int down, sim_err *err);
/* 1 when the link from a to b is down, 0 when up, -1 when there is none. */
int sim_net_link_is_down(const sim_net *net, int a, int b);
/* Called at every lost attempt and every re-send (NULL: none). */
void sim_net_set_loss_hook(sim_net *net, sim_net_loss_fn fn, void *ctx);
/* Observes transfers (timelines): start = 1 when an attempt of a message
 * of bytes from src starts draining over links[0..hops-1], start = 0 when
 * its last byte has left src or the attempt is lost (the same bytes and
 * links). Messages delivered at once (ideal network, to itself, empty)
 * are not reported. Changes nothing in the model. */
typedef void (*sim_net_trace_fn)(void *ctx, int src, int dst, double bytes, const int *links,
                                 int hops, int start);
void sim_net_set_trace_hook(sim_net *net, sim_net_trace_fn fn, void *ctx);
uint64_t sim_net_lost_messages(const sim_net *net);    /* lost attempts */
double sim_net_resent_bytes(const sim_net *net);       /* bytes of re-sent attempts */
uint64_t sim_net_messages(const sim_net *net);                  /* messages sent so far */
uint64_t sim_net_active_flows(const sim_net *net);
/* Current rate of the flows (for tests of max-min sharing): fills rates of
 * the active flows in send order, returns how many were written. Runs the
 * pending solve of the current instant first. */
int sim_net_flow_rates(sim_net *net, double *rates, int max);
/* The max-min fair rates of the active flows computed from scratch by
 * progressive filling (the reference the solver must match), in send
 * order; changes nothing. Returns how many were written, or SIM_ENOMEM. */
int sim_net_flow_rates_reference(sim_net *net, double *rates, int max);
/* Solver statistics: solves run, flows re-solved summed over the solves
 * (the solver's work), and solves that fell back to re-solving the whole
 * group of flows linked to the changes. */
void sim_net_solver_stats(const sim_net *net, uint64_t *solves, uint64_t *resolved,
                          uint64_t *fallbacks);

#endif
