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
    ALGO_LSGD_KEY_STEPS("4", "H: local steps between two averages"),
    ALGO_LSGD_KEY_BUFFERS,
    {"algorithm", "batch_test", "norm", CFG_KEY_CHOICE, "norm|inner_product|augmented",
     "variance test that grows the local batch at each synchronization"},
    ALGO_KEY_DOUBLE_EXT("eta", "0.1", 0, INFINITY, "(]", adaptive, eta, "norm test constant"),
    ALGO_KEY_DOUBLE_EXT("theta", "0.5", 0, INFINITY, "(]", adaptive, theta,
                        "inner-product test constant"),
    ALGO_KEY_DOUBLE_EXT("nu", "1", 0, INFINITY, "(]", adaptive, nu, "orthogonality test constant"),
    ALGO_KEY_INT_EXT("max_batch", "4096", 0, 100000000, adaptive, max_batch,
                     "largest local batch the test may set (0 = no cap)"),
    ALGO_KEY_INT_EXT("test_samples", "64", 2, 1000000, adaptive, test_samples,
                     "per-sample gradients per worker and test (at most the batch)"),
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
    int rc = algo_keys_read(c, keys, NULL, a, err);
    if (!rc && c->batch == 0)
        rc = cfg_error(c, "algorithm", "batch", SIM_ECONFIG, err,
                       "adaptive_local_sgd needs a batch size, not the full shard");
    return rc;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    static const algo_lsgd_ops ops = {.keys = keys, .contribute2 = contribute2, .form2 = form2,
                                      .ext_size = sizeof(adaptive), .start = start};
    algo_lsgd *s;
    int rc = algo_lsgd_alloc(env, &ops, &s, err);
    if (rc)
        return rc;
    adaptive *a = s->ext;
    rc = read_keys(a, env->cfg, err);
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

static const char *data_time(const cfg_config *cfg)
{
    (void)cfg;
    return "its local batch grows by a variance test on the gradients, so its step times"
           " and iterations per epoch follow the data";
}

const algo_vt algo_adaptive_local_sgd = {
    ALGO_LSGD_SLOTS("adaptive_local_sgd",
                    "Local SGD whose local batch grows by a variance test at each synchronization",
                    "2", keys, create, 0),
    .data_time = data_time,
};
