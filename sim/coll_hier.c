/* Hierarchical all-reduce (the HIER kind of collective.h), as Horovod's
 * hierarchical all-reduce and NCCL's two-level schemes do it: inside each
 * server a binomial-tree REDUCE of the full vector to the server's first
 * rank (its leader), a RING all-reduce of the full vector among the
 * leaders, then a binomial-tree BCAST inside each server. Built from three
 * kinds of sim_coll, so every cost comes from messages on sim_net.
 *
 * Servers: without a host list the ranks s*p .. s*p + p - 1 share server
 * s (p = per_node divides n). With a host list (a group of some of the
 * workers, algorithms/group.c) the server of rank r is hosts[r] / p, as on
 * the hierarchical networks (host h = server * p + local); the ranks' servers must
 * ascend (the ranks of one server are consecutive), and a server may hold fewer than p of them
 * (a server none of them is on takes no part). With whole servers and
 * ranks on hosts 0 .. n - 1 both give the same servers.
 *
 * Flow of one round for rank r = off[s] + i (server s, local rank i):
 * enter -> reduce[s] (local i); its done: i = 0 enters the ring (as rank s)
 * and i > 0 enters bcast[s] at once (waiting for the leader's vector);
 * the ring's done for s: the leader enters bcast[s]; bcast[s]'s done for i
 * is the composite's done for r. With one server the ring is skipped; a
 * server of one rank has a reduce and a bcast of one rank, done at once.
 *
 * With one server the ring is skipped: that is the intra-server average
 * hierarchical_local_sgd takes (algorithms/drivers/sync.c), the same
 * messages as this one's intra-server part.
 *
 * On an ideal two-level network (per-rank links of latency a_i and
 * bandwidth B_i to a server switch, one interface per server of a_e, B_e
 * to a top switch, B_e <= B_i, any p) a round whose ranks enter together
 * takes
 *   2 ceil(log2 p) (2 a_i + S / B_i) + 2 (N - 1) (2 a_i + 2 a_e + S / (N B_e))
 * (tests/sim/test_collective.c; docs/algorithms.md 1.8). */
#include "sim/coll_hier.h"

#include <stdlib.h>

enum { PHASE_REDUCE = 0, PHASE_RING, PHASE_BCAST };

typedef struct hier_ctx {
    struct coll_hier *h;
    int server;         /* -1 for the ring */
    int phase;
} hier_ctx;

struct coll_hier {
    int n, servers;
    int *off;                   /* servers + 1: server s holds ranks off[s] .. off[s+1]-1 */
    int *server_of;             /* per rank */
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
        double bytes = h->bytes[h->off[x->server] + rank];
        if (rank == 0 && h->ring) {
            if (sim_coll_enter(h->ring, x->server, bytes, &e) < 0)
                fail(h, &e);
        } else if (sim_coll_enter(h->bcast[x->server], rank, bytes, &e) < 0) {
            fail(h, &e);
        }
        break;
    }
    case PHASE_RING:
        if (sim_coll_enter(h->bcast[rank], 0, h->bytes[h->off[rank]], &e) < 0)
            fail(h, &e);
        break;
    case PHASE_BCAST:
        if (h->done)
            h->done(eng, h->done_ctx, h->off[x->server] + rank);
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
    free(h->off);
    free(h->server_of);
    free(h);
}

int coll_hier_busy(const coll_hier *h)
{
    if (!h)
        return 0;
    for (int s = 0; s < h->servers; s++)
        if ((h->reduce && sim_coll_busy(h->reduce[s])) || (h->bcast && sim_coll_busy(h->bcast[s])))
            return 1;
    return sim_coll_busy(h->ring);
}

coll_hier *coll_hier_create(sim_net *net, const sim_coll_desc *d, const int *hosts,
                            sim_err *err)
{
    int p = d->per_node;
    if (p < 1 || (!d->hosts && d->n % p != 0)) {
        sim_err_set(err, SIM_EINPUT,
                    "collective: hierarchical: %d ranks are not whole servers of %d", d->n, p);
        return NULL;
    }
    /* servers: runs of ranks on one server (host / p), in ascending order */
    int ns = 0;
    for (int r = 0; r < d->n; r++) {
        if (r > 0 && hosts[r] / p < hosts[r - 1] / p) {
            sim_err_set(err, SIM_EINPUT,
                        "collective: hierarchical: rank %d is on server %d, below rank %d's "
                        "server %d (the ranks' servers must ascend)",
                        r, hosts[r] / p, r - 1, hosts[r - 1] / p);
            return NULL;
        }
        ns += r == 0 || hosts[r] / p != hosts[r - 1] / p;
    }
    coll_hier *h = calloc(1, sizeof *h);
    int *sub = malloc(sizeof *sub * (size_t)(p > ns ? p : ns));
    if (!h || !sub)
        goto nomem;
    h->n = d->n;
    h->servers = ns;
    h->done = d->done;
    h->done_ctx = d->ctx;
    h->reduce = calloc((size_t)ns, sizeof *h->reduce);
    h->bcast = calloc((size_t)ns, sizeof *h->bcast);
    h->ctx = calloc(2 * (size_t)ns + 1, sizeof *h->ctx);
    h->bytes = calloc((size_t)d->n, sizeof *h->bytes);
    h->off = malloc(sizeof *h->off * ((size_t)ns + 1));
    h->server_of = malloc(sizeof *h->server_of * (size_t)d->n);
    if (!h->reduce || !h->bcast || !h->ctx || !h->bytes || !h->off || !h->server_of)
        goto nomem;
    for (int r = 0, s = -1; r < d->n; r++) {
        if (r == 0 || hosts[r] / p != hosts[r - 1] / p)
            h->off[++s] = r;
        h->server_of[r] = s;
    }
    h->off[ns] = d->n;
    for (int s = 0; s < ns; s++) {
        int m = h->off[s + 1] - h->off[s];
        for (int i = 0; i < m; i++)
            sub[i] = hosts[h->off[s] + i];
        h->ctx[2 * s] = (hier_ctx){h, s, PHASE_REDUCE};
        h->ctx[2 * s + 1] = (hier_ctx){h, s, PHASE_BCAST};
        sim_coll_desc r = {.kind = SIM_COLL_REDUCE, .n = m, .hosts = sub,
                           .no_launch = 1, .done = on_child_done, .ctx = &h->ctx[2 * s]};
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
            sub[s] = hosts[h->off[s]];
        h->ctx[2 * ns] = (hier_ctx){h, -1, PHASE_RING};
        sim_coll_desc g = {.kind = SIM_COLL_RING, .n = ns, .hosts = sub,
                           .no_launch = 1, .flows_only = d->flows_only,
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
    int s = h->server_of[rank];
    return sim_coll_enter(h->reduce[s], rank - h->off[s], bytes, err);
}
