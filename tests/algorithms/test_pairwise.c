/* The pairwise-averaging driver (algorithms/drivers/pairwise.c:
 * ad_psgd, swarm_sgd) under crashes: the live workers' mean is kept while
 * a worker is down. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/core/fault.h"
#include "tests/algorithms/harness.h"

/* ---- pairwise averaging under crashes ---------------------------------- */

/* ad_psgd and swarm_sgd (symmetric, H = 1) on a ring of 8 with lr = 1e-30
 * (below float rounding) and independent initial models: only
 * averagings change the models. While worker 3 is down (0.1 s to 0.3 s) its
 * neighbours draw their partners among the live ones, requests to it are
 * dropped (the sender times out after 20 ms), and every averaging is
 * between two live workers, so the live workers' mean stays what it was
 * (float rounding: 1e-5). The run goes on after the rejoin. */
Test(pairwise, pairwise_methods_keep_the_live_mean_while_a_worker_is_down)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "0.1s,crash,3,\n"
                          "0.3s,rejoin,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *methods[] = {"algorithm.name=ad_psgd", "algorithm.name=swarm_sgd"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {set, methods[m], "algorithm.lr=1e-30",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              "network.topology=star", "network.latency=100us"};
        static live_mean lm;
        memset(&lm, 0, sizeof lm);
        harness h;
        h_build(&h, test_base_ini, sets, 7);
        cr_assert_leq(h.env->d, 64);
        h.probe = probe_live_mean;
        h.probe_ctx = &lm;
        h_run(&h, 400);
        cr_assert(lm.have_ref, "%s", methods[m]);
        cr_assert_gt(lm.checked, 50, "%s", methods[m]);
        cr_assert_lt(lm.worst, 1e-5, "%s: the live mean moved by %g", methods[m], lm.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_gt(h.env->w[3].steps, 0);
        /* worker 3 computed nothing while down: 10 ms steps over 0.2 s less */
        cr_assert_lt(h.env->w[3].steps, h.env->w[2].steps - 15, "%s", methods[m]);
        h_free(&h);
    }
    unlink(path);
}
