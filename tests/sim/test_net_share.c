/* Max-min sharing (sim/net_share.c): the incremental solver against the
 * from-scratch progressive filling (sim_net_flow_rates_reference) and the
 * reference solver (full_solve = 1) on hundreds of random start/end
 * sequences on star, ring, torus and fat-tree networks, with equal and with
 * random bandwidths; closed forms (k flows into one link: alpha + kS/B,
 * staggered sizes); one solve per instant; locality of the re-solve. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/network.h"
#include "topology/physnet.h"

#define MAXS 160

typedef struct scen_send {
    sim_time at;
    int src, dst;
    double bytes;
} scen_send;

typedef struct scen {
    sim_net *net;
    const scen_send *s;
    sim_time t[MAXS];
    int n_del;
} scen;

static void on_del(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    (void)src;
    (void)dst;
    (void)bytes;
    scen *c = ctx;
    c->t[arg] = sim_engine_now(eng);
    c->n_del++;
}

static void on_send(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    scen *c = ctx;
    const scen_send *s = &c->s[arg];
    sim_err err;
    cr_assert_eq(sim_net_send(c->net, s->src, s->dst, s->bytes, on_del, c, arg, &err), 0, "%s",
                 err.msg);
}

static uint64_t rnd(uint64_t *st)
{
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return *st >> 33;
}

/* A network of the given shape; random_bw: each edge 1..4 GB/s at random. */
static sim_net *mk_net(sim_engine *eng, const char *spec, int hosts, int random_bw, int full,
                       uint64_t seed, int *n_hosts)
{
    topo_physnet pn;
    sim_err err;
    cr_assert_eq(topo_physnet_build(&pn, spec, hosts, &err), 0, "%s", err.msg);
    sim_net_desc d;
    topo_physnet_desc(&pn, 1e-6, 1.25e9, SIM_SHARE_FAIR, &d);
    d.full_solve = full;
    int m = (int)igraph_ecount(&pn.graph);
    double *bw = malloc(sizeof *bw * (size_t)(m ? m : 1));
    uint64_t st = seed * 7919 + 1;
    for (int e = 0; e < m; e++)
        bw[e] = 1e9 * (double)(1 + rnd(&st) % 4) + (double)(rnd(&st) % 1000) * 1e5;
    if (random_bw)
        d.bandwidth = bw;
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    *n_hosts = pn.n_hosts;
    free(bw);
    topo_physnet_release(&pn);
    return net;
}

/* n sends between random hosts; half of them on a coarse grid of instants
 * (many starts at once), the rest at random nanoseconds. */
static int gen_sends(scen_send *s, int n, int n_hosts, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < n; i++) {
        s[i].src = (int)(rnd(&st) % (uint64_t)n_hosts);
        do
            s[i].dst = (int)(rnd(&st) % (uint64_t)n_hosts);
        while (s[i].dst == s[i].src);
        s[i].bytes = 1e4 * (double)(1 + rnd(&st) % 100);
        s[i].at = rnd(&st) % 2 ? (sim_time)(rnd(&st) % 8) * 200000
                               : (sim_time)(rnd(&st) % 2000000);
    }
    return n;
}

/* Runs one sequence; check: after every event, the solver's rates against
 * the from-scratch reference. Returns the largest relative difference. */
static double run_scen(const char *spec, int hosts, int random_bw, int full, uint64_t seed,
                       int check, scen *c, uint64_t *resolved)
{
    static scen_send sends[MAXS];
    sim_engine *eng = sim_engine_create(0);
    int nh;
    memset(c, 0, sizeof *c);
    c->net = mk_net(eng, spec, hosts, random_bw, full, seed, &nh);
    c->s = sends;
    int n = gen_sends(sends, 40 + (int)(seed % 80), nh, seed);
    for (int i = 0; i < n; i++)
        sim_engine_schedule(eng, sends[i].at, on_send, c, (uint64_t)i, NULL, NULL);
    double worst = 0.0;
    double a[MAXS], b[MAXS];
    while (sim_engine_step(eng)) {
        if (!check)
            continue;
        int ka = sim_net_flow_rates(c->net, a, MAXS);
        int kb = sim_net_flow_rates_reference(c->net, b, MAXS);
        cr_assert_eq(ka, kb);
        for (int i = 0; i < ka; i++) {
            cr_assert(b[i] > 0.0);
            worst = fmax(worst, fabs(a[i] - b[i]) / b[i]);
        }
    }
    cr_assert_eq(c->n_del, n, "%s seed %llu: %d of %d delivered", spec,
                 (unsigned long long)seed, c->n_del, n);
    uint64_t fallbacks;
    sim_net_solver_stats(c->net, NULL, resolved, &fallbacks);
    cr_assert_eq(fallbacks, 0, "%s seed %llu: %llu fallbacks", spec, (unsigned long long)seed,
                 (unsigned long long)fallbacks);
    sim_net_destroy(c->net);
    sim_engine_destroy(eng);
    return worst;
}

static const char *const shapes[] = {"star", "ring", "torus(3, 4)", "fat_tree(4)"};
static const int shape_hosts[] = {9, 10, 12, 16};

/* After every event of 200 random sequences the rates equal those of a
 * from-scratch progressive filling, to the solver's rate tolerance (a
 * re-solved rate within 1e-12 of the old one keeps the old value). */
Test(net_share, incremental_matches_reference_rates)
{
    int runs = 0;
    for (int k = 0; k < 4; k++)
        for (int bwm = 0; bwm < 2; bwm++)
            for (uint64_t seed = 1; seed <= 25; seed++) {
                scen c;
                double w = run_scen(shapes[k], shape_hosts[k], bwm, 0, seed * 31 + (uint64_t)k,
                                    1, &c, NULL);
                cr_assert(w <= 2e-12, "%s bw %d seed %llu: rates differ by %g", shapes[k], bwm,
                          (unsigned long long)seed, w);
                runs++;
            }
    cr_assert_eq(runs, 200);
}

/* The incremental and the reference solver deliver the messages of 200
 * random sequences at the same times: to the nanosecond with random
 * bandwidths; with equal bandwidths (ties everywhere) a re-solved rate may
 * differ from the reference's in its last bits (the flows held fixed come
 * off a link's capacity in another order than progressive filling's
 * rounds), which moves a rounded drain time by at most 1 ns, rarely. */
Test(net_share, incremental_same_times_as_reference_solver)
{
    int msgs = 0, off = 0;
    for (int k = 0; k < 4; k++)
        for (int bwm = 0; bwm < 2; bwm++)
            for (uint64_t seed = 1; seed <= 25; seed++) {
                scen a, b;
                uint64_t s = seed * 131 + (uint64_t)k;
                run_scen(shapes[k], shape_hosts[k], bwm, 0, s, 0, &a, NULL);
                run_scen(shapes[k], shape_hosts[k], bwm, 1, s, 0, &b, NULL);
                for (int i = 0; i < a.n_del; i++) {
                    sim_time d = a.t[i] > b.t[i] ? a.t[i] - b.t[i] : b.t[i] - a.t[i];
                    cr_assert(d <= (bwm ? 0 : 1), "%s bw %d seed %llu msg %d: %lld vs %lld ns",
                              shapes[k], bwm, (unsigned long long)seed, i, (long long)a.t[i],
                              (long long)b.t[i]);
                    off += d != 0;
                    msgs++;
                }
            }
    cr_assert_gt(msgs, 10000);
    cr_assert_leq(off * 1000, msgs, "%d of %d messages 1 ns apart", off, msgs);
}

typedef struct rec {
    sim_time t[256];
    int n;
} rec;

static void on_rec(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    (void)src;
    (void)dst;
    (void)bytes;
    rec *r = ctx;
    r->t[arg] = sim_engine_now(eng);
    r->n++;
}

static sim_net *mk_star(sim_engine *eng, int n, double lat, double bw, int full)
{
    topo_physnet pn;
    sim_err err;
    cr_assert_eq(topo_physnet_build(&pn, "star", n, &err), 0, "%s", err.msg);
    sim_net_desc d;
    topo_physnet_desc(&pn, lat, bw, SIM_SHARE_FAIR, &d);
    d.full_solve = full;
    sim_net *net = sim_net_create(eng, &d, &err);
    cr_assert_not_null(net, "%s", err.msg);
    topo_physnet_release(&pn);
    return net;
}

/* k flows of S bytes into one host share its downlink: each delivered at
 * 2 alpha + kS/B (two links on a star), for k = 1..64, both solvers. */
Test(net_share, k_flows_into_one_link)
{
    const double L = 5e-6, B = 1.25e9, S = 1e6;
    for (int full = 0; full < 2; full++)
        for (int k = 1; k <= 64; k *= 2) {
            sim_engine *eng = sim_engine_create(0);
            sim_net *net = mk_star(eng, k + 1, L, B, full);
            rec r = {0};
            sim_err err;
            for (int i = 1; i <= k; i++)
                cr_assert_eq(sim_net_send(net, i, 0, S, on_rec, &r, (uint64_t)i, &err), 0);
            while (sim_engine_step(eng))
                ;
            cr_assert_eq(r.n, k);
            for (int i = 1; i <= k; i++) {
                double want = 2 * L + k * S / B;
                cr_assert(fabs(sim_time_to_s(r.t[i]) - want) <= 1e-9, "k=%d: %.9f vs %.9f", k,
                          sim_time_to_s(r.t[i]), want);
            }
            sim_net_destroy(net);
            sim_engine_destroy(eng);
        }
}

/* k flows into one host with sizes S, 2S, ..., kS, all at t = 0: flow i
 * ends when every flow has drained i S, at (S/B) sum_{j<=i} (k - j + 1). */
Test(net_share, staggered_sizes_water_filling)
{
    const double L = 2e-6, B = 1e9, S = 1e5;
    const int k = 12;
    for (int full = 0; full < 2; full++) {
        sim_engine *eng = sim_engine_create(0);
        sim_net *net = mk_star(eng, k + 1, L, B, full);
        rec r = {0};
        sim_err err;
        for (int i = 1; i <= k; i++)
            cr_assert_eq(sim_net_send(net, i, 0, i * S, on_rec, &r, (uint64_t)i, &err), 0);
        while (sim_engine_step(eng))
            ;
        double t = 0.0;
        for (int i = 1; i <= k; i++) {
            t += (k - i + 1) * S / B;
            cr_assert(fabs(sim_time_to_s(r.t[i]) - (t + 2 * L)) <= 2e-9, "flow %d: %.9f vs %.9f",
                      i, sim_time_to_s(r.t[i]), t + 2 * L);
        }
        sim_net_destroy(net);
        sim_engine_destroy(eng);
    }
}

/* Every host of a 200-host star sends to the next at one instant: one solve
 * for the starts and one for the ends (all equal), not one per flow. */
Test(net_share, one_solve_per_instant)
{
    const int n = 200;
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = mk_star(eng, n, 1e-6, 1e9, 0);
    rec r = {0};
    sim_err err;
    for (int i = 0; i < n; i++)
        cr_assert_eq(sim_net_send(net, i, (i + 1) % n, 1e5, on_rec, &r, (uint64_t)(i % 256),
                                  &err), 0);
    while (sim_engine_step(eng))
        ;
    cr_assert_eq(r.n, n);
    uint64_t solves, resolved, fallbacks;
    sim_net_solver_stats(net, &solves, &resolved, &fallbacks);
    cr_assert_eq(solves, 2);
    cr_assert_eq(resolved, (uint64_t)n);
    cr_assert_eq(fallbacks, 0);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
}

/* Staggered starts on a star of 40 hosts, each sending to 4 others: the
 * incremental solver re-rates a small fraction of what the reference solver
 * re-solves (whole linked groups), for the same delivery times. */
Test(net_share, resolves_only_flows_that_change)
{
    const int n = 40, deg = 4; /* n * deg = MAXS */
    uint64_t res[2];
    sim_time last[2] = {0, 0};
    for (int full = 0; full < 2; full++) {
        sim_engine *eng = sim_engine_create(0);
        sim_net *net = mk_star(eng, n, 1e-6, 1e9, full);
        static scen_send s[MAXS];
        scen c = {0};
        c.net = net;
        c.s = s;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < deg; j++) {
                int q = i * deg + j;
                s[q] = (scen_send){(sim_time)(i * 1000 + j * 10), i, (i + 1 + 7 * j) % n, 1e6};
                sim_engine_schedule(eng, s[q].at, on_send, &c, (uint64_t)q, NULL, NULL);
            }
        while (sim_engine_step(eng))
            ;
        cr_assert_eq(c.n_del, n * deg);
        for (int i = 0; i < c.n_del; i++)
            last[full] = c.t[i] > last[full] ? c.t[i] : last[full];
        sim_net_solver_stats(net, NULL, &res[full], NULL);
        sim_net_destroy(net);
        sim_engine_destroy(eng);
    }
    cr_assert_eq(last[0], last[1]);
    cr_assert_lt(res[0] * 4, res[1], "incremental %llu vs reference %llu re-rated flows",
                 (unsigned long long)res[0], (unsigned long long)res[1]);
}
