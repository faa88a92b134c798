/* Closed form of a collective's step (see network.h): n messages of one
 * size, sent at one instant, each alone on its links with nothing else in
 * flight, drain at their common bottleneck rate (max-min fair sharing
 * gives a flow alone on its links its bottleneck, as sharing = none does)
 * and arrive together, overhead + drain + latency after the send. The
 * times are those of net_schedule_drain and flow_launch, nanosecond for
 * nanosecond; the counters are added with sim_fsum_repeat, which rounds as
 * the flows' one-by-one additions would.
 *
 * A caller (sim/collective.c) sends its first step as flows, checks with
 * sim_net_bulk_step that the closed form holds, and takes the flows back
 * with sim_net_bulk_withdraw, which refuses unless they are the network's
 * only traffic and no other event is due before the collective would end:
 * then nothing can happen on the network in between, and charging the
 * whole collective at once changes no time and no byte. */
#include <math.h>
#include <stdlib.h>

#include "sim/net_internal.h"

/* Marks the links of one check; returns 0 when out of memory. */
static int marks_ready(sim_net *net)
{
    if (!net->bulk_mark) {
        net->bulk_mark = calloc((size_t)(net->n_links ? net->n_links : 1),
                                sizeof *net->bulk_mark);
        if (!net->bulk_mark)
            return 0;
    }
    net->bulk_epoch++;
    return 1;
}

int sim_net_bulk_step(sim_net *net, const int *src, const int *dst, int n, double bytes,
                      sim_time *step)
{
    if (net->ideal || net->n_down || net->trace_fn || n < 1 || !(bytes > 0.0) ||
        !isfinite(bytes) || (net->routing != SIM_ROUTE_SHORTEST && !net->is_forest) ||
        !marks_ready(net))
        return 0;
    sim_time lat0 = 0;
    double bn0 = 0.0;
    for (int i = 0; i < n; i++) {
        if (src[i] == dst[i] || src[i] < 0 || src[i] >= net->n_hosts || dst[i] < 0 ||
            dst[i] >= net->n_hosts)
            return 0;
        const int *path;
        int h;
        if (net_route_get(net, src[i], dst[i], 0, 0, &path, &h) != 0 || h < 1)
            return 0;
        sim_time lat = 0;
        double bn = INFINITY;
        for (int k = 0; k < h; k++) {
            net_link *L = &net->links[path[k]];
            if (net->bulk_mark[path[k]] == net->bulk_epoch)
                return 0; /* two of the messages share a link */
            net->bulk_mark[path[k]] = net->bulk_epoch;
            lat += L->lat;
            bn = fmin(bn, L->bw);
        }
        if (i == 0) {
            lat0 = lat;
            bn0 = bn;
        } else if (lat != lat0 || bn != bn0) {
            return 0;
        }
    }
    double eff = sim_net_by_size_at(&net->eff_tab, bytes, net->efficiency);
    double ovh = sim_net_by_size_at(&net->ovh_tab, bytes, net->msg_overhead);
    /* a time near the clock's end is left to the flows, which fail the run
     * cleanly (sim_engine_overflowed) instead of wrapping here */
    sim_time t;
    if (__builtin_add_overflow(ovh > 0.0 ? net_ns_from_s(ovh) : 0,
                               net_drain_ns(bytes / eff / bn0), &t) ||
        __builtin_add_overflow(t, lat0, step))
        return 0;
    return *step > 0;
}

int sim_net_bulk_withdraw(sim_net *net, const int *flow, int n, sim_time until, int *counted)
{
    if (n < 1 || net->n_inflight != (uint64_t)n || until > sim_engine_horizon(net->eng))
        return 0;
    int started = net->flows[flow[0]].n_hops > 0;
    int hops = 0;
    for (int i = 0; i < n; i++) {
        const net_flow *f = &net->flows[flow[i]];
        if ((f->n_hops > 0) != started || f->waiting)
            return 0;
        if (started && net->sharing == SIM_SHARE_FAIR ? !f->fresh : !f->ev)
            return 0;
        hops += f->n_hops;
    }
    uint64_t own = (uint64_t)n;
    if (net->sharing == SIM_SHARE_FAIR) {
        if (started) {
            /* the flows wait for the instant's solve, which is theirs alone */
            if (!net->solve_ev || net->n_fresh != n || net->n_seeds != hops ||
                net->pend_thr != INFINITY)
                return 0;
            own = 1;
        } else if (net->solve_ev || net->n_seeds || net->n_fresh) {
            return 0;
        }
    }
    if (net->n_active != (started ? (uint64_t)n : 0) ||
        sim_engine_pending_before(net->eng, until) != own)
        return 0;
    if (net->sharing == SIM_SHARE_FAIR && started) {
        sim_engine_cancel(net->eng, net->solve_ev);
        net->solve_ev = 0;
        for (int k = 0; k < net->n_seeds; k++)
            net->links[net->seeds[k]].pending = 0;
        net->n_seeds = net->n_fresh = 0;
    }
    for (int i = 0; i < n; i++) {
        net_flow *f = &net->flows[flow[i]];
        if (f->ev)
            sim_engine_cancel(net->eng, f->ev);
        f->ev = 0;
        f->fresh = 0;
        if (started) {
            net_active_unlink(net, flow[i]);
            if (net->sharing == SIM_SHARE_FAIR)
                net_link_remove(net, flow[i]);
        }
        f->n_hops = 0;
        net_flow_free(net, flow[i]);
    }
    net->n_inflight -= (uint64_t)n;
    *counted = started;
    return 1;
}

void sim_net_bulk_account(sim_net *net, const int *src, const int *dst, int n, double bytes,
                          int64_t sends, int64_t drains)
{
    net->messages += (uint64_t)n * (uint64_t)sends;
    net->total_bytes = sim_fsum_repeat(net->total_bytes, bytes, (int64_t)n * sends);
    for (int i = 0; i < n; i++) {
        net->host_bytes[src[i]] = sim_fsum_repeat(net->host_bytes[src[i]], bytes, sends);
        const int *path;
        int h;
        if (drains <= 0 || net_route_get(net, src[i], dst[i], 0, 0, &path, &h) != 0)
            continue;
        for (int k = 0; k < h; k++)
            net->links[path[k]].bytes = sim_fsum_repeat(net->links[path[k]].bytes, bytes, drains);
    }
}
