/* swarm_sgd: SwarmSGD (Nadiradze et al., NeurIPS 2021), asynchronous
 * random pairwise averaging with local steps, on the pairwise driver
 * (algorithms/drivers/pairwise.h). After H_i local steps, worker i
 * interacts with a neighbour j drawn uniformly:
 *   symmetric:  x_i <- (x_i + Q(x_j))/2,  x_j <- (x_j + Q(x_i))/2  (atomic)
 *   one_sided:  x_i <- (p_i + Q(p_j))/2 + (x_i - p_i),  p_i <- x_i
 * Q: lattice codes c = round(x / s_q) mod q, decoded against the
 * receiver's model (quant_levels = 0: Q = identity).
 * docs/algorithms.md, section 6 (crashes: docs/faults.md). */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/drivers/pairwise.h"
#include "algorithms/methods/method.h"

/* A worker's period of local steps. */
typedef struct period {
    int64_t h;          /* local steps since the last interaction started */
    int64_t target;     /* H_i of the current period */
} period;

typedef struct swarm {
    algo_pairwise core; /* first: the pairwise slots take the state */
    int one_sided, geometric, H, q;
    double s_q;
    double header;      /* bytes of a request header */
    double model_bytes; /* bytes of a (quantized) model message */
    float *base;        /* one-sided: n x d published copies p_i */
    float *inbox;       /* one-sided: n x d, the partner's copy or its codes */
    float *scratch;     /* 3 x d: codes and decoded models */
    period *pd;         /* per worker: its period */
} swarm;

static int64_t draw_h(swarm *s, int i)
{
    if (!s->geometric || s->H <= 1)
        return s->H;
    return (int64_t)gsl_ran_geometric(s->core.env->w[i].rng_algo, 1.0 / s->H);
}

/* Symmetric: the answer only completes the interaction. */
static ALGO_ON_MESSAGE(on_answer)
{
    algo_pairwise_done(ctx, dst, arg);
}

/* Symmetric, quantized: each side averages with the other decoded against
 * its own model. */
static void average_quantized(swarm *s, int i, int j)
{
    int64_t d = s->core.d;
    float *xi = s->core.env->w[i].x, *xj = s->core.env->w[j].x;
    float *codes = s->scratch, *hi = s->scratch + d, *hj = s->scratch + 2 * d;
    algo_env_grad_wait(s->core.env, i); /* a step started in this instant reads them */
    algo_env_grad_wait(s->core.env, j);
    algo_lattice_encode(codes, xi, d, s->q, s->s_q);
    algo_lattice_decode(hi, codes, xj, d, s->q, s->s_q);
    algo_lattice_encode(codes, xj, d, s->q, s->s_q);
    algo_lattice_decode(hj, codes, xi, d, s->q, s->s_q);
    for (int64_t e = 0; e < d; e++) {
        xi[e] = 0.5f * (xi[e] + hj[e]);
        xj[e] = 0.5f * (xj[e] + hi[e]);
    }
    algo_pairwise_mark(&s->core, i);
    algo_pairwise_mark(&s->core, j);
}

/* Symmetric: the pair averages on arrival and j answers. */
static ALGO_ON_MESSAGE(on_request)
{
    swarm *s = ctx;
    int i = src, j = dst;
    if (!algo_pairwise_live(&s->core, i, j, arg))
        return;
    if (s->q)
        average_quantized(s, i, j);
    else
        algo_pairwise_average(&s->core, i, j);
    algo_env_send(s->core.env, j, i, s->model_bytes, on_answer, s, arg);
}

/* One-sided: p_j's copy arrives at i. */
static ALGO_ON_MESSAGE(on_reply)
{
    swarm *s = ctx;
    int i = dst;
    if (!algo_pairwise_done(&s->core, i, arg))
        return;
    int64_t d = s->core.d;
    float *x = s->core.env->w[i].x, *b = s->base + (int64_t)i * d;
    const float *other = s->inbox + (int64_t)i * d;
    algo_env_grad_wait(s->core.env, i); /* a step started in this instant reads x */
    if (s->q) {
        algo_lattice_decode(s->scratch, other, b, d, s->q, s->s_q);
        other = s->scratch;
    }
    for (int64_t e = 0; e < d; e++)
        x[e] = 0.5f * (b[e] + other[e]) + (x[e] - b[e]);
    algo_pairwise_mark(&s->core, i);
    memcpy(b, x, (size_t)d * sizeof(float)); /* publish */
}

/* One-sided: j's published copy is read without j. */
static ALGO_ON_MESSAGE(on_read)
{
    swarm *s = ctx;
    int i = src, j = dst;
    if (!algo_pairwise_live(&s->core, i, j, arg))
        return;
    int64_t d = s->core.d;
    float *in = s->inbox + (int64_t)i * d;
    const float *pj = s->base + (int64_t)j * d;
    if (s->q)
        algo_lattice_encode(in, pj, d, s->q, s->s_q);
    else
        memcpy(in, pj, (size_t)d * sizeof(float));
    algo_env_send(s->core.env, j, i, s->model_bytes, on_reply, s, arg);
}

static void interact(swarm *s, int i)
{
    int j = algo_pairwise_partner(&s->core, i);
    if (j < 0)
        return;
    s->pd[i].h = 0;
    s->pd[i].target = draw_h(s, i);
    if (s->one_sided)
        algo_pairwise_request(&s->core, i, j, s->header, on_read);
    else
        algo_pairwise_request(&s->core, i, j, s->model_bytes, on_request);
}

static void computed(void *p, int i)
{
    swarm *s = p;
    s->pd[i].h++;
    algo_pairwise_apply(&s->core, i);
    if (!s->core.rq[i].pending && s->pd[i].h >= s->pd[i].target)
        interact(s, i);
    algo_pairwise_begin(&s->core, i);
}

/* A rejoining worker publishes its model and starts a new period. */
static void rejoined(void *p, int i)
{
    swarm *s = p;
    if (s->one_sided)
        memcpy(s->base + (int64_t)i * s->core.d, s->core.env->w[i].x,
               (size_t)s->core.d * sizeof(float));
    s->pd[i].h = 0;
    s->pd[i].target = draw_h(s, i);
}

static const algo_pairwise_ops ops = {.computed = computed, .rejoined = rejoined};

static const cfg_key keys[] = {
    ALGO_KEY_INT("local_steps", "1", 1, 1000000, swarm, H,
                 "H: local SGD steps between two interactions of a worker"),
    {"algorithm", "local_steps_dist", "fixed", CFG_KEY_CHOICE, "fixed|geometric",
     "fixed: exactly H steps; geometric: a fresh draw with mean H for every period"},
    {"algorithm", "variant", "symmetric", CFG_KEY_CHOICE, "symmetric|one_sided",
     "symmetric: both partners average (mean kept); one_sided: the initiator reads p_j"},
    {"algorithm", "quant_levels", "0", CFG_KEY_INT, NULL,
     "lattice quantization levels q (a power of two >= 2; 0 = off): log2(q) bits per value"},
    ALGO_KEY_DOUBLE("quant_step", "0.001", 0, INFINITY, "()", swarm, s_q,
                    "lattice spacing s_q; decoding is exact to s_q while |x - ref| < q s_q / 2"),
    {"algorithm", "header_bytes", "64B", CFG_KEY_SIZE, NULL,
     "bytes of a read request, added to every quantized message"},
    {0},
};

static int read_keys(swarm *s, const cfg_config *c, sim_err *err)
{
    int64_t q;
    int rc = algo_keys_read(c, keys, s, NULL, err);
    if (rc == 0)
        rc = cfg_get_int(c, "algorithm", "quant_levels", &q, err);
    if (rc == 0 && q != 0 && (q < 2 || q > (1 << 24) || !topo_is_pow2(q)))
        rc = cfg_error(c, "algorithm", "quant_levels", SIM_ECONFIG, err,
                       "must be 0 or a power of two in [2, 2^24], got %lld", (long long)q);
    if (rc < 0)
        return rc;
    const cfg_entry *e = cfg_find(c, "algorithm", "header_bytes");
    s->header = e ? strtod(e->value, NULL) : 64.0;
    s->q = (int)q;
    const char *v = cfg_get_string(c, "algorithm", "variant");
    s->one_sided = v && strcmp(v, "one_sided") == 0;
    const char *dist = cfg_get_string(c, "algorithm", "local_steps_dist");
    s->geometric = dist && strcmp(dist, "geometric") == 0;
    return 0;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    if (!env->graph)
        return sim_err_set(err, SIM_EINTERNAL, "swarm_sgd: no logical graph");
    swarm *s = algo_env_calloc(env, 1, sizeof *s);
    if (!s)
        return algo_env_alloc_check(env, "swarm_sgd", err);
    int rc = read_keys(s, env->cfg, err);
    if (rc)
        return rc;
    if (s->q) {
        double params = (double)env->wire_params;
        s->model_bytes = ceil(params * log2((double)s->q) / 8.0) + s->header;
    } else {
        s->model_bytes = env->msg_bytes;
    }
    size_t n = (size_t)env->n, nd = n * (size_t)env->d;
    if (s->one_sided) {
        s->base = algo_env_alloc(env, nd * sizeof(float));
        s->inbox = algo_env_alloc(env, nd * sizeof(float));
    }
    s->scratch = algo_env_alloc(env, 3 * (size_t)env->d * sizeof(float));
    s->pd = algo_env_calloc(env, n, sizeof *s->pd);
    rc = algo_pairwise_init(&s->core, env, &ops, err);
    if (!rc)
        rc = algo_env_alloc_check(env, "swarm_sgd", err);
    for (int i = 0; !rc && i < env->n; i++) {
        if (s->one_sided)
            memcpy(s->base + (int64_t)i * env->d, env->w[i].x, (size_t)env->d * sizeof(float));
        s->pd[i].target = draw_h(s, i);
    }
    *out = s;
    return rc;
}

const algo_vt algo_swarm_sgd = {
    ALGO_METHOD("swarm_sgd",
                "SwarmSGD: asynchronous pairwise averaging after H local steps, quantized option",
                "6"),
    ALGO_PAIRWISE_SLOTS,
};
