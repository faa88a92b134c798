/* Shared machinery of the decentralized methods.
 *
 * 1. algo_gossip: the synchronous gossip driver behind dpsgd, dsgd_atc,
 *    dmsgd, decentlam, momentum_consensus and consensus_control. A method
 *    supplies two callbacks (what a worker sends at iteration k, and how it
 *    turns the mixed vectors into x^{k+1}) and the driver runs the events:
 *    gradient at the step start, compute time, neighbour exchanges of S bytes
 *    per vector through the network, X <- W_t X per gossip step, optional
 *    exact averaging (all-reduce) or adaptive gossip (scalar all-reduce of
 *    the local consensus estimate), iteration accounting and evaluation
 *    snapshots.
 *    - ATC (adapt-then-combine): compute g, then send, then combine.
 *    - AWC (adapt-while-combine): send x^k at the step start; the exchange
 *      overlaps the gradient computation.
 *    Each worker waits only for its in-neighbours' messages of its current
 *    gossip step (and for the collectives its method uses). Send buffers are
 *    double-buffered by gossip-step parity; a buffer is reused only after
 *    every out-neighbour has combined it (flow control, which never waits on
 *    static symmetric graphs), so a receiver always combines exactly x_j^t.
 *    Gossip step t counts all steps taken so far (every worker takes the same
 *    number per iteration), so time-varying graphs use W_t of that t.
 *
 *    Iterations: global iteration k completes when the last worker completes
 *    its iteration k; algo_env_iteration is then called once with the
 *    samples of that iteration's gradients (the workers' batches then, which
 *    algo_env_set_batch may change). At the iterations the runner evaluates (every
 *    eval_every iterations and the last one), each worker copies x_i^{k+1}
 *    into a snapshot frame when it completes k, so the evaluated model is
 *    exactly the average of the x_i^{k+1} and the consensus distance is that
 *    of the x_i^{k+1}, even when some workers are already ahead. At other
 *    moments (time-based evaluation, a max_time stop) the workers' current
 *    models are used.
 *
 * 2. Helpers for the pairwise (asynchronous) methods: lattice quantization
 *    (docs/algorithms.md 6) and the local momentum step. */
#ifndef DTSIM_ALGO_GOSSIP_H
#define DTSIM_ALGO_GOSSIP_H

#include <stdint.h>

#include "algorithms/core/algo.h"

typedef struct algo_gossip algo_gossip;

typedef enum algo_gossip_form { ALGO_GOSSIP_ATC = 0, ALGO_GOSSIP_AWC = 1 } algo_gossip_form;

typedef enum algo_gossip_mode {
    ALGO_MIX_GOSSIP = 0,  /* `rounds` gossip steps: mixed = W^rounds X */
    ALGO_MIX_EXACT,       /* all-reduce of the sent vectors: mixed = mean (ATC only) */
    ALGO_MIX_ADAPTIVE     /* gossip until the estimate falls to the target (ATC only) */
} algo_gossip_mode;

/* How iteration k mixes (the same on every worker). */
typedef struct algo_gossip_plan {
    algo_gossip_mode mode;
    int rounds;      /* GOSSIP: steps (>= 0); ADAPTIVE: the maximum (>= 1) */
    double target;   /* ADAPTIVE: absolute target on the estimate, or 0 to use */
    double fraction; /* ADAPTIVE: target = fraction x the estimate of the first step */
} algo_gossip_plan;

typedef struct algo_gossip_ops {
    algo_gossip_form form;
    int width;       /* vectors of d floats per message (1 = x, 2 = x and v) */
    /* Fills send (width x d floats) for iteration k: AWC at the step start,
     * ATC after the compute (env->w[i].grad then holds g_i^k at x_i^k). */
    void (*prepare)(void *m, algo_env *env, int i, int64_t k, double lr, float *send);
    /* mixed = the mixed vectors (width x d); sets env->w[i].x to x_i^{k+1}.
     * env->w[i].x still holds x_i^k and env->w[i].grad g_i^k. */
    void (*finish)(void *m, algo_env *env, int i, int64_t k, double lr, const float *mixed);
    /* Optional, the fast path of the last gossip step of an iteration:
     * x_new = x_i^{k+1} = finish(row i of W applied to in[]) in one pass,
     * without the intermediate mixed vector, x_old = x_i^k (x_new may be
     * x_old, element-wise). Must give the same numbers as finish(mixed)
     * with mixed = algo_gossip_row(W, i, in). Without crashes it runs at
     * the instant's join (algo_env_defer), on any thread, beside the
     * other workers' combines: it may write only worker i's state (x_new,
     * its gradient, its optimizer and method state). */
    void (*combine_finish)(void *m, algo_env *env, int i, int64_t k, double lr,
                           const topo_wmat *W, const float *const *in, const float *x_old,
                           float *x_new);
    /* 1: (AWC, width 1, finish only through combine_finish) the sent vector
     * is the model itself. With one gossip step per iteration on a static
     * graph the driver then keeps x_i^k in the send buffer of step k (no
     * copy to send) and writes x_i^{k+1} into the other buffer; env->w[i].x
     * is then left at x_i^0 and the driver's copy is the model. */
    int sends_model;
    /* Optional: iteration k's plan; NULL = gossip_steps steps of gossip.
     * epoch = the epoch at which iteration k starts. */
    void (*plan)(void *m, int64_t k, double epoch, algo_gossip_plan *out);
    /* Optional: 1 when the workers exactly average their models after
     * iteration k. Each worker, once x_i^{k+1} is set, enters a blocking
     * all-reduce of S bytes; the first completion forms the mean of the
     * x_i^{k+1} (worker-id order), hands it to sync_mean (if set) and every
     * worker restarts from the result. Iteration k is counted (and its
     * evaluation snapshot taken) when the worker's part completes. */
    int (*sync_after)(void *m, int64_t k);
    /* Optional with sync_after: rewrites the mean (d floats) in place, once
     * per synchronization; lr = iteration k's learning rate. The mean is
     * over the members (nm worker ids ascending; NULL: every worker, nm =
     * n), who all take it. */
    void (*sync_mean)(void *m, algo_env *env, int64_t k, double lr, const int *members, int nm,
                      float *mean);
    /* Optional: the wire size of the message worker i has just prepared
     * (compressed gossip, methods/choco_rule.c); NULL = width x S bytes. */
    double (*bytes)(void *m, int i);
    /* Optional: gives worker i a fresh optimizer state (it rejoins after a
     * crash). NULL: the method refuses crashes. */
    void (*reset)(void *m, algo_env *env, int i);
} algo_gossip_ops;

/* Wall-clock split for benchmarks (seconds). Only collected when set with
 * algo_gossip_set_profile. */
typedef struct algo_gossip_profile {
    double mix_s;     /* gossip kernels: W_t rows, exact means, estimates */
    double update_s;  /* the methods' prepare and finish */
    int64_t rounds;   /* gossip steps taken, summed over workers */
} algo_gossip_profile;

/* Key rows shared by the synchronous gossip methods (for their key tables). */
#define ALGO_GOSSIP_STEPS_KEY                                                              \
    {"algorithm", "gossip_steps", "1", CFG_KEY_INT, NULL,                                  \
     "gossip steps q per iteration (X <- W^q X; each one neighbour exchange of S bytes)"}
#define ALGO_GOSSIP_FORM_KEY(def)                                                          \
    {"algorithm", "form", def, CFG_KEY_CHOICE, "atc|awc",                                  \
     "atc: x <- W(x - lr d) (blocking); awc: x <- Wx - lr d (exchange overlaps the gradient)"}

/* The form named by the [algorithm] form key (ALGO_GOSSIP_FORM_KEY): atc or
 * awc, else dflt. */
algo_gossip_form algo_gossip_form_read(const cfg_config *cfg, algo_gossip_form dflt);

/* Builds the driver for env (which must have a graph and W) into *out (a
 * vtable create slot); the run owns it (algorithms/core/own.h), as it
 * owns m. Reads gossip_steps from env->cfg. Returns 0 or the error
 * code (err filled). */
int algo_gossip_create_state(algo_env *env, const algo_gossip_ops *ops, void *m, void **out,
                             sim_err *err);
/* The vtable slots: the state of a gossip method is its algo_gossip. */
int algo_gossip_start(void *g, sim_err *err);
const float *algo_gossip_model(void *g, float *scratch);
void algo_gossip_worker_models(void *g, const float **xs);
/* The live_models slot: the models the evaluated model averages. Without
 * crashes every worker's (algo_gossip_worker_models, n); under crashes at
 * an evaluation snapshot the rows of the workers that completed that
 * iteration, else the workers that are up (all n when none is). */
int algo_gossip_live_models(void *g, const float **xs);
/* The fault slot ([faults] crash and rejoin, docs/faults.md; the rules are
 * in gossip_crash.c): a worker waiting for a neighbour's message of gossip
 * step t skips it when the neighbour is down and the wait has lasted
 * sync_timeout (at once once it has timed out on that incarnation), its
 * weight W_ij going to W_ii (W stays doubly stochastic over the live
 * graph); nothing is sent to a crashed worker and its messages in flight
 * are dropped; a rejoining worker takes its live neighbours' mean, a fresh
 * optimizer state (ops->reset) and the first iteration none of them has
 * published a step of; compressed
 * gossip (ops->bytes) resynchronizes the rejoiner's links with one dense
 * message each way. With a plan or sync_after the collectives run over
 * groups of live workers and a rejoining worker starts at the iteration
 * after the latest begun (gossip_group.c). The create fails (a config
 * error) without ops->reset and for compressed gossip on a time-varying
 * graph. */
void algo_gossip_fault(void *g, const algo_fault *ev);

/* The vtable slots of a method whose state is its algo_gossip (after the
 * method's own designated initializers). */
#define ALGO_GOSSIP_SLOTS                                                                  \
    .uses_graph = 1, .start = algo_gossip_start,                                           \
    .model = algo_gossip_model, .worker_models = algo_gossip_worker_models,                \
    .live_models = algo_gossip_live_models, .fault = algo_gossip_fault

/* Worker i's current model (env->w[i].x unless the driver runs in place),
 * its deferred combine run first. */
float *algo_gossip_x(const algo_gossip *g, int i);
/* Starts wall-clock profiling into p (NULL stops it); p is borrowed. */
void algo_gossip_set_profile(algo_gossip *g, algo_gossip_profile *p);
/* The epoch at which global iteration k starts: samples applied before it
 * over training samples (iterations not yet completed count at the
 * workers' current batches, exact while batches do not change). */
double algo_gossip_epoch_at(const algo_gossip *g, int64_t k);

/* Elements [off, off + len) of row i of W applied to in[] (vectors indexed
 * by column): out[e] = sum_j W_ij in[j][off + e], in the arithmetic and
 * order of topo_mixing_apply_row (so the results are bitwise the same).
 * out must not alias any in[j]. */
void algo_gossip_row(const topo_wmat *W, int i, const float *const *in, int64_t off,
                     int64_t len, float *out);
/* The same followed by a step: out[e] = row[e] - lr dir[e] (the float
 * result of the row, then the subtraction, as two separate steps would
 * give). dir may be NULL (no step). out must not alias in[j] or dir. */
void algo_gossip_row_step(const topo_wmat *W, int i, const float *const *in, int64_t off,
                          int64_t len, float *out, const float *dir, double lr);
/* Chunk length (floats) for fused row kernels working through a stack
 * buffer. */
#define ALGO_ROW_CHUNK 2048

/* Parses a phase list ("none", "all", "1", "1, 3") into a bit mask (bit p
 * for phase p = 1..30; all = every bit). Returns 0 or SIM_ECONFIG. */
int algo_phase_mask(const char *text, uint32_t *mask);

/* Lattice quantization (docs/algorithms.md 6), q a power of two >= 2, step s:
 * code c = round(x / s) mod q (stored as a float in [0, q)); decoding
 * against a reference y gives q s round(y / (q s) - c / q) + s c, which is
 * x rounded to the lattice whenever |x - y| < q s / 2. */
void algo_lattice_encode(float *codes, const float *x, int64_t d, int q, double s);
void algo_lattice_decode(float *out, const float *codes, const float *ref, int64_t d, int q,
                         double s);

#endif
