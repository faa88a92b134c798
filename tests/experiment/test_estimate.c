/* dtsim estimate (experiment/estimate.c): with the time model only, one
 * iteration of a ring all-reduce costs its closed form, the same as a
 * trained run's; on a hierarchical cluster with a straggler the estimate
 * equals a trained run's iteration time and names the slowest worker; the
 * configured run's length and GPU-hours follow from its limits. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "experiment/experiment.h"
#include "tests/common.h"

static const char *const ring_ini = "[experiment]\n"
                                    "max_iterations = 500\n"
                                    "max_epochs = 0\n"
                                    "[workers]\n"
                                    "count = 4\n"
                                    "compute = constant(10ms)\n"
                                    "[network]\n"
                                    "topology = ring\n"
                                    "bandwidth = 1Gbps\n"
                                    "latency = 5us\n"
                                    "[algorithm]\n"
                                    "name = allreduce_sgd\n"
                                    "batch = 16\n"
                                    "[workload]\n"
                                    "model = softmax\n"
                                    "dataset = blobs(4, 10, 400)\n";

static xp_estimate estimate(const char *ini, const char *const *sets, int n, int64_t iters)
{
    cfg_config cfg;
    test_config_load_ok(xp_experiment_schema(), ini, sets, n, &cfg);
    xp_estimate e;
    sim_err err = {0};
    cr_assert_eq(xp_experiment_estimate(&cfg, iters, 1, &e, &err), 0, "%s", err.msg);
    cfg_release(&cfg);
    return e;
}

/* Ring all-reduce of S = 176 bytes over n = 4 hosts at B = 1 Gb/s with
 * latency a: 2 (n - 1) steps of a + S / (n B) after a 10 ms step. */
Test(estimate, ring_allreduce_closed_form_and_the_trained_runs_time)
{
    xp_estimate e = estimate(ring_ini, NULL, 0, 8);
    const double n = 4, S = 176, B = 1e9 / 8, a = 5e-6;
    const double step = 2 * (n - 1) * (a + S / (n * B));
    cr_assert_eq(e.iterations, 8);
    cr_assert_float_eq(e.iter_time, 0.010 + step, 1e-9, "%.12g", e.iter_time);
    for (int k = 0; k < 2; k++) {
        cr_assert_float_eq(e.compute[k], 0.010, 1e-12);
        cr_assert_float_eq(e.comm[k], 2 * (n - 1) * S / (n * B), 1e-12);
        cr_assert_float_eq(e.idle[k], 2 * (n - 1) * a, 1e-9);
    }
    cr_assert_float_eq(e.bytes_per_iter, n * 2 * (n - 1) * S / n, 1e-9);
    cr_assert_geq(e.busiest_link, 0);
    cr_assert_float_eq(e.link_bytes_per_iter, 2 * (n - 1) * S / n, 1e-9);
    cr_assert_float_eq(e.link_util, e.link_bytes_per_iter / (B * e.iter_time), 1e-9);
    /* the configured run: 500 iterations, 4 GPUs */
    cr_assert_float_eq(e.run_iterations, 500, 0);
    cr_assert_float_eq(e.gpu_hours, 4 * 500 * e.iter_time / 3600, 1e-12);
    /* a trained run takes the same time per iteration */
    const char *sets[] = {"experiment.max_iterations=8"};
    xp_run_result r = test_run_ini(ring_ini, sets, 1, NULL);
    cr_assert_float_eq(r.sim_time / (double)r.iterations, e.iter_time, 1e-12);
}

/* A hierarchical cluster (2 servers of 4 workers, hierarchical
 * all-reduce) with worker 0 twice as slow: the estimate's iteration is a
 * trained run's, worker 0 is the slowest and the others wait for it. */
Test(estimate, hierarchical_cluster_matches_a_trained_run)
{
    const char *sets[] = {"workers.count=8", "network.topology=hierarchical(2, 4)",
                          "network.collective=hierarchical", "workers.compute=constant(10ms)",
                          "workers.stragglers=1", "workers.straggler_slowdown=2",
                          "experiment.max_iterations=6"};
    xp_estimate e = estimate(ring_ini, sets, 7, 6);
    xp_run_result r = test_run_ini(ring_ini, sets, 7, NULL);
    cr_assert_str_eq(r.status, "done");
    cr_assert_float_eq(r.sim_time / (double)r.iterations, e.iter_time, 1e-12);
    cr_assert_eq(e.worker[1], 0);
    cr_assert_eq(e.worker[0], 4); /* ranked 1, ..., 7, 0: the lower median */
    cr_assert_float_eq(e.compute[1], 0.020, 1e-12);
    cr_assert_float_eq(e.compute[0], 0.010, 1e-12);
    cr_assert_gt(e.idle[0], 0.009, "the median worker waits for the straggler");
}

/* max_epochs: iterations from the samples one iteration applies; max_time
 * caps them. */
Test(estimate, configured_run_from_epochs_and_time)
{
    const char *sets[] = {"experiment.max_iterations=0", "experiment.max_epochs=2"};
    xp_estimate e = estimate(ring_ini, sets, 2, 4);
    /* one iteration applies 4 x 16 samples of blobs(4, 10, 400)'s training split */
    cr_assert(isfinite(e.run_iterations) && e.run_iterations >= 2 * 300 / 64.0,
              "%g", e.run_iterations);
    cr_assert_float_eq(e.gpu_hours, 4 * e.run_iterations * e.iter_time / 3600, 1e-15);
    const char *capped[] = {"experiment.max_iterations=0", "experiment.max_epochs=2",
                            "experiment.max_time=50ms"};
    xp_estimate c = estimate(ring_ini, capped, 3, 4);
    cr_assert_float_eq(c.run_iterations, ceil(0.05 / c.iter_time), 0);
    sim_err err = {0};
    cfg_config cfg;
    test_config_load_ok(xp_experiment_schema(), ring_ini, NULL, 0, &cfg);
    cr_assert_eq(xp_experiment_estimate(&cfg, 0, 1, &e, &err), SIM_EUSAGE);
    cfg_release(&cfg);
}

/* Every method of the registry: one that declares no dependence of its time
 * on the data (algo_vt.data_time) gets from the estimate exactly a trained
 * run's time; one that declares it gets the reason in e.data_time (and
 * `dtsim estimate` prints it as a warning). The step time follows the
 * batch (compute = model) and messages have a size, so a method choosing
 * batch or message sizes from the gradients shows it. */
static const char *const data_ini = "[experiment]\n"
                                    "max_iterations = 12\n"
                                    "max_epochs = 0\n"
                                    "[workers]\n"
                                    "count = 4\n"
                                    "compute = model\n"
                                    "device = v100\n"
                                    "[network]\n"
                                    "topology = star\n"
                                    "bandwidth = 1Gbps\n"
                                    "latency = 5us\n"
                                    "[topology]\n"
                                    "graph = ring\n"
                                    "[algorithm]\n"
                                    "batch = 16\n"
                                    "lr_milestones = 1\n"
                                    "[workload]\n"
                                    "model = softmax\n"
                                    "dataset = blobs(4, 10, 400)\n"
                                    "proxy = resnet50\n";

Test(estimate, a_method_whose_time_follows_the_data_says_so_the_others_are_exact,
     .timeout = 300)
{
    int flagged = 0;
    for (int k = 0; algo_registry[k]; k++) {
        const algo_vt *vt = algo_registry[k];
        char name[96];
        snprintf(name, sizeof name, "algorithm.name=%s", vt->name);
        const char *sets[] = {name};
        cfg_config cfg;
        test_config_load_ok(xp_experiment_schema(), data_ini, sets, 1, &cfg);
        const char *why = vt->data_time ? vt->data_time(&cfg) : NULL;
        /* A method that refuses this configuration (a plug-in under test,
         * tests/plugins/three_places.sh) is refused by estimate alike. */
        xp_run_result r;
        sim_err rerr = {0};
        if (test_run_try(data_ini, sets, 1, NULL, &r, &rerr) == SIM_ECONFIG) {
            xp_estimate refused;
            sim_err eerr = {0};
            cr_assert_eq(xp_experiment_estimate(&cfg, 12, 1, &refused, &eerr), SIM_ECONFIG,
                         "%s: run refused (%s), estimate did not", vt->name, rerr.msg);
            cfg_release(&cfg);
            continue;
        }
        cfg_release(&cfg);
        xp_estimate e = estimate(data_ini, sets, 1, 12);
        cr_assert_str_eq(r.status, "done", "%s: %s", vt->name, rerr.msg);
        double trained = r.sim_time / (double)r.iterations;
        if (!why) {
            cr_assert_str_eq(e.data_time, "", "%s", vt->name);
            cr_assert(fabs(e.iter_time - trained) <= 1e-12 * trained,
                      "%s declares no data dependence, but its estimate is %.9g s per "
                      "iteration against %.9g s trained", vt->name, e.iter_time, trained);
        } else {
            flagged++;
            cr_assert_str_eq(e.data_time, why, "%s", vt->name);
        }
    }
    cr_assert_gt(flagged, 0);
    /* consensus_control: only its adaptive phases follow the data */
    const char *cc[] = {"algorithm.name=consensus_control", "algorithm.adaptive_phases=all"};
    xp_estimate e = estimate(data_ini, cc, 2, 4);
    cr_assert(strstr(e.data_time, "adaptive_phases"), "%s", e.data_time);
}
