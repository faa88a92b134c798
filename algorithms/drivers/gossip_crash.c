/* The gossip driver's crash and rejoin rules (gossip.h, algo_gossip_fault),
 * all of them: gossip.c calls in here only in crash mode (algo_env_crashes(env)).
 * Messages carry the step and both incarnations. */
#include "algorithms/drivers/gossip_impl.h"
#include "algorithms/drivers/group.h"

#include <stdlib.h>
#include <string.h>

#define MSG_T_MASK ((UINT64_C(1) << 40) - 1)

/* A message's tag in crash mode: step, sender's and receiver's incarnations. */
static uint64_t msg_arg(int64_t t, uint32_t sgen, uint32_t dgen)
{
    return ((uint64_t)t & MSG_T_MASK) | ((uint64_t)(sgen & 0xfff) << 40) |
           ((uint64_t)(dgen & 0xfff) << 52);
}

static gnb *nb_of(gworker *w, int j)
{
    for (int a = 0; a < w->nnb; a++)
        if (w->nb[a].j == j)
            return &w->nb[a];
    return NULL;
}

/* 1 when j takes part in gossip step t (it is up and joined by then). */
static int takes_part(const algo_gossip *g, int j, int64_t t)
{
    return !g->env->w[j].down && t >= g->w[j].join_t;
}

static int tv_source(const algo_gossip *g, gworker *w, int i, int *src);

int algo_gossip_crash_ready(const algo_gossip *g, int i)
{
    const gworker *w = &g->w[i];
    int64_t t = w->t;
    if (g->tv) {
        int src;
        return tv_source(g, (gworker *)w, i, &src);
    }
    for (int a = 0; a < w->nnb; a++) {
        const gnb *b = &w->nb[a];
        if (b->got[t & 1] == t)
            continue;
        int j = b->j;
        if (g->env->w[j].down) {
            if (!w->timed_out && b->dead_gen != g->w[j].gen)
                return 0;
        } else if (t >= g->w[j].join_t) {
            return 0;
        }
    }
    return 1;
}

/* ---- time-varying graphs in crash mode ----------------------------------
 *
 * W_t = (I + P_t)/2 with P_t a permutation (one_peer_exponential): worker i
 * receives from one peer and sends to another, so the weight of a dead peer
 * moved to the diagonal would keep the rows stochastic but not the columns
 * (the dead peer's sender would lose its share). Instead the dead worker is
 * bypassed in P_t's cycle: a sender whose step-t peer does not take part
 * sends to the first worker along the cycle that does (out_at, out_at, ...),
 * and a receiver whose peer is down (known dead: it waited sync_timeout
 * for it at this step or at an earlier one) waits for the first peer along
 * the cycle (in_at, in_at, ...) that takes part, so the live workers' P_t
 * stays a permutation and W_t doubly stochastic over them; a worker whose
 * whole cycle is down keeps its model (the weight goes to the diagonal).
 * At a crash of j: a message to j that j has not combined is sent again at
 * once to the next worker along the cycle that takes part; j's own message
 * of a step j has not combined is void (dropped at its receiver, or on
 * arrival); j's message of a step it has combined is still delivered and
 * combined (j's model took its sender's share). */

static int tv_peer(const algo_gossip *g, int64_t t, int x, int out)
{
    const int *nb;
    int c = out ? topo_graph_out_at(g->env->graph, t, x, &nb)
                : topo_graph_in_at(g->env->graph, t, x, &nb);
    return c > 0 ? nb[0] : x;
}

/* The first worker after `from` along step t's out-cycle that takes part in
 * step t; -1 when the walk comes back to `self` first. */
static int tv_next_out(const algo_gossip *g, int64_t t, int from, int self)
{
    int r = tv_peer(g, t, from, 1);
    for (int c = 0; c < g->n && r != self && !takes_part(g, r, t); c++)
        r = tv_peer(g, t, r, 1);
    return r == self || !takes_part(g, r, t) ? -1 : r;
}

static int tv_find(const gworker *w, int64_t t, int src)
{
    for (int e = 0; e < w->ntv; e++)
        if (w->tv[e].step == t && w->tv[e].src == src)
            return e;
    return -1;
}

static void tv_remove(gworker *w, int64_t t, int src)
{
    int e = tv_find(w, t, src);
    if (e >= 0)
        w->tv[e] = w->tv[--w->ntv];
}

static int tv_add(gworker *w, int64_t t, int src)
{
    if (w->ntv == w->cap_tv) { /* rare: grows with the lead of the senders */
        int cap = 2 * w->cap_tv;
        tvmsg *m = realloc(w->tv, (size_t)cap * sizeof *m);
        if (!m)
            return -1;
        w->tv = m;
        w->cap_tv = cap;
    }
    w->tv[w->ntv++] = (tvmsg){.step = t, .src = src};
    return 0;
}

static int tv_known_dead(const algo_gossip *g, gworker *w, int e)
{
    const gnb *b = nb_of(w, e);
    return w->timed_out || (b && b->dead_gen == g->w[e].gen);
}

/* Can worker i combine step t? 1 with *src the sender to combine (-1: none,
 * the diagonal), 0 while it waits. */
static int tv_source(const algo_gossip *g, gworker *w, int i, int *src)
{
    int64_t t = w->t;
    int e = tv_peer(g, t, i, 0);
    for (int c = 0; c < g->n && e != i; c++) {
        if (tv_find(w, t, e) >= 0) {
            *src = e;
            return 1;
        }
        if (!g->env->w[e].down) {
            if (t >= g->w[e].join_t)
                return 0;
        } else if (!tv_known_dead(g, w, e)) {
            return 0;
        }
        e = tv_peer(g, t, e, 0);
    }
    *src = -1;
    return 1;
}

static ALGO_ON_EVENT(on_timeout)
{
    algo_gossip *g = ctx;
    int i = algo_group_arg_w(arg);
    gworker *w = &g->w[i];
    if (g->env->w[i].down || w->tseq != algo_group_arg_gen(arg) || !w->published)
        return;
    w->timed_out = 1;
    algo_gossip_check_round(g, i);
}

static void on_msg(sim_engine *eng SIM_UNUSED, void *ctx, uint64_t arg, int src, int dst,
                   double bytes SIM_UNUSED)
{
    algo_gossip *g = ctx;
    gworker *w = &g->w[dst];
    int64_t t = (int64_t)(arg & MSG_T_MASK);
    gworker *ws = &g->w[src];
    if (g->tv) {
        uint32_t sg = (uint32_t)(arg >> 40) & 0xfff, dg = (uint32_t)(arg >> 52) & 0xfff;
        int live = !g->env->w[src].down && (ws->gen & 0xfff) == sg;
        int kept = (ws->keep_gen[t & 1] & 0xfff) == sg && ws->keep_t[t & 1] == t;
        if (!(live || kept) || g->env->w[dst].down || (w->gen & 0xfff) != dg || t < w->t)
            return; /* void with a crashed incarnation (its sender was released) */
        if (tv_add(w, t, src) < 0) {
            algo_gossip_fail(g, SIM_ENOMEM, "out of memory for a gossip message");
            return;
        }
    } else {
        if (g->env->w[src].down || g->env->w[dst].down || msg_arg(t, ws->gen, w->gen) != arg ||
            t < w->t)
            return; /* lost with a crashed incarnation (its sender was released) */
        gnb *b = nb_of(w, src);
        if (!b) {
            algo_gossip_fail(g, SIM_EINTERNAL, "a gossip message from a non-neighbour");
            return;
        }
        b->got[t & 1] = t;
    }
    if (w->published && t == w->t)
        algo_gossip_check_round(g, dst);
}

/* ---- compressed gossip (CHOCO, methods/choco_rule.c) ---------------------------------
 *
 * Every worker j has a public copy x_hat_j held by itself and by its
 * neighbours, which all apply the same compressed differences; the
 * simulation keeps one copy per worker, exact while every holder gets
 * every difference. A crash breaks that (a difference in flight reaches
 * some neighbours and not others; the crashed worker misses its
 * neighbours' differences while down), but no stale copy is read while j
 * is down: its neighbours move its weight to their diagonal. The rule
 * restores the copies at the rejoin, before any is read again: the
 * rejoining worker restarts its x_hat at its new model (ops->reset: its
 * residual v - x_hat starts from the local step alone) and the first
 * message of each direction of each of its links, of the first step both
 * ends take part in, is sent dense (S bytes, the sender's whole x_hat
 * after its update) instead of compressed: its receiver replaces its
 * copy, which then equals the sender's own. Each pair's two dense
 * messages cost S - (compressed size) more each than a plain step; the
 * receiver waits for them as for any message of its step. */

/* The wire size of i's message to r: dense once after a rejoin of either. */
static double pair_bytes(algo_gossip *g, int i, int r, double bytes)
{
    gnb *b = g->resync ? nb_of(&g->w[r], i) : NULL;
    if (!b || !b->dense)
        return bytes;
    b->dense = 0;
    return g->msg_bytes;
}

/* Worker j rejoins: each direction of each of its links goes dense once. */
static void resync_pairs(algo_gossip *g, int j)
{
    gworker *wj = &g->w[j];
    for (int a = 0; a < wj->nnb; a++)
        wj->nb[a].dense = 1;
    const int *out;
    int nout = topo_graph_out_at(g->env->graph, 0, j, &out);
    for (int a = 0; a < nout; a++) {
        gnb *b = nb_of(&g->w[out[a]], j);
        if (b)
            b->dense = 1;
    }
}

void algo_gossip_crash_send(algo_gossip *g, int i, int p, double bytes)
{
    algo_env *env = g->env;
    gworker *w = &g->w[i];
    const int *out;
    int nout = topo_graph_out_at(env->graph, w->t, i, &out);
    /* only to who takes part in step t (nothing reaches a dead host) */
    w->pend[p] = 0;
    w->pub[p] = w->t;
    w->timed_out = 0;
    if (g->tv) { /* to the first worker along P_t's cycle that takes part */
        int r = tv_next_out(g, w->t, i, i);
        w->dst[p] = r;
        w->keep_t[p] = -1;
        nout = 0;
        if (r >= 0) {
            w->pend[p] = 1;
            if (algo_gossip_send(g, i, r, bytes, on_msg, msg_arg(w->t, w->gen, g->w[r].gen)) < 0)
                return;
        }
    }
    for (int a = 0; a < nout; a++) {
        if (!takes_part(g, out[a], w->t))
            continue;
        w->pend[p]++;
        if (algo_gossip_send(g, i, out[a], pair_bytes(g, i, out[a], bytes), on_msg,
                             msg_arg(w->t, w->gen, g->w[out[a]].gen)) < 0)
            return;
    }
    if (algo_gossip_crash_ready(g, i))
        algo_gossip_check_round(g, i);
    else
        algo_group_timeout(env, on_timeout, g, i, ++w->tseq);
}

void algo_gossip_crash_substitute(algo_gossip *g, int i, int64_t t, int *src, int *j0)
{
    gworker *w = &g->w[i];
    int p = (int)(t & 1);
    *src = -1;
    *j0 = i;
    if (g->tv) { /* W_t's peer replaced by the first live one along the cycle */
        tv_source(g, w, i, src);
        *j0 = tv_peer(g, t, i, 0);
        for (int e = *j0; e != i && e != *src; e = tv_peer(g, t, e, 0)) {
            gnb *b = nb_of(w, e);
            if (b && g->env->w[e].down)
                b->dead_gen = g->w[e].gen;
        }
        if (*j0 != i)
            g->sp[p][*j0] = *src >= 0 ? g->w[*src].slot[p] : w->slot[p];
        return;
    }
    for (int a = 0; a < w->nnb; a++) { /* a missing neighbour's weight goes to the diagonal */
        gnb *b = &w->nb[a];
        if (b->got[p] == t)
            continue;
        g->sp[p][b->j] = w->slot[p];
        if (g->env->w[b->j].down)
            b->dead_gen = g->w[b->j].gen;
    }
}

void algo_gossip_crash_restore(algo_gossip *g, int i, int64_t t, int j0)
{
    gworker *w = &g->w[i];
    int p = (int)(t & 1);
    if (g->tv && j0 != i) {
        g->sp[p][j0] = g->w[j0].slot[p];
        return;
    }
    for (int a = 0; a < w->nnb; a++)
        g->sp[p][w->nb[a].j] = g->w[w->nb[a].j].slot[p];
}

void algo_gossip_crash_release(algo_gossip *g, int i, int64_t t, int src)
{
    gworker *w = &g->w[i];
    int p = (int)(t & 1);
    if (g->tv) {
        if (src >= 0) {
            tv_remove(w, t, src);
            algo_gossip_release(g, src, p);
        }
        return;
    }
    for (int a = 0; a < w->nnb; a++)
        if (w->nb[a].got[p] == t)
            algo_gossip_release(g, w->nb[a].j, p);
}

/* ---- crashes and rejoins ------------------------------------------------ */

/* After a crash or rejoin of j: the live workers that may have waited for
 * j re-check their round (on a time-varying graph any worker, else j's
 * neighbours). */
static void recheck(algo_gossip *g, int j)
{
    algo_env *env = g->env;
    gworker *wj = &g->w[j];
    int n = g->tv ? g->n : wj->nnb;
    for (int a = 0; a < n && !(g->tv && env->error.code); a++) {
        int r = g->tv ? a : wj->nb[a].j;
        if (r != j && g->w[r].published && !env->w[r].down)
            algo_gossip_check_round(g, r);
    }
}

/* Time-varying graph: worker j has just crashed (see "time-varying graphs"
 * above for the rules). */
static void tv_crash(algo_gossip *g, int j)
{
    algo_env *env = g->env;
    gworker *wj = &g->w[j];
    wj->ntv = 0;
    for (int p = 0; p < 2; p++) {
        /* j's own message: void unless j has combined its step */
        if (wj->pend[p] > 0 && wj->keep_t[p] < 0) {
            int64_t st = wj->pub[p];
            if (st < wj->t && wj->dst[p] >= 0 && !env->w[wj->dst[p]].down) {
                wj->keep_t[p] = st;
                wj->keep_gen[p] = wj->gen - 1; /* the incarnation that sent it */
            } else {
                if (wj->dst[p] >= 0)
                    tv_remove(&g->w[wj->dst[p]], st, j);
                wj->pend[p] = 0;
            }
        }
        /* messages to j that j has not combined go on along the cycle */
        for (int h = 0; h < g->n; h++) {
            gworker *wh = &g->w[h];
            if (h == j || wh->pend[p] == 0 || wh->dst[p] != j || wh->pub[p] < wj->t)
                continue;
            if (env->w[h].down) { /* a kept message of a crashed worker: void */
                wh->keep_t[p] = -1;
                wh->pend[p] = 0;
                continue;
            }
            int64_t st = wh->pub[p];
            int r = tv_next_out(g, st, j, h);
            wh->dst[p] = r;
            if (r < 0) {
                algo_gossip_release(g, h, p);
            } else if (algo_gossip_send(g, h, r, g->msg_bytes, on_msg,
                                        msg_arg(st, wh->gen, g->w[r].gen)) < 0) {
                return;
            }
        }
    }
    recheck(g, j);
    algo_gossip_complete_ready(g);
}

/* Worker j has just crashed: the sends that will now never be combined
 * free their buffers, the neighbours waiting for j re-check. */
static void crash(algo_gossip *g, int j)
{
    algo_env *env = g->env;
    gworker *wj = &g->w[j];
    algo_env_grad_wait(env, j);
    algo_env_idle_end(env, j);
    wj->gen++;
    wj->tseq++;
    wj->kc = wj->k;
    if (g->gc && algo_gossip_group_crash(g, j))
        return; /* a joiner that had not started: nothing in flight */
    g->iter_samples[wj->k % g->R] -= env->w[j].grad_samples; /* lost gradient */
    wj->published = 0;
    wj->wait_slot = 0;
    wj->ready_last = 0;
    wj->timed_out = 0;
    if (g->tv) {
        tv_crash(g, j);
        return;
    }
    /* senders to j: what j has not combined never will be */
    for (int a = 0; a < wj->nnb; a++) {
        gworker *wa = &g->w[wj->nb[a].j];
        for (int p = 0; p < 2; p++)
            if (wa->pub[p] >= wj->t && wa->pend[p] > 0)
                algo_gossip_release(g, wj->nb[a].j, p);
    }
    /* j's own messages still in flight are dropped on arrival: their
     * receivers will not release j */
    for (int a = 0; a < wj->nnb; a++) {
        int r = wj->nb[a].j;
        gworker *wr = &g->w[r];
        gnb *b = nb_of(wr, j);
        if (!b || env->w[r].down)
            continue;
        for (int p = 0; p < 2; p++) {
            int64_t st = wj->pub[p];
            if (st >= 0 && st >= wr->t && st >= wr->join_t && b->got[p] != st &&
                wj->pend[p] > 0)
                wj->pend[p]--;
        }
    }
    recheck(g, j);
    algo_gossip_complete_ready(g);
}

int algo_gossip_crash_complete(const algo_gossip *g, int64_t k)
{
    int c = (int)g->done_cnt[k % g->R];
    if (c == 0)
        return 0;
    for (int j = 0; j < g->n; j++)
        if (g->env->w[j].down && g->w[j].kc <= k)
            c++;
    return c >= g->n;
}

/* max(k, the first iteration live worker r has not published a step of). */
static int64_t later_iter(const algo_gossip *g, int r, int64_t k)
{
    const gworker *wr = &g->w[r];
    int64_t next = wr->t + (wr->published || wr->ready_last ? 1 : 0);
    int64_t kr = g->steps > 0 ? (next + g->steps - 1) / g->steps : wr->k;
    if (kr < wr->k)
        kr = wr->k;
    return kr > k ? kr : k;
}

/* Worker j rejoins (the rule: gossip.h, algo_gossip_fault). */
static void rejoin(algo_gossip *g, int j)
{
    algo_env *env = g->env;
    gworker *wj = &g->w[j];
    algo_env_grad_wait(env, j);
    wj->gen++;
    wj->tseq++;
    int up = 0;
    int64_t k = wj->kc > g->k_lo ? wj->kc : g->k_lo;
    for (int a = 0; a < wj->nnb; a++) {
        int r = wj->nb[a].j;
        if (env->w[r].down)
            continue;
        g->ptrs[up++] = g->w[r].x;
        k = later_iter(g, r, k);
    }
    if (g->gc) { /* collectives: after the latest iteration begun (gossip_group.c) */
        int64_t kj = algo_gossip_group_join_iter(g);
        k = kj > k ? kj : k;
    } else if (g->tv) { /* a sender anywhere along a cycle may reach j: start after all */
        wj->ntv = 0;
        for (int r = 0; r < g->n; r++)
            if (r != j && !env->w[r].down)
                k = later_iter(g, r, k);
    }
    if (up > 0)
        algo_mean(wj->x, g->ptrs, up, g->d);
    if (g->ops.reset)
        g->ops.reset(g->m, env, j);
    if (g->resync)
        resync_pairs(g, j);
    for (int a = 0; a < wj->nnb; a++) {
        wj->nb[a].got[0] = wj->nb[a].got[1] = -1;
        wj->nb[a].dead_gen = UINT32_MAX;
    }
    /* the iterations it missed count as done by it */
    int64_t from = wj->kc > g->k_lo ? wj->kc : g->k_lo;
    if (algo_gossip_window_fit(g, k + 1) < 0)
        return;
    for (int64_t q = from; q < k; q++)
        g->done_cnt[q % g->R]++;
    wj->kc = INT64_MAX;
    wj->k = k;
    wj->t = k * g->steps;
    wj->join_t = wj->t;
    wj->published = 0;
    wj->timed_out = 0;
    wj->ready_last = 0;
    wj->wait_slot = 0;
    algo_gossip_complete_ready(g);
    if (g->gc) {
        algo_gossip_group_rejoin(g, j);
        return;
    }
    algo_gossip_begin_iter(g, j);
    recheck(g, j);
}

void algo_gossip_fault(void *p, const algo_fault *ev)
{
    algo_gossip *g = p;
    if (!g->crash || ev->target < 0 || ev->target >= g->n)
        return;
    if (ev->kind == ALGO_FAULT_CRASH)
        crash(g, ev->target);
    else if (ev->kind == ALGO_FAULT_REJOIN)
        rejoin(g, ev->target);
}

int algo_gossip_crash_init(algo_gossip *g, sim_err *err)
{
    algo_env *env = g->env;
    const algo_gossip_ops *ops = &g->ops;
    const char *why = NULL, *sec = "faults", *key = "schedule";
    const char *sched = cfg_get_string(env->cfg, "faults", "schedule");
    if (!sched || !strcmp(sched, "none")) /* the crashes come from mtbf */
        key = "mtbf";
    if (ops->bytes && topo_graph_period(env->graph) != 1) {
        why = "compressed gossip on a time-varying graph";
        sec = "algorithm";
        key = "compressor";
    } else if (!ops->reset) {
        why = "this method's gossip";
    }
    if (why)
        return cfg_error(env->cfg, sec, key, SIM_ECONFIG, err,
                                "%s: %s does not support worker crashes ([faults])",
                                env->cfg->algorithm, why);
    g->tv = topo_graph_period(env->graph) != 1;
    g->resync = ops->bytes != NULL;
    size_t nn = 0;
    for (int i = 0; i < env->n; i++) {
        const int *nb;
        nn += (size_t)(g->tv ? topo_graph_neighbors(env->graph, i, &nb)
                             : topo_graph_in_at(env->graph, 0, i, &nb));
    }
    g->nb_slab = algo_env_alloc(env, nn * sizeof *g->nb_slab);
    if (!g->nb_slab)
        return algo_env_alloc_check(env, env->cfg->algorithm, err);
    nn = 0;
    for (int i = 0; i < env->n; i++) {
        gworker *w = &g->w[i];
        const int *nb;
        w->nnb = g->tv ? topo_graph_neighbors(env->graph, i, &nb)
                       : topo_graph_in_at(env->graph, 0, i, &nb);
        w->nb = g->nb_slab + nn;
        nn += (size_t)w->nnb;
        for (int a = 0; a < w->nnb; a++)
            w->nb[a] = (gnb){.j = nb[a], .got = {-1, -1}, .dead_gen = UINT32_MAX};
        w->kc = INT64_MAX;
        w->pub[0] = w->pub[1] = -1;
        w->dst[0] = w->dst[1] = -1;
        w->keep_t[0] = w->keep_t[1] = -1;
        if (g->tv) {
            w->cap_tv = 4;
            w->tv = malloc((size_t)w->cap_tv * sizeof *w->tv);
            if (!w->tv)
                return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", env->cfg->algorithm);
        }
    }
    return 0;
}
