/* Private to the collectives (collective.c, coll_nbr.c): a rank's state,
 * the neighbour lists of a NEIGHBOR collective and the collective itself,
 * whose invariants collective.c's opening comment states. */
#ifndef DTSIM_SIM_COLL_IMPL_H
#define DTSIM_SIM_COLL_IMPL_H

#include "sim/coll_hier.h"
#include "sim/coll_ring.h"
#include "sim/collective.h"

typedef struct coll_rank {
    int64_t rounds;  /* rounds entered */
    int state;
    double bytes;    /* this round's vector */
    int sent;        /* own messages sent this round */
    int delivered;   /* own messages delivered this round */
    int up_done;     /* tree: reduction sent (rank 0: complete); ps: pushed */
    int down_sent;   /* tree: broadcast forwarded */
    int recv[2];     /* ring/allgather/neighbor messages, tree reduce messages */
    int down[2];     /* tree broadcast / PS pull received */
    int taking[2];   /* REDUCE: a child's vector of that round parity in flight to it */
    double bytes_round; /* bytes sent in the current (or last) round */
    double bytes_total; /* bytes sent over all rounds */
} coll_rank;

typedef struct nbr_lists {
    int *off, *nbr, *in_deg;
    int cap_nbr;
    uint64_t version;
} nbr_lists;

struct sim_coll {
    sim_net *net;
    sim_coll_kind kind;
    int n;
    int *hosts;
    int ps_host;
    sim_coll_done done;
    void *ctx;
    coll_rank *rank;
    int ps_pushes[2];
    double ps_bytes[2];
    double *ag_bytes;      /* ALLGATHER: 2 x n, each rank's block per round parity */
    nbr_lists slot[2];     /* lists in force for each round parity */
    nbr_lists pending;
    int64_t max_round;     /* highest round any rank has entered, -1 none */
    coll_hier *hier;       /* HIER: the composite doing the work */
    coll_ring *fast;       /* RING: its closed form, NULL when flows_only */
    int ring_next;         /* closed form: the next callback's place in the order */
    sim_time launch;       /* ns from a rank's enter to its start (collective_overhead) */
    int failed;
    sim_err err;           /* sticky failure from inside an event */
    int64_t inflight;      /* its messages and events not yet arrived */
};

/* Neighbour lists (coll_nbr.c). */
void coll_lists_release(nbr_lists *L);
/* Copies out-lists into L (buffers reused) and derives in-degrees. */
int coll_lists_set(const sim_coll *c, nbr_lists *L, const int *off, const int *nbr,
                   sim_err *err);
/* A route between ranks a and b (rank n: the parameter server's host). */
int coll_check_route(sim_coll *c, int a, int b, sim_err *err);
/* A route for every neighbour pair of L. */
int coll_check_nbr_routes(sim_coll *c, const nbr_lists *L, sim_err *err);
/* First enter of round k: its lists are the newest ones set (the pending
 * ones after a set_neighbors, else those of round k-1). */
int coll_lists_install(sim_coll *c, int64_t k, sim_err *err);

#endif
