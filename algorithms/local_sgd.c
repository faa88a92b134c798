/* Local SGD and the methods built on its round (docs/algorithms.md 1.5, 2,
 * 4): local_sgd, post_local_sgd, adaptive_local_sgd and slowmo.
 *
 * Every worker keeps its own model x_i and its own optimizer state (the
 * configured optimizer, [algorithm] optimizer) and takes local steps: the
 * gradient at x_i when the step starts, x_i <- x_i - lr dir_i when it
 * ends, with lr at the worker's own point of training (its applied
 * samples times n). After H local steps it enters a blocking all-reduce of
 * its parameters (S bytes). When the round's first rank completes, every
 * x_i has its round's value: the mean xbar (worker-id order) is formed
 * there once, with the method's outer step, and each rank takes it when
 * its own part completes. Buffers ([algorithm] buffers): local (untouched),
 * average (first and second moments averaged like x) or reset (zeroed).
 *
 *  - post_local_sgd: H = 1 until the epoch reaches switch_epoch (decided
 *    at each synchronization), then local_steps.
 *  - adaptive_local_sgd: after the average each worker computes per-sample
 *    statistics of its last local batch (at most test_samples samples) at
 *    xbar, charged as a compute step of that many samples, and enters a
 *    scalar all-reduce (32 bytes); its first completion takes the means and
 *    sets the batch of every worker by the configured test.
 *  - slowmo: the outer update on the average (u <- beta u + (x0 - xbar)/lr,
 *    x0 <- x0 - alpha lr u) or BMUF's block momentum (classic, nesterov).
 *
 * One iteration = one local step of every worker; a step that ends with a
 * synchronization is reported when the synchronization's first rank
 * completes. The evaluated model is the mean of the workers' models. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/gossip.h"
#include "algorithms/local.h"

typedef enum mode { LOCAL, POST, ADAPTIVE, SLOWMO } mode;
typedef enum buffers { BUF_LOCAL, BUF_AVERAGE, BUF_RESET } buffers;

typedef struct lsgd {
    algo_env *env;
    mode mode;
    int n;
    int64_t d;
    int H;               /* local steps per round (after the switch for post) */
    int H_cur;           /* local steps of the current round */
    buffers buf;
    double switch_epoch; /* post_local_sgd */
    /* adaptive */
    algo_batch_test test;
    double eta, theta, nu;
    int max_batch, test_samples;
    wl_batch_stats *stats; /* n */
    float *stats_ws;
    sim_coll *scoll;
    /* slowmo */
    algo_slowmo_params sp;
    float *x0, *u;       /* outer iterate and slow momentum (or BMUF's x_g and Delta) */
    void *base;          /* slowmo with base = dpsgd: its gossip driver, which runs it */
    /* state */
    algo_local_optim lo;     /* one optimizer state per worker */
    sim_coll *coll;
    algo_local_steps steps;
    int *since;          /* n: local steps since the last synchronization */
    int64_t *applied;    /* n: samples the worker has applied */
    float *avg, *avg_m, *avg_v;
    const float **ptrs;
    int first_done;      /* the round's mean is formed */
    int done_in_round;
    int sfirst, sdone;
} lsgd;

static void begin_step(lsgd *s, int i);

static double worker_lr(const lsgd *s, int i)
{
    const algo_env *env = s->env;
    return algo_lr_at(env->cfg, (double)(s->applied[i] * s->n) / (double)env->ds->train.n);
}

static void on_compute_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    lsgd *s = ctx;
    algo_env *env = s->env;
    int i = (int)arg;
    algo_worker *w = &env->w[i];
    algo_optim_step(s->lo.s[i], w->x, w->grad, worker_lr(s, i));
    s->applied[i] += w->grad_samples;
    int sync = ++s->since[i] >= s->H_cur;
    algo_local_steps_done(&s->steps, env, i, w->grad_samples, !sync);
    if (!sync) {
        begin_step(s, i);
        return;
    }
    algo_env_idle_begin(env, i);
    algo_env_coll_enter(env, s->coll, i, env->msg_bytes);
}

static void mean_of(lsgd *s, float *out, float *(*get)(const algo_optim_state *))
{
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = get(s->lo.s[i]);
    algo_mean(out, s->ptrs, s->n, s->d);
}

/* SlowMo's outer step (docs/algorithms.md 4) on avg: avg becomes the
 * model every worker restarts from. */
static void outer_step(lsgd *s)
{
    algo_slowmo_outer(&s->sp, s->x0, s->u, s->avg, s->d, algo_env_lr(s->env));
}

/* The round's first completion: every worker has entered, so every x_i is
 * its round's value. */
static void round_mean(lsgd *s)
{
    algo_env *env = s->env;
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = env->w[i].x;
    algo_mean(s->avg, s->ptrs, s->n, s->d);
    if (s->buf == BUF_AVERAGE) {
        if (algo_optim_m(s->lo.s[0]))
            mean_of(s, s->avg_m, algo_optim_m);
        if (algo_optim_v(s->lo.s[0]))
            mean_of(s, s->avg_v, algo_optim_v);
    }
    if (s->mode == SLOWMO)
        outer_step(s);
    algo_local_steps_flush(&s->steps, env, s->steps.step[0]);
    if (s->mode == POST)
        s->H_cur = algo_env_epoch(env) >= s->switch_epoch ? s->H : 1;
}

static void take_mean(lsgd *s, int i)
{
    float *m, *v;
    memcpy(s->env->w[i].x, s->avg, (size_t)s->d * sizeof(float));
    s->since[i] = 0;
    if (s->buf == BUF_AVERAGE) {
        if ((m = algo_optim_m(s->lo.s[i])))
            memcpy(m, s->avg_m, (size_t)s->d * sizeof(float));
        if ((v = algo_optim_v(s->lo.s[i])))
            memcpy(v, s->avg_v, (size_t)s->d * sizeof(float));
    } else if (s->buf == BUF_RESET) {
        algo_optim_reset(s->lo.s[i]);
    }
}

static void on_test_done(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    lsgd *s = ctx;
    algo_env_idle_begin(s->env, (int)arg);
    algo_env_coll_enter(s->env, s->scoll, (int)arg, 32.0);
}

/* Adaptive: worker i's statistics at xbar on its last local batch. */
static void batch_stats(lsgd *s, int i)
{
    algo_env *env = s->env;
    algo_worker *w = &env->w[i];
    int64_t b = algo_env_step_samples(env, i);
    if (b > s->test_samples)
        b = s->test_samples;
    wl_model_batch_stats(env->model, w->x, w->bx, w->by, b, &s->stats[i], s->stats_ws);
    algo_env_compute(env, i, (int)b, on_test_done, s, (uint64_t)i);
}

static void on_coll_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    lsgd *s = ctx;
    if (!s->first_done) {
        s->first_done = 1; /* from here on the model is avg (model()) */
        round_mean(s);
    }
    take_mean(s, rank);
    algo_env_idle_end(s->env, rank);
    if (++s->done_in_round == s->n) {
        s->done_in_round = 0;
        s->first_done = 0;
    }
    if (s->mode == ADAPTIVE)
        batch_stats(s, rank);
    else
        begin_step(s, rank);
}

/* Adaptive: the scalar all-reduce's first completion sets the batch. */
static void on_scoll_done(sim_engine *eng, void *ctx, int rank)
{
    (void)eng;
    lsgd *s = ctx;
    algo_env *env = s->env;
    if (!s->sfirst) {
        s->sfirst = 1;
        wl_batch_stats m = {0};
        for (int i = 0; i < s->n; i++) {
            m.gnorm2 += s->stats[i].gnorm2;
            m.v_norm += s->stats[i].v_norm;
            m.v_ip += s->stats[i].v_ip;
            m.v_orth += s->stats[i].v_orth;
        }
        m.gnorm2 /= s->n;
        m.v_norm /= s->n;
        m.v_ip /= s->n;
        m.v_orth /= s->n;
        int b = env->w[0].batch;
        double prop = algo_batch_test_proposal(s->test, &m, s->eta, s->theta, s->nu);
        int next = algo_batch_test_next(b, prop, s->max_batch);
        if (next != b) {
            for (int i = 0; i < s->n; i++)
                algo_env_set_batch(env, i, next);
            algo_env_series(env, -1, "batch", next);
        }
    }
    algo_env_idle_end(env, rank);
    if (++s->sdone == s->n) {
        s->sdone = 0;
        s->sfirst = 0;
    }
    begin_step(s, rank);
}

static void begin_step(lsgd *s, int i)
{
    algo_env *env = s->env;
    algo_env_grad(env, i, env->w[i].x, env->w[i].grad);
    algo_env_compute(env, i, algo_env_step_samples(env, i), on_compute_done, s, (uint64_t)i);
}

static void destroy(void *p)
{
    lsgd *s = p;
    if (!s)
        return;
    algo_gossip_destroy(s->base);
    algo_local_optim_release(&s->lo);
    sim_coll_destroy(s->coll);
    sim_coll_destroy(s->scoll);
    algo_local_steps_release(&s->steps);
    free(s->since);
    free(s->applied);
    free(s->avg);
    free(s->avg_m);
    free(s->avg_v);
    free(s->ptrs);
    free(s->stats);
    free(s->stats_ws);
    free(s->x0);
    free(s->u);
    free(s);
}

static int choice(const sim_config *c, const char *key, const char *const *words)
{
    const char *v = sim_config_get_string(c, "algorithm", key);
    for (int k = 0; v && words[k]; k++)
        if (strcmp(v, words[k]) == 0)
            return k;
    return 0;
}

static int read_keys(lsgd *s, const sim_config *c, sim_err *err)
{
    int64_t H;
    int rc = sim_config_get_int(c, "algorithm", "local_steps", &H, err);
    if (rc < 0)
        return rc;
    if (H < 1 || H > 1000000)
        return sim_config_error(c, "algorithm", "local_steps", SIM_ECONFIG, err,
                                "must be in [1, 1000000], got %lld", (long long)H);
    s->H = s->H_cur = (int)H;
    static const char *const bufw[] = {"local", "average", "reset", NULL};
    s->buf = (buffers)choice(c, "buffers", bufw);
    if (s->mode == POST) {
        if ((rc = sim_config_get_double(c, "algorithm", "switch_epoch", &s->switch_epoch, err)))
            return rc;
        if (s->switch_epoch < 0) {
            if (c->n_lr_milestones == 0)
                return sim_config_error(c, "algorithm", "switch_epoch", SIM_ECONFIG, err,
                                        "is not set and there is no lr milestone to default to");
            s->switch_epoch = c->lr_milestones[0];
        }
        s->H_cur = s->switch_epoch <= 0 ? s->H : 1;
    }
    if (s->mode == ADAPTIVE) {
        static const char *const tw[] = {"norm", "inner_product", "augmented", NULL};
        s->test = (algo_batch_test)choice(c, "batch_test", tw);
        int64_t mb, ts;
        if ((rc = sim_config_get_double(c, "algorithm", "eta", &s->eta, err)) ||
            (rc = sim_config_get_double(c, "algorithm", "theta", &s->theta, err)) ||
            (rc = sim_config_get_double(c, "algorithm", "nu", &s->nu, err)) ||
            (rc = sim_config_get_int(c, "algorithm", "max_batch", &mb, err)) ||
            (rc = sim_config_get_int(c, "algorithm", "test_samples", &ts, err)))
            return rc;
        if (!(s->eta > 0))
            return sim_config_error(c, "algorithm", "eta", SIM_ECONFIG, err, "must be > 0");
        if (!(s->theta > 0))
            return sim_config_error(c, "algorithm", "theta", SIM_ECONFIG, err, "must be > 0");
        if (!(s->nu > 0))
            return sim_config_error(c, "algorithm", "nu", SIM_ECONFIG, err, "must be > 0");
        if (mb < 0 || mb > 100000000)
            return sim_config_error(c, "algorithm", "max_batch", SIM_ECONFIG, err,
                                    "must be in [0, 1e8], got %lld", (long long)mb);
        if (ts < 2 || ts > 1000000)
            return sim_config_error(c, "algorithm", "test_samples", SIM_ECONFIG, err,
                                    "must be in [2, 1000000], got %lld", (long long)ts);
        if (c->batch == 0)
            return sim_config_error(c, "algorithm", "batch", SIM_ECONFIG, err,
                                    "adaptive_local_sgd needs a batch size, not the full shard");
        s->max_batch = (int)mb;
        s->test_samples = (int)ts;
    }
    if (s->mode == SLOWMO) {
        algo_slowmo_params *sp = &s->sp;
        if ((rc = sim_config_get_double(c, "algorithm", "slow_momentum", &sp->beta, err)) ||
            (rc = sim_config_get_double(c, "algorithm", "slow_lr", &sp->alpha, err)))
            return rc;
        if (!(sp->beta >= 0 && sp->beta < 1))
            return sim_config_error(c, "algorithm", "slow_momentum", SIM_ECONFIG, err,
                                    "must be in [0, 1), got %g", sp->beta);
        if (!(sp->alpha > 0) || !isfinite(sp->alpha))
            return sim_config_error(c, "algorithm", "slow_lr", SIM_ECONFIG, err,
                                    "must be > 0, got %g", sp->alpha);
        static const char *const bw[] = {"none", "classic", "nesterov", NULL};
        sp->bmuf = (algo_bmuf)choice(c, "bmuf", bw);
        sp->tau = s->H;
        sp->buffers = (int)s->buf;
    }
    return 0;
}

static int create_mode(algo_env *env, void **out, sim_err *err, mode m)
{
    lsgd *s = calloc(1, sizeof *s);
    if (!s)
        return sim_err_set(err, SIM_ENOMEM, "local_sgd: out of memory");
    s->env = env;
    s->mode = m;
    s->n = env->n;
    s->d = env->d;
    int rc = read_keys(s, env->cfg, err);
    if (rc < 0) {
        destroy(s);
        return rc;
    }
    const char *base = m == SLOWMO ? sim_config_get_string(env->cfg, "algorithm", "base") : NULL;
    if (base && strcmp(base, "dpsgd") == 0) {
        if ((rc = algo_slowmo_dpsgd_create(env, &s->sp, &s->base, err)) < 0) {
            destroy(s);
            return rc;
        }
        *out = s;
        return 0;
    }
    const size_t n = (size_t)s->n, bytes = (size_t)s->d * sizeof(float);
    s->since = calloc(n, sizeof *s->since);
    s->applied = calloc(n, sizeof *s->applied);
    s->avg = malloc(bytes);
    s->avg_m = malloc(bytes);
    s->avg_v = malloc(bytes);
    s->ptrs = malloc(n * sizeof *s->ptrs);
    if (!s->since || !s->applied || !s->avg || !s->avg_m || !s->avg_v || !s->ptrs ||
        algo_local_steps_init(&s->steps, s->n, s->H + 2) < 0) {
        destroy(s);
        return sim_err_set(err, SIM_ENOMEM, "local_sgd: out of memory");
    }
    if ((rc = algo_local_optim_init(&s->lo, env, 0, err)) < 0) {
        destroy(s);
        return rc;
    }
    if (m == SLOWMO) {
        s->x0 = malloc(bytes);
        s->u = calloc((size_t)s->d, sizeof(float));
        if (!s->x0 || !s->u) {
            destroy(s);
            return sim_err_set(err, SIM_ENOMEM, "slowmo: out of memory");
        }
        for (int i = 0; i < s->n; i++)
            s->ptrs[i] = env->w[i].x;
        algo_mean(s->x0, s->ptrs, s->n, s->d);
    }
    if (m == ADAPTIVE) {
        if (env->ds->sparse) { /* the batch statistics read dense rows (w->bx) */
            destroy(s);
            return sim_config_error(env->cfg, "workload", "sparse", SIM_ECONFIG, err,
                                    "adaptive_local_sgd needs dense rows for its batch "
                                    "statistics: set [workload] sparse = off");
        }
        s->stats = calloc(n, sizeof *s->stats);
        s->stats_ws = malloc(wl_model_stats_workspace_floats(env->model, s->test_samples) *
                             sizeof(float));
        if (!s->stats || !s->stats_ws) {
            destroy(s);
            return sim_err_set(err, SIM_ENOMEM, "adaptive_local_sgd: out of memory");
        }
        s->scoll = algo_env_coll(env, env->allreduce_kind, on_scoll_done, s, err);
        if (!s->scoll) {
            destroy(s);
            return err ? err->code : SIM_EINTERNAL;
        }
    }
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
    lsgd *s = p;
    if (s->base)
        return algo_gossip_start(s->base, err);
    if (s->mode == ADAPTIVE)
        algo_env_series(s->env, -1, "batch", s->env->w[0].batch);
    for (int i = 0; i < s->n; i++)
        begin_step(s, i);
    return 0;
}

/* While a round's ranks take the mean, every worker logically holds it. */
static const float *model(void *p, float *scratch)
{
    lsgd *s = p;
    if (s->base)
        return algo_gossip_model(s->base, scratch);
    if (s->first_done)
        return s->avg;
    for (int i = 0; i < s->n; i++)
        s->ptrs[i] = s->env->w[i].x;
    algo_mean(scratch, s->ptrs, s->n, s->d);
    return scratch;
}

static void worker_models(void *p, const float **xs)
{
    lsgd *s = p;
    if (s->base) {
        algo_gossip_worker_models(s->base, xs);
        return;
    }
    for (int i = 0; i < s->n; i++)
        xs[i] = s->first_done ? s->avg : s->env->w[i].x;
}

static int needs_server(const sim_config *cfg) { return cfg->collective == SIM_COLL_PS; }

static int create_local(algo_env *e, void **o, sim_err *r) { return create_mode(e, o, r, LOCAL); }
static int create_post(algo_env *e, void **o, sim_err *r) { return create_mode(e, o, r, POST); }
static int create_adaptive(algo_env *e, void **o, sim_err *r)
{
    return create_mode(e, o, r, ADAPTIVE);
}
static int create_slowmo(algo_env *e, void **o, sim_err *r) { return create_mode(e, o, r, SLOWMO); }

#define KEY_BUFFERS                                                                            \
    {"algorithm", "buffers", "local", SIM_KEY_CHOICE, "local|average|reset",                   \
     "optimizer buffers at a synchronization: kept local, averaged like x, or reset to 0"}

static const sim_key local_keys[] = {
    {"algorithm", "local_steps", "4", SIM_KEY_INT, NULL,
     "H: local steps between two blocking averages of the parameters (>= 1)"},
    KEY_BUFFERS,
    {0},
};

static const sim_key post_keys[] = {
    {"algorithm", "local_steps", "16", SIM_KEY_INT, NULL,
     "H after the switch: local steps between two averages (>= 1)"},
    {"algorithm", "switch_epoch", "-1", SIM_KEY_DOUBLE, NULL,
     "epoch from which local_steps applies (synchronous SGD before); < 0: the first lr milestone"},
    KEY_BUFFERS,
    {0},
};

static const sim_key adaptive_keys[] = {
    {"algorithm", "local_steps", "4", SIM_KEY_INT, NULL,
     "H: local steps between two averages (>= 1)"},
    KEY_BUFFERS,
    {"algorithm", "batch_test", "norm", SIM_KEY_CHOICE, "norm|inner_product|augmented",
     "variance test that grows the local batch at each synchronization"},
    {"algorithm", "eta", "0.1", SIM_KEY_DOUBLE, NULL, "norm test constant (> 0)"},
    {"algorithm", "theta", "0.5", SIM_KEY_DOUBLE, NULL, "inner-product test constant (> 0)"},
    {"algorithm", "nu", "1", SIM_KEY_DOUBLE, NULL, "orthogonality test constant (> 0)"},
    {"algorithm", "max_batch", "4096", SIM_KEY_INT, NULL,
     "largest local batch the test may set (0 = no cap)"},
    {"algorithm", "test_samples", "64", SIM_KEY_INT, NULL,
     "per-sample gradients per worker and test (at most the batch; >= 2)"},
    {0},
};

static const sim_key slowmo_keys[] = {
    {"algorithm", "local_steps", "12", SIM_KEY_INT, NULL,
     "tau: base steps per outer iteration (>= 1)"},
    KEY_BUFFERS,
    {"algorithm", "slow_momentum", "0.5", SIM_KEY_DOUBLE, NULL,
     "beta: slow (outer) momentum, or BMUF's block momentum eta, in [0, 1)"},
    {"algorithm", "slow_lr", "1", SIM_KEY_DOUBLE, NULL,
     "alpha: slow learning rate, or BMUF's block learning rate zeta (> 0)"},
    {"algorithm", "bmuf", "none", SIM_KEY_CHOICE, "none|classic|nesterov",
     "none: SlowMo's update in gradient units; classic or nesterov: BMUF block momentum"},
    {"algorithm", "base", "local_sgd", SIM_KEY_CHOICE, "local_sgd|dpsgd",
     "base of the inner steps: local optimizer steps, or D-PSGD steps on the [topology] graph"},
    {"algorithm", "form", "awc", SIM_KEY_CHOICE, "atc|awc",
     "base = dpsgd: awc x <- Wx - lr d (exchange overlaps the gradient), atc x <- W(x - lr d)"},
    {"algorithm", "gossip_steps", "1", SIM_KEY_INT, NULL,
     "base = dpsgd: gossip steps q per base step (each a neighbour exchange of S bytes)"},
    {0},
};

#define LOCAL_VT(NAME, SUMMARY, REF, KEYS, CREATE, GRAPH)                                       \
    {                                                                                          \
        .name = NAME, .summary = SUMMARY, .reference = REF, .keys = KEYS, .async = 0,          \
        .uses_graph = GRAPH, .supports_compression = 0, .needs_server = needs_server,          \
        .create = CREATE, .destroy = destroy, .start = start, .model = model,                  \
        .worker_models = worker_models,                                                        \
    }

const algo_vt algo_local_sgd =
    LOCAL_VT("local_sgd", "Local SGD: H local steps, then a blocking average of the parameters",
             "1.5", local_keys, create_local, 0);
const algo_vt algo_post_local_sgd =
    LOCAL_VT("post_local_sgd", "synchronous SGD until switch_epoch, then Local SGD", "1.5",
             post_keys, create_post, 0);
const algo_vt algo_adaptive_local_sgd =
    LOCAL_VT("adaptive_local_sgd",
             "Local SGD whose local batch grows by a variance test at each synchronization", "2",
             adaptive_keys, create_adaptive, 0);
const algo_vt algo_slowmo =
    LOCAL_VT("slowmo", "SlowMo: Local SGD or D-PSGD rounds, then an outer slow momentum (or BMUF)",
             "4", slowmo_keys, create_slowmo, 1);
