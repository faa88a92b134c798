/* dtsim report: a table of the runs in a database (analysis/report.c), or
 * the scaling table (analysis/scaling.c). */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/report.h"
#include "analysis/scaling.h"
#include "cli/cli.h"
#include "cli/options.h"

#define MAX_RUNS 1024

static const char help_head[] =
    "Usage: dtsim report DB [--run ID]... [--target METRIC=VALUE] [--sustain K]\n"
    "                    [--baseline RUN] [--columns KEY,...] [--csv]\n"
    "                    [--aggregate [--compare KEY=BASE,V1,... [--adjust holm|bonferroni]]\n"
    "                    | --scaling | --staleness]\n\n"
    "One row per run: algorithm, the configuration keys whose values differ among\n"
    "the runs, workers, final train loss, final test accuracy, simulated time, time\n"
    "to target, speedup against the baseline, bytes sent, idle fraction, mean\n"
    "staleness, final consensus distance.\n\n";

/* The report's options as the parser fills them. */
typedef struct report_args {
    an_report_opts o;
    int64_t ids[MAX_RUNS];
    char metric[32];
    int adjusted;               /* --adjust given */
} report_args;

static int parse_id(const char *command, const char *v, long long *id)
{
    char *end;
    *id = strtoll(v, &end, 10);
    if (*end || *id <= 0)
        return cli_usage_error(command, "expected a run id, got '%s'", v);
    return 0;
}

/* --run ID: beyond MAX_RUNS ids, the rest are ignored. */
static int opt_run(const char *command, const char *v, void *dest)
{
    report_args *a = dest;
    long long id;
    int rc = parse_id(command, v, &id);
    if (rc == 0 && a->o.n_run_ids < MAX_RUNS)
        a->ids[a->o.n_run_ids++] = id;
    return rc;
}

static int opt_baseline(const char *command, const char *v, void *dest)
{
    report_args *a = dest;
    long long id;
    int rc = parse_id(command, v, &id);
    if (rc == 0)
        a->o.baseline = id;
    return rc;
}

static int opt_adjust(const char *command, const char *v, void *dest)
{
    (void)command;
    report_args *a = dest;
    sim_err err = {0};
    if (an_report_parse_adjust(v, &a->o.adjust, &err) < 0)
        return cli_fail(&err);
    a->adjusted = 1;
    return 0;
}

static int opt_target(const char *command, const char *v, void *dest)
{
    (void)command;
    report_args *a = dest;
    sim_err err = {0};
    if (an_report_parse_target(v, a->metric, sizeof a->metric, &a->o.target_value, &err) < 0)
        return cli_fail(&err);
    a->o.target_metric = a->metric;
    return 0;
}

int cli_report_main(int argc, char **argv)
{
    const char *path = NULL;
    report_args a = {.o = {0}};
    a.o.run_ids = a.ids;
    long long sustain = 0;
    int scaling = 0, status;
    const cli_opt opts[] = {
        CLI_CALL("--run", opt_run, &a,
                 "  --run ID               only this run (repeatable; default all runs)\n"),
        CLI_CALL("--target", opt_target, &a,
                 "  --target METRIC=VALUE  time to target: test_accuracy=0.85 (reached when >=)\n"
                 "                         or train_loss=0.5 / test_loss=0.5 (reached when <=);\n"
                 "                         the first evaluation at or past the threshold;\n"
                 "                         default: each run's own experiment.target_accuracy\n"
                 "                         (test_accuracy), if it set one\n"),
        CLI_INT("--sustain", &sustain, 1, 1000000,
                "--sustain: expected a count from 1 to 1000000, got '%s'",
                "  --sustain K            the target must hold for K consecutive evaluations\n"
                "                         (a noisy curve's first crossing flatters it); the\n"
                "                         time to target is the first of those K (default 1)\n"),
        CLI_CALL("--baseline", opt_baseline, &a,
                 "  --baseline RUN         speedup = TTA(baseline) / TTA(run); default: the\n"
                 "                         allreduce_sgd run whose other common parameters\n"
                 "                         match (lr, batch, workers, network, workload, ...)\n"),
        CLI_FLAG("--csv", NULL, &a.o.csv,
                 "  --csv                  comma-separated output for machines\n"),
        CLI_STRING("--columns", NULL, &a.o.columns,
                   "  --columns KEY,...      these configuration keys as columns (SECTION.KEY as\n"
                   "                         in --set); default: the keys whose values differ\n"
                   "                         among the runs listed\n"),
        CLI_FLAG("--aggregate", NULL, &a.o.aggregate,
                 "  --aggregate            one row per group of runs that differ only in their\n"
                 "                         seed (done or diverged): the mean of each column and\n"
                 "                         its 95% confidence interval over the seeds (mean +-h),\n"
                 "                         the number of seeds and how many reached the target\n"),
        CLI_FLAG("--staleness", NULL, &a.o.staleness,
                 "  --staleness            per worker of each run, the staleness of its applied\n"
                 "                         updates: count, mean, median, p90, p99, max\n"
                 "                         (asynchronous methods; the full distribution)\n"),
        CLI_STRING("--compare", NULL, &a.o.compare,
                   "  --compare KEY=BASE,V1,...\n"
                   "                         with --aggregate: for groups that differ only in KEY,\n"
                   "                         each value minus BASE of each column with its 95%\n"
                   "                         interval (Welch's t): higher, lower or\n"
                   "                         inconclusive; exact where every seed agrees\n"),
        CLI_CALL("--adjust", opt_adjust, &a,
                 "  --adjust holm|bonferroni\n"
                 "                         with --compare: the intervals and verdicts adjusted\n"
                 "                         over all the comparisons of the call (m of them):\n"
                 "                         Bonferroni at 95%/m each, or Holm's step-down on\n"
                 "                         Welch's p-values; the raw verdict beside\n"),
        CLI_FLAG("--scaling", NULL, &scaling,
                 "  --scaling              for runs (done) that differ only in the worker count\n"
                 "                         (and the arguments of network.topology): simulated\n"
                 "                         throughput (samples per simulated second) and the\n"
                 "                         scaling factor throughput(n) / (n/n0 x\n"
                 "                         throughput(n0)), n0 the group's smallest count (1:\n"
                 "                         throughput(n) / (n x throughput(1)))\n"),
        CLI_END,
    };
    const cli_spec spec = {.command = "report", .head = help_head, .opts = opts,
                           .operand = &path, .missing = "missing DB"};
    if (cli_options_parse(&spec, argc, argv, &status))
        return status;
    a.o.sustain = (int)sustain;
    if (scaling && (a.o.aggregate || a.o.target_metric || a.o.baseline || a.o.sustain))
        return cli_usage_error("report", "%s",
                               "--scaling takes no --aggregate, --target, --sustain or --baseline");
    if (a.o.staleness && (a.o.aggregate || scaling))
        return cli_usage_error("report", "%s", "--staleness takes no --aggregate or --scaling");
    if (a.o.compare && !a.o.aggregate)
        return cli_usage_error("report", "%s", "--compare needs --aggregate");
    if (a.adjusted && !a.o.compare)
        return cli_usage_error("report", "%s", "--adjust needs --compare");
    sim_err err = {0};
    if (scaling) {
        if (an_scaling_print(path, a.ids, a.o.n_run_ids, a.o.csv, stdout, &err) < 0)
            return cli_fail(&err);
        return 0;
    }
    if (an_report_print(path, &a.o, stdout, &err) < 0)
        return cli_fail(&err);
    return 0;
}
