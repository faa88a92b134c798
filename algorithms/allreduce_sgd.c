/* allreduce_sgd: parallel momentum SGD (PmSGD, ALGORITHMS.md 1.1). Every
 * worker holds the same x and m. Each round every worker computes its
 * gradient at x, enters a blocking all-reduce of S bytes (the configured
 * collective: ring, tree or parameter server, built from point-to-point
 * messages), and updates with the averaged gradient. The update is the
 * configured optimizer's ([algorithm] optimizer, default sgd), with one
 * state for the shared model.
 *
 * Timing: a worker starts its next step as soon as ITS part of the
 * collective has completed (it then holds the reduced gradient), so
 * workers wait only for what they need. The update itself is applied once
 * per round, at the first rank's completion: by then every gradient of the
 * round exists, because a rank can only complete after all ranks entered. */
#include <stdlib.h>
#include <string.h>

#include "algorithms/algo.h"

typedef struct state {
    algo_env *env;
    sim_coll *coll;
    float *x;        /* the shared model */
    algo_optim_state *opt; /* the configured optimizer's state for x */
    float *gbar;     /* averaged gradient */
    const float **gptr;
    int done_in_round;
    int applied;     /* the round's update has been applied */
} state;

static void begin_step(state *st, int w);

static void on_coll_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    state *st = ctx;
    algo_env *env = st->env;
    if (!st->applied) {
        algo_mean(st->gbar, st->gptr, env->n, env->d);
        algo_optim_step(st->opt, st->x, st->gbar, algo_env_lr(env));
        st->applied = 1;
        int64_t samples = 0;
        for (int i = 0; i < env->n; i++)
            samples += env->w[i].grad_samples;
        algo_env_iteration(env, samples);
    }
    algo_env_idle_end(env, rank);
    if (++st->done_in_round == env->n) {
        st->done_in_round = 0;
        st->applied = 0;
    }
    begin_step(st, rank);
}

static void on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    int w = (int)arg;
    algo_env_idle_begin(st->env, w);
    algo_env_coll_enter(st->env, st->coll, w, st->env->msg_bytes);
}

static void begin_step(state *st, int w)
{
    algo_env *env = st->env;
    algo_env_grad(env, w, st->x, env->w[w].grad);
    algo_env_compute(env, w, algo_env_step_samples(env, w), on_compute_done, st,
                     (uint64_t)w);
}

static int needs_server(const sim_config *cfg) { return cfg->collective == SIM_COLL_PS; }

static void destroy(void *p)
{
    state *st = p;
    if (!st)
        return;
    sim_coll_destroy(st->coll);
    free(st->x);
    algo_optim_state_destroy(st->opt);
    free(st->gbar);
    free(st->gptr);
    free(st);
}

static int create(algo_env *env, void **out, sim_err *err)
{
    state *st = calloc(1, sizeof *st);
    if (!st)
        return sim_err_set(err, SIM_ENOMEM, "allreduce_sgd: out of memory");
    st->env = env;
    size_t bytes = (size_t)env->d * sizeof(float);
    st->x = malloc(bytes);
    st->gbar = malloc(bytes);
    st->gptr = malloc((size_t)env->n * sizeof *st->gptr);
    if (!st->x || !st->gbar || !st->gptr) {
        destroy(st);
        return sim_err_set(err, SIM_ENOMEM, "allreduce_sgd: out of memory");
    }
    st->opt = algo_optim_state_from_config(env->cfg, env->model, env->d, err);
    if (!st->opt) {
        destroy(st);
        return err && err->code ? err->code : SIM_EINTERNAL;
    }
    for (int i = 0; i < env->n; i++)
        st->gptr[i] = env->w[i].grad;
    /* every worker starts from worker 0's initial model (init = same or not:
     * one shared model is the method's definition) */
    memcpy(st->x, env->w[0].x, bytes);
    st->coll = algo_env_coll(env, env->allreduce_kind, on_coll_done, st, err);
    if (!st->coll) {
        destroy(st);
        return err ? err->code : SIM_EINTERNAL;
    }
    *out = st;
    return 0;
}

static int start(void *p, sim_err *err)
{
    (void)err;
    state *st = p;
    for (int w = 0; w < st->env->n; w++)
        begin_step(st, w);
    return 0;
}

static const float *model(void *p, float *scratch)
{
    (void)scratch;
    return ((state *)p)->x;
}

const algo_vt algo_allreduce_sgd = {
    .name = "allreduce_sgd",
    .summary = "synchronous all-reduce SGD with heavy-ball or Nesterov momentum (PmSGD)",
    .reference = "1.1",
    .keys = NULL,
    .async = 0,
    .needs_server = needs_server,
    .create = create,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = NULL,
};
