/* Groups of live workers (see group.h). */
#include "algorithms/drivers/group.h"

#include <stdlib.h>
#include <string.h>

static void group_free(algo_group *g)
{
    sim_coll_destroy(g->coll);
    sim_coll_destroy(g->aux);
    free(g->members);
    free(g->rank_of);
    free(g);
}

algo_group *algo_groups_add(algo_groups *gs, algo_env *env, const int *members, int n,
                            int64_t first, const algo_group_colls *c)
{
    if (gs->n == gs->cap) {
        int cap = gs->cap ? 2 * gs->cap : 8;
        algo_group **g = realloc(gs->g, (size_t)cap * sizeof *g);
        if (!g)
            return NULL;
        gs->g = g;
        gs->cap = cap;
    }
    algo_group *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->members = malloc((size_t)(n > 0 ? n : 1) * sizeof *g->members);
    g->rank_of = malloc((size_t)env->n * sizeof *g->rank_of);
    if (!g->members || !g->rank_of) {
        free(g->members);
        free(g->rank_of);
        free(g);
        return NULL;
    }
    g->n = n;
    g->first_round = first;
    for (int i = 0; i < env->n; i++)
        g->rank_of[i] = -1;
    for (int r = 0; r < n; r++) {
        g->members[r] = members[r];
        g->rank_of[members[r]] = r;
    }
    g->owner = c->owner;
    g->id = gs->made++;
    gs->g[gs->n++] = g;
    if (n > 0 && !c->none) {
        g->coll = algo_group_coll(env, g, 0, c->kind, c->done, g, c->who);
        if (!g->coll)
            return NULL;
        if (c->aux_done) {
            g->aux = algo_group_coll(env, g, 0, c->aux_ring ? SIM_COLL_RING : env->allreduce_kind,
                                     c->aux_done, g, c->who);
            if (!g->aux)
                return NULL;
        }
    }
    return g;
}

algo_group *algo_groups_for(const algo_groups *gs, int64_t round)
{
    for (int i = gs->n - 1; i >= 0; i--)
        if (gs->g[i]->first_round <= round)
            return gs->g[i];
    return NULL;
}

int algo_group_timeout(algo_env *env, sim_handler fn, void *ctx, int w, uint32_t gen)
{
    if (sim_engine_schedule(env->eng, env->sync_timeout, fn, ctx, algo_group_arg(w, gen), NULL, NULL))
        return 0;
    return algo_env_fail(env, SIM_ENOMEM, "%s: cannot schedule a timeout", env->cfg->algorithm);
}

/* Frees the i-th group kept (its collectives, not its ext) and closes the
 * gap; the caller makes sure nothing refers to it any more. */
static void groups_drop(algo_groups *gs, int i)
{
    group_free(gs->g[i]);
    memmove(gs->g + i, gs->g + i + 1, (size_t)(gs->n - i - 1) * sizeof *gs->g);
    gs->n--;
}

void algo_groups_collect(algo_groups *gs, int64_t low, int (*held)(void *ctx, const algo_group *g),
                         void (*drop)(void *ctx, algo_group *g), void *ctx)
{
    const algo_group *keep = algo_groups_for(gs, low);
    for (int i = 0; keep && gs->g[i] != keep;) {
        algo_group *g = gs->g[i];
        if (sim_coll_busy(g->coll) || sim_coll_busy(g->aux) || (held && held(ctx, g))) {
            i++;
            continue;
        }
        if (drop)
            drop(ctx, g);
        groups_drop(gs, i);
    }
}

void algo_groups_release(algo_groups *gs)
{
    for (int i = 0; i < gs->n; i++)
        group_free(gs->g[i]);
    free(gs->g);
    gs->g = NULL;
    gs->n = gs->cap = gs->made = 0;
}

int algo_group_members_except(const algo_group *g, int c, int *out)
{
    int k = 0;
    for (int r = 0; r < g->n; r++)
        if (g->members[r] != c)
            out[k++] = g->members[r];
    return k;
}

int algo_group_members_joining(const algo_group *next, const int *pending, const algo_env *env,
                               int *out)
{
    int joiners = 0;
    for (int i = 0; i < env->n; i++)
        joiners += pending[i] && !env->w[i].down;
    if (!joiners)
        return 0;
    int k = 0;
    for (int i = 0; i < env->n; i++)
        if ((next && next->rank_of[i] >= 0) || (pending[i] && !env->w[i].down))
            out[k++] = i;
    return k;
}

sim_coll *algo_group_coll(algo_env *env, algo_group *g, int alltoall, sim_coll_kind kind,
                          sim_coll_done done, void *ctx, const char *who)
{
    sim_coll_desc desc = {.kind = kind, .n = g->n, .hosts = g->members,
                          .ps_host = env->server_host, .per_node = env->per_node,
                          .done = done, .ctx = ctx};
    int *off = NULL, *nbr = NULL;
    if (alltoall) {
        if (g->n < 2)
            return NULL; /* nothing to exchange */
        off = malloc((size_t)(g->n + 1) * sizeof *off);
        nbr = malloc((size_t)g->n * (size_t)g->n * sizeof *nbr);
        if (!off || !nbr) {
            free(off);
            free(nbr);
            algo_env_fail(env, SIM_ENOMEM, "%s: out of memory for a group", who);
            return NULL;
        }
        int k = 0;
        for (int i = 0; i < g->n; i++) {
            off[i] = k;
            for (int j = 0; j < g->n; j++)
                if (j != i)
                    nbr[k++] = j;
        }
        off[g->n] = k;
        desc.kind = SIM_COLL_NEIGHBOR;
        desc.per_node = 0;
        desc.nbr_off = off;
        desc.nbr = nbr;
    }
    sim_err e = {0};
    sim_coll *c = NULL;
    int rc = algo_env_coll_create(env, &desc, &c, &e);
    free(off);
    free(nbr);
    if (rc < 0)
        algo_env_fail(env, rc, "%s: %s", who, e.msg);
    return c;
}
