/* The closed form of a RING round (collective.h, sim/net_bulk.c).
 *
 * A round qualifies when all n ranks enter at one instant with the same
 * vector: each of its 2(n-1) steps is then n messages of bytes/n sent
 * together, each rank's next send waiting for its receive and its own
 * delivery, which arrive together. When the network says those messages
 * are alone on equal routes (sim_net_bulk_step: step time T) and takes
 * the first step's flows back (sim_net_bulk_withdraw: nothing else can
 * happen before the round ends), the round ends at 2(n-1) T.
 *
 * Callback order. The flows deliver a step's messages in the order they
 * were sent, and at the delivery of message m (rank m to m+1) the
 * receiver m+1 goes on first if its own message was already delivered,
 * then the sender m if its incoming one was: rank r goes on at
 * key(r) = max(key(r-1) . 0, key(r) . 1), keys compared lexicographically
 * (the previous step's position, then the digit). Unrolled over k steps,
 * key_k(r) is the latest-entered rank g reachable as r - z (z <= k), then
 * the largest digit string 1^(k-z) 0^z: the smallest such z. After
 * k >= n-1 steps every rank reaches g, and z = (r - g) mod n orders the
 * ranks, largest z first. The completions follow the same rule one step
 * later, so the callbacks run for g-1, g-2, ..., g+1 and then g: at the
 * step's first delivery nobody completes, each later one completes one
 * rank, and the last (message g -> g+1) two, the receiver g+1 first. */
#include "sim/coll_ring.h"

#include <stdlib.h>

struct coll_ring {
    int n;
    int *src, *dst;  /* hosts of rank r and of rank r+1 */
    int *flow;       /* each rank's first-step flow in the current round */
    int64_t round;   /* the round being counted, -1 none */
    sim_time t;      /* the instant its enters came at */
    int count;       /* ranks entered at t */
    int same;        /* 1 while they all brought the same bytes */
    double bytes;
    int last;        /* the last rank to enter */
    int counted;     /* the withdrawn first step had counted its sends */
    int engaged_last; /* `last` of the round in closed form (enters go on) */
};

coll_ring *coll_ring_create(int n, const int *hosts)
{
    coll_ring *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->n = n;
    f->round = -1;
    f->src = malloc(sizeof *f->src * (size_t)n);
    f->dst = malloc(sizeof *f->dst * (size_t)n);
    f->flow = malloc(sizeof *f->flow * (size_t)n);
    if (!f->src || !f->dst || !f->flow) {
        coll_ring_destroy(f);
        return NULL;
    }
    for (int r = 0; r < n; r++) {
        f->src[r] = hosts[r];
        f->dst[r] = hosts[(r + 1) % n];
    }
    return f;
}

void coll_ring_destroy(coll_ring *f)
{
    if (!f)
        return;
    free(f->src);
    free(f->dst);
    free(f->flow);
    free(f);
}

void coll_ring_enter(coll_ring *f, int64_t round, sim_time now, int rank, double bytes)
{
    if (round != f->round || now != f->t) {
        f->round = round;
        f->t = now;
        f->count = 0;
        f->same = 1;
        f->bytes = bytes;
    }
    f->same &= bytes == f->bytes;
    f->count++;
    f->last = rank;
    f->flow[rank] = -1;
}

int *coll_ring_flow_slot(coll_ring *f, int rank) { return &f->flow[rank]; }

static int64_t ring_steps(const coll_ring *f) { return 2 * (int64_t)(f->n - 1); }

int coll_ring_try(coll_ring *f, sim_net *net, sim_time *dur)
{
    if (!f->same || f->count != f->n)
        return 0;
    for (int r = 0; r < f->n; r++)
        if (f->flow[r] < 0)
            return 0;
    sim_time step;
    int64_t steps = ring_steps(f);
    if (!sim_net_bulk_step(net, f->src, f->dst, f->n, f->bytes / f->n, &step) ||
        step > (SIM_TIME_MAX - f->t) / steps / 2)
        return 0;
    *dur = step * steps;
    if (!sim_net_bulk_withdraw(net, f->flow, f->n, f->t + *dur, &f->counted))
        return 0;
    f->engaged_last = f->last;
    return 1;
}

void coll_ring_settle(coll_ring *f, sim_net *net, double *msg, int64_t *steps)
{
    *msg = f->bytes / f->n;
    *steps = ring_steps(f);
    sim_net_bulk_account(net, f->src, f->dst, f->n, *msg, *steps - f->counted, *steps);
}

int coll_ring_last(const coll_ring *f) { return f->engaged_last; }
