/* Flow-level network model (see network.h for the semantics): hosts,
 * links, flows and their events. Routes live in net_route.c, link state in
 * net_link.c, max-min sharing in net_share.c; net_internal.h holds the
 * shared state.
 *
 * Links: undirected edge e of the graph is directed link 2e from
 * IGRAPH_FROM(e) to IGRAPH_TO(e) and link 2e+1 the reverse.
 * Flows live in a pool (array + free list) and are named by index; a flow's
 * hop arrays are kept when it is freed, so steady state allocates nothing.
 * Each link keeps an array of (flow, hop) entries; a flow remembers its
 * position in every link's array, so removal is a swap with the last entry.
 *
 * Fair sharing invariant (between instants): every active flow's rate is
 * the max-min fair rate, its `remaining` is exact as of `last`, and its
 * drain event is pending at last + remaining/rate. Within an instant the
 * starts and ends are collected and solved together by net_share.c. */
#include "sim/network.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net_internal.h"

sim_time net_ns_from_s(double s)
{
    if (!(s > 0.0))
        return 0;
    double ns = s * 1e9;
    if (ns >= 4e18)
        return (sim_time)4e18;
    return (sim_time)llround(ns);
}

sim_time net_drain_ns(double s)
{
    /* a transfer past the clamp of net_ns_from_s saturates: the engine
     * then fails the run (sim_engine_overflowed) instead of a wrong time */
    return s >= 4e9 ? sim_time_from_s(s) : net_ns_from_s(s);
}

int net_grow_ints(int **a, int *cap, int need)
{
    if (need <= *cap)
        return 0;
    int nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    int *p = realloc(*a, sizeof *p * (size_t)nc);
    if (!p)
        return -1;
    *a = p;
    *cap = nc;
    return 0;
}

void sim_net_destroy(sim_net *net)
{
    if (!net)
        return;
    if (net->links) {
        for (int l = 0; l < net->n_links; l++)
            free(net->links[l].ent);
        free(net->links);
    }
    if (net->flows) {
        for (int i = 0; i < net->cap_flows; i++) {
            free(net->flows[i].hop_link);
            free(net->flows[i].hop_pos);
        }
        free(net->flows);
    }
    net_route_release(net);
    net_share_release(net);
    if (net->has_inc)
        igraph_inclist_destroy(&net->inc);
    if (net->has_graph)
        igraph_destroy(&net->graph);
    free(net->host_bytes);
    free(net->bulk_mark);
    free(net);
}

static int grow_pool(sim_net *net)
{
    int nc = net->cap_flows ? 2 * net->cap_flows : 64;
    net_flow *p = realloc(net->flows, sizeof *p * (size_t)nc);
    if (!p)
        return -1;
    memset(p + net->cap_flows, 0, sizeof *p * (size_t)(nc - net->cap_flows));
    for (int i = nc - 1; i >= net->cap_flows; i--) {
        p[i].next_free = net->free_head;
        net->free_head = i;
    }
    net->flows = p;
    net->cap_flows = nc;
    return 0;
}

sim_net *sim_net_create(sim_engine *eng, const sim_net_desc *d, sim_err *err)
{
    if (!eng || !d) {
        sim_err_set(err, SIM_EINTERNAL, "network: missing engine or description");
        return NULL;
    }
    if (d->n_hosts < 1) {
        sim_err_set(err, SIM_EINPUT, "network: need at least 1 host, got %d", d->n_hosts);
        return NULL;
    }
    if (!d->ideal && !d->graph) {
        sim_err_set(err, SIM_EINPUT, "network: no graph given for a non-ideal network");
        return NULL;
    }
    if (!d->ideal && !d->latency && !(d->default_latency >= 0.0 && isfinite(d->default_latency))) {
        sim_err_set(err, SIM_ECONFIG, "network: latency must be a finite time >= 0, got %g",
                    d->default_latency);
        return NULL;
    }
    if (!d->ideal && !d->bandwidth &&
        !(d->default_bandwidth > 0.0 && isfinite(d->default_bandwidth))) {
        sim_err_set(err, SIM_ECONFIG, "network: bandwidth must be a finite rate > 0, got %g",
                    d->default_bandwidth);
        return NULL;
    }
    if (d->routing != SIM_ROUTE_SHORTEST && d->routing != SIM_ROUTE_ECMP) {
        sim_err_set(err, SIM_ECONFIG, "network: unknown routing %d", (int)d->routing);
        return NULL;
    }
    sim_net *net = calloc(1, sizeof *net);
    if (!net)
        goto nomem;
    net->eng = eng;
    net->ideal = d->ideal ? 1 : 0;
    net->sharing = d->sharing;
    net->routing = d->routing;
    net->full_solve = d->full_solve ? 1 : 0;
    net->n_hosts = d->n_hosts;
    if (net_transport_init(net, d, err)) {
        free(net);
        return NULL;
    }
    net->free_head = -1;
    net->act_head = net->act_tail = -1;
    net->pend_thr = INFINITY;
    net->rto = net_ns_from_s(d->retransmit_timeout > 0.0 ? d->retransmit_timeout : 1.0);
    net->host_bytes = calloc((size_t)d->n_hosts, sizeof *net->host_bytes);
    if (!net->host_bytes)
        goto nomem;
    if (grow_pool(net))
        goto nomem;
    if (net->ideal)
        return net;

    if (igraph_is_directed(d->graph)) {
        sim_err_set(err, SIM_EINPUT, "network: the physical graph must be undirected");
        goto fail;
    }
    igraph_integer_t nv = igraph_vcount(d->graph), ne = igraph_ecount(d->graph);
    if (nv < d->n_hosts) {
        sim_err_set(err, SIM_EINPUT, "network: graph has %ld vertices, fewer than %d hosts",
                    (long)nv, d->n_hosts);
        goto fail;
    }
    if (nv > 0x3fffffff || ne > 0x1fffffff) {
        sim_err_set(err, SIM_EINPUT, "network: graph too large (%ld vertices, %ld edges)",
                    (long)nv, (long)ne);
        goto fail;
    }
    if (igraph_copy(&net->graph, d->graph) != IGRAPH_SUCCESS)
        goto nomem;
    net->has_graph = 1;
    if (igraph_inclist_init(&net->graph, &net->inc, IGRAPH_ALL, IGRAPH_LOOPS_ONCE) !=
        IGRAPH_SUCCESS)
        goto nomem;
    net->has_inc = 1;
    net->n_nodes = (int)nv;
    net->n_links = (int)(2 * ne);
    net->links = calloc((size_t)(net->n_links ? net->n_links : 1), sizeof *net->links);
    if (!net->links)
        goto nomem;
    for (igraph_integer_t e = 0; e < ne; e++) {
        double lat = d->latency ? d->latency[e] : d->default_latency;
        double bw = d->bandwidth ? d->bandwidth[e] : d->default_bandwidth;
        if (!(lat >= 0.0 && isfinite(lat))) {
            sim_err_set(err, SIM_EINPUT, "network: edge %ld: latency must be >= 0, got %g",
                        (long)e, lat);
            goto fail;
        }
        if (!(bw > 0.0 && isfinite(bw))) {
            sim_err_set(err, SIM_EINPUT, "network: edge %ld: bandwidth must be > 0, got %g",
                        (long)e, bw);
            goto fail;
        }
        for (int k = 0; k < 2; k++) {
            net->links[2 * e + k].bw = bw;
            net->links[2 * e + k].lat = net_ns_from_s(lat);
        }
    }
    if (net_route_init(net) || net_share_init(net))
        goto nomem;
    return net;

nomem:
    sim_err_set(err, SIM_ENOMEM, "network: out of memory");
fail:
    sim_net_destroy(net);
    return NULL;
}

int net_link_tail(const sim_net *net, int l)
{
    igraph_integer_t e = l / 2;
    return (int)((l & 1) ? IGRAPH_TO(&net->graph, e) : IGRAPH_FROM(&net->graph, e));
}

static int check_hosts(const sim_net *net, int src, int dst, sim_err *err)
{
    if (src < 0 || src >= net->n_hosts || dst < 0 || dst >= net->n_hosts)
        return sim_err_set(err, SIM_EINPUT, "network: host out of range (%d -> %d, %d hosts)",
                           src, dst, net->n_hosts);
    return 0;
}

int sim_net_route_info(sim_net *net, int src, int dst, double *latency, int *hops,
                       double *bottleneck)
{
    if (check_hosts(net, src, dst, NULL))
        return SIM_EINPUT;
    sim_time lat = 0;
    int h = 0;
    double bn = INFINITY;
    if (!net->ideal && src != dst) {
        const int *path;
        int rc = net_route_get(net, src, dst, 0, 0, &path, &h);
        if (rc == NET_ROUTE_CUT)
            rc = net_route_get_any(net, src, dst, &path, &h);
        if (rc)
            return rc;
        for (int k = 0; k < h; k++) {
            const net_link *L = &net->links[path[k]];
            lat += L->lat;
            bn = fmin(bn, L->bw);
        }
    }
    if (latency)
        *latency = sim_time_to_s(lat);
    if (hops)
        *hops = h;
    if (bottleneck)
        *bottleneck = bn;
    return 0;
}

int sim_net_route_links(sim_net *net, int src, int dst, int *links, int max)
{
    if (check_hosts(net, src, dst, NULL))
        return SIM_EINPUT;
    if (net->ideal || src == dst)
        return 0;
    const int *path;
    int h;
    int rc = net_route_get(net, src, dst, 0, 0, &path, &h);
    if (rc == NET_ROUTE_CUT)
        rc = net_route_get_any(net, src, dst, &path, &h);
    if (rc)
        return rc;
    for (int k = 0; k < h && k < max; k++)
        links[k] = path[k];
    return h;
}

static int flow_alloc(sim_net *net)
{
    if (net->free_head < 0 && grow_pool(net))
        return -1;
    int i = net->free_head;
    net->free_head = net->flows[i].next_free;
    net_flow *f = &net->flows[i];
    f->n_hops = 0;
    f->ev = 0;
    f->rate = 0.0;
    f->fresh = 0;
    f->waiting = 0;
    f->prev = f->next = -1;
    return i;
}

void net_flow_free(sim_net *net, int i)
{
    net->flows[i].next_free = net->free_head;
    net->free_head = i;
}

void net_active_unlink(sim_net *net, int i)
{
    net_flow *f = &net->flows[i];
    if (f->prev >= 0)
        net->flows[f->prev].next = f->next;
    else
        net->act_head = f->next;
    if (f->next >= 0)
        net->flows[f->next].prev = f->prev;
    else
        net->act_tail = f->prev;
    f->prev = f->next = -1;
    net->n_active--;
}

static void active_append(sim_net *net, int i)
{
    net_flow *f = &net->flows[i];
    f->prev = net->act_tail;
    f->next = -1;
    if (net->act_tail >= 0)
        net->flows[net->act_tail].next = i;
    else
        net->act_head = i;
    net->act_tail = i;
    net->n_active++;
}

static void on_deliver(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)payload;
    sim_net *net = ctx;
    int i = (int)arg;
    net_flow *f = &net->flows[i];
    sim_net_deliver cb = f->cb;
    void *cctx = f->ctx;
    uint64_t carg = f->arg;
    int src = f->src, dst = f->dst;
    double bytes = f->bytes;
    /* Free first: the callback may send, and should reuse this record. */
    net_flow_free(net, i);
    net->n_inflight--;
    if (cb)
        cb(eng, cctx, carg, src, dst, bytes);
}

static void on_drain(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

int net_schedule_drain(sim_net *net, int i)
{
    net_flow *f = &net->flows[i];
    sim_time delay = net_drain_ns(f->remaining / f->rate);
    f->ev = sim_engine_schedule(net->eng, delay, on_drain, net, (uint64_t)i, NULL, NULL);
    return f->ev ? 0 : -1;
}

void net_link_remove(sim_net *net, int fi)
{
    net_flow *f = &net->flows[fi];
    for (int h = 0; h < f->n_hops; h++) {
        net_link *L = &net->links[f->hop_link[h]];
        int p = f->hop_pos[h];
        link_ent last = L->ent[--L->n_ent];
        if (p != L->n_ent) {
            L->ent[p] = last;
            net->flows[last.flow].hop_pos[last.hop] = p;
        }
    }
}

int net_link_add(sim_net *net, int fi)
{
    net_flow *f = &net->flows[fi];
    for (int h = 0; h < f->n_hops; h++) {
        net_link *L = &net->links[f->hop_link[h]];
        if (L->n_ent == L->cap_ent) {
            int nc = L->cap_ent ? 2 * L->cap_ent : 4;
            link_ent *p = realloc(L->ent, sizeof *p * (size_t)nc);
            if (!p) {
                int n = f->n_hops;
                f->n_hops = h; /* undo the hops already added */
                net_link_remove(net, fi);
                f->n_hops = n;
                return -1;
            }
            L->ent = p;
            L->cap_ent = nc;
        }
        f->hop_pos[h] = L->n_ent;
        L->ent[L->n_ent].flow = fi;
        L->ent[L->n_ent].hop = h;
        L->n_ent++;
    }
    return 0;
}

static void on_drain(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)payload;
    sim_net *net = ctx;
    int fi = (int)arg;
    net_flow *f = &net->flows[fi];
    f->ev = 0;
    f->remaining = 0.0;
    f->last = sim_engine_now(eng);
    net_active_unlink(net, fi);
    for (int h = 0; h < f->n_hops; h++)
        net->links[f->hop_link[h]].bytes += f->bytes;
    if (net->trace_fn)
        net->trace_fn(net->trace_ctx, f->src, f->dst, f->bytes, f->hop_link, f->n_hops, 0);
    sim_engine_schedule(eng, f->latency, on_deliver, net, (uint64_t)fi, NULL, NULL);
    if (net->sharing == SIM_SHARE_FAIR)
        net_share_flow_removed(net, fi);
}

/* Makes room for n hops in flow f's path arrays. */
static int flow_hops_reserve(net_flow *f, int hops)
{
    if (hops <= f->cap_hops)
        return 0;
    int nc = f->cap_hops ? f->cap_hops : 4;
    while (nc < hops)
        nc *= 2;
    int *a = realloc(f->hop_link, sizeof *a * (size_t)nc);
    if (a)
        f->hop_link = a;
    int *b = a ? realloc(f->hop_pos, sizeof *b * (size_t)nc) : NULL;
    if (b)
        f->hop_pos = b;
    if (!a || !b)
        return -1;
    f->cap_hops = nc;
    return 0;
}

static void on_resend(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

/* An attempt of flow fi is lost: counted, reported, and re-sent by its
 * sender a retransmission timeout from now. */
static int flow_wait_resend(sim_net *net, int fi, double sent)
{
    net_flow *f = &net->flows[fi];
    net->lost++;
    if (net->loss_fn)
        net->loss_fn(net->loss_ctx, f->src, f->dst, sent, 0);
    f->waiting = 1;
    f->ev = sim_engine_schedule(net->eng, net->rto, on_resend, net, (uint64_t)fi, NULL, NULL);
    return f->ev ? 0 : -1;
}

/* Starts flow fi (cb, ctx, arg, src, dst, bytes set) on the route path
 * (hops links; local: delivered at once): counts it and schedules its
 * drain or delivery. On failure (no memory) the counts are undone and -1
 * returned; the caller keeps the record. */
static int flow_launch(sim_net *net, int fi, int local, const int *path, int hops)
{
    net_flow *f = &net->flows[fi];
    int src = f->src, dst = f->dst;
    double bytes = f->bytes;
    f->eff = sim_net_by_size_at(&net->eff_tab, bytes, net->efficiency);
    f->remaining = bytes / f->eff;
    f->latency = 0;
    f->rate = 0.0;
    f->n_hops = 0;
    f->ev = 0;
    f->last = sim_engine_now(net->eng);
    /* Counted up front; undone below if the send fails (and the part not
     * sent if the attempt is lost). */
    net->messages++;
    if (src != dst) {
        net->host_bytes[src] += bytes;
        net->total_bytes += bytes;
    }
    if (local) {
        if (!sim_engine_schedule(net->eng, 0, on_deliver, net, (uint64_t)fi, NULL, NULL))
            goto nomem;
        return 0;
    }
    if (flow_hops_reserve(f, hops))
        goto nomem;
    f->n_hops = hops;
    double bottleneck = INFINITY;
    for (int h = 0; h < hops; h++) {
        const net_link *L = &net->links[path[h]];
        f->hop_link[h] = path[h];
        f->latency += L->lat;
        bottleneck = fmin(bottleneck, L->bw);
    }
    if (bytes == 0.0) {
        if (!sim_engine_schedule(net->eng, f->latency, on_deliver, net, (uint64_t)fi, NULL, NULL))
            goto nomem;
        return 0;
    }
    if (net->sharing == SIM_SHARE_NONE) {
        f->rate = bottleneck;
        if (net_schedule_drain(net, fi))
            goto nomem;
    } else {
        if (net_link_add(net, fi))
            goto nomem;
        if (net_share_flow_added(net, fi)) {
            net_link_remove(net, fi);
            goto nomem;
        }
    }
    active_append(net, fi);
    if (net->trace_fn)
        net->trace_fn(net->trace_ctx, src, dst, bytes, f->hop_link, hops, 1);
    return 0;

nomem:
    f->n_hops = 0;
    net->messages--;
    if (src != dst) {
        net->host_bytes[src] -= bytes;
        net->total_bytes -= bytes;
    }
    return -1;
}

/* Starts flow fi (already filled) on a route computed now; 0, or -1 when
 * there is no up route or no memory to compute it or start the flow. */
static int flow_start_now(sim_net *net, int fi)
{
    const net_flow *f = &net->flows[fi];
    const int *path = NULL;
    int hops = 0;
    int rc = net_route_get(net, f->src, f->dst, net->routing == SIM_ROUTE_ECMP, net->messages,
                           &path, &hops);
    return rc == 0 && flow_launch(net, fi, 0, path, hops) == 0 ? 0 : -1;
}

/* A lost message's re-send: a new attempt on a route computed now. */
static void on_resend(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    sim_net *net = ctx;
    int fi = (int)arg;
    net_flow *f = &net->flows[fi];
    f->ev = 0;
    f->waiting = 0;
    /* No up route (or no memory to compute one, or to start the flow): this
     * attempt is lost at once, the next goes after another timeout. */
    if (flow_start_now(net, fi) == 0) {
        net->resent_bytes += f->bytes;
        if (net->loss_fn)
            net->loss_fn(net->loss_ctx, f->src, f->dst, f->bytes, 1);
        return;
    }
    flow_wait_resend(net, fi, 0.0);
}

/* A message's start after its sender's overhead: on a route computed now,
 * or lost at once (and re-sent after a timeout) when there is none. */
/* A message is in flight until its delivery (sim_net_send_flow). */
static int sent(sim_net *net, int fi, int *flow)
{
    net->n_inflight++;
    if (flow)
        *flow = fi;
    return 0;
}

static void on_start(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    sim_net *net = ctx;
    int fi = (int)arg;
    net->flows[fi].ev = 0;
    if (flow_start_now(net, fi))
        flow_wait_resend(net, fi, 0.0);
}

int sim_net_send(sim_net *net, int src, int dst, double bytes, sim_net_deliver on_delivery,
                 void *ctx, uint64_t arg, sim_err *err)
{
    return sim_net_send_flow(net, src, dst, bytes, on_delivery, ctx, arg, NULL, err);
}

int sim_net_send_flow(sim_net *net, int src, int dst, double bytes,
                      sim_net_deliver on_delivery, void *ctx, uint64_t arg, int *flow,
                      sim_err *err)
{
    int rc = check_hosts(net, src, dst, err);
    if (rc)
        return rc;
    if (!(bytes >= 0.0 && isfinite(bytes)))
        return sim_err_set(err, SIM_EINPUT, "network: message size must be >= 0 bytes, got %g",
                           bytes);
    const int *path = NULL;
    int hops = 0;
    int local = src == dst || net->ideal;
    int cut = 0;
    if (!local) {
        rc = net_route_get(net, src, dst, net->routing == SIM_ROUTE_ECMP, net->messages, &path,
                           &hops);
        if (rc == SIM_ENOMEM)
            return sim_err_set(err, SIM_ENOMEM, "network: out of memory computing a route");
        if (rc == NET_ROUTE_CUT)
            cut = 1;
        else if (rc)
            return sim_err_set(err, SIM_EINPUT, "no route from host %d to host %d", src, dst);
    }
    int fi = flow_alloc(net);
    if (fi < 0)
        return sim_err_set(err, SIM_ENOMEM, "network: out of memory");
    net_flow *f = &net->flows[fi];
    f->bytes = bytes;
    f->cb = on_delivery;
    f->ctx = ctx;
    f->arg = arg;
    f->src = src;
    f->dst = dst;
    double ovh = local ? 0.0 : sim_net_by_size_at(&net->ovh_tab, bytes, net->msg_overhead);
    if (ovh > 0.0) {
        f->ev = sim_engine_schedule(net->eng, net_ns_from_s(ovh), on_start, net, (uint64_t)fi,
                                    NULL, NULL);
        if (f->ev)
            return sent(net, fi, flow);
        net_flow_free(net, fi);
        return sim_err_set(err, SIM_ENOMEM, "network: out of memory");
    }
    if (cut ? flow_wait_resend(net, fi, 0.0) : flow_launch(net, fi, local, path, hops)) {
        net_flow_free(net, fi);
        return sim_err_set(err, SIM_ENOMEM, "network: out of memory");
    }
    return sent(net, fi, flow);
}

/* The payload bytes of flow f (draining) not yet sent at now. */
static double flow_unsent(const net_flow *f, sim_time now)
{
    double rem = f->remaining;
    if (f->rate > 0.0 && now > f->last)
        rem -= f->rate * sim_time_to_s(now - f->last);
    rem *= f->eff; /* payload bytes */
    if (rem < 0.0)
        rem = 0.0;
    return rem > f->bytes ? f->bytes : rem;
}

/* Flow fi, still draining, is lost now: it leaves its links and the active
 * list; the part not yet sent is taken off the host and total counters,
 * the part sent is added to its links'; its re-send is scheduled. */
static int flow_lose(sim_net *net, int fi)
{
    net_flow *f = &net->flows[fi];
    sim_time now = sim_engine_now(net->eng);
    double rem = flow_unsent(f, now);
    double sent = f->bytes - rem;
    if (f->ev)
        sim_engine_cancel(net->eng, f->ev);
    f->ev = 0;
    net_active_unlink(net, fi);
    int rc = 0;
    if (net->sharing == SIM_SHARE_FAIR) {
        net_share_fresh_forget(net, fi);
        rc = net_share_flow_removed(net, fi);
    }
    net->host_bytes[f->src] -= rem;
    net->total_bytes -= rem;
    for (int h = 0; h < f->n_hops; h++)
        net->links[f->hop_link[h]].bytes += sent;
    if (net->trace_fn)
        net->trace_fn(net->trace_ctx, f->src, f->dst, f->bytes, f->hop_link, f->n_hops, 0);
    f->remaining = f->bytes / f->eff;
    f->rate = 0.0;
    f->last = now;
    if (flow_wait_resend(net, fi, sent))
        rc = -1;
    return rc;
}

int sim_net_link_set_down(sim_net *net, int a, int b, int down, sim_err *err)
{
    if (net->ideal)
        return sim_err_set(err, SIM_EUSAGE, "network: an ideal network has no links to change");
    down = down ? 1 : 0;
    int changed = 0;
    if (!net_links_mark(net, a, b, down, &changed))
        return sim_err_set(err, SIM_EINPUT, "network: no link between vertices %d and %d", a, b);
    if (!changed)
        return 0;
    net_route_invalidate(net);
    if (!down)
        return 0;
    int rc = 0;
    for (int i = net->act_head; i >= 0;) {
        int next = net->flows[i].next;
        const net_flow *f = &net->flows[i];
        for (int h = 0; h < f->n_hops; h++)
            if (net->links[f->hop_link[h]].down) {
                if (flow_lose(net, i))
                    rc = -1;
                break;
            }
        i = next;
    }
    return rc ? sim_err_set(err, SIM_ENOMEM, "network: out of memory") : 0;
}

void sim_net_set_trace_hook(sim_net *net, sim_net_trace_fn fn, void *ctx)
{
    net->trace_fn = fn;
    net->trace_ctx = ctx;
}

void sim_net_set_loss_hook(sim_net *net, sim_net_loss_fn fn, void *ctx)
{
    net->loss_fn = fn;
    net->loss_ctx = ctx;
}

uint64_t sim_net_lost_messages(const sim_net *net) { return net->lost; }

double sim_net_resent_bytes(const sim_net *net) { return net->resent_bytes; }

int sim_net_n_hosts(const sim_net *net) { return net->n_hosts; }

int sim_net_n_links(const sim_net *net) { return net->n_links; }

sim_engine *sim_net_engine(const sim_net *net) { return net->eng; }

double sim_net_bytes_sent_host(const sim_net *net, int host)
{
    if (host < 0 || host >= net->n_hosts)
        return 0.0;
    return net->host_bytes[host];
}

double sim_net_bytes_sent_total(const sim_net *net) { return net->total_bytes; }

double sim_net_bytes_unsent(const sim_net *net, int host)
{
    sim_time now = sim_engine_now(net->eng);
    double sum = 0.0;
    for (int i = net->act_head; i >= 0; i = net->flows[i].next) {
        const net_flow *f = &net->flows[i];
        if (host < 0 || f->src == host)
            sum += flow_unsent(f, now);
    }
    return sum;
}

uint64_t sim_net_messages(const sim_net *net) { return net->messages; }

uint64_t sim_net_active_flows(const sim_net *net) { return net->n_active; }

int sim_net_flow_rates(sim_net *net, double *rates, int max)
{
    net_share_flush(net);
    int k = 0;
    for (int i = net->act_head; i >= 0 && k < max; i = net->flows[i].next)
        rates[k++] = net->flows[i].rate;
    return k;
}

int sim_net_flow_rates_reference(sim_net *net, double *rates, int max)
{
    return net_share_reference(net, rates, max);
}

void sim_net_solver_stats(const sim_net *net, uint64_t *solves, uint64_t *resolved,
                          uint64_t *fallbacks)
{
    if (solves)
        *solves = net->n_solves;
    if (resolved)
        *resolved = net->n_resolved;
    if (fallbacks)
        *fallbacks = net->n_fallbacks;
}
