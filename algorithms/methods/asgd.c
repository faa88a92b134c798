/* asgd: parameter-server asynchronous SGD (Dean et al. 2012; staleness-
 * aware lr of Zhang et al. 2016); the server loop is this file's. The
 * server (host n) holds x and a version t; a push computed on t_read does
 *   tau = t - t_read;  if max_staleness = 0 or tau <= max_staleness:
 *     x <- x - lr_tau clip_C(g),  t <- t + 1   (lr_tau = lr or lr/max(1,tau))
 * then sends the current x to the worker (next_job = same) or to a random
 * one (next_job = random).
 * docs/algorithms.md, sections 1.6 and 11 (crashes: docs/faults.md). */
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/drivers/group.h"
#include "algorithms/methods/method.h"

/* A job: the model it was given, its version and the gradient computed on
 * it. */
typedef struct job {
    float *x, *g;    /* next_job = same: worker j's x and grad */
    int64_t t_read;
    int next;        /* next job in the worker's queue, -1 = none */
    int owner;       /* the worker it was sent to */
    uint32_t owner_gen; /* that worker's incarnation when it was sent */
    uint32_t gen;    /* the job's issue: bumped when it is re-issued */
} job;

/* A worker as the server sees it. */
typedef struct peer {
    uint32_t gen;    /* incarnation, bumped by a crash or rejoin */
    int q_head, q_tail; /* queued jobs, -1 = empty */
    int busy;        /* computing or pushing a job */
    int known_down;  /* the server knows it is down (next_job = random) */
} peer;

typedef struct state {
    float *x;        /* server model (first: algo_method_shared_model) */
    algo_env *env;
    int random_job;  /* next_job = random */
    job *jobs;       /* n jobs */
    peer *wk;        /* n workers */
    algo_optim_state *opt; /* the server's optimizer state */
    int64_t version; /* applied updates */
    int inverse_lr;
    int64_t max_staleness;
    int64_t dropped;
    /* next_job = random under crashes */
    int n_known_down; /* workers the server knows to be down */
    int *parked;     /* jobs waiting for a live worker */
    int n_parked;
} state;

static void send_job(state *st, int j);
static void job_send(state *st, int j, int w);
static void job_start(state *st, int w, int j);

/* The server's clip of an arriving gradient and its clipped fraction. */
static void server_clip(state *st, float *g)
{
    algo_env *env = st->env;
    if (env->cfg->clip > 0 && algo_grad_clip(g, env->d, env->cfg->clip))
        env->clipped++;
}

static void record_clipped(state *st)
{
    algo_env *env = st->env;
    if (env->cfg->clip > 0 && st->version > 0)
        algo_env_series(env, -1, "clipped_fraction",
                        (double)env->clipped / (double)st->version);
}

/* The server applies gradient g of worker w, read at version t_read, or
 * drops it when it is more than max_staleness versions old. */
static void server_apply(state *st, int w, int64_t t_read, float *g)
{
    algo_env *env = st->env;
    int64_t tau = st->version - t_read;
    algo_env_staleness(env, w, tau);
    if (st->max_staleness > 0 && tau > st->max_staleness) {
        st->dropped++;
        algo_env_series(env, -1, "dropped", (double)st->dropped);
        return;
    }
    double lr = algo_env_lr(env);
    if (st->inverse_lr && tau > 1)
        lr /= (double)tau;
    server_clip(st, g);
    algo_optim_step(st->opt, st->x, g, lr);
    st->version++;
    record_clipped(st);
    algo_env_iteration(env, env->w[w].grad_samples);
}

/* Job event args: the job and its issue; an event of an older issue, or of
 * a job whose worker crashed since it was sent, is lost. */
static uint64_t jarg(const state *st, int j) { return algo_group_arg(j, st->jobs[j].gen); }
static int jlive(const state *st, uint64_t arg)
{
    const job *jb = &st->jobs[algo_group_arg_w(arg)];
    return jb->gen == algo_group_arg_gen(arg) && st->wk[jb->owner].gen == jb->owner_gen &&
           !st->env->w[jb->owner].down;
}

static ALGO_ON_MESSAGE(on_job_push_arrive)
{
    state *st = ctx;
    int j = algo_group_arg_w(arg);
    job *jb = &st->jobs[j];
    if (!jlive(st, arg))
        return; /* pushed by a worker that has crashed since: lost */
    server_apply(st, src, jb->t_read, jb->g);
    send_job(st, j);
}

static ALGO_ON_EVENT(on_job_compute_done)
{
    state *st = ctx;
    algo_env *env = st->env;
    if (!jlive(st, arg))
        return;
    int j = algo_group_arg_w(arg), w = st->jobs[j].owner;
    if (algo_env_send(env, w, env->server_host, env->msg_bytes, on_job_push_arrive, st, arg) < 0)
        return;
    st->wk[w].busy = 0;
    int next = st->wk[w].q_head;
    if (next >= 0) {
        st->wk[w].q_head = st->jobs[next].next;
        if (st->wk[w].q_head < 0)
            st->wk[w].q_tail = -1;
        job_start(st, w, next);
    } else {
        algo_env_idle_begin(env, w);
    }
}

static void job_start(state *st, int w, int j)
{
    algo_env *env = st->env;
    job *jb = &st->jobs[j];
    st->wk[w].busy = 1;
    algo_env_idle_end(env, w);
    if (jb->x != env->w[w].x)
        memcpy(env->w[w].x, jb->x, (size_t)env->d * sizeof(float));
    algo_env_grad(env, w, jb->x, jb->g);
    algo_env_compute(env, w, algo_env_step_samples(env, w), on_job_compute_done, st,
                     jarg(st, j));
}

static ALGO_ON_MESSAGE(on_job_arrive)
{
    state *st = ctx;
    int j = algo_group_arg_w(arg), w = dst;
    if (!jlive(st, arg))
        return; /* its worker crashed: the server re-issues it */
    if (!st->wk[w].busy) {
        job_start(st, w, j);
        return;
    }
    st->jobs[j].next = -1;
    if (st->wk[w].q_tail >= 0)
        st->jobs[st->wk[w].q_tail].next = j;
    else
        st->wk[w].q_head = j;
    st->wk[w].q_tail = j;
}

/* The server gives job slot j the current model (it reads it when it sends
 * it) and sends it to a worker drawn uniformly at random (next_job =
 * random), or back to its worker (same). */
static void send_job(state *st, int j)
{
    algo_env *env = st->env;
    job *jb = &st->jobs[j];
    int live = env->n - st->n_known_down;
    if (live <= 0) {
        st->parked[st->n_parked++] = j; /* sent at the next rejoin */
        return;
    }
    if (!st->random_job)
        algo_env_grad_wait(env, j); /* a step started in this instant reads its x */
    memcpy(jb->x, st->x, (size_t)env->d * sizeof(float));
    jb->t_read = st->version;
    if (!st->random_job) {
        job_send(st, j, j);
        return;
    }
    int k = (int)gsl_rng_uniform_int(env->rng_global, (unsigned long)live), w = k;
    if (st->n_known_down)
        for (w = 0; w < env->n; w++)
            if (!st->wk[w].known_down && k-- == 0)
                break;
    job_send(st, j, w);
}

/* Sends job j (its model set) to worker w. */
static void job_send(state *st, int j, int w)
{
    algo_env *env = st->env;
    job *jb = &st->jobs[j];
    jb->owner = w;
    jb->owner_gen = st->wk[w].gen;
    jb->next = -1;
    algo_env_send(env, env->server_host, w, env->msg_bytes, on_job_arrive, st, jarg(st, j));
}

/* next_job = random: the server learns of a crash; the jobs of the crashed
 * incarnation are re-issued, and the worker gets none while it is down. */
static ALGO_ON_EVENT(on_crash_known)
{
    state *st = ctx;
    int w = algo_group_arg_w(arg);
    uint32_t old = algo_group_arg_gen(arg);
    if (st->wk[w].gen == old + 1 && st->env->w[w].down && !st->wk[w].known_down) {
        st->wk[w].known_down = 1;
        st->n_known_down++;
    }
    for (int j = 0; j < st->env->n; j++) {
        job *jb = &st->jobs[j];
        /* sent to the crashed incarnation, or to the down worker before
         * the server knew */
        if (jb->owner == w && (jb->owner_gen == old || jb->owner_gen == old + 1)) {
            jb->gen++;
            jb->owner_gen = UINT32_MAX; /* re-issued once */
            send_job(st, j);
        }
    }
}

/* Crash: the worker's message or step in flight is lost (its incarnation
 * changes); the others go on. Rejoin: with next_job = same it pulls the
 * current server model (the server holds the only optimizer state); with
 * random it waits for a job. */
static void on_fault(void *p, const algo_fault *ev)
{
    state *st = p;
    algo_env *env = st->env;
    int w = ev->target;
    uint32_t old = st->wk[w].gen++;
    st->wk[w].busy = 0;
    st->wk[w].q_head = st->wk[w].q_tail = -1;
    if (ev->kind == ALGO_FAULT_CRASH) {
        algo_env_idle_end(env, w);
        if (st->random_job)
            algo_group_timeout(env, on_crash_known, st, w, old);
        return;
    }
    if (ev->kind != ALGO_FAULT_REJOIN)
        return;
    if (st->wk[w].known_down) {
        st->wk[w].known_down = 0;
        st->n_known_down--;
    }
    algo_env_idle_begin(env, w);
    if (!st->random_job)
        send_job(st, w);
    int np = st->n_parked;
    st->n_parked = 0;
    for (int k = 0; k < np; k++)
        send_job(st, st->parked[k]);
}

static const cfg_key keys[] = {
    {"algorithm", "staleness_lr", "constant", CFG_KEY_CHOICE, "constant|inverse",
     "constant: lr for every update; inverse: lr / max(1, staleness)"},
    ALGO_KEY_INT("max_staleness", "0", 0, INFINITY, state, max_staleness,
                 "0 = unbounded; K > 0: the server drops gradients staler than K"),
    {"algorithm", "next_job", "same", CFG_KEY_CHOICE, "same|random",
     "same: the pushing worker gets the new model; random: a uniformly drawn worker (queues when busy)"},
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    state *st = algo_env_calloc(env, 1, sizeof *st);
    if (!st)
        return algo_env_alloc_check(env, "asgd", err);
    st->env = env;
    const char *nj = cfg_get_string(env->cfg, "algorithm", "next_job");
    st->random_job = nj && strcmp(nj, "random") == 0;
    size_t n = (size_t)env->n, bytes = (size_t)env->d * sizeof(float);
    st->x = algo_env_alloc(env, bytes);
    st->jobs = algo_env_calloc(env, n, sizeof *st->jobs);
    st->wk = algo_env_calloc(env, n, sizeof *st->wk);
    st->parked = algo_env_alloc(env, n * sizeof *st->parked);
    for (int j = 0; st->jobs && st->wk && j < env->n; j++) {
        st->wk[j].q_head = st->wk[j].q_tail = -1;
        st->jobs[j].next = -1;
        st->jobs[j].x = st->random_job ? algo_env_alloc(env, bytes) : env->w[j].x;
        st->jobs[j].g = st->random_job ? algo_env_alloc(env, bytes) : env->w[j].grad;
    }
    int rc = algo_env_alloc_check(env, "asgd", err);
    if (!rc)
        rc = algo_env_optim_create(env, NULL, NULL, &st->opt, err);
    const char *pol = cfg_get_string(env->cfg, "algorithm", "staleness_lr");
    st->inverse_lr = pol && strcmp(pol, "inverse") == 0;
    if (!rc)
        rc = algo_keys_read(env->cfg, keys, st, NULL, err);
    if (!rc) {
        memcpy(st->x, env->w[0].x, (size_t)env->d * sizeof(float));
        algo_env_defer_clip(env);
    }
    *out = st;
    return rc;
}

/* The first n jobs go one to each worker. */
static int start(void *p, sim_err *err SIM_UNUSED)
{
    state *st = p;
    for (int w = 0; w < st->env->n; w++) {
        job *jb = &st->jobs[w];
        memcpy(jb->x, st->x, (size_t)st->env->d * sizeof(float));
        jb->t_read = 0;
        algo_env_idle_begin(st->env, w);
        job_send(st, w, w);
    }
    return 0;
}

const algo_vt algo_asgd = {
    ALGO_METHOD("asgd", "parameter-server asynchronous SGD; staleness of every update recorded",
                "1.6"),
    .async = 1,
    .server = ALGO_SERVER_ALWAYS,
    .start = start,
    .model = algo_method_shared_model,
    .fault = on_fault,
};
