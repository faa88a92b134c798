/* Worker compute-time model: exact times for model/constant/trace and the
 * slowdown factors, sample means of the random shapes against their stated
 * means (within 4 standard errors computed from the known variances), the
 * expected maximum of n exponentials, trace loading errors, spec errors. */
#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <string.h>

#include "sim/compute.h"
#include "tests/common.h"

static sim_compute_opts opts_of(const char *spec)
{
    sim_compute_opts o;
    memset(&o, 0, sizeof o);
    sim_err err;
    cr_assert_eq(sim_dist_parse(spec, &o.dist, &err), 0, "%s: %s", spec, err.msg);
    o.device_flops = 15.7e12;
    o.efficiency = 0.5;
    o.straggler_slowdown = 5;
    o.transient_slowdown = 10;
    return o;
}

static sim_compute *create_ok(const sim_compute_opts *o, int n)
{
    sim_err err;
    sim_compute *c = sim_compute_create(o, n, &err);
    cr_assert_not_null(c, "%s", err.msg);
    return c;
}

static gsl_rng *rng_new(unsigned long seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    return r;
}

Test(compute, model_time_is_flops_over_effective_speed)
{
    sim_compute_opts o = opts_of("model");
    o.device_flops = 2e12;
    o.efficiency = 0.25;
    sim_compute *c = create_ok(&o, 4);
    gsl_rng *r = rng_new(1);
    unsigned long before = gsl_rng_get(r);
    gsl_rng_set(r, 1);
    double t = sim_compute_step_time(c, 3, 7, 64, 3.5e6, r);
    cr_assert_eq(t, (double)64 * 3.5e6 / (2e12 * 0.25));
    cr_assert_float_eq(t, 4.48e-4, 1e-18);
    /* model draws nothing */
    cr_assert_eq(gsl_rng_get(r), before);
    cr_assert(isnan(sim_dist_mean(&o.dist)));
    gsl_rng_free(r);
    sim_compute_destroy(c);
}

Test(compute, constant_is_exact_and_draws_nothing)
{
    sim_compute_opts o = opts_of("constant(10ms)");
    cr_assert_eq(o.dist.kind, SIM_DIST_CONSTANT);
    cr_assert_eq(o.dist.a, 0.01);
    cr_assert_eq(sim_dist_mean(&o.dist), 0.01);
    sim_compute *c = create_ok(&o, 2);
    gsl_rng *r = rng_new(5);
    unsigned long before = gsl_rng_get(r);
    gsl_rng_set(r, 5);
    for (int s = 0; s < 10; s++)
        cr_assert_eq(sim_compute_step_time(c, 1, s, 32, 1e9, r), 0.01);
    cr_assert_eq(gsl_rng_get(r), before);
    gsl_rng_free(r);
    sim_compute_destroy(c);
}

/* Sample mean over n draws of worker 0 (no stragglers) vs the stated mean. */
static void check_mean(const char *spec, double mean, double var)
{
    sim_compute_opts o = opts_of(spec);
    cr_assert_float_eq(sim_dist_mean(&o.dist), mean, 1e-15 * mean, "%s", spec);
    sim_compute *c = create_ok(&o, 1);
    gsl_rng *r = rng_new(12345);
    const int n = 200000;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double t = sim_compute_step_time(c, 0, i, 1, 0, r);
        cr_assert(t > 0, "%s drew %g", spec, t);
        sum += t;
    }
    double se = sqrt(var / n);
    cr_assert(fabs(sum / n - mean) < 4 * se, "%s: sample mean %.9g vs %.9g (se %.3g)", spec,
              sum / n, mean, se);
    gsl_rng_free(r);
    sim_compute_destroy(c);
}

Test(compute, exponential_mean)
{
    check_mean("exponential(10ms)", 0.01, 0.01 * 0.01);
}

Test(compute, shifted_exponential_mean)
{
    /* shift 5ms + Exp(mean 3ms): mean 8ms, variance (3ms)^2; never below the shift */
    check_mean("shifted_exponential(5ms, 3ms)", 0.008, 0.003 * 0.003);
    sim_compute_opts o = opts_of("shifted_exponential(5ms, 3ms)");
    sim_compute *c = create_ok(&o, 1);
    gsl_rng *r = rng_new(3);
    for (int i = 0; i < 1000; i++)
        cr_assert(sim_compute_step_time(c, 0, i, 1, 0, r) >= 0.005);
    gsl_rng_free(r);
    sim_compute_destroy(c);
}

Test(compute, lognormal_mean)
{
    double m = 0.01, s = 0.5;
    check_mean("lognormal(10ms, 0.5)", m, (exp(s * s) - 1) * m * m);
}

Test(compute, pareto_mean)
{
    /* alpha 5 > 4, so the sample variance itself is well behaved */
    double m = 0.02, a = 5, xm = m * (a - 1) / a;
    double var = xm * xm * a / ((a - 1) * (a - 1) * (a - 2));
    check_mean("pareto(20ms, 5)", m, var);
    /* never below the scale x_m */
    sim_compute_opts o = opts_of("pareto(20ms, 5)");
    sim_compute *c = create_ok(&o, 1);
    gsl_rng *r = rng_new(9);
    for (int i = 0; i < 1000; i++)
        cr_assert(sim_compute_step_time(c, 0, i, 1, 0, r) >= xm);
    gsl_rng_free(r);
    sim_compute_destroy(c);
}

Test(compute, max_of_eight_exponentials_is_m_times_harmonic)
{
    /* E[max of n Exp(m)] = m H_n, Var = m^2 sum 1/k^2 */
    const int n = 8, reps = 50000;
    const double m = 0.01;
    double h = 0, h2 = 0;
    for (int k = 1; k <= n; k++) {
        h += 1.0 / k;
        h2 += 1.0 / ((double)k * k);
    }
    sim_compute_opts o = opts_of("exponential(10ms)");
    sim_compute *c = create_ok(&o, n);
    gsl_rng *r = rng_new(77);
    double sum = 0;
    for (int i = 0; i < reps; i++) {
        double mx = 0;
        for (int w = 0; w < n; w++) {
            double t = sim_compute_step_time(c, w, i, 1, 0, r);
            if (t > mx)
                mx = t;
        }
        sum += mx;
    }
    double se = m * sqrt(h2 / reps);
    cr_assert(fabs(sum / reps - m * h) < 4 * se, "mean max %.9g vs %.9g (se %.3g)",
              sum / reps, m * h, se);
    gsl_rng_free(r);
    sim_compute_destroy(c);
}

Test(compute, stragglers_multiply_exactly)
{
    sim_compute_opts o = opts_of("exponential(10ms)");
    o.stragglers = 2;
    o.straggler_slowdown = 3;
    sim_compute_opts plain = o;
    plain.stragglers = 0;
    sim_compute *c = create_ok(&o, 4), *p = create_ok(&plain, 4);
    gsl_rng *r1 = rng_new(42), *r2 = rng_new(42);
    for (int s = 0; s < 100; s++)
        for (int w = 0; w < 4; w++) {
            double a = sim_compute_step_time(c, w, s, 1, 0, r1);
            double b = sim_compute_step_time(p, w, s, 1, 0, r2);
            cr_assert_eq(a, w < 2 ? b * 3 : b, "worker %d step %d", w, s);
        }
    gsl_rng_free(r1);
    gsl_rng_free(r2);
    sim_compute_destroy(c);
    sim_compute_destroy(p);
}

Test(compute, transient_prob_one_always_slows)
{
    sim_compute_opts o = opts_of("constant(2ms)");
    o.transient_prob = 1;
    o.transient_slowdown = 7;
    o.stragglers = 1;
    o.straggler_slowdown = 2;
    sim_compute *c = create_ok(&o, 3);
    gsl_rng *r = rng_new(1);
    for (int s = 0; s < 50; s++) {
        cr_assert_eq(sim_compute_step_time(c, 0, s, 1, 0, r), 0.002 * 2 * 7);
        cr_assert_eq(sim_compute_step_time(c, 2, s, 1, 0, r), 0.002 * 7);
    }
    gsl_rng_free(r);
    sim_compute_destroy(c);
}

Test(compute, transient_fraction_and_no_extra_draws_without_it)
{
    sim_compute_opts o = opts_of("constant(1ms)");
    o.transient_prob = 0.25;
    o.transient_slowdown = 10;
    sim_compute *c = create_ok(&o, 1);
    gsl_rng *r = rng_new(8);
    const int n = 40000;
    int slowed = 0;
    for (int s = 0; s < n; s++) {
        double t = sim_compute_step_time(c, 0, s, 1, 0, r);
        cr_assert(t == 0.001 || t == 0.001 * 10);
        slowed += t > 0.001;
    }
    double se = sqrt(0.25 * 0.75 / n);
    cr_assert(fabs((double)slowed / n - 0.25) < 4 * se, "fraction %g", (double)slowed / n);
    sim_compute_destroy(c);

    /* prob 0: exponential draws are the same numbers as gsl_ran_exponential's */
    sim_compute_opts e = opts_of("exponential(4ms)");
    c = create_ok(&e, 1);
    gsl_rng *r2 = rng_new(99);
    gsl_rng_set(r, 99);
    for (int s = 0; s < 100; s++)
        cr_assert_eq(sim_compute_step_time(c, 0, s, 1, 0, r2), gsl_ran_exponential(r, 0.004));
    gsl_rng_free(r);
    gsl_rng_free(r2);
    sim_compute_destroy(c);
}

Test(compute, trace_cycles_and_maps_columns)
{
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir);
    const char *path = test_write_file(dir, "trace.csv",
                                       "w0, w1\n"
                                       "0.1,0.2\n"
                                       "\n"
                                       "0.3, 0.4\n"
                                       "  0.5 ,0.6  \n");
    char spec[600];
    snprintf(spec, sizeof spec, "trace(%s)", path);
    sim_compute_opts o = opts_of(spec);
    cr_assert_eq(o.dist.kind, SIM_DIST_TRACE);
    cr_assert_str_eq(o.dist.trace_path, path);
    o.stragglers = 1;
    o.straggler_slowdown = 2;
    sim_compute *c = create_ok(&o, 5);
    const double v[3][2] = {{0.1, 0.2}, {0.3, 0.4}, {0.5, 0.6}};
    for (int s = 0; s < 7; s++)
        for (int w = 0; w < 5; w++) {
            double want = v[s % 3][w % 2] * (w == 0 ? 2 : 1);
            cr_assert_eq(sim_compute_step_time(c, w, s, 1, 0, NULL), want, "w %d s %d", w, s);
        }
    sim_compute_destroy(c);
}

Test(compute, trace_cells_with_units)
{
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir);
    const char *path = test_write_file(dir, "trace.csv",
                                       "w0,w1\n"
                                       "1ms, 250us\n"
                                       "0.002,1.5ms\n"
                                       "2s,0ns\n");
    char spec[600];
    snprintf(spec, sizeof spec, "trace(%s)", path);
    sim_compute_opts o = opts_of(spec);
    sim_compute *c = create_ok(&o, 2);
    const double v[3][2] = {{1e-3, 250e-6}, {2e-3, 1.5e-3}, {2, 0}};
    for (int s = 0; s < 3; s++)
        for (int w = 0; w < 2; w++)
            cr_assert_float_eq(sim_compute_step_time(c, w, s, 1, 0, NULL), v[s][w], 1e-15,
                               "w %d s %d", w, s);
    sim_compute_destroy(c);
}

Test(compute, constant_zero_is_communication_only)
{
    sim_compute_opts o = opts_of("constant(0)");
    cr_assert_eq(o.dist.kind, SIM_DIST_CONSTANT);
    cr_assert_eq(o.dist.a, 0);
    char text[64];
    sim_dist_format(&o.dist, text, sizeof text);
    cr_assert_str_eq(text, "constant(0ns)");
    o.stragglers = 1;
    o.straggler_slowdown = 3;
    sim_compute *c = create_ok(&o, 2);
    for (int s = 0; s < 4; s++)
        for (int w = 0; w < 2; w++)
            cr_assert_eq(sim_compute_step_time(c, w, s, 32, 1e9, NULL), 0.0);
    sim_compute_destroy(c);
}

static void trace_error(const char *text, const char *want)
{
    const char *dir = test_tmpdir();
    const char *path = test_write_file(dir, "trace.csv", text);
    char p[400], expect[700];
    cr_assert(strlen(path) < sizeof p);
    strcpy(p, path);
    sim_compute_opts o;
    memset(&o, 0, sizeof o);
    o.dist.kind = SIM_DIST_TRACE;
    snprintf(o.dist.trace_path, sizeof o.dist.trace_path, "%s", p);
    sim_err err;
    cr_assert_null(sim_compute_create(&o, 2, &err));
    cr_assert_eq(err.code, SIM_EINPUT, "%s", err.msg);
    snprintf(expect, sizeof expect, "%s%s", p, want);
    cr_assert_str_eq(err.msg, expect);
}

Test(compute, bad_traces_name_file_and_line)
{
    trace_error("a,b\n0.1,0.2\n0.3,0.4\n0.5,x\n",
                ":4: column 2: expected seconds (0.012) or a time with its unit (12ms), got 'x'");
    trace_error("1ms,2ms\n3ms,4 parsecs\n",
                ":2: column 2: expected seconds (0.012) or a time with its unit (12ms), got "
                "'4 parsecs'");
    trace_error("1ms\n-2ms\n", ":2: column 1: negative time '-2ms' (seconds must be >= 0)");
    trace_error("0.1,0.2\n0.3\n", ":2: expected 2 columns, got 1");
    trace_error("0.1\n\n-0.5\n", ":3: column 1: negative time '-0.5' (seconds must be >= 0)");
    trace_error("time\n\n", ": empty trace (no rows of seconds)");
    trace_error("", ": empty trace (no rows of seconds)");
    trace_error("0.1,,0.3\n",
                ":1: column 2: expected seconds (0.012) or a time with its unit (12ms), got ''");

    sim_compute_opts o;
    memset(&o, 0, sizeof o);
    o.dist.kind = SIM_DIST_TRACE;
    snprintf(o.dist.trace_path, sizeof o.dist.trace_path, "/nonexistent/t.csv");
    sim_err err;
    cr_assert_null(sim_compute_create(&o, 2, &err));
    cr_assert_eq(err.code, SIM_EINPUT);
    cr_assert_str_eq(err.msg, "/nonexistent/t.csv: cannot open: No such file or directory");
}

static void parse_error(const char *spec, const char *want)
{
    sim_dist d;
    sim_err err;
    cr_assert_eq(sim_dist_parse(spec, &d, &err), SIM_ECONFIG, "%s parsed", spec);
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, want), "%s: got '%s', want '%s'", spec, err.msg, want);
}

Test(compute, parse_errors)
{
    parse_error("gaussian(1ms)",
                "unknown distribution 'gaussian' (known: model, constant, exponential, "
                "shifted_exponential, lognormal, pareto, trace)");
    parse_error("model(3)", "model takes no arguments, got 1");
    parse_error("constant", "constant takes 1 argument (mean), got 0");
    parse_error("exponential(1ms, 2ms)", "exponential takes 1 argument (mean), got 2");
    parse_error("shifted_exponential(1ms)",
                "shifted_exponential takes 2 arguments (shift, mean), got 1");
    parse_error("lognormal(1ms)", "lognormal takes 2 arguments (mean, sigma), got 1");
    parse_error("pareto(1ms, 2, 3)", "pareto takes 2 arguments (mean, alpha), got 3");
    parse_error("trace()", "trace takes 1 argument (FILE.csv), got 0");
    parse_error("exponential(-1ms)", "exponential: mean: expected a time");
    parse_error("exponential(0ms)", "exponential: mean must be > 0, got '0ms'");
    parse_error("exponential(0)", "exponential: mean must be > 0");
    parse_error("constant(-1ms)", "constant: mean");
    parse_error("shifted_exponential(1ms, 0s)", "shifted_exponential: mean must be > 0");
    parse_error("lognormal(0s, 0.5)", "lognormal: mean must be > 0");
    parse_error("lognormal(1ms, -0.5)", "lognormal: sigma must be >= 0, got '-0.5'");
    parse_error("lognormal(1ms, wide)", "lognormal: sigma: expected a number");
    parse_error("pareto(1ms, 1)", "pareto: alpha must be > 1 (finite mean), got '1'");
    parse_error("pareto(1ms, 0.5)", "pareto: alpha must be > 1");
    parse_error("exponential(fast)", "exponential: mean: expected a time such as 5us");
}

Test(compute, format_is_canonical_and_reparses)
{
    const char *in[] = {"model", "Constant( 10ms )", "exponential(0.01s)",
                        "shifted_exponential(5ms,5000us)", "lognormal(10ms, 0.5)",
                        "pareto(1.5s, 2.5)", "trace(data/t.csv)"};
    const char *want[] = {"model", "constant(10000000ns)", "exponential(10000000ns)",
                          "shifted_exponential(5000000ns, 5000000ns)",
                          "lognormal(10000000ns, 0.5)", "pareto(1500000000ns, 2.5)",
                          "trace(data/t.csv)"};
    for (int i = 0; i < 7; i++) {
        sim_dist d, d2;
        sim_err err;
        char buf[600], buf2[600];
        cr_assert_eq(sim_dist_parse(in[i], &d, &err), 0, "%s: %s", in[i], err.msg);
        sim_dist_format(&d, buf, sizeof buf);
        cr_assert_str_eq(buf, want[i]);
        cr_assert_eq(sim_dist_parse(buf, &d2, &err), 0, "%s: %s", buf, err.msg);
        sim_dist_format(&d2, buf2, sizeof buf2);
        cr_assert_str_eq(buf2, buf);
        cr_assert_eq(d2.a, d.a);
        cr_assert_eq(d2.b, d.b);
    }
    /* shifted_exponential's mean is shift + mean */
    sim_dist d;
    cr_assert_eq(sim_dist_parse("shifted_exponential(5ms, 3ms)", &d, NULL), 0);
    cr_assert_float_eq(sim_dist_mean(&d), 0.008, 1e-18);
}

Test(compute, table_lists_every_kind_in_enum_order)
{
    const char *names[] = {"model", "constant", "exponential", "shifted_exponential",
                           "lognormal", "pareto", "trace"};
    int n = 0;
    for (; sim_dist_table[n].name; n++) {
        cr_assert_str_eq(sim_dist_table[n].name, names[n]);
        cr_assert_not_null(sim_dist_table[n].summary);
        cr_assert_not_null(sim_dist_table[n].args);
    }
    cr_assert_eq(n, 7);
    cr_assert_eq(SIM_DIST_TRACE, 6);
}
