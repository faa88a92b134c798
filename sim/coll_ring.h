/* The closed form of a RING round (collective.h): private to
 * sim/collective.c. */
#ifndef DTSIM_SIM_COLL_RING_H
#define DTSIM_SIM_COLL_RING_H

#include "sim/network.h"

typedef struct coll_ring coll_ring;

/* A ring over n >= 2 ranks on hosts[] (rank r sends to rank r+1). NULL
 * when out of memory. */
coll_ring *coll_ring_create(int n, const int *hosts);
void coll_ring_destroy(coll_ring *f);
/* Rank enters `round` at `now` with a vector of `bytes` (before its sends). */
void coll_ring_enter(coll_ring *f, int64_t round, sim_time now, int rank, double bytes);
/* Where the rank's first message of the round records its flow. */
int *coll_ring_flow_slot(coll_ring *f, int rank);
/* After an enter's sends: 1 when every rank entered the round at this
 * instant and the network took the first step's flows back
 * (sim_net_bulk_withdraw); *dur is then the round's length. 0: the flows
 * run. */
int coll_ring_try(coll_ring *f, sim_net *net, sim_time *dur);
/* At the round's end: the network's counters for the round, the message
 * size and step count (each rank sent steps messages of msg bytes). */
void coll_ring_settle(coll_ring *f, sim_net *net, double *msg, int64_t *steps);
/* The rank g that entered the closed-form round last: the callbacks run
 * for g-1, g-2, ..., g+1 (mod n), then g (coll_ring.c). */
int coll_ring_last(const coll_ring *f);

#endif
