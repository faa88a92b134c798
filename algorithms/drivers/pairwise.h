/* The common core of the asynchronous pairwise methods (ad_psgd, swarm_sgd).
 * Every worker loops on local steps: the gradient is taken at its model
 * when a step starts (coupled weight decay at that snapshot) and applied
 * when the step ends by the worker's own optimizer state ([algorithm]
 * optimizer; decoupled weight decay then uses the model at that moment),
 * while averagings with neighbours may change the model in between. The
 * core holds the local optimizer states, the version
 * counters behind the staleness of an applied step (averagings between the
 * read and the application) and the evaluated model (the average of the
 * workers' models). A method's state begins with its algo_pairwise, so the
 * core's vtable slots take the state itself. */
#ifndef DTSIM_ALGO_PAIRWISE_H
#define DTSIM_ALGO_PAIRWISE_H

#include <stdint.h>

#include "algorithms/drivers/gossip.h"
#include "algorithms/drivers/group.h"

typedef struct algo_pairwise {
    algo_env *env;
    int n;
    int64_t d;
    algo_local_optim lo; /* per-worker optimizer states, snapshot weight decay */
    int64_t *ver;       /* averagings applied to each model */
    int64_t *grad_ver;  /* ver when the step's gradient was read */
    const float **ptrs; /* scratch: n model pointers */
    int *live;          /* scratch: a worker's live neighbours */
    void (*begin)(void *state, int i); /* the method's step start */
    uint32_t *gen;      /* per worker: incarnation, +1 at each crash and rejoin
                         * ([faults]); events carry it (algo_group_arg) */
    sim_time timeout;   /* [faults] sync_timeout, the methods' waits under crashes */
} algo_pairwise;

/* Fills pw for env (which must have a graph); begin(state, i) starts worker
 * i's first step in algo_pairwise_start. Returns 0 or an error code with
 * err filled (SIM_ENOMEM, or a config error of the optimizer keys or of
 * [faults] sync_timeout); the run owns what it allocates either way. */
int algo_pairwise_init(algo_pairwise *pw, algo_env *env, void (*begin)(void *state, int i),
                       sim_err *err);

/* Step start: worker i's gradient at its model (plus coupled weight decay)
 * into env->w[i].grad, remembering the version read. */
void algo_pairwise_grad(algo_pairwise *pw, int i);
/* Step end: records the step's staleness and applies the gradient with the
 * worker's optimizer at the current lr. */
void algo_pairwise_apply(algo_pairwise *pw, int i);
/* A neighbour of i drawn uniformly from i's algorithm stream among those
 * that are up (not crashed), or -1 (no draw) when i has none. With every
 * neighbour up this is one draw over the whole list, as without faults. */
int algo_pairwise_partner(algo_pairwise *pw, int i);
/* x_i, x_j <- (x_i + x_j) / 2, both counted as averaged. */
void algo_pairwise_average(algo_pairwise *pw, int i, int j);
/* Counts one averaging that changed x_i (version and gossip rounds). */
void algo_pairwise_mark(algo_pairwise *pw, int i);
/* A rejoining worker i ([faults]): its model becomes the mean of its live
 * neighbours' models (unchanged when none is up) and its optimizer state is
 * reset. Returns the lowest live neighbour (who sends it the model), or -1. */
int algo_pairwise_rejoin(algo_pairwise *pw, int i);
/* Then: i starts its first step (begin) at once when j < 0, else when the
 * model of j (algo_pairwise_rejoin's result, S bytes) reaches it, unless
 * it has crashed again by then. */
void algo_pairwise_resume(algo_pairwise *pw, int i, int j);

/* Vtable slots for a state that begins with its algo_pairwise. */
#define ALGO_PAIRWISE_SLOTS                                                                \
    .async = 1, .uses_graph = 1, .worker_rng = 1, .start = algo_pairwise_start,            \
    .model = algo_pairwise_model, .worker_models = algo_pairwise_worker_models
int algo_pairwise_start(void *state, sim_err *err);
/* The mean of the live workers' models (of all when every worker is down). */
const float *algo_pairwise_model(void *state, float *scratch);
void algo_pairwise_worker_models(void *state, const float **xs);

#endif
