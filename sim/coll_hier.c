/* Hierarchical all-reduce (the HIER kind of collective.h), as Horovod's
 * hierarchical all-reduce and NCCL's two-level schemes do it: inside each
 * server a binomial-tree REDUCE of the full vector to the server's first
 * rank (its leader), a RING all-reduce of the full vector among the
 * leaders, then a binomial-tree BCAST inside each server. Built from three
 * kinds of sim_coll, so every cost comes from messages on sim_net.
 *
 * Flow of one round for rank r = s * p + i (server s, local rank i):
 * enter -> reduce[s] (local i); its done: i = 0 enters the ring (as rank s)
 * and i > 0 enters bcast[s] at once (waiting for the leader's vector);
 * the ring's done for s: the leader enters bcast[s]; bcast[s]'s done for i
 * is the composite's done for r. With one server the ring is skipped.
 *
 * On an ideal two-level network (per-rank links of latency a_i and
 * bandwidth B_i to a server switch, one interface per server of a_e, B_e
 * to a top switch, B_e <= B_i, p a power of two) a round takes
 *   2 log2(p) (2 a_i + S / B_i) + 2 (N - 1) (2 a_i + 2 a_e + S / (N B_e))
 * (tests/sim/test_collective.c). */
#include "sim/coll_hier.h"

#include <stdlib.h>

enum { PHASE_REDUCE = 0, PHASE_RING, PHASE_BCAST };

typedef struct hier_ctx {
    struct coll_hier *h;
    int server;         /* -1 for the ring */
    int phase;
} hier_ctx;

struct coll_hier {
    int n, per_node, servers;
    sim_coll **reduce, **bcast; /* one per server */
    sim_coll *ring;             /* among the leaders; NULL for one server */
    hier_ctx *ctx;              /* 2 per server + 1 */
    double *bytes;              /* per rank: the vector it entered with */
    sim_coll_done done;
    void *done_ctx;
    int failed;
    sim_err err;
};

static void fail(coll_hier *h, const sim_err *e)
{
    if (!h->failed) {
        h->failed = 1;
        h->err = *e;
    }
}

static void on_child_done(sim_engine *eng, void *ctx, int rank)
{
    hier_ctx *x = ctx;
    coll_hier *h = x->h;
    sim_err e = {0};
    if (h->failed)
        return;
    switch (x->phase) {
    case PHASE_REDUCE:
    {
        double bytes = h->bytes[x->server * h->per_node + rank];
        if (rank == 0 && h->ring) {
            if (sim_coll_enter(h->ring, x->server, bytes, &e) < 0)
                fail(h, &e);
        } else if (sim_coll_enter(h->bcast[x->server], rank, bytes, &e) < 0) {
            fail(h, &e);
        }
        break;
    }
    case PHASE_RING:
        if (sim_coll_enter(h->bcast[rank], 0, h->bytes[rank * h->per_node], &e) < 0)
            fail(h, &e);
        break;
    case PHASE_BCAST:
        if (h->done)
            h->done(eng, h->done_ctx, x->server * h->per_node + rank);
        break;
    }
}

void coll_hier_destroy(coll_hier *h)
{
    if (!h)
        return;
    for (int s = 0; s < h->servers; s++) {
        if (h->reduce)
            sim_coll_destroy(h->reduce[s]);
        if (h->bcast)
            sim_coll_destroy(h->bcast[s]);
    }
    sim_coll_destroy(h->ring);
    free(h->reduce);
    free(h->bcast);
    free(h->ctx);
    free(h->bytes);
    free(h);
}

coll_hier *coll_hier_create(sim_net *net, const sim_coll_desc *d, const int *hosts,
                            sim_err *err)
{
    if (d->per_node < 1 || d->n % d->per_node != 0) {
        sim_err_set(err, SIM_EINPUT,
                    "collective: hierarchical: %d ranks are not whole servers of %d", d->n,
                    d->per_node);
        return NULL;
    }
    coll_hier *h = calloc(1, sizeof *h);
    int p = d->per_node, ns = d->n / d->per_node;
    int *sub = malloc(sizeof *sub * (size_t)(p > ns ? p : ns));
    if (!h || !sub)
        goto nomem;
    h->n = d->n;
    h->per_node = p;
    h->servers = ns;
    h->done = d->done;
    h->done_ctx = d->ctx;
    h->reduce = calloc((size_t)ns, sizeof *h->reduce);
    h->bcast = calloc((size_t)ns, sizeof *h->bcast);
    h->ctx = calloc(2 * (size_t)ns + 1, sizeof *h->ctx);
    h->bytes = calloc((size_t)d->n, sizeof *h->bytes);
    if (!h->reduce || !h->bcast || !h->ctx || !h->bytes)
        goto nomem;
    for (int s = 0; s < ns; s++) {
        for (int i = 0; i < p; i++)
            sub[i] = hosts[s * p + i];
        h->ctx[2 * s] = (hier_ctx){h, s, PHASE_REDUCE};
        h->ctx[2 * s + 1] = (hier_ctx){h, s, PHASE_BCAST};
        sim_coll_desc r = {.kind = SIM_COLL_REDUCE, .n = p, .hosts = sub,
                           .done = on_child_done, .ctx = &h->ctx[2 * s]};
        h->reduce[s] = sim_coll_create(net, &r, err);
        if (!h->reduce[s])
            goto fail;
        sim_coll_desc b = r;
        b.kind = SIM_COLL_BCAST;
        b.ctx = &h->ctx[2 * s + 1];
        h->bcast[s] = sim_coll_create(net, &b, err);
        if (!h->bcast[s])
            goto fail;
    }
    if (ns > 1) {
        for (int s = 0; s < ns; s++)
            sub[s] = hosts[s * p];
        h->ctx[2 * ns] = (hier_ctx){h, -1, PHASE_RING};
        sim_coll_desc g = {.kind = SIM_COLL_RING, .n = ns, .hosts = sub,
                           .done = on_child_done, .ctx = &h->ctx[2 * ns]};
        h->ring = sim_coll_create(net, &g, err);
        if (!h->ring)
            goto fail;
    }
    free(sub);
    return h;

nomem:
    sim_err_set(err, SIM_ENOMEM, "collective: out of memory");
fail:
    free(sub);
    coll_hier_destroy(h);
    return NULL;
}

int coll_hier_enter(coll_hier *h, int rank, double bytes, sim_err *err)
{
    if (h->failed) {
        if (err)
            *err = h->err;
        return h->err.code;
    }
    h->bytes[rank] = bytes;
    return sim_coll_enter(h->reduce[rank / h->per_node], rank % h->per_node, bytes, err);
}
