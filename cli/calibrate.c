/* dtsim calibrate: under mpirun, measures the network between the ranks,
 * fits dtsim's network model and writes a [network] fragment that an
 * experiment includes with [network] calibration = FILE
 * (analysis/calibrate.c; docs/usage.md, docs/network.md). Only rank 0
 * prints and writes. */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/calibrate.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "sim/units.h"

static const char help_head[] =
    "Usage: mpirun -np N dtsim calibrate [-o FILE] [--min-size SIZE] [--max-size SIZE]\n"
    "                 [--factor F] [--reps R] [--hops H] [--bandwidth RATE]\n"
    "                 [--latency TIME] [--by-size] [--quiet]\n\n"
    "Measures the network between the MPI ranks (N >= 2; one rank per host to\n"
    "model): ping-pong between ranks 0 and 1, concurrent messages from rank 0,\n"
    "MPI_Allreduce and a hand-written ring all-reduce over all ranks, over sizes\n"
    "from --min-size to --max-size. Fits dtsim's network model by least squares\n"
    "(relative error), prints each point measured, modelled and its residual, and\n"
    "writes a [network] fragment for `[network] calibration = FILE`.\n\n";

static const char help_tail[] =
    "\nOutput (rank 0): a header line; one line per point: pattern, ranks, bytes,\n"
    "measured_s (median), model_s, residual ((measured - model) / measured); then\n"
    "the fit, the largest ping-pong |residual| and the file written.\n"
    "As root, or with more ranks than cores:\n"
    "  mpirun --allow-run-as-root --oversubscribe -np 2 dtsim calibrate --max-size 1MiB\n";

static int opt_size(const char *command, const char *name, const char *value, double *dest)
{
    double x;
    if (sim_parse_size(value, &x, NULL) || !(x >= 1)) {
        char fmt[96];
        snprintf(fmt, sizeof fmt, "%s: expected a size >= 1B such as 64KiB, got '%%s'", name);
        return cli_usage_error(command, fmt, value);
    }
    *dest = x;
    return 0;
}

static int opt_min_size(const char *command, const char *value, void *dest)
{
    return opt_size(command, "--min-size", value, dest);
}

static int opt_max_size(const char *command, const char *value, void *dest)
{
    return opt_size(command, "--max-size", value, dest);
}

static int opt_rate(const char *command, const char *value, void *dest)
{
    double x;
    if (sim_parse_rate(value, &x, NULL) || !(x > 0))
        return cli_usage_error(command, "--bandwidth: expected a rate such as 1Gbps, got '%s'",
                               value);
    *(double *)dest = x;
    return 0;
}

static int opt_time(const char *command, const char *value, void *dest)
{
    sim_time t;
    if (sim_parse_time(value, &t, NULL) || t < 0)
        return cli_usage_error(command, "--latency: expected a time such as 5us, got '%s'",
                               value);
    *(double *)dest = sim_time_to_s(t);
    return 0;
}

static int opt_factor(const char *command, const char *value, void *dest)
{
    char *end;
    double x = strtod(value, &end);
    if (*end || end == value || !(x > 1 && x <= 1024))
        return cli_usage_error(command, "--factor: expected a number in (1, 1024], got '%s'",
                               value);
    *(double *)dest = x;
    return 0;
}

static void print_points(const an_calib_result *r)
{
    printf("%-9s %5s %14s %14s %14s %9s\n", "pattern", "ranks", "bytes", "measured_s",
           "model_s", "residual");
    for (int p = 0; p < AN_CALIB_N_PATTERNS; p++)
        for (int i = 0; i < r->n_pt[p]; i++) {
            const an_calib_point *q = &r->pt[p][i];
            printf("%-9s %5d %14.0f %14.6e %14.6e %+9.4f\n", an_calib_pattern_name(p),
                   p == AN_CALIB_PINGPONG ? 2 : r->ranks, q->bytes, q->measured, q->model,
                   q->residual);
        }
}

int cli_calibrate_main(int argc, char **argv)
{
    an_calib_opts o;
    an_calib_opts_default(&o);
    const char *out = "calibration.ini";
    long long reps = o.reps, hops = o.hops;
    int by_size = 0, quiet = 0, status;
    const cli_opt opts[] = {
        CLI_STRING("--output", "-o", &out,
                   "  -o, --output FILE   the [network] fragment (default calibration.ini)\n"),
        CLI_CALL("--min-size", opt_min_size, &o.min_size,
                 "  --min-size SIZE     smallest message (default 8B)\n"),
        CLI_CALL("--max-size", opt_max_size, &o.max_size,
                 "  --max-size SIZE     largest message (default 16MiB; up to hundreds of MB)\n"),
        CLI_CALL("--factor", opt_factor, &o.factor,
                 "  --factor F          each size F times the last (default 4)\n"),
        CLI_INT("--reps", &reps, 1, 100000, "--reps: expected a count >= 1, got '%s'",
                "  --reps R            repetitions per size after one warm-up (default 5);\n"
                "                      a point is their median\n"),
        CLI_INT("--hops", &hops, 1, 64, "--hops: expected a link count in [1, 64], got '%s'",
                "  --hops H            links on a path between two ranks in the topology the\n"
                "                      fragment is for (default 2: a star)\n"),
        CLI_CALL("--bandwidth", opt_rate, &o.bandwidth,
                 "  --bandwidth RATE    the links' nominal rate (e.g. a shaped 1Gbps):\n"
                 "                      efficiency = fitted rate / RATE; default: bandwidth =\n"
                 "                      the fitted rate, efficiency 1\n"),
        CLI_CALL("--latency", opt_time, &o.latency,
                 "  --latency TIME      the links' known latency: message_overhead = intercept\n"
                 "                      - hops x TIME; default: latency = intercept / hops,\n"
                 "                      message_overhead 0\n"),
        CLI_FLAG("--by-size", NULL, &by_size,
                 "  --by-size           also write efficiency_by_size from the ping-pong sizes\n"),
        CLI_FLAG("--quiet", "-q", &quiet,
                 "  -q, --quiet         print only the fit, not every point\n"),
        CLI_END,
    };
    const cli_spec cs = {.command = "calibrate", .head = help_head, .opts = opts,
                         .tail = help_tail, .operand = NULL, .missing = NULL};
    if (cli_options_parse(&cs, argc, argv, &status))
        return status;
    o.reps = (int)reps;
    o.hops = (int)hops;
    o.by_size = by_size;
    sim_err err = {0};
    an_calib_result *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "dtsim: out of memory\n");
        return 1;
    }
    double sizes[AN_CALIB_MAX_SIZES];
    int rc = an_calib_sizes(&o, sizes, &err);
    if (rc < 0) {
        free(r);
        return cli_usage_error("calibrate", "%s", err.msg);
    }
    rc = an_calib_measure(&o, r, &err);
    if (rc == 0 && r->rank == 0)
        rc = an_calib_fit(&o, r, &err);
    if (rc == 0 && r->rank == 0)
        rc = an_calib_write(&o, r, out, &err);
    if (rc < 0) {
        free(r);
        return cli_fail(&err);
    }
    if (r->rank == 0) {
        printf("calibrate: %d ranks, %.0f B .. %.0f B (x%g, %d sizes), %d repetitions\n",
               r->ranks, o.min_size, o.max_size, o.factor, r->n_sizes, o.reps);
        if (!quiet)
            print_points(r);
        printf("fit: latency %.6e s per link (%d links), bandwidth %.6e B/s, efficiency %.6g,"
               " message_overhead %.6e s, collective_overhead %.6e s\n",
               r->latency, o.hops, r->bandwidth, r->efficiency, r->message_overhead,
               r->collective_overhead);
        printf("max |residual| (pingpong): %.4f\n", r->max_residual);
        printf("wrote %s\n", out);
    }
    free(r);
    return 0;
}
