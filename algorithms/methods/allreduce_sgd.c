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
 * Compression time ([algorithm] compress_time_per_value = c, only with a
 * compressor, docs/compressors.md): encoding costs c x d_wire seconds of
 * compute between the end of the worker's compute step and its entering
 * the collective; decoding costs c x (the values it decodes: n x
 * entries(d_wire) after an all-gather, entries(d_wire) after an
 * all-reduce) after its part of the collective, before its next step. Both
 * count in the worker's compute time. With buckets the message is encoded
 * before the step, and both costs are charged after the last bucket. Under
 * crashes the same costs are charged, the decoding of an
 * all-gather counting the messages of the group's members; a rejoining
 * worker is sent the model once the rank that applied the update has
 * decoded it.
 *
 * Buckets ([algorithm] bucket > 0, algorithms/drivers/overlap.h): the
 * compute step and the all-reduce are replaced by bucketed all-reduces that
 * overlap the backward pass; the worker's part of the round is over when
 * its last bucket is reduced. Gradients and updates are unchanged; under
 * crashes a partly reduced bucket costs its bytes and time (docs/faults.md).
 *
 * Rounds, groups of live workers, buckets, compression time, crashes and
 * rejoins are the synchronous-round driver's (algorithms/drivers/sync.h):
 * this file is the update rule. Under crashes ([faults], docs/faults.md)
 * the update is the mean over the round's group (renormalized over who
 * took part); a rejoining worker is sent x and starts the next round from
 * it (the optimizer state is the shared one). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/compress/compress.h"
#include "algorithms/drivers/sync.h"
#include "algorithms/methods/method.h"
#include "sim/units.h"

typedef struct state {
    float *x;        /* the shared model (first: algo_method_shared_model) */
    algo_env *env;
    algo_sync *sy;
    algo_optim_state *opt; /* the configured optimizer's state for x */
    float *gbar;     /* averaged gradient */
    const float **gptr;
    /* compression; comp == NULL on the dense path */
    algo_compressor *comp;
    algo_compress_worker *cw;  /* n: each worker's residual and message */
    algo_optim_state **wopt;   /* n: each worker's optimizer state */
    float *u;                  /* d: one worker's update */
    sim_time enc_dt, dec_dt;   /* compression compute per step (encode, decode) */
    double dec_cost;           /* decoding seconds per message (c x entries(d_wire)) */
} state;

static const cfg_key keys[] = {
    ALGO_KEY_COMPRESS_TIME("encoded or value decoded, with a compressor"),
    {0},
};

static void h_grad(void *m, int w)
{
    state *st = m;
    algo_env_grad(st->env, w, st->x, st->env->w[w].grad);
}

/* Worker w's update u = lr dir_w (see the top of the file), compressed into
 * its message (error feedback); msg->bytes is its wire size. */
static void h_contribute(void *m, int w, int64_t round ALGO_UNUSED, int phase ALGO_UNUSED,
                         algo_sync_msg *msg)
{
    state *st = m;
    algo_env *env = st->env;
    if (!st->comp) {
        msg->bytes = env->msg_bytes;
        return;
    }
    algo_env_grad_wait(env, w); /* with buckets the step has not run yet */
    const int64_t d = env->d;
    float *g = env->w[w].grad, *u = st->u;
    const float flr = (float)algo_env_lr(env);
    algo_optim_direction(st->wopt[w], st->x, g);
    for (int64_t j = 0; j < d; j++)
        u[j] = flr * g[j];
    msg->bytes = algo_compress_worker_encode(&st->cw[w], u)->bytes;
    msg->encode = st->enc_dt;
}

/* The round's update over the members of g: x -= (1/m) sum_i Delta_i
 * (compressed), else an optimizer step on the mean gradient. */
static void h_form(void *m, const algo_group *g, int64_t round ALGO_UNUSED,
                   int phase ALGO_UNUSED, int w ALGO_UNUSED)
{
    state *st = m;
    algo_env *env = st->env;
    const int64_t d = env->d;
    if (st->comp) {
        float *sum = st->gbar;
        memset(sum, 0, (size_t)d * sizeof *sum);
        for (int r = 0; r < g->n; r++)
            algo_compress_decode_add(st->comp, &st->cw[g->members[r]].msg, 1.0f, sum);
        const float inv = 1.0f / (float)g->n;
        for (int64_t j = 0; j < d; j++)
            st->x[j] -= inv * sum[j];
        return;
    }
    for (int r = 0; r < g->n; r++)
        st->gptr[r] = env->w[g->members[r]].grad;
    algo_mean(st->gbar, st->gptr, g->n, d);
    algo_optim_step(st->opt, st->x, st->gbar, algo_env_lr(env));
}

/* Decoding: c x entries(d_wire) per message decoded (every member's after
 * an all-gather, one after an all-reduce). */
static sim_time h_decode(void *m, const algo_group *g, int64_t round ALGO_UNUSED)
{
    state *st = m;
    if (!st->comp || st->dec_dt <= 0)
        return 0;
    if (st->comp->vt->agg != ALGO_COMPRESS_ALLGATHER || g->n == st->env->n)
        return st->dec_dt;
    return sim_time_from_s(st->dec_cost * (double)g->n);
}

static void on_fault(void *p, const algo_fault *ev) { algo_sync_fault(((state *)p)->sy, ev); }

/* Builds the compression state from [algorithm] compressor and
 * error_feedback; none (the identity) leaves st->comp NULL. */
static int compressed_create(state *st, sim_err *err)
{
    algo_env *env = st->env;
    const cfg_config *cfg = env->cfg;
    algo_compressor *c = algo_compress_from_config(cfg, err);
    if (!c)
        return err && err->code ? err->code : SIM_ECONFIG;
    if (c->vt->identity) {
        algo_compress_destroy(c);
        return 0;
    }
    if (!(st->comp = algo_env_own_compressor(env, c)))
        return algo_env_alloc_check(env, "allreduce_sgd", err);
    int rc = algo_optim_require_sgd(cfg, "with a compressor: error feedback needs a linear update",
                                    err);
    if (rc)
        return rc;
    const size_t n = (size_t)env->n, d = (size_t)env->d;
    st->wopt = algo_env_calloc(env, n, sizeof *st->wopt);
    st->u = algo_env_alloc(env, d * sizeof *st->u);
    if ((rc = algo_env_alloc_check(env, "allreduce_sgd", err)) < 0)
        return rc;
    const int64_t d_wire = env->wire_params;
    rc = algo_compress_workers_create(c, env->n, env->d, d_wire, env->wire_value_bytes,
                                      cfg->error_feedback, cfg->seed, &st->cw, err);
    if (rc)
        return rc;
    if (!algo_env_own_compress_workers(env, st->cw, env->n))
        return algo_env_alloc_check(env, "allreduce_sgd", err);
    for (int i = 0; i < env->n; i++) {
        st->wopt[i] = algo_env_own_optim(env, algo_optim_state_from_config(cfg, env->model,
                                                                           env->d, err));
        if (!st->wopt[i])
            return err && err->code ? err->code : SIM_EINTERNAL;
    }
    double cost;
    rc = algo_key_double(cfg, "compress_time_per_value", 0, INFINITY, "[)", &cost, err);
    if (rc)
        return rc;
    /* encode: one pass over d_wire values; decode: the values received */
    double decoded = (double)algo_compress_entries(c, d_wire);
    if (c->vt->agg == ALGO_COMPRESS_ALLGATHER)
        decoded *= env->n;
    st->enc_dt = sim_time_from_s(cost * (double)d_wire);
    st->dec_dt = sim_time_from_s(cost * decoded);
    st->dec_cost = cost * (double)algo_compress_entries(c, d_wire);
    return 0;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    state *st = algo_env_calloc(env, 1, sizeof *st);
    if (!st)
        return algo_env_alloc_check(env, "allreduce_sgd", err);
    st->env = env;
    size_t bytes = (size_t)env->d * sizeof(float);
    st->x = algo_env_alloc(env, bytes);
    st->gbar = algo_env_alloc(env, bytes);
    st->gptr = algo_env_alloc(env, (size_t)env->n * sizeof *st->gptr);
    int rc = algo_env_alloc_check(env, "allreduce_sgd", err);
    if (!rc && !(st->opt = algo_env_own_optim(
                     env, algo_optim_state_from_config(env->cfg, env->model, env->d, err))))
        rc = err && err->code ? err->code : SIM_EINTERNAL;
    if (rc)
        return rc;
    for (int i = 0; i < env->n; i++)
        st->gptr[i] = env->w[i].grad;
    /* every worker starts from worker 0's initial model (init = same or not:
     * one shared model is the method's definition) */
    memcpy(st->x, env->w[0].x, bytes);
    rc = compressed_create(st, err);
    int gather = st->comp && st->comp->vt->agg == ALGO_COMPRESS_ALLGATHER;
    algo_sync_desc desc = {
        .who = "allreduce_sgd", .method = st, .n_slots = 1,
        .slots = {gather ? ALGO_SYNC_ALLGATHER : ALGO_SYNC_ALLREDUCE},
        .count = ALGO_SYNC_COUNT_LAST,
        .hooks = {.grad = h_grad, .contribute = h_contribute, .form = h_form,
                  .decode = h_decode},
    };
    if (!rc)
        rc = algo_sync_create(env, &desc, &st->sy, err);
    *out = st;
    return rc;
}

static int start(void *p, sim_err *err) { return algo_sync_start(((state *)p)->sy, err); }

const algo_vt algo_allreduce_sgd = {
    ALGO_METHOD("allreduce_sgd",
                "synchronous all-reduce SGD with heavy-ball or Nesterov momentum (PmSGD)", "1.1"),
    .supports_compression = 1,
    .supports_bucket = 1,
    .server = ALGO_SERVER_PS,
    .start = start,
    .model = algo_method_shared_model,
    .fault = on_fault,
};
