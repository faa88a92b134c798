/* dtsim calibrate's fit and fragment (analysis/calib_fit.c), without MPI:
 * points made from known parameters are fitted back to them with zero
 * residuals; --bandwidth and --latency split the fit; the launch comes
 * from the all-reduce intercept; the fragment written loads back through
 * [network] calibration with the same values. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/calibrate.h"
#include "config/config.h"
#include "tests/common.h"

/* Points of a network with intercept a, payload rate R, launch c on n ranks. */
static void synth(an_calib_result *r, int n, double a, double R, double c)
{
    memset(r, 0, sizeof *r);
    r->ranks = n;
    r->pairs_k = n == 2 ? 2 : n - 1;
    double sizes[5] = {8, 1024, 65536, 1048576, 16777216};
    for (int i = 0; i < 5; i++) {
        double s = sizes[i], chunk = ceil(s / n);
        r->pt[AN_CALIB_PINGPONG][i] = (an_calib_point){.bytes = s, .measured = a + s / R};
        r->pt[AN_CALIB_PAIRS][i] =
            (an_calib_point){.bytes = s, .measured = 2 * a + r->pairs_k * s / R};
        r->pt[AN_CALIB_ALLREDUCE][i] =
            (an_calib_point){.bytes = s, .measured = c + 2.0 * (n - 1) * (a + chunk / R)};
        r->pt[AN_CALIB_RING][i] =
            (an_calib_point){.bytes = s, .measured = 2.0 * (n - 1) * (a + chunk / R)};
    }
    for (int p = 0; p < AN_CALIB_N_PATTERNS; p++)
        r->n_pt[p] = 5;
    r->n_sizes = 5;
}

Test(calib_fit, known_parameters_come_back)
{
    an_calib_opts o;
    an_calib_opts_default(&o);
    an_calib_result r;
    sim_err err;
    /* a = 2 x 3 us on a star, R = 1 GB/s, c = 20 us, 4 ranks */
    synth(&r, 4, 6e-6, 1e9, 20e-6);
    cr_assert_eq(an_calib_fit(&o, &r, &err), 0, "%s", err.msg);
    cr_assert(fabs(r.latency - 3e-6) < 1e-12, "%g", r.latency);
    cr_assert(fabs(r.bandwidth - 1e9) < 1e-3, "%g", r.bandwidth);
    cr_assert_eq(r.efficiency, 1.0);
    cr_assert_eq(r.message_overhead, 0.0);
    cr_assert(fabs(r.collective_overhead - 20e-6) < 1e-12, "%g", r.collective_overhead);
    cr_assert(r.max_residual < 1e-9, "%g", r.max_residual);
    for (int p = 0; p < AN_CALIB_N_PATTERNS; p++)
        for (int i = 0; i < 5; i++)
            cr_assert(fabs(r.pt[p][i].residual) < 1e-9, "%s %g: %g", an_calib_pattern_name(p),
                      r.pt[p][i].bytes, r.pt[p][i].residual);

    /* the nominal rate and latency split the fit */
    o.bandwidth = 1.25e9;
    o.latency = 1e-6;
    cr_assert_eq(an_calib_fit(&o, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(r.bandwidth, 1.25e9);
    cr_assert(fabs(r.efficiency - 0.8) < 1e-9, "%g", r.efficiency);
    cr_assert(fabs(r.latency - 1e-6) < 1e-15, "%g", r.latency);
    cr_assert(fabs(r.message_overhead - 4e-6) < 1e-12, "%g", r.message_overhead);
    cr_assert(r.max_residual < 1e-9, "%g", r.max_residual);

    /* flat times: no positive rate */
    for (int i = 0; i < 5; i++)
        r.pt[AN_CALIB_PINGPONG][i].measured = 1e-3;
    cr_assert_eq(an_calib_fit(&o, &r, &err), SIM_EINPUT);
    cr_assert(strstr(err.msg, "do not fit a positive rate"), "%s", err.msg);
}

/* The fragment loads back with the values the fit holds. */
Test(calib_fit, fragment_loads_back)
{
    an_calib_opts o;
    an_calib_opts_default(&o);
    o.bandwidth = 1.25e9;
    o.by_size = 1;
    an_calib_result r;
    sim_err err;
    synth(&r, 2, 6e-6, 1e9, 20e-6);
    cr_assert_eq(an_calib_fit(&o, &r, &err), 0, "%s", err.msg);
    const char *dir = test_tmpdir();
    char frag[1024], exp[1024];
    snprintf(frag, sizeof frag, "%s/net.ini", dir);
    cr_assert_eq(an_calib_write(&o, &r, frag, &err), 0, "%s", err.msg);
    snprintf(exp, sizeof exp, "%s",
             test_write_file(dir, "e.ini", "[network]\ncalibration = net.ini\n"));
    cfg_config cfg;
    cr_assert_eq(cfg_load(NULL, exp, NULL, 0, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(cfg.bandwidth, r.bandwidth);
    cr_assert_eq(cfg.net_efficiency, r.efficiency);
    cr_assert(fabs(cfg.latency - r.latency) < 1e-15);
    cr_assert(fabs(cfg.collective_overhead - r.collective_overhead) < 1e-15);
    cr_assert_eq(cfg.efficiency_by_size.n, 5);
    cr_assert_eq(cfg.efficiency_by_size.from[0], 0.0);
    for (int i = 0; i < 5; i++)
        cr_assert(fabs(cfg.efficiency_by_size.value[i] - 0.8) < 1e-3, "%g",
                  cfg.efficiency_by_size.value[i]);
    cfg_release(&cfg);
    cr_assert_eq(an_calib_write(&o, &r, "/nonexistent-dir/x.ini", &err), SIM_EINPUT);
}
