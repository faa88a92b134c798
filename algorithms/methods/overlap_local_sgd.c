/* overlap_local_sgd: Overlap-Local-SGD (Wang, Liang, Joshi, ICASSP 2020)
 * on the synchronous-round driver's background rounds
 * (algorithms/drivers/sync.h). After every tau local steps worker i:
 *   z = the result of round k - 1 (waits for it; x^0 before the first)
 *   x_i <- (1 - alpha) x_i + alpha z
 *   v_i <- gmf v_i + (z - x_i)/lr,  buf_i = z - lr v_i   (gmf = 0: x_i)
 *   enters round k's all-reduce of buf_i and goes on computing;
 *   the mean of the members' buf_i is the next z.
 * docs/algorithms.md, section 8 (crashes: docs/faults.md). */
#include <stdlib.h>
#include <string.h>

#include "algorithms/methods/local_round.h"

typedef struct overlap {
    algo_env *env;
    int n;
    int64_t d;
    int tau;
    double alpha, gmf;
    algo_local_optim lo; /* one optimizer state per worker */
    algo_sync *sy;
    int *since;          /* n: local steps since the last sync */
    int64_t *applied;    /* n: samples applied */
    float *z;            /* anchor */
    float *buf;          /* n x d */
    float *v;            /* n x d, gmf > 0 */
    const float **ptrs;
} overlap;

static int h_step_done(void *m, int i)
{
    overlap *s = m;
    algo_lsgd_local_step(s->env, &s->lo, s->applied, i);
    return ++s->since[i] >= s->tau;
}

/* Steps 2-3 of the sync: buf_i from z, the result of the previous round. */
static void h_contribute(void *m, int i, int64_t round, int phase SIM_UNUSED, algo_sync_msg *msg)
{
    overlap *s = m;
    float *x = s->env->w[i].x, *buf = s->buf + (int64_t)i * s->d;
    const float a = (float)s->alpha, b = 1.0f - a;
    if (s->alpha != 0)
        for (int64_t j = 0; j < s->d; j++)
            x[j] = b * x[j] + a * s->z[j];
    if (s->gmf > 0) {
        const double lr = algo_lsgd_lr(s->env, s->applied[i]);
        float *v = s->v + (int64_t)i * s->d;
        const double g = round == 0 ? 0.0 : s->gmf;
        for (int64_t j = 0; j < s->d; j++) {
            double vj = g * v[j] + ((double)s->z[j] - (double)x[j]) / lr;
            v[j] = (float)vj;
            buf[j] = (float)((double)s->z[j] - lr * vj);
        }
    } else {
        memcpy(buf, x, (size_t)s->d * sizeof(float));
    }
    s->since[i] = 0;
    msg->bytes = s->env->msg_bytes;
}

static void h_form(void *m, const algo_group *g, int64_t round SIM_UNUSED, int phase SIM_UNUSED,
                   int w SIM_UNUSED)
{
    overlap *s = m;
    for (int r = 0; r < g->n; r++)
        s->ptrs[r] = s->buf + (int64_t)g->members[r] * s->d;
    algo_mean(s->z, s->ptrs, g->n, s->d);
}

/* A joiner starts afresh from z. */
static double h_join(void *m, int j, int sender)
{
    overlap *s = m;
    memcpy(s->env->w[j].x, s->z, (size_t)s->d * sizeof(float));
    algo_optim_reset(s->lo.s[j]);
    if (s->v)
        memset(s->v + (int64_t)j * s->d, 0, (size_t)s->d * sizeof(float));
    s->since[j] = 0;
    if (sender >= 0)
        s->applied[j] = s->applied[sender];
    return 0;
}

/* The workers the evaluated model averages: the live ones. */
static int live_models(void *p, const float **xs)
{
    overlap *s = p;
    int k = 0;
    for (int i = 0; i < s->n; i++)
        if (algo_sync_live(s->sy, i))
            xs[k++] = s->env->w[i].x;
    if (k == 0)
        xs[k++] = s->z;
    return k;
}

static const cfg_key keys[] = {
    ALGO_KEY_INT("local_steps", "2", 1, 1000000, overlap, tau,
                 "tau: local steps between two syncs"),
    ALGO_KEY_DOUBLE("pull", "0.2", 0, 1, "[]", overlap, alpha,
                    "alpha: pull toward the anchor at a sync, x <- (1 - alpha) x + alpha z"),
    ALGO_KEY_DOUBLE("anchor_momentum", "0", 0, 1, "[)", overlap, gmf,
                    "gmf: momentum of the anchor update (0: the anchor is the mean of the pulled "
                    "models)"),
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    overlap *s = algo_env_calloc(env, 1, sizeof *s);
    if (!s)
        return algo_env_alloc_check(env, "overlap_local_sgd", err);
    s->env = env;
    s->n = env->n;
    s->d = env->d;
    int rc = algo_keys_read(env->cfg, keys, s, NULL, err);
    if (rc < 0)
        return rc;
    const size_t n = (size_t)s->n, d = (size_t)s->d;
    s->since = algo_env_calloc(env, n, sizeof *s->since);
    s->applied = algo_env_calloc(env, n, sizeof *s->applied);
    s->z = algo_env_alloc(env, d * sizeof(float));
    s->buf = algo_env_alloc(env, n * d * sizeof(float));
    s->v = s->gmf > 0 ? algo_env_calloc(env, n * d, sizeof(float)) : NULL;
    s->ptrs = algo_env_alloc(env, n * sizeof *s->ptrs);
    if ((rc = algo_env_alloc_check(env, "overlap_local_sgd", err)) < 0)
        return rc;
    rc = algo_local_optim_init(&s->lo, env, 0, err);
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = env->w[i].x;
    algo_mean(s->z, s->ptrs, s->n, s->d); /* z = x^0 */
    algo_sync_desc desc = {
        .who = "overlap_local_sgd", .method = s, .n_slots = 1,
        .slots = {ALGO_SYNC_ALLREDUCE}, .count = ALGO_SYNC_COUNT_STEPS, .span = s->tau + 2,
        .joiner_idle = 1, .background = 1,
        .hooks = {.step_done = h_step_done, .contribute = h_contribute,
                  .form = h_form, .join = h_join},
    };
    if (rc < 0 || (rc = algo_sync_create(env, &desc, &s->sy, err)) < 0)
        return rc;
    *out = s;
    return 0;
}

static int start(void *p, sim_err *err) { return algo_sync_start(((overlap *)p)->sy, err); }

static const float *model(void *p, float *scratch)
{
    overlap *s = p;
    int k = live_models(s, s->ptrs);
    if (k == 1)
        return s->ptrs[0];
    algo_mean(scratch, s->ptrs, k, s->d);
    return scratch;
}

static void worker_models(void *p, const float **xs)
{
    overlap *s = p;
    for (int i = 0; i < s->n; i++)
        xs[i] = s->env->w[i].x;
}

static void fault(void *p, const algo_fault *ev) { algo_sync_fault(((overlap *)p)->sy, ev); }

const algo_vt algo_overlap_local_sgd = {
    .name = "overlap_local_sgd",
    .summary = "Local SGD whose averaging runs in the background, pulling toward a one-round-old "
               "anchor",
    .reference = "8",
    .keys = keys,
    .async = 0,
    .uses_graph = 0,
    .supports_compression = 0,
    .supports_bucket = 1,
    .server = ALGO_SERVER_PS,
    .create = create,
    .start = start,
    .model = model,
    .worker_models = worker_models,
    .live_models = live_models,
    .fault = fault,
};
