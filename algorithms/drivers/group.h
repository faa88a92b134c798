/* Groups of live workers for the synchronous methods under crashes
 * ([faults], docs/faults.md): allreduce_sgd, the Local SGD family, gravac
 * and the 1-bit methods run their rounds over a GROUP of live workers,
 * each group with its own collective over its members' hosts (rank r = the
 * r-th member, members ascending). A crash or a rejoin makes a new group
 * that takes over from a given round on; an older group is dropped
 * (algo_groups_collect) by its owner once no worker can use it and none of
 * its collectives has a message in flight.
 *
 * Events of a worker carry its incarnation (algo_group_arg): a crash or a
 * rejoin bumps it, so that an event of an earlier incarnation is ignored
 * when it arrives. */
#ifndef DTSIM_ALGO_GROUP_H
#define DTSIM_ALGO_GROUP_H

#include <stdint.h>

#include "algorithms/core/algo.h"

typedef struct algo_group {
    sim_coll *coll;      /* over the members (NULL when n = 0) */
    sim_coll *aux;       /* a second all-reduce over them, or NULL */
    int n;               /* members */
    int *members;        /* worker ids, ascending; rank r = members[r] */
    int *rank_of;        /* per worker: its rank, -1 when not a member */
    int64_t first_round; /* the group runs the rounds from this one on */
    int id;              /* its number in the order made (0: the first) */
    void *owner;         /* the method's state (algo_groups_add) */
    void *ext;           /* the owner's data for the group, freed by the owner */
} algo_group;

typedef struct algo_groups {
    algo_group **g;      /* the groups kept, oldest first */
    int n, cap;
    int made;            /* groups made so far */
} algo_groups;

/* The collectives' callbacks get the group (algo_group *) as ctx. */
typedef struct algo_group_colls {
    sim_coll_kind kind;  /* the main collective */
    sim_coll_done done;
    sim_coll_done aux_done; /* NULL: no second collective; else an all-reduce
                               of env->allreduce_kind */
    int aux_ring;        /* 1: the second collective is a ring all-reduce */
    void *owner;
    const char *who;     /* method name for error messages */
    int none;            /* 1: no collective at all (the caller builds its own) */
} algo_group_colls;

/* A new group of the given workers (ascending) from round `first` on.
 * NULL on failure: out of memory (nothing reported), or the collective
 * could not be made (reported through algo_env_fail). */
algo_group *algo_groups_add(algo_groups *gs, algo_env *env, const int *members, int n,
                            int64_t first, const algo_group_colls *c);
/* A collective over g's members (rank r on host members[r]) of `kind`, or
 * with alltoall an exchange in which every member sends to every other
 * (SIM_COLL_NEIGHBOR on the complete graph; NULL when g has fewer than 2
 * members: nothing to exchange). done(eng, ctx, rank). NULL on failure,
 * reported through algo_env_fail naming `who`. */
sim_coll *algo_group_coll(algo_env *env, algo_group *g, int alltoall, sim_coll_kind kind,
                          sim_coll_done done, void *ctx, const char *who);
/* The group that runs `round`: the newest whose first round is <= round. */
algo_group *algo_groups_for(const algo_groups *gs, int64_t round);
/* Frees every group older than the one that runs `low` (no lookup asks
 * for an earlier step any more, so no lookup finds them) whose collectives
 * have nothing in flight and that held(ctx, g) does not hold (NULL: none);
 * drop(ctx, g) frees g's ext first (NULL: none). */
void algo_groups_collect(algo_groups *gs, int64_t low, int (*held)(void *ctx, const algo_group *g),
                         void (*drop)(void *ctx, algo_group *g), void *ctx);
void algo_groups_release(algo_groups *gs);

/* The members of g but worker c, into out (ascending); returns how many. */
int algo_group_members_except(const algo_group *g, int c, int *out);
/* The members of the next round's group (next may be NULL) and the
 * pending joiners that are up, into out (ascending); returns how many, or
 * 0 when no pending joiner is up (nothing to change). */
int algo_group_members_joining(const algo_group *next, const int *pending, const algo_env *env,
                               int *out);

/* Schedules fn(eng, ctx, algo_group_arg(w, gen), NULL) after env's
 * sync_timeout (a timeout of worker w's incarnation gen: the handler ignores
 * it when gen is no longer current). A failure goes to algo_env_fail
 * ("<method>: cannot schedule a timeout"). 0 or its code. */
int algo_group_timeout(algo_env *env, sim_handler fn, void *ctx, int w, uint32_t gen);

/* An event argument: worker w with incarnation gen. */
static inline uint64_t algo_group_arg(int w, uint32_t gen)
{
    return (uint64_t)(uint32_t)w | ((uint64_t)gen << 32);
}
static inline int algo_group_arg_w(uint64_t a) { return (int)(a & 0xffffffffu); }
static inline uint32_t algo_group_arg_gen(uint64_t a) { return (uint32_t)(a >> 32); }

#endif
