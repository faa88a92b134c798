/* Max-min fair sharing (sharing = fair): the incremental solver.
 *
 * Starts and ends only record their links as seeds; one solve runs per
 * simulated instant, from a zero-delay event scheduled by the first change
 * of the instant (later changes of the same instant join it; an event
 * scheduled after it at the same time may start another).
 *
 * A solve re-solves a set X of flows by progressive filling with every
 * other flow held at its rate (its rate is taken off its links' capacity),
 * then checks the max-min conditions (every flow has a bottleneck: a
 * saturated link on its path on which no flow is faster) for X and for the
 * flows outside X on the links X crosses. A flow failing them joins X
 * (an X flow that fails brings in the faster flows on its saturated
 * links), and X is re-solved, until the conditions hold: then the whole
 * allocation is max-min fair (feasible, and every flow has a bottleneck),
 * which is unique, so the rates are those of a from-scratch solve.
 * X starts as the new flows plus the flows on changed links whose rate is
 * at least s*, the smallest of the ended flows' rates and of the new flows'
 * lower bounds min over their links of bandwidth / flows: progressive
 * filling runs identically below s* with and without the changes (no
 * changed flow is fixed, no changed link saturates below it), so no flow
 * slower than s* changes rate.
 * Cost: the flows around the changed links (on a star, the flows of the
 * two hosts and their peers' links), not the whole linked group. After 16
 * rounds of growth the solve falls back to the whole group of flows linked
 * to the seeds (the reference solver, also used when full_solve is set).
 * A re-solved rate within RATE_EPS of the old one keeps its drain event. */
#include <math.h>
#include <stdlib.h>

#include "sim/net_internal.h"

#define MAX_GROW 16

int net_share_init(sim_net *net)
{
    size_t nl = (size_t)(net->n_links ? net->n_links : 1);
    net->seeds = malloc(sizeof *net->seeds * nl);
    net->ts = malloc(sizeof *net->ts * nl);
    return net->seeds && net->ts ? 0 : -1;
}

void net_share_release(sim_net *net)
{
    free(net->seeds);
    free(net->ts);
    free(net->fresh);
    free(net->xs);
    free(net->viol);
    free(net->held);
}

static void seed_links(sim_net *net, const net_flow *f)
{
    for (int h = 0; h < f->n_hops; h++) {
        net_link *L = &net->links[f->hop_link[h]];
        if (!L->pending) {
            L->pending = 1;
            net->seeds[net->n_seeds++] = f->hop_link[h];
        }
    }
}

static void on_solve(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

static int want_solve(sim_net *net)
{
    if (net->solve_ev)
        return 0;
    net->solve_ev = sim_engine_schedule(net->eng, 0, on_solve, net, 0, NULL, NULL);
    return net->solve_ev ? 0 : -1;
}

int net_share_flow_added(sim_net *net, int fi)
{
    int need = (int)net->n_active + 1;
    net_flow *f = &net->flows[fi];
    int most = 0;
    for (int h = 0; h < f->n_hops; h++)
        if (net->links[f->hop_link[h]].n_ent > most)
            most = net->links[f->hop_link[h]].n_ent;
    if (most > net->cap_held) {
        int nc = net->cap_held ? net->cap_held : 16;
        while (nc < most)
            nc *= 2;
        double *p = realloc(net->held, sizeof *p * (size_t)nc);
        if (!p)
            return -1;
        net->held = p;
        net->cap_held = nc;
    }
    if (net_grow_ints(&net->fresh, &net->cap_fresh, net->n_fresh + 1) ||
        net_grow_ints(&net->xs, &net->cap_xs, need) ||
        net_grow_ints(&net->viol, &net->cap_viol, need) || want_solve(net))
        return -1;
    f->fresh = 1;
    net->fresh[net->n_fresh++] = fi;
    seed_links(net, f);
    return 0;
}

void net_share_fresh_forget(sim_net *net, int fi)
{
    net_flow *f = &net->flows[fi];
    if (!f->fresh)
        return;
    f->fresh = 0;
    for (int k = 0; k < net->n_fresh; k++)
        if (net->fresh[k] == fi) {
            net->fresh[k] = net->fresh[--net->n_fresh];
            break;
        }
}

int net_share_flow_removed(sim_net *net, int fi)
{
    net_flow *f = &net->flows[fi];
    net_link_remove(net, fi);
    seed_links(net, f);
    net->pend_thr = fmin(net->pend_thr, f->rate);
    return want_solve(net);
}

static void x_add(sim_net *net, int fi)
{
    net->flows[fi].mark = net->epoch;
    net->xs[net->n_xs++] = fi;
}

/* Adds the links of X flows from index `from` on to the touched set. */
static void touch_links(sim_net *net, int from)
{
    for (int q = from; q < net->n_xs; q++) {
        const net_flow *f = &net->flows[net->xs[q]];
        for (int h = 0; h < f->n_hops; h++) {
            net_link *L = &net->links[f->hop_link[h]];
            if (L->mark != net->epoch) {
                L->mark = net->epoch;
                net->ts[net->n_ts++] = f->hop_link[h];
            }
        }
    }
}

/* Grows X to every flow linked to it through shared links. */
static void close_component(sim_net *net)
{
    int done_x = 0;
    touch_links(net, 0);
    for (int q = 0; q < net->n_ts; q++) {
        const net_link *L = &net->links[net->ts[q]];
        for (int j = 0; j < L->n_ent; j++)
            if (net->flows[L->ent[j].flow].mark != net->epoch)
                x_add(net, L->ent[j].flow);
        touch_links(net, done_x);
        done_x = net->n_xs;
    }
}

static void sift(double *a, int i, int n)
{
    for (int c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && a[c + 1] > a[c])
            c++;
        if (a[i] >= a[c])
            return;
        double t = a[i];
        a[i] = a[c];
        a[c] = t;
    }
}

/* Ascending, in place, no allocation (heapsort; insertion sort when short). */
static void sort_doubles(double *a, int n)
{
    if (n <= 32) {
        for (int i = 1; i < n; i++) {
            double v = a[i];
            int j = i;
            for (; j > 0 && a[j - 1] > v; j--)
                a[j] = a[j - 1];
            a[j] = v;
        }
        return;
    }
    for (int i = n / 2 - 1; i >= 0; i--)
        sift(a, i, n);
    for (int k = n - 1; k > 0; k--) {
        double t = a[0];
        a[0] = a[k];
        a[k] = t;
        sift(a, 0, k);
    }
}

/* Progressive filling of the X flows into new_rate, the others held. The
 * held rates come off a link's capacity slowest first, as progressive
 * filling over all flows would take them (same rounding in the common
 * case where they are all slower than the re-solved flows). */
static void fill(sim_net *net)
{
    uint64_t ep = net->epoch;
    for (int q = 0; q < net->n_ts; q++) {
        net_link *L = &net->links[net->ts[q]];
        int n = 0, m = 0, sorted = 1;
        for (int j = 0; j < L->n_ent; j++) {
            const net_flow *g = &net->flows[L->ent[j].flow];
            if (g->mark == ep) {
                n++;
            } else {
                sorted &= m == 0 || net->held[m - 1] <= g->rate;
                net->held[m++] = g->rate;
            }
        }
        if (!sorted)
            sort_doubles(net->held, m);
        double cap = L->bw;
        for (int j = 0; j < m; j++)
            cap -= net->held[j];
        L->cap_rem = cap;
        L->n_unfixed = n;
    }
    for (int q = 0; q < net->n_xs; q++)
        net->flows[net->xs[q]].new_rate = -1.0;
    int left = net->n_xs;
    while (left > 0) {
        double share = INFINITY;
        for (int q = 0; q < net->n_ts; q++) {
            const net_link *L = &net->links[net->ts[q]];
            if (L->n_unfixed > 0)
                share = fmin(share, fmax(L->cap_rem, 0.0) / L->n_unfixed);
        }
        if (!isfinite(share))
            break; /* cannot happen: every flow crosses a link */
        double thr = share * (1.0 + FILL_EPS);
        for (int q = 0; q < net->n_ts; q++) {
            net_link *L = &net->links[net->ts[q]];
            if (L->n_unfixed == 0 || fmax(L->cap_rem, 0.0) > thr * L->n_unfixed)
                continue;
            for (int j = 0; j < L->n_ent; j++) {
                net_flow *f = &net->flows[L->ent[j].flow];
                if (f->mark != ep || f->new_rate >= 0.0)
                    continue;
                f->new_rate = share;
                for (int h = 0; h < f->n_hops; h++) {
                    net_link *M = &net->links[f->hop_link[h]];
                    M->cap_rem -= share;
                    M->n_unfixed--;
                }
                left--;
            }
        }
    }
}

static double cur_rate(const sim_net *net, const net_flow *g)
{
    return g->mark == net->epoch ? g->new_rate : g->rate;
}

/* Load and fastest rate of link l under the tentative rates. */
static const net_link *link_stats(sim_net *net, int l)
{
    net_link *L = &net->links[l];
    if (L->seen != net->pass) {
        double load = 0.0, mx = 0.0;
        for (int j = 0; j < L->n_ent; j++) {
            double r = cur_rate(net, &net->flows[L->ent[j].flow]);
            load += r;
            mx = fmax(mx, r);
        }
        L->load = load;
        L->max_rate = mx;
        L->seen = net->pass;
    }
    return L;
}

static int saturated(const net_link *L) { return L->load >= L->bw * (1.0 - SAT_EPS); }

static int has_bottleneck(sim_net *net, const net_flow *g)
{
    double r = cur_rate(net, g);
    for (int h = 0; h < g->n_hops; h++) {
        const net_link *L = link_stats(net, g->hop_link[h]);
        if (saturated(L) && L->max_rate <= r * (1.0 + SAT_EPS))
            return 1;
    }
    return 0;
}

/* Checks the max-min conditions around X; the flows that must join X go to
 * viol. Returns their count, or -1 if an X flow fails with no one to blame
 * (rounding at the tolerances: the caller falls back). */
static int verify(sim_net *net)
{
    uint64_t ep = net->epoch, pass = ++net->pass;
    net->n_viol = 0;
    for (int q = 0; q < net->n_xs; q++) {
        const net_flow *g = &net->flows[net->xs[q]];
        if (has_bottleneck(net, g))
            continue;
        double lim = g->new_rate * (1.0 + SAT_EPS);
        int found = 0;
        for (int h = 0; h < g->n_hops; h++) {
            const net_link *L = link_stats(net, g->hop_link[h]);
            if (!saturated(L))
                continue;
            for (int j = 0; j < L->n_ent; j++) {
                net_flow *o = &net->flows[L->ent[j].flow];
                if (o->mark == ep || o->rate <= lim)
                    continue;
                found = 1;
                if (o->seen != pass) {
                    o->seen = pass;
                    net->viol[net->n_viol++] = L->ent[j].flow;
                }
            }
        }
        if (!found)
            return -1;
    }
    for (int q = 0; q < net->n_ts; q++) {
        const net_link *L = &net->links[net->ts[q]];
        for (int j = 0; j < L->n_ent; j++) {
            net_flow *o = &net->flows[L->ent[j].flow];
            if (o->mark == ep || o->seen == pass)
                continue;
            o->seen = pass;
            if (!has_bottleneck(net, o))
                net->viol[net->n_viol++] = L->ent[j].flow;
        }
    }
    return net->n_viol;
}

/* Settles and reschedules the X flows whose rate moved. */
static int apply(sim_net *net)
{
    sim_time now = sim_engine_now(net->eng);
    int rc = 0;
    for (int q = 0; q < net->n_xs; q++) {
        int fi = net->xs[q];
        net_flow *f = &net->flows[fi];
        if (!f->fresh && f->rate > 0.0 && fabs(f->new_rate - f->rate) <= RATE_EPS * f->rate)
            continue;
        if (f->rate > 0.0 && now > f->last) {
            f->remaining -= f->rate * sim_time_to_s(now - f->last);
            if (f->remaining < 0.0)
                f->remaining = 0.0;
        }
        f->last = now;
        f->rate = f->new_rate;
        if (f->ev)
            sim_engine_cancel(net->eng, f->ev);
        f->ev = 0;
        if (net_schedule_drain(net, fi))
            rc = -1;
    }
    return rc;
}

static int solve(sim_net *net)
{
    if (net->n_seeds == 0 && net->n_fresh == 0)
        return 0;
    double thr = net->pend_thr;
    for (int k = 0; k < net->n_fresh; k++) {
        const net_flow *f = &net->flows[net->fresh[k]];
        for (int h = 0; h < f->n_hops; h++) {
            const net_link *L = &net->links[f->hop_link[h]];
            thr = fmin(thr, L->bw / L->n_ent);
        }
    }
    net->epoch++;
    net->n_xs = net->n_ts = 0;
    net->n_solves++;
    int full = net->full_solve;
    for (int k = 0; k < net->n_seeds; k++) {
        const net_link *L = &net->links[net->seeds[k]];
        for (int j = 0; j < L->n_ent; j++) {
            const net_flow *g = &net->flows[L->ent[j].flow];
            if (g->mark != net->epoch && (full || g->fresh || g->rate >= thr * (1.0 - FILL_EPS)))
                x_add(net, L->ent[j].flow);
        }
    }
    if (full) {
        close_component(net);
        fill(net);
    } else {
        int done_x = 0;
        for (int round = 1;; round++) {
            touch_links(net, done_x);
            done_x = net->n_xs;
            fill(net);
            int nv = verify(net);
            if (nv == 0)
                break;
            if (nv < 0 || round == MAX_GROW) {
                net->n_fallbacks++;
                close_component(net);
                fill(net);
                break;
            }
            for (int k = 0; k < nv; k++)
                x_add(net, net->viol[k]);
        }
    }
    net->n_resolved += (uint64_t)net->n_xs;
    int rc = apply(net);
    for (int k = 0; k < net->n_seeds; k++)
        net->links[net->seeds[k]].pending = 0;
    for (int k = 0; k < net->n_fresh; k++)
        net->flows[net->fresh[k]].fresh = 0;
    net->n_seeds = net->n_fresh = 0;
    net->pend_thr = INFINITY;
    return rc;
}

static void on_solve(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)arg;
    (void)payload;
    sim_net *net = ctx;
    net->solve_ev = 0;
    solve(net);
}

int net_share_flush(sim_net *net)
{
    if (!net->solve_ev)
        return 0;
    sim_engine_cancel(net->eng, net->solve_ev);
    net->solve_ev = 0;
    return solve(net);
}

int net_share_reference(sim_net *net, double *out, int max)
{
    if (net->sharing != SIM_SHARE_FAIR || net->ideal) {
        int k = 0;
        for (int i = net->act_head; i >= 0 && k < max; i = net->flows[i].next)
            out[k++] = net->flows[i].rate;
        return k;
    }
    if (net_grow_ints(&net->xs, &net->cap_xs, (int)net->n_active + 1))
        return SIM_ENOMEM;
    net->epoch++;
    net->n_xs = net->n_ts = 0;
    for (int i = net->act_head; i >= 0; i = net->flows[i].next)
        x_add(net, i);
    touch_links(net, 0);
    fill(net);
    int k = 0;
    for (int i = net->act_head; i >= 0 && k < max; i = net->flows[i].next)
        out[k++] = net->flows[i].new_rate;
    return k;
}

int net_share_link_changed(sim_net *net, int l)
{
    net_link *L = &net->links[l];
    if (!L->pending) {
        L->pending = 1;
        net->seeds[net->n_seeds++] = l;
    }
    /* every flow on the link is re-solved, whatever its rate */
    net->pend_thr = 0.0;
    return want_solve(net);
}
