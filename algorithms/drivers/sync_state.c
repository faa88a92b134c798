/* The synchronous-round driver's life cycle and queries (see sync.h and
 * sync_impl.h). */
#include "algorithms/drivers/sync_impl.h"

#include <stdlib.h>

/* ---- life cycle ---------------------------------------------------------- */

/* Frees a group's ext (its collectives). */
static void ext_free(gext *x)
{
    if (!x)
        return;
    for (int s = 0; s < ALGO_SYNC_SLOTS_MAX; s++) {
        sim_coll_destroy(x->coll[s]);
        for (int k = 0; k < x->n_sub[s]; k++) {
            sim_coll_destroy(x->sub[s][k]);
            algo_overlap_destroy(x->subov[s][k]);
        }
        free(x->sub[s]);
        free(x->subctx[s]);
        free(x->subov[s]);
        algo_overlap_destroy(x->ov[s]);
    }
    free(x);
}

/* At the run's end: the groups, rebuilt as workers crash and rejoin. */
static void sync_free(void *p)
{
    algo_sync *sy = p;
    for (int i = 0; i < sy->groups.n; i++)
        ext_free(sy->groups.g[i]->ext);
    algo_groups_release(&sy->groups);
}

int algo_sync_create(algo_env *env, const algo_sync_desc *desc, algo_sync **out, sim_err *err)
{
    const cfg_config *cfg = env->cfg;
    *out = NULL;
    algo_sync *sy = algo_env_own(env, algo_env_calloc(env, 1, sizeof *sy), sync_free);
    if (!sy)
        return algo_env_alloc_check(env, desc->who, err);
    sy->env = env;
    sy->d = *desc;
    sy->m = desc->method;
    sy->crashes = algo_env_crashes(env);
    sy->bucketed = cfg->bucket > 0;
    size_t n = (size_t)env->n;
    sy->wround = algo_env_calloc(env, n, sizeof *sy->wround);
    sy->wphase = algo_env_calloc(env, n, sizeof *sy->wphase);
    sy->wstat = algo_env_calloc(env, n, sizeof *sy->wstat);
    sy->pending = algo_env_calloc(env, n, sizeof *sy->pending);
    sy->scratch = algo_env_alloc(env, n * sizeof *sy->scratch);
    sy->wgen = algo_env_calloc(env, n, sizeof *sy->wgen);
    sy->tgen = algo_env_calloc(env, n, sizeof *sy->tgen);
    sy->late = algo_env_alloc(env, n * sizeof *sy->late);
    sy->lateg = algo_env_calloc(env, n, sizeof *sy->lateg);
    sy->wbytes = algo_env_calloc(env, n, sizeof *sy->wbytes);
    sy->wenc = algo_env_calloc(env, n, sizeof *sy->wenc);
    sy->wdec = algo_env_calloc(env, n, sizeof *sy->wdec);
    sy->wov = algo_env_calloc(env, n, sizeof *sy->wov);
    sy->computed = algo_env_calloc(env, n, sizeof *sy->computed);
    sy->bg = algo_env_alloc(env, n * sizeof *sy->bg);
    sy->bglate = algo_env_calloc(env, n, sizeof *sy->bglate);
    if (desc->count == ALGO_SYNC_COUNT_STEPS)
        algo_live_steps_init(&sy->live, env, 2 * desc->span);
    int rc = algo_env_alloc_check(env, desc->who, err);
    if (rc < 0)
        return rc;
    for (int i = 0; i < env->n; i++) {
        sy->late[i] = -1;
        sy->bg[i] = -1;
        sy->scratch[i] = i;
    }
    if (!algo_sync_group_add(sy, sy->scratch, env->n, 0))
        return env->error.code ? sim_err_set(err, env->error.code, "%s", env->error.msg)
                               : sim_err_set(err, SIM_ENOMEM, "%s: out of memory", desc->who);
    sy->need = env->n;
    *out = sy;
    return 0;
}

int algo_sync_start(algo_sync *sy, sim_err *err SIM_UNUSED)
{
    for (int w = 0; w < sy->env->n; w++)
        algo_sync_work_begin(sy, w, 0);
    return sy->env->error.code;
}

/* ---- freeing the groups no worker can use ------------------------------- */

/* 1 while a message or an event of one of x's collectives is in flight. */
static int ext_busy(const gext *x)
{
    for (int s = 0; s < ALGO_SYNC_SLOTS_MAX; s++) {
        if (sim_coll_busy(x->coll[s]) || algo_overlap_busy(x->ov[s]))
            return 1;
        for (int k = 0; k < x->n_sub[s]; k++)
            if (sim_coll_busy(x->sub[s][k]) || (x->subov[s] && algo_overlap_busy(x->subov[s][k])))
                return 1;
    }
    return 0;
}

/* 1 when worker w still refers to g: the group its aborted step believes
 * in (lateg), or the bucketed collectives of its step (wov). */
static int held_by(const algo_sync *sy, const algo_group *g, int w)
{
    if (sy->late[w] >= 0 && sy->lateg[w] == g)
        return 1;
    const gext *x = g->ext;
    for (int s = 0; sy->wov[w] && x && s < ALGO_SYNC_SLOTS_MAX; s++) {
        if (sy->wov[w] == x->ov[s])
            return 1;
        for (int k = 0; k < x->n_sub[s]; k++)
            if (x->subov[s] && sy->wov[w] == x->subov[s][k])
                return 1;
    }
    return 0;
}

/* x's collectives have something in flight, or a worker refers to g. */
static int group_held(void *ctx, const algo_group *g)
{
    const algo_sync *sy = ctx;
    if (g->ext && ext_busy(g->ext))
        return 1;
    for (int w = 0; w < sy->env->n; w++)
        if (held_by(sy, g, w))
            return 1;
    return 0;
}

static void group_drop(void *ctx SIM_UNUSED, algo_group *g)
{
    ext_free(g->ext);
    g->ext = NULL;
}

/* A lookup (algo_groups_for) asks for a step at or after the lowest of the
 * previous round's first step and every live worker's step (and its
 * background round's). */
void algo_sync_collect(algo_sync *sy)
{
    int64_t low = step_of(sy->round - 1, 0);
    for (int w = 0; w < sy->env->n; w++) {
        if (sy->wstat[w] != S_OFF && step_of(sy->wround[w], sy->wphase[w]) < low)
            low = step_of(sy->wround[w], sy->wphase[w]);
        if (sy->bg[w] >= 0 && step_of(sy->bg[w], 0) < low)
            low = step_of(sy->bg[w], 0);
    }
    algo_groups_collect(&sy->groups, low, group_held, group_drop, sy);
}

/* ---- queries ------------------------------------------------------------- */

int64_t algo_sync_round(const algo_sync *sy) { return sy->round; }

int algo_sync_phases_formed(const algo_sync *sy) { return sy->formed; }

int algo_sync_live(const algo_sync *sy, int w)
{
    return sy->wstat[w] != S_OFF && !sy->pending[w];
}

const algo_group *algo_sync_group(const algo_sync *sy, int64_t round)
{
    return algo_groups_for(&sy->groups, round * ALGO_SYNC_PHASES_MAX);
}
