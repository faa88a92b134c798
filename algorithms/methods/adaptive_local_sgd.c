/* adaptive_local_sgd (docs/algorithms.md 2): Local SGD whose local batch
 * grows by a variance test. After each average every worker computes
 * per-sample statistics of its last local batch (at most test_samples
 * samples) at xbar, charged as a compute step of that many samples, and
 * enters a scalar all-reduce (32 bytes), the round's second phase; its
 * first completion takes the means over the group and sets the batch of
 * every worker by the configured test. The round is local_round.h's. */
#include "algorithms/methods/local_round.h"

#include <stdlib.h>

typedef struct adaptive {
    algo_batch_test test;
    double eta, theta, nu;
    int max_batch, test_samples;
    wl_batch_stats *stats; /* n */
    float *stats_ws;
} adaptive;

static const cfg_key keys[] = {
    {"algorithm", "local_steps", "4", CFG_KEY_INT, NULL,
     "H: local steps between two averages (>= 1)"},
    ALGO_LSGD_KEY_BUFFERS,
    {"algorithm", "batch_test", "norm", CFG_KEY_CHOICE, "norm|inner_product|augmented",
     "variance test that grows the local batch at each synchronization"},
    {"algorithm", "eta", "0.1", CFG_KEY_DOUBLE, NULL, "norm test constant (> 0)"},
    {"algorithm", "theta", "0.5", CFG_KEY_DOUBLE, NULL, "inner-product test constant (> 0)"},
    {"algorithm", "nu", "1", CFG_KEY_DOUBLE, NULL, "orthogonality test constant (> 0)"},
    {"algorithm", "max_batch", "4096", CFG_KEY_INT, NULL,
     "largest local batch the test may set (0 = no cap)"},
    {"algorithm", "test_samples", "64", CFG_KEY_INT, NULL,
     "per-sample gradients per worker and test (at most the batch; >= 2)"},
    {0},
};

/* Worker i's statistics at xbar on its last local batch. */
static void contribute2(algo_lsgd *s, int i, algo_sync_msg *msg)
{
    adaptive *a = s->ext;
    algo_env *env = s->env;
    algo_worker *w = &env->w[i];
    int64_t b = algo_env_step_samples(env, i);
    if (b > a->test_samples)
        b = a->test_samples;
    wl_model_batch_stats(env->model, w->x, w->bx, w->by, b, &a->stats[i], a->stats_ws);
    msg->samples = (int)b;
    msg->bytes = 32.0;
}

/* The mean of the members' statistics sets every worker's batch. */
static void form2(algo_lsgd *s, const algo_group *g)
{
    adaptive *a = s->ext;
    algo_env *env = s->env;
    wl_batch_stats m = {0};
    for (int r = 0; r < g->n; r++) {
        const wl_batch_stats *b = &a->stats[g->members[r]];
        m.gnorm2 += b->gnorm2;
        m.v_norm += b->v_norm;
        m.v_ip += b->v_ip;
        m.v_orth += b->v_orth;
    }
    m.gnorm2 /= g->n;
    m.v_norm /= g->n;
    m.v_ip /= g->n;
    m.v_orth /= g->n;
    int b = env->w[0].batch;
    double prop = algo_batch_test_proposal(a->test, &m, a->eta, a->theta, a->nu);
    int next = algo_batch_test_next(b, prop, a->max_batch);
    if (next != b) {
        for (int i = 0; i < s->n; i++)
            algo_env_set_batch(env, i, next);
        algo_env_series(env, -1, "batch", next);
    }
}

static void start(algo_lsgd *s) { algo_env_series(s->env, -1, "batch", s->env->w[0].batch); }

static int read_keys(adaptive *a, const cfg_config *c, sim_err *err)
{
    static const char *const tw[] = {"norm", "inner_product", "augmented", NULL};
    a->test = (algo_batch_test)algo_lsgd_choice(c, "batch_test", tw);
    static const char *const pos[] = {"eta", "theta", "nu"};
    double *v[] = {&a->eta, &a->theta, &a->nu};
    int64_t mb, ts;
    int rc;
    for (int k = 0; k < 3; k++)
        if ((rc = cfg_get_double(c, "algorithm", pos[k], v[k], err)) ||
            (!(*v[k] > 0) && (rc = cfg_error(c, "algorithm", pos[k], SIM_ECONFIG, err,
                                             "must be > 0"))))
            return rc;
    if ((rc = cfg_get_int(c, "algorithm", "max_batch", &mb, err)) ||
        (rc = cfg_get_int(c, "algorithm", "test_samples", &ts, err)))
        return rc;
    if (mb < 0 || mb > 100000000)
        return cfg_error(c, "algorithm", "max_batch", SIM_ECONFIG, err,
                                "must be in [0, 1e8], got %lld", (long long)mb);
    if (ts < 2 || ts > 1000000)
        return cfg_error(c, "algorithm", "test_samples", SIM_ECONFIG, err,
                                "must be in [2, 1000000], got %lld", (long long)ts);
    if (c->batch == 0)
        return cfg_error(c, "algorithm", "batch", SIM_ECONFIG, err,
                                "adaptive_local_sgd needs a batch size, not the full shard");
    a->max_batch = (int)mb;
    a->test_samples = (int)ts;
    return 0;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    static const algo_lsgd_ops ops = {.contribute2 = contribute2, .form2 = form2,
                                      .ext_size = sizeof(adaptive), .start = start};
    algo_lsgd *s = algo_lsgd_alloc(env, &ops, err);
    if (!s)
        return err->code;
    adaptive *a = s->ext;
    int rc = read_keys(a, env->cfg, err);
    if (!rc && env->ds->sparse) /* the batch statistics read dense rows (w->bx) */
        rc = cfg_error(env->cfg, "workload", "sparse", SIM_ECONFIG, err,
                              "adaptive_local_sgd needs dense rows for its batch "
                              "statistics: set [workload] sparse = off");
    if (!rc) {
        a->stats = algo_env_calloc(env, (size_t)env->n, sizeof *a->stats);
        a->stats_ws = algo_env_alloc(env, wl_model_stats_workspace_floats(env->model,
                                                                          a->test_samples) *
                                              sizeof(float));
        rc = algo_env_alloc_check(env, "adaptive_local_sgd", err);
    }
    return algo_lsgd_finish(s, rc, 1, out, err);
}

const algo_vt algo_adaptive_local_sgd = ALGO_LSGD_VT(
    "adaptive_local_sgd",
    "Local SGD whose local batch grows by a variance test at each synchronization", "2", keys,
    create, 0);
