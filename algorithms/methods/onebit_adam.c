/* onebit_adam and onebit_lamb (docs/algorithms.md section 7, DeepSpeed's
 * onebit/adam.py and onebit/lamb.py). One shared model x and one optimizer
 * state (adamw or lamb, no bias correction).
 *
 * Warm-up, rounds 1..freeze_step: the gradients are all-reduced dense (the
 * configured collective, S bytes) and the mean takes an adamw step
 * (x -= lr (m / (sqrt(v) + eps) + wd x)) or a lamb step; so with
 * freeze_step >= the rounds run, onebit_adam is allreduce_sgd with
 * optimizer = adamw, bias_correction = false (onebit_lamb: lamb).
 *
 * Compression stage, rounds > freeze_step: v is frozen; worker i forms
 * m_i = beta1 m + (1 - beta1) g_i from the synchronized m and its gradient
 * and the momentum is the 1-bit compressed all-reduce of the m_i
 * (onebit.h, section 7.1): phase 1 is an all-to-all (each worker sends
 * d_pad/(8n) + 4 bytes to each other one), phase 2 an all-gather of the
 * same size, 2(n-1)(d_pad/(8n) + 4) bytes per worker per step. Then
 *   onebit_adam: x -= lr (m / (sqrt(v) + eps) + wd x);
 *   onebit_lamb: per layer, scaled momenta (kappa), the gradient recovered
 *   from the momentum feeds a fresh variance, and the frozen trust ratio
 *   c_l is corrected by a bounded factor f (section 7.3):
 *   x_l -= lr c_l f_l u_l.
 * [algorithm] error_feedback = false drops both error buffers (ablation).
 *
 * Compression cost: before entering phase 1 a worker spends
 * compress_time_per_value x d_wire seconds of compute (one pass over the
 * vector for the worker side; the server side on d/n values is folded
 * into it), counted in its compute time.
 *
 * Rounds (a warm-up round is one phase on the dense all-reduce, a 1-bit
 * round two: the all-to-all, then the all-gather), groups of live
 * workers, compression time, crashes and rejoins are the synchronous-round
 * driver's (algorithms/drivers/sync.h): this file is the update rule.
 * Under crashes ([faults], docs/faults.md) the rounds run over the round's
 * group with the driver's abort rule; over m members the 1-bit all-reduce
 * is re-partitioned into m chunks, its error buffers (workers' and
 * servers') set to 0 at every membership change (a modelling choice: they
 * are defined per partition); a group of one has nothing to exchange, and
 * its 1-bit round is one phase. The shared x, m, v (frozen or not) and the
 * LAMB state stay; a joiner is sent x, m and v (and v_fresh after a LAMB
 * freeze) at the next formed update. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/drivers/sync.h"
#include "algorithms/compress/onebit.h"
#include "sim/units.h"

typedef struct state {
    algo_env *env;
    int lamb;
    int64_t freeze_step;
    double cost;          /* seconds of compression compute per step */
    algo_sync *sy;
    float *x;
    algo_optim_state *opt;
    float *gbar;
    const float **gptr;   /* n: the members' vectors */
    algo_onebit ob;       /* over the current group's members */
    float *mi;            /* n x d: the workers' momenta */
    float *mnew;          /* d: the reduced momentum */
    /* lamb */
    int n_layers;
    int64_t off[16], len[16];
    double coeff_ema[16]; /* c_l */
    double kappa[16];
    double f_last[16];
    int kappa_set;        /* the freeze has happened */
    float *v_fresh;
    double coeff_beta, factor_max, factor_min, factor_threshold;
} state;

/* The driver's collective slots. */
enum { SLOT_DENSE = 0, SLOT_GATHER = 1, SLOT_ALLTOALL = 2 };

static const sim_key adam_keys[] = {
    {"algorithm", "freeze_step", "100000", SIM_KEY_INT, NULL,
     "rounds of dense warm-up before v is frozen and momenta go 1-bit (>= 0)"},
    {"algorithm", "compress_time_per_value", "1e-9", SIM_KEY_DOUBLE, NULL,
     "compute seconds per parameter (d_wire) to compress one message (>= 0)"},
    {0},
};

static const sim_key lamb_keys[] = {
    {"algorithm", "freeze_step", "100000", SIM_KEY_INT, NULL,
     "rounds of dense warm-up before v and the trust ratios are frozen (>= 0)"},
    {"algorithm", "compress_time_per_value", "1e-9", SIM_KEY_DOUBLE, NULL,
     "compute seconds per parameter (d_wire) to compress one message (>= 0)"},
    {"algorithm", "coeff_beta", "0.9", SIM_KEY_DOUBLE, NULL,
     "EWMA rate of the warm-up trust ratio c_l, in [0, 1)"},
    {"algorithm", "factor_max", "4.0", SIM_KEY_DOUBLE, NULL,
     "upper bound of the trust-ratio correction factor f"},
    {"algorithm", "factor_min", "0.5", SIM_KEY_DOUBLE, NULL,
     "lower bound of f (<= factor_max)"},
    {"algorithm", "factor_threshold", "0.1", SIM_KEY_DOUBLE, NULL,
     "phi: f moves by at most a factor 1 +- phi per step"},
    {0},
};

/* c_l <- beta c_l + (1 - beta) coeff_l, only when coeff_l != 1. */
static void track_trust(state *st)
{
    const double *tr = algo_optim_trust(st->opt);
    for (int l = 0; tr && l < st->n_layers; l++)
        if (tr[l] != 1.0)
            st->coeff_ema[l] = st->coeff_beta * st->coeff_ema[l] + (1.0 - st->coeff_beta) * tr[l];
}

/* The first compressed round: freeze v (lamb: keep a fresh copy and fix
 * the per-layer momentum scales kappa_l = mean_l r_l / r_l). */
static void freeze(state *st)
{
    algo_optim_freeze_v(st->opt, 1);
    st->kappa_set = 1;
    if (!st->lamb)
        return;
    const float *m = algo_optim_m(st->opt), *v = algo_optim_v(st->opt);
    memcpy(st->v_fresh, v, (size_t)st->env->d * sizeof *v);
    double r[16], rbar = 0;
    for (int l = 0; l < st->n_layers; l++) {
        double s = 0;
        for (int64_t j = 0; j < st->len[l]; j++) {
            double mj = m[st->off[l] + j];
            s += mj * mj;
        }
        r[l] = sqrt(s) / sqrt((double)st->len[l]);
        rbar += r[l];
    }
    rbar /= st->n_layers;
    for (int l = 0; l < st->n_layers; l++) {
        st->kappa[l] = r[l] > 0 ? rbar / r[l] : 1.0;
        st->f_last[l] = -1.0; /* no bound before the first factor */
    }
}

/* Worker w's momentum m_w = beta1 m + (1 - beta1) g_w (lamb: times kappa_l). */
static void form_momentum(state *st, int w)
{
    algo_env *env = st->env;
    const algo_optim_hp *hp = algo_optim_params(st->opt);
    const float b1 = (float)hp->beta1, a1 = (float)(1.0 - hp->beta1);
    const float *m = algo_optim_m(st->opt), *g = env->w[w].grad;
    float *mw = st->mi + (size_t)w * (size_t)env->d;
    for (int64_t j = 0; j < env->d; j++)
        mw[j] = b1 * m[j] + a1 * g[j];
    if (st->lamb)
        for (int l = 0; l < st->n_layers; l++) {
            const float k = (float)st->kappa[l];
            for (int64_t j = 0; j < st->len[l]; j++)
                mw[st->off[l] + j] *= k;
        }
}

static void adam_update(state *st)
{
    algo_env *env = st->env;
    const algo_optim_hp *hp = algo_optim_params(st->opt);
    const float eps = (float)hp->eps, fwd = (float)hp->weight_decay;
    const float flr = (float)algo_env_lr(env);
    float *m = algo_optim_m(st->opt);
    const float *v = algo_optim_v(st->opt);
    memcpy(m, st->mnew, (size_t)env->d * sizeof *m);
    for (int64_t j = 0; j < env->d; j++) {
        float u = m[j] / (sqrtf(v[j]) + eps);
        if (hp->weight_decay != 0)
            u += fwd * st->x[j];
        st->x[j] -= flr * u;
    }
}

static void lamb_update(state *st)
{
    algo_env *env = st->env;
    const algo_optim_hp *hp = algo_optim_params(st->opt);
    const float eps = (float)hp->eps, fwd = (float)hp->weight_decay;
    const float b1 = (float)hp->beta1, b2 = (float)hp->beta2, a2 = (float)(1.0 - hp->beta2);
    const float inv_a1 = (float)(1.0 / (1.0 - hp->beta1));
    const float flr = (float)algo_env_lr(env);
    float *m = algo_optim_m(st->opt);
    const float *v = algo_optim_v(st->opt);
    float *vf = st->v_fresh, *x = st->x;
    for (int l = 0; l < st->n_layers; l++) {
        const int64_t o = st->off[l], len = st->len[l];
        const float ik = (float)(1.0 / st->kappa[l]);
        double f = 0, pn = 0, un = 0;
        for (int64_t j = o; j < o + len; j++) {
            float mn = st->mnew[j] * ik;
            float gh = (mn - b1 * m[j]) * inv_a1;
            vf[j] = b2 * vf[j] + a2 * gh * gh;
            m[j] = mn;
            float sv = sqrtf(v[j]) + eps;
            double ratio = (double)sv / ((double)sqrtf(vf[j]) + (double)eps);
            if (ratio > f)
                f = ratio;
            float p = mn / sv, u = p + fwd * x[j];
            pn += (double)p * p;
            un += (double)u * u;
        }
        if (hp->weight_decay > 0 && un > 0) {
            double rho = fmin(1.0, sqrt(pn) / sqrt(un));
            f = rho * f + (1.0 - rho);
        }
        f = fmin(fmax(f, st->factor_min), st->factor_max);
        if (st->f_last[l] > 0)
            f = fmin(fmax(f, (1.0 - st->factor_threshold) * st->f_last[l]),
                     (1.0 + st->factor_threshold) * st->f_last[l]);
        st->f_last[l] = f;
        const float scale = flr * (float)(st->coeff_ema[l] * f);
        for (int64_t j = o; j < o + len; j++) {
            float u = m[j] / (sqrtf(v[j]) + eps) + fwd * x[j];
            x[j] -= scale * u;
        }
    }
}

static const char *who(const state *st) { return st->lamb ? "onebit_lamb" : "onebit_adam"; }

static int dense(const state *st, int64_t round) { return round < st->freeze_step; }

static double phase_bytes(const state *st, int n)
{
    int64_t d_wire = st->env->wire_params > 0 ? st->env->wire_params : st->env->d;
    return algo_onebit_phase_bytes(n, d_wire);
}

static void h_grad(void *m, int w)
{
    state *st = m;
    algo_env_grad(st->env, w, st->x, st->env->w[w].grad);
}

/* A warm-up round: the dense all-reduce; a 1-bit round: the all-to-all,
 * then the all-gather (a group of one: the all-to-all alone, which it
 * completes at once). */
static int h_plan(void *m, int64_t round, int *slots)
{
    state *st = m;
    if (dense(st, round)) {
        slots[0] = SLOT_DENSE;
        return 1;
    }
    slots[0] = SLOT_ALLTOALL;
    slots[1] = SLOT_GATHER;
    const algo_group *g = algo_sync_group(st->sy, round);
    return g && g->n < 2 ? 1 : 2;
}

/* The size of w's message in round k's group (a 1-bit phase message
 * depends on the partition), also when it re-enters a smaller one. */
static void h_reenter(void *m, int w, int64_t round, int phase, algo_sync_msg *msg)
{
    (void)w;
    (void)phase;
    state *st = m;
    msg->bytes = dense(st, round) ? st->env->msg_bytes
                                  : phase_bytes(st, algo_sync_group(st->sy, round)->n);
}

/* A 1-bit round: w's momentum, compressed before phase 1. */
static void h_contribute(void *m, int w, int64_t round, int phase, algo_sync_msg *msg)
{
    state *st = m;
    h_reenter(m, w, round, phase, msg);
    if (dense(st, round) || phase > 0)
        return;
    if (!st->kappa_set) /* first compressed round: the warm-up is over */
        freeze(st);
    form_momentum(st, w);
    msg->encode = st->cost > 0 ? sim_time_from_s(st->cost) : 0;
}

/* Phase 1: the 1-bit all-reduce of the members' momenta; the last phase:
 * the update (the warm-up's: the optimizer step on the mean gradient). */
static void h_form(void *m, const algo_group *g, int64_t round, int phase, int w)
{
    (void)w;
    state *st = m;
    algo_env *env = st->env;
    if (dense(st, round)) {
        for (int r = 0; r < g->n; r++)
            st->gptr[r] = env->w[g->members[r]].grad;
        algo_mean(st->gbar, st->gptr, g->n, env->d);
        algo_optim_step(st->opt, st->x, st->gbar, algo_env_lr(env));
        if (st->lamb)
            track_trust(st);
        return;
    }
    if (phase == 0) {
        for (int r = 0; r < g->n; r++)
            st->gptr[r] = st->mi + (size_t)g->members[r] * (size_t)env->d;
        algo_onebit_allreduce(&st->ob, st->gptr, st->mnew);
        if (g->n > 1)
            return;
    }
    if (st->lamb)
        lamb_update(st);
    else
        adam_update(st);
}

/* A new group: the 1-bit all-reduce over its members, errors zero. */
static void h_regroup(void *m, const algo_group *g)
{
    state *st = m;
    if (g->n < 1)
        return;
    algo_onebit_release(&st->ob);
    sim_err e = {0};
    if (algo_onebit_init(&st->ob, g->n, st->env->d, st->env->cfg->error_feedback, &e))
        algo_env_fail(st->env, e.code ? e.code : SIM_ENOMEM, "%s: %s", who(st), e.msg);
}

/* x, m and v (onebit_lamb after the freeze also its fresh variance). */
static double h_join_bytes(void *m)
{
    state *st = m;
    return (st->lamb && st->kappa_set ? 4.0 : 3.0) * st->env->msg_bytes;
}

static void on_fault(void *p, const algo_fault *ev) { algo_sync_fault(((state *)p)->sy, ev); }

static int needs_server(const sim_config *cfg) { return cfg->collective == SIM_COLL_PS; }

static void destroy(void *p)
{
    state *st = p;
    if (!st)
        return;
    algo_sync_destroy(st->sy);
    algo_optim_state_destroy(st->opt);
    algo_onebit_release(&st->ob);
    free(st->x);
    free(st->gbar);
    free(st->gptr);
    free(st->mi);
    free(st->mnew);
    free(st->v_fresh);
    free(st);
}

static int read_keys(state *st, const sim_config *cfg, sim_err *err)
{
    int rc = sim_config_get_int(cfg, "algorithm", "freeze_step", &st->freeze_step, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "compress_time_per_value", &st->cost, err);
    if (rc)
        return rc;
    if (st->freeze_step < 0)
        return sim_config_error(cfg, "algorithm", "freeze_step", SIM_ECONFIG, err,
                                "must be >= 0, got %lld", (long long)st->freeze_step);
    if (!(st->cost >= 0))
        return sim_config_error(cfg, "algorithm", "compress_time_per_value", SIM_ECONFIG, err,
                                "must be >= 0, got %g", st->cost);
    int64_t d_wire = st->env->wire_params > 0 ? st->env->wire_params : st->env->d;
    st->cost *= (double)d_wire;
    if (!st->lamb)
        return 0;
    rc = sim_config_get_double(cfg, "algorithm", "coeff_beta", &st->coeff_beta, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "factor_max", &st->factor_max, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "factor_min", &st->factor_min, err);
    if (!rc)
        rc = sim_config_get_double(cfg, "algorithm", "factor_threshold", &st->factor_threshold,
                                   err);
    if (rc)
        return rc;
    if (!(st->coeff_beta >= 0 && st->coeff_beta < 1))
        return sim_config_error(cfg, "algorithm", "coeff_beta", SIM_ECONFIG, err,
                                "must be in [0, 1), got %g", st->coeff_beta);
    if (!(st->factor_min > 0 && st->factor_min <= st->factor_max))
        return sim_config_error(cfg, "algorithm", "factor_min", SIM_ECONFIG, err,
                                "must be in (0, factor_max], got %g", st->factor_min);
    if (!(st->factor_threshold >= 0))
        return sim_config_error(cfg, "algorithm", "factor_threshold", SIM_ECONFIG, err,
                                "must be >= 0, got %g", st->factor_threshold);
    return 0;
}

static int create_common(algo_env *env, void **out, int lamb, sim_err *err)
{
    const sim_config *cfg = env->cfg;
    state *st = calloc(1, sizeof *st);
    if (!st)
        return sim_err_set(err, SIM_ENOMEM, "onebit: out of memory");
    st->env = env;
    st->lamb = lamb;
    int rc = read_keys(st, cfg, err);
    if (rc) {
        destroy(st);
        return rc;
    }
    const size_t n = (size_t)env->n, d = (size_t)env->d;
    st->x = malloc(d * sizeof *st->x);
    st->gbar = malloc(d * sizeof *st->gbar);
    st->gptr = malloc(n * sizeof *st->gptr);
    st->mi = malloc(n * d * sizeof *st->mi);
    st->mnew = malloc(d * sizeof *st->mnew);
    st->v_fresh = lamb ? malloc(d * sizeof *st->v_fresh) : NULL;
    if (!st->x || !st->gbar || !st->gptr || !st->mi || !st->mnew ||
        (lamb && !st->v_fresh)) {
        destroy(st);
        return sim_err_set(err, SIM_ENOMEM, "onebit: out of memory");
    }
    algo_optim_hp hp;
    algo_optim_hp_from_config(cfg, &hp);
    hp.bias_correction = 0; /* DeepSpeed's 1-bit optimizers apply none */
    const wl_layer *layers = env->model ? env->model->layers : NULL;
    int nl = env->model ? env->model->n_layers : 0;
    st->opt = algo_optim_state_create(algo_optim_find(lamb ? "lamb" : "adamw"), &hp, env->d,
                                      layers, nl, err);
    if (!st->opt) {
        destroy(st);
        return err && err->code ? err->code : SIM_EINTERNAL;
    }
    if (nl <= 0 || nl > 16) {
        st->n_layers = 1;
        st->off[0] = 0;
        st->len[0] = env->d;
    } else {
        st->n_layers = nl;
        for (int l = 0; l < nl; l++) {
            st->off[l] = layers[l].offset;
            st->len[l] = layers[l].size;
        }
    }
    memcpy(st->x, env->w[0].x, d * sizeof *st->x);
    if (env->crashes && env->allreduce_kind == SIM_COLL_HIER) {
        destroy(st);
        return sim_config_error(cfg, "network", "collective", SIM_ECONFIG, err,
                                "the hierarchical collective does not support worker crashes "
                                "([faults]); use ring, tree or ps");
    }
    algo_sync_desc desc = {
        .who = who(st), .method = st, .n_slots = 3,
        .slots = {[SLOT_DENSE] = ALGO_SYNC_ALLREDUCE, [SLOT_GATHER] = ALGO_SYNC_ALLGATHER,
                  [SLOT_ALLTOALL] = ALGO_SYNC_ALLTOALL},
        .count = ALGO_SYNC_COUNT_FIRST, .restart_round = 1,
        .hooks = {.grad = h_grad, .plan = h_plan, .contribute = h_contribute, .form = h_form,
                  .reenter = h_reenter, .regroup = h_regroup, .join_bytes = h_join_bytes},
    };
    rc = algo_sync_create(env, &desc, &st->sy, err);
    if (rc) {
        destroy(st);
        return rc;
    }
    *out = st;
    return 0;
}

static int create_adam(algo_env *env, void **out, sim_err *err)
{
    return create_common(env, out, 0, err);
}

static int create_lamb(algo_env *env, void **out, sim_err *err)
{
    return create_common(env, out, 1, err);
}

static int start(void *p, sim_err *err) { return algo_sync_start(((state *)p)->sy, err); }

static const float *model(void *p, float *scratch)
{
    (void)scratch;
    return ((state *)p)->x;
}

const algo_vt algo_onebit_adam = {
    .name = "onebit_adam",
    .summary = "1-bit Adam: dense Adam warm-up, then v frozen and 1-bit compressed momentum",
    .reference = "7.2",
    .keys = adam_keys,
    .async = 0,
    .supports_compression = 0,
    .needs_server = needs_server,
    .create = create_adam,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = NULL,
    .fault = on_fault,
};

const algo_vt algo_onebit_lamb = {
    .name = "onebit_lamb",
    .summary = "1-bit LAMB: dense LAMB warm-up, then frozen v and trust ratios, 1-bit momentum",
    .reference = "7.3",
    .keys = lamb_keys,
    .async = 0,
    .supports_compression = 0,
    .needs_server = needs_server,
    .create = create_lamb,
    .destroy = destroy,
    .start = start,
    .model = model,
    .worker_models = NULL,
    .fault = on_fault,
};
