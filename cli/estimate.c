/* dtsim estimate: what one iteration of an experiment costs, from the time
 * model alone (experiment.h, xp_experiment_estimate), and the configured
 * run's GPU-hours and price. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "experiment/experiment.h"

#define MAX_SETS 256

static const char help_head[] =
    "Usage: dtsim estimate EXPERIMENT.ini [--set SECTION.KEY=VALUE]... [--iterations N]\n"
    "                      [--price PER_GPU_HOUR] [--threads N]\n\n"
    "Simulates a few iterations with the time model only (no gradient is computed,\n"
    "nothing is evaluated or written) and prints what one iteration costs: its\n"
    "simulated time; compute, communication (its messages draining from its host)\n"
    "and idle (the rest) of the median and the slowest worker, ranked by compute\n"
    "time; bytes sent; the busiest link and its utilisation. Then the configured\n"
    "run (max_iterations, else max_epochs; max_time caps it) in simulated time and\n"
    "GPU-hours (workers x time). The time model draws the same random step times\n"
    "as a trained run, so --iterations equal to the run's gives its time exactly;\n"
    "with random stragglers or transient slowdowns fewer iterations give a mean\n"
    "that varies with N. Where time depends on the data (a method that chooses\n"
    "batch sizes, message sizes or gossip steps from the gradients: the estimate\n"
    "warns and says why; a loss target) train it instead.\n\n";

/* Seconds in a readable unit. */
static void format_seconds(double s, char *buf, size_t len)
{
    if (s < 5e-10) /* below the clock's nanosecond */
        snprintf(buf, len, "0 s");
    else if (s < 1e-3)
        snprintf(buf, len, "%.3f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, len, "%.3f ms", s * 1e3);
    else if (s < 3600)
        snprintf(buf, len, "%.3f s", s);
    else
        snprintf(buf, len, "%.2f h", s / 3600);
}

static void print_worker(const char *what, const xp_estimate *e, int k)
{
    char c[32], m[32], i[32];
    format_seconds(e->compute[k], c, sizeof c);
    format_seconds(e->comm[k], m, sizeof m);
    format_seconds(e->idle[k], i, sizeof i);
    printf("  %-7s worker %-4d compute %s, communication %s, idle %s\n", what, e->worker[k], c,
           m, i);
}

static void print_estimate(const xp_estimate *e, int priced, double price)
{
    char t[32], b[32];
    format_seconds(e->iter_time, t, sizeof t);
    printf("estimate: %s, %d workers, %lld iterations simulated (time model only)\n",
           e->algorithm, e->n_workers, (long long)e->iterations);
    printf("  iteration      %s (%.4g iterations per simulated second)\n", t,
           e->iter_time > 0 ? 1 / e->iter_time : 0.0);
    print_worker("median", e, 0);
    print_worker("slowest", e, 1);
    cli_format_bytes(e->bytes_per_iter, b, sizeof b);
    printf("  bytes          %s per iteration (all hosts)\n", b);
    if (e->busiest_link >= 0) {
        cli_format_bytes(e->link_bytes_per_iter, b, sizeof b);
        printf("  busiest link   %d (%d->%d): utilisation %.1f%%, %s per iteration at %.4g "
               "Gb/s\n",
               e->busiest_link, e->link_from, e->link_to, 100 * e->link_util, b,
               e->link_rate * 8e-9);
    } else {
        printf("  busiest link   none (no message crossed a link)\n");
    }
    if (!isfinite(e->run_iterations)) {
        printf("  configured run unknown length (only target_accuracy bounds it)\n");
        return;
    }
    format_seconds(e->run_time, t, sizeof t);
    printf("  configured run %.0f iterations: %s simulated, %.4g GPU-hours\n",
           e->run_iterations, t, e->gpu_hours);
    if (priced)
        printf("  cost           %.4g at %.4g per GPU-hour\n", e->gpu_hours * price, price);
}

/* --price P: a non-negative amount per GPU-hour. */
static int opt_price(const char *command, const char *v, void *dest)
{
    char *end = NULL;
    double p = strtod(v, &end);
    if (end == v || *end != '\0' || !isfinite(p) || p < 0)
        return cli_usage_error(command, "--price: expected an amount per GPU-hour such as 2.5, "
                                        "got '%s'", v);
    *(double *)dest = p;
    return 0;
}

int cli_estimate_main(int argc, char **argv)
{
    const char *file = NULL, *threads_opt = NULL, *sets[MAX_SETS];
    cli_list set_list = {.items = sets, .cap = MAX_SETS};
    long long iterations = 100;
    double price = NAN;
    int status;
    const cli_opt opts[] = {
        CLI_LIST("--set", &set_list,
                 "  --set SECTION.KEY=VALUE  override a key of the file (repeatable)\n"),
        CLI_INT("--iterations", &iterations, 1, 1000000,
                "--iterations: expected a number of iterations from 1 to 1000000, got '%s'",
                "  --iterations N           iterations to simulate (default 100)\n"),
        CLI_CALL("--price", opt_price, &price,
                 "  --price PER_GPU_HOUR     the configured run's cost at this price\n"),
        CLI_STRING("--threads", NULL, &threads_opt,
                   "  --threads N              as for dtsim run (no gradients: rarely useful)\n"),
        CLI_END,
    };
    const cli_spec spec = {.command = "estimate", .head = help_head, .opts = opts,
                           .operand = &file, .missing = "missing EXPERIMENT.ini"};
    if (cli_options_parse(&spec, argc, argv, &status))
        return status;
    sim_err err = {0};
    cfg_config cfg;
    int threads = 0;
    if ((status = cli_experiment_load("estimate", file, sets, set_list.n, threads_opt, &cfg,
                                      &threads)))
        return status;
    xp_estimate e;
    int rc = xp_experiment_estimate(&cfg, iterations, threads, &e, &err);
    cfg_release(&cfg);
    if (rc < 0)
        return cli_fail(&err);
    print_estimate(&e, !isnan(price), price);
    if (e.data_time[0])
        fprintf(stderr,
                "dtsim: warning: %s: %s; the time model computes no gradient, so this"
                " estimate may be off: run it (dtsim run) for its time\n",
                e.algorithm, e.data_time);
    return 0;
}
