/* dtsim: the command-line shell. Maps argv to one library call per
 * subcommand and prints results and errors; the only file that prints or
 * exits. Exit status: 0 success (a diverged run is a result), 2 usage,
 * config, input or database error, 1 anything else. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/algo.h"
#include "analysis/db.h"
#include "analysis/report.h"
#include "sim/compute.h"
#include "sim/config.h"
#include "sim/experiment.h"
#include "topology/physnet.h"
#include "workloads/dataset.h"
#include "workloads/model.h"
#include "workloads/partition.h"

#define MAX_SETS 256

static const char *prog = "dtsim";

static int fail(const sim_err *err)
{
    fprintf(stderr, "%s: %s\n", prog, err->msg);
    return sim_err_exit_status(err->code);
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "%s %s: ", prog, cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry '%s %s --help'.\n", prog, cmd);
    return 2;
}

static int is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

/* ---- help texts --------------------------------------------------------- */

static void help_main(FILE *f)
{
    fprintf(f,
            "dtsim %s: a discrete-event simulator of distributed deep-learning training\n"
            "with real gradients on real data.\n\n"
            "Usage:\n"
            "  dtsim run EXPERIMENT.ini [--set SECTION.KEY=VALUE]... [--db FILE] [--quiet]\n"
            "  dtsim report DB [--run ID]... [--target METRIC=VALUE] [--baseline RUN] [--csv]\n"
            "  dtsim list [algorithms|networks|models|datasets|partitions|distributions|keys]\n"
            "  dtsim --version | --help     (every subcommand has --help too)\n\n"
            "Exit status: 0 success (a diverged run is a result), 2 usage, config, input\n"
            "or database error (the message names file, line and key), 1 anything else.\n"
            "Results go to an SQLite database (default results.db); see README.md.\n",
            DTSIM_VERSION);
}

static void help_run(FILE *f)
{
    fprintf(f,
            "Usage: dtsim run EXPERIMENT.ini [--set SECTION.KEY=VALUE]... [--db FILE] [--quiet]\n\n"
            "Runs one experiment and appends it to the database (default results.db in the\n"
            "current directory): a runs row (status running, then done or diverged), every\n"
            "config key in params, a metrics row per evaluation, per-worker totals and the\n"
            "staleness histogram. Prints one summary line; while running, a progress line\n"
            "on standard error when it is a terminal (--quiet turns it off).\n\n"
            "  --set SECTION.KEY=VALUE  override a key of the file (repeatable)\n"
            "  --db FILE                results database (created if missing)\n"
            "  --quiet                  no progress line\n\n"
            "Keys (section, key, default): `dtsim list keys` prints them all with their\n"
            "meaning; method-specific keys are listed by `dtsim list algorithms`.\n");
}

static void help_report(FILE *f)
{
    fprintf(f,
            "Usage: dtsim report DB [--run ID]... [--target METRIC=VALUE] [--baseline RUN] [--csv]\n\n"
            "One row per run: algorithm, workers, final train loss, final test accuracy,\n"
            "simulated time, time to target, speedup against the baseline, bytes sent, idle\n"
            "fraction, mean staleness, final consensus distance.\n\n"
            "  --run ID               only this run (repeatable; default all runs)\n"
            "  --target METRIC=VALUE  time to target: test_accuracy=0.85 (reached when >=)\n"
            "                         or train_loss=0.5 / test_loss=0.5 (reached when <=);\n"
            "                         the first evaluation at or past the threshold\n"
            "  --baseline RUN         speedup = TTA(baseline) / TTA(run); default: the\n"
            "                         allreduce_sgd run whose other parameters match\n"
            "  --csv                  comma-separated output for machines\n");
}

static void help_list(FILE *f)
{
    fprintf(f, "Usage: dtsim list [algorithms|networks|models|datasets|partitions|"
               "distributions|keys]\n\nDescribes what can be named in an experiment file. "
               "Without an argument, lists everything.\n");
}

/* ---- list --------------------------------------------------------------- */

static void list_algorithms(void)
{
    printf("algorithms ([algorithm] name):\n");
    for (int i = 0; algo_registry[i]; i++) {
        const algo_vt *vt = algo_registry[i];
        printf("  %-16s %s (ALGORITHMS.md %s)\n", vt->name, vt->summary, vt->reference);
        for (const sim_key *k = vt->keys; k && k->key; k++)
            printf("      %-14s = %-10s %s\n", k->key, k->def, k->doc);
    }
}

static void list_networks(void)
{
    printf("networks ([network] topology):\n");
    for (int i = 0; topo_physnet_registry[i]; i++)
        printf("  %-16s %s\n", topo_physnet_registry[i]->name, topo_physnet_registry[i]->summary);
}

static void list_models(void)
{
    printf("models ([workload] model):\n");
    for (int i = 0; wl_model_registry[i]; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s%s", wl_model_registry[i]->name, wl_model_registry[i]->args);
        printf("  %-16s %s\n", nm, wl_model_registry[i]->summary);
    }
}

static void list_info(const char *title, const char *const *names, const char *const *args,
                      const char *const *sums, int n)
{
    printf("%s:\n", title);
    for (int i = 0; i < n; i++) {
        char nm[96];
        snprintf(nm, sizeof nm, "%s%s", names[i], args[i]);
        printf("  %-28s %s\n", nm, sums[i]);
    }
}

#define LIST_TABLE(title, table)                                                      \
    do {                                                                              \
        int n_ = 0;                                                                   \
        while (table[n_].name)                                                        \
            n_++;                                                                     \
        const char **a_ = calloc((size_t)n_ * 3 + 1, sizeof *a_);                     \
        if (!a_)                                                                      \
            break;                                                                    \
        for (int i_ = 0; i_ < n_; i_++) {                                             \
            a_[i_] = table[i_].name;                                                  \
            a_[n_ + i_] = table[i_].args;                                             \
            a_[2 * n_ + i_] = table[i_].summary;                                      \
        }                                                                             \
        list_info(title, a_, a_ + n_, a_ + 2 * n_, n_);                               \
        free(a_);                                                                     \
    } while (0)

static void list_keys(void)
{
    printf("experiment-file keys (section, key = default: meaning):\n");
    const char *sec = "";
    for (const sim_key *k = sim_config_keys; k->key; k++) {
        if (strcmp(sec, k->section) != 0) {
            printf("  [%s]\n", k->section);
            sec = k->section;
        }
        printf("    %-20s = %-14s %s\n", k->key, k->def[0] ? k->def : "\"\"", k->doc ? k->doc : "");
    }
}

static int cmd_list(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    if (is_help(what)) {
        help_list(stdout);
        return 0;
    }
    int all = strcmp(what, "all") == 0, any = 0;
    if (all || strcmp(what, "algorithms") == 0) {
        list_algorithms();
        any = 1;
    }
    if (all || strcmp(what, "networks") == 0) {
        list_networks();
        any = 1;
    }
    if (all || strcmp(what, "models") == 0) {
        list_models();
        any = 1;
    }
    if (all || strcmp(what, "datasets") == 0) {
        LIST_TABLE("datasets ([workload] dataset)", wl_dataset_table);
        any = 1;
    }
    if (all || strcmp(what, "partitions") == 0) {
        LIST_TABLE("partitions ([workload] partition)", wl_partition_table);
        any = 1;
    }
    if (all || strcmp(what, "distributions") == 0) {
        LIST_TABLE("distributions ([workers] compute)", sim_dist_table);
        any = 1;
    }
    if (all || strcmp(what, "keys") == 0) {
        list_keys();
        any = 1;
    }
    if (!any)
        return usage_error("list", "unknown category '%s' (known: algorithms, networks, "
                                   "models, datasets, partitions, distributions, keys)",
                           what);
    return 0;
}

/* ---- run ---------------------------------------------------------------- */

static void format_bytes(double b, char *buf, size_t len)
{
    const char *u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
    int i = 0;
    while (b >= 1000 && i < 5) {
        b /= 1000;
        i++;
    }
    snprintf(buf, len, i ? "%.2f %s" : "%.0f %s", b, u[i]);
}

static void on_progress(void *ctx, const sim_progress *p)
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

static int cmd_run(int argc, char **argv)
{
    const char *file = NULL, *dbpath = "results.db";
    const char *sets[MAX_SETS];
    int nsets = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            help_run(stdout);
            return 0;
        } else if (strcmp(a, "--set") == 0 || strcmp(a, "--db") == 0) {
            if (i + 1 >= argc)
                return usage_error("run", "%s needs a value", a);
            if (a[2] == 's') {
                if (nsets == MAX_SETS)
                    return usage_error("run", "%s", "too many --set options");
                sets[nsets++] = argv[++i];
            } else {
                dbpath = argv[++i];
            }
        } else if (strncmp(a, "--set=", 6) == 0) {
            if (nsets == MAX_SETS)
                return usage_error("run", "%s", "too many --set options");
            sets[nsets++] = a + 6;
        } else if (strncmp(a, "--db=", 5) == 0) {
            dbpath = a + 5;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("run", "unknown option '%s'", a);
        } else if (!file) {
            file = a;
        } else {
            return usage_error("run", "unexpected argument '%s'", a);
        }
    }
    if (!file)
        return usage_error("run", "%s", "missing EXPERIMENT.ini");

    sim_err err = {0};
    sim_config cfg;
    if (sim_config_load(file, sets, nsets, &cfg, &err) < 0)
        return fail(&err);
    an_db *db = an_db_open(dbpath, &err);
    if (!db) {
        sim_config_release(&cfg);
        return fail(&err);
    }
    sim_run_opts opts = {
        .db = db,
        .on_progress = (!quiet && isatty(2)) ? on_progress : NULL,
        .progress_interval = 0.25,
    };
    sim_run_result r;
    int rc = sim_experiment_run(&cfg, &opts, &r, &err);
    if (opts.on_progress)
        fprintf(stderr, "\n");
    an_db_close(db);
    sim_config_release(&cfg);
    if (rc < 0)
        return fail(&err);
    char bytes[32];
    format_bytes(r.bytes_sent, bytes, sizeof bytes);
    printf("run %lld %s: %s, %d workers, %lld iterations, %.2f epochs, simulated %.3f s; "
           "train loss %.4f, test accuracy %.4f; %s sent, idle %.1f%%",
           (long long)r.run_id, r.status, r.algorithm, r.n_workers, (long long)r.iterations,
           r.epochs, r.sim_time, r.final_train_loss, r.final_test_accuracy, bytes,
           100 * r.idle_fraction);
    if (!isnan(r.mean_staleness))
        printf(", mean staleness %.2f", r.mean_staleness);
    printf("; wall %.2f s, %llu events, %lld gradients (%.0f/s) -> %s\n", r.wall_seconds,
           (unsigned long long)r.events, (long long)r.gradients,
           r.wall_seconds > 0 ? (double)r.gradients / r.wall_seconds : 0.0, dbpath);
    return 0;
}

/* ---- report ------------------------------------------------------------- */

static int cmd_report(int argc, char **argv)
{
    const char *path = NULL;
    int64_t ids[1024];
    char metric[32] = "";
    an_report_opts o = {.run_ids = ids};
    sim_err err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            help_report(stdout);
            return 0;
        } else if (strcmp(a, "--csv") == 0) {
            o.csv = 1;
        } else if (strcmp(a, "--run") == 0 || strcmp(a, "--baseline") == 0 ||
                   strcmp(a, "--target") == 0) {
            if (i + 1 >= argc)
                return usage_error("report", "%s needs a value", a);
            const char *v = argv[++i];
            if (a[2] == 't') {
                if (an_report_parse_target(v, metric, sizeof metric, &o.target_value, &err) < 0)
                    return fail(&err);
                o.target_metric = metric;
                continue;
            }
            char *end;
            long long id = strtoll(v, &end, 10);
            if (*end || id <= 0)
                return usage_error("report", "expected a run id, got '%s'", v);
            if (a[2] == 'b')
                o.baseline = id;
            else if (o.n_run_ids < 1024)
                ids[o.n_run_ids++] = id;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("report", "unknown option '%s'", a);
        } else if (!path) {
            path = a;
        } else {
            return usage_error("report", "unexpected argument '%s'", a);
        }
    }
    if (!path)
        return usage_error("report", "%s", "missing DB");
    if (an_report_print(path, &o, stdout, &err) < 0)
        return fail(&err);
    return 0;
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
    sim_err_install_library_handlers();
    sim_experiment_init();
    if (argc < 2) {
        help_main(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (is_help(cmd)) {
        help_main(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("dtsim %s\n", DTSIM_VERSION);
        return 0;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "list") == 0)
        return cmd_list(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0)
        return cmd_report(argc - 1, argv + 1);
    if (strcmp(cmd, "sweep") == 0 || strcmp(cmd, "plot") == 0 || strcmp(cmd, "topo") == 0) {
        fprintf(stderr, "%s: '%s' is not available in this version yet (see README.md, "
                        "'Status')\n", prog, cmd);
        return 2;
    }
    fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
    help_main(stderr);
    return 2;
}
