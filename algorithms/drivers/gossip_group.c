/* The gossip driver's collectives under crashes: consensus_control's exact
 * and adaptive all-reduces and slowmo (base = dpsgd)'s periodic average run
 * over groups of live workers (group.c), numbered q = 0, 1, ... in the same
 * sequence on every worker; the gossip steps between them keep the rules
 * of gossip_crash.c. The abort, timeout and rejoin rules:
 * docs/faults.md, the consensus_control row. */
#include "algorithms/drivers/gossip_impl.h"
#include "algorithms/drivers/group.h"

#include <stdlib.h>

enum { G_OUT = 0, G_ENTERED, G_WAITING, G_OFF, G_PENDING };

typedef struct ggroups {
    algo_groups groups;
    int64_t round;       /* the oldest collective not completed */
    int need, done;      /* completions it counts, completions so far */
    int formed;          /* its first rank has completed */
    int64_t *wround;     /* per worker: the collective it works towards */
    int64_t *late;       /* per worker: the collective it enters after the timeout */
    int *wstat;          /* G_* */
    int *wkind;          /* the kind of the collective it is in */
    uint32_t *tgen;      /* its pending timeout */
    int *m;              /* scratch member list */
    int64_t kmax, tmax, qmax; /* the latest iteration begun: its first step, collective */
} ggroups;

static void on_done(sim_engine *eng, void *ctx, int rank);
static void on_sdone(sim_engine *eng, void *ctx, int rank);

static algo_group *add(algo_gossip *g, const int *members, int n, int64_t first)
{
    algo_group_colls c = {.kind = g->env->allreduce_kind, .done = on_done,
                          .aux_done = g->ops.plan ? on_sdone : NULL, .aux_ring = 1,
                          .owner = g, .who = g->env->cfg->algorithm};
    algo_group *gr = algo_groups_add(&g->gc->groups, g->env, members, n, first, &c);
    if (!gr && !g->env->error.code)
        algo_gossip_fail(g, SIM_ENOMEM, "out of memory for a group");
    return gr;
}

/* At the run's end: the groups, rebuilt as workers crash and rejoin. */
static void groups_free(void *p) { algo_groups_release(&((ggroups *)p)->groups); }

int algo_gossip_group_init(algo_gossip *g, sim_err *err)
{
    algo_env *env = g->env;
    size_t n = (size_t)g->n;
    ggroups *f = algo_env_own(env, algo_env_calloc(env, 1, sizeof *f), groups_free);
    g->gc = f;
    if (!f)
        return algo_env_alloc_check(env, env->cfg->algorithm, err);
    f->wround = algo_env_calloc(env, n, sizeof *f->wround);
    f->late = algo_env_alloc(env, n * sizeof *f->late);
    f->wstat = algo_env_calloc(env, n, sizeof *f->wstat);
    f->wkind = algo_env_calloc(env, n, sizeof *f->wkind);
    f->tgen = algo_env_calloc(env, n, sizeof *f->tgen);
    f->m = algo_env_alloc(env, n * sizeof *f->m);
    int rc = algo_env_alloc_check(env, env->cfg->algorithm, err);
    if (rc < 0)
        return rc;
    for (int i = 0; i < g->n; i++) {
        f->late[i] = -1;
        f->m[i] = i;
    }
    f->kmax = -1;
    if (!add(g, f->m, g->n, 0))
        return sim_err_set(err, g->env->error.code ? g->env->error.code : SIM_ENOMEM,
                           "%s: cannot build the collectives", g->env->cfg->algorithm);
    f->need = g->n;
    return 0;
}

static void enter(algo_gossip *g, int i)
{
    ggroups *f = g->gc;
    algo_group *gr = algo_groups_for(&f->groups, f->wround[i]);
    int rank = gr ? gr->rank_of[i] : -1;
    if (rank < 0) {
        algo_gossip_fail(g, SIM_EINTERNAL, "a worker is in no group of its collective");
        return;
    }
    f->wstat[i] = G_ENTERED;
    algo_env_coll_enter(g->env, f->wkind[i] == ALGO_GC_SCALAR ? gr->aux : gr->coll, rank,
                        algo_gossip_coll_bytes(g, (algo_gossip_coll)f->wkind[i]));
}

static ALGO_ON_EVENT(on_timeout)
{
    algo_gossip *g = ctx;
    ggroups *f = g->gc;
    int w = algo_group_arg_w(arg);
    if (f->tgen[w] != algo_group_arg_gen(arg) || f->wstat[w] != G_WAITING)
        return;
    f->late[w] = -1;
    enter(g, w);
}

static void wait_timeout(algo_gossip *g, int w)
{
    ggroups *f = g->gc;
    f->wstat[w] = G_WAITING;
    algo_group_timeout(g->env, on_timeout, g, w, ++f->tgen[w]);
}

void algo_gossip_group_enter(algo_gossip *g, int i, algo_gossip_coll kind)
{
    ggroups *f = g->gc;
    f->wkind[i] = (int)kind;
    if (f->late[i] == f->wround[i])
        wait_timeout(g, i);
    else
        enter(g, i);
}

/* Counts the oldest collective when every completion it needs is in. */
static void round_check(ggroups *f)
{
    if (f->need <= 0 || f->done < f->need)
        return;
    f->round++;
    f->done = 0;
    f->formed = 0;
    algo_group *gr = algo_groups_for(&f->groups, f->round);
    f->need = gr ? gr->n : 0;
}

static void part_done(algo_group *gr, int rank, int scalar)
{
    algo_gossip *g = gr->owner;
    ggroups *f = g->gc;
    int w = gr->members[rank];
    int64_t q = f->wround[w];
    if (f->wstat[w] != G_ENTERED || q != f->round || algo_groups_for(&f->groups, q) != gr ||
        (f->wkind[w] == ALGO_GC_SCALAR) != scalar)
        return; /* a crashed worker's, or an aborted collective's */
    algo_gossip_coll kind = (algo_gossip_coll)f->wkind[w];
    if (!f->formed) {
        algo_gossip_coll_form(g, kind, w, gr->members, gr->n);
        f->formed = 1;
    }
    f->wstat[w] = G_OUT;
    f->wround[w] = q + 1;
    f->done++;
    round_check(f);
    algo_gossip_part_done(g, kind, w);
}

static void on_done(sim_engine *eng SIM_UNUSED, void *ctx, int rank)
{
    part_done(ctx, rank, 0);
}

static void on_sdone(sim_engine *eng SIM_UNUSED, void *ctx, int rank)
{
    part_done(ctx, rank, 1);
}

/* The pending joiners start iteration kmax at step tmax, members of the
 * collectives from qmax on. */
static void start_joiners(algo_gossip *g)
{
    ggroups *f = g->gc;
    int k = 0, any = 0;
    const algo_group *last = f->groups.g[f->groups.n - 1];
    for (int i = 0; i < g->n; i++) {
        any |= f->wstat[i] == G_PENDING;
        if (f->wstat[i] == G_PENDING || (last->rank_of[i] >= 0 && !g->env->w[i].down))
            f->m[k++] = i;
    }
    if (!any || !add(g, f->m, k, f->qmax))
        return;
    if (f->round == f->qmax)
        f->need = k;
    for (int j = 0; j < g->n; j++) {
        if (f->wstat[j] != G_PENDING)
            continue;
        gworker *wj = &g->w[j];
        f->wstat[j] = G_OUT;
        f->wround[j] = f->qmax;
        f->late[j] = -1;
        wj->t = wj->join_t = f->tmax;
        algo_env_idle_end(g->env, j);
        algo_gossip_begin_iter(g, j);
    }
}

void algo_gossip_group_begin(algo_gossip *g, int i)
{
    ggroups *f = g->gc;
    const gworker *w = &g->w[i];
    if (w->k <= f->kmax)
        return;
    f->kmax = w->k;
    f->tmax = w->t;
    f->qmax = f->wround[i];
    start_joiners(g);
}

/* Frees the groups no lookup finds any more (every lookup asks for the
 * oldest collective not completed or a live worker's) whose collectives
 * have nothing in flight. */
static void collect(ggroups *f, int n)
{
    int64_t low = f->round;
    for (int w = 0; w < n; w++)
        if (f->wstat[w] != G_OFF && f->wstat[w] != G_PENDING && f->wround[w] < low)
            low = f->wround[w];
    algo_groups_collect(&f->groups, low, NULL, NULL, NULL);
}

int algo_gossip_group_crash(algo_gossip *g, int c)
{
    ggroups *f = g->gc;
    int pending = f->wstat[c] == G_PENDING;
    int64_t a = f->formed ? f->round + 1 : f->round;
    if (f->formed && f->wround[c] == f->round && f->wstat[c] == G_ENTERED)
        f->need--; /* the finishing collective does not wait for it */
    f->wstat[c] = G_OFF;
    f->tgen[c]++;
    algo_group *gr = algo_groups_for(&f->groups, a);
    if (gr && gr->rank_of[c] >= 0) {
        int k = algo_group_members_except(gr, c, f->m);
        algo_group *ng = add(g, f->m, k, a);
        if (!ng)
            return pending;
        if (a == f->round)
            f->need = ng->n; /* nobody has completed collective a */
        for (int r = 0; r < ng->n; r++) {
            int w = ng->members[r];
            f->late[w] = a;
            if (f->wround[w] == a && (f->wstat[w] == G_ENTERED || f->wstat[w] == G_WAITING))
                wait_timeout(g, w);
        }
    }
    round_check(f);
    collect(f, g->n);
    return pending;
}

int64_t algo_gossip_group_join_iter(const algo_gossip *g) { return g->gc->kmax + 1; }

void algo_gossip_group_rejoin(algo_gossip *g, int j)
{
    ggroups *f = g->gc;
    gworker *wj = &g->w[j];
    f->wstat[j] = G_PENDING;
    wj->join_t = INT64_MAX; /* no one waits for it before it starts */
    algo_env_idle_begin(g->env, j);
    for (int i = 0; i < g->n; i++)
        if (i != j && !g->env->w[i].down && f->wstat[i] != G_PENDING)
            return;
    /* alone: a group of its own after every step and collective so far */
    int64_t t = 0, q = 0;
    for (int i = 0; i < g->n; i++) {
        t = g->w[i].t + 1 > t ? g->w[i].t + 1 : t;
        q = f->wround[i] > q ? f->wround[i] : q;
    }
    f->round = q;
    f->done = 0;
    f->formed = 0;
    f->need = 0;
    f->kmax = wj->k;
    f->tmax = t;
    f->qmax = q;
    start_joiners(g);
}
