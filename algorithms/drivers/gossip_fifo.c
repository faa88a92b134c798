/* One connection per ordered pair of workers: worker i's messages to
 * worker j leave one after the other, each once the previous one has
 * arrived, as on the one TCP connection (or NCCL/MPI channel) that real
 * implementations hold per peer. Without it, a worker that starts step
 * t + 1 while its step t messages still drain (flow control allows one
 * step ahead) makes them share its links: after any perturbation every
 * link carries two steps at once, each gets half the rate, and the
 * steps of the whole ring stay slow for the rest of the run
 * (docs/network.md, "D-PSGD after a perturbation"). The emulated cluster
 * (tools/emucluster) shows real TCP recovering at once. */
#include "algorithms/drivers/gossip_impl.h"

#include <stdlib.h>

typedef struct gmsg {
    int dst;
    double bytes;
    sim_net_deliver fn;
    uint64_t arg;
} gmsg;

struct gfifo {
    gmsg *busy;  /* the message in flight per destination: nbusy */
    gmsg *q;     /* the messages waiting, in send order: nq */
    int nbusy, cap_busy, nq, cap_q;
};

static int grow(gmsg **a, int *cap, int need)
{
    if (need <= *cap)
        return 0;
    int c = *cap ? 2 * *cap : 4;
    gmsg *p = realloc(*a, sizeof *p * (size_t)c);
    if (!p)
        return -1;
    *a = p;
    *cap = c;
    return 0;
}

static void on_arrive(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes);

static int start(algo_gossip *g, int src, const gmsg *m)
{
    struct gfifo *f = &g->fifo[src];
    int b = 0;
    while (b < f->nbusy && f->busy[b].dst != m->dst)
        b++;
    if (b == f->nbusy && grow(&f->busy, &f->cap_busy, ++f->nbusy) < 0) {
        algo_gossip_fail(g, SIM_ENOMEM, "out of memory for a gossip message");
        return -1;
    }
    f->busy[b] = *m;
    return algo_env_send(g->env, src, m->dst, m->bytes, on_arrive, g, m->arg);
}

static void on_arrive(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    algo_gossip *g = ctx;
    struct gfifo *f = &g->fifo[src];
    int b = 0;
    while (b < f->nbusy && f->busy[b].dst != dst)
        b++;
    if (b == f->nbusy) {
        algo_gossip_fail(g, SIM_EINTERNAL, "a gossip message from no connection");
        return;
    }
    sim_net_deliver fn = f->busy[b].fn;
    int e = 0;
    while (e < f->nq && f->q[e].dst != dst)
        e++;
    if (e < f->nq) { /* the pair's next message leaves */
        gmsg m = f->q[e];
        for (int k = e; k + 1 < f->nq; k++)
            f->q[k] = f->q[k + 1];
        f->nq--;
        if (start(g, src, &m) < 0)
            return;
    } else {
        f->busy[b] = f->busy[--f->nbusy];
    }
    fn(eng, g, arg, src, dst, bytes);
}

int algo_gossip_send(algo_gossip *g, int src, int dst, double bytes, sim_net_deliver fn,
                     uint64_t arg)
{
    if (!g->fifo) {
        g->fifo = calloc((size_t)g->n, sizeof *g->fifo);
        if (!g->fifo) {
            algo_gossip_fail(g, SIM_ENOMEM, "out of memory for a gossip message");
            return -1;
        }
    }
    struct gfifo *f = &g->fifo[src];
    gmsg m = {.dst = dst, .bytes = bytes, .fn = fn, .arg = arg};
    for (int b = 0; b < f->nbusy; b++)
        if (f->busy[b].dst == dst) { /* behind the one in flight */
            if (grow(&f->q, &f->cap_q, f->nq + 1) < 0) {
                algo_gossip_fail(g, SIM_ENOMEM, "out of memory for a gossip message");
                return -1;
            }
            f->q[f->nq++] = m;
            return 0;
        }
    return start(g, src, &m);
}

void algo_gossip_fifo_free(algo_gossip *g)
{
    for (int i = 0; g->fifo && i < g->n; i++) {
        free(g->fifo[i].busy);
        free(g->fifo[i].q);
    }
    free(g->fifo);
    g->fifo = NULL;
}
