/* gravac (docs/algorithms.md section 9): with theta = 1 the method is
 * dense all-reduce SGD up to rounding; during the window it sends Top-k at
 * theta_min (8k bytes gathered); a gain threshold of 100 is
 * never met, so after the window it falls back to the dense all-reduce; the
 * compression compute is charged. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dec_harness.h"

static void run_model(const char *const *sets, int nsets, int64_t iters, float *x)
{
    harness h;
    h_build(&h, base_ini, sets, nsets);
    h_run(&h, iters);
    float *scratch = malloc((size_t)h.env->d * sizeof *scratch);
    memcpy(x, h.vt->model(h.alg, scratch), (size_t)h.env->d * sizeof *x);
    free(scratch);
    h_free(&h);
}

Test(gravac, theta_one_equals_dense)
{
    const int64_t d = 44, iters = 120;
    float dense[44], gv[44];
    const char *base[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9"};
    const char *gr[] = {"algorithm.name=gravac", "algorithm.momentum=0.9",
                        "algorithm.theta_min=1", "algorithm.theta_max=1"};
    run_model(base, 2, iters, dense);
    run_model(gr, 4, iters, gv);
    double worst = 0, scale = 0;
    for (int64_t j = 0; j < d; j++) {
        worst = fmax(worst, fabs((double)dense[j] - gv[j]));
        scale = fmax(scale, fabs((double)dense[j]));
    }
    cr_assert_leq(worst / scale, 1e-5, "gap %g", worst / scale);
}

static sim_run_result run_ini(const char *ini, const char *const *sets, int nsets)
{
    sim_config cfg;
    sim_err err = {0};
    cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "c.ini", ini, sets, nsets, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    sim_run_opts opts = {0};
    sim_run_result res;
    cr_assert_eq(sim_experiment_run(&cfg, &opts, &res, &err), 0, "%s", err.msg);
    sim_config_release(&cfg);
    return res;
}

static const char *const star_ini = "[experiment]\n"
                                    "seed = 5\n"
                                    "max_epochs = 0\n"
                                    "max_iterations = 50\n"
                                    "eval_every = 25\n"
                                    "eval_train_samples = 200\n"
                                    "[workers]\n"
                                    "count = 4\n"
                                    "compute = constant(10ms)\n"
                                    "[network]\n"
                                    "topology = star\n"
                                    "[algorithm]\n"
                                    "name = gravac\n"
                                    "batch = 16\n"
                                    "[workload]\n"
                                    "model = softmax\n"
                                    "dataset = blobs(4, 10, 2000)\n"
                                    "sim_params = 10000\n";

Test(gravac, window_then_dense_fallback_bytes)
{
    const double n = 4, T = 50, k = 1000; /* theta_min 0.1 of d_wire 10000 */
    const char *s1[] = {"algorithm.window=1000"};
    sim_run_result r = run_ini(star_ini, s1, 1);
    cr_assert_eq(r.iterations, 50);
    cr_assert_eq(r.bytes_sent, T * n * (n - 1) * 8 * k, "%g", r.bytes_sent);
    /* gain < 100 (it can pass 1 with error feedback): after 10 rounds at theta_min, dense ring all-reduce */
    const char *s2[] = {"algorithm.window=10", "algorithm.gain_threshold=100"};
    r = run_ini(star_ini, s2, 2);
    cr_assert_eq(r.bytes_sent, 10 * n * (n - 1) * 8 * k + (T - 10) * 2 * (n - 1) * 4 * 10000,
                 "%g", r.bytes_sent);
}

Test(gravac, compression_time_is_charged)
{
    /* 1 us per value x 10000 = 10 ms per Top-k call, one call while
     * theta_c = theta_min (the first epoch ends in round 32): twice the compute
     * of no charge; after the first epoch's search theta_c = 0.05 and a
     * step makes two calls: 32 x 20 ms + 18 x 30 ms */
    const char *s0[] = {"algorithm.window=1000", "algorithm.compress_time_per_value=0",
                        "network.topology=ideal", "experiment.max_iterations=30"};
    const char *s1[] = {"algorithm.window=1000", "algorithm.compress_time_per_value=1e-6",
                        "network.topology=ideal", "experiment.max_iterations=30"};
    sim_run_result a = run_ini(star_ini, s0, 4), b = run_ini(star_ini, s1, 4);
    cr_assert_float_eq(b.sim_time, 2 * a.sim_time, 1e-6 * a.sim_time, "%g vs %g", b.sim_time,
                       a.sim_time);
    s1[3] = "experiment.max_iterations=50";
    b = run_ini(star_ini, s1, 4);
    cr_assert_float_eq(b.sim_time, 32 * 0.02 + 18 * 0.03, 1e-6, "%g", b.sim_time);
}
