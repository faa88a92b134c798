/* The synchronous-round driver's state, shared by its two files: sync.c
 * (the round, crashes and rejoins) and sync_state.c (life cycle and
 * queries). Private to algorithms/drivers. */
#ifndef DTSIM_ALGO_SYNC_IMPL_H
#define DTSIM_ALGO_SYNC_IMPL_H

#include "algorithms/drivers/local.h"
#include "algorithms/drivers/overlap.h"
#include "algorithms/drivers/sync.h"

enum {
    S_OFF = 0, S_COMPUTING, S_ENCODING, S_WAITING, S_ENTERED, S_DECODING, S_JOINING,
    S_BLOCKED /* background: work over, its previous round's result not in */
};

/* A collective's callback context: rank r of it is g->members[offset + r]. */
typedef struct slot_ctx {
    algo_sync *sy;
    algo_group *g;
    int slot;
    int offset;
} slot_ctx;

/* What the driver adds to a group (its ext): its collectives, one per
 * slot; a slot of kind ALGO_SYNC_HIER_INTRA has one per server instead
 * (sub). */
typedef struct gext {
    slot_ctx ctx[ALGO_SYNC_SLOTS_MAX];
    sim_coll *coll[ALGO_SYNC_SLOTS_MAX];
    int n_sub[ALGO_SYNC_SLOTS_MAX];
    sim_coll **sub[ALGO_SYNC_SLOTS_MAX];
    slot_ctx *subctx[ALGO_SYNC_SLOTS_MAX];
    /* with buckets: each slot's bucketed collectives (HIER_INTRA: one per
     * server, subov) */
    algo_overlap *ov[ALGO_SYNC_SLOTS_MAX];
    algo_overlap **subov[ALGO_SYNC_SLOTS_MAX];
} gext;

struct algo_sync {
    algo_env *env;
    algo_sync_desc d;
    void *m;
    algo_groups groups;
    int bucketed;        /* [algorithm] bucket > 0 */
    int crashes;         /* algo_env_crashes(env) when created */
    int64_t round;       /* the oldest round not completed */
    int formed;          /* phases of it formed */
    int need, done;      /* completions it counts, and has */
    int64_t samples;     /* its samples, summed at its last phase's form */
    int64_t *wround;
    int *wphase, *wstat, *pending, *scratch;
    uint32_t *wgen, *tgen; /* w's incarnation (in its events); its pending timeout's */
    int64_t *late;       /* per worker: the step whose entry waits the timeout */
    algo_group **lateg;  /* with buckets: the group it believes in meanwhile */
    double *wbytes;      /* the message of the worker's current phase */
    sim_time *wenc;      /* with buckets: encoding charged after the last bucket */
    sim_time *wdec;      /* the decoding of the worker's message (msg.decode) */
    algo_overlap **wov;  /* with buckets: the overlap of the worker's step */
    /* COUNT_STEPS: the steps of the live workers; the round's held-back
     * steps are released once (reported) */
    algo_live_steps live;
    int reported;
    int countable;       /* inside hooks.form of the phase that counts the round */
    /* background: the round whose collective w is in (-1: none), and
     * whether its entry waits out the timeout */
    int64_t *bg;
    int *bglate;
    int *computed;       /* with buckets: its compute step has ended */
};

/* Step q = round x ALGO_SYNC_PHASES_MAX + phase (sync.c). */
static inline int64_t step_of(int64_t round, int phase)
{
    return round * ALGO_SYNC_PHASES_MAX + phase;
}

static inline uint64_t warg(const algo_sync *sy, int w)
{
    return algo_group_arg(w, sy->wgen[w]);
}

/* A new group of the given workers (ascending) from step first on, with
 * its collectives; NULL on failure (reported through algo_env_fail). */
algo_group *algo_sync_group_add(algo_sync *sy, const int *members, int n, int64_t first);
/* Frees the groups no worker can use any more whose collectives have
 * nothing in flight (sync_state.c): memory bounded by the workers and the
 * messages in flight, not by the crashes so far. */
void algo_sync_collect(algo_sync *sy);
/* Starts worker w on round (its work, phase 0). */
void algo_sync_work_begin(algo_sync *sy, int w, int64_t round);

#endif
