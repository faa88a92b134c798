/* The prediction side of the emulated cluster (tools/emucluster,
 * docs/network.md "Validation on an emulated cluster"): dtsim's flow model
 * (sim/network.c, max-min fair sharing) run on the emulated cluster's
 * topology, a star of n hosts through one switch (the bridge), with the
 * traffic patterns that tools/emucluster/peer.py sends over real TCP:
 *   p2p        host 0 sends S bytes to host 1;
 *   incast     hosts 1..n-1 send S bytes each to host 0 at once (a
 *              parameter server's round); every arrival is printed;
 *   allreduce  ring all-reduce of S bytes: 2(n-1) steps, in each host i
 *              sends S/n to i+1 and starts the next step when the chunk
 *              from i-1 has arrived;
 *   gossip     R rounds; in each a host sends S to both ring neighbours at
 *              once and starts its next round when both neighbours'
 *              messages of this round have arrived (its own sends may
 *              still be draining). --delay K,D holds host 0 back D seconds
 *              before its round K (a perturbation).
 * The links are rate bits/s with dtsim's transport parameters (`[network]`
 * efficiency, message_overhead: sim_net_desc): --efficiency the payload's
 * share of the rate, --overhead a fixed time a message waits at its
 * sender before it starts; --latency is each of the two links' latency. --fifo: messages from one host to another leave one after the
 * other, as on one TCP connection (the next starts when the previous has
 * arrived); without it every message is a flow of its own and those to
 * the same host share the link.
 * Prints "time SECONDS" (the pattern's end: the last arrival), then the
 * arrivals ("arrive SRC DST SECONDS", incast) or the rounds' ends ("round
 * K SECONDS", gossip: the last arrival of round K). Exit 2 on bad usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/network.h"
#include "topology/physnet.h"

#define MAX_HOSTS 256
#define MAX_ROUNDS 1000
#define MAX_QUEUE 4

typedef struct pred {
    sim_net *net;
    sim_engine *eng;
    const char *pattern;
    int n, rounds, fifo, delay_round, failed;
    double bytes, overhead, delay;
    int step[MAX_HOSTS];       /* allreduce step, gossip round in progress */
    int got[MAX_HOSTS][2];     /* arrivals of the current step/round (by parity) */
    double round_end[MAX_ROUNDS];
    double end;
    /* --fifo: per (src, dst) pair, a message in flight and the queued ones */
    int busy[MAX_HOSTS][3];    /* to i-1, i+1 (ring) or the one destination */
    int nq[MAX_HOSTS][3];
    uint64_t q[MAX_HOSTS][3][MAX_QUEUE];
} pred;

static void on_arrive(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes);

static int slot_of(const pred *p, int src, int dst)
{
    if (dst == (src + p->n - 1) % p->n)
        return 0;
    if (dst == (src + 1) % p->n)
        return 1;
    return 2;
}

static void start_flow(pred *p, int src, int dst, uint64_t arg)
{
    sim_err err;
    double b = strcmp(p->pattern, "allreduce") == 0 ? p->bytes / p->n : p->bytes;
    if (sim_net_send(p->net, src, dst, b, on_arrive, p, arg, &err)) {
        fprintf(stderr, "emu_predict: %s\n", err.msg);
        p->failed = 1;
    }
}

/* The message leaves its sender: a flow now (the overhead is the model's), or
 * queued behind the pair's message in flight (--fifo). */
static void on_leave(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    pred *p = ctx;
    int src = (int)(arg >> 48 & 0xff), dst = (int)(arg >> 40 & 0xff);
    int s = slot_of(p, src, dst);
    if (p->fifo && p->busy[src][s]) {
        if (p->nq[src][s] == MAX_QUEUE) {
            fprintf(stderr, "emu_predict: more than %d messages queued\n", MAX_QUEUE);
            p->failed = 1;
            return;
        }
        p->q[src][s][p->nq[src][s]++] = arg;
        return;
    }
    p->busy[src][s] = 1;
    start_flow(p, src, dst, arg);
}

/* arg: src (8 bits) << 48 | dst (8 bits) << 40 | step or round */
static void send_msg(pred *p, int src, int dst, int k, double wait)
{
    uint64_t arg = (uint64_t)src << 48 | (uint64_t)dst << 40 | (uint64_t)k;
    sim_engine_schedule(p->eng, sim_time_from_s(wait), on_leave, p, arg, NULL, NULL);
}

static void gossip_round(pred *p, int i)
{
    int k = p->step[i];
    if (k >= p->rounds)
        return;
    double wait = (i == 0 && k == p->delay_round) ? p->delay : 0;
    send_msg(p, i, (i + p->n - 1) % p->n, k, wait);
    if (p->n > 2)
        send_msg(p, i, (i + 1) % p->n, k, wait);
}

static void on_arrive(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    (void)bytes;
    pred *p = ctx;
    double t = sim_time_to_s(sim_engine_now(eng));
    int k = (int)(arg & 0xffffffffu);
    if (t > p->end)
        p->end = t;
    int s = slot_of(p, src, dst);
    p->busy[src][s] = 0;
    if (p->nq[src][s] > 0) { /* --fifo: the pair's next message starts */
        uint64_t next = p->q[src][s][0];
        memmove(p->q[src][s], p->q[src][s] + 1, sizeof next * (size_t)--p->nq[src][s]);
        p->busy[src][s] = 1;
        start_flow(p, src, dst, next);
    }
    if (strcmp(p->pattern, "incast") == 0) {
        printf("arrive %d %d %.9f\n", src, dst, t);
    } else if (strcmp(p->pattern, "allreduce") == 0) {
        if (k != p->step[dst])
            p->failed = 1; /* impossible: a chunk runs ahead of its step */
        if (++p->step[dst] < 2 * (p->n - 1))
            send_msg(p, dst, (dst + 1) % p->n, p->step[dst], 0);
    } else if (strcmp(p->pattern, "gossip") == 0) {
        if (t > p->round_end[k])
            p->round_end[k] = t;
        int need = p->n > 2 ? 2 : 1;
        if (++p->got[dst][k & 1] == need + 0 && k == p->step[dst]) {
            /* a neighbour may be one round ahead: its message waits in got[] */
            p->got[dst][k & 1] = 0;
            p->step[dst]++;
            gossip_round(p, dst);
            if (p->got[dst][(k + 1) & 1] == need && p->step[dst] == k + 1) {
                p->got[dst][(k + 1) & 1] = 0;
                p->step[dst]++;
                gossip_round(p, dst);
            }
        }
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: emu_predict p2p|incast|allreduce|gossip HOSTS BYTES RATE_BITS "
                    "[--latency S] [--efficiency E] [--overhead S] [--rounds R] "
                    "[--delay K,S] [--fifo] [--sharing fair|none]\n");
    return 2;
}

static int parse_num(const char *s, double lo, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end == s || *end || !(*v >= lo);
}

int main(int argc, char **argv)
{
    static pred p;
    if (argc < 5)
        return usage();
    p.pattern = argv[1];
    if (strcmp(p.pattern, "p2p") && strcmp(p.pattern, "incast") &&
        strcmp(p.pattern, "allreduce") && strcmp(p.pattern, "gossip"))
        return usage();
    double n, rate, lat = 0, eff = 1, rounds = 1;
    if (parse_num(argv[2], 2, &n) || n > MAX_HOSTS || parse_num(argv[3], 0, &p.bytes) ||
        parse_num(argv[4], 1, &rate))
        return usage();
    p.n = (int)n;
    p.delay_round = -1;
    sim_sharing sharing = SIM_SHARE_FAIR;
    for (int a = 5; a < argc; a++) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (strcmp(o, "--fifo") == 0) {
            p.fifo = 1;
            continue;
        }
        if (!v)
            return usage();
        a++;
        int bad = 0;
        if (strcmp(o, "--latency") == 0)
            bad = parse_num(v, 0, &lat);
        else if (strcmp(o, "--efficiency") == 0)
            bad = parse_num(v, 1e-9, &eff) || eff > 1;
        else if (strcmp(o, "--overhead") == 0)
            bad = parse_num(v, 0, &p.overhead);
        else if (strcmp(o, "--rounds") == 0)
            bad = parse_num(v, 1, &rounds) || rounds > MAX_ROUNDS;
        else if (strcmp(o, "--delay") == 0)
            bad = sscanf(v, "%d,%lf", &p.delay_round, &p.delay) != 2 || p.delay < 0;
        else if (strcmp(o, "--sharing") == 0 && (!strcmp(v, "fair") || !strcmp(v, "none")))
            sharing = strcmp(v, "none") == 0 ? SIM_SHARE_NONE : SIM_SHARE_FAIR;
        else
            bad = 1;
        if (bad)
            return usage();
    }
    p.rounds = (int)rounds;
    sim_err err;
    topo_physnet pn;
    if (topo_physnet_build(&pn, "star", p.n, &err)) {
        fprintf(stderr, "emu_predict: %s\n", err.msg);
        return 1;
    }
    p.eng = sim_engine_create(1024);
    sim_net_desc d;
    topo_physnet_desc(&pn, lat, rate / 8, sharing, &d);
    d.efficiency = eff;
    d.message_overhead = p.overhead;
    p.net = p.eng ? sim_net_create(p.eng, &d, &err) : NULL;
    if (!p.net) {
        fprintf(stderr, "emu_predict: %s\n", p.eng ? err.msg : "out of memory");
        return 1;
    }
    if (strcmp(p.pattern, "p2p") == 0)
        send_msg(&p, 0, 1, 0, 0);
    else if (strcmp(p.pattern, "incast") == 0)
        for (int i = 1; i < p.n; i++)
            send_msg(&p, i, 0, 0, 0);
    else if (strcmp(p.pattern, "allreduce") == 0)
        for (int i = 0; i < p.n; i++)
            send_msg(&p, i, (i + 1) % p.n, 0, 0);
    else
        for (int i = 0; i < p.n; i++)
            gossip_round(&p, i);
    while (!p.failed && sim_engine_step(p.eng))
        ;
    printf("time %.9f\n", p.end);
    if (strcmp(p.pattern, "gossip") == 0)
        for (int k = 0; k < p.rounds; k++)
            printf("round %d %.9f\n", k, p.round_end[k]);
    sim_net_destroy(p.net);
    sim_engine_destroy(p.eng);
    topo_physnet_release(&pn);
    return p.failed ? 1 : 0;
}
