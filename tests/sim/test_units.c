/* Units: known conversions for every parser, bare numbers, and rejections
 * whose message names the bad text; spec splitting. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/units.h"

/* Relative tolerance for decimal conversions: a few ulps. */
#define REL 1e-15

static void expect_rel(double got, double want, const char *what)
{
    cr_assert(fabs(got - want) <= REL * fabs(want), "%s: got %.17g, want %.17g", what, got,
              want);
}

static sim_time time_of(const char *s)
{
    sim_time t = -1;
    sim_err err = {0};
    cr_assert_eq(sim_parse_time(s, &t, &err), 0, "'%s': %s", s, err.msg);
    return t;
}

Test(units, times)
{
    cr_assert_eq(time_of("250ns"), 250);
    cr_assert_eq(time_of("5us"), 5000);
    cr_assert_eq(time_of("5 us"), 5000);
    cr_assert_eq(time_of("1.5ms"), 1500000);
    cr_assert_eq(time_of("2s"), 2 * SIM_NS_PER_S);
    cr_assert_eq(time_of("3min"), 180 * SIM_NS_PER_S);
    cr_assert_eq(time_of("1h"), 3600 * SIM_NS_PER_S);
    cr_assert_eq(time_of("0.1s"), 100000000, "rounded to the nearest ns");
    cr_assert_eq(time_of("1e-3s"), 1000000);
    cr_assert_eq(time_of("0.4ns"), 0);
    cr_assert_eq(time_of("0.6ns"), 1);
    cr_assert_eq(time_of("  120s  "), 120 * SIM_NS_PER_S);
    cr_assert_eq(time_of("0"), 0);
}

static double rate_of(const char *s)
{
    double v = -1;
    sim_err err = {0};
    cr_assert_eq(sim_parse_rate(s, &v, &err), 0, "'%s': %s", s, err.msg);
    return v;
}

Test(units, rates)
{
    expect_rel(rate_of("10Gbps"), 1.25e9, "10Gbps");
    expect_rel(rate_of("100Mbps"), 1.25e7, "100Mbps");
    expect_rel(rate_of("25GB/s"), 2.5e10, "25GB/s");
    expect_rel(rate_of("100MB/s"), 1e8, "100MB/s");
    expect_rel(rate_of("1KB/s"), 1e3, "1KB/s");
    expect_rel(rate_of("1KiB/s"), 1024, "1KiB/s");
    expect_rel(rate_of("2GiB/s"), 2.0 * 1073741824.0, "2GiB/s");
    expect_rel(rate_of("1Tbps"), 1.25e11, "1Tbps");
    expect_rel(rate_of("400 Gb/s"), 5e10, "400 Gb/s");
    expect_rel(rate_of("0"), 0, "a bare 0 needs no unit");
}

static double size_of(const char *s)
{
    double v = -1;
    sim_err err = {0};
    cr_assert_eq(sim_parse_size(s, &v, &err), 0, "'%s': %s", s, err.msg);
    return v;
}

Test(units, sizes)
{
    expect_rel(size_of("512B"), 512, "512B");
    expect_rel(size_of("4KB"), 4000, "4KB");
    expect_rel(size_of("100MB"), 1e8, "100MB");
    expect_rel(size_of("2GB"), 2e9, "2GB");
    expect_rel(size_of("4KiB"), 4096, "4KiB");
    expect_rel(size_of("1MiB"), 1048576, "1MiB");
    expect_rel(size_of("1.5GiB"), 1.5 * 1073741824.0, "1.5GiB");
    expect_rel(size_of("0"), 0, "a bare 0 needs no unit");
}

static double flops_of(const char *s)
{
    double v = -1;
    sim_err err = {0};
    cr_assert_eq(sim_parse_flops(s, &v, &err), 0, "'%s': %s", s, err.msg);
    return v;
}

Test(units, flops)
{
    expect_rel(flops_of("15.7TFLOPS"), 1.57e13, "15.7TFLOPS");
    expect_rel(flops_of("50 GFLOPS"), 5e10, "50 GFLOPS");
    expect_rel(flops_of("50gflops"), 5e10, "case-insensitive");
    expect_rel(flops_of("1PFLOPS"), 1e15, "1PFLOPS");
    expect_rel(flops_of("3MFLOPS"), 3e6, "3MFLOPS");
    expect_rel(flops_of("2e9"), 2e9, "bare = FLOP/s");
}

Test(units, plain_numbers)
{
    sim_err err = {0};
    double d;
    cr_assert_eq(sim_parse_double("1e-3", &d, &err), 0);
    cr_assert_eq(d, 1e-3);
    cr_assert_eq(sim_parse_double(" 0.5 ", &d, &err), 0);
    cr_assert_eq(d, 0.5);
    cr_assert_eq(sim_parse_double("-2.5", &d, &err), 0, "plain numbers may be negative");
    cr_assert_eq(d, -2.5);
    int64_t i;
    cr_assert_eq(sim_parse_int("16", &i, &err), 0);
    cr_assert_eq(i, 16);
    cr_assert_eq(sim_parse_int("-3", &i, &err), 0);
    cr_assert_eq(i, -3);
    cr_assert_eq(sim_parse_int("9223372036854775807", &i, &err), 0);
    cr_assert_eq(i, INT64_MAX);
    cr_assert_eq(sim_parse_int("1e6", &i, &err), 0, "integral exponent form");
    cr_assert_eq(i, 1000000);
    int b;
    static const char *const yes[] = {"true", "YES", "on", "1", " True "};
    static const char *const no[] = {"false", "No", "OFF", "0"};
    for (size_t k = 0; k < 5; k++) {
        b = -1;
        cr_assert_eq(sim_parse_bool(yes[k], &b, &err), 0, "%s", yes[k]);
        cr_assert_eq(b, 1);
    }
    for (size_t k = 0; k < 4; k++) {
        b = -1;
        cr_assert_eq(sim_parse_bool(no[k], &b, &err), 0, "%s", no[k]);
        cr_assert_eq(b, 0);
    }
}

typedef int (*dparser)(const char *, double *, sim_err *);

static void expect_reject(dparser f, const char *s, const char *kind)
{
    double v = 12345.0;
    sim_err err = {0};
    cr_assert_eq(f(s, &v, &err), SIM_ECONFIG, "'%s' accepted", s);
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_eq(v, 12345.0, "output untouched on error");
    char quoted[600];
    snprintf(quoted, sizeof quoted, "got '%s'", s);
    cr_assert(strstr(err.msg, quoted), "message '%s' lacks %s", err.msg, quoted);
    cr_assert(strstr(err.msg, kind), "message '%s' lacks '%s'", err.msg, kind);
}

Test(units, rejections)
{
    static const char *const bad[] = {"", "  ", "fast", "-1Gbps", "nan", "inf",
                                      "10Gbpsx", "10 Gbps extra", "1e", "..5", "0x10",
                                      "10GBps/s", "1e999Gbps", "+-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_reject(sim_parse_rate, bad[i], "expected a rate such as 10Gbps");
    expect_reject(sim_parse_size, "-4KB", "expected a size such as 100MB");
    expect_reject(sim_parse_size, "4Kb", "expected a size such as 100MB");
    expect_reject(sim_parse_size, "4 KB B", "expected a size such as 100MB");
    expect_reject(sim_parse_flops, "15.7TFLOP", "15.7TFLOPS");
    expect_reject(sim_parse_flops, "nanFLOPS", "15.7TFLOPS");
    expect_reject(sim_parse_double, "1.5x", "expected a number");
    expect_reject(sim_parse_double, "inf", "expected a number");
    expect_reject(sim_parse_double, "", "expected a number");

    static const char *const bad_times[] = {"-5us", "5 parsecs", "5usx", "1e300s", "",
                                            "NaN", "5m"};
    for (size_t i = 0; i < sizeof bad_times / sizeof bad_times[0]; i++) {
        sim_time t = 77;
        sim_err err = {0};
        cr_assert_eq(sim_parse_time(bad_times[i], &t, &err), SIM_ECONFIG, "'%s'",
                     bad_times[i]);
        cr_assert_eq(t, 77);
        char want[128];
        snprintf(want, sizeof want, "expected a time such as 5us, got '%s'", bad_times[i]);
        cr_assert_str_eq(err.msg, want);
    }

    static const char *const bad_ints[] = {"1.5", "9223372036854775808", "12abc", "",
                                           "1e30", "0.5e1x"};
    for (size_t i = 0; i < sizeof bad_ints / sizeof bad_ints[0]; i++) {
        int64_t v = 7;
        sim_err err = {0};
        cr_assert_eq(sim_parse_int(bad_ints[i], &v, &err), SIM_ECONFIG, "'%s'", bad_ints[i]);
        cr_assert_eq(v, 7);
        cr_assert(strstr(err.msg, bad_ints[i]));
        cr_assert(strstr(err.msg, "expected an integer"));
    }
    int b = 5;
    sim_err err = {0};
    cr_assert_eq(sim_parse_bool("maybe", &b, &err), SIM_ECONFIG);
    cr_assert_eq(b, 5);
    cr_assert(strstr(err.msg, "'maybe'"));
}

Test(units, time_from_seconds)
{
    cr_assert_eq(sim_time_from_s(1.5e-6), 1500);
    cr_assert_eq(sim_time_from_s(0.1), 100000000);
    cr_assert_eq(sim_time_from_s(2.4e-9), 2);
    cr_assert_eq(sim_time_from_s(2.5e-9), 3, "halves round away from zero");
    cr_assert_eq(sim_time_from_s(0.0), 0);
    cr_assert_eq(sim_time_from_s(1e30), SIM_TIME_MAX);
    cr_assert_eq(sim_time_from_s(INFINITY), SIM_TIME_MAX);
    cr_assert_eq(sim_time_from_s(NAN), 0);
    cr_assert_eq(sim_time_from_s(-1e-9), -1);
    /* Round trip within half a ns. */
    cr_assert_eq(sim_time_from_s(sim_time_to_s(123456789012)), 123456789012);
}

Test(units, spec_parse)
{
    sim_spec sp;
    sim_err err = {0};
    cr_assert_eq(sim_spec_parse("torus(4, 4)", &sp, &err), 0, "%s", err.msg);
    cr_assert_str_eq(sp.name, "torus");
    cr_assert_eq(sp.nargs, 2);
    cr_assert_str_eq(sp.args[0], "4");
    cr_assert_str_eq(sp.args[1], "4");

    cr_assert_eq(sim_spec_parse("  ring  ", &sp, &err), 0);
    cr_assert_str_eq(sp.name, "ring");
    cr_assert_eq(sp.nargs, 0);

    cr_assert_eq(sim_spec_parse(" Lognormal ( 10ms ,0.5 ) ", &sp, &err), 0);
    cr_assert_str_eq(sp.name, "Lognormal", "case kept as written");
    cr_assert_eq(sp.nargs, 2);
    cr_assert_str_eq(sp.args[0], "10ms");
    cr_assert_str_eq(sp.args[1], "0.5");

    cr_assert_eq(sim_spec_parse("file(a(b).csv)", &sp, &err), 0);
    cr_assert_eq(sp.nargs, 1);
    cr_assert_str_eq(sp.args[0], "a(b).csv");

    cr_assert_eq(sim_spec_parse("mlp(f(1, 2), 3)", &sp, &err), 0);
    cr_assert_eq(sp.nargs, 2);
    cr_assert_str_eq(sp.args[0], "f(1, 2)");
    cr_assert_str_eq(sp.args[1], "3");

    cr_assert_eq(sim_spec_parse("cnn()", &sp, &err), 0);
    cr_assert_str_eq(sp.name, "cnn");
    cr_assert_eq(sp.nargs, 0);

    cr_assert_eq(sim_spec_parse("f(1,2,3,4,5,6,7,8)", &sp, &err), 0);
    cr_assert_eq(sp.nargs, SIM_SPEC_MAX_ARGS);
    cr_assert_str_eq(sp.args[7], "8");

    char longarg[SIM_SPEC_ARG_LEN + 16];
    memset(longarg, 0, sizeof longarg);
    memcpy(longarg, "f(", 2);
    memset(longarg + 2, 'x', SIM_SPEC_ARG_LEN);
    longarg[2 + SIM_SPEC_ARG_LEN] = ')';
    static const char *const bad[] = {"torus(4, 4", "torus(4))", "(4)", "   ", "",
                                      "f(1,2,3,4,5,6,7,8,9)", "f(1,,2)", "f(1,)",
                                      "f(1) x", "ring)", "f((1)"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sim_err e = {0};
        cr_assert_eq(sim_spec_parse(bad[i], &sp, &e), SIM_ECONFIG, "'%s' accepted", bad[i]);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "got '%s'", bad[i]);
        cr_assert(strstr(e.msg, quoted), "message '%s'", e.msg);
    }
    sim_err e = {0};
    cr_assert_eq(sim_spec_parse(longarg, &sp, &e), SIM_ECONFIG, "argument too long");
    longarg[2 + SIM_SPEC_ARG_LEN - 1] = ')';
    longarg[2 + SIM_SPEC_ARG_LEN] = '\0';
    cr_assert_eq(sim_spec_parse(longarg, &sp, &e), 0, "longest argument fits: %s", e.msg);
    cr_assert_eq(strlen(sp.args[0]), SIM_SPEC_ARG_LEN - 1);
}

Test(units, bare_nonzero_times_rates_and_sizes_are_refused_with_examples)
{
    sim_err err = {0};
    sim_time t;
    double v;
    cr_assert_eq(sim_parse_time("5", &t, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "a time needs a unit (such as 5us, 1.5ms or 2s), got '5'"),
              "%s", err.msg);
    cr_assert_eq(sim_parse_rate("10", &v, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "a rate needs a unit (such as 10Gbps"), "%s", err.msg);
    cr_assert_eq(sim_parse_size("1e3", &v, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "a size needs a unit (such as 512B"), "%s", err.msg);
    cr_assert_eq(sim_parse_time("0.0", &t, &err), 0);
    cr_assert_eq(t, 0);
}

Test(units, suggestions_by_edit_distance)
{
    char buf[96];
    cr_assert_eq(sim_edit_distance("dpsdg", "dpsgd"), 1); /* a transposition */
    cr_assert_eq(sim_edit_distance("rnig", "ring"), 1);
    cr_assert_eq(sim_edit_distance("Ring", "ring"), 0);
    cr_assert_eq(sim_edit_distance("kitten", "sitting"), 3);
    cr_assert_str_eq(sim_suggest("dpsdg", "allreduce_sgd, dpsgd, dsgd_atc", buf, sizeof buf),
                     "did you mean 'dpsgd'? ");
    cr_assert_str_eq(sim_suggest("rnig", "ring, torus, complete", buf, sizeof buf),
                     "did you mean 'ring'? ");
    cr_assert_str_eq(sim_suggest("softmx", "linreg, softmax, mlp(h1, h2, ...), cnn[(c1, c2)]",
                                 buf, sizeof buf),
                     "did you mean 'softmax'? ");
    cr_assert_str_eq(sim_suggest("cnm", "linreg, softmax, cnn[(c1, c2)]", buf, sizeof buf),
                     "did you mean 'cnn'? ");
    cr_assert_str_eq(sim_suggest("ringg", "fair|none|ring", buf, sizeof buf),
                     "did you mean 'ring'? ");
    /* too far, or too short to guess: nothing */
    cr_assert_str_eq(sim_suggest("gaussian", "model, constant, exponential", buf, sizeof buf), "");
    cr_assert_str_eq(sim_suggest("ab", "cd, ef", buf, sizeof buf), "");
    cr_assert_str_eq(sim_suggest("", "ring", buf, sizeof buf), "");
}
