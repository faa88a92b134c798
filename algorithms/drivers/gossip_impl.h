/* Private: the state of the synchronous gossip driver, shared by its
 * files: gossip.c (the iteration: gradient, publish, combine, the
 * collectives, lifetime), gossip_window.c (the iteration window,
 * iteration accounting and evaluation snapshots), gossip_crash.c (every
 * crash and rejoin rule of the gossip steps, docs/faults.md) and
 * gossip_group.c (the collectives under crashes). Methods use gossip.h.
 *
 * Per worker i the state is (k, t, round): its iteration, the global index
 * of its current gossip step and the steps done in iteration k. Invariants:
 *  - slot[p] holds what i sent (or will send) at its last step of parity p;
 *    pend[p] counts the out-neighbours that have not combined it yet, and a
 *    slot is refilled only when pend[p] == 0 (else i waits, wait_slot);
 *  - recv holds (step, count) pairs: the delivered, not yet combined
 *    messages of each step s >= t. On a static graph flow control keeps
 *    senders at most one step ahead of their receivers; on a time-varying
 *    graph the receiver of step s + 2 is not the one whose consumption
 *    freed the slot, so a sender can be further ahead, but by less than
 *    R = n (period + 1) + 4 steps (each node receives from its period's
 *    in-neighbours within every period, so no node passes another by more
 *    than period + 1 steps per hop). The pairs are few all the same: a
 *    sender j refills slot[p] only after every receiver has combined it,
 *    so at most two of j's messages (one per parity) wait at i, and the
 *    senders are i's neighbours over a period (the static lists). Worker i
 *    keeps room for 2 deg(i) + 2 pairs, so the bookkeeping is linear in
 *    the edges, not n x R;
 *  - a combine reads the senders' slots, never a message copy, so the
 *    network carries sizes and the slots carry contents.
 * Iteration k of the whole system completes when done_cnt[k mod R] reaches
 * n; workers are fewer than R iterations apart by the same bound. A
 * violation (impossible on a connected graph) stops the run as failed
 * (algo_env_fail). iter_samples[k mod R] sums the samples of the gradients
 * of global iteration k, which is what its completion adds to env->samples
 * (the batches may change between iterations). */
#ifndef DTSIM_ALGO_GOSSIP_IMPL_H
#define DTSIM_ALGO_GOSSIP_IMPL_H

#include "algorithms/drivers/gossip.h"

typedef struct recv_cnt {
    int64_t step;
    int count;
} recv_cnt;

typedef struct gworker {
    int64_t k;             /* iteration in progress */
    int64_t t;             /* global index of the current gossip step */
    int round;             /* gossip steps completed in iteration k */
    int compute_done;      /* the gradient of iteration k has been computed */
    int mixed_done;        /* mixing of iteration k is complete (result set) */
    int published;         /* step t's vectors have been sent */
    int wait_slot;         /* waiting for pend[t & 1] to reach 0 */
    int ready_last;        /* AWC: last step's messages in, combine at compute end */
    recv_cnt *recv;        /* delivered messages per step: recv[0 .. nrecv) */
    int nrecv, cap_recv;
    int pend[2];
    float *slot[2];        /* send buffers (len floats) */
    float *mix;            /* result of the last combine (len floats) */
    const float *result;   /* mixed vectors handed to finish */
    double delta;          /* ||sent - combined||^2 of the last step (x part) */
    double lr;             /* learning rate of iteration k */
    algo_gossip_plan plan; /* mixing of iteration k */
    float *x;              /* the model: env->w[i].x, or a slot in place */
    /* crashes ([faults], crash mode only) */
    uint32_t gen;          /* incarnation: +1 at every crash and rejoin */
    uint32_t tseq;         /* timer sequence: a timeout is live while it matches */
    int timed_out;         /* the wait of step t has lasted sync_timeout */
    int64_t kc;            /* iteration in progress at the last crash */
    int64_t join_t;        /* first gossip step of this incarnation */
    int64_t pub[2];        /* step last published per parity, -1 = none */
    struct gnb *nb;        /* in-neighbours (static graph; the union over a period
                            * on a time-varying one), nnb of them */
    int nnb;
    /* time-varying graphs in crash mode (see gossip_crash.c) */
    int dst[2];            /* receiver of the step pub[p] message, -1 = none */
    int64_t keep_t[2];     /* a crashed incarnation's message still delivered */
    uint32_t keep_gen[2];  /* that incarnation */
    struct tvmsg *tv;      /* delivered, uncombined messages: ntv of them */
    int ntv, cap_tv;
    /* the fused combine of step t, deferred to the join (algo_env_defer;
     * never in crash mode): its arguments, and where the snapshot of its
     * result goes (NULL: none) */
    const topo_wmat *dW;
    int dpar;              /* parity of its step: it reads sp[dpar] */
    int dpending;          /* queued, not run yet */
    int64_t dk;
    double dlr;
    const float *dold;
    float *dnew, *dsnap;
} gworker;

/* A delivered message on a time-varying graph in crash mode. */
typedef struct tvmsg {
    int64_t step;
    int src;
} tvmsg;

/* Worker i's view of in-neighbour j in crash mode. */
typedef struct gnb {
    int j;
    int64_t got[2];        /* step of j's delivered, uncombined message per parity */
    uint32_t dead_gen;     /* j's incarnation i has timed out on (UINT32_MAX: none) */
    int dense;             /* resync: j's next message to i goes dense (S bytes) */
} gnb;

typedef struct frame {
    int64_t k;             /* iteration whose results it holds, -1 = free */
    int count;
    float *x;              /* n x d */
    unsigned char *has;    /* crash mode: row i filled by worker i */
} frame;

struct algo_gossip {
    algo_env *env;
    algo_gossip_ops ops;
    void *m;
    int n;
    int64_t d, len;        /* len = width x d */
    int steps;             /* gossip_steps */
    int in_place;          /* x_i^k lives in slot[k & 1] (see sends_model) */
    double msg_bytes;      /* width x S */
    gworker *w;
    float *slab;           /* every worker's slots and mix */
    const float **sp[2];   /* sp[p][j] = w[j].slot[p] */
    const float **ptrs;    /* scratch: n model pointers */
    /* Without crashes, per algo_gossip_coll kind: the collective over all
     * n workers (NULL when unused), its callbacks' context and the ranks
     * done with its current instance. */
    sim_coll *coll[3];
    struct gcoll { struct algo_gossip *g; int kind, done; } cctx[3];
    float *avg;            /* exact mean of the current exact round */
    float *savg;           /* the mean of the current synchronization (sync_after) */
    double est, est_first; /* adaptive: estimate of the current step, of the first */
    int64_t spi;           /* samples of one global iteration at the current batches */
    int64_t spi_changes;   /* env->batch_changes when spi was summed */
    int64_t *iter_samples; /* R slots: samples of global iteration s at [s mod R] */
    int64_t *done_cnt;
    recv_cnt *recv_slab;   /* every worker's recv pairs */
    int R;
    int64_t k_lo;          /* lowest incomplete global iteration */
    frame **frames;
    int n_frames;
    frame *last;           /* frame of the latest completed global iteration */
    algo_gossip_profile *prof;
    int def_par;           /* parity of the last deferred combine (-1: none): every
                            * pending one has it, as the parities alternate only
                            * after algo_env_defer_join (a combine of step t reads
                            * the slots of parity t and writes the other) */
    int crash;             /* algo_env_crashes(env): crash mode (docs/faults.md) */
    gnb *nb_slab;
    int tv;                /* crash mode on a time-varying graph */
    int resync;            /* compressed gossip: a rejoin resynchronizes its pairs */
    struct ggroups *gc;    /* crash mode with a plan or sync_after: the collectives
                            * over groups of live workers (gossip_group.c) */
    struct gfifo *fifo;    /* per worker: its messages in flight and waiting, one
                            * connection per destination (gossip_fifo.c) */
};

/* The driver's collectives. */
typedef enum algo_gossip_coll {
    ALGO_GC_EXACT = 0,     /* the exact mean of the sent vectors (width x S bytes) */
    ALGO_GC_SCALAR,        /* the adaptive estimate (a ring all-reduce of 8 bytes) */
    ALGO_GC_SYNC           /* sync_after's average of the models (S bytes) */
} algo_gossip_coll;

/* gossip.c */
/* Stops the run as failed: "<method>: what". */
void algo_gossip_fail(algo_gossip *g, int code, const char *what);
/* Worker i starts its iteration w[i].k: plan, gradient, compute. */
void algo_gossip_begin_iter(algo_gossip *g, int i);
/* Combines worker i's step t when its inputs are in. */
void algo_gossip_check_round(algo_gossip *g, int i);
/* Receiver done with sender j's slot of parity p (flow control). */
void algo_gossip_release(algo_gossip *g, int j, int p);

/* The result of a collective, formed at its first completion (rank i's)
 * over its members (NULL: every worker, nm = n), who have all entered:
 * the exact mean of the sent vectors, the adaptive estimate, or the
 * synchronization's (rewritten) mean, which every member then holds (a
 * rank waiting for its own part already logically holds it). */
void algo_gossip_coll_form(algo_gossip *g, algo_gossip_coll kind, int i, const int *members,
                           int nm);
/* Worker i's part of a collective is over: it goes on. */
void algo_gossip_part_done(algo_gossip *g, algo_gossip_coll kind, int i);
/* What a worker sends into a collective of that kind. */
double algo_gossip_coll_bytes(const algo_gossip *g, algo_gossip_coll kind);

/* gossip_window.c */
/* Sums the samples of one global iteration again after a batch change. */
void algo_gossip_refresh_spi(algo_gossip *g);
/* Worker i has x_i^{k+1}: copies it into iteration k's snapshot frame
 * when the runner evaluates after k. */
void algo_gossip_snapshot(algo_gossip *g, int i, int64_t k);
/* Worker i has completed iteration k: counts it, completes the global
 * iterations that are done. */
void algo_gossip_iteration_done(algo_gossip *g, int64_t k);
/* Crash mode: completes the lowest global iterations that the live
 * workers and the ghosts have completed. */
void algo_gossip_complete_ready(algo_gossip *g);
/* Crash mode: doubles the window until iteration k fits; -1 (run failed)
 * when out of memory. */
int algo_gossip_window_fit(algo_gossip *g, int64_t k);

/* gossip_crash.c: the crash and rejoin rules (crash mode only) */
/* Reads sync_timeout, refuses what has no rule, builds the neighbour
 * views. Returns 0 or an error code with err filled. */
int algo_gossip_crash_init(algo_gossip *g, sim_err *err);
/* Is global iteration k complete? The workers that completed it and the
 * ghosts (down since an iteration <= k) make n, and one did. */
int algo_gossip_crash_complete(const algo_gossip *g, int64_t k);
/* Can worker i combine its step t = w[i].t? Every in-neighbour's message
 * is in, or the neighbour is not part of step t: joined later, or down and
 * either already known dead or waited for sync_timeout. */
int algo_gossip_crash_ready(const algo_gossip *g, int i);
/* Sends worker i's slot p of step w[i].t to who takes part in it (bytes
 * each, unless a pair is being resynchronized) and arms the timeout. */
void algo_gossip_crash_send(algo_gossip *g, int i, int p, double bytes);
/* Before worker i combines step t: the missing inputs replaced in sp[t & 1]
 * (*src, *j0: the time-varying graph's sender and W_t's own peer). */
void algo_gossip_crash_substitute(algo_gossip *g, int i, int64_t t, int *src, int *j0);
/* After the combine: sp[t & 1] restored. */
void algo_gossip_crash_restore(algo_gossip *g, int i, int64_t t, int j0);
/* Once i has moved past step t: the senders it combined are released. */
void algo_gossip_crash_release(algo_gossip *g, int i, int64_t t, int src);

/* gossip_fifo.c: one connection per ordered pair of workers */
/* Sends bytes from src to dst with delivery handler fn(g, arg): at once
 * when src has no message to dst in flight, else after the ones before it
 * have arrived. 0, or -1 with the run failed. */
int algo_gossip_send(algo_gossip *g, int src, int dst, double bytes, sim_net_deliver fn,
                     uint64_t arg);
void algo_gossip_fifo_free(algo_gossip *g);

/* gossip_group.c: the collectives in crash mode (docs/faults.md) */
/* Builds g->gc (owned by the run): the group of every worker. 0 or an
 * error code. */
int algo_gossip_group_init(algo_gossip *g, sim_err *err);
/* Worker i enters its next collective (or first waits out sync_timeout
 * when a crash aborted it). */
void algo_gossip_group_enter(algo_gossip *g, int i, algo_gossip_coll kind);
/* Worker i begins iteration w[i].k: the joiners waiting for it start. */
void algo_gossip_group_begin(algo_gossip *g, int i);
/* Worker c crashed: the first collective not formed is aborted. 1 when c
 * was a joiner that had not started (nothing else of it to undo). */
int algo_gossip_group_crash(algo_gossip *g, int c);
/* Worker j rejoined (its model and iteration w[j].k are set): it waits for
 * the first worker to begin that iteration, or starts alone. */
void algo_gossip_group_rejoin(algo_gossip *g, int j);
/* The iteration a worker rejoining now starts: the one after the latest
 * begun. */
int64_t algo_gossip_group_join_iter(const algo_gossip *g);

#endif
