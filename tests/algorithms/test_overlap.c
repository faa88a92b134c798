/* DDP's gradient buckets overlapping the backward pass
 * (algorithms/drivers/overlap.c; not Overlap-Local-SGD, which is
 * test_overlap_local_sgd.c) and the hierarchical all-reduce, through whole
 * runs of allreduce_sgd against closed forms. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "config/config.h"
#include "experiment/experiment.h"
#include "tests/common.h"

static xp_run_result run_sets(const char *const *sets, int nsets)
{
    static const char *ini = "[experiment]\n"
                             "seed = 3\n"
                             "max_epochs = 0\n"
                             "max_iterations = 40\n"
                             "eval_every = 20\n"
                             "eval_train_samples = 200\n"
                             "[workers]\n"
                             "count = 4\n"
                             "compute = constant(10ms)\n"
                             "[network]\n"
                             "topology = ring\n"
                             "latency = 20us\n"
                             "[algorithm]\n"
                             "name = allreduce_sgd\n"
                             "batch = 16\n"
                             "[workload]\n"
                             "model = mlp(8)\n"
                             "dataset = blobs(4, 10, 2000)\n"
                             "sim_params = 1240000\n";
    return test_run_ini(ini, sets, nsets, NULL);
}

static int run_fails(const char *const *sets, int nsets, sim_err *err)
{
    static const char *ini = "[workers]\ncount = 4\ncompute = constant(1ms)\n"
                             "[experiment]\nmax_epochs = 0\nmax_iterations = 2\n"
                             "[workload]\nmodel = softmax\ndataset = blobs(3, 5, 300)\n";
    cfg_config cfg;
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "test.ini", ini, sets, nsets,
                                        &cfg, err), 0, "%s",
                 err->msg);
    xp_run_opts opts = {0};
    xp_run_result res;
    int rc = xp_experiment_run(&cfg, &opts, &res, err);
    cfg_release(&cfg);
    return rc;
}

/* Ring all-reduce of x bytes on a physical ring of n = 4: 2(n-1)(a + x/(nB)). */
static double ring_ar(double x, double a, double B) { return 6 * (a + x / (4 * B)); }

/* The bucketed step of two_buckets_against_the_closed_form at bandwidth B:
 * max(T, r_1 T + A(S_1)) + A(S_2). */
static double two_bucket_step(double B)
{
    const double T = 0.01, a = 20e-6, S = 4.96e6;
    const double S1 = S * 36 / 124, S2 = S - S1, r1 = 1.0 / 3 + 2.0 / 3 * 36 / 124;
    return fmax(T, r1 * T + ring_ar(S1, a, B)) + ring_ar(S2, a, B);
}

/* mlp(8) on 10 features and 4 classes: layers fc1 = 11 x 8 = 88 and fc2 =
 * 9 x 4 = 36 parameters; in backward order fc2 then fc1. FLOPs follow the
 * parameters (dense layers), backward = 2 x forward, so fc2's gradient
 * exists at (1/3 + 2/3 x 36/124) of the step. The message is sim_params x 4
 * = 4.96 MB, split 36 : 88. Step time = f_2 with f_1 = r_1 T + A(S_1),
 * f_2 = max(T, f_1) + A(S_2) (the second all-reduce queued behind the
 * first): once with f_1 < T (1 GB/s) and once with f_1 > T (0.25 GB/s). */
Test(overlap, two_buckets_against_the_closed_form)
{
    const double T = 0.01, a = 20e-6, S = 4.96e6;
    const double S1 = S * 36 / 124, S2 = S - S1, r1 = 1.0 / 3 + 2.0 / 3 * 36 / 124;
    const char *bws[2] = {"network.bandwidth=1GB/s", "network.bandwidth=0.25GB/s"};
    const double B[2] = {1e9, 0.25e9};
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {bws[k], "algorithm.bucket=1B"};
        xp_run_result r = run_sets(sets, 2);
        double f1 = r1 * T + ring_ar(S1, a, B[k]);
        double want = fmax(T, f1) + ring_ar(S2, a, B[k]);
        cr_assert(k == 0 ? f1 < T : f1 > T);
        double got = r.sim_time / (double)r.iterations;
        cr_assert(fabs(got - want) <= 1e-6 * want, "bandwidth %g: %.9g s per step, want %.9g",
                  B[k], got, want);
        /* no buckets: T + A(S) */
        const char *none[] = {bws[k]};
        xp_run_result r0 = run_sets(none, 1);
        double want0 = T + ring_ar(S, a, B[k]);
        got = r0.sim_time / (double)r0.iterations;
        cr_assert(fabs(got - want0) <= 1e-6 * want0, "%.9g vs %.9g", got, want0);
        /* the same bytes cross the network either way */
        cr_assert(fabs(r.bytes_sent - r0.bytes_sent) <= 1e-9 * r0.bytes_sent);
        /* one bucket larger than the model: the unbucketed timing exactly */
        const char *one[] = {bws[k], "algorithm.bucket=1GB"};
        xp_run_result r1b = run_sets(one, 2);
        cr_assert_eq(r1b.sim_time, r0.sim_time);
        /* the gradients and the updates do not depend on the buckets */
        cr_assert_eq(r.final_train_loss, r0.final_train_loss);
    }
}

/* The same two buckets with the transport parameters: each bucket's
 * all-reduce is one collective call and pays its launch c, every message
 * its overhead o, and payload gets e of the rate:
 * A'(x) = c + 2(n-1)(o + a + x/(n e B)); step = max(T, r_1 T + A'(S_1)) +
 * A'(S_2), against T + A'(S) unbucketed: bucketing costs one more launch. */
Test(overlap, two_buckets_pay_a_launch_each)
{
    const double T = 0.01, a = 20e-6, S = 4.96e6, B = 1e9, c = 150e-6, o = 8e-6, e = 0.9;
    const double S1 = S * 36 / 124, S2 = S - S1, r1 = 1.0 / 3 + 2.0 / 3 * 36 / 124;
    const char *base[] = {"network.bandwidth=1GB/s", "network.collective_overhead=150us",
                          "network.message_overhead=8us", "network.efficiency=0.9",
                          "algorithm.bucket=1B"};
    xp_run_result r = run_sets(base, 5);
    double f1 = r1 * T + c + ring_ar(S1, a + o, e * B);
    double want = fmax(T, f1) + c + ring_ar(S2, a + o, e * B);
    double got = r.sim_time / (double)r.iterations;
    cr_assert(fabs(got - want) <= 1e-6 * want, "%.9g s per step, want %.9g", got, want);
    xp_run_result r0 = run_sets(base, 4);
    double want0 = T + c + ring_ar(S, a + o, e * B);
    got = r0.sim_time / (double)r0.iterations;
    cr_assert(fabs(got - want0) <= 1e-6 * want0, "%.9g vs %.9g", got, want0);
}

/* Hierarchical all-reduce in a run: 2 servers of 4 workers, per step
 * T + 2 log2(4) (2 ai + S/Bi) + 2 (2 ai + 2 ae + S/(2 Be)). */
Test(overlap, hierarchical_collective_in_a_run)
{
    const char *sets[] = {"workers.count=8", "network.topology=hierarchical(2, 4)",
                          "network.collective=hierarchical", "network.intra_latency=1us",
                          "network.intra_bandwidth=100GB/s", "network.latency=5us",
                          "network.bandwidth=12.5GB/s"};
    xp_run_result r = run_sets(sets, 7);
    const double T = 0.01, S = 4.96e6, ai = 1e-6, Bi = 100e9, ae = 5e-6, Be = 12.5e9;
    double want = T + 2 * 2 * (2 * ai + S / Bi) + 2 * (2 * ai + 2 * ae + S / (2 * Be));
    double got = r.sim_time / (double)r.iterations;
    cr_assert(fabs(got - want) <= 1e-6 * want, "%.9g s per step, want %.9g", got, want);
}

Test(overlap, refusals_name_the_key)
{
    sim_err err = {0};
    const char *dpsgd[] = {"algorithm.name=dpsgd", "algorithm.bucket=25MiB"};
    cr_assert_eq(run_fails(dpsgd, 2, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "bucket") && strstr(err.msg, "allreduce_sgd, local_sgd") &&
                  strstr(err.msg, "gravac only"), "%s",
              err.msg);
    const char *star[] = {"network.collective=hierarchical"};
    cr_assert_eq(run_fails(star, 1, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "collective") && strstr(err.msg, "servers of GPUs"), "%s",
              err.msg);
    const char *partial[] = {"network.topology=hierarchical(2, 3)",
                             "network.collective=hierarchical"};
    cr_assert_eq(run_fails(partial, 2, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "whole servers"), "%s", err.msg);
}

/* ---- buckets on every synchronous method that all-reduces ---------------
 *
 * The Local SGD family buckets the average of its round's last local step
 * (each layer's parameters are final once that step's backward pass has
 * computed their gradients); gravac buckets its round's message. One
 * bucket larger than the model is ready when the step ends: the
 * unbucketed run, time and losses. */
Test(overlap, one_bucket_is_the_unbucketed_run_for_every_method)
{
    const char *methods[][4] = {
        {"algorithm.name=local_sgd", "algorithm.local_steps=4"},
        {"algorithm.name=post_local_sgd", "algorithm.local_steps=4",
         "algorithm.switch_epoch=0.1"},
        {"algorithm.name=adaptive_local_sgd", "algorithm.local_steps=2"},
        {"algorithm.name=slowmo", "algorithm.local_steps=4"},
        {"algorithm.name=hierarchical_local_sgd", "algorithm.local_steps=2",
         "network.topology=hierarchical(2, 2)", "algorithm.global_every=2"},
        {"algorithm.name=gravac", "algorithm.window=3"},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        const char *sets[6] = {"network.bandwidth=1GB/s"};
        int n = 1;
        for (int k = 0; k < 4 && methods[m][k]; k++)
            sets[n++] = methods[m][k];
        xp_run_result r0 = run_sets(sets, n);
        sets[n] = "algorithm.bucket=1GB";
        xp_run_result r1 = run_sets(sets, n + 1);
        cr_assert_eq(r1.iterations, r0.iterations, "%s", methods[m][0]);
        cr_assert_eq(r1.sim_time, r0.sim_time, "%s: %.9g vs %.9g", methods[m][0], r1.sim_time,
                     r0.sim_time);
        cr_assert_eq(r1.final_train_loss, r0.final_train_loss, "%s", methods[m][0]);
    }
}

/* local_sgd, H = 4, two buckets (as in two_buckets_against_the_closed_form):
 * a round is 3 plain steps and the bucketed last one, 3T + max(T, f_1) +
 * A(S_2) with f_1 = r_1 T + A(S_1); the run's 40 iterations are 10 rounds,
 * the last one reported where its average is formed. The same models as
 * without buckets. */
Test(overlap, a_bucketed_local_sgd_round_against_the_closed_form)
{
    const double T = 0.01, a = 20e-6, S = 4.96e6, B = 0.25e9;
    const char *sets[] = {"network.bandwidth=0.25GB/s", "algorithm.name=local_sgd",
                          "algorithm.local_steps=4", "algorithm.bucket=1B"};
    xp_run_result r = run_sets(sets, 4);
    double want = 3 * T + two_bucket_step(B);
    cr_assert_eq(r.iterations, 40);
    double got = r.sim_time / 10;
    cr_assert(fabs(got - want) <= 1e-6 * want, "%.9g s per round, want %.9g", got, want);
    xp_run_result r0 = run_sets(sets, 3);
    cr_assert(fabs(r0.sim_time / 10 - (4 * T + ring_ar(S, a, B))) <= 1e-6 * r0.sim_time / 10);
    cr_assert_eq(r.final_train_loss, r0.final_train_loss);
}

/* Buckets under random crashes and rejoins (crashes in the backward pass
 * and while buckets are reduced): every method reaches its iteration
 * count (a survivor whose round was aborted before its step began buckets it
 * in the group it knew, then abandons them: it entered the new group's
 * buckets before, which then waited for it forever, and allreduce_sgd with
 * Top-k failed here);
 * slowmo over D-PSGD refuses buckets and names the key. */
Test(overlap, buckets_run_through_random_crashes)
{
    const char *methods[][2] = {
        {"algorithm.name=local_sgd", "algorithm.local_steps=3"},
        {"algorithm.name=adaptive_local_sgd", "algorithm.local_steps=2"},
        {"algorithm.name=slowmo", "algorithm.local_steps=3"},
        {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9"},
        {"algorithm.name=hierarchical_local_sgd", "network.topology=hierarchical(2, 2)"},
        {"algorithm.name=allreduce_sgd", "algorithm.compressor=topk(0.1)"},
        {"algorithm.name=gravac", "algorithm.window=3"},
        {"algorithm.name=onebit_adam", "algorithm.freeze_step=10"},
        {"algorithm.name=onebit_lamb", "algorithm.freeze_step=10"},
        {"algorithm.name=overlap_local_sgd", "algorithm.local_steps=2"},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        const char *sets[] = {methods[m][0], methods[m][1], "algorithm.bucket=1B",
                              "network.bandwidth=1GB/s", "faults.mtbf=exponential(60ms)",
                              "faults.downtime=constant(25ms)", "faults.sync_timeout=5ms"};
        xp_run_result r = run_sets(sets, 7);
        cr_assert_eq(r.iterations, 40, "%s", methods[m][0]);
        cr_assert(isfinite(r.final_train_loss), "%s", methods[m][0]);
    }
    sim_err err = {0};
    const char *dpsgd[] = {"algorithm.name=slowmo", "algorithm.base=dpsgd",
                           "algorithm.bucket=1MiB"};
    cr_assert_eq(run_fails(dpsgd, 3, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "bucket") && strstr(err.msg, "base = dpsgd"), "%s", err.msg);
}

/* ---- 1-bit methods and Overlap-Local-SGD in buckets --------------------- */

/* Runs sets at bucket = 0, 1 B (two buckets) and 1 GB (one bucket): the
 * buckets leave the updates alone (identical losses) and one bucket is the
 * unbucketed run exactly (time and losses). */
static void bucketing_keeps_the_run(const char *const *sets, int n, xp_run_result *r0,
                                    xp_run_result *r2)
{
    const char *all[10];
    for (int k = 0; k < n; k++)
        all[k] = sets[k];
    *r0 = run_sets(all, n);
    all[n] = "algorithm.bucket=1GB";
    xp_run_result r1 = run_sets(all, n + 1);
    all[n] = "algorithm.bucket=1B";
    *r2 = run_sets(all, n + 1);
    cr_assert_eq(r1.sim_time, r0->sim_time, "%s: %.9g vs %.9g", sets[0], r1.sim_time,
                 r0->sim_time);
    cr_assert_eq(r1.final_train_loss, r0->final_train_loss, "%s", sets[0]);
    cr_assert_eq(r2->iterations, r0->iterations, "%s", sets[0]);
    cr_assert_eq(r2->final_train_loss, r0->final_train_loss, "%s", sets[0]);
}

/* A 1-bit warm-up step is allreduce_sgd's: the dense all-reduce of the
 * gradient in buckets, max(T, f_1) + A(S_2) with f_1 = r_1 T + A(S_1). The
 * compressed rounds' all-to-all goes in buckets (each its share of the
 * compressed message, the encoding charged after the round): the same
 * bytes, the same models; one bucket is the unbucketed run. */
Test(overlap, onebit_in_buckets)
{
    const char *warm[] = {"algorithm.name=onebit_adam", "network.bandwidth=0.25GB/s",
                          "algorithm.freeze_step=1000", "algorithm.bucket=1B"};
    xp_run_result r = run_sets(warm, 4);
    double want = two_bucket_step(0.25e9);
    double got = r.sim_time / (double)r.iterations;
    cr_assert(fabs(got - want) <= 1e-6 * want, "%.9g s per step, want %.9g", got, want);
    const char *methods[] = {"algorithm.name=onebit_adam", "algorithm.name=onebit_lamb"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {methods[m], "network.bandwidth=0.25GB/s", "algorithm.freeze_step=5",
                              "algorithm.compress_time_per_value=1e-7"};
        xp_run_result r0, r2;
        bucketing_keeps_the_run(sets, 4, &r0, &r2);
        cr_assert(fabs(r2.bytes_sent - r0.bytes_sent) <= 1e-9 * r0.bytes_sent, "%s", methods[m]);
        cr_assert(r2.sim_time < r0.sim_time, "%s: %.9g vs %.9g", methods[m], r2.sim_time,
                  r0.sim_time);
    }
}

/* Overlap-Local-SGD, tau = 2: a worker enters round k's all-reduce and
 * takes its 2 next steps meanwhile; it blocks at the end of them until
 * round k is reduced. In buckets the all-reduce is two collectives back to
 * back, A = A(S_1) + A(S_2) (no backward pass to overlap: its steps
 * overlap the whole of it). With A > 2T a round takes A: 40 steps end at
 * 2T + 18 A + 2T. The same models as without buckets (the bytes differ by
 * the part of the last all-reduce in flight at the end). */
Test(overlap, a_bucketed_overlap_local_sgd_round_against_the_closed_form)
{
    const double T = 0.01, a = 20e-6, S = 4.96e6, B = 0.25e9;
    const double S1 = S * 36 / 124, S2 = S - S1;
    const char *sets[] = {"algorithm.name=overlap_local_sgd", "algorithm.local_steps=2",
                          "network.bandwidth=0.25GB/s"};
    xp_run_result r0, r;
    bucketing_keeps_the_run(sets, 3, &r0, &r);
    double A = ring_ar(S1, a, B) + ring_ar(S2, a, B);
    cr_assert(A > 2 * T);
    cr_assert_eq(r.iterations, 40);
    double want = 4 * T + 18 * A;
    cr_assert(fabs(r.sim_time - want) <= 1e-6 * want, "%.9g s, want %.9g", r.sim_time, want);
    double want0 = 4 * T + 18 * ring_ar(S, a, B);
    cr_assert(fabs(r0.sim_time - want0) <= 1e-6 * want0, "%.9g s, want %.9g", r0.sim_time,
              want0);
}
