/* allreduce_sgd: parallel momentum SGD (PmSGD, docs/algorithms.md 1.1). Every
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
 * round exists, because a rank can only complete after all ranks entered.
 * The round is counted (algo_env_iteration: evaluation, stop rules) when
 * the LAST rank completes, so a synchronous round costs the whole
 * collective, e.g. 2 log2(n) S/B for the binomial tree (its broadcast
 * included). x is unchanged between the two: the next update needs every
 * rank in the next round.
 *
 * Compression ([algorithm] compressor other than none, docs/algorithms.md
 * section 1.7, docs/compressors.md): the optimizer must be sgd (error
 * feedback compresses a linear update). When its compute step ends, worker
 * i turns its gradient into the direction of its OWN optimizer state
 * (dir_i = m_i with m_i = beta m_i + g_i, after g_i += wd x; g_i when
 * momentum = 0; g_i + beta m_i for Nesterov), compresses u_i = lr dir_i
 * with error feedback and enters an all-gather of its message (a
 * compressor whose messages can be summed would use the configured
 * all-reduce instead); the round applies x -= (1/n) sum_i Delta_i, summed
 * in worker-id order. Momentum being linear, the mean of the workers'
 * momenta is the momentum of the mean gradient, so topk(1.0) gives PmSGD
 * up to rounding. With compressor = none nothing of this runs: the dense
 * path is the one above.
 *
 * Buckets ([algorithm] bucket > 0, algorithms/overlap.h): the compute step
 * and the all-reduce are replaced by bucketed all-reduces that overlap the
 * backward pass; on_coll_done then runs when the worker's last bucket is
 * reduced. Gradients and updates are unchanged. */
#include <stdlib.h>
#include <string.h>

#include "algorithms/algo.h"
#include "algorithms/compress.h"
#include "algorithms/overlap.h"

typedef struct state {
    algo_env *env;
    sim_coll *coll;
    algo_overlap *ov; /* [algorithm] bucket > 0: bucketed, overlapped all-reduces */
    float *x;        /* the shared model */
    algo_optim_state *opt; /* the configured optimizer's state for x */
    float *gbar;     /* averaged gradient */
    const float **gptr;
    int done_in_round;
    int applied;     /* the round's update has been applied */
    int64_t round_samples; /* the round's samples, counted at its first completion */
    /* compression; comp == NULL on the dense path */
    algo_compressor *comp;
    algo_compress_worker *cw;  /* n: each worker's residual and message */
    algo_optim_state **wopt;   /* n: each worker's optimizer state */
    float *u;                  /* d: one worker's update */
} state;

static void begin_step(state *st, int w);

/* Worker w's update u = lr dir_w (see the top of the file), compressed into
 * its message; returns the message's wire size. */
static double compressed_encode(state *st, int w)
{
    algo_env *env = st->env;
    const int64_t d = env->d;
    float *g = env->w[w].grad, *u = st->u;
    const float flr = (float)algo_env_lr(env);
    algo_optim_direction(st->wopt[w], st->x, g);
    for (int64_t j = 0; j < d; j++)
        u[j] = flr * g[j];
    return algo_compress_worker_encode(&st->cw[w], u)->bytes;
}

/* x -= (1/n) sum_i Delta_i, in worker-id order. */
static void compressed_apply(state *st)
{
    algo_env *env = st->env;
    const int64_t d = env->d;
    float *sum = st->gbar;
    memset(sum, 0, (size_t)d * sizeof *sum);
    for (int i = 0; i < env->n; i++)
        algo_compress_decode_add(st->comp, &st->cw[i].msg, 1.0f, sum);
    const float inv = 1.0f / (float)env->n;
    for (int64_t j = 0; j < d; j++)
        st->x[j] -= inv * sum[j];
}

static void on_coll_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    state *st = ctx;
    algo_env *env = st->env;
    if (!st->applied) {
        if (st->comp) {
            compressed_apply(st);
        } else {
            algo_mean(st->gbar, st->gptr, env->n, env->d);
            algo_optim_step(st->opt, st->x, st->gbar, algo_env_lr(env));
        }
        st->applied = 1;
        st->round_samples = 0;
        for (int i = 0; i < env->n; i++)
            st->round_samples += env->w[i].grad_samples;
    }
    if (++st->done_in_round == env->n) {
        st->done_in_round = 0;
        st->applied = 0;
        algo_env_iteration(env, st->round_samples);
    }
    algo_env_idle_end(env, rank);
    begin_step(st, rank);
}

static void on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    state *st = ctx;
    int w = (int)arg;
    algo_env_idle_begin(st->env, w);
    double bytes = st->comp ? compressed_encode(st, w) : st->env->msg_bytes;
    algo_env_coll_enter(st->env, st->coll, w, bytes);
}

static void begin_step(state *st, int w)
{
    algo_env *env = st->env;
    algo_env_grad(env, w, st->x, env->w[w].grad);
    if (st->ov) {
        /* bucketed: the message is known at the start of the step (the
         * gradient is, and a compressed one depends on nothing that can
         * change before its compute step ends) */
        if (st->comp)
            algo_env_grad_wait(env, w);
        double bytes = st->comp ? compressed_encode(st, w) : env->msg_bytes;
        algo_overlap_step(st->ov, w, algo_env_step_samples(env, w), bytes);
        return;
    }
    algo_env_compute(env, w, algo_env_step_samples(env, w), on_compute_done, st,
                     (uint64_t)w);
}

static int needs_server(const sim_config *cfg) { return cfg->collective == SIM_COLL_PS; }

/* Builds the compression state from [algorithm] compressor and
 * error_feedback; none (the identity) leaves st->comp NULL. */
static int compressed_create(state *st, sim_err *err)
{
    algo_env *env = st->env;
    const sim_config *cfg = env->cfg;
    algo_compressor *c = algo_compress_from_config(cfg, err);
    if (!c)
        return err && err->code ? err->code : SIM_ECONFIG;
    if (c->vt->identity) {
        algo_compress_destroy(c);
        return 0;
    }
    st->comp = c;
    int rc = algo_optim_require_sgd(cfg, "with a compressor: error feedback needs a linear update",
                                    err);
    if (rc)
        return rc;
    const size_t n = (size_t)env->n, d = (size_t)env->d;
    st->cw = calloc(n, sizeof *st->cw);
    st->wopt = calloc(n, sizeof *st->wopt);
    st->u = malloc(d * sizeof *st->u);
    if (!st->cw || !st->wopt || !st->u)
        return sim_err_set(err, SIM_ENOMEM, "allreduce_sgd: out of memory");
    int64_t d_wire = env->wire_params > 0 ? env->wire_params : env->d;
    int value_bytes = env->wire_value_bytes > 0 ? env->wire_value_bytes : 4;
    for (int i = 0; i < env->n; i++) {
        st->wopt[i] = algo_optim_state_from_config(cfg, env->model, env->d, err);
        if (!st->wopt[i])
            return err && err->code ? err->code : SIM_EINTERNAL;
        rc = algo_compress_worker_init(&st->cw[i], c, env->d, d_wire, value_bytes,
                                       cfg->error_feedback, cfg->seed, i, err);
        if (rc)
            return rc;
    }
    return 0;
}

static void destroy(void *p)
{
    state *st = p;
    if (!st)
        return;
    for (int i = 0; st->cw && i < st->env->n; i++)
        algo_compress_worker_release(&st->cw[i]);
    for (int i = 0; st->wopt && i < st->env->n; i++)
        algo_optim_state_destroy(st->wopt[i]);
    free(st->cw);
    free(st->wopt);
    free(st->u);
    algo_compress_destroy(st->comp);
    sim_coll_destroy(st->coll);
    algo_overlap_destroy(st->ov);
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
    int rc = compressed_create(st, err);
    if (rc) {
        destroy(st);
        return rc;
    }
    sim_coll_kind kind = st->comp && st->comp->vt->agg == ALGO_COMPRESS_ALLGATHER
                             ? SIM_COLL_ALLGATHER
                             : env->allreduce_kind;
    if (env->cfg->bucket > 0)
        st->ov = algo_overlap_create(env, env->cfg->bucket, kind, on_coll_done, st, err);
    else
        st->coll = algo_env_coll(env, kind, on_coll_done, st, err);
    if (!st->coll && !st->ov) {
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
    .supports_compression = 1,
    .needs_server = needs_server,
    .create = create,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = NULL,
};
