/* dtsim run: one experiment into the database, one summary line. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "analysis/db.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "experiment/experiment.h"

#define MAX_SETS 256

static const char help_head[] =
    "Usage: dtsim run EXPERIMENT.ini [--set SECTION.KEY=VALUE]... [--db FILE]\n"
    "                [--threads N] [--max-memory SIZE] [--quiet]\n\n"
    "Runs one experiment and appends it to the database (default results.db in the\n"
    "current directory): a runs row (status running, then done or diverged), every\n"
    "config key in params, a metrics row per evaluation, per-worker totals and the\n"
    "staleness histogram. Prints one summary line; while running, a progress line\n"
    "on standard error when it is a terminal (--quiet turns it off).\n\n";

static const char help_tail[] =
    "\nKeys (section, key, default): `dtsim list keys` prints them all with their\n"
    "meaning, then every method's own [algorithm] keys.\n";

static void on_progress(void *ctx, const xp_progress *p)
{
    (void)ctx;
    char eta[32] = "?";
    if (p->fraction > 0.001 && p->fraction < 1)
        snprintf(eta, sizeof eta, "%.0fs", p->wall_seconds * (1 - p->fraction) / p->fraction);
    else if (p->fraction >= 1)
        snprintf(eta, sizeof eta, "0s");
    fprintf(stderr,
            "\r  iter %lld  sim %.3fs  epoch %.2f  loss %.4f  acc %.4f  wall %.1fs  left %s   ",
            (long long)p->iteration, p->sim_time, p->epoch, p->train_loss, p->test_accuracy,
            p->wall_seconds, eta);
    fflush(stderr);
}

static void print_summary(const xp_run_result *r, const char *dbpath)
{
    char bytes[32];
    cli_format_bytes(r->bytes_sent, bytes, sizeof bytes);
    printf("run %lld %s: %s, %d workers, %lld iterations, %.2f epochs, simulated %.3f s; "
           "train loss %.4f, test accuracy %.4f; %s sent, idle %.1f%%",
           (long long)r->run_id, r->status, r->algorithm, r->n_workers, (long long)r->iterations,
           r->epochs, r->sim_time, r->final_train_loss, r->final_test_accuracy, bytes,
           100 * r->idle_fraction);
    if (!isnan(r->mean_staleness))
        printf(", mean staleness %.2f", r->mean_staleness);
    printf("; wall %.2f s, %llu events, %lld gradients (%.0f/s) -> %s\n", r->wall_seconds,
           (unsigned long long)r->events, (long long)r->gradients,
           r->wall_seconds > 0 ? (double)r->gradients / r->wall_seconds : 0.0, dbpath);
}

int cli_run_main(int argc, char **argv)
{
    const char *file = NULL, *dbpath = "results.db", *threads_opt = NULL, *sets[MAX_SETS];
    cli_list set_list = {.items = sets, .cap = MAX_SETS};
    int quiet = 0, status;
    const cli_opt opts[] = {
        CLI_LIST("--set", &set_list,
                 "  --set SECTION.KEY=VALUE  override a key of the file (repeatable)\n"),
        CLI_STRING("--db", NULL, &dbpath,
                   "  --db FILE                results database (created if missing)\n"),
        CLI_STRING("--threads", NULL, &threads_opt,
                   "  --threads N              threads computing the workers' gradients (default:\n"
                   "                           $DTSIM_THREADS, else every core); the results are\n"
                   "                           the same for any N\n"),
        CLI_CALL("--max-memory", cli_max_memory, NULL,
                 "  --max-memory SIZE        refuse (exit 2) a configuration whose models, data\n"
                 "                           or graph need more than SIZE (512M, 8G; default:\n"
                 "                           $DTSIM_MAX_MEMORY, else the machine's memory)\n"),
        CLI_FLAG("--quiet", "-q", &quiet, "  --quiet, -q              no progress line\n"),
        CLI_END,
    };
    const cli_spec spec = {.command = "run", .head = help_head, .opts = opts, .tail = help_tail,
                           .operand = &file, .missing = "missing EXPERIMENT.ini"};
    if (cli_options_parse(&spec, argc, argv, &status))
        return status;
    sim_err err = {0};
    cfg_config cfg;
    int threads = 0;
    if ((status = cli_experiment_load("run", file, sets, set_list.n, threads_opt, &cfg,
                                      &threads)))
        return status;
    an_db *db = an_db_open(dbpath, &err);
    if (!db) {
        cfg_release(&cfg);
        return cli_fail(&err);
    }
    cli_interrupt_install();
    xp_run_opts o = {
        .interrupt = &cli_interrupted,
        .db = db,
        .on_progress = (!quiet && isatty(2)) ? on_progress : NULL,
        .progress_interval = 0.25,
        .threads = threads,
    };
    xp_run_result r;
    int rc = xp_experiment_run(&cfg, &o, &r, &err);
    if (o.on_progress)
        fprintf(stderr, "\n");
    an_db_close(db);
    cfg_release(&cfg);
    if (rc < 0)
        return cli_fail(&err);
    print_summary(&r, dbpath);
    if (r.trace_dropped > 0)
        cli_warn_trace_dropped(r.run_id, r.trace_dropped);
    return 0;
}
