/* momentum_consensus: decentralized heavy ball with momentum-accelerated
 * consensus (Balu et al., ICASSP 2021; RECONSTRUCTED from the abstract
 * [U]), on the gossip driver. Every worker sends (x_i^k, v_i^k) and sets
 *   x_i^{k+1} = sum_j W_ij x_j + beta [omega v_i + (1 - omega) sum_j W_ij v_j]
 *               - lr g_i,          v_i^{k+1} = x_i^{k+1} - x_i^k
 * (v^0 = 0; W^q with q gossip steps).
 * docs/algorithms.md, section 5 (crashes: docs/faults.md). */
#include <stdlib.h>
#include <string.h>

#include "algorithms/drivers/gossip.h"
#include "algorithms/methods/method.h"

typedef struct mc {
    float *v;        /* n x d */
    int64_t d;
    double beta, omega, wd;
    int overlap;     /* the exchange overlaps the gradient (AWC) */
} mc;

static void prepare(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr SIM_UNUSED,
                    float *send)
{
    mc *s = p;
    size_t bytes = (size_t)s->d * sizeof(float);
    memcpy(send, env->w[i].x, bytes);
    memcpy(send + s->d, s->v + (int64_t)i * s->d, bytes);
}

/* x' = mx + beta (omega v + (1 - omega) mv) - lr (g + wd x); v = x' - x. */
static void update(const mc *s, float *restrict x, const float *restrict g,
                   float *restrict v, const float *restrict mx, const float *restrict mv,
                   int64_t len, double lr)
{
    const float fb = (float)s->beta, fo = (float)s->omega, fo1 = (float)(1.0 - s->omega);
    const float flr = (float)lr, fwd = (float)s->wd;
    for (int64_t j = 0; j < len; j++) {
        float gj = g[j] + fwd * x[j];
        float xn = mx[j] + fb * (fo * v[j] + fo1 * mv[j]) - flr * gj;
        v[j] = xn - x[j];
        x[j] = xn;
    }
}

static void finish(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr,
                   const float *mixed)
{
    mc *s = p;
    update(s, env->w[i].x, env->w[i].grad, s->v + (int64_t)i * s->d, mixed, mixed + s->d,
           s->d, lr);
}

static void combine(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr,
                    const topo_wmat *W, const float *const *in, const float *x_old SIM_UNUSED,
                    float *x_new)
{
    mc *s = p;
    float *x = x_new, *g = env->w[i].grad, *v = s->v + (int64_t)i * s->d;
    float tx[ALGO_ROW_CHUNK / 2], tv[ALGO_ROW_CHUNK / 2];
    for (int64_t c = 0; c < s->d; c += ALGO_ROW_CHUNK / 2) {
        int64_t len = s->d - c < ALGO_ROW_CHUNK / 2 ? s->d - c : ALGO_ROW_CHUNK / 2;
        algo_gossip_row(W, i, in, c, len, tx);
        algo_gossip_row(W, i, in, s->d + c, len, tv);
        update(s, x + c, g + c, v + c, tx, tv, len, lr);
    }
}

/* A rejoining worker's fresh state: v_i = 0. */
static void reset(void *p, algo_env *env SIM_UNUSED, int i)
{
    mc *s = p;
    memset(s->v + (int64_t)i * s->d, 0, (size_t)s->d * sizeof(float));
}

static const cfg_key keys[] = {
    ALGO_GOSSIP_STEPS_KEY,
    ALGO_KEY_DOUBLE("omega", "0.5", 0, 1, "[]", mc, omega,
                    "[U] weight of the own v_i against the neighbours' average sum_j W_ij v_j"),
    ALGO_KEY_FIELD("overlap", "true", CFG_KEY_BOOL, 0, 0, NULL, mc, overlap, 0,
                   "true: the (x, v) exchange overlaps the gradient; false: sent after it, "
                   "blocking [U]"),
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    const cfg_config *c = env->cfg;
    int rc = algo_optim_require_sgd(c,
                                    "its heavy ball through v = x^{k+1} - x^k is the method, "
                                    "docs/algorithms.md section 5",
                                    err);
    if (rc < 0)
        return rc;
    mc *s = algo_env_calloc(env, 1, sizeof *s);
    if (!s)
        return algo_env_alloc_check(env, "momentum_consensus", err);
    s->v = algo_env_calloc(env, (size_t)env->n * (size_t)env->d, sizeof(float));
    if ((rc = algo_env_alloc_check(env, "momentum_consensus", err)) < 0)
        return rc;
    if ((rc = algo_keys_read(c, keys, s, NULL, err)) < 0)
        return rc;
    s->d = env->d;
    s->beta = c->momentum;
    s->wd = c->weight_decay;
    algo_gossip_ops ops = {
        .form = s->overlap ? ALGO_GOSSIP_AWC : ALGO_GOSSIP_ATC,
        .width = 2,
        .prepare = prepare,
        .finish = finish,
        .combine_finish = combine,
        .reset = reset,
    };
    return algo_gossip_create_state(env, &ops, s, out, err);
}

const algo_vt algo_momentum_consensus = {
    ALGO_METHOD("momentum_consensus",
                "[U] decentralized heavy ball exchanging x and v (2S per neighbour), Balu et al.",
                "5"),
    ALGO_GOSSIP_SLOTS,
};
