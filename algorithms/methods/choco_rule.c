/* choco: compressed gossip for dpsgd and dsgd_atc (CHOCO-SGD, Koloskova,
 * Stich, Jaggi, ICML 2019), as ops of the gossip driver (gossip.h):
 *     q_i = C(v_i - x_hat_i),   x_hat_i <- x_hat_i + q_i     (all holders)
 *   ATC (dsgd_atc):  v_i = x_i - lr d_i
 *                    x_i <- v_i + gamma (sum_j W_ij x_hat_j - x_hat_i)
 *   AWC (dpsgd):     v_i = x_i
 *                    x_i <- x_i + gamma (sum_j W_ij x_hat_j - x_hat_i) - lr d_i
 * One x_hat_j per worker (every holder's copy is equal): the published
 * vector is x_hat, the network carries the compressed message's size.
 * docs/compressors.md, "Compressed gossip"; crashes: docs/faults.md,
 * "CHOCO under crashes" (rule in gossip_crash.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/methods/gossip_rules.h"
#include "algorithms/compress/compress.h"

typedef struct choco {
    algo_local_optim lo; /* first: the local optimizer states */
    algo_compressor *comp;
    algo_compress_worker *cw; /* n */
    float *xhat;              /* n x d public copies */
    float *v;                 /* ATC: n x d, v_i = x_i - lr d_i; AWC: d scratch */
    int n;
    int64_t d;
    float gamma;
} choco;

/* q_i = C(v - x_hat_i); x_hat_i += q_i; send = x_hat_i. */
static void publish(choco *c, int i, const float *v, float *send)
{
    const int64_t d = c->d;
    float *xh = c->xhat + (size_t)i * (size_t)d;
    float *diff = send; /* the send buffer holds the difference while encoding */
    for (int64_t j = 0; j < d; j++)
        diff[j] = v[j] - xh[j];
    const algo_compress_msg *q = algo_compress_worker_encode(&c->cw[i], diff);
    algo_compress_decode_add(c->comp, q, 1.0f, xh);
    memcpy(send, xh, (size_t)d * sizeof *send);
}

static void atc_prepare(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr,
                        float *send)
{
    choco *c = p;
    algo_worker *w = &env->w[i];
    float *v = c->v + (size_t)i * (size_t)c->d;
    algo_optim_step_from(c->lo.s[i], v, w->x, w->x, w->grad, lr);
    publish(c, i, v, send);
}

static void atc_finish(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr SIM_UNUSED,
                       const float *mixed)
{
    choco *c = p;
    const int64_t d = c->d;
    const float *v = c->v + (size_t)i * (size_t)d, *xh = c->xhat + (size_t)i * (size_t)d;
    float *x = env->w[i].x;
    const float gm = c->gamma;
    for (int64_t j = 0; j < d; j++)
        x[j] = v[j] + gm * (mixed[j] - xh[j]);
}

static void awc_prepare(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr SIM_UNUSED,
                        float *send)
{
    publish(p, i, env->w[i].x, send);
}

static void awc_finish(void *p, algo_env *env, int i, int64_t k SIM_UNUSED, double lr,
                       const float *mixed)
{
    choco *c = p;
    const int64_t d = c->d;
    const float *xh = c->xhat + (size_t)i * (size_t)d;
    algo_worker *w = &env->w[i];
    float *base = c->v;
    const float gm = c->gamma;
    for (int64_t j = 0; j < d; j++)
        base[j] = w->x[j] + gm * (mixed[j] - xh[j]);
    algo_optim_step_from(c->lo.s[i], w->x, base, w->x, w->grad, lr);
}

static double msg_bytes(void *p, int i) { return ((choco *)p)->cw[i].msg.bytes; }

/* Worker i rejoins ([faults]) with the model the driver gave it: a fresh
 * optimizer state and x_hat_i = x_i; the driver sends its links' next
 * messages dense, so every holder's copy is this one again (gossip_crash.c). */
static void choco_reset(void *p, algo_env *env, int i)
{
    choco *c = p;
    algo_optim_reset(c->lo.s[i]);
    memcpy(c->xhat + (size_t)i * (size_t)c->d, env->w[i].x, (size_t)c->d * sizeof *c->xhat);
}

int algo_choco_create(algo_env *env, algo_gossip_form form, void **out, sim_err *err)
{
    const cfg_config *cfg = env->cfg;
    algo_compressor *comp;
    int rc = algo_env_compressor_create(env, NULL, &comp, err);
    if (rc < 0)
        return rc;
    if (comp->vt->identity)
        return algo_dsgd_create(env, form, out, err);
    double gamma;
    rc = cfg_get_double(cfg, "algorithm", "consensus_step", &gamma, err);
    if (rc)
        return rc;
    if (!(gamma > 0 && gamma <= 1))
        return cfg_error(cfg, "algorithm", "consensus_step", SIM_ECONFIG, err,
                                "must be in (0, 1], got %g", gamma);
    if (!cfg->error_feedback)
        return cfg_error(cfg, "algorithm", "error_feedback", SIM_ECONFIG, err,
                                "%s with a compressor keeps public copies x_hat (CHOCO), "
                                "which are its error feedback; false is not supported",
                                cfg->algorithm);
    int64_t steps = 1;
    if (cfg_find(cfg, "algorithm", "gossip_steps") &&
        (rc = cfg_get_int(cfg, "algorithm", "gossip_steps", &steps, err)) < 0)
        return rc;
    if (steps != 1)
        return cfg_error(cfg, "algorithm", "gossip_steps", SIM_ECONFIG, err,
                                "%s with a compressor takes one gossip step per iteration, "
                                "got %lld",
                                cfg->algorithm, (long long)steps);
    choco *c = algo_env_calloc(env, 1, sizeof *c);
    if (!c)
        return algo_env_alloc_check(env, cfg->algorithm, err);
    c->n = env->n;
    c->d = env->d;
    c->gamma = (float)gamma;
    rc = algo_local_optim_init(&c->lo, env, 0, err);
    if (rc)
        return rc;
    c->comp = comp;
    c->comp->error_feedback = 1; /* contractive form (Random-k unscaled) */
    const size_t n = (size_t)env->n, d = (size_t)env->d;
    c->xhat = algo_env_calloc(env, n * d, sizeof *c->xhat);
    c->v = algo_env_alloc(env, (form == ALGO_GOSSIP_ATC ? n * d : d) * sizeof *c->v);
    if ((rc = algo_env_alloc_check(env, cfg->algorithm, err)) < 0)
        return rc;
    if ((rc = algo_env_compress_workers(env, c->comp, 0, &c->cw, err)) < 0)
        return rc;
    algo_gossip_ops ops = {
        .form = form,
        .width = 1,
        .prepare = form == ALGO_GOSSIP_ATC ? atc_prepare : awc_prepare,
        .finish = form == ALGO_GOSSIP_ATC ? atc_finish : awc_finish,
        .bytes = msg_bytes,
        .reset = choco_reset,
    };
    return algo_gossip_create_state(env, &ops, c, out, err);
}
