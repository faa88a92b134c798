/* allreduce_sgd: parallel momentum SGD, PmSGD (Goyal et al. 2017).
 * One shared x and optimizer state; per round, on the synchronous-round
 * driver (algorithms/drivers/sync.h):
 *   worker i:   g_i = grad F(x; xi_i), enters the all-reduce (S bytes)
 *   h_form:     gbar = (1/n) sum_i g_i      (worker-id order)
 *               optimizer step on x with gbar
 * With a compressor (optimizer sgd), h_contribute forms
 *   u_i = lr dir_i (worker i's own sgd state), Delta_i = C(u_i + e_i),
 * and h_form applies x -= (1/n) sum_i Delta_i. Rounds, groups, buckets,
 * compression time, crashes and rejoins are the driver's.
 * docs/algorithms.md, section 1.1 (compression: 1.7 and docs/compressors.md;
 * crashes and buckets: docs/faults.md). */
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
    algo_local_optim wopt;     /* each worker's optimizer state */
    float *u;                  /* d: one worker's update */
    sim_time enc_dt, dec_dt;   /* compression compute per step (encode, decode) */
    double cost, dec_cost;     /* compress_time_per_value c; c x entries(d_wire) */
} state;

static const cfg_key keys[] = {
    ALGO_KEY_COMPRESS_TIME(state, cost, "encoded or value decoded, with a compressor"),
    {0},
};

static int h_grad(void *m, int w)
{
    state *st = m;
    algo_env_grad(st->env, w, st->x, st->env->w[w].grad);
    return 1;
}

/* Decoding in round k's group: c x entries(d_wire) per message decoded
 * (every member's after an all-gather, one after an all-reduce). */
static void decode_time(state *st, int64_t round, algo_sync_msg *msg)
{
    const algo_group *g = algo_sync_group(st->sy, round);
    if (!st->comp || st->dec_dt <= 0)
        msg->decode = 0;
    else if (st->comp->vt->agg != ALGO_COMPRESS_ALLGATHER || !g || g->n == st->env->n)
        msg->decode = st->dec_dt;
    else
        msg->decode = sim_time_from_s(st->dec_cost * (double)g->n);
}

/* Worker w's update u = lr dir_w (see the top of the file), compressed into
 * its message (error feedback); msg->bytes is its wire size. */
static void h_contribute(void *m, int w, int64_t round, int phase SIM_UNUSED,
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
    algo_optim_direction(st->wopt.s[w], st->x, g);
    for (int64_t j = 0; j < d; j++)
        u[j] = flr * g[j];
    msg->bytes = algo_compress_worker_encode(&st->cw[w], u)->bytes;
    msg->encode = st->enc_dt;
    decode_time(st, round, msg);
}

/* w re-enters its round in a smaller group: the decoding of its group. */
static void h_reenter(void *m, int w SIM_UNUSED, int64_t round, int phase SIM_UNUSED,
                      algo_sync_msg *msg)
{
    decode_time(m, round, msg);
}

/* The round's update over the members of g: x -= (1/m) sum_i Delta_i
 * (compressed), else an optimizer step on the mean gradient. */
static void h_form(void *m, const algo_group *g, int64_t round SIM_UNUSED,
                   int phase SIM_UNUSED, int w SIM_UNUSED)
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

static void on_fault(void *p, const algo_fault *ev) { algo_sync_fault(((state *)p)->sy, ev); }

/* Builds the compression state from [algorithm] compressor and
 * error_feedback; none (the identity) leaves st->comp NULL. */
static int compressed_create(state *st, sim_err *err)
{
    algo_env *env = st->env;
    const cfg_config *cfg = env->cfg;
    algo_compressor *c;
    int rc = algo_env_compressor_create(env, NULL, &c, err);
    if (rc < 0 || c->vt->identity)
        return rc;
    st->comp = c;
    rc = algo_optim_require_sgd(cfg, "with a compressor: error feedback needs a linear update",
                                    err);
    if (rc)
        return rc;
    st->u = algo_env_alloc(env, (size_t)env->d * sizeof *st->u);
    if ((rc = algo_env_alloc_check(env, "allreduce_sgd", err)) < 0 ||
        (rc = algo_env_compress_workers(env, c, cfg->error_feedback, &st->cw, err)) < 0 ||
        (rc = algo_local_optim_init(&st->wopt, env, 0, err)) < 0)
        return rc;
    const int64_t d_wire = env->wire_params;
    rc = algo_keys_read(cfg, keys, st, NULL, err);
    const double cost = st->cost;
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
    if (!rc)
        rc = algo_env_optim_create(env, NULL, NULL, &st->opt, err);
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
                  .reenter = h_reenter},
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
