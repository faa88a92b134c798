/* Compressed gossip (CHOCO) for dpsgd and dsgd_atc (algorithms/methods/choco_rule.c,
 * docs/compressors.md): with a compressor that keeps everything and
 * consensus_step 1 the methods equal their uncompressed forms up to
 * rounding; compressor none leaves them bit for bit unchanged; the mean of
 * the models moves only by the local steps (here none: lr = 0, independent
 * initial models) while the models reach consensus; the network carries
 * exactly one compressed message per neighbour and iteration; bad keys are
 * configuration errors naming them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/algorithms/harness.h"

/* every worker's model after `iters` iterations into xs (n x d) */
static void run_models(const char *const *sets, int nsets, int64_t iters, float *xs)
{
    harness h;
    h_build(&h, test_base_ini, sets, nsets);
    h_run(&h, iters);
    const int n = h.env->n;
    const int64_t d = h.env->d;
    const float **ptr = malloc((size_t)n * sizeof *ptr);
    h.vt->worker_models(h.alg, ptr);
    for (int i = 0; i < n; i++)
        memcpy(xs + (size_t)i * (size_t)d, ptr[i], (size_t)d * sizeof *xs);
    free(ptr);
    h_free(&h);
}

#define N 8
#define D 44

Test(choco, keep_everything_equals_the_uncompressed_method)
{
    static float ref[N * D], got[N * D];
    const char *methods[] = {"algorithm.name=dsgd_atc", "algorithm.name=dpsgd"};
    const char *moms[] = {"algorithm.momentum=0", "algorithm.momentum=0.9"};
    for (int m = 0; m < 2; m++)
        for (int b = 0; b < 2; b++) {
            const char *plain[] = {methods[m], moms[b], "algorithm.compressor=none"};
            const char *full[] = {methods[m], moms[b], "algorithm.compressor=topk(1)",
                                  "algorithm.consensus_step=1"};
            run_models(plain, 3, 150, ref);
            run_models(full, 4, 150, got);
            double gap = max_rel_gap(ref, got, N * D);
            cr_assert_leq(gap, 1e-5, "%s %s: gap %g", methods[m], moms[b], gap);
            /* none ignores consensus_step: the uncompressed path, bit for bit */
            const char *none[] = {methods[m], moms[b], "algorithm.compressor=none",
                                  "algorithm.consensus_step=0.3"};
            run_models(none, 4, 150, got);
            cr_assert_eq(memcmp(ref, got, sizeof ref), 0, "%s %s: none differs", methods[m],
                         moms[b]);
            /* compression changes the trajectory (the check above is not vacuous) */
            const char *half[] = {methods[m], moms[b], "algorithm.compressor=topk(0.5)",
                                  "algorithm.consensus_step=1"};
            run_models(half, 4, 150, got);
            cr_assert_gt(max_rel_gap(ref, got, N * D), 1e-4, "%s %s", methods[m], moms[b]);
        }
}

static double g_sum0[D];
static double g_worst;

static void mean_probe(harness *h)
{
    double s[D];
    h_sum(h, s);
    double scale = 0, gap = 0;
    for (int j = 0; j < D; j++) {
        scale = fmax(scale, fabs(g_sum0[j]));
        gap = fmax(gap, fabs(s[j] - g_sum0[j]));
    }
    g_worst = fmax(g_worst, gap / scale);
}

/* lr = 1e-20 (lr must be > 0): the local steps vanish in float32, so
 * sum_i x_i must stay where it started (1e-5) while the compressed gossip
 * pulls independent models together: after 600 iterations on the ring the
 * consensus distance is below 1e-3 of its start with consensus_step 0.2
 * (observed 5e-8 to 3e-7; with 0.4, topk(0.1) of 44 entries diverges). */
Test(choco, mean_is_preserved_and_models_reach_consensus)
{
    const char *comps[] = {"algorithm.compressor=topk(0.1)", "algorithm.compressor=randomk(0.2)",
                           "algorithm.compressor=sign", "algorithm.compressor=qsgd(4, 8)"};
    const char *methods[] = {"algorithm.name=dsgd_atc", "algorithm.name=dpsgd"};
    for (int m = 0; m < 2; m++)
        for (size_t c = 0; c < sizeof comps / sizeof comps[0]; c++) {
            const char *sets[] = {methods[m], comps[c], "algorithm.lr=1e-20",
                                  "workload.init=independent", "algorithm.consensus_step=0.2"};
            harness h;
            h_build(&h, test_base_ini, sets, 5);
            h_sum(&h, g_sum0);
            double c0 = h_consensus(&h);
            g_worst = 0;
            h.probe = mean_probe;
            h_run(&h, 600);
            double c1 = h_consensus(&h);
            cr_assert_leq(g_worst, 1e-5, "%s %s: mean moved by %g", methods[m], comps[c],
                          g_worst);
            cr_assert_lt(c1, 1e-3 * c0, "%s %s: consensus distance %g -> %g", methods[m],
                         comps[c], c0, c1);
            h_free(&h);
        }
}

/* On a ring every worker sends one message to each of its 2 neighbours per
 * iteration: with d_wire = 10000, topk(0.01) is 8 x 100 bytes, randomk(0.01)
 * 4 x 100, sign 1250 + 4; uncompressed 4 x 10000. dpsgd (AWC) publishes at
 * the start of an iteration, so at the end of iteration T every worker has
 * begun its message of iteration T + 1, which has sent nothing yet: T
 * messages count (bytes sent by then, docs/database.md). */
Test(choco, network_carries_one_compressed_message_per_neighbour)
{
    const double T = 150, n = N;
    struct {
        const char *method, *comp;
        double bytes, sends;
    } cases[] = {
        {"algorithm.name=dsgd_atc", "algorithm.compressor=topk(0.01)", 800, T},
        {"algorithm.name=dpsgd", "algorithm.compressor=topk(0.01)", 800, T},
        {"algorithm.name=dpsgd", "algorithm.compressor=randomk(0.01)", 400, T},
        {"algorithm.name=dsgd_atc", "algorithm.compressor=sign", 1254, T},
        {"algorithm.name=dsgd_atc", "algorithm.compressor=none", 40000, T},
        {"algorithm.name=dpsgd", "algorithm.compressor=none", 40000, T},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *sets[] = {cases[c].method, cases[c].comp, "network.topology=star",
                              "workload.sim_params=10000", "algorithm.consensus_step=0.5"};
        xp_run_result r = test_run_ini(test_base_ini, sets, 5, NULL);
        cr_assert_eq(r.iterations, (int64_t)T);
        cr_assert_eq(r.bytes_sent, cases[c].sends * n * 2 * cases[c].bytes, "%s %s: %g", cases[c].method,
                     cases[c].comp, r.bytes_sent);
    }
}

static void create_fails(const char *const *sets, int nsets, const char *want)
{
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "c.ini", test_base_ini, sets,
                                        nsets, &cfg, &err), 0, "%s",
                 err.msg);
    xp_run_opts opts = {0};
    cr_assert_eq(xp_experiment_run(&cfg, &opts, NULL, &err), SIM_ECONFIG, "%s", sets[0]);
    cr_assert(strstr(err.msg, want), "got '%s', want '%s'", err.msg, want);
    cfg_release(&cfg);
}

Test(choco, bad_keys_are_config_errors)
{
    const char *g0[] = {"algorithm.compressor=topk(0.1)", "algorithm.consensus_step=0"};
    create_fails(g0, 2, "--set algorithm.consensus_step: must be in (0, 1], got 0");
    const char *g2[] = {"algorithm.compressor=topk(0.1)", "algorithm.consensus_step=1.5"};
    create_fails(g2, 2, "--set algorithm.consensus_step: must be in (0, 1], got 1.5");
    const char *ef[] = {"algorithm.compressor=topk(0.1)", "algorithm.error_feedback=false"};
    create_fails(ef, 2, "--set algorithm.error_feedback: dsgd_atc with a compressor keeps "
                        "public copies x_hat (CHOCO)");
    const char *st[] = {"algorithm.compressor=topk(0.1)", "algorithm.gossip_steps=2",
                        "algorithm.name=dpsgd"};
    create_fails(st, 3, "--set algorithm.gossip_steps: dpsgd with a compressor takes one "
                        "gossip step per iteration, got 2");
    const char *dm[] = {"algorithm.compressor=topk(0.1)", "algorithm.name=dmsgd"};
    create_fails(dm, 2, "--set algorithm.compressor: dmsgd does not support compression");
}
