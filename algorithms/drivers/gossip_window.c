/* The gossip driver's iteration window, iteration accounting and
 * evaluation snapshots (the rules: gossip.h and gossip_impl.h). */
#include "algorithms/drivers/gossip_impl.h"

#include <stdlib.h>
#include <string.h>

void algo_gossip_refresh_spi(algo_gossip *g)
{
    if (g->spi_changes == g->env->batch_changes)
        return;
    g->spi = 0;
    for (int i = 0; i < g->n; i++)
        g->spi += algo_env_step_samples(g->env, i);
    g->spi_changes = g->env->batch_changes;
}

/* Samples applied before global iteration k starts: exact up to k_lo
 * (env->samples), then spi per iteration (exact while no batch changes). */
static int64_t samples_before(const algo_gossip *g, int64_t k)
{
    return g->env->samples + (k - g->k_lo) * g->spi;
}

double algo_gossip_epoch_at(const algo_gossip *g, int64_t k)
{
    return (double)samples_before(g, k) / (double)g->env->ds->train.n;
}

/* ---- evaluation snapshots ----------------------------------------------- */

/* The runner evaluates after global iteration k when this holds (its
 * eval_every count, max_iterations and max_epochs rules). */
static int need_snapshot(const algo_gossip *g, int64_t k)
{
    const cfg_config *c = g->env->cfg;
    int64_t it = k + 1;
    if (c->eval_every_iters > 0 && it % c->eval_every_iters == 0)
        return 1;
    if (c->max_iterations > 0 && it == c->max_iterations)
        return 1;
    if (c->max_epochs > 0) {
        double lim = c->max_epochs * (double)g->env->ds->train.n;
        int64_t before = samples_before(g, k), through = before + g->spi;
        if ((double)through >= lim && (double)before < lim)
            return 1;
        /* under crashes an iteration applies at most spi samples, so
         * through is an upper bound: every iteration that may be the last
         * one is kept (the guess only falls as k_lo moves, so the workers
         * all decide alike for each k) */
        if (g->crash && (double)through >= lim)
            return 1;
        /* with changing batches the later iterations' samples are a guess:
         * one iteration's worth of margin either side */
        if (g->env->batch_changes > 0 && (double)(through + g->spi) >= lim &&
            (double)(before - g->spi) < lim)
            return 1;
    }
    return 0;
}

static frame *frame_find(algo_gossip *g, int64_t k)
{
    for (int f = 0; f < g->n_frames; f++)
        if (g->frames[f]->k == k)
            return g->frames[f];
    return NULL;
}

static frame *frame_get(algo_gossip *g, int64_t k)
{
    frame *f = frame_find(g, k);
    if (f)
        return f;
    for (int j = 0; j < g->n_frames; j++)
        if (g->frames[j]->k < 0 && g->frames[j] != g->last) {
            f = g->frames[j];
            algo_env_defer_join(g->env); /* no combine still copies into it */
            break;
        }
    if (!f) { /* grows only while the lead between workers grows */
        frame **fs = realloc(g->frames, (size_t)(g->n_frames + 1) * sizeof *fs);
        if (!fs)
            return NULL;
        g->frames = fs;
        f = calloc(1, sizeof *f);
        if (f)
            f->x = malloc((size_t)g->n * (size_t)g->d * sizeof(float));
        if (f && g->crash)
            f->has = malloc((size_t)g->n);
        if (!f || !f->x || (g->crash && !f->has)) {
            if (f) {
                free(f->x);
                free(f->has);
                free(f);
            }
            return NULL;
        }
        g->frames[g->n_frames++] = f;
    }
    f->k = k;
    f->count = 0;
    if (f->has)
        memset(f->has, 0, (size_t)g->n);
    return f;
}

static void complete_lo(algo_gossip *g);

/* Crash mode: the live graph may fall apart while workers are down, and its
 * parts drift apart without bound, so the window of iterations doubles
 * until iteration k fits (rare; the counts move to their new slots). */
int algo_gossip_window_fit(algo_gossip *g, int64_t k)
{
    while (k - g->k_lo >= g->R) {
        int R2 = 2 * g->R;
        int64_t *dc = calloc((size_t)R2, sizeof *dc), *is = calloc((size_t)R2, sizeof *is);
        if (!dc || !is) {
            free(dc);
            free(is);
            algo_gossip_fail(g, SIM_ENOMEM, "out of memory for the iteration window");
            return -1;
        }
        for (int64_t q = g->k_lo; q < g->k_lo + g->R; q++) {
            dc[q % R2] = g->done_cnt[q % g->R];
            is[q % R2] = g->iter_samples[q % g->R];
        }
        free(g->done_cnt);
        free(g->iter_samples);
        g->done_cnt = dc;
        g->iter_samples = is;
        g->R = R2;
    }
    return 0;
}

void algo_gossip_iteration_done(algo_gossip *g, int64_t k)
{
    if (g->crash && algo_gossip_window_fit(g, k + 1) < 0)
        return;
    if (k - g->k_lo >= g->R) { /* cannot happen on a connected graph */
        algo_gossip_fail(g, SIM_EINTERNAL,
                         "a worker is a full window of iterations ahead of the slowest");
        return;
    }
    int s = (int)(k % g->R);
    if (g->crash) {
        g->done_cnt[s]++;
        algo_gossip_complete_ready(g);
        return;
    }
    if (++g->done_cnt[s] < g->n || k != g->k_lo)
        return;
    complete_lo(g);
}

/* Global iteration k_lo is complete: count it. */
static void complete_lo(algo_gossip *g)
{
    int64_t k = g->k_lo;
    int s = (int)(k % g->R);
    g->done_cnt[s] = 0;
    int64_t samples = g->iter_samples[s];
    g->iter_samples[s] = 0;
    frame *f = frame_find(g, k);
    if (f) {
        if (g->last && g->last != f)
            g->last->k = -1;
        g->last = f;
    }
    g->k_lo++;
    algo_env_iteration(g->env, samples);
}

void algo_gossip_snapshot(algo_gossip *g, int i, int64_t k)
{
    algo_gossip_refresh_spi(g);
    if (!need_snapshot(g, k))
        return;
    frame *f = frame_get(g, k);
    if (!f) {
        algo_gossip_fail(g, SIM_ENOMEM, "out of memory for an evaluation snapshot");
        return;
    }
    gworker *w = &g->w[i];
    if (w->dpending) /* its combine copies the result when it runs */
        w->dsnap = f->x + (int64_t)i * g->d;
    else
        memcpy(f->x + (int64_t)i * g->d, w->x, (size_t)g->d * sizeof(float));
    if (f->has)
        f->has[i] = 1;
    f->count++;
}

void algo_gossip_complete_ready(algo_gossip *g)
{
    while (!g->env->error.code && algo_gossip_crash_complete(g, g->k_lo))
        complete_lo(g);
}

int algo_gossip_live_models(void *p, const float **xs)
{
    algo_gossip *g = p;
    algo_env_defer_join(g->env); /* the models are read */
    if (g->crash) { /* the live workers (those in the snapshot) */
        frame *f = g->last;
        int snap = f && g->env->iterations == f->k + 1, m = 0;
        for (int i = 0; i < g->n; i++) {
            if (snap ? f->has[i] : !g->env->w[i].down)
                xs[m++] = snap ? f->x + (int64_t)i * g->d : g->w[i].x;
        }
        if (m > 0)
            return m;
    }
    algo_gossip_worker_models(g, xs);
    return g->n;
}

const float *algo_gossip_model(void *p, float *scratch)
{
    algo_gossip *g = p;
    int m = algo_gossip_live_models(g, g->ptrs);
    algo_mean(scratch, g->ptrs, m, g->d);
    return scratch;
}

void algo_gossip_worker_models(void *p, const float **xs)
{
    algo_gossip *g = p;
    algo_env_defer_join(g->env); /* the models are read */
    frame *f = g->last;
    int snap = f && g->env->iterations == f->k + 1;
    for (int i = 0; i < g->n; i++)
        xs[i] = snap && (!f->has || f->has[i]) ? f->x + (int64_t)i * g->d : g->w[i].x;
}
