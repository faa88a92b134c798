/* Collectives built from point-to-point messages on sim_net (a RING round
 * alone on a uniform network is charged in closed form with the very
 * times its messages would give: see the end). One sim_coll object serves one group of ranks and is
 * reused round after round: every rank calls sim_coll_enter once per round,
 * whenever it is ready (stragglers enter late); the rank's done callback
 * runs when that rank has what it needs (a worker waits only for that).
 * Ranks may be at most one round apart, which every blocking collective
 * guarantees.
 *
 * Kinds:
 *  RING       all-reduce: reduce-scatter then all-gather, 2(n-1) steps,
 *             each rank sending bytes/n to rank+1.
 *  TREE       binomial-tree all-reduce: reduce to rank 0, then broadcast;
 *             each message is the full vector.
 *  PS         parameter server on host ps_host: every rank pushes bytes,
 *             the server waits for all pushes, then every rank pulls bytes.
 *  ALLGATHER  ring all-gather: each rank contributes its own bytes (ranks
 *             may differ); n-1 steps, in step k rank r forwards the block
 *             of rank (r - k) mod n, so each message has the size its
 *             originating rank entered with.
 *  NEIGHBOR   each rank sends bytes to each of its neighbours (directed
 *             lists given at creation; may change per round with
 *             sim_coll_set_neighbors) and is done when it has received from
 *             all its in-neighbours and its own sends have drained.
 *  REDUCE     the reduce half of TREE: binomial tree to rank 0, full
 *             vectors, a parent taking one child's vector at a time; a
 *             rank is done when its message to its parent has arrived
 *             (rank 0: when all its children's have).
 *  BCAST      the broadcast half of TREE: rank 0 sends the full vector down
 *             the binomial tree, one forward in flight per rank; a rank is
 *             done when it has the vector and its forwards have arrived.
 *             REDUCE then BCAST on one server (HIER with one server) is the
 *             one intra-server average: ceil(log2 n) levels each.
 *  HIER       hierarchical all-reduce over servers of per_node ranks (ranks
 *             s*per_node .. s*per_node + per_node - 1 share server s; with
 *             a host list, rank r is on server hosts[r] / per_node, the
 *             servers ascending with r, and a server may hold fewer): a
 *             REDUCE inside each server to its first rank, a RING all-reduce
 *             among those first ranks (across the servers' interfaces), a
 *             BCAST inside each server (sim/coll_hier.c).
 *
 * Ranks map to hosts through hosts[] (rank r runs on host hosts[r]).
 *
 * Launch: with the network's collective_overhead c > 0 (sim_net_desc), a
 * rank of RING, TREE, ALLGATHER, REDUCE, BCAST or HIER starts its round c
 * after its sim_coll_enter (one launch per call: HIER's parts pay none);
 * PS and NEIGHBOR are point-to-point exchanges and pay none (their
 * messages pay message_overhead).
 *
 * Closed form: a RING round whose n ranks all enter at one instant, on a
 * network where its messages are alone on their links with equal routes
 * and nothing else is in flight or due before the round would end, is
 * charged as one event (sim/coll_ring.c): every time, byte and callback
 * order is the one its 2n(n-1) flows give, to the nanosecond and the bit.
 * Anything else (stragglers, other traffic, unequal links, faults) runs
 * the flows. flows_only = 1 turns it off (the reference for tests). */
#ifndef DTSIM_SIM_COLLECTIVE_H
#define DTSIM_SIM_COLLECTIVE_H

#include "sim/network.h"

typedef struct sim_coll sim_coll;

typedef enum sim_coll_kind {
    SIM_COLL_RING = 0,
    SIM_COLL_TREE,
    SIM_COLL_PS,
    SIM_COLL_ALLGATHER,
    SIM_COLL_NEIGHBOR,
    SIM_COLL_REDUCE,
    SIM_COLL_BCAST,
    SIM_COLL_HIER
} sim_coll_kind;

/* Runs when rank has completed the current round. */
typedef void (*sim_coll_done)(sim_engine *eng, void *ctx, int rank);

typedef struct sim_coll_desc {
    sim_coll_kind kind;
    int n;                 /* ranks */
    const int *hosts;      /* n host ids; NULL = identity */
    int ps_host;           /* server host for PS */
    /* NEIGHBOR: out-neighbour lists (rank r sends to nbr[nbr_off[r] .. nbr_off[r+1]-1]);
     * in-neighbours are derived. Copied. */
    const int *nbr_off;
    const int *nbr;
    int per_node;          /* HIER: ranks per server (divides n without hosts) */
    int no_launch;         /* 1: no collective_overhead (the parts of a composite) */
    int flows_only;        /* 1: never the closed form of a RING round (below) */
    sim_coll_done done;
    void *ctx;
} sim_coll_desc;

sim_coll *sim_coll_create(sim_net *net, const sim_coll_desc *desc, sim_err *err);
void sim_coll_destroy(sim_coll *c);
/* Rank enters the current round with a vector of `bytes` (the full vector
 * for all-reduce kinds, the per-rank contribution for ALLGATHER and
 * NEIGHBOR). All ranks must pass the same bytes in one round, except for
 * ALLGATHER and NEIGHBOR. Returns 0 or a negative code. */
int sim_coll_enter(sim_coll *c, int rank, double bytes, sim_err *err);
/* Bytes rank has handed to the network as a sender: over all rounds, and in
 * its current round (its last one when idle; reset when it enters). These
 * count payloads also between ranks on one host, which sim_net does not
 * count. The server of PS is no rank: its pulls are not counted here. */
double sim_coll_bytes_sent(const sim_coll *c, int rank);
double sim_coll_round_bytes_sent(const sim_coll *c, int rank);
/* 1 while c has a message or an event of its own not yet arrived (a
 * callback of c may still run): only then is destroying it unsafe. */
int sim_coll_busy(const sim_coll *c);
/* Collectives made and not yet destroyed in this process (a diagnostic:
 * the memory of the methods that make them as workers crash). */
int64_t sim_coll_live(void);
/* NEIGHBOR only: replace the lists before the next round's first enter. */
int sim_coll_set_neighbors(sim_coll *c, const int *nbr_off, const int *nbr, sim_err *err);

#endif
