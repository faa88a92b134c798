/* The neighbour lists of a NEIGHBOR collective (collective.c's opening
 * comment): kept per round parity, a set_neighbors taking effect at the
 * first enter of the next round; and the route checks every kind makes at
 * create. */
#include "sim/coll_impl.h"

#include <stdlib.h>
#include <string.h>

void coll_lists_release(nbr_lists *L)
{
    free(L->off);
    free(L->nbr);
    free(L->in_deg);
    memset(L, 0, sizeof *L);
}

int coll_lists_set(const sim_coll *c, nbr_lists *L, const int *off, const int *nbr,
                   sim_err *err)
{
    int n = c->n;
    if (!off || !nbr)
        return sim_err_set(err, SIM_EINPUT, "collective: neighbour lists missing");
    if (off[0] != 0)
        return sim_err_set(err, SIM_EINPUT, "collective: neighbour offsets must start at 0");
    for (int r = 0; r < n; r++)
        if (off[r + 1] < off[r])
            return sim_err_set(err, SIM_EINPUT,
                               "collective: neighbour offsets decrease at rank %d", r);
    int m = off[n];
    for (int k = 0; k < m; k++)
        if (nbr[k] < 0 || nbr[k] >= n)
            return sim_err_set(err, SIM_EINPUT, "collective: neighbour %d out of range (%d ranks)",
                               nbr[k], n);
    if (!L->off) {
        L->off = malloc(sizeof *L->off * (size_t)(n + 1));
        L->in_deg = malloc(sizeof *L->in_deg * (size_t)n);
        if (!L->off || !L->in_deg)
            return sim_err_set(err, SIM_ENOMEM, "collective: out of memory");
    }
    if (m > L->cap_nbr || !L->nbr) {
        int *p = realloc(L->nbr, sizeof *p * (size_t)(m ? m : 1));
        if (!p)
            return sim_err_set(err, SIM_ENOMEM, "collective: out of memory");
        L->nbr = p;
        L->cap_nbr = m;
    }
    memcpy(L->off, off, sizeof *off * (size_t)(n + 1));
    memcpy(L->nbr, nbr, sizeof *nbr * (size_t)m);
    memset(L->in_deg, 0, sizeof *L->in_deg * (size_t)n);
    for (int k = 0; k < m; k++)
        L->in_deg[nbr[k]]++;
    return 0;
}

int coll_check_route(sim_coll *c, int a, int b, sim_err *err)
{
    int ha = a == c->n ? c->ps_host : c->hosts[a];
    int hb = b == c->n ? c->ps_host : c->hosts[b];
    int rc = sim_net_route_info(c->net, ha, hb, NULL, NULL, NULL);
    if (rc == SIM_ENOMEM)
        return sim_err_set(err, SIM_ENOMEM,
                           "collective: out of memory computing the route from host %d to host %d",
                           ha, hb);
    if (rc)
        return sim_err_set(err, SIM_EINPUT, "collective: no route from host %d to host %d", ha,
                           hb);
    return 0;
}

int coll_check_nbr_routes(sim_coll *c, const nbr_lists *L, sim_err *err)
{
    for (int r = 0; r < c->n; r++)
        for (int k = L->off[r]; k < L->off[r + 1]; k++) {
            int rc = coll_check_route(c, r, L->nbr[k], err);
            if (rc)
                return rc;
        }
    return 0;
}

int sim_coll_set_neighbors(sim_coll *c, const int *nbr_off, const int *nbr, sim_err *err)
{
    if (c->kind != SIM_COLL_NEIGHBOR)
        return sim_err_set(err, SIM_EINPUT, "collective: neighbour lists need kind NEIGHBOR");
    int rc = coll_lists_set(c, &c->pending, nbr_off, nbr, err);
    if (rc)
        return rc;
    rc = coll_check_nbr_routes(c, &c->pending, err);
    if (rc)
        return rc;
    uint64_t v = c->slot[0].version > c->slot[1].version ? c->slot[0].version
                                                         : c->slot[1].version;
    if (c->pending.version > v)
        v = c->pending.version;
    c->pending.version = v + 1;
    return 0;
}

int coll_lists_install(sim_coll *c, int64_t k, sim_err *err)
{
    nbr_lists *dst = &c->slot[k & 1];
    const nbr_lists *from = &c->slot[(k - 1) & 1];
    if (dst->version > from->version)
        from = dst;
    if (c->pending.version > from->version)
        from = &c->pending;
    if (from == dst)
        return 0;
    int rc = coll_lists_set(c, dst, from->off, from->nbr, err);
    if (rc)
        return rc;
    dst->version = from->version;
    return 0;
}
