/* Spectra of mixing matrices against closed forms (ring, complete,
 * hypercube, torus), the dense and sparse paths against each other, the
 * one-peer period's contraction, and topo_graph_describe. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "sim/rng.h"
#include "tests/common.h"
#include "topology/graph.h"
#include "topology/mixing.h"
#include "topology/props.h"

static double lambda_of(const char *spec, int n, topo_weights w, topo_lambda_method method,
                        topo_lambda_method *used)
{
    gsl_rng *r = sim_rng_create(1, SIM_STREAM_TOPOLOGY, 0);
    sim_err err = {0};
    topo_graph g;
    cr_assert_eq(topo_graph_build(&g, spec, n, r, &err), 0, "%s: %s", spec, err.msg);
    gsl_rng_free(r);
    topo_mixing *m = topo_mixing_create(&g, w, &err);
    cr_assert_not_null(m, "%s: %s", spec, err.msg);
    double lambda = -1;
    cr_assert_eq(topo_mixing_lambda_ex(m, method, &lambda, used, &err), 0, "%s: %s", spec, err.msg);
    topo_mixing_destroy(m);
    topo_graph_release(&g);
    return lambda;
}

Test(spectrum, ring_metropolis_closed_form)
{
    int sizes[] = {3, 4, 8, 16, 33, 100};
    for (int s = 0; s < 6; s++) {
        int n = sizes[s];
        double want = (1 + 2 * cos(2 * M_PI / n)) / 3;
        topo_lambda_method used;
        double got = lambda_of("ring", n, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_AUTO, &used);
        cr_assert_eq(used, TOPO_LAMBDA_DENSE);
        cr_assert(fabs(got - want) <= 1e-12, "ring %d: %.15g, want %.15g", n, got, want);
    }
    /* docs/algorithms.md 0.5: n = 8 gives 0.8047; n = 4 gives 1/3 */
    cr_assert(fabs(lambda_of("ring", 8, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_AUTO, NULL) - 0.8047) < 1e-4);
}

Test(spectrum, complete_is_zero)
{
    cr_assert(fabs(lambda_of("complete", 10, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_DENSE, NULL)) <= 1e-12);
    cr_assert(fabs(lambda_of("complete", 10, TOPO_WEIGHTS_UNIFORM, TOPO_LAMBDA_SPARSE, NULL)) <= 1e-12);
}

Test(spectrum, hypercube_closed_form)
{
    /* dimension k, weight 1/(k+1): eigenvalues (1 + k - 2j)/(k+1); lambda = (k-1)/(k+1) */
    for (int k = 1; k <= 6; k++) {
        double want = (double)(k - 1) / (k + 1);
        double got = lambda_of("hypercube", 1 << k, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_DENSE, NULL);
        cr_assert(fabs(got - want) <= 1e-12, "hypercube dim %d: %.15g, want %.15g", k, got, want);
        got = lambda_of("hypercube", 1 << k, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_ARPACK, NULL);
        cr_assert(fabs(got - want) <= 1e-10, "hypercube dim %d (arpack): %.15g", k, got);
    }
}

Test(spectrum, torus_uniform_closed_form)
{
    /* 4 x 4 torus, weight 1/5: eigenvalues (1 + 2 cos(pi a / 2) + 2 cos(pi b / 2)) / 5;
     * the largest magnitude besides 1 is 3/5 (a = 1, b = 0; and -3/5 at a = b = 2). */
    cr_assert(fabs(lambda_of("torus(4, 4)", 16, TOPO_WEIGHTS_UNIFORM, TOPO_LAMBDA_DENSE, NULL) - 0.6) <= 1e-12);
    /* 5 x 8: max over (a, b) != 0 of |1 + 2 cos(2 pi a / 5) + 2 cos(2 pi b / 8)| / 5 */
    double want = 0;
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 8; b++)
            if (a || b) {
                double v = fabs(1 + 2 * cos(2 * M_PI * a / 5) + 2 * cos(2 * M_PI * b / 8)) / 5;
                want = v > want ? v : want;
            }
    cr_assert(fabs(lambda_of("torus(5, 8)", 40, TOPO_WEIGHTS_UNIFORM, TOPO_LAMBDA_DENSE, NULL) - want) <= 1e-12);
    cr_assert(fabs(lambda_of("torus(5, 8)", 40, TOPO_WEIGHTS_UNIFORM, TOPO_LAMBDA_ARPACK, NULL) - want) <= 1e-10);
}

Test(spectrum, sparse_paths_agree_with_dense)
{
    const char *specs[] = {"ring", "exponential", "random_regular(4)", "small_world(4, 0.2)",
                           "erdos_renyi(0.05)", "star"};
    for (int s = 0; s < 6; s++) {
        topo_lambda_method used;
        double dense = lambda_of(specs[s], 300, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_DENSE, NULL);
        double sparse = lambda_of(specs[s], 300, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_SPARSE, &used);
        double arpack = lambda_of(specs[s], 300, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_ARPACK, NULL);
        cr_assert(fabs(sparse - dense) <= 1e-10, "%s: sparse (%d) %.15g, dense %.15g", specs[s],
                  (int)used, sparse, dense);
        cr_assert(fabs(arpack - dense) <= 1e-10, "%s: arpack %.15g, dense %.15g", specs[s], arpack,
                  dense);
        if (s < 2)
            cr_assert_eq(used, TOPO_LAMBDA_SPARSE, "%s is circulant", specs[s]);
        else
            cr_assert_eq(used, TOPO_LAMBDA_ARPACK);
    }
}

Test(spectrum, large_ring_sparse)
{
    /* n = 4096 is past the dense limit: the circulant path, exact. */
    int n = 4096;
    double want = (1 + 2 * cos(2 * M_PI / n)) / 3;
    topo_lambda_method used;
    double got = lambda_of("ring", n, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_AUTO, &used);
    cr_assert_eq(used, TOPO_LAMBDA_SPARSE);
    cr_assert(fabs(got - want) <= 1e-13, "%.17g vs %.17g", got, want);
    /* ARPACK resolves the ring's tiny gap (1 - lambda = 7.8e-7) as well */
    got = lambda_of("ring", n, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_ARPACK, &used);
    cr_assert_eq(used, TOPO_LAMBDA_ARPACK);
    cr_assert(fabs(got - want) <= 1e-12, "arpack %.17g vs %.17g", got, want);
    /* a 4096-node random 4-regular graph goes to ARPACK; Metropolis on a
     * 4-regular graph is (I + A) / 5 and |lambda_2(A)| <= 4, and for a random
     * regular graph it is close to 2 sqrt(3) (Friedman): lambda in (0.8, 1) */
    got = lambda_of("random_regular(4)", n, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_AUTO, &used);
    cr_assert_eq(used, TOPO_LAMBDA_ARPACK);
    cr_assert(got > (1 + 2 * sqrt(3)) / 5 - 0.02 && got < 1, "lambda %.6f", got);
}

Test(spectrum, one_peer_period_contraction_is_zero)
{
    topo_lambda_method used;
    cr_assert(lambda_of("one_peer_exponential", 16, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_DENSE, &used) <= 1e-12);
    cr_assert_eq(used, TOPO_LAMBDA_DENSE);
    cr_assert(lambda_of("one_peer_exponential", 4096, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_AUTO, &used) <= 1e-12);
    cr_assert_eq(used, TOPO_LAMBDA_SPARSE);
}

Test(spectrum, disconnected_graph_has_lambda_one)
{
    const char *dir = test_tmpdir();
    char spec[4200];
    snprintf(spec, sizeof spec, "file(%s)", test_write_file(dir, "two.txt", "0 1\n1 2\n3 4\n4 5\n"));
    cr_assert(fabs(lambda_of(spec, 6, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_DENSE, NULL) - 1) <= 1e-12);
    cr_assert(fabs(lambda_of(spec, 6, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_ARPACK, NULL) - 1) <= 1e-10);
}

Test(spectrum, single_node)
{
    cr_assert_eq(lambda_of("ring", 1, TOPO_WEIGHTS_METROPOLIS, TOPO_LAMBDA_AUTO, NULL), 0.0);
}

Test(spectrum, describe_ring)
{
    gsl_rng *r = sim_rng_create(1, SIM_STREAM_TOPOLOGY, 0);
    sim_err err = {0};
    topo_graph g;
    cr_assert_eq(topo_graph_build(&g, "ring", 8, r, &err), 0);
    topo_graph_props p;
    cr_assert_eq(topo_graph_describe(&g, TOPO_WEIGHTS_METROPOLIS, &p, &err), 0, "%s", err.msg);
    double lambda = (1 + 2 * cos(2 * M_PI / 8)) / 3;
    cr_assert(p.n == 8 && p.n_edges == 8 && p.deg_min == 2 && p.deg_max == 2);
    cr_assert(p.diameter == 4 && p.connected && !p.time_varying && p.period == 1 && p.symmetric);
    cr_assert(fabs(p.lambda - lambda) <= 1e-12);
    cr_assert(fabs(p.gap - (1 - lambda)) <= 1e-12);
    cr_assert(fabs(p.p - (1 - lambda * lambda)) <= 1e-12);
    topo_graph_release(&g);

    cr_assert_eq(topo_graph_build(&g, "star", 5, r, &err), 0);
    cr_assert_eq(topo_graph_describe(&g, TOPO_WEIGHTS_UNIFORM, &p, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "regular"));
    topo_graph_release(&g);

    cr_assert_eq(topo_graph_build(&g, "one_peer_exponential", 8, r, &err), 0);
    cr_assert_eq(topo_graph_describe(&g, TOPO_WEIGHTS_METROPOLIS, &p, &err), 0, "%s", err.msg);
    cr_assert(p.time_varying && p.period == 3 && p.peers_per_step == 1 && !p.symmetric);
    cr_assert(p.lambda <= 1e-12 && p.diameter == 2);
    topo_graph_release(&g);
    gsl_rng_free(r);

    topo_weights w;
    cr_assert_eq(topo_weights_parse("uniform", &w, &err), 0);
    cr_assert_eq(w, TOPO_WEIGHTS_UNIFORM);
    cr_assert_eq(topo_weights_parse("equal", &w, &err), SIM_ECONFIG);
    cr_assert_str_eq(topo_weights_name(TOPO_WEIGHTS_METROPOLIS), "metropolis");
}
