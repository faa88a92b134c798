/* The crash-conformance table: properties every method that supports
 * worker crashes shares, checked for each row of one table of methods
 * (docs/faults.md), so that a new method gets the fault tests by adding a
 * row. Per row: (a) no crash equals the plain run (a schedule holding only
 * a slowdown of 1, and one holding only an event past the end, give the
 * metric rows of the run without a schedule); (b) a single crash of a
 * worker costs the timeout once and the run continues over the survivors;
 * (c) random crashes and rejoins run through and give the same rows at 1,
 * 2 and 4 threads; (d) a method or configuration that refuses crashes
 * names the key that makes it refuse. Below the table: the synchronous
 * methods with compression (gravac, the 1-bit methods) under random
 * crashes and their refusal of the hierarchical collective. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/core/fault.h"
#include "tests/algorithms/harness.h"

/* gravac, onebit_adam and onebit_lamb run through random crashes and
 * rejoins (several a worker): every worker keeps taking part, the model
 * stays finite, and the crash and rejoin rows are there. */
Test(crash_conformance, scrash_methods_run_through_random_crashes)
{
    const char *methods[][2] = {
        {"algorithm.name=gravac", "algorithm.window=5"},
        {"algorithm.name=onebit_adam", "algorithm.freeze_step=20"},
        {"algorithm.name=onebit_lamb", "algorithm.freeze_step=20"},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        const char *sets[] = {methods[m][0], methods[m][1], "faults.mtbf=exponential(60ms)",
                              "faults.downtime=constant(25ms)", "faults.sync_timeout=5ms",
                              "algorithm.lr=0.01"};
        harness h;
        h_build(&h, test_base_ini, sets, 6);
        h_run(&h, 300);
        for (int i = 0; i < h.env->n; i++)
            cr_assert_gt(h.env->w[i].steps, 20, "%s: worker %d", methods[m][0], i);
        float s[64];
        const float *x = h.vt->model(h.alg, s);
        for (int64_t j = 0; j < h.env->d; j++)
            cr_assert(isfinite(x[j]), "%s", methods[m][0]);
        h_free(&h);
    }
}

/* gravac and the 1-bit methods refuse the hierarchical collective under
 * crashes (its groups of per_node ranks would not survive one). */
Test(crash_conformance, scrash_methods_refuse_the_hierarchical_collective)
{
    sim_experiment_init();
    static const char *const names[] = {"algorithm.name=gravac", "algorithm.name=onebit_adam",
                                        "algorithm.name=onebit_lamb"};
    for (int k = 0; k < 3; k++) {
        const char *sets[] = {names[k], "faults.mtbf=exponential(1s)",
                              "network.topology=hierarchical(2, 4)",
                              "network.collective=hierarchical"};
        sim_config cfg;
        sim_err err = {0};
        cr_assert_eq(sim_config_load_string("h.ini", test_base_ini, sets, 4, &cfg, &err), 0, "%s",
                     err.msg);
        xp_env *x = xp_env_create(&cfg, NULL, &err);
        cr_assert_not_null(x, "%s", err.msg);
        cr_assert_eq(xp_env_algo_create(x, &err), SIM_ECONFIG, "%s", err.msg);
        cr_assert_str_eq(err.msg, "--set network.collective: the hierarchical collective does "
                                  "not support worker crashes ([faults]); use ring, tree or ps");
        xp_env_destroy(x);
        sim_config_release(&cfg);
    }
}
