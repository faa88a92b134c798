/* decentlam: DecentLaM (Yuan et al., ICCV 2021), ATC with the gossip moved
 * inside the quantity fed to the momentum, on the gossip driver:
 *   z_i = x_i - lr g_i                      (sent to neighbours, blocking)
 *   gt_i = (x_i - sum_j W_ij z_j) / lr      ("corrected gradient")
 *   m_i <- beta m_i + gt_i;  x_i <- x_i - lr m_i   (Nesterov: lr (gt + beta m))
 * docs/algorithms.md, section 3.3 (crashes: docs/faults.md). */
#include <stdlib.h>
#include <string.h>

#include "algorithms/drivers/gossip.h"
#include "algorithms/methods/method.h"

/* The common momentum (beta), nesterov and weight_decay keys and one
 * heavy-ball buffer per worker (zeros at the start). */
typedef struct momentum {
    float *m;        /* n x d buffers, NULL without momentum */
    int64_t d;       /* floats per buffer (env->d) */
    double beta, wd; /* momentum and weight decay of env->cfg */
    int nesterov;
} momentum;

/* Worker i's buffer, or NULL without momentum. */
static float *momentum_of(const momentum *mo, int i)
{
    return mo->m ? mo->m + (int64_t)i * mo->d : NULL;
}

static void prepare(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr, float *send)
{
    const momentum *s = p;
    algo_worker *w = &env->w[i];
    algo_local_step(send, w->x, w->x, w->grad, NULL, s->d, lr, 0, 0, s->wd);
}

/* gt = (x - mixed) / lr; m = beta m + gt; x -= lr m (or lr (gt + beta m)). */
static void update(const momentum *s, float *restrict x, const float *restrict mixed,
                   float *restrict m, int64_t len, double lr)
{
    const float flr = (float)lr, fb = (float)s->beta;
    if (!m) {
        for (int64_t j = 0; j < len; j++) {
            float gt = (x[j] - mixed[j]) / flr;
            x[j] -= flr * gt;
        }
    } else if (s->nesterov) {
        for (int64_t j = 0; j < len; j++) {
            float gt = (x[j] - mixed[j]) / flr;
            m[j] = fb * m[j] + gt;
            x[j] -= flr * (gt + fb * m[j]);
        }
    } else {
        for (int64_t j = 0; j < len; j++) {
            float gt = (x[j] - mixed[j]) / flr;
            m[j] = fb * m[j] + gt;
            x[j] -= flr * m[j];
        }
    }
}

static void finish(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr,
                   const float *mixed)
{
    const momentum *s = p;
    update(s, env->w[i].x, mixed, momentum_of(s, i), s->d, lr);
}

static void combine(void *p, algo_env *env SIM_UNUSED, int i, int64_t k SIM_UNUSED, double lr,
                    const topo_wmat *W, const float *const *in, const float *x_old SIM_UNUSED,
                    float *x_new)
{
    const momentum *s = p;
    float *x = x_new, *m = momentum_of(s, i);
    float tmp[ALGO_ROW_CHUNK];
    for (int64_t c = 0; c < s->d; c += ALGO_ROW_CHUNK) {
        int64_t len = s->d - c < ALGO_ROW_CHUNK ? s->d - c : ALGO_ROW_CHUNK;
        algo_gossip_row(W, i, in, c, len, tmp);
        update(s, x + c, tmp, m ? m + c : NULL, len, lr);
    }
}

/* A rejoining worker's fresh state: m_i = 0. */
static void reset(void *p, algo_env *env SIM_UNUSED, int i)
{
    const momentum *s = p;
    float *m = momentum_of(s, i);
    if (m)
        memset(m, 0, (size_t)s->d * sizeof(float));
}

static const cfg_key keys[] = {
    ALGO_GOSSIP_STEPS_KEY,
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    int rc = algo_optim_require_sgd(env->cfg,
                                    "heavy-ball momentum on the gossip-corrected gradient is the "
                                    "method, docs/algorithms.md section 3.3",
                                    err);
    if (rc < 0)
        return rc;
    const cfg_config *c = env->cfg;
    momentum *s = algo_env_alloc(env, sizeof *s);
    if (!s)
        return algo_env_alloc_check(env, "decentlam", err);
    *s = (momentum){.m = NULL, .d = env->d, .beta = c->momentum, .wd = c->weight_decay,
                    .nesterov = c->nesterov};
    if (c->momentum != 0)
        s->m = algo_env_calloc(env, (size_t)env->n * (size_t)env->d, sizeof(float));
    if ((rc = algo_env_alloc_check(env, "decentlam", err)) < 0)
        return rc;
    algo_gossip_ops ops = {
        .form = ALGO_GOSSIP_ATC,
        .width = 1,
        .prepare = prepare,
        .finish = finish,
        .combine_finish = combine,
        .reset = reset,
    };
    return algo_gossip_create_state(env, &ops, s, out, err);
}

const algo_vt algo_decentlam = {
    ALGO_METHOD("decentlam",
                "DecentLaM: momentum on the gossip-corrected gradient (ATC, blocking exchange)",
                "3.3"),
    ALGO_GOSSIP_SLOTS,
};
