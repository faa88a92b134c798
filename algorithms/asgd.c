/* asgd: parameter-server asynchronous SGD (ALGORITHMS.md 1.6). The server
 * (host n) holds x and a version counter t. A worker loops: pull (x, t),
 * compute its gradient on the model it read, push the gradient. When a
 * push computed on version t_read arrives, the server applies
 *   x <- x - lr_tau * g,  tau = t - t_read,  t <- t + 1
 * (server momentum when momentum > 0; the server steps with the configured
 * [algorithm] optimizer, one state) and at once sends the new model back
 * to that worker. Every message is S bytes through the network model; the
 * server serves pushes in arrival order (engine FIFO on equal times).
 *
 * Options: staleness_lr = constant (lr_tau = lr) | inverse (lr / max(1, tau));
 * max_staleness = 0 (unbounded) or K: a gradient with tau > K is dropped
 * (counted in the staleness histogram but not applied, SSP-style reject);
 * every drop records the cumulative count as series `dropped` (global). */
#include <stdlib.h>
#include <string.h>

#include "algorithms/algo.h"

typedef struct state {
    algo_env *env;
    float *x;        /* server model */
    algo_optim_state *opt; /* the server's optimizer state */
    int64_t version; /* applied updates */
    int64_t *t_read; /* per worker: version of the model it holds */
    int inverse_lr;
    int64_t max_staleness;
    int64_t dropped;
} state;

static void send_pull(state *st, int w);

static void on_push_arrive(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst,
                           double bytes)
{
    (void)eng;
    (void)src;
    (void)dst;
    (void)bytes;
    state *st = ctx;
    algo_env *env = st->env;
    int w = (int)arg;
    int64_t tau = st->version - st->t_read[w];
    algo_env_staleness(env, w, tau);
    if (st->max_staleness <= 0 || tau <= st->max_staleness) {
        double lr = algo_env_lr(env);
        if (st->inverse_lr && tau > 1)
            lr /= (double)tau;
        algo_optim_step(st->opt, st->x, env->w[w].grad, lr);
        st->version++;
        algo_env_iteration(env, env->w[w].grad_samples);
    } else {
        st->dropped++;
        algo_env_series(env, -1, "dropped", (double)st->dropped);
    }
    send_pull(st, w);
}

static void on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    int w = (int)arg;
    algo_env_idle_begin(st->env, w);
    algo_env_send(st->env, w, st->env->server_host, st->env->msg_bytes, on_push_arrive, st,
                  arg);
}

static void on_pull_arrive(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst,
                           double bytes)
{
    (void)eng;
    (void)src;
    (void)dst;
    (void)bytes;
    state *st = ctx;
    algo_env *env = st->env;
    int w = (int)arg;
    algo_env_idle_end(env, w);
    algo_env_grad(env, w, env->w[w].x, env->w[w].grad);
    algo_env_compute(env, w, algo_env_step_samples(env, w), on_compute_done, st, arg);
}

/* The server reads its model when it sends it. */
static void send_pull(state *st, int w)
{
    algo_env *env = st->env;
    memcpy(env->w[w].x, st->x, (size_t)env->d * sizeof(float));
    st->t_read[w] = st->version;
    algo_env_idle_begin(env, w);
    algo_env_send(env, env->server_host, w, env->msg_bytes, on_pull_arrive, st, (uint64_t)w);
}

static int needs_server(const sim_config *cfg)
{
    (void)cfg;
    return 1;
}

static void destroy(void *p)
{
    state *st = p;
    if (!st)
        return;
    free(st->x);
    algo_optim_state_destroy(st->opt);
    free(st->t_read);
    free(st);
}

static const sim_key keys[] = {
    {"algorithm", "staleness_lr", "constant", SIM_KEY_CHOICE, "constant|inverse",
     "constant: lr for every update; inverse: lr / max(1, staleness)"},
    {"algorithm", "max_staleness", "0", SIM_KEY_INT, NULL,
     "0 = unbounded; K > 0: the server drops gradients staler than K"},
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    state *st = calloc(1, sizeof *st);
    if (!st)
        return sim_err_set(err, SIM_ENOMEM, "asgd: out of memory");
    st->env = env;
    st->x = malloc((size_t)env->d * sizeof(float));
    st->t_read = calloc((size_t)env->n, sizeof *st->t_read);
    if (!st->x || !st->t_read) {
        destroy(st);
        return sim_err_set(err, SIM_ENOMEM, "asgd: out of memory");
    }
    st->opt = algo_optim_state_from_config(env->cfg, env->model, env->d, err);
    if (!st->opt) {
        destroy(st);
        return err && err->code ? err->code : SIM_EINTERNAL;
    }
    memcpy(st->x, env->w[0].x, (size_t)env->d * sizeof(float));
    const char *pol = sim_config_get_string(env->cfg, "algorithm", "staleness_lr");
    st->inverse_lr = pol && strcmp(pol, "inverse") == 0;
    int rc = sim_config_get_int(env->cfg, "algorithm", "max_staleness", &st->max_staleness,
                                err);
    if (rc < 0) {
        destroy(st);
        return rc;
    }
    if (st->max_staleness < 0) {
        long long bad = (long long)st->max_staleness;
        destroy(st);
        return sim_config_error(env->cfg, "algorithm", "max_staleness", SIM_ECONFIG, err,
                                "must be >= 0, got %lld", bad);
    }
    *out = st;
    return 0;
}

static int start(void *p, sim_err *err)
{
    (void)err;
    state *st = p;
    for (int w = 0; w < st->env->n; w++)
        send_pull(st, w);
    return 0;
}

static const float *model(void *p, float *scratch)
{
    (void)scratch;
    return ((state *)p)->x;
}

const algo_vt algo_asgd = {
    .name = "asgd",
    .summary = "parameter-server asynchronous SGD; staleness of every update recorded",
    .reference = "1.6",
    .keys = keys,
    .async = 1,
    .needs_server = needs_server,
    .create = create,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = NULL,
};
