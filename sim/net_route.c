/* Routes of the network model, computed when first used.
 *
 * Shortest routing gives the same routes as a breadth-first search from the
 * source over igraph's incidence lists (vertices in BFS order, incident
 * edges in igraph's order, the first discovery of a vertex wins), without
 * keeping a table per source (that is (hosts+1)^2 integers on a star):
 *  - forests (every component a tree, e.g. the star): the path is unique;
 *    it is the walk from both ends up to their common ancestor in a forest
 *    rooted by one BFS at creation (parent link, depth, component per
 *    vertex), O(path) per route and O(vertices) memory;
 *  - other graphs: a BFS from the source that stops when the destination is
 *    discovered (the predecessors on the path are final by then), its route
 *    kept in a cache of the host pairs used (open addressing on (src, dst),
 *    routes packed in one pool). Memory grows with the pairs used up to a
 *    budget (ROUTE_BUDGET, sim_net_set_route_budget); past it the cache is
 *    emptied and refilled as routes are asked again, which changes no
 *    route (the search is deterministic), only the time spent.
 * ECMP routing: a BFS from the destination gives every vertex's distance
 * to it (cached per destination, the cache flushed whole past a memory
 * budget); the message then walks from the source, at each vertex choosing
 * among the neighbours one hop closer (in incidence order) by a fixed hash
 * of (src, dst, message number, hop). No pointer or clock enters the hash,
 * so runs repeat exactly.
 * Links down (sim_net_link_set_down): every search skips them, the cache
 * and the distance tables are dropped at each change of state, and a pair
 * that only down links connect is NET_ROUTE_CUT (on a forest: its one
 * path crosses a down link). With no link down nothing is checked beyond
 * one counter, and the routes are the same as before. */
#include <stdlib.h>
#include <string.h>

#include "sim/net_internal.h"

/* Distance arrays kept for ECMP before the cache is flushed, in bytes. */
#define DIST_BUDGET ((size_t)64 << 20)
/* The shortest-route cache's default budget, in bytes. */
#define ROUTE_BUDGET ((size_t)64 << 20)

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The other end of edge e seen from u, and the directed link u -> it;
 * -1 for a self-loop. */
static int edge_step(const sim_net *net, igraph_integer_t e, int u, int *link)
{
    igraph_integer_t from = IGRAPH_FROM(&net->graph, e), to = IGRAPH_TO(&net->graph, e);
    if (from == to)
        return -1;
    *link = (int)(from == u ? 2 * e : 2 * e + 1);
    return (int)(from == u ? to : from);
}

/* Roots a BFS forest at the lowest vertex of each component; the graph is
 * a forest when it has exactly vertices - components edges. */
static int forest_init(sim_net *net)
{
    int nv = net->n_nodes;
    net->fo_up = malloc(sizeof *net->fo_up * (size_t)nv);
    net->fo_depth = malloc(sizeof *net->fo_depth * (size_t)nv);
    net->fo_comp = malloc(sizeof *net->fo_comp * (size_t)nv);
    if (!net->fo_up || !net->fo_depth || !net->fo_comp)
        return -1;
    for (int v = 0; v < nv; v++)
        net->fo_comp[v] = -1;
    int n_comp = 0;
    for (int r = 0; r < nv; r++) {
        if (net->fo_comp[r] >= 0)
            continue;
        int head = 0, tail = 0;
        net->queue[tail++] = r;
        net->fo_comp[r] = n_comp;
        net->fo_depth[r] = 0;
        net->fo_up[r] = -1;
        while (head < tail) {
            int u = net->queue[head++];
            igraph_vector_int_t *inc = igraph_inclist_get(&net->inc, u);
            igraph_integer_t deg = igraph_vector_int_size(inc);
            for (igraph_integer_t i = 0; i < deg; i++) {
                int link;
                int v = edge_step(net, VECTOR(*inc)[i], u, &link);
                if (v < 0 || net->fo_comp[v] >= 0)
                    continue;
                net->fo_comp[v] = n_comp;
                net->fo_depth[v] = net->fo_depth[u] + 1;
                net->fo_up[v] = link ^ 1;
                net->queue[tail++] = v;
            }
        }
        n_comp++;
    }
    net->is_forest = (int64_t)net->n_links / 2 == (int64_t)nv - n_comp;
    if (!net->is_forest) {
        free(net->fo_up);
        free(net->fo_depth);
        free(net->fo_comp);
        net->fo_up = net->fo_depth = net->fo_comp = NULL;
    }
    return 0;
}

int net_route_init(sim_net *net)
{
    size_t nv = (size_t)(net->n_nodes ? net->n_nodes : 1);
    net->queue = malloc(sizeof *net->queue * nv);
    net->path = malloc(sizeof *net->path * nv);
    net->bfs_pred = malloc(sizeof *net->bfs_pred * nv);
    net->bfs_stamp = calloc(nv, sizeof *net->bfs_stamp);
    if (!net->queue || !net->path || !net->bfs_pred || !net->bfs_stamp)
        return -1;
    if (net->routing == SIM_ROUTE_ECMP) {
        net->dist = calloc((size_t)net->n_hosts, sizeof *net->dist);
        if (!net->dist)
            return -1;
        net->max_dist = DIST_BUDGET / (sizeof(int) * nv);
        if (net->max_dist < 1)
            net->max_dist = 1;
    }
    return forest_init(net);
}

static void dist_flush(sim_net *net)
{
    for (int h = 0; h < net->n_hosts; h++) {
        free(net->dist[h]);
        net->dist[h] = NULL;
    }
    net->n_dist = 0;
}

void net_route_release(sim_net *net)
{
    free(net->fo_up);
    free(net->fo_depth);
    free(net->fo_comp);
    free(net->queue);
    free(net->path);
    free(net->bfs_pred);
    free(net->bfs_stamp);
    if (net->dist) {
        dist_flush(net);
        free(net->dist);
    }
    free(net->rc.key);
    free(net->rc.off);
    free(net->rc.pool);
}

/* The unique forest path, into net->path. */
static int route_forest(sim_net *net, int src, int dst, int *n_hops)
{
    if (net->fo_comp[src] != net->fo_comp[dst])
        return SIM_EINPUT;
    int a = src, b = dst, len = 0;
    while (a != b) {
        if (net->fo_depth[a] >= net->fo_depth[b]) {
            a = net_link_tail(net, net->fo_up[a] ^ 1);
        } else {
            b = net_link_tail(net, net->fo_up[b] ^ 1);
        }
        len++;
    }
    int lo = 0, hi = len;
    a = src;
    b = dst;
    while (a != b) {
        if (net->fo_depth[a] >= net->fo_depth[b]) {
            net->path[lo++] = net->fo_up[a];
            a = net_link_tail(net, net->fo_up[a] ^ 1);
        } else {
            net->path[--hi] = net->fo_up[b] ^ 1;
            b = net_link_tail(net, net->fo_up[b] ^ 1);
        }
    }
    *n_hops = len;
    return 0;
}

static uint32_t bfs_begin(sim_net *net)
{
    if (++net->bfs_epoch == 0) {
        memset(net->bfs_stamp, 0, sizeof *net->bfs_stamp * (size_t)net->n_nodes);
        net->bfs_epoch = 1;
    }
    return net->bfs_epoch;
}

/* BFS from src until dst is discovered (over the up links when
 * skip_down); the path into net->path. */
static int route_bfs(sim_net *net, int src, int dst, int skip_down, int *n_hops)
{
    uint32_t ep = bfs_begin(net);
    int *pred = net->bfs_pred;
    net->bfs_stamp[src] = ep;
    pred[src] = PRED_SOURCE;
    int head = 0, tail = 0, found = 0;
    net->queue[tail++] = src;
    while (head < tail && !found) {
        int u = net->queue[head++];
        igraph_vector_int_t *inc = igraph_inclist_get(&net->inc, u);
        igraph_integer_t deg = igraph_vector_int_size(inc);
        for (igraph_integer_t i = 0; i < deg; i++) {
            int link;
            int v = edge_step(net, VECTOR(*inc)[i], u, &link);
            if (v < 0 || net->bfs_stamp[v] == ep || (skip_down && net->links[link].down))
                continue;
            net->bfs_stamp[v] = ep;
            pred[v] = link;
            if (v == dst) {
                found = 1;
                break;
            }
            net->queue[tail++] = v;
        }
    }
    if (!found)
        return SIM_EINPUT;
    int len = 0;
    for (int v = dst; pred[v] != PRED_SOURCE; v = net_link_tail(net, pred[v]))
        len++;
    int h = len;
    for (int v = dst; pred[v] != PRED_SOURCE; v = net_link_tail(net, pred[v]))
        net->path[--h] = pred[v];
    *n_hops = len;
    return 0;
}

static size_t cache_slot(const route_cache *rc, uint64_t key)
{
    size_t mask = rc->cap - 1, i = (size_t)mix64(key) & mask;
    while (rc->key[i] && rc->key[i] != key)
        i = (i + 1) & mask;
    return i;
}

static int cache_grow(route_cache *rc)
{
    size_t nc = rc->cap ? 2 * rc->cap : 1024;
    uint64_t *k = calloc(nc, sizeof *k);
    size_t *o = malloc(sizeof *o * nc);
    if (!k || !o) {
        free(k);
        free(o);
        return -1;
    }
    route_cache old = *rc;
    rc->key = k;
    rc->off = o;
    rc->cap = nc;
    for (size_t i = 0; i < old.cap; i++)
        if (old.key[i]) {
            size_t j = cache_slot(rc, old.key[i]);
            rc->key[j] = old.key[i];
            rc->off[j] = old.off[i];
        }
    free(old.key);
    free(old.off);
    return 0;
}

/* The cache's bytes once a route of n links is stored, with the table and
 * the pool grown as cache_put would grow them. */
static size_t cache_bytes_after(const route_cache *rc, int n)
{
    size_t cap = rc->cap, pool = rc->pool_cap, need = rc->pool_n + (size_t)n + 1;
    if ((rc->n + 1) * 2 > cap)
        cap = cap ? 2 * cap : 1024;
    if (need > pool) {
        pool = pool ? pool : 4096;
        while (pool < need)
            pool *= 2;
    }
    return cap * (sizeof *rc->key + sizeof *rc->off) + pool * sizeof *rc->pool;
}

/* Stores net->path[0..n-1] as the route of key; empties the cache first
 * when storing would take it past its budget. */
static int cache_put(route_cache *rc, uint64_t key, const int *path, int n)
{
    size_t budget = rc->budget ? rc->budget : ROUTE_BUDGET;
    if (rc->n && cache_bytes_after(rc, n) > budget) {
        memset(rc->key, 0, sizeof *rc->key * rc->cap);
        rc->n = 0;
        rc->pool_n = 0;
    }
    if ((rc->n + 1) * 2 > rc->cap && cache_grow(rc))
        return -1;
    size_t need = rc->pool_n + (size_t)n + 1;
    if (need > rc->pool_cap) {
        size_t nc = rc->pool_cap ? rc->pool_cap : 4096;
        while (nc < need)
            nc *= 2;
        int *p = realloc(rc->pool, sizeof *p * nc);
        if (!p)
            return -1;
        rc->pool = p;
        rc->pool_cap = nc;
    }
    size_t i = cache_slot(rc, key);
    rc->key[i] = key;
    rc->off[i] = rc->pool_n;
    rc->pool[rc->pool_n] = n;
    memcpy(rc->pool + rc->pool_n + 1, path, sizeof *path * (size_t)n);
    rc->pool_n = need;
    rc->n++;
    return 0;
}

/* Hop distances to host dst, computed once and cached. */
static const int *dist_get(sim_net *net, int dst)
{
    if (net->dist[dst])
        return net->dist[dst];
    if (net->n_dist >= net->max_dist)
        dist_flush(net);
    int *d = malloc(sizeof *d * (size_t)net->n_nodes);
    if (!d)
        return NULL;
    for (int v = 0; v < net->n_nodes; v++)
        d[v] = -1;
    d[dst] = 0;
    int head = 0, tail = 0;
    net->queue[tail++] = dst;
    while (head < tail) {
        int u = net->queue[head++];
        igraph_vector_int_t *inc = igraph_inclist_get(&net->inc, u);
        igraph_integer_t deg = igraph_vector_int_size(inc);
        for (igraph_integer_t i = 0; i < deg; i++) {
            int link;
            int v = edge_step(net, VECTOR(*inc)[i], u, &link);
            if (v < 0 || d[v] >= 0 || net->links[link].down)
                continue;
            d[v] = d[u] + 1;
            net->queue[tail++] = v;
        }
    }
    net->dist[dst] = d;
    net->n_dist++;
    return d;
}

/* One equal-cost path chosen hop by hop by hash, into net->path. */
static int route_ecmp(sim_net *net, int src, int dst, uint64_t seq, int *n_hops)
{
    const int *d = dist_get(net, dst);
    if (!d)
        return SIM_ENOMEM;
    if (d[src] < 0)
        return SIM_EINPUT;
    uint64_t base = mix64(mix64(mix64((uint64_t)src) ^ (uint64_t)dst) ^ seq);
    int u = src, h = 0;
    while (u != dst) {
        igraph_vector_int_t *inc = igraph_inclist_get(&net->inc, u);
        igraph_integer_t deg = igraph_vector_int_size(inc);
        int count = 0, link;
        for (igraph_integer_t i = 0; i < deg; i++) {
            int v = edge_step(net, VECTOR(*inc)[i], u, &link);
            if (v >= 0 && d[v] == d[u] - 1 && !net->links[link].down)
                count++;
        }
        if (count == 0)
            return SIM_EINTERNAL; /* cannot happen: BFS distances */
        int pick = (int)(mix64(base ^ (uint64_t)h) % (uint64_t)count);
        for (igraph_integer_t i = 0; i < deg; i++) {
            int v = edge_step(net, VECTOR(*inc)[i], u, &link);
            if (v < 0 || d[v] != d[u] - 1 || net->links[link].down || pick-- > 0)
                continue;
            net->path[h++] = link;
            u = v;
            break;
        }
    }
    *n_hops = h;
    return 0;
}

/* The route over the up links failed (SIM_EINPUT): NET_ROUTE_CUT when the
 * whole graph connects the pair. */
static int cut_or_none(sim_net *net, int src, int dst)
{
    int h;
    int rc = route_bfs(net, src, dst, 0, &h);
    return rc == 0 ? NET_ROUTE_CUT : rc;
}

int net_route_get(sim_net *net, int src, int dst, int ecmp, uint64_t seq, const int **links,
                  int *n_hops)
{
    if (net->is_forest) {
        *links = net->path;
        int rc = route_forest(net, src, dst, n_hops);
        for (int k = 0; rc == 0 && net->n_down && k < *n_hops; k++)
            if (net->links[net->path[k]].down)
                rc = NET_ROUTE_CUT;
        return rc;
    }
    if (ecmp && net->dist) {
        *links = net->path;
        int rc = route_ecmp(net, src, dst, seq, n_hops);
        if (rc == SIM_EINPUT && net->n_down)
            rc = cut_or_none(net, src, dst);
        return rc;
    }
    uint64_t key = (((uint64_t)src << 32) | (uint64_t)(uint32_t)dst) + 1;
    if (net->rc.cap) {
        size_t i = cache_slot(&net->rc, key);
        if (net->rc.key[i]) {
            const int *p = net->rc.pool + net->rc.off[i];
            *n_hops = p[0];
            *links = p + 1;
            return 0;
        }
    }
    int rc = route_bfs(net, src, dst, 1, n_hops);
    if (rc == SIM_EINPUT && net->n_down)
        return cut_or_none(net, src, dst);
    if (rc)
        return rc;
    if (cache_put(&net->rc, key, net->path, *n_hops))
        return SIM_ENOMEM;
    *links = net->path;
    return 0;
}

int net_route_get_any(sim_net *net, int src, int dst, const int **links, int *n_hops)
{
    *links = net->path;
    if (net->is_forest)
        return route_forest(net, src, dst, n_hops);
    return route_bfs(net, src, dst, 0, n_hops);
}

void sim_net_set_route_budget(sim_net *net, size_t bytes)
{
    net->rc.budget = bytes;
}

void net_route_invalidate(sim_net *net)
{
    if (net->dist)
        dist_flush(net);
    if (net->rc.cap)
        memset(net->rc.key, 0, sizeof *net->rc.key * net->rc.cap);
    net->rc.n = 0;
    net->rc.pool_n = 0;
}
