/* Network model benchmark: the flow model at scale, sharing = fair (max-min,
 * incremental solver) against sharing = none (alpha-beta, no solver).
 * 1. Gossip on a hypercube over a 10 Gb/s star (5 us links): every host
 *    sends 1 MB to each of its log2(n) hypercube neighbours and starts its
 *    next round once it has received from all of them (a NEIGHBOR
 *    collective), 5 rounds, n = 256, 1,024, 4,096. Lock-step: all the
 *    flows of a round start at one instant. Jittered: each host starts its
 *    rounds after a random 0-100 us delay, so every start is an instant of
 *    its own and the solver works flow by flow. Messages per wall second,
 *    the simulated time (lock-step closed form 5 (log2(n) S/B + 2 alpha)),
 *    and the solver's work (flows re-solved per solve).
 * 2. D-PSGD (dpsgd) training softmax on Fashion-MNIST over the exponential
 *    graph on a 10 Gb/s star, batch 16, 4 iterations, compute = model
 *    (equal step times) and lognormal(10ms, 0.5) (staggered), at 1,024 and
 *    4,096 workers, and D-PSGD on blobs over the ring graph at 16,384
 *    workers, 2 iterations: wall seconds fair and none (data loading
 *    included in both) and their ratio.
 * Times are process CPU seconds (one thread; the wall time of an idle
 * machine). Prints figures; no pass/fail.
 * Usage: bench_network [max_hosts [part [threads]]] (default 16384: smaller
 * skips the larger cases; part 1 or 2 runs that part only; threads: the
 * runs of part 2 compute gradients on that many threads, default 1, and
 * their CPU seconds are then those of all threads). Part 3 runs one
 * lock-step fair gossip over max_hosts hosts and prints its simulated
 * time only: the whole process that bench_simgrid times against SimGrid.
 * Part 4: allreduce_sgd (ring all-reduce) over max_hosts workers on the
 * star, softmax on blobs(10, 32, 100000), batch 1, compute constant(10ms),
 * 2 iterations: each round is lock-step and alone on the network, so the
 * ring runs in closed form (sim/coll_ring.c); CPU seconds, simulated time
 * and events. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
#include "experiment/experiment.h"
#include "sim/collective.h"
#include "sim/network.h"
#include "topology/physnet.h"
#include "workloads/blas.h"

void openblas_set_num_threads(int num_threads);

/* Process CPU seconds: the machine may be shared, and the simulator runs
 * on one thread (OpenBLAS too), so this is the wall time of an idle
 * machine. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define ROUNDS 5
#define MSG 1e6

typedef struct gossip {
    sim_coll *coll;
    int64_t *round;
    sim_time jitter; /* max delay before a round, ns (0: lock-step) */
    uint64_t lcg;
    int failed;
} gossip;

static void enter(gossip *g, int r)
{
    sim_err err;
    if (sim_coll_enter(g->coll, r, MSG, &err)) {
        fprintf(stderr, "bench_network: %s\n", err.msg);
        g->failed = 1;
    }
}

static void on_enter(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    enter(ctx, (int)arg);
}

static void start_round(sim_engine *eng, gossip *g, int r)
{
    if (g->round[r]++ >= ROUNDS)
        return;
    if (!g->jitter) {
        enter(g, r);
        return;
    }
    g->lcg = g->lcg * 6364136223846793005ull + 1442695040888963407ull;
    sim_time d = (sim_time)((g->lcg >> 33) % (uint64_t)g->jitter);
    sim_engine_schedule(eng, d, on_enter, g, (uint64_t)r, NULL, NULL);
}

static void on_done(sim_engine *eng, void *ctx, int rank) { start_round(eng, ctx, rank); }

typedef struct gossip_result {
    double wall, sim;
    uint64_t messages, solves, resolved, fallbacks;
} gossip_result;

static int run_gossip(int n, sim_sharing sh, sim_time jitter, gossip_result *res)
{
    int dim = 0;
    while ((1 << dim) < n)
        dim++;
    sim_err err;
    topo_physnet pn;
    if (topo_physnet_build(&pn, "star", n, &err)) {
        fprintf(stderr, "bench_network: %s\n", err.msg);
        return -1;
    }
    sim_engine *eng = sim_engine_create(1024);
    sim_net_desc d;
    topo_physnet_desc(&pn, 5e-6, 1.25e9, sh, &d);
    sim_net *net = sim_net_create(eng, &d, &err);
    int *off = malloc(sizeof *off * (size_t)(n + 1)), *nbr = malloc(sizeof *nbr * (size_t)n * dim);
    gossip g = {0};
    g.round = calloc((size_t)n, sizeof *g.round);
    g.jitter = jitter;
    g.lcg = 12345;
    if (!net || !off || !nbr || !g.round) {
        fprintf(stderr, "bench_network: %s\n", net ? "out of memory" : err.msg);
        return -1;
    }
    for (int r = 0; r < n; r++) {
        off[r] = r * dim;
        for (int k = 0; k < dim; k++)
            nbr[r * dim + k] = r ^ (1 << k);
    }
    off[n] = n * dim;
    sim_coll_desc cd = {.kind = SIM_COLL_NEIGHBOR, .n = n, .nbr_off = off, .nbr = nbr,
                        .done = on_done, .ctx = &g};
    double t0 = now_s();
    g.coll = sim_coll_create(net, &cd, &err);
    if (!g.coll) {
        fprintf(stderr, "bench_network: %s\n", err.msg);
        return -1;
    }
    for (int r = 0; r < n; r++)
        start_round(eng, &g, r);
    while (!g.failed && sim_engine_step(eng))
        ;
    res->wall = now_s() - t0;
    res->sim = sim_time_to_s(sim_engine_now(eng));
    res->messages = sim_net_messages(net);
    sim_net_solver_stats(net, &res->solves, &res->resolved, &res->fallbacks);
    sim_coll_destroy(g.coll);
    sim_net_destroy(net);
    sim_engine_destroy(eng);
    topo_physnet_release(&pn);
    free(off);
    free(nbr);
    free(g.round);
    return g.failed ? -1 : 0;
}

static void bench_gossip(int max_hosts)
{
    printf("1. hypercube gossip over a 10 Gb/s star, 1 MB per neighbour, %d rounds\n", ROUNDS);
    printf("%-10s %6s %9s | %9s %10s %11s | %9s %10s %11s %9s | %6s\n", "case", "hosts",
           "messages", "none s", "msgs/s", "sim s", "fair s", "msgs/s", "sim s", "flows/solve",
           "ratio");
    for (int jit = 0; jit < 2; jit++)
        for (int n = 256; n <= 4096 && n <= max_hosts; n *= 4) {
            gossip_result a, b;
            sim_time jitter = jit ? 100000 : 0;
            if (run_gossip(n, SIM_SHARE_NONE, jitter, &a) || run_gossip(n, SIM_SHARE_FAIR, jitter, &b))
                return;
            printf("%-10s %6d %9llu | %9.3f %10.0f %11.6f | %9.3f %10.0f %11.6f %9.1f | %6.2f\n",
                   jit ? "jittered" : "lock-step", n, (unsigned long long)b.messages, a.wall,
                   (double)a.messages / a.wall, a.sim, b.wall, (double)b.messages / b.wall, b.sim,
                   b.solves ? (double)b.resolved / (double)b.solves : 0.0, b.wall / a.wall);
            if (b.fallbacks)
                printf("           (%llu solves fell back to the whole linked group)\n",
                       (unsigned long long)b.fallbacks);
        }
    printf("lock-step closed form: %d (log2(n) x 1 MB / 1.25 GB/s + 2 x 5 us)\n\n", ROUNDS);
}

static int run_threads = 1; /* part 2: threads computing the gradients */

static int run_dpsgd(const char *ini, int n, const char *sharing, double *wall, double *sim,
                     uint64_t *events)
{
    char nset[64], sset[64];
    snprintf(nset, sizeof nset, "workers.count=%d", n);
    snprintf(sset, sizeof sset, "network.sharing=%s", sharing);
    const char *over[2] = {nset, sset};
    cfg_config cfg;
    sim_err err = {0};
    if (cfg_load_string(xp_experiment_schema(), "bench_network", ini, over, 2, &cfg,
                               &err) < 0) {
        fprintf(stderr, "bench_network: %s\n", err.msg);
        return -1;
    }
    xp_run_result r;
    xp_run_opts o = {.threads = run_threads};
    double t0 = now_s();
    int rc = xp_experiment_run(&cfg, &o, &r, &err);
    *wall = now_s() - t0;
    cfg_release(&cfg);
    if (rc < 0) {
        fprintf(stderr, "bench_network: %s\n", err.msg);
        return -1;
    }
    *sim = r.sim_time;
    *events = r.events;
    return 0;
}

static const char dpsgd_ini[] = "[experiment]\nseed = 1\nmax_iterations = %d\nmax_epochs = 0\n"
                                "eval_every = 1000\neval_train_samples = 1000\n"
                                "[workers]\ncompute = %s\n"
                                "[network]\ntopology = star\nlatency = 5us\nbandwidth = 10Gbps\n"
                                "[topology]\ngraph = %s\n"
                                "[algorithm]\nname = dpsgd\nlr = 0.05\nbatch = 16\n"
                                "[workload]\nmodel = softmax\ndataset = %s\npartition = iid\n";

static const char allreduce_ini[] = "[experiment]\nseed = 1\nmax_iterations = 2\nmax_epochs = 0\n"
                                    "eval_every = 1000\neval_train_samples = 1000\n"
                                    "[workers]\ncompute = constant(10ms)\n"
                                    "[network]\ntopology = star\nlatency = 5us\n"
                                    "bandwidth = 10Gbps\n"
                                    "[algorithm]\nname = allreduce_sgd\nlr = 0.05\nbatch = 1\n"
                                    "[workload]\nmodel = softmax\n"
                                    "dataset = blobs(10, 32, 100000)\npartition = iid\n";

static void bench_allreduce(int n)
{
    double wall, sim;
    uint64_t events;
    if (run_dpsgd(allreduce_ini, n, "fair", &wall, &sim, &events) == 0)
        printf("allreduce_sgd, %d workers, 2 iterations: %.2f s CPU (data included), simulated "
               "%.4f s, %llu events\n",
               n, wall, sim, (unsigned long long)events);
}

static void bench_dpsgd(int max_hosts)
{
    printf("2. D-PSGD softmax over a 10 Gb/s star (seconds include loading the data; "
           "gradients on %d thread%s)\n",
           run_threads, run_threads > 1 ? "s" : "");
    printf("%-44s %6s | %8s %8s | %8s %8s | %6s\n", "case", "workers", "none s", "sim s",
           "fair s", "sim s", "ratio");
    struct {
        const char *graph, *compute, *dataset;
        int n, iters;
    } cases[] = {
        {"exponential", "model", "fashion_mnist", 1024, 4},
        {"exponential", "model", "fashion_mnist", 4096, 4},
        {"exponential", "lognormal(10ms, 0.5)", "fashion_mnist", 1024, 4},
        {"exponential", "lognormal(10ms, 0.5)", "fashion_mnist", 4096, 4},
        {"ring", "model", "blobs(10, 32, 300000)", 16384, 2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (cases[k].n > max_hosts)
            continue;
        char ini[1024], name[128];
        snprintf(ini, sizeof ini, dpsgd_ini, cases[k].iters, cases[k].compute, cases[k].graph,
                 cases[k].dataset);
        snprintf(name, sizeof name, "%s, %s, %d it", cases[k].graph, cases[k].compute,
                 cases[k].iters);
        double wa, sa, wb, sb;
        uint64_t ea, eb;
        if (run_dpsgd(ini, cases[k].n, "none", &wa, &sa, &ea) ||
            run_dpsgd(ini, cases[k].n, "fair", &wb, &sb, &eb))
            continue;
        printf("%-44s %6d | %8.2f %8.4f | %8.2f %8.4f | %6.2f\n", name, cases[k].n, wa, sa, wb,
               sb, wb / wa);
    }
}

int main(int argc, char **argv)
{
    wl_blas_pin(argv); /* re-executes once with the simulator's kernel */
    int max_hosts = argc > 1 ? atoi(argv[1]) : 16384;
    int part = argc > 2 ? atoi(argv[2]) : 0;
    run_threads = argc > 3 ? atoi(argv[3]) : 1;
    openblas_set_num_threads(1);
    sim_err_install_library_handlers();
    if (part == 3) {
        gossip_result g;
        if (run_gossip(max_hosts, SIM_SHARE_FAIR, 0, &g))
            return 1;
        printf("simulated %.9f s\n", g.sim);
        return 0;
    }
    if (part == 4) {
        bench_allreduce(max_hosts);
        return 0;
    }
    if (part != 2)
        bench_gossip(max_hosts);
    if (part != 1)
        bench_dpsgd(max_hosts);
    return 0;
}
