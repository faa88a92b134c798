/* The network model's internal state, shared by its three files:
 * network.c (flows, events, counters), net_route.c (routes: forest paths,
 * a cache of the host pairs used, ECMP) and net_share.c (max-min sharing:
 * the incremental solver and the full reference solver).
 * Not a public header: only sim/net_*.c and sim/network.c include it. */
#ifndef DTSIM_SIM_NET_INTERNAL_H
#define DTSIM_SIM_NET_INTERNAL_H

#include <stddef.h>

#include "sim/network.h"

typedef struct link_ent {
    int flow; /* index in the flow pool */
    int hop;  /* position of this link on the flow's path */
} link_ent;

typedef struct net_link {
    double bw;       /* bytes per second */
    sim_time lat;    /* ns */
    double bytes;    /* bytes carried so far */
    link_ent *ent;   /* active flows crossing the link (fair sharing only) */
    int n_ent, cap_ent;
    int pending;     /* 1: in the pending seed list */
    int down;        /* 1: the link is down (carries nothing, routes avoid it) */
    uint64_t mark;   /* solver: epoch in which the link is in the touched set */
    uint64_t seen;   /* solver: pass whose load/max_rate are cached */
    double cap_rem;  /* progressive filling: capacity left, bytes/s */
    int n_unfixed;   /* progressive filling: flows not yet fixed */
    double load;     /* verification: sum of the flows' rates, bytes/s */
    double max_rate; /* verification: largest rate among the flows */
} net_link;

typedef struct net_flow {
    double bytes;      /* message size */
    double remaining;  /* link bytes still to drain as of `last` (payload / eff) */
    double eff;        /* the payload fraction of the link rate for this message */
    double rate;       /* bytes per second */
    double new_rate;   /* solver scratch; < 0 while unfixed */
    sim_time last;     /* ns */
    sim_time latency;  /* path latency, ns */
    sim_event_id ev;   /* pending drain event, 0 if none */
    int *hop_link;     /* path, in order */
    int *hop_pos;      /* index of the flow's entry in each link's array */
    int n_hops, cap_hops;
    sim_net_deliver cb;
    void *ctx;
    uint64_t arg;
    int src, dst;
    int prev, next;    /* active list, send order */
    int next_free;
    int fresh;         /* 1: sent since the last solve, no rate yet */
    int waiting;       /* 1: lost, its re-send event (ev) is pending */
    uint64_t mark;     /* solver: epoch in which the flow is in the re-solved set */
    uint64_t seen;     /* solver: pass in which it was checked */
} net_flow;

/* Routes of the host pairs used so far (shortest routing, non-forest
 * graphs): an open-addressing table of (src, dst) -> offset in a pool that
 * holds the hop count then the directed links. */
typedef struct route_cache {
    uint64_t *key;     /* (src << 32 | dst) + 1, 0 = empty slot */
    size_t *off;       /* offset of the route in pool */
    size_t cap, n;     /* slots (a power of two), routes stored */
    int *pool;
    size_t pool_n, pool_cap;
    size_t budget;     /* bytes of key, off and pool past which it is emptied */
} route_cache;

struct sim_net {
    sim_engine *eng;
    int ideal;
    sim_sharing sharing;
    sim_routing routing;
    int full_solve;
    int n_hosts, n_nodes, n_links;
    /* Transport parameters (network.h): a message of S bytes drains S / eff
     * link bytes, and starts overhead(S) after its send. */
    double efficiency;
    double msg_overhead;     /* seconds */
    double coll_overhead;    /* seconds, read by the collectives */
    sim_net_by_size eff_tab, ovh_tab;
    igraph_t graph;
    int has_graph;
    igraph_inclist_t inc;
    int has_inc;
    net_link *links;
    /* Routes (net_route.c). */
    int is_forest;       /* every component a tree: one path per pair */
    int *fo_up;          /* forest: directed link from v to its parent, -1 at a root */
    int *fo_depth, *fo_comp;
    int *queue;          /* BFS scratch, n_nodes */
    int *bfs_pred;       /* BFS scratch: arriving link, valid where stamp is current */
    uint32_t *bfs_stamp;
    uint32_t bfs_epoch;
    route_cache rc;
    int **dist;          /* ECMP: per destination host, hop distances, or NULL */
    size_t n_dist, max_dist;
    int *path;           /* route scratch, n_nodes */
    /* Flows (network.c). */
    net_flow *flows;
    int cap_flows, free_head;
    int act_head, act_tail;
    uint64_t n_active;
    uint64_t n_inflight; /* messages sent and not yet delivered */
    uint64_t *bulk_mark; /* net_bulk.c: per link, the check that used it */
    uint64_t bulk_epoch;
    double *host_bytes;
    double total_bytes;
    uint64_t messages;
    /* Links down (network.c): lost attempts and their re-sends. */
    int n_down;          /* directed links down; 0 = no check anywhere */
    sim_time rto;        /* retransmission timeout, ns */
    uint64_t lost;       /* lost attempts */
    double resent_bytes; /* bytes of the re-sent attempts */
    sim_net_loss_fn loss_fn;
    void *loss_ctx;
    sim_net_trace_fn trace_fn; /* timelines (sim_net_set_trace_hook), or NULL */
    void *trace_ctx;
    /* Solver (net_share.c). */
    int *seeds, n_seeds;     /* links whose flow set changed since the last solve */
    double pend_thr;         /* smallest rate of a flow ended since the last solve */
    int *fresh, n_fresh, cap_fresh; /* flows sent since the last solve */
    sim_event_id solve_ev;   /* pending solve event, 0 if none */
    int *xs, n_xs, cap_xs;   /* re-solved flows */
    int *ts, n_ts;           /* touched links, n_links */
    int *viol, n_viol, cap_viol;
    double *held;            /* the held rates of one link, sorted */
    int cap_held;
    uint64_t epoch, pass;
    uint64_t n_solves, n_fallbacks, n_resolved; /* statistics */
};

/* Relative tolerances. FILL_EPS: links whose fair share is within it of
 * the round's minimum saturate together. RATE_EPS: a re-solved rate that
 * moved less than it keeps the flow's drain event. SAT_EPS: a link loaded
 * to within it of its capacity is saturated (verification). */
#define FILL_EPS 1e-9
#define RATE_EPS 1e-12
#define SAT_EPS 1e-8

enum { PRED_NONE = -1, PRED_SOURCE = -2 };

/* net_route_get: the pair is connected in the graph, but only through
 * links that are down (positive: not an error code). */
#define NET_ROUTE_CUT 1

sim_time net_ns_from_s(double s);
/* The drain delay of a transfer of s seconds (saturated, never wrapped). */
sim_time net_drain_ns(double s);
void net_flow_free(sim_net *net, int i);
void net_active_unlink(sim_net *net, int i);
int net_grow_ints(int **a, int *cap, int need);
/* The vertex a directed link leaves from. */
int net_link_tail(const sim_net *net, int l);
/* net_link.c: sets the down state of every link between a and b; *changed:
 * whether any changed. Returns the number of edges found. */
int net_links_mark(sim_net *net, int a, int b, int down, int *changed);

/* net_size.c: checks and copies the transport parameters of d (efficiency,
 * overheads, tables by size); SIM_ECONFIG for a value out of range. */
int net_transport_init(sim_net *net, const sim_net_desc *d, sim_err *err);

/* net_route.c */
int net_route_init(sim_net *net);
void net_route_release(sim_net *net);
/* The route from src to dst (src != dst, both hosts): *links points into
 * net-owned storage valid until the next route call. 0, SIM_EINPUT when
 * there is no route, SIM_ENOMEM. seq picks among equal-cost paths under
 * ECMP routing (ignored otherwise; ecmp = 0 forces the shortest route). */
int net_route_get(sim_net *net, int src, int dst, int ecmp, uint64_t seq, const int **links,
                  int *n_hops);
/* With links down, net_route_get routes over the up links only and
 * returns NET_ROUTE_CUT when they do not connect the pair. */
/* The shortest route in the whole graph, down links included (into
 * net->path, not cached): what route_info reports for a cut pair. */
int net_route_get_any(sim_net *net, int src, int dst, const int **links, int *n_hops);
/* A link went down or came up: drops the cached routes and distances. */
void net_route_invalidate(sim_net *net);

/* net_share.c */
int net_share_init(sim_net *net);
void net_share_release(sim_net *net);
/* A fair-shared flow starts or ends: its links become seeds of the next
 * solve, which runs from a zero-delay event (one solve per instant). */
int net_share_flow_added(sim_net *net, int fi);
int net_share_flow_removed(sim_net *net, int fi);
/* A link's capacity changed: its flows are re-solved at the end of the
 * instant, like a flow start or end. */
int net_share_link_changed(sim_net *net, int l);
/* A fresh flow (sent this instant, not yet solved) leaves the fresh list
 * (it was lost before its first solve). */
void net_share_fresh_forget(sim_net *net, int fi);
/* Runs the pending solve now (if any). */
int net_share_flush(sim_net *net);
/* From-scratch progressive filling over all active flows into out[] (send
 * order); touches no rate. */
int net_share_reference(sim_net *net, double *out, int max);
void net_link_remove(sim_net *net, int fi);
int net_link_add(sim_net *net, int fi);
int net_schedule_drain(sim_net *net, int fi);

#endif
