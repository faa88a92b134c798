/* The common core of the asynchronous pairwise methods (ad_psgd, swarm_sgd).
 * Every worker loops on local steps: the gradient is taken at its model
 * when a step starts (coupled weight decay at that snapshot) and applied
 * when the step ends by the worker's own optimizer state ([algorithm]
 * optimizer; decoupled weight decay then uses the model at that moment),
 * while averagings with neighbours may change the model in between. One
 * iteration = one applied step (samples = the batch). The core holds the
 * local optimizer states, the version counters behind the staleness of an
 * applied step (the averagings that changed the worker's model between the
 * read and the application), the evaluated model (the average of the
 * workers' models) and the crash rules (algo_pairwise_fault). A method's
 * state begins with its algo_pairwise, so the core's vtable slots take the
 * state itself. */
#ifndef DTSIM_ALGO_PAIRWISE_H
#define DTSIM_ALGO_PAIRWISE_H

#include <stdint.h>

#include "algorithms/drivers/gossip.h"
#include "algorithms/drivers/group.h"

/* A worker's current interaction with a partner (the method's request or
 * read): its issue, carried by its messages (algo_group_arg), and whether
 * it is in flight (neither answered nor given up). */
typedef struct algo_pair_req {
    uint32_t gen;
    int pending;
    int computed; /* the current step's compute has ended */
} algo_pair_req;

/* The method's interaction rule; state is the method's state. */
typedef struct algo_pairwise_ops {
    /* Step start, after the gradient read and before the compute step is
     * scheduled (an initiator sends its request here). NULL: nothing. */
    void (*begin)(void *state, int i);
    /* Required. The compute step of i's current incarnation ended. */
    void (*computed)(void *state, int i);
    /* i gave up its interaction (sync_timeout). NULL: nothing. */
    void (*expired)(void *state, int i);
    /* A rejoining i, its model just set (algo_pairwise_fault), before it
     * resumes. NULL: nothing. */
    void (*rejoined)(void *state, int i);
} algo_pairwise_ops;

typedef struct algo_pairwise {
    algo_env *env;
    int n;
    int64_t d;
    algo_local_optim lo; /* per-worker optimizer states, snapshot weight decay */
    int64_t *ver;       /* averagings applied to each model */
    int64_t *grad_ver;  /* ver when the step's gradient was read */
    const float **ptrs; /* scratch: n model pointers */
    int *live;          /* scratch: a worker's live neighbours */
    const algo_pairwise_ops *ops;
    uint32_t *gen;      /* per worker: incarnation, +1 at each crash and rejoin
                         * ([faults]); events carry it (algo_group_arg) */
    algo_pair_req *rq;  /* per worker: its current interaction */
} algo_pairwise;

/* Fills pw for env (which must have a graph) and the method's ops. Returns
 * 0 or an error code with err filled (SIM_ENOMEM, or a config error of the
 * optimizer keys); the run owns what it allocates either way. */
int algo_pairwise_init(algo_pairwise *pw, algo_env *env, const algo_pairwise_ops *ops,
                       sim_err *err);

/* Starts worker i's next step: its gradient at its model (plus coupled
 * weight decay) into env->w[i].grad, ops->begin, then its compute step,
 * whose end calls ops->computed unless i crashed meanwhile. */
void algo_pairwise_begin(algo_pairwise *pw, int i);
/* Sends i's interaction to j (a new issue, in flight): handler(ctx = pw)
 * gets algo_group_arg(i, issue). Under crashes it is given up sync_timeout
 * later if still in flight (ops->expired); without, no timeout is
 * scheduled. */
void algo_pairwise_request(algo_pairwise *pw, int i, int j, double bytes, sim_net_deliver handler);
/* 1 while the interaction arg of initiator i is wanted: i is up, it did
 * not give it up and its partner j is up. */
int algo_pairwise_live(const algo_pairwise *pw, int i, int j, uint64_t arg);
/* The answer to arg reached i: 1 (and the interaction is over) when it is
 * still current and in flight, else 0. */
int algo_pairwise_done(algo_pairwise *pw, int i, uint64_t arg);
/* Step end: records the step's staleness, applies the gradient with the
 * worker's optimizer at the current lr and counts the iteration. */
void algo_pairwise_apply(algo_pairwise *pw, int i);
/* A neighbour of i drawn uniformly from i's algorithm stream among those
 * that are up (not crashed), or -1 (no draw) when i has none. With every
 * neighbour up this is one draw over the whole list, as without faults. */
int algo_pairwise_partner(algo_pairwise *pw, int i);
/* x_i, x_j <- (x_i + x_j) / 2, both counted as averaged. */
void algo_pairwise_average(algo_pairwise *pw, int i, int j);
/* Counts one averaging that changed x_i (version and gossip rounds). */
void algo_pairwise_mark(algo_pairwise *pw, int i);
/* Crash and rejoin of worker i ([faults], docs/faults.md): each starts a
 * new incarnation and forgets i's interaction, so i's step and messages in
 * flight are discarded. A rejoining i's model becomes the mean of its live
 * neighbours' models (unchanged when none is up) with a fresh optimizer
 * state; after ops->rejoined it starts its first step once the lowest live
 * neighbour has sent it the model (S bytes; at once when none is up),
 * unless it has crashed again by then. */
void algo_pairwise_fault(void *state, const algo_fault *ev);

/* Vtable slots for a state that begins with its algo_pairwise. */
#define ALGO_PAIRWISE_SLOTS                                                                \
    .async = 1, .uses_graph = 1, .worker_rng = 1, .start = algo_pairwise_start,            \
    .model = algo_pairwise_model, .worker_models = algo_pairwise_worker_models,           \
    .fault = algo_pairwise_fault
int algo_pairwise_start(void *state, sim_err *err);
/* The mean of the live workers' models (of all when every worker is down). */
const float *algo_pairwise_model(void *state, float *scratch);
void algo_pairwise_worker_models(void *state, const float **xs);

#endif
