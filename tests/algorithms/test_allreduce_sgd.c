/* allreduce_sgd (algorithms/methods/allreduce_sgd.c) under faults: a
 * slowed link paces the ring all-reduce; a crash costs sync_timeout once,
 * then the rounds run over the survivors (with compression time, and with
 * the hierarchical collective over the live servers); a message lost on a
 * down link holds up the ring for the re-send. Its crash-free equivalences
 * are in test_algorithms.c and test_local_sgd.c; the shared crash
 * properties in test_crash_conformance.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/core/fault.h"
#include "tests/algorithms/harness.h"

/* Ring all-reduce on a physical ring of 4, constant 10 ms steps: from 0.5 s
 * the link 1-2 runs at B' = B/4, and every round takes
 * T + 2(n-1)(alpha + S/(nB')) (every chunk step waits for the slow link);
 * "up" at 1 s restores T + 2(n-1)(alpha + S/(nB)). */
Test(allreduce_sgd, one_slowed_link_paces_the_ring_allreduce)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.5s,link,1-2,250MB/s\n"
                          "1s,link,2-1,up\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=allreduce_sgd", "workers.count=4",
                          "network.topology=ring", "network.latency=20us",
                          "network.bandwidth=1GB/s", "workload.sim_params=1000000"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 7);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 120);
    const double S = 4e6, a = 20e-6, T = 0.01;
    const double fast = T + 2 * 3 * (a + S / (4 * 1e9)), slow = T + 2 * 3 * (a + S / (4 * 2.5e8));
    int checked_fast = 0, checked_slow = 0;
    for (int i = 1; i < ts.n; i++) {
        double dt = ts.t[i] - ts.t[i - 1];
        if (ts.t[i - 1] > 0.5 + slow && ts.t[i] < 1.0) {
            cr_assert(fabs(dt - slow) < 1e-6, "round at %.6f: %.9f vs %.9f", ts.t[i], dt, slow);
            checked_slow++;
        } else if (ts.t[i] < 0.5 || ts.t[i - 1] > 1.0 + slow) {
            cr_assert(fabs(dt - fast) < 1e-6, "round at %.6f: %.9f vs %.9f", ts.t[i], dt, fast);
            checked_fast++;
        }
    }
    cr_assert_gt(checked_slow, 10);
    cr_assert_gt(checked_fast, 20);
    h_free(&h);
    unlink(path);
}

/* ---- synchronous all-reduce under crashes ------------------------------ */

/* allreduce_sgd on a complete network of 8 (ring all-reduce), constant
 * 10 ms steps. Worker 5 crashes at 0.175 s, inside round 10's compute
 * step: the 7 survivors finish their step, enter, wait sync_timeout = 50 ms
 * and re-form over 7 ranks. Round times: T + c(8) before, T + timeout + c(7)
 * for the aborted round, T + c(7) after, with c(m) = 2(m-1)(alpha + S/(mB)).
 * Each round after the crash applies 7 batches (the mean renormalized over
 * the 7 that took part). Worker 5 rejoins at 0.6 s: it is sent the model
 * at the next applied update and the group is 8 again. */
Test(allreduce_sgd, allreduce_crash_costs_the_timeout_then_runs_over_the_survivors)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.175s,crash,5,\n"
                          "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=allreduce_sgd", "network.topology=complete",
                          "network.latency=20us", "network.bandwidth=1GB/s",
                          "workload.sim_params=1000000", "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 7);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 60);
    const double S = 4e6, a = 20e-6, B = 1e9, T = 0.01, to = 0.05;
    const double c8 = 2 * 7 * (a + S / (8 * B)), c7 = 2 * 6 * (a + S / (7 * B));
    cr_assert_gt(ts.n, 40);
    /* back to 8 ranks after the join round */
    int aborted = check_crash_rounds(&ts, 0.175, 0.6, T + c8, T + to + c7, T + c7, T + c8);
    cr_assert_eq(aborted, 10, "round 10 holds the crash (%d)", aborted);
    /* 16 samples per worker and round; every live worker has begun the next
     * round's step; worker 5 lost the step of round 10, which is not counted */
    cr_assert_eq(h.env->iterations, 60);
    cr_assert_eq(h.env->w[0].steps, 61);
    int64_t with5 = h.env->w[5].steps - 1; /* the lost step is not counted */
    cr_assert(with5 > 20 && with5 < 40, "worker 5 took part in %lld rounds", (long long)with5);
    cr_assert_eq(h.env->samples, 16 * (7 * 60 + with5));
    cr_assert_eq(h.env->w[5].down, 0);
    h_free(&h);
    unlink(path);
}

/* The same crash with Top-k and compression time c per value
 * (docs/compressors.md): topk(0.01) of d_wire = 100000 sends k = 1000
 * values (8000 bytes) in a ring all-gather, c(m) = (m-1)(alpha + 8000/B).
 * Encoding costs c d_wire, decoding c m k over m members. Rounds take
 * T + enc + c(8) + dec(8) before the crash, T + enc + timeout + c(7) +
 * dec(7) for the aborted one, T + enc + c(7) + dec(7) while worker 5 is
 * down and T + enc + c(8) + dec(8) again after its rejoin. */
Test(allreduce_sgd, allreduce_crash_charges_compression_time_over_the_survivors)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.175s,crash,5,\n"
                          "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=allreduce_sgd", "network.topology=complete",
                          "network.latency=20us", "network.bandwidth=1GB/s",
                          "workload.sim_params=100000", "faults.sync_timeout=50ms",
                          "algorithm.compressor=topk(0.01)", "algorithm.momentum=0",
                          "algorithm.compress_time_per_value=1e-7"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 10);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 50);
    const double a = 20e-6, B = 1e9, T = 0.01, to = 0.05, c = 1e-7, k = 1000, enc = c * 1e5;
    const double r8 = T + enc + 7 * (a + 8 * k / B) + c * 8 * k;
    const double r7 = T + enc + 6 * (a + 8 * k / B) + c * 7 * k;
    cr_assert(fabs(ts.t[0] - r8) < 1e-7, "%.9f vs %.9f", ts.t[0], r8);
    check_crash_rounds(&ts, 0.175, 0.6, r8, r7 + to, r7, r8);
    /* compute time = steps x (T + enc) + decodes: a survivor decoded every
     * round it took part in */
    cr_assert_eq(h.env->iterations, 50);
    cr_assert_eq(h.env->w[5].down, 0);
    h_free(&h);
    unlink(path);
}

/* ---- links that go down ------------------------------------------------ */

/* allreduce_sgd on a physical ring of 4 (the ring all-reduce's messages
 * r -> r+1 each on their own link), constant T = 10 ms, S = 4 MB: every
 * round takes R = T + 2(n-1)c with c = alpha + S/(nB). The link 1-2 goes
 * down at t_d, delta into step 1 of a round's all-reduce while rank 1's
 * message of that step drains: it is lost, and rank 1 re-sends it
 * sync_timeout = tau later (the link is up again by then), so it arrives
 * tau + delta late; the ring waits for it (each rank's next step needs its
 * predecessor's message), every rank finishes tau + delta late, and that
 * round takes R + tau + delta; every other round R. */
Test(allreduce_sgd, ring_allreduce_waits_for_a_message_lost_on_a_down_link)
{
    const double S = 4e6, a = 20e-6, B = 1e9, T = 0.01, tau = 0.05;
    const int n = 4;
    const double c = a + S / (n * B), R = T + 2 * (n - 1) * c;
    const double td = 10 * R + T + c + 0.0005; /* round 11, step 1, 0.5 ms in */
    char path[64], set[96], sched[256];
    snprintf(sched, sizeof sched,
             "time,event,target,value\n%.9fs,link,1-2,down\n%.9fs,link,2-1,up\n", td,
             td + 0.02);
    test_write_temp(path, sched);
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=allreduce_sgd", "workers.count=4",
                          "network.topology=ring", "network.latency=20us",
                          "network.bandwidth=1GB/s", "workload.sim_params=1000000",
                          "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 8);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 40);
    cr_assert_geq(ts.n, 40);
    int late = 0;
    for (int i = 1; i < ts.n; i++) {
        double dt = ts.t[i] - ts.t[i - 1];
        if (ts.t[i - 1] < td && ts.t[i] > td) {
            double delta = td - (ts.t[i - 1] + T + c);
            cr_assert(delta > 0 && delta < S / (n * B), "delta %.9f", delta);
            cr_assert(fabs(dt - (R + tau + delta)) < 1e-6, "round at %.6f: %.9f vs %.9f",
                      ts.t[i], dt, R + tau + delta);
            late++;
        } else {
            cr_assert(fabs(dt - R) < 1e-6, "round at %.6f: %.9f vs %.9f", ts.t[i], dt, R);
        }
    }
    cr_assert_eq(late, 1);
    cr_assert_eq(sim_net_lost_messages(h.net), 1);
    cr_assert(fabs(sim_net_resent_bytes(h.net) - S / n) < 1e-6);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += sim_net_bytes_sent_host(h.net, i);
    cr_assert(fabs(sum - sim_net_bytes_sent_total(h.net)) < 1e-3);
    /* the lost attempt sent 0.5 ms x B; its re-send S/n again */
    cr_assert(fabs(sim_net_bytes_sent_total(h.net) - (ts.n * 2.0 * (n - 1) * S + 0.0005 * B)) <
                  1.0,
              "total %.3f", sim_net_bytes_sent_total(h.net));
    h_free(&h);
    unlink(path);
}
/* ---- the hierarchical collective under crashes -------------------------- */

/* allreduce_sgd on hierarchical(4, 2) (4 servers of 2 GPUs: intra links
 * ai, Bi; server interfaces ae, Be) with the hierarchical collective and
 * constant 10 ms steps. Workers 6 and 7 (all of server 3) crash at
 * 0.175 s, inside round 10's compute step, and rejoin at 0.6 s. The
 * survivors' group builds its collective over their hosts: 3 servers of 2,
 * h(N) = 2 (2 ai + S/Bi) + 2 (N - 1) (2 ai + 2 ae + S/(N Be)) over N
 * servers. Rounds: T + h(4), the aborted one T + timeout + h(3), T + h(3)
 * while server 3 is down, T + h(4) after the rejoin. */
Test(allreduce_sgd, allreduce_crash_with_the_hierarchical_collective_runs_over_the_live_servers)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.175s,crash,6,\n"
                          "0.175s,crash,7,\n"
                          "0.6s,rejoin,6,\n"
                          "0.6s,rejoin,7,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=allreduce_sgd",
                          "network.topology=hierarchical(4, 2)", "network.collective=hierarchical",
                          "network.latency=5us", "network.bandwidth=1GB/s",
                          "network.intra_latency=1us",
                          "network.intra_bandwidth=10GB/s", "workload.sim_params=1000000",
                          "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, test_base_ini, sets, 10);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 60);
    const double S = 4e6, ai = 1e-6, Bi = 1e10, ae = 5e-6, Be = 1e9, T = 0.01, to = 0.05;
    const double h4 = 2 * (2 * ai + S / Bi) + 2 * 3 * (2 * ai + 2 * ae + S / (4 * Be));
    const double h3 = 2 * (2 * ai + S / Bi) + 2 * 2 * (2 * ai + 2 * ae + S / (3 * Be));
    cr_assert_gt(ts.n, 40);
    int aborted = check_crash_rounds(&ts, 0.175, 0.6, T + h4, T + to + h3, T + h3, T + h4);
    cr_assert_eq(aborted, 10, "round 10 holds the crash (%d)", aborted);
    /* 6 batches of 16 a round while server 3 is down */
    cr_assert_eq(h.env->iterations, 60);
    int64_t with67 = h.env->w[6].steps - 1; /* the lost step is not counted */
    cr_assert_eq(h.env->w[7].steps, h.env->w[6].steps);
    cr_assert(with67 > 20 && with67 < 40, "server 3 took part in %lld rounds",
              (long long)with67);
    cr_assert_eq(h.env->samples, 16 * (6 * 60 + 2 * with67));
    h_free(&h);
    unlink(path);
}
