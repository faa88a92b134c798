/* The synchronous-round driver: how the workers of a synchronous method
 * meet. A method (allreduce_sgd, local_sgd, post_local_sgd,
 * adaptive_local_sgd, slowmo, hierarchical_local_sgd, overlap_local_sgd,
 * gravac, onebit_adam, onebit_lamb) is its update rule, written as the
 * hooks below; the driver owns everything about the meeting:
 *
 *  - the groups of live workers and their collectives (algorithms/drivers/
 *    group.h): without crashes ONE group of every worker runs every round
 *    from round 0; there is no second path;
 *  - the round counters: round k of worker w, the oldest round not
 *    completed, whether its result is formed;
 *  - per-worker incarnations: every event the driver schedules for a
 *    worker (compute end, encode, decode, timeout, join message) carries
 *    it, and an event of an earlier incarnation is dropped;
 *  - [faults] sync_timeout, crash and rejoin bookkeeping (docs/faults.md),
 *    the joiner's model send (S bytes from the member that formed the
 *    result);
 *  - multi-phase rounds (1-bit Adam's all-to-all then all-gather;
 *    adaptive_local_sgd's average then scalar statistics), each phase on
 *    its own collective slot of the group;
 *  - buckets ([algorithm] bucket > 0, drivers/overlap.h): phase 0 of a
 *    round overlaps the backward pass of the work-ending step, on any slot
 *    (an all-to-all's buckets carry their share of its message); a
 *    background round's collective is entered in buckets;
 *  - the compute time of encoding (before a phase is entered) and of
 *    decoding (after the last phase);
 *  - the hierarchical collective (a slot of kind ALGO_SYNC_HIER_INTRA or
 *    ALGO_SYNC_HIER_INTER is built over the group's members on the
 *    hierarchical(N, PER_NODE) servers);
 *  - the iteration count (algo_env_iteration): the method never calls it.
 *
 * ---- A round, for worker w in the group of round k ----------------------
 *
 *  1. WORK. The driver calls hooks.grad(m, w) (the method computes w's
 *     gradient with algo_env_grad at the parameters of its choice), then
 *     schedules the compute step (algo_env_compute, the env's
 *     algo_env_step_samples(env, w) samples) or, with buckets, the
 *     bucketed step (algo_overlap_step). When it ends the driver calls
 *     hooks.step_done(m, w): the method applies a local step if it takes
 *     one and returns 1 when w's work for round k is over, 0 to take
 *     another compute step (back to hooks.grad). NULL: 1 (one gradient per
 *     round: allreduce_sgd, gravac, the 1-bit methods).
 *  2. CONTRIBUTE, for each phase p of hooks.plan(m, k) in order: the driver
 *     calls hooks.contribute(m, w, k, p, &msg): the method writes w's
 *     message (gradient, parameters, compressed buffer; whatever
 *     hooks.form reads) and fills msg.bytes (its wire size), optionally
 *     msg.encode (compute time before it is entered: compression) or
 *     msg.samples (a compute step of that many samples before it is
 *     entered: adaptive_local_sgd's statistics), and for the round's last
 *     phase msg.decode (compute time after it: decompression). The driver charges that
 *     compute (idle ends before it and begins again after it), begins w's
 *     idle interval (algo_env_idle_begin) if it is not idle, and enters the
 *     phase's collective of w's group (algo_env_coll_enter, rank = w's rank
 *     in the group). A worker stays idle between two phases that charge no
 *     compute (1-bit Adam: phase 1 to phase 2).
 *  3. FORM. At the FIRST completion of phase p in the group (every member
 *     has entered, so every member's message of phase p exists; for the
 *     last phase a completion includes the member's DECODE, step 5), once
 *     per round and phase: hooks.form(m, g, k, p, w), w the first
 *     completing member. The method forms the round's result over g's members
 *     (members ascending, rank r = g->members[r]; a mean is over g->n
 *     members in worker-id order, renormalized over who took part).
 *  4. TAKE. At each member's completion of phase p, after FORM, the member
 *     holds the result: the driver calls no hook; the method's next hook
 *     for w (hooks.grad of round k + 1, or hooks.contribute of phase p + 1)
 *     runs at the same instant, and a method with per-worker models applies
 *     the result there (Local SGD copies the average into x_w).
 *  5. DECODE. When w's part of the last phase's collective is over, its
 *     idle interval ends and the msg.decode of its last message is charged
 *     (0: none); then FORM (if first) of the last phase.
 *  6. The worker starts round k + 1 at 1.
 *
 * ---- Ordering guarantees (they keep results bit-identical) --------------
 *
 *  - algo_sync_start starts every member of round 0 at 1, in worker-id
 *    order; hooks.grad runs at the instant the compute step is scheduled.
 *  - At the last phase's completion of w the order is:
 *    algo_env_idle_end(w), DECODE (if any), FORM (first completion only;
 *    COUNT_FIRST reports there), the joiners' model send (first
 *    completion only, by w), then the count (and, when the round is
 *    complete, hooks.plan of the next one) and step 6 (see below).
 *    Phases before the last one go FORM (first only), straight to the next
 *    CONTRIBUTE.
 *  - The iteration count, by desc.count; one rule, with or without crashes
 *    possible (a run whose crashes never fire is the plain run, bit for
 *    bit):
 *      ALGO_SYNC_COUNT_LAST: a round is an iteration, reported when its
 *        last member completes, with the samples of the members' gradients
 *        (w->grad_samples) summed at FORM of the last phase, BEFORE that
 *        member starts round k + 1.
 *      ALGO_SYNC_COUNT_FIRST: reported at FORM of the last phase, with the
 *        same samples: where the method calls algo_sync_report from
 *        hooks.form (gravac, whose gains read the count and the epoch),
 *        else right after hooks.form (1-bit methods).
 *      ALGO_SYNC_COUNT_STEPS: an iteration is one local step of every
 *        live worker (Local SGD family; algo_live_steps, drivers/local.h):
 *        iteration K completes when every live worker has completed its
 *        K-th step. A step that does not end the worker's work counts
 *        when it ends, before the next step starts; the work-ending steps
 *        of the round's members are held back and count at FORM of phase
 *        0: where the method calls algo_sync_report from hooks.form (after
 *        its outer step, before post_local_sgd's switch test), else right
 *        after hooks.form. A crash counts what the survivors completed; a
 *        joiner counts from the iterations reported when it joins.
 *        desc.span: how many steps workers may be apart (local_steps + 2).
 *  - hooks.contribute of phase 0 runs at the instant w's work ends; with
 *    buckets right after hooks.grad, before the bucketed step starts (the
 *    message must be known when its first bucket is entered: a hook that
 *    reads the gradient calls algo_env_grad_wait first; its msg.encode is
 *    then charged after the last bucket, with the decoding). With buckets
 *    only the step that ends the work (hooks.grad returned 1) is bucketed, on
 *    phase 0's slot (per server for HIER_INTRA); its hooks.step_done runs
 *    when its backward pass ends, before any member's last bucket is
 *    reduced (so FORM sees every member's step); later phases are plain.
 *  - hooks.form runs with the phase already formed (counted by
 *    algo_sync_phases_formed), so an iteration reported from inside it
 *    (COUNT_STEPS: algo_sync_report) evaluates the formed result.
 *
 * ---- Background rounds (desc.background: overlap_local_sgd) -------------
 *
 *  The round's collective runs while its members work on: when w's work
 *  for round k is over it waits (idle, blocked) until its part of round
 *  k - 1's collective is over, then CONTRIBUTEs to round k (the method
 *  applies round k - 1's result there), enters round k's collective and
 *  at once starts its work for round k + 1. FORM (first completion, then
 *  the joiners' model send) runs at w's completion of round k,
 *  which unblocks w if it waits. One phase, COUNT_STEPS with every step
 *  counted when it ends, no decode. With buckets the message is entered as
 *  buckets one after another (algo_overlap_enter; no backward pass to
 *  overlap: the next local steps overlap the whole collective), and the
 *  round is w's when its last bucket is reduced. Under crashes a survivor
 *  that had entered the aborted round re-enters it sync_timeout after the
 *  crash and one that had not, sync_timeout after it enters; its work goes
 *  on meanwhile: it blocks only at its next round, as without crashes.
 *
 * ---- Crashes and rejoins (docs/faults.md) --------------------------------
 *
 *  Groups take over from a STEP q = round x ALGO_SYNC_PHASES_MAX + phase
 *  (g->first_round holds q). A crash of worker c aborts the first step not
 *  formed: the next round's phase 0 when the current round is formed in
 *  every phase (it finishes in its old group without c), else the current
 *  round's first unformed phase (its phase 0 with desc.restart_round).
 *  A group of the survivors takes over from that step. A survivor learns
 *  of it by timing out: it enters the new group's collective sync_timeout
 *  after it entered the aborted step (or after the crash, when it had
 *  entered before), with the message it holds (hooks.reenter may resize
 *  it); c's contribution is lost.
 *  Buckets: each group has its own bucket collectives. A survivor has
 *  "entered" a bucketed round when its backward pass ends. A crash before
 *  that: it waits the timeout from there. A crash while its buckets are
 *  reduced: it abandons them at the crash (algo_overlap_stop: the partly
 *  reduced buckets cost their bytes and time, nothing else) and waits the
 *  timeout from the crash (a background round: as a survivor that had
 *  entered). Either way it then enters the new group's
 *  plain (unbucketed) collective of slot 0 with its whole message; the
 *  next rounds are bucketed again (docs/faults.md).
 *
 *  A rejoining worker j joins at the next formed result: the member that
 *  formed it calls hooks.join(m, j, sender) (the method copies the model,
 *  resets the optimizer state, residuals or counters of j from sender's;
 *  NULL: nothing), sends j the bytes hooks.join returned (0: desc.join_bytes,
 *  0 = env->msg_bytes), and j starts round k + 1 when they arrive. The group
 *  grows from that round on. When no one is left to form a result, j
 *  starts a group of its own at once (hooks.join(m, j, -1)). A method that
 *  keeps state per group (1-bit's error buffers, per partition) compares
 *  the g->id of the group it forms in with the one its state was built for.
 *  A method must not keep g: after a crash or a rejoin, a group that no
 *  worker can use any more and whose collectives have nothing in flight
 *  is freed. */
#ifndef DTSIM_ALGO_SYNC_H
#define DTSIM_ALGO_SYNC_H

#include <stdint.h>

#include "algorithms/core/algo.h"
#include "algorithms/drivers/group.h"

typedef struct algo_sync algo_sync;

enum { ALGO_SYNC_SLOTS_MAX = 4, ALGO_SYNC_PHASES_MAX = 4 };

/* A collective slot: what each group builds over its members. */
typedef enum algo_sync_slot {
    ALGO_SYNC_ALLREDUCE = 0, /* the configured all-reduce (env->allreduce_kind) */
    ALGO_SYNC_ALLGATHER,     /* ring all-gather (compressed messages of different support) */
    ALGO_SYNC_ALLTOALL,      /* every member sends to every other (1-bit phase 1) */
    ALGO_SYNC_HIER_INTRA,    /* all-reduce inside each server of hierarchical(N, PER_NODE) */
    ALGO_SYNC_HIER_INTER,    /* the hierarchical all-reduce across servers */
} algo_sync_slot;

typedef enum algo_sync_count {
    ALGO_SYNC_COUNT_LAST = 0,
    ALGO_SYNC_COUNT_FIRST,
    ALGO_SYNC_COUNT_STEPS,
} algo_sync_count;

/* A worker's contribution to one phase (hooks.contribute fills it). */
typedef struct algo_sync_msg {
    double bytes;     /* wire size of the message */
    sim_time encode;  /* compute time before it is entered (0: none) */
    int samples;      /* or: a compute step of this many samples first (0: none) */
    sim_time decode;  /* the round's last phase: compute time after its
                         collective (0: none) */
} algo_sync_msg;

/* The method's hooks; m is the method's state (desc.method). Seven, fixed:
 * a method expresses its variation through its own state and these, not
 * through new slots (the Local SGD family's round, 1-bit's partitions and
 * GraVAC's window all do). */
typedef struct algo_sync_hooks {
    /* Start of a compute step: compute w's gradient; returns 1 when the
     * step ends w's work for its round (with buckets it is the bucketed
     * step; its hooks.step_done runs when its backward pass ends), 0 when
     * more steps follow. NULL: at w's own parameters (env->w[w].x), 1. */
    int (*grad)(void *m, int w);
    /* End of a compute step: a local step; 1 when w's work for its round
     * is over, 0 to take another compute step. NULL: 1. */
    int (*step_done)(void *m, int w);
    /* Phases of round k: fills slots[p] (ALGO_SYNC_PHASES_MAX) with the
     * collective slot of each phase, returns their count (>= 1). The same
     * for every member of round k. Also called with k as soon as k becomes
     * the oldest round not completed (right after round k - 1 completes, or
     * the last member it waited for crashed): a decision taken at round
     * k - 1's FORM applies from there (gravac's mode). NULL: one phase on
     * slot 0. */
    int (*plan)(void *m, int64_t round, int *slots);
    /* Required. w's message of phase p of round k (see the top). */
    void (*contribute)(void *m, int w, int64_t round, int phase, algo_sync_msg *msg);
    /* Required. Phase p's first completion in g: form the result. */
    void (*form)(void *m, const algo_group *g, int64_t round, int phase, int w);
    /* A rejoining worker j's state from sender, the member that formed the
     * result (-1: none, j starts a group of its own); returns the bytes
     * sent to j now (0: desc.join_bytes). NULL: nothing, desc.join_bytes. */
    double (*join)(void *m, int j, int sender);
    /* After a timeout, before w re-enters phase p of round k in a new
     * group: *msg holds its message as it was; the method may resize it
     * for the group it re-enters (msg->bytes: 1-bit's partition of m
     * members; msg->decode). NULL: as it was. Nothing is re-encoded. */
    void (*reenter)(void *m, int w, int64_t round, int phase, algo_sync_msg *msg);
} algo_sync_hooks;

typedef struct algo_sync_desc {
    const char *who;        /* method name for error messages */
    void *method;           /* m, passed to every hook */
    algo_sync_hooks hooks;
    int n_slots;            /* collective slots per group (1..ALGO_SYNC_SLOTS_MAX) */
    algo_sync_slot slots[ALGO_SYNC_SLOTS_MAX];
    algo_sync_count count;
    double join_bytes;      /* bytes sent to a joiner; 0: env->msg_bytes */
    int restart_round;      /* 1: a crash restarts an unformed round at phase 0
                               (1-bit); 0: at its first unformed phase */
    int span;               /* COUNT_STEPS: steps the workers may be apart */
    int joiner_idle;        /* 1: a rejoined worker is idle until it joins */
    int background;         /* 1: background rounds (one phase, COUNT_STEPS):
                               see "Background rounds" */
} algo_sync_desc;

/* Builds the driver: one group of every worker from round 0 and its
 * collectives; reads [faults] sync_timeout when algo_env_crashes(env). The
 * run owns it (algorithms/core/own.h). 0 or a negative code with err
 * filled. */
int algo_sync_create(algo_env *env, const algo_sync_desc *desc, algo_sync **out, sim_err *err);
/* Starts round 0 on every worker (worker-id order). */
int algo_sync_start(algo_sync *sy, sim_err *err);
/* The method's vt->fault forwards here (crash and rejoin). */
void algo_sync_fault(algo_sync *sy, const algo_fault *ev);

/* The oldest round not completed. */
int64_t algo_sync_round(const algo_sync *sy);
/* The phases of that round formed so far (between FORM and the last TAKE
 * every member logically holds the result: what model() reads). */
int algo_sync_phases_formed(const algo_sync *sy);
/* Counts the round now, from hooks.form: COUNT_STEPS its held-back steps
 * (phase 0), COUNT_FIRST the round (the last phase); once per round,
 * nothing elsewhere (other phases, COUNT_LAST, background rounds). */
void algo_sync_report(algo_sync *sy);
/* 1 when w is up and a member of the groups (not waiting to join). */
int algo_sync_live(const algo_sync *sy, int w);
/* The group that runs phase 0 of round k (NULL: none), for k no earlier
 * than the previous round or a live worker's round (older groups are
 * freed). */
const algo_group *algo_sync_group(const algo_sync *sy, int64_t round);

#endif
