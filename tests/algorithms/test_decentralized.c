/* Decentralized methods through the experiment runner, against known
 * answers: the equivalences of docs/algorithms.md section 12 (decentlam with
 * beta = 0 is ATC-DSGD; decentlam, dmsgd and ATC D-SGD with W = J are PmSGD /
 * mini-batch SGD; consensus control with W = J keeps Xi = 0;
 * momentum_consensus with beta = 0 is D-PSGD), neighbour-level synchrony
 * with a straggler, metric rows that do not depend on timing, message
 * volumes, lattice quantization, determinism and configuration errors.
 * The harness-based checks (fixed points, mean preservation, contraction)
 * are in test_gossip.c. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/drivers/gossip.h"
#include "config/config.h"
#include "experiment/experiment.h"
#include "sim/rng.h"
#include "tests/algorithms/harness.h"

/* ---- runs through the experiment runner --------------------------------- */

static test_rows ra, rb;

Test(decentralized, decentlam_with_beta_0_equals_dsgd_atc)
{
    const char *s1[] = {"algorithm.name=decentlam", "algorithm.momentum=0"};
    const char *s2[] = {"algorithm.name=dsgd_atc", "algorithm.momentum=0"};
    test_run_ini(test_base_ini, s1, 2, &ra);
    test_run_ini(test_base_ini, s2, 2, &rb);
    test_rows_assert_close(&ra, &rb, 1e-5, "decentlam(beta=0) vs dsgd_atc");
    for (int i = 1; i < ra.n; i++)
        cr_assert(fabs(ra.r[i].consensus_distance - rb.r[i].consensus_distance) <=
                      1e-4 * rb.r[i].consensus_distance + 1e-7,
                  "row %d consensus %.9g vs %.9g", i, ra.r[i].consensus_distance,
                  rb.r[i].consensus_distance);
    cr_assert_gt(rb.r[ra.n - 1].consensus_distance, 1e-4, "the ring must not be exact");
}

/* Complete graph with Metropolis weights: W_ij = 1/(1 + (n - 1)) = 1/n = J. */
static void check_equals_allreduce(const char *name, const char *momentum, const char *extra)
{
    char a1[64], a2[64];
    snprintf(a1, sizeof a1, "algorithm.name=%s", name);
    snprintf(a2, sizeof a2, "algorithm.momentum=%s", momentum);
    const char *s1[] = {a1, a2, "topology.graph=complete", "algorithm.lr_milestones=0.3",
                        extra ? extra : "algorithm.lr=0.1"};
    const char *s2[] = {"algorithm.name=allreduce_sgd", a2, "algorithm.lr_milestones=0.3"};
    test_run_ini(test_base_ini, s1, 5, &ra);
    test_run_ini(test_base_ini, s2, 3, &rb);
    test_rows_assert_close(&ra, &rb, 1e-5, name);
}

Test(decentralized, dsgd_atc_with_w_equal_j_is_minibatch_sgd)
{
    check_equals_allreduce("dsgd_atc", "0", NULL);
    for (int i = 0; i < ra.n; i++)
        cr_assert_eq(ra.r[i].consensus_distance, 0.0, "row %d: W = J keeps the workers equal",
                     i);
}

Test(decentralized, dmsgd_with_w_equal_j_is_pmsgd)
{
    check_equals_allreduce("dmsgd", "0.9", NULL);
}

Test(decentralized, dmsgd_nesterov_with_w_equal_j_is_pmsgd_nesterov)
{
    const char *s1[] = {"algorithm.name=dmsgd", "algorithm.momentum=0.9",
                        "algorithm.nesterov=true", "topology.graph=complete"};
    const char *s2[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9",
                        "algorithm.nesterov=true"};
    test_run_ini(test_base_ini, s1, 4, &ra);
    test_run_ini(test_base_ini, s2, 3, &rb);
    test_rows_assert_close(&ra, &rb, 1e-5, "dmsgd nesterov");
}

Test(decentralized, decentlam_with_w_equal_j_is_pmsgd)
{
    check_equals_allreduce("decentlam", "0.9", NULL);
}

Test(decentralized, dpsgd_atc_with_w_equal_j_is_minibatch_sgd_but_awc_is_not)
{
    check_equals_allreduce("dpsgd", "0", "algorithm.form=atc");
    /* AWC: x_i^{k+1} = xbar^k - lr g_i, the workers differ by their own step */
    const char *s1[] = {"algorithm.name=dpsgd", "topology.graph=complete"};
    test_run_ini(test_base_ini, s1, 2, &ra);
    cr_assert_gt(ra.r[ra.n - 1].consensus_distance, 1e-3,
                 "AWC with W = J keeps a consensus distance of lr |g_i - gbar|");
}

Test(decentralized, consensus_control_with_w_equal_j_has_zero_consensus_distance)
{
    check_equals_allreduce("consensus_control", "0.9", "algorithm.gossip_steps=2");
    for (int i = 0; i < ra.n; i++)
        cr_assert_eq(ra.r[i].consensus_distance, 0.0, "row %d", i);
}

Test(decentralized, consensus_control_exact_phases_is_pmsgd_on_a_ring)
{
    const char *s1[] = {"algorithm.name=consensus_control", "algorithm.momentum=0.9",
                        "algorithm.exact_phases=all"};
    const char *s2[] = {"algorithm.name=allreduce_sgd", "algorithm.momentum=0.9"};
    xp_run_result r1 = test_run_ini(test_base_ini, s1, 3, &ra);
    test_run_ini(test_base_ini, s2, 2, &rb);
    test_rows_assert_close(&ra, &rb, 1e-5, "consensus_control exact");
    for (int i = 0; i < ra.n; i++)
        cr_assert_eq(ra.r[i].consensus_distance, 0.0, "row %d", i);
    (void)r1;
}

Test(decentralized, momentum_consensus_with_beta_0_is_dpsgd_awc)
{
    const char *s1[] = {"algorithm.name=momentum_consensus", "algorithm.momentum=0"};
    const char *s2[] = {"algorithm.name=dpsgd"};
    xp_run_result a = test_run_ini(test_base_ini, s1, 2, &ra);
    xp_run_result b = test_run_ini(test_base_ini, s2, 1, &rb);
    test_rows_assert_close(&ra, &rb, 0.0, "momentum_consensus(beta=0) vs dpsgd");
    /* twice the bytes: x and v to every neighbour */
    cr_assert(fabs(a.bytes_sent - 2 * b.bytes_sent) < 1e-6 * a.bytes_sent, "%g vs 2 x %g",
              a.bytes_sent, b.bytes_sent);
}

/* The numbers of a synchronous method do not depend on timing: a straggler
 * and a slow network change when things happen, not what is computed; the
 * evaluated x^{k+1} snapshots make the rows equal even when workers run
 * ahead of the straggler. */
Test(decentralized, rows_do_not_depend_on_stragglers_or_network)
{
    const char *names[] = {"dpsgd", "decentlam", "momentum_consensus", "consensus_control"};
    for (int a = 0; a < 4; a++) {
        char nm[64];
        snprintf(nm, sizeof nm, "algorithm.name=%s", names[a]);
        const char *s1[] = {nm, "algorithm.momentum=0.5", "experiment.eval_every=1",
                            "experiment.max_iterations=60"};
        const char *s2[] = {nm,
                            "algorithm.momentum=0.5",
                            "experiment.eval_every=1",
                            "experiment.max_iterations=60",
                            "workers.stragglers=1",
                            "workers.straggler_slowdown=7",
                            "network.topology=star",
                            "network.latency=2ms",
                            "workers.compute=lognormal(10ms, 0.5)"};
        test_run_ini(test_base_ini, s1, 4, &ra);
        test_run_ini(test_base_ini, s2, 9, &rb);
        test_rows_assert_close(&ra, &rb, 0.0, names[a]);
        for (int i = 0; i < ra.n; i++)
            cr_assert_eq(ra.r[i].consensus_distance, rb.r[i].consensus_distance,
                         "%s row %d consensus", names[a], i);
        cr_assert_lt(ra.r[ra.n - 1].sim_time, rb.r[rb.n - 1].sim_time);
    }
}

Test(decentralized, one_peer_exponential_graph_runs_every_sync_method_timing_free)
{
    const char *names[] = {"dpsgd", "dsgd_atc", "dmsgd", "decentlam", "momentum_consensus",
                           "consensus_control"};
    for (int a = 0; a < 6; a++) {
        char nm[64];
        snprintf(nm, sizeof nm, "algorithm.name=%s", names[a]);
        const char *s1[] = {nm, "topology.graph=one_peer_exponential", "algorithm.momentum=0.5",
                            "algorithm.gossip_steps=2"};
        const char *s2[] = {nm,
                            "topology.graph=one_peer_exponential",
                            "algorithm.momentum=0.5",
                            "algorithm.gossip_steps=2",
                            "workers.stragglers=2",
                            "workers.straggler_slowdown=5",
                            "workers.compute=exponential(10ms)",
                            "network.topology=star",
                            "network.latency=1ms"};
        xp_run_result r = test_run_ini(test_base_ini, s1, 4, &ra);
        test_run_ini(test_base_ini, s2, 9, &rb);
        cr_assert_eq(r.iterations, 150, "%s", names[a]);
        test_rows_assert_close(&ra, &rb, 0.0, names[a]);
        cr_assert_lt(ra.r[ra.n - 1].train_loss, 0.5 * ra.r[0].train_loss, "%s learns",
                     names[a]);
    }
}

Test(decentralized, same_experiment_twice_gives_identical_rows)
{
    const char *names[] = {"dpsgd", "ad_psgd", "swarm_sgd", "consensus_control"};
    for (int a = 0; a < 4; a++) {
        char nm[64];
        snprintf(nm, sizeof nm, "algorithm.name=%s", names[a]);
        const char *s[] = {nm, "workers.compute=lognormal(10ms, 0.5)", "network.topology=star",
                           "network.latency=1ms", "algorithm.adaptive_phases=all"};
        int ns = strcmp(names[a], "consensus_control") == 0 ? 5 : 4;
        test_run_ini(test_base_ini, s, ns, &ra);
        test_run_ini(test_base_ini, s, ns, &rb);
        cr_assert_gt(ra.n, 5);
        cr_assert_eq(ra.n, rb.n);
        cr_assert_eq(memcmp(ra.r, rb.r, (size_t)ra.n * sizeof ra.r[0]), 0,
                     "%s: rows differ between two identical runs", names[a]);
    }
}

/* Neighbour-level synchrony: on a ring with a 4x straggler (worker 0), the
 * straggler never waits, so K iterations end at exactly K x 40 ms, while a
 * worker at ring distance 4 runs several iterations ahead of it (no global
 * barrier). */
Test(decentralized, dpsgd_waits_only_for_neighbours)
{
    const char *s[] = {"algorithm.name=dpsgd", "workers.stragglers=1",
                       "workers.straggler_slowdown=4", "experiment.max_iterations=100"};
    xp_run_result r = test_run_ini(test_base_ini, s, 4, &ra);
    cr_assert_eq(r.iterations, 100);
    cr_assert(fabs(r.sim_time - 4.0) < 1e-9, "sim time %.12g, expected 100 x 40 ms",
              r.sim_time);
    /* every worker other than the straggler idles 30 of every 40 ms in
     * steady state, less while it runs ahead */
    cr_assert(r.idle_fraction > 0.5 && r.idle_fraction < 7.0 / 8.0 * 0.75 + 1e-9,
              "idle fraction %.4f", r.idle_fraction);
}

Test(decentralized, lattice_quantization_decodes_against_a_close_reference)
{
    enum { D = 1000 };
    static float x[D], ref[D], codes[D], out[D];
    gsl_rng *r = sim_rng_create(1, SIM_STREAM_NOISE, 0);
    const int q = 16;
    const double s = 0.01; /* exact while |x - ref| < q s / 2 = 0.08 */
    for (int j = 0; j < D; j++) {
        x[j] = (float)(gsl_rng_uniform(r) * 4 - 2);
        ref[j] = x[j] + (float)((gsl_rng_uniform(r) * 2 - 1) * 0.07);
    }
    algo_lattice_encode(codes, x, D, q, s);
    algo_lattice_decode(out, codes, ref, D, q, s);
    for (int j = 0; j < D; j++) {
        cr_assert(codes[j] >= 0 && codes[j] < q && codes[j] == floorf(codes[j]));
        double lattice = s * rint(x[j] / s);
        cr_assert(fabs(out[j] - lattice) < 1e-6, "j %d: %.7f vs %.7f", j, out[j], lattice);
        cr_assert(fabs(out[j] - x[j]) <= s / 2 + 1e-6);
    }
    /* a reference q s away decodes one lattice period off */
    for (int j = 0; j < D; j++)
        ref[j] = x[j] + (float)(q * s);
    algo_lattice_decode(out, codes, ref, D, q, s);
    for (int j = 0; j < D; j++)
        cr_assert(fabs(out[j] - s * rint(x[j] / s) - q * s) < 1e-5, "j %d", j);
    gsl_rng_free(r);
}

/* ---- communication volume ----------------------------------------------- */

/* softmax on blobs(4, 10): d = 44, S = 176 bytes; 8 workers on a ring. */
Test(decentralized, gossip_bytes_per_iteration)
{
    const double S = 176, n = 8, K = 150;
    const char *atc[] = {"algorithm.name=dsgd_atc"};
    const char *awc[] = {"algorithm.name=dpsgd"};
    const char *q3[] = {"algorithm.name=decentlam", "algorithm.gossip_steps=3"};
    const char *mc[] = {"algorithm.name=momentum_consensus"};
    const char *ex[] = {"algorithm.name=consensus_control", "algorithm.exact_phases=1"};
    xp_run_result r;
    r = test_run_ini(test_base_ini, atc, 1, NULL);
    cr_assert_eq(r.bytes_sent, K * n * 2 * S, "ATC: %.0f", r.bytes_sent);
    /* AWC: iteration K + 1 has been sent when K completes */
    r = test_run_ini(test_base_ini, awc, 1, NULL);
    cr_assert_eq(r.bytes_sent, (K + 1) * n * 2 * S, "AWC: %.0f", r.bytes_sent);
    r = test_run_ini(test_base_ini, q3, 2, NULL);
    cr_assert_eq(r.bytes_sent, 3 * K * n * 2 * S, "q = 3: %.0f", r.bytes_sent);
    r = test_run_ini(test_base_ini, mc, 1, NULL);
    cr_assert_eq(r.bytes_sent, (K + 1) * n * 2 * 2 * S, "x and v: %.0f", r.bytes_sent);
    /* exact averaging: a ring all-reduce of S, 2 (n - 1) S in all */
    r = test_run_ini(test_base_ini, ex, 2, NULL);
    cr_assert(fabs(r.bytes_sent - K * 2 * (n - 1) * S) < 1e-6, "exact: %.0f", r.bytes_sent);
    cr_assert_eq(r.consensus_distance, 0.0);
}

Test(decentralized, swarm_quantized_message_size)
{
    const char *full[] = {"algorithm.name=swarm_sgd"};
    const char *quant[] = {"algorithm.name=swarm_sgd", "algorithm.quant_levels=16",
                           "algorithm.quant_step=0.01"};
    const char *full1[] = {"algorithm.name=swarm_sgd", "algorithm.variant=one_sided"};
    const char *quant1[] = {"algorithm.name=swarm_sgd", "algorithm.quant_levels=16",
                            "algorithm.quant_step=0.01", "algorithm.variant=one_sided"};
    /* d = 44 values of log2(16) = 4 bits: 22 bytes + a 64-byte header */
    xp_run_result a = test_run_ini(test_base_ini, full, 1, NULL);
    xp_run_result b = test_run_ini(test_base_ini, quant, 3, NULL);
    cr_assert_gt(a.bytes_sent, 0);
    cr_assert(fabs(b.bytes_sent / a.bytes_sent - 86.0 / 176.0) < 1e-12, "ratio %.9f",
              b.bytes_sent / a.bytes_sent);
    /* one-sided: R read requests of 64 bytes and P replies of a model; the
     * same R and P in both runs (ideal network, same draws) */
    xp_run_result c = test_run_ini(test_base_ini, full1, 2, NULL);
    xp_run_result e = test_run_ini(test_base_ini, quant1, 4, NULL);
    double P = (c.bytes_sent - e.bytes_sent) / (176.0 - 86.0);
    double R = (e.bytes_sent - 86.0 * P) / 64.0;
    cr_assert(P > 100 && P == floor(P) && R == floor(R), "R %.4f, P %.4f", R, P);
    cr_assert(R >= P && R <= P + 8, "R %.0f requests, P %.0f replies", R, P);
    cr_assert_lt(b.final_train_loss, 1.2 * a.final_train_loss + 0.05,
                 "quantized %.4f vs %.4f", b.final_train_loss, a.final_train_loss);
}

/* ad_psgd on a ring of 8: the even workers initiate (S bytes per step), the
 * odd ones only answer. */
/* ---- configuration errors ----------------------------------------------- */

static void expect_config_error(const char *const *sets, int nsets, const char *key)
{
    cfg_config cfg;
    sim_err err = {0};
    int rc = cfg_load_string(xp_experiment_schema(), "test.ini", test_base_ini, sets,
                                    nsets, &cfg, &err);
    if (rc == 0) {
        rc = xp_experiment_run(&cfg, NULL, NULL, &err);
        cfg_release(&cfg);
    }
    cr_assert_eq(rc, SIM_ECONFIG, "%s: rc %d (%s)", key, rc, err.msg);
    cr_assert_not_null(strstr(err.msg, key), "message '%s' does not name %s", err.msg, key);
}

Test(decentralized, bad_keys_are_config_errors_naming_the_key)
{
    const char *a[] = {"algorithm.name=swarm_sgd", "algorithm.quant_levels=12"};
    expect_config_error(a, 2, "quant_levels");
    const char *b[] = {"algorithm.name=consensus_control", "algorithm.exact_phases=first"};
    expect_config_error(b, 2, "exact_phases");
    const char *c[] = {"algorithm.name=momentum_consensus", "algorithm.omega=2"};
    expect_config_error(c, 2, "omega");
    const char *d[] = {"algorithm.name=dpsgd", "algorithm.gossip_steps=-1"};
    expect_config_error(d, 2, "gossip_steps");
    const char *e[] = {"algorithm.name=swarm_sgd", "algorithm.local_steps=0"};
    expect_config_error(e, 2, "local_steps");
    const char *f[] = {"algorithm.name=dmsgd", "algorithm.form=both"};
    expect_config_error(f, 2, "form");
    const char *g[] = {"algorithm.name=consensus_control", "algorithm.target_fraction=1.5"};
    expect_config_error(g, 2, "target_fraction");
}

Test(decentralized, phase_lists_parse)
{
    uint32_t m;
    cr_assert_eq(algo_phase_mask("none", &m), 0);
    cr_assert_eq(m, 0u);
    cr_assert_eq(algo_phase_mask("1, 3", &m), 0);
    cr_assert_eq(m, (1u << 1) | (1u << 3));
    cr_assert_eq(algo_phase_mask("all", &m), 0);
    cr_assert_eq(m, 0xffffffffu);
    cr_assert_eq(algo_phase_mask("2,", &m), SIM_ECONFIG);
    cr_assert_eq(algo_phase_mask("0", &m), SIM_ECONFIG);
    cr_assert_eq(algo_phase_mask("x", &m), SIM_ECONFIG);
}

