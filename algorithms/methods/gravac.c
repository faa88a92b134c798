/* gravac: GraVAC, Top-k with error feedback whose keep fraction theta is
 * chosen online (Tyagi and Swany, IEEE CLOUD 2023). On the synchronous-
 * round driver (algorithms/drivers/sync.h), worker i forms
 *   u_i = lr dir_i (its own sgd state), C_theta_min(u_i), C_theta_c(u_i)
 *   gain(theta) = EWMA(|C_theta(u + e_theta)|) / EWMA(|u|)
 * and the round sends C_theta_c, C_theta_min or dense u by the previous
 * round's decision; x -= (1/m) sum_i message_i. theta_c is searched at
 * epoch boundaries. docs/algorithms.md, section 9 (crashes:
 * docs/faults.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/compress/compress.h"
#include "algorithms/drivers/sync.h"
#include "algorithms/methods/method.h"
#include "sim/units.h"

#define MAX_CT 64

typedef struct state {
    float *x;                /* the shared model (first: algo_method_shared_model) */
    algo_env *env;
    algo_sync *sy;
    float *gbar, *u;         /* u: n x d, the workers' updates (dense fallback) */
    const float **gptr;        /* n: scratch, the members' updates */
    algo_local_optim wopt;
    algo_compressor *cmin, *ccand;
    algo_compress_worker *wmin, *wcand;
    double *nu, *nmin, *ncand; /* n: the round's norms */
    /* keys */
    int64_t window;
    double alpha, theta_min, theta_max, threshold, omega, cf_step, cost_per_value;
    /* decision */
    double theta_c;
    int mode, next_mode;       /* 0 dense, 1 theta_min, 2 theta_c: of the
                                  oldest round not completed, and of the next */
    int64_t mode_round;        /* the round mode took effect at */
    double e_u, e_min, e_cand; /* EWMAs; < 0 = not started */
    int64_t rounds;
    int searching;
    double ct_theta[MAX_CT], ct_val[MAX_CT];
    int n_ct;
    double epoch_t0;
    int64_t epoch_samples0, epoch_idx;
    double last_theta;
    int n_layers;
    int64_t off[16], len[16];
} state;

/* The driver's collective slots: the dense all-reduce and the all-gather. */
enum { SLOT_DENSE = 0, SLOT_GATHER = 1 };

static const cfg_key keys[] = {
    ALGO_KEY_DOUBLE("theta_min", "0.1", 0, 1, "(]", state, theta_min,
                    "least compression: keep fraction of the fallback compressor"),
    ALGO_KEY_DOUBLE("theta_max", "1e-4", 0, 0, NULL, state, theta_max,
                    "most compression the search may reach, in (0, theta_min]"),
    ALGO_KEY_DOUBLE("gain_threshold", "0.75", 0, 0, NULL, state, threshold,
                    "epsilon: least compression gain for a keep fraction to be used"),
    ALGO_KEY_INT("window", "25", 0, INFINITY, state, window,
                 "w: rounds at theta_min before the gains decide"),
    ALGO_KEY_DOUBLE("ewma_alpha", "0.05", 0, 1, "(]", state, alpha,
                    "a: EWMA rate of the norms"),
    ALGO_KEY_DOUBLE("ct_tolerance", "0.05", 0, INFINITY, "[]", state, omega,
                    "omega: the search stops when the two best throughputs differ by less"),
    ALGO_KEY_DOUBLE("cf_step", "0.5", 0, 1, "()", state, cf_step,
                    "the candidate keep fraction is multiplied by this each epoch"),
    ALGO_KEY_COMPRESS_TIME(state, cost_per_value, "of one Top-k call"),
    {0},
};

static double layer_norm(const state *st, const float *v)
{
    double s = 0;
    for (int l = 0; l < st->n_layers; l++) {
        double q = 0;
        for (int64_t j = st->off[l]; j < st->off[l] + st->len[l]; j++)
            q += (double)v[j] * (double)v[j];
        s += sqrt(q);
    }
    return s;
}

static double msg_norm(const state *st, const algo_compress_msg *m)
{
    double q[16] = {0};
    int l = 0;
    for (int64_t i = 0; i < m->nnz; i++) {
        int64_t j = m->indices[i];
        while (l + 1 < st->n_layers && j >= st->off[l + 1])
            l++;
        q[l] += (double)m->values[i] * (double)m->values[i];
    }
    double s = 0;
    for (l = 0; l < st->n_layers; l++)
        s += sqrt(q[l]);
    return s;
}

static double ewma(double e, double x, double a) { return e < 0 ? x : (1.0 - a) * e + a * x; }

static double theta_used(const state *st, int mode)
{
    return mode == 0 ? 1.0 : mode == 1 ? st->theta_min : st->theta_c;
}

static void set_candidate(state *st, double theta)
{
    st->theta_c = theta;
    st->ccand->param[0] = theta;
    for (int i = 0; i < st->env->n; i++)
        algo_compress_worker_reset(&st->wcand[i]);
    st->e_cand = -1;
}

/* End of an epoch: record CT, move the candidate, maybe stop. */
static void search_step(state *st)
{
    algo_env *env = st->env;
    double now = sim_time_to_s(sim_engine_now(env->eng));
    double dt = now - st->epoch_t0;
    double thr = dt > 0 ? (double)(env->samples - st->epoch_samples0) / dt : 0;
    st->epoch_t0 = now;
    st->epoch_samples0 = env->samples;
    if (!st->searching || st->e_u <= 0)
        return;
    double gain = st->mode == 0 ? 1.0 : (st->mode == 1 ? st->e_min : st->e_cand) / st->e_u;
    if (st->n_ct < MAX_CT) {
        st->ct_theta[st->n_ct] = theta_used(st, st->mode);
        st->ct_val[st->n_ct] = thr * gain;
        st->n_ct++;
    }
    if (st->n_ct >= 2) {
        int b1 = 0, b2 = -1;
        for (int i = 1; i < st->n_ct; i++)
            if (st->ct_val[i] > st->ct_val[b1])
                b1 = i;
        for (int i = 0; i < st->n_ct; i++)
            if (i != b1 && (b2 < 0 || st->ct_val[i] > st->ct_val[b2]))
                b2 = i;
        double rel = fabs(st->ct_val[b1] - st->ct_val[b2]) / fmax(st->ct_val[b1], 1e-300);
        if (rel < st->omega) {
            st->searching = 0;
            double th = fmin(st->ct_theta[b1], st->ct_theta[b2]);
            if (th < st->theta_min && th != st->theta_c)
                set_candidate(st, th);
            return;
        }
    }
    double next = fmax(st->theta_max, st->theta_c * st->cf_step);
    if (next < st->theta_c)
        set_candidate(st, next);
}

/* After the round is counted (algo_sync_report): the gain series, the
 * search at an epoch boundary and the next round's decision. */
static void decide(state *st)
{
    algo_env *env = st->env;
    double g_min = st->e_u > 0 ? st->e_min / st->e_u : 1.0;
    double g_c = st->e_u > 0 ? st->e_cand / st->e_u : 1.0;
    algo_env_series(env, -1, "gain", g_c);
    int64_t ep = (int64_t)floor(algo_env_epoch(env));
    if (ep > st->epoch_idx) {
        st->epoch_idx = ep;
        search_step(st);
        g_c = st->e_cand > 0 && st->e_u > 0 ? st->e_cand / st->e_u : g_c;
    }
    if (st->rounds < st->window)
        st->next_mode = 1;
    else if (st->theta_c < st->theta_min && st->e_cand >= 0 && g_c >= st->threshold)
        st->next_mode = 2;
    else if (g_min >= st->threshold)
        st->next_mode = 1;
    else
        st->next_mode = 0;
}

/* Round k is the oldest not completed (every member of k - 1 is over):
 * the decision taken at k - 1's update takes effect. */
static void switch_mode(state *st, int64_t round)
{
    st->mode_round = round;
    st->mode = st->next_mode;
    double th = theta_used(st, st->mode);
    if (th != st->last_theta) {
        st->last_theta = th;
        algo_env_series(st->env, -1, "keep_fraction", th);
    }
}

/* The mode of round k: the current one, or the one decided at the
 * current round's formed update for the next. */
static int mode_of(const state *st, int64_t round)
{
    return round > algo_sync_round(st->sy) ? st->next_mode : st->mode;
}

static int h_grad(void *m, int w)
{
    state *st = m;
    algo_env_grad(st->env, w, st->x, st->env->w[w].grad);
    return 1;
}

/* The slot of round k's mode; the driver plans each round as it becomes
 * the oldest not completed, where its mode takes effect. */
static int h_plan(void *m, int64_t round, int *slots)
{
    state *st = m;
    if (st->sy && round == algo_sync_round(st->sy) && round > st->mode_round)
        switch_mode(st, round);
    slots[0] = mode_of(m, round) == 0 ? SLOT_DENSE : SLOT_GATHER;
    return 1;
}

/* Worker w's update u_w, its norms and messages (both Top-k calls, whose
 * compute time is charged before it enters). */
static void h_contribute(void *m, int w, int64_t round, int phase SIM_UNUSED, algo_sync_msg *msg)
{
    state *st = m;
    algo_env *env = st->env;
    const int64_t d = env->d;
    float *g = env->w[w].grad, *u = st->u + (size_t)w * (size_t)d;
    algo_env_grad_wait(env, w); /* with buckets the step has not run yet */
    const float flr = (float)algo_env_lr(env);
    algo_optim_direction(st->wopt.s[w], st->x, g);
    for (int64_t j = 0; j < d; j++)
        u[j] = flr * g[j];
    st->nu[w] = layer_norm(st, u);
    st->nmin[w] = msg_norm(st, algo_compress_worker_encode(&st->wmin[w], u));
    int calls = 1;
    if (st->theta_c < st->theta_min) {
        st->ncand[w] = msg_norm(st, algo_compress_worker_encode(&st->wcand[w], u));
        calls = 2;
    } else {
        st->ncand[w] = st->nmin[w];
    }
    const int mode = mode_of(st, round);
    msg->bytes = mode == 0   ? env->msg_bytes
                 : mode == 1 ? st->wmin[w].msg.bytes
                             : st->wcand[w].msg.bytes;
    double cost = st->cost_per_value * (double)st->env->wire_params * calls;
    msg->encode = cost > 0 ? sim_time_from_s(cost) : 0;
}

/* The round's update and gains over the members of g. */
static void h_form(void *m, const algo_group *g, int64_t round SIM_UNUSED, int phase SIM_UNUSED,
                   int w SIM_UNUSED)
{
    state *st = m;
    const int64_t d = st->env->d;
    const int n = g->n;
    float *sum = st->gbar;
    memset(sum, 0, (size_t)d * sizeof *sum);
    if (st->mode == 0) {
        for (int r = 0; r < n; r++)
            st->gptr[r] = st->u + (size_t)g->members[r] * (size_t)d;
        algo_mean(sum, st->gptr, n, d);
        for (int64_t j = 0; j < d; j++)
            st->x[j] -= sum[j];
    } else {
        for (int r = 0; r < n; r++) {
            int i = g->members[r];
            algo_compress_decode_add(st->mode == 1 ? st->cmin : st->ccand,
                                     st->mode == 1 ? &st->wmin[i].msg : &st->wcand[i].msg,
                                     1.0f, sum);
        }
        const float inv = 1.0f / (float)n;
        for (int64_t j = 0; j < d; j++)
            st->x[j] -= inv * sum[j];
    }
    /* gains from the round's norms, averaged over the workers who took part */
    double mu = 0, mm = 0, mc = 0;
    for (int r = 0; r < n; r++) {
        int i = g->members[r];
        mu += st->nu[i] / n;
        mm += st->nmin[i] / n;
        mc += st->ncand[i] / n;
    }
    st->e_u = ewma(st->e_u, mu, st->alpha);
    st->e_min = ewma(st->e_min, mm, st->alpha);
    st->e_cand = ewma(st->e_cand, mc, st->alpha);
    st->rounds++;
    algo_sync_report(st->sy); /* the round counts here; the decision reads the count */
    decide(st);
}

/* A rejoining worker starts with a fresh sgd state and zero residuals. */
static double h_join(void *m, int j, int sender SIM_UNUSED)
{
    state *st = m;
    algo_optim_reset(st->wopt.s[j]);
    algo_compress_worker_reset(&st->wmin[j]);
    algo_compress_worker_reset(&st->wcand[j]);
    return 0;
}

static void on_fault(void *p, const algo_fault *ev) { algo_sync_fault(((state *)p)->sy, ev); }

static int create(algo_env *env, void **out, sim_err *err)
{
    const cfg_config *cfg = env->cfg;
    state *st = algo_env_calloc(env, 1, sizeof *st);
    if (!st)
        return algo_env_alloc_check(env, "gravac", err);
    st->env = env;
    int rc = algo_keys_read(cfg, keys, st, NULL, err);
    if (!rc && !(st->theta_max > 0 && st->theta_max <= st->theta_min))
        return cfg_error(cfg, "algorithm", "theta_max", SIM_ECONFIG, err,
                         "must be in (0, theta_min], got %g", st->theta_max);
    if (!rc)
        rc = algo_optim_require_sgd(cfg, "error feedback needs a linear update", err);
    if (rc)
        return rc;
    const size_t n = (size_t)env->n, d = (size_t)env->d;
    st->x = algo_env_alloc(env, d * sizeof *st->x);
    st->gbar = algo_env_alloc(env, d * sizeof *st->gbar);
    st->u = algo_env_alloc(env, n * d * sizeof *st->u);
    st->gptr = algo_env_alloc(env, n * sizeof *st->gptr);
    st->nu = algo_env_calloc(env, n, sizeof *st->nu);
    st->nmin = algo_env_calloc(env, n, sizeof *st->nmin);
    st->ncand = algo_env_calloc(env, n, sizeof *st->ncand);
    char spec[64];
    snprintf(spec, sizeof spec, "topk(%.17g)", st->theta_min);
    if ((rc = algo_env_compressor_create(env, spec, &st->cmin, err)) < 0 ||
        (rc = algo_env_compressor_create(env, spec, &st->ccand, err)) < 0 ||
        (rc = algo_env_alloc_check(env, "gravac", err)) < 0)
        return rc;
    const wl_layer *layers = env->model ? env->model->layers : NULL;
    int nl = env->model ? env->model->n_layers : 0;
    if (nl <= 0 || nl > 16) {
        st->n_layers = 1;
        st->len[0] = env->d;
    } else {
        st->n_layers = nl;
        for (int l = 0; l < nl; l++) {
            st->off[l] = layers[l].offset;
            st->len[l] = layers[l].size;
        }
    }
    if ((rc = algo_env_compress_workers(env, st->cmin, 1, &st->wmin, err)) < 0 ||
        (rc = algo_env_compress_workers(env, st->ccand, 1, &st->wcand, err)) < 0 ||
        (rc = algo_local_optim_init(&st->wopt, env, 0, err)) < 0)
        return rc;
    memcpy(st->x, env->w[0].x, d * sizeof *st->x);
    st->theta_c = st->theta_min;
    st->e_u = st->e_min = st->e_cand = -1;
    st->searching = 1;
    st->mode = st->next_mode = 1;
    st->last_theta = -1;
    algo_sync_desc desc = {
        .who = "gravac", .method = st, .n_slots = 2,
        .slots = {[SLOT_DENSE] = ALGO_SYNC_ALLREDUCE, [SLOT_GATHER] = ALGO_SYNC_ALLGATHER},
        .count = ALGO_SYNC_COUNT_FIRST,
        .hooks = {.grad = h_grad, .plan = h_plan, .contribute = h_contribute, .form = h_form,
                  .join = h_join},
    };
    rc = algo_sync_create(env, &desc, &st->sy, err);
    *out = st;
    return rc;
}

static int start(void *p, sim_err *err)
{
    state *st = p;
    st->last_theta = theta_used(st, st->mode);
    algo_env_series(st->env, -1, "keep_fraction", st->last_theta);
    return algo_sync_start(st->sy, err);
}

static const char *data_time(const cfg_config *cfg)
{
    (void)cfg;
    return "its keep fraction (and so its message sizes) is chosen online from the gradients'"
           " compression gain";
}

const algo_vt algo_gravac = {
    ALGO_METHOD("gravac",
                "GraVAC: Top-k with error feedback, keep fraction chosen online from the gain",
                "9"),
    .supports_bucket = 1,
    .server = ALGO_SERVER_PS,
    .data_time = data_time,
    .start = start,
    .model = algo_method_shared_model,
    .fault = on_fault,
};
