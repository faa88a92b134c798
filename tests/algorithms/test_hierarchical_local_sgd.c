/* hierarchical_local_sgd (docs/algorithms.md 1.8): with one server it is
 * local_sgd; with global_every = 1 it is local_sgd with the hierarchical
 * collective (models and iteration times bit for bit); a round costs
 * H T + 2(2 ai + S/Bi) inside the servers and H T + h(N) across them;
 * crashes and rejoins run through. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/algorithms/harness.h"

/* Runs test_base_ini with the network of the tests and the given settings. */
static void run(harness *h, times *ts, const char *const *extra, int n_extra, int64_t iters)
{
    const char *sets[16] = {"network.latency=5us", "network.bandwidth=1GB/s",
                            "network.intra_latency=1us", "network.intra_bandwidth=10GB/s",
                            "workload.sim_params=1000000", "faults.sync_timeout=50ms"};
    int n = 6;
    for (int i = 0; i < n_extra; i++)
        sets[n++] = extra[i];
    ts->n = 0;
    h_build(h, test_base_ini, sets, n);
    h->probe = record_time;
    h->probe_ctx = ts;
    h_run(h, iters);
}

/* Two runs give the same models and iteration times, bit for bit. */
static void same_runs(const char *const *a_sets, int na, const char *const *b_sets, int nb)
{
    static times ta, tb;
    harness a, b;
    run(&a, &ta, a_sets, na, 60);
    run(&b, &tb, b_sets, nb, 60);
    cr_assert_eq(ta.n, tb.n);
    for (int i = 0; i < ta.n; i++)
        cr_assert_eq(ta.t[i], tb.t[i], "iteration %d: %.9f vs %.9f", i, ta.t[i], tb.t[i]);
    float *sa = malloc((size_t)a.env->d * sizeof *sa), *sb = malloc((size_t)b.env->d * sizeof *sb);
    const float *xa = a.vt->model(a.alg, sa), *xb = b.vt->model(b.alg, sb);
    cr_assert_eq(memcmp(xa, xb, (size_t)a.env->d * sizeof *xa), 0, "the models differ");
    for (int i = 0; i < a.env->n; i++)
        cr_assert_eq(memcmp(a.env->w[i].x, b.env->w[i].x, (size_t)a.env->d * sizeof(float)), 0,
                     "worker %d's models differ", i);
    free(sa);
    free(sb);
    h_free(&a);
    h_free(&b);
}

Test(hierarchical_local_sgd, one_server_is_local_sgd)
{
    const char *hier[] = {"algorithm.name=hierarchical_local_sgd", "algorithm.local_steps=3",
                          "algorithm.global_every=2", "network.topology=hierarchical(1, 8)",
                          "network.collective=hierarchical"};
    const char *local[] = {"algorithm.name=local_sgd", "algorithm.local_steps=3",
                           "network.topology=hierarchical(1, 8)",
                           "network.collective=hierarchical"};
    same_runs(hier, 5, local, 4);
}

Test(hierarchical_local_sgd, global_every_1_is_local_sgd_with_the_hierarchical_collective)
{
    const char *hier[] = {"algorithm.name=hierarchical_local_sgd", "algorithm.local_steps=3",
                          "algorithm.global_every=1", "network.topology=hierarchical(4, 2)",
                          "network.collective=hierarchical"};
    const char *local[] = {"algorithm.name=local_sgd", "algorithm.local_steps=3",
                           "network.topology=hierarchical(4, 2)",
                           "network.collective=hierarchical"};
    same_runs(hier, 5, local, 4);
}

/* The server average's messages on the critical path of a round in a run
 * of rounds (docs/algorithms.md 1.8): with K = ceil(log2 p), X(1) = 0 and
 * X(p) = 2K - 1 when X(p - 2^(K-1)) <= K - 2, else 2K (2 log2 p for p a
 * power of two). */
static int server_average_messages(int p)
{
    if (p <= 1)
        return 0;
    int K = 0;
    while ((1 << K) < p)
        K++;
    return server_average_messages(p - (1 << (K - 1))) <= K - 2 ? 2 * K - 1 : 2 * K;
}

/* hierarchical(N, p), H = 2, global_every = 3, T = 10 ms: rounds 0 and 1
 * average inside the servers, round 2 across them, and so on. The step
 * that ends round k is iteration (k + 1) H; between two such iterations
 * H T + X(p)(2 ai + S/Bi) (a server average ends round k: the intra-server
 * part of the hierarchical all-reduce) or H T + X(p)(2 ai + S/Bi) +
 * 2(N - 1)(2 ai + 2 ae + S/(N Be)) (the hierarchical all-reduce). Before
 * they shared one collective, p = 8 cost 2 more messages per round (the
 * server average broadcast to every child at once). */
Test(hierarchical_local_sgd, round_times_in_closed_form)
{
    static times ts;
    const int Ns[6] = {4, 2, 2, 2, 2, 1}, ps[6] = {2, 3, 5, 6, 8, 12};
    for (int c = 0; c < 6; c++) {
        harness h;
        char topo[64], count[64];
        snprintf(topo, sizeof topo, "network.topology=hierarchical(%d, %d)", Ns[c], ps[c]);
        snprintf(count, sizeof count, "workers.count=%d", Ns[c] * ps[c]);
        const char *sets[] = {"algorithm.name=hierarchical_local_sgd", "algorithm.local_steps=2",
                              "algorithm.global_every=3", topo, count,
                              "network.collective=hierarchical"};
        run(&h, &ts, sets, 6, 40);
        const double S = 4e6, ai = 1e-6, Bi = 1e10, ae = 5e-6, Be = 1e9, T = 0.01;
        const int N = Ns[c];
        const double intra = server_average_messages(ps[c]) * (2 * ai + S / Bi);
        const double hN = intra + 2 * (N - 1) * (2 * ai + 2 * ae + S / (N * Be));
        const int H = 2;
        for (int k = 1; k < 20; k++) {
            double dt = ts.t[(k + 1) * H - 1] - ts.t[k * H - 1];
            double want = H * T + ((k + 1) % 3 == 0 ? hN : intra);
            cr_assert(fabs(dt - want) < 1e-9, "%s, round %d: %.9f vs %.9f", topo, k, dt, want);
        }
        h_free(&h);
    }
}

/* Worker 7 (server 3 with worker 6) crashes at 0.175 s and rejoins at
 * 0.6 s: the run goes on over the live workers (worker 6 averages alone
 * inside server 3), the joiner takes an average and takes part again. */
Test(hierarchical_local_sgd, crash_and_rejoin)
{
    char path[] = "/tmp/dtsim_hier_XXXXXX", set[96];
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("time,event,target,value\n0.175s,crash,7,\n0.6s,rejoin,7,\n", f);
    fclose(f);
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static times ts;
    harness h;
    const char *sets[] = {set, "algorithm.name=hierarchical_local_sgd", "algorithm.local_steps=2",
                          "algorithm.global_every=2", "network.topology=hierarchical(4, 2)",
                          "network.collective=hierarchical"};
    run(&h, &ts, sets, 6, 120);
    cr_assert_eq(h.env->w[7].down, 0);
    cr_assert_gt(ts.t[ts.n - 1], 0.7, "the run reaches past the rejoin");
    /* worker 7 took steps before the crash and after the rejoin */
    cr_assert_gt(h.env->w[7].steps, 30);
    cr_assert_lt(h.env->w[7].steps, h.env->w[0].steps);
    float *sc = malloc((size_t)h.env->d * sizeof *sc);
    const float *x = h.vt->model(h.alg, sc);
    for (int64_t j = 0; j < h.env->d; j++)
        cr_assert(isfinite(x[j]));
    free(sc);
    h_free(&h);
    unlink(path);
}

/* Without servers (a flat network) the cluster is one server and every
 * average the configured collective: local_sgd. */
Test(hierarchical_local_sgd, flat_network_is_local_sgd)
{
    const char *hier[] = {"algorithm.name=hierarchical_local_sgd", "algorithm.local_steps=3",
                          "algorithm.global_every=4", "network.topology=complete"};
    const char *local[] = {"algorithm.name=local_sgd", "algorithm.local_steps=3",
                           "network.topology=complete"};
    same_runs(hier, 4, local, 3);
}
