/* overlap_local_sgd: Overlap-Local-SGD (docs/algorithms.md 8). Workers
 * take local steps (their own optimizer state, lr at their own point of
 * training, as local_sgd). After every tau local steps worker i
 * synchronizes:
 *   1. it waits for the all-reduce it started at its previous sync (the
 *      only point where it can block); its result is the anchor z (x^0
 *      before the first);
 *   2. pull: x_i <- (1 - alpha) x_i + alpha z;
 *   3. anchor momentum (gmf > 0): v_i <- gmf v_i + (z - x_i)/lr (v_i =
 *      (z - x_i)/lr at the first sync), buf_i = z - lr v_i; gmf = 0:
 *      buf_i = x_i;
 *   4. it starts a NON-blocking all-reduce of buf_i (S bytes) and goes on
 *      computing; the mean of the buf_i (worker-id order, formed at the
 *      round's first completion, when all have entered) is the next z.
 * One iteration = one local step of every worker, reported when its last
 * worker completes it. The evaluated model is the mean of the x_i. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/gossip.h"
#include "algorithms/local.h"

typedef struct overlap {
    algo_env *env;
    int n;
    int64_t d;
    int tau;
    double alpha, gmf;
    algo_local_optim lo;     /* one optimizer state per worker */
    sim_coll *coll;
    algo_local_steps steps;
    int *since;        /* n: local steps since the last sync */
    int64_t *applied;  /* n: samples applied */
    int64_t *started;  /* n: all-reduces the worker has started */
    int64_t *finished; /* n: of those, completed for the worker */
    int *waiting;      /* n: blocked at a sync */
    float *z;          /* anchor */
    float *buf;        /* n x d */
    float *v;          /* n x d, gmf > 0 */
    const float **ptrs;
    int first_done, done_in_round;
} overlap;

static void begin_step(overlap *s, int i);

static double worker_lr(const overlap *s, int i)
{
    const algo_env *env = s->env;
    return algo_lr_at(env->cfg, (double)(s->applied[i] * s->n) / (double)env->ds->train.n);
}

/* Steps 2-4 of the sync; z is the result of the previous all-reduce. */
static void sync(overlap *s, int i)
{
    algo_env *env = s->env;
    float *x = env->w[i].x, *buf = s->buf + (int64_t)i * s->d;
    const float a = (float)s->alpha, b = 1.0f - a;
    if (s->alpha != 0)
        for (int64_t j = 0; j < s->d; j++)
            x[j] = b * x[j] + a * s->z[j];
    if (s->gmf > 0) {
        const double lr = worker_lr(s, i);
        float *v = s->v + (int64_t)i * s->d;
        const double g = s->started[i] == 0 ? 0.0 : s->gmf;
        for (int64_t j = 0; j < s->d; j++) {
            double vj = g * v[j] + ((double)s->z[j] - (double)x[j]) / lr;
            v[j] = (float)vj;
            buf[j] = (float)((double)s->z[j] - lr * vj);
        }
    } else {
        memcpy(buf, x, (size_t)s->d * sizeof(float));
    }
    s->since[i] = 0;
    s->started[i]++;
    algo_env_coll_enter(env, s->coll, i, env->msg_bytes);
    begin_step(s, i);
}

static void on_coll_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    overlap *s = ctx;
    if (!s->first_done) {
        for (int i = 0; i < s->n; i++)
            s->ptrs[i] = s->buf + (int64_t)i * s->d;
        algo_mean(s->z, s->ptrs, s->n, s->d);
        s->first_done = 1;
    }
    if (++s->done_in_round == s->n) {
        s->done_in_round = 0;
        s->first_done = 0;
    }
    s->finished[rank]++;
    if (s->waiting[rank]) {
        s->waiting[rank] = 0;
        algo_env_idle_end(s->env, rank);
        sync(s, rank);
    }
}

static void on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    overlap *s = ctx;
    algo_env *env = s->env;
    int i = (int)arg;
    algo_worker *w = &env->w[i];
    algo_optim_step(s->lo.s[i], w->x, w->grad, worker_lr(s, i));
    s->applied[i] += w->grad_samples;
    algo_local_steps_done(&s->steps, env, i, w->grad_samples, 1);
    if (++s->since[i] < s->tau) {
        begin_step(s, i);
        return;
    }
    if (s->finished[i] < s->started[i]) {
        s->waiting[i] = 1;
        algo_env_idle_begin(env, i);
        return;
    }
    sync(s, i);
}

static void begin_step(overlap *s, int i)
{
    algo_env *env = s->env;
    algo_env_grad(env, i, env->w[i].x, env->w[i].grad);
    algo_env_compute(env, i, algo_env_step_samples(env, i), on_compute_done, s, (uint64_t)i);
}

static void destroy(void *p)
{
    overlap *s = p;
    if (!s)
        return;
    algo_local_optim_release(&s->lo);
    sim_coll_destroy(s->coll);
    algo_local_steps_release(&s->steps);
    free(s->since);
    free(s->applied);
    free(s->started);
    free(s->finished);
    free(s->waiting);
    free(s->z);
    free(s->buf);
    free(s->v);
    free(s->ptrs);
    free(s);
}

static int read_keys(overlap *s, const sim_config *c, sim_err *err)
{
    int64_t H;
    int rc;
    if ((rc = sim_config_get_int(c, "algorithm", "local_steps", &H, err)) ||
        (rc = sim_config_get_double(c, "algorithm", "pull", &s->alpha, err)) ||
        (rc = sim_config_get_double(c, "algorithm", "anchor_momentum", &s->gmf, err)))
        return rc;
    if (H < 1 || H > 1000000)
        return sim_config_error(c, "algorithm", "local_steps", SIM_ECONFIG, err,
                                "must be in [1, 1000000], got %lld", (long long)H);
    if (!(s->alpha >= 0 && s->alpha <= 1))
        return sim_config_error(c, "algorithm", "pull", SIM_ECONFIG, err,
                                "must be in [0, 1], got %g", s->alpha);
    if (!(s->gmf >= 0 && s->gmf < 1))
        return sim_config_error(c, "algorithm", "anchor_momentum", SIM_ECONFIG, err,
                                "must be in [0, 1), got %g", s->gmf);
    s->tau = (int)H;
    return 0;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    overlap *s = calloc(1, sizeof *s);
    if (!s)
        return sim_err_set(err, SIM_ENOMEM, "overlap_local_sgd: out of memory");
    s->env = env;
    s->n = env->n;
    s->d = env->d;
    int rc = read_keys(s, env->cfg, err);
    if (rc < 0) {
        destroy(s);
        return rc;
    }
    const size_t n = (size_t)s->n, d = (size_t)s->d;
    s->since = calloc(n, sizeof *s->since);
    s->applied = calloc(n, sizeof *s->applied);
    s->started = calloc(n, sizeof *s->started);
    s->finished = calloc(n, sizeof *s->finished);
    s->waiting = calloc(n, sizeof *s->waiting);
    s->z = malloc(d * sizeof(float));
    s->buf = malloc(n * d * sizeof(float));
    s->v = s->gmf > 0 ? calloc(n * d, sizeof(float)) : NULL;
    s->ptrs = malloc(n * sizeof *s->ptrs);
    if (!s->since || !s->applied || !s->started || !s->finished || !s->waiting ||
        !s->z || !s->buf || (s->gmf > 0 && !s->v) || !s->ptrs ||
        algo_local_steps_init(&s->steps, s->n, 2 * s->tau + 2) < 0) {
        destroy(s);
        return sim_err_set(err, SIM_ENOMEM, "overlap_local_sgd: out of memory");
    }
    rc = algo_local_optim_init(&s->lo, env, 0, err);
    if (rc < 0) {
        destroy(s);
        return rc;
    }
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = env->w[i].x;
    algo_mean(s->z, s->ptrs, s->n, s->d); /* z = x^0 */
    s->coll = algo_env_coll(env, env->allreduce_kind, on_coll_done, s, err);
    if (!s->coll) {
        destroy(s);
        return err ? err->code : SIM_EINTERNAL;
    }
    *out = s;
    return 0;
}

static int start(void *p, sim_err *err)
{
    (void)err;
    overlap *s = p;
    for (int i = 0; i < s->n; i++)
        begin_step(s, i);
    return 0;
}

static const float *model(void *p, float *scratch)
{
    overlap *s = p;
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = s->env->w[i].x;
    algo_mean(scratch, s->ptrs, s->n, s->d);
    return scratch;
}

static void worker_models(void *p, const float **xs)
{
    overlap *s = p;
    for (int i = 0; i < s->n; i++)
        xs[i] = s->env->w[i].x;
}

static int needs_server(const sim_config *cfg) { return cfg->collective == SIM_COLL_PS; }

static const sim_key keys[] = {
    {"algorithm", "local_steps", "2", SIM_KEY_INT, NULL,
     "tau: local steps between two syncs (>= 1)"},
    {"algorithm", "pull", "0.2", SIM_KEY_DOUBLE, NULL,
     "alpha: pull toward the anchor at a sync, x <- (1 - alpha) x + alpha z, in [0, 1]"},
    {"algorithm", "anchor_momentum", "0", SIM_KEY_DOUBLE, NULL,
     "gmf: momentum of the anchor update in [0, 1) (0: the anchor is the mean of the pulled models)"},
    {0},
};

const algo_vt algo_overlap_local_sgd = {
    .name = "overlap_local_sgd",
    .summary = "Local SGD whose averaging runs in the background, pulling toward a one-round-old "
               "anchor",
    .reference = "8",
    .keys = keys,
    .async = 0,
    .uses_graph = 0,
    .supports_compression = 0,
    .needs_server = needs_server,
    .create = create,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = worker_models,
};
