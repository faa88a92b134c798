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

/* A worker's period of local steps and its current interaction. */
typedef struct period {
    int64_t h;          /* local steps since the last interaction started */
    int64_t target;     /* H_i of the current period */
    int in_flight;
    uint32_t igen;      /* the current interaction's issue */
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
    period *pd;         /* per worker: its period and interaction */
} swarm;

/* Interaction arg of initiator i is still wanted: i did not crash and it
 * did not time out (live_pair: nor did its partner j crash). */
static int current(const swarm *s, int i, uint64_t arg)
{
    return !s->core.env->w[i].down && s->pd[i].igen == algo_group_arg_gen(arg);
}

static int live_pair(const swarm *s, int i, int j, uint64_t arg)
{
    return current(s, i, arg) && !s->core.env->w[j].down;
}

static void begin_step(void *p, int i);
static ALGO_ON_EVENT(on_timeout);

static int64_t draw_h(swarm *s, int i)
{
    if (!s->geometric || s->H <= 1)
        return s->H;
    return (int64_t)gsl_ran_geometric(s->core.env->w[i].rng_algo, 1.0 / s->H);
}

/* Symmetric: the answer only completes the interaction. */
static ALGO_ON_MESSAGE(on_answer)
{
    swarm *s = ctx;
    if (current(s, dst, arg))
        s->pd[dst].in_flight = 0;
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
    if (!live_pair(s, i, j, arg))
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
    if (!current(s, i, arg))
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
    s->pd[i].in_flight = 0;
}

/* One-sided: j's published copy is read without j. */
static ALGO_ON_MESSAGE(on_read)
{
    swarm *s = ctx;
    int i = src, j = dst;
    if (!live_pair(s, i, j, arg))
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
    s->pd[i].in_flight = 1;
    s->pd[i].igen++;
    algo_env *env = s->core.env;
    uint64_t arg = algo_group_arg(i, s->pd[i].igen);
    if (s->one_sided)
        algo_env_send(env, i, j, s->header, on_read, s, arg);
    else
        algo_env_send(env, i, j, s->model_bytes, on_request, s, arg);
    if (algo_env_crashes(env))
        algo_group_timeout(env, s->core.timeout, on_timeout, s, i, s->pd[i].igen);
}

/* Worker i's interaction has not completed within the timeout. */
static ALGO_ON_EVENT(on_timeout)
{
    swarm *s = ctx;
    int i = algo_group_arg_w(arg);
    if (!current(s, i, arg) || !s->pd[i].in_flight)
        return;
    s->pd[i].igen++;
    s->pd[i].in_flight = 0;
}

static ALGO_ON_EVENT(on_compute)
{
    swarm *s = ctx;
    algo_env *env = s->core.env;
    int i = algo_group_arg_w(arg);
    if (s->core.gen[i] != algo_group_arg_gen(arg))
        return; /* a crashed incarnation's step */
    algo_pairwise_apply(&s->core, i);
    s->pd[i].h++;
    algo_env_iteration(env, env->w[i].grad_samples);
    if (!s->pd[i].in_flight && s->pd[i].h >= s->pd[i].target)
        interact(s, i);
    begin_step(s, i);
}

static void begin_step(void *p, int i)
{
    swarm *s = p;
    algo_env *env = s->core.env;
    algo_pairwise_grad(&s->core, i);
    algo_env_compute(env, i, algo_env_step_samples(env, i), on_compute, s,
                     algo_group_arg(i, s->core.gen[i]));
}

static void on_fault(void *p, const algo_fault *ev)
{
    swarm *s = p;
    algo_env *env = s->core.env;
    int i = ev->target;
    s->core.gen[i]++;
    s->pd[i].igen++;
    s->pd[i].in_flight = 0;
    if (ev->kind == ALGO_FAULT_CRASH)
        return;
    int j = algo_pairwise_rejoin(&s->core, i);
    if (s->one_sided)
        memcpy(s->base + (int64_t)i * s->core.d, env->w[i].x, (size_t)s->core.d * sizeof(float));
    s->pd[i].h = 0;
    s->pd[i].target = draw_h(s, i);
    algo_pairwise_resume(&s->core, i, j);
}

static void destroy(void *p)
{
    swarm *s = p;
    if (!s)
        return;
    algo_pairwise_release(&s->core);
    free(s->base);
    free(s->inbox);
    free(s->scratch);
    free(s->pd);
    free(s);
}

static const cfg_key keys[] = {
    {"algorithm", "local_steps", "1", CFG_KEY_INT, NULL,
     "H: local SGD steps between two interactions of a worker (>= 1)"},
    {"algorithm", "local_steps_dist", "fixed", CFG_KEY_CHOICE, "fixed|geometric",
     "fixed: exactly H steps; geometric: a fresh draw with mean H for every period"},
    {"algorithm", "variant", "symmetric", CFG_KEY_CHOICE, "symmetric|one_sided",
     "symmetric: both partners average (mean kept); one_sided: the initiator reads p_j"},
    {"algorithm", "quant_levels", "0", CFG_KEY_INT, NULL,
     "lattice quantization levels q (a power of two >= 2; 0 = off): log2(q) bits per value"},
    {"algorithm", "quant_step", "0.001", CFG_KEY_DOUBLE, NULL,
     "lattice spacing s_q (> 0); decoding is exact to s_q while |x - ref| < q s_q / 2"},
    {"algorithm", "header_bytes", "64B", CFG_KEY_SIZE, NULL,
     "bytes of a read request, added to every quantized message"},
    {0},
};

static int read_keys(swarm *s, const cfg_config *c, sim_err *err)
{
    int64_t H, q;
    int rc = algo_key_int(c, "local_steps", 1, 1000000, &H, err);
    if (rc == 0)
        rc = cfg_get_int(c, "algorithm", "quant_levels", &q, err);
    if (rc == 0 && q != 0 && (q < 2 || q > (1 << 24) || !topo_is_pow2(q)))
        rc = cfg_error(c, "algorithm", "quant_levels", SIM_ECONFIG, err,
                       "must be 0 or a power of two in [2, 2^24], got %lld", (long long)q);
    if (rc == 0)
        rc = algo_key_double(c, "quant_step", 0, INFINITY, "()", &s->s_q, err);
    if (rc < 0)
        return rc;
    const cfg_entry *e = cfg_find(c, "algorithm", "header_bytes");
    s->header = e ? strtod(e->value, NULL) : 64.0;
    s->H = (int)H;
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
    swarm *s = calloc(1, sizeof *s);
    if (!s)
        return sim_err_set(err, SIM_ENOMEM, "swarm_sgd: out of memory");
    int rc = read_keys(s, env->cfg, err);
    if (rc)
        return algo_method_finish(s, rc, destroy, out);
    if (s->q) {
        double params = (double)env->wire_params;
        s->model_bytes = ceil(params * log2((double)s->q) / 8.0) + s->header;
    } else {
        s->model_bytes = env->msg_bytes;
    }
    size_t n = (size_t)env->n, nd = n * (size_t)env->d;
    if (s->one_sided) {
        s->base = malloc(nd * sizeof(float));
        s->inbox = malloc(nd * sizeof(float));
    }
    s->scratch = malloc(3 * (size_t)env->d * sizeof(float));
    s->pd = calloc(n, sizeof *s->pd);
    rc = algo_pairwise_init(&s->core, env, begin_step, err);
    if (!rc && ((s->one_sided && (!s->base || !s->inbox)) || !s->scratch || !s->pd))
        rc = sim_err_set(err, SIM_ENOMEM, "swarm_sgd: out of memory");
    for (int i = 0; !rc && i < env->n; i++) {
        if (s->one_sided)
            memcpy(s->base + (int64_t)i * env->d, env->w[i].x, (size_t)env->d * sizeof(float));
        s->pd[i].target = draw_h(s, i);
    }
    return algo_method_finish(s, rc, destroy, out);
}

const algo_vt algo_swarm_sgd = {
    ALGO_METHOD("swarm_sgd",
                "SwarmSGD: asynchronous pairwise averaging after H local steps, quantized option",
                "6"),
    .destroy = destroy,
    .fault = on_fault,
    ALGO_PAIRWISE_SLOTS,
};
