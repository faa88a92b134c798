/* Algorithms against known answers: the straggler effect of synchronous
 * rounds (E[max of n exponentials] = m H_n), the staleness identity of
 * asynchronous SGD (mean n - 1), the ring all-reduce closed form inside a
 * training run, the n = 1 equivalences of docs/algorithms.md section 12, and
 * determinism. Runs go through the experiment runner without a database. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "algorithms/core/algo.h"
#include "experiment/experiment.h"
#include "tests/common.h"
#include "workloads/presets.h"

static const char *base_ini = "[experiment]\n"
                              "seed = 7\n"
                              "max_epochs = 0\n"
                              "max_iterations = 200\n"
                              "eval_every = 50\n"
                              "eval_train_samples = 500\n"
                              "[workers]\n"
                              "count = 8\n"
                              "compute = constant(10ms)\n"
                              "[network]\n"
                              "topology = ideal\n"
                              "[algorithm]\n"
                              "name = allreduce_sgd\n"
                              "lr = 0.1\n"
                              "batch = 16\n"
                              "[workload]\n"
                              "model = softmax\n"
                              "dataset = blobs(4, 10, 4000)\n";

static double harmonic(int n)
{
    double h = 0;
    for (int k = 1; k <= n; k++)
        h += 1.0 / k;
    return h;
}

Test(algorithms, sync_rounds_with_exponential_compute_take_m_times_harmonic)
{
    const int n = 8, iters = 3000;
    const double m = 0.01;
    const char *sets[] = {"workers.compute=exponential(10ms)", "experiment.max_iterations=3000",
                          "workers.count=8", "experiment.eval_every=1000"};
    xp_run_result r = test_run_ini(base_ini, sets, 4, NULL);
    cr_assert_eq(r.iterations, iters);
    double per_iter = r.sim_time / iters;
    double mean = m * harmonic(n);
    double var = 0;
    for (int k = 1; k <= n; k++)
        var += 1.0 / ((double)k * k);
    double se = m * sqrt(var / iters);
    cr_assert(fabs(per_iter - mean) < 4 * se, "per iteration %.6g s, expected %.6g +- %.3g",
              per_iter, mean, 4 * se);
}

Test(algorithms, sync_round_time_is_max_compute_plus_ring_allreduce)
{
    /* constant 10 ms compute, ring network of 4 hosts, ring all-reduce of S
     * bytes: 2(n-1)(alpha + S/(nB)) per round on top of the compute */
    const char *sets[] = {"workers.count=4", "network.topology=ring", "network.latency=20us",
                          "network.bandwidth=1GB/s", "workload.sim_params=1000000",
                          "experiment.max_iterations=50"};
    xp_run_result r = test_run_ini(base_ini, sets, 6, NULL);
    const double S = 4e6, B = 1e9, a = 20e-6;
    double expect = 0.01 + 2 * 3 * (a + S / (4 * B));
    double per_iter = r.sim_time / (double)r.iterations;
    cr_assert(fabs(per_iter - expect) / expect < 1e-3, "per iteration %.9g, expected %.9g",
              per_iter, expect);
    /* bytes: every rank sends 2(n-1) chunks of S/n per round */
    double bytes = 50 * 4 * 2 * 3 * S / 4;
    cr_assert(fabs(r.bytes_sent - bytes) / bytes < 1e-9, "bytes %.0f vs %.0f", r.bytes_sent,
              bytes);
}

/* Sum over applied updates of tau, plus, for the n - 1 gradients still in
 * flight at the stop, the updates applied since they were read, is exactly
 * (n - 1) U: every update is seen stale by the n - 1 other gradients in
 * flight when it lands. With identical constant compute times the in-flight
 * ones at the stop have seen 1, 2, ..., n - 1 updates. */
Test(algorithms, asgd_mean_staleness_identity_with_constant_compute)
{
    const int n = 4;
    const char *sets[] = {"algorithm.name=asgd", "workers.count=4",
                          "experiment.max_iterations=4000", "experiment.eval_every=1000",
                          "algorithm.lr=0.01"};
    xp_run_result r = test_run_ini(base_ini, sets, 5, NULL);
    cr_assert_eq(r.iterations, 4000);
    double expect = (n - 1) - n * (n - 1) / 2.0 / (double)r.iterations;
    cr_assert(fabs(r.mean_staleness - expect) < 1e-12, "mean staleness %.9f, expected %.9f",
              r.mean_staleness, expect);
}

Test(algorithms, asgd_mean_staleness_is_n_minus_1_with_random_compute)
{
    const int n = 4;
    const char *sets[] = {"algorithm.name=asgd", "workers.count=4",
                          "workers.compute=exponential(10ms)",
                          "experiment.max_iterations=4000", "experiment.eval_every=1000",
                          "algorithm.lr=0.01"};
    xp_run_result r = test_run_ini(base_ini, sets, 5, NULL);
    cr_assert_eq(r.iterations, 4000);
    /* the end effect: n - 1 unapplied gradients, each having seen far fewer
     * than 4n updates with overwhelming probability */
    double bound = (n - 1) * 4.0 * n / (double)r.iterations;
    cr_assert(r.mean_staleness <= n - 1 + 1e-12 && r.mean_staleness >= n - 1 - bound,
              "mean staleness %.6f, expected %d - [0, %.4f]", r.mean_staleness, n - 1, bound);
}

Test(algorithms, asgd_with_one_worker_is_sequential_sgd)
{
    const char *a_sets[] = {"algorithm.name=asgd", "workers.count=1"};
    const char *s_sets[] = {"algorithm.name=allreduce_sgd", "workers.count=1"};
    static test_rows ra, rb;
    ra.n = rb.n = 0;
    xp_run_result a = test_run_ini(base_ini, a_sets, 2, &ra);
    xp_run_result b = test_run_ini(base_ini, s_sets, 2, &rb);
    cr_assert_eq(a.mean_staleness, 0.0);
    cr_assert_eq(a.iterations, b.iterations);
    cr_assert_eq(ra.n, rb.n);
    for (int i = 0; i < ra.n; i++) {
        cr_assert_eq(ra.r[i].iteration, rb.r[i].iteration);
        cr_assert_eq(ra.r[i].train_loss, rb.r[i].train_loss, "row %d: %.9g vs %.9g", i,
                     ra.r[i].train_loss, rb.r[i].train_loss);
        cr_assert_eq(ra.r[i].test_accuracy, rb.r[i].test_accuracy);
    }
}

Test(algorithms, same_experiment_twice_gives_identical_rows)
{
    const char *sets[] = {"workers.compute=lognormal(10ms, 0.5)", "network.topology=star",
                          "workers.transient_prob=0.1", "algorithm.momentum=0.9",
                          "experiment.eval_every=20"};
    static test_rows ra, rb;
    ra.n = rb.n = 0;
    test_run_ini(base_ini, sets, 5, &ra);
    test_run_ini(base_ini, sets, 5, &rb);
    cr_assert_gt(ra.n, 5);
    cr_assert_eq(ra.n, rb.n);
    cr_assert_eq(memcmp(ra.r, rb.r, (size_t)ra.n * sizeof ra.r[0]), 0,
                 "metric rows differ between two identical runs");
}

Test(algorithms, training_reduces_loss)
{
    static test_rows rs;
    rs.n = 0;
    test_run_ini(base_ini, NULL, 0, &rs);
    cr_assert_gt(rs.n, 2);
    cr_assert_lt(rs.r[rs.n - 1].train_loss, 0.5 * rs.r[0].train_loss,
                 "loss %.4f -> %.4f", rs.r[0].train_loss, rs.r[rs.n - 1].train_loss);
    cr_assert_gt(rs.r[rs.n - 1].test_accuracy, 0.9);
}

Test(algorithms, huge_learning_rate_diverges)
{
    const char *sets[] = {"workload.model=linreg", "workload.dataset=synthetic_linear(10, 2000)",
                          "algorithm.lr=1e6"};
    xp_run_result r = test_run_ini(base_ini, sets, 3, NULL);
    cr_assert_str_eq(r.status, "diverged");
    cr_assert_lt(r.iterations, 200);
}

Test(algorithms, parameter_server_collective_costs_two_server_link_transfers)
{
    /* PS on a star: n pushes share the server's downlink, n pulls its
     * uplink: 2 (2 alpha + n S / B) per round after the compute */
    const char *sets[] = {"workers.count=4", "network.topology=star", "network.collective=ps",
                          "network.latency=10us", "network.bandwidth=1GB/s",
                          "workload.sim_params=250000", "experiment.max_iterations=20"};
    xp_run_result r = test_run_ini(base_ini, sets, 7, NULL);
    const double S = 1e6, B = 1e9, a = 10e-6;
    double expect = 0.01 + 2 * (2 * a + 4 * S / B);
    double per_iter = r.sim_time / (double)r.iterations;
    cr_assert(fabs(per_iter - expect) / expect < 1e-3, "per iteration %.9g, expected %.9g",
              per_iter, expect);
}

Test(algorithms, learning_rate_schedule)
{
    cfg_config cfg = {0};
    cfg.lr = 0.4;
    cfg.lr_decay = 0.1;
    cfg.n_lr_milestones = 2;
    cfg.lr_milestones[0] = 5;
    cfg.lr_milestones[1] = 8;
    cr_assert_float_eq(algo_lr_at(&cfg, 0.0), 0.4, 1e-15);
    cr_assert_float_eq(algo_lr_at(&cfg, 4.999), 0.4, 1e-15);
    cr_assert_float_eq(algo_lr_at(&cfg, 5.0), 0.04, 1e-15);
    cr_assert_float_eq(algo_lr_at(&cfg, 9.0), 0.004, 1e-15);
    cfg.warmup_epochs = 2;
    cr_assert_float_eq(algo_lr_at(&cfg, 0.0), 0.04, 1e-15);
    cr_assert_float_eq(algo_lr_at(&cfg, 1.0), 0.4 * 0.55, 1e-15);
    cr_assert_float_eq(algo_lr_at(&cfg, 2.0), 0.4, 1e-15);
}

Test(algorithms, proxy_and_device_presets_set_sizes_and_times)
{
    /* ResNet-50 proxy: 25,557,032 parameters on the wire, 3 x 8.178 GFLOPs
     * per sample (presets table); V100: 15.7 TFLOPS at 50% efficiency */
    const char *sets[] = {"workload.proxy=resnet50", "workers.device=v100",
                          "workers.efficiency=0.5", "workers.compute=model",
                          "workers.count=4", "network.topology=star",
                          "experiment.max_iterations=5"};
    xp_run_result r = test_run_ini(base_ini, sets, 7, NULL);
    const wl_proxy *p = wl_proxy_find("resnet50");
    cr_assert_not_null(p);
    cr_assert_eq(p->params, 25557032);
    double S = 4.0 * (double)p->params;
    double bytes = 5 * 4 * 2 * 3 * S / 4; /* ring all-reduce: 2(n-1) chunks of S/n per rank */
    cr_assert(fabs(r.bytes_sent - bytes) / bytes < 1e-9, "bytes %.0f, expected %.0f",
              r.bytes_sent, bytes);
    double compute = 16 * p->flops_per_sample / (15.7e12 * 0.5);
    double per_iter = r.sim_time / 5;
    cr_assert_gt(per_iter, compute);
    const char *ideal[] = {"workload.proxy=resnet50", "workers.device=v100",
                           "workers.efficiency=0.5", "workers.compute=model",
                           "workers.count=4", "network.topology=ideal",
                           "experiment.max_iterations=5"};
    r = test_run_ini(base_ini, ideal, 7, NULL);
    cr_assert(fabs(r.sim_time / 5 - compute) < 2e-9, "per iteration %.9g, expected %.9g",
              r.sim_time / 5, compute);
}

Test(algorithms, eval_model_worker0_differs_from_the_average_when_workers_differ)
{
    const char *avg_sets[] = {"algorithm.name=dpsgd", "topology.graph=ring",
                              "workload.partition=contiguous"};
    const char *w0_sets[] = {"algorithm.name=dpsgd", "topology.graph=ring",
                             "workload.partition=contiguous", "experiment.eval_model=worker0"};
    static test_rows ra, rb;
    ra.n = rb.n = 0;
    test_run_ini(base_ini, avg_sets, 3, &ra);
    test_run_ini(base_ini, w0_sets, 4, &rb);
    cr_assert_eq(ra.n, rb.n);
    /* the same run: the same start (the average of equal models equals them
     * up to float rounding) and identical consensus distances */
    cr_assert_float_eq(ra.r[0].train_loss, rb.r[0].train_loss, 1e-6);
    int differ = 0;
    for (int i = 1; i < ra.n; i++) {
        cr_assert_eq(ra.r[i].consensus_distance, rb.r[i].consensus_distance);
        cr_assert_gt(ra.r[i].consensus_distance, 0);
        differ += ra.r[i].train_loss != rb.r[i].train_loss;
    }
    cr_assert_eq(differ, ra.n - 1);
    /* a single-model method: worker 0 is the model */
    const char *s1[] = {"experiment.eval_model=worker0"};
    ra.n = rb.n = 0;
    test_run_ini(base_ini, NULL, 0, &ra);
    test_run_ini(base_ini, s1, 1, &rb);
    for (int i = 0; i < ra.n; i++)
        cr_assert_eq(ra.r[i].train_loss, rb.r[i].train_loss);
}

Test(algorithms, tree_allreduce_round_ends_when_the_last_rank_has_the_result)
{
    /* binomial tree, 8 hosts, complete 10 Gb/s network, no latency: the
     * reduce and the broadcast each take log2(8) sequential transfers of
     * S, so the round ends at 2 log2(n) S / B = 0.06 s after the compute,
     * and all 2 (n - 1) = 14 messages have been delivered (the compute is
     * longer than the round, so no rank has entered the next one) */
    const char *sets[] = {"workers.count=8", "network.topology=complete",
                          "network.collective=tree", "network.latency=0",
                          "network.bandwidth=10Gbps", "workload.sim_params=3125000",
                          "workers.compute=constant(100ms)", "experiment.max_iterations=1"};
    xp_run_result r = test_run_ini(base_ini, sets, 8, NULL);
    const double S = 12.5e6, B = 1.25e9;
    double expect = 0.1 + 2 * 3 * S / B;
    cr_assert_eq(r.iterations, 1);
    cr_assert(fabs(r.sim_time - expect) < 1e-9, "round ends at %.9g s, expected %.9g",
              r.sim_time, expect);
    cr_assert(fabs(r.bytes_sent - 14 * S) / (14 * S) < 1e-12, "bytes %.0f vs %.0f",
              r.bytes_sent, 14 * S);
}

Test(algorithms, tree_allreduce_on_a_star_pays_for_the_shared_uplink_in_the_broadcast)
{
    /* on a star (L = log2 n levels, each hop 2 alpha): the reduce's L steps
     * use distinct uplinks and downlinks, S/B each; in the broadcast a
     * rank sends to its k children at once through its one uplink, k S/B,
     * for k = L, L-1, ..., 1: in all 2 L (2 alpha) + (L + L(L+1)/2) S/B */
    const char *sets[] = {"workers.count=8", "network.topology=star",
                          "network.collective=tree", "network.latency=50us",
                          "network.bandwidth=10Gbps", "workload.sim_params=3125000",
                          "workers.compute=constant(100ms)", "experiment.max_iterations=1"};
    xp_run_result r = test_run_ini(base_ini, sets, 8, NULL);
    const double S = 12.5e6, B = 1.25e9, a = 50e-6;
    double expect = 0.1 + 2 * 3 * 2 * a + (3 + 6) * S / B;
    cr_assert(fabs(r.sim_time - expect) < 1e-9, "round ends at %.9g s, expected %.9g",
              r.sim_time, expect);
}
