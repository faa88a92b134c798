/* dtsim: the command-line shell. Maps argv to one library call per
 * subcommand and prints results and errors; the only file that prints or
 * exits. Exit status: 0 success (a diverged run is a result), 2 usage,
 * config, input or database error, 1 anything else. */
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/core/algo.h"
#include "algorithms/compress/compress.h"
#include "analysis/db.h"
#include "analysis/plot.h"
#include "analysis/report.h"
#include "analysis/scaling.h"
#include "analysis/sweep.h"
#include "sim/compute.h"
#include "config/config.h"
#include "experiment/experiment.h"
#include "experiment/keydoc.h"
#include "sim/pool.h"
#include "sim/rng.h"
#include "topology/graph.h"
#include "topology/physnet.h"
#include "topology/props.h"
#include "workloads/dataset.h"
#include "workloads/model.h"
#include "workloads/partition.h"
#include "workloads/presets.h"

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
            "  dtsim run EXPERIMENT.ini [--set SECTION.KEY=VALUE]... [--db FILE] [--threads N]\n"
            "              [--quiet]\n"
            "  dtsim sweep EXPERIMENT.ini --grid SECTION.KEY=V1,V2,... [--grid ...]\n"
            "              [--set SECTION.KEY=VALUE]... [--seeds A-B] [--jobs N] [--db FILE]\n"
            "              [--threads N] [--shard-dir DIR] [--quiet]\n"
            "  dtsim report DB [--run ID]... [--target METRIC=VALUE] [--sustain K]\n"
            "              [--baseline RUN] [--csv] [--aggregate | --scaling]\n"
            "  dtsim plot DB --y METRIC [--x sim_time|iteration|epoch|samples|bytes_sent]\n"
            "              [--by COLUMN] [--where SQL] [--logx] [--logy] [--title TEXT]\n"
            "              [--size WxH] -o FILE.png|.svg|.pdf\n"
            "  dtsim topo GRAPH [--n N] [--weights metropolis|uniform|metropolis_lazy]\n"
            "              [--seed S] [--export FILE.graphml|.dot]\n"
            "  dtsim list [algorithms|graphs|networks|models|datasets|partitions|distributions|\n"
            "              presets|compressors|optimizers|keys]\n"
            "  dtsim --version | --help     (every subcommand has --help too)\n\n"
            "Exit status: 0 success (a diverged run is a result), 2 usage, config, input\n"
            "or database error (the message names file, line and key), 1 anything else.\n"
            "Results go to an SQLite database (default results.db); see README.md and\n"
            "docs/usage.md.\n",
            DTSIM_VERSION);
}

static void help_run(FILE *f)
{
    fprintf(f,
            "Usage: dtsim run EXPERIMENT.ini [--set SECTION.KEY=VALUE]... [--db FILE]\n"
            "                [--threads N] [--quiet]\n\n"
            "Runs one experiment and appends it to the database (default results.db in the\n"
            "current directory): a runs row (status running, then done or diverged), every\n"
            "config key in params, a metrics row per evaluation, per-worker totals and the\n"
            "staleness histogram. Prints one summary line; while running, a progress line\n"
            "on standard error when it is a terminal (--quiet turns it off).\n\n"
            "  --set SECTION.KEY=VALUE  override a key of the file (repeatable)\n"
            "  --db FILE                results database (created if missing)\n"
            "  --threads N              threads computing the workers' gradients (default:\n"
            "                           $DTSIM_THREADS, else every core); the results are\n"
            "                           the same for any N\n"
            "  --quiet, -q              no progress line\n\n"
            "Keys (section, key, default): `dtsim list keys` prints them all with their\n"
            "meaning, then every method's own [algorithm] keys.\n");
}

static void help_report(FILE *f)
{
    fprintf(f,
            "Usage: dtsim report DB [--run ID]... [--target METRIC=VALUE] [--sustain K]\n"
            "                    [--baseline RUN] [--csv] [--aggregate | --scaling]\n\n"
            "One row per run: algorithm, workers, final train loss, final test accuracy,\n"
            "simulated time, time to target, speedup against the baseline, bytes sent, idle\n"
            "fraction, mean staleness, final consensus distance.\n\n"
            "  --run ID               only this run (repeatable; default all runs)\n"
            "  --target METRIC=VALUE  time to target: test_accuracy=0.85 (reached when >=)\n"
            "                         or train_loss=0.5 / test_loss=0.5 (reached when <=);\n"
            "                         the first evaluation at or past the threshold;\n"
            "                         default: each run's own experiment.target_accuracy\n"
            "                         (test_accuracy), if it set one\n"
            "  --sustain K            the target must hold for K consecutive evaluations\n"
            "                         (a noisy curve's first crossing flatters it); the\n"
            "                         time to target is the first of those K (default 1)\n"
            "  --baseline RUN         speedup = TTA(baseline) / TTA(run); default: the\n"
            "                         allreduce_sgd run whose other common parameters\n"
            "                         match (lr, batch, workers, network, workload, ...)\n"
            "  --csv                  comma-separated output for machines\n"
            "  --aggregate            one row per group of runs that differ only in their\n"
            "                         seed (done or diverged): mean [min, max] of each\n"
            "                         column, the number of seeds and how many reached the\n"
            "                         target\n"
            "  --scaling              for runs (done) that differ only in the worker count\n"
            "                         (and the arguments of network.topology): simulated\n"
            "                         throughput (samples per simulated second) and the\n"
            "                         scaling factor throughput(n) / (n/n0 x\n"
            "                         throughput(n0)), n0 the group's smallest count (1:\n"
            "                         throughput(n) / (n x throughput(1)))\n");
}

static void help_list(FILE *f)
{
    fprintf(f, "Usage: dtsim list [algorithms|graphs|networks|models|datasets|partitions|"
               "distributions|presets|compressors|optimizers|keys]\n\nDescribes what can be named in an experiment "
               "file. "
               "Without an argument, lists everything.\n"
               "`dtsim list keys` prints every key with its default, kind of value and meaning,\n"
               "then every method's own [algorithm] keys (docs/configuration.md is generated\n"
               "from it).\n");
}

/* ---- list --------------------------------------------------------------- */

static void list_algorithms(void)
{
    printf("algorithms ([algorithm] name):\n");
    for (int i = 0; algo_registry[i]; i++) {
        const algo_vt *vt = algo_registry[i];
        printf("  %-16s %s (docs/algorithms.md %s)\n", vt->name, vt->summary, vt->reference);
        for (const sim_key *k = vt->keys; k && k->key; k++)
            printf("      %-14s = %-10s %s\n", k->key, k->def, k->doc);
    }
}

static void list_networks(void)
{
    printf("networks ([network] topology):\n");
    for (int i = 0; topo_physnet_registry[i]; i++) {
        const topo_physnet_vt *vt = topo_physnet_registry[i];
        char name[64];
        snprintf(name, sizeof name, "%s%s", vt->name, vt->args);
        printf("  %-22s %s\n", name, vt->summary);
    }
    printf("server presets (NAME(NODES); the [network] latency and bandwidth are each "
           "server's interface):\n");
    for (int i = 0; topo_server_at(i); i++) {
        const topo_server *sv = topo_server_at(i);
        printf("  %-10s %d GPUs, %g GB/s and %g us per GPU link; %s\n", sv->name, sv->per_node,
               sv->intra_bandwidth / 1e9, sv->intra_latency * 1e6, sv->source);
    }
}

static void list_graphs(void)
{
    printf("graphs ([topology] graph; see `dtsim topo GRAPH`):\n");
    for (int i = 0; topo_graph_registry[i]; i++) {
        const topo_graph_vt *vt = topo_graph_registry[i];
        char name[64];
        snprintf(name, sizeof name, "%s%s", vt->name, vt->args);
        printf("  %-22s %s\n", name, vt->summary);
    }
    printf("  weights ([topology] weights): metropolis (any graph) | uniform (regular graphs) |\n"
           "    metropolis_lazy ((I + W) / 2 of metropolis: eigenvalues in [0, 1])\n");
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

static void list_entry(const char *name, const char *args, const char *summary)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s%s", name, args);
    printf("  %-28s %s\n", nm, summary);
}

static void list_info(const char *title, const char *const *names, const char *const *args,
                      const char *const *sums, int n)
{
    printf("%s:\n", title);
    for (int i = 0; i < n; i++)
        list_entry(names[i], args[i], sums[i]);
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

/* `dtsim list keys`: one line per key, "key = default  (kind) meaning", where
 * kind is the value's type (time, rate, ... take units) or its choices
 * "a|b|c"; the default is followed by at least two spaces.
 * tools/gen_config_doc.sh parses this output into docs/configuration.md. */
static const char *key_kind(const sim_key *k)
{
    static const char *const kinds[] = {"integer", "number", "time", "rate", "size",
                                        "FLOP/s",  "bool",   "text"};
    if (k->type == SIM_KEY_CHOICE && k->choices)
        return k->choices;
    return (unsigned)k->type < sizeof kinds / sizeof kinds[0] ? kinds[k->type] : "text";
}

static void list_key(const sim_key *k)
{
    char doc[1024];
    printf("    %-20s = %-14s  (%s) %s\n", k->key, k->def[0] ? k->def : "\"\"", key_kind(k),
           xp_key_doc(k, doc, sizeof doc));
}

static void list_keys(void)
{
    printf("experiment-file keys ([section] key = default  (kind or choices) meaning):\n");
    const char *sec = "";
    for (const sim_key *k = sim_config_keys; k->key; k++) {
        if (strcmp(sec, k->section) != 0) {
            printf("  [%s]\n", k->section);
            sec = k->section;
        }
        list_key(k);
    }
    printf("method-specific keys (only with that [algorithm] name):\n");
    for (int i = 0; algo_registry[i]; i++) {
        const algo_vt *vt = algo_registry[i];
        int has = vt->keys && vt->keys->key;
        printf("  [algorithm] name = %s (docs/algorithms.md %s)%s\n", vt->name, vt->reference,
               has ? ":" : ": no keys of its own");
        for (const sim_key *k = vt->keys; k && k->key; k++)
            list_key(k);
    }
}

static void list_presets(void)
{
    printf("model proxies ([workload] proxy: message sizes and compute times of a larger "
           "network;\n  training FLOPs = 3 x forward, a multiply-add = 2 FLOPs):\n");
    printf("  %-12s %14s %16s %6s  %s\n", "name", "parameters", "train FLOP/sample", "layers",
           "sample; source");
    for (int i = 0; wl_proxy_table[i].name; i++) {
        const wl_proxy *p = &wl_proxy_table[i];
        printf("  %-12s %14lld %16.4g %6d  %s; %s\n", p->name, (long long)p->params,
               p->flops_per_sample, wl_proxy_layers(p, NULL, 0), p->sample, p->source);
    }
    printf("devices ([workers] device = NAME, or a speed such as 15.7TFLOPS):\n");
    for (int i = 0; wl_device_table[i].name; i++) {
        const wl_device *d = &wl_device_table[i];
        printf("  %-12s %12.4g FLOP/s  %s; %s\n", d->name, d->peak_flops, d->precision,
               d->source);
    }
}

static void list_compressors(void)
{
    printf("compressors ([algorithm] compressor = SPEC; error_feedback = true keeps each "
           "worker's\n  residual e and sends C(u + e); d = parameters on the wire: "
           "sim_params, proxy, else the model's):\n");
    for (int i = 0; algo_compress_registry[i]; i++) {
        const algo_compress_vt *vt = algo_compress_registry[i];
        char nm[64];
        snprintf(nm, sizeof nm, "%s%s", vt->name, vt->args);
        printf("  %-16s %s\n", nm, vt->summary);
        printf("  %-16s message: %s\n", "", vt->size_rule);
        printf("  %-16s aggregated by %s\n", "",
               vt->agg == ALGO_COMPRESS_ALLGATHER
                   ? "all-gather (supports differ; ring, whatever [network] collective says)"
                   : "all-reduce (same support; [network] collective)");
    }
    printf("  methods that accept a compressor other than none:");
    for (int i = 0, first = 1; algo_registry[i]; i++)
        if (algo_registry[i]->supports_compression) {
            printf("%s%s", first ? " " : ", ", algo_registry[i]->name);
            first = 0;
        }
    printf("\n");
}

static void list_optimizers(void)
{
    printf("optimizers ([algorithm] optimizer; sgd uses momentum and nesterov; the keys\n"
           "  each reads are listed under it):\n");
    for (int i = 0; algo_optim_registry[i]; i++) {
        const algo_optim *o = algo_optim_registry[i];
        printf("  %-8s %s; %s weight decay\n", o->name, o->summary,
               o->decoupled_wd ? "decoupled" : "coupled");
        for (const algo_optim *b = o; b; b = b->base)
            for (const sim_key *k = b->keys; k && k->key; k++)
                list_key(k);
    }
}

static void list_datasets(void)
{
    printf("datasets ([workload] dataset):\n");
    for (int i = 0; wl_dataset_registry[i]; i++) {
        const wl_dataset_vt *vt = wl_dataset_registry[i];
        list_entry(vt->name, vt->args, vt->summary);
    }
}
static void list_partitions(void)
{
    printf("partitions ([workload] partition):\n");
    for (int i = 0; wl_partition_registry[i]; i++) {
        const wl_partition_vt *vt = wl_partition_registry[i];
        list_entry(vt->name, vt->args, vt->summary);
    }
}
static void list_distributions(void)
{
    LIST_TABLE("distributions ([workers] compute)", sim_dist_table);
}

static const struct {
    const char *name;
    void (*fn)(void);
} list_kinds[] = {
    {"algorithms", list_algorithms}, {"graphs", list_graphs},
    {"networks", list_networks},     {"models", list_models},
    {"datasets", list_datasets},     {"partitions", list_partitions},
    {"distributions", list_distributions}, {"presets", list_presets},
    {"compressors", list_compressors}, {"optimizers", list_optimizers},
    {"keys", list_keys},
};

static int cmd_list(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    if (is_help(what)) {
        help_list(stdout);
        return 0;
    }
    int all = strcmp(what, "all") == 0, any = 0;
    for (size_t i = 0; i < sizeof list_kinds / sizeof list_kinds[0]; i++) {
        if (all || strcmp(what, list_kinds[i].name) == 0) {
            list_kinds[i].fn();
            any = 1;
        }
    }
    if (!any)
        return usage_error("list", "unknown category '%s' (known: algorithms, graphs, networks, "
                                   "models, datasets, partitions, distributions, presets, compressors, "
                                   "optimizers, keys)",
                           what);
    return 0;
}

/* ---- run ---------------------------------------------------------------- */

static void format_bytes(double b, char *buf, size_t len)
{
    const char *u[] = {"B", "kB", "MB", "GB", "TB", "PB"};
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

/* --threads N (a number from 1 to 1024, or NULL), else $DTSIM_THREADS,
 * else the online processors. Returns the count, or -1 after printing the
 * usage error. */
static int threads_of(const char *cmd, const char *opt)
{
    const char *v = opt ? opt : getenv("DTSIM_THREADS");
    if (!v || !*v)
        return sim_pool_default_threads();
    char *end;
    long t = strtol(v, &end, 10);
    if (*end || t < 1 || t > 1024) {
        usage_error(cmd, opt ? "--threads: expected a number from 1 to 1024, got '%s'"
                             : "DTSIM_THREADS: expected a number from 1 to 1024, got '%s'",
                    v);
        return -1;
    }
    return (int)t;
}

static volatile sig_atomic_t interrupt_flag;

static void on_signal(int sig)
{
    (void)sig;
    interrupt_flag = 1;
}

/* SIGINT and SIGTERM stop a run at its next iteration, marked failed. */
static void install_interrupt_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Keys the user wrote that the experiment does not use: one line each. */
static void print_warnings(const sim_config *cfg)
{
    char buf[4096];
    if (sim_experiment_warnings(cfg, buf, sizeof buf) == 0)
        return;
    for (char *line = buf, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl)
            break;
        fprintf(stderr, "%s: warning: %.*s\n", prog, (int)(nl - line), line);
    }
}

static int cmd_run(int argc, char **argv)
{
    const char *file = NULL, *dbpath = "results.db", *threads_opt = NULL;
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
        } else if (strcmp(a, "--threads") == 0) {
            if (i + 1 >= argc)
                return usage_error("run", "%s needs a value", a);
            threads_opt = argv[++i];
        } else if (strncmp(a, "--threads=", 10) == 0) {
            threads_opt = a + 10;
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
    int threads = threads_of("run", threads_opt);
    if (threads < 0)
        return 2;

    sim_err err = {0};
    sim_config cfg;
    if (sim_config_load(file, sets, nsets, &cfg, &err) < 0)
        return fail(&err);
    print_warnings(&cfg);
    an_db *db = an_db_open(dbpath, &err);
    if (!db) {
        sim_config_release(&cfg);
        return fail(&err);
    }
    install_interrupt_handlers();
    sim_run_opts opts = {
        .interrupt = &interrupt_flag,
        .db = db,
        .on_progress = (!quiet && isatty(2)) ? on_progress : NULL,
        .progress_interval = 0.25,
        .threads = threads,
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
    int scaling = 0;
    sim_err err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            help_report(stdout);
            return 0;
        } else if (strcmp(a, "--csv") == 0) {
            o.csv = 1;
        } else if (strcmp(a, "--aggregate") == 0) {
            o.aggregate = 1;
        } else if (strcmp(a, "--scaling") == 0) {
            scaling = 1;
        } else if (strcmp(a, "--sustain") == 0) {
            if (i + 1 >= argc)
                return usage_error("report", "%s needs a value", a);
            char *end;
            long k = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || k < 1 || k > 1000000)
                return usage_error("report", "--sustain: expected a count from 1 to 1000000, "
                                   "got '%s'", argv[i]);
            o.sustain = (int)k;
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
    if (scaling && (o.aggregate || o.target_metric || o.baseline || o.sustain))
        return usage_error("report", "%s",
                           "--scaling takes no --aggregate, --target, --sustain or --baseline");
    if (scaling) {
        if (an_scaling_print(path, ids, o.n_run_ids, o.csv, stdout, &err) < 0)
            return fail(&err);
        return 0;
    }
    if (an_report_print(path, &o, stdout, &err) < 0)
        return fail(&err);
    return 0;
}

/* ---- sweep -------------------------------------------------------------- */

static void help_sweep(FILE *f)
{
    fprintf(f,
            "Usage: dtsim sweep EXPERIMENT.ini --grid SECTION.KEY=V1,V2,... [--grid ...]\n"
            "                   [--set SECTION.KEY=VALUE]... [--seeds A-B] [--jobs N]\n"
            "                   [--db FILE] [--threads N] [--shard-dir DIR] [--quiet]\n\n"
            "Runs the Cartesian product of the --grid values times the --seeds, with every\n"
            "--set applied to all, into one database (default results.db). Every\n"
            "configuration is validated before anything runs. A configuration already done\n"
            "in the database (same canonical config) is skipped, so an interrupted sweep\n"
            "resumes; a run left 'running' by a killed sweep is marked failed and redone.\n"
            "Prints one line per configuration; while running, a progress line on standard\n"
            "error when it is a terminal.\n\n"
            "  --grid SECTION.KEY=V1,V2,...  values of one key (repeatable); commas inside\n"
            "                         parentheses do not split: 'workers.compute=\n"
            "                         constant(1ms),lognormal(1ms, 0.5)'\n"
            "  --set SECTION.KEY=VALUE  override a key in every configuration (repeatable)\n"
            "  --seeds A-B            experiment.seed = A..B for every grid point (or one A)\n"
            "  --jobs N               run N experiments at once, in separate processes\n"
            "  --threads N            threads computing each run's gradients (default:\n"
            "                         $DTSIM_THREADS, else the cores divided by --jobs)\n"
            "  --db FILE              results database (created if missing)\n"
            "  --shard-dir DIR        under mpirun: where ranks other than 0 keep their\n"
            "                         shard databases (default: next to the --db file)\n"
            "  --quiet, -q            no progress line\n\n"
            "Ctrl-C (SIGINT or SIGTERM) starts nothing more, stops the runs in flight\n"
            "(marked failed), prints the summary and exits with status 130; the same\n"
            "command again resumes.\n\n"
            "Under mpirun (OpenMPI), the ranks share the configurations still to do; rank 0\n"
            "writes the database, the others shard databases whose contents they send to\n"
            "rank 0 in MPI messages, merged at the end (no shared filesystem needed):\n"
            "  mpirun --hostfile hosts -np 8 dtsim sweep exp.ini --grid ... --db results.db\n");
}

typedef struct sweep_cli {
    int progress;       /* a progress line is wanted */
    int shown;          /* a progress line is on the screen */
    int mpi;            /* started by mpirun: prefix lines with the rank */
} sweep_cli;

static void sweep_clear(sweep_cli *c)
{
    if (c->shown) {
        fprintf(stderr, "\r\033[K");
        c->shown = 0;
    }
}

static void sweep_on_status(void *ctx, const an_sweep_status *s)
{
    sweep_cli *c = ctx;
    if (!c->progress)
        return;
    char left[32] = "?";
    if (!isnan(s->remaining))
        snprintf(left, sizeof left, "%.0fs", s->remaining);
    fprintf(stderr, "\r  runs %d/%d", s->finished, s->total);
    if (s->running > 1)
        fprintf(stderr, " (%d running)", s->running);
    if (s->current >= 0)
        fprintf(stderr, "  #%d: iter %lld  sim %.3fs  loss %.4f", s->current + 1,
                (long long)s->tick.iteration, s->tick.sim_time, s->tick.train_loss);
    fprintf(stderr, "  wall %.0fs  left %s\033[K", s->elapsed, left);
    fflush(stderr);
    c->shown = 1;
}

static void sweep_on_result(void *ctx, const an_sweep_result *r)
{
    sweep_cli *c = ctx;
    sweep_clear(c);
    char rank[32] = "";
    if (c->mpi)
        snprintf(rank, sizeof rank, "rank %d: ", r->rank);
    const char *label = r->label[0] ? r->label : "(the file as is)";
    if (r->code != 0) {
        fflush(stdout);
        fprintf(stderr, "%s[%d/%d] failed: %s\n", rank, r->index + 1, r->total, r->message);
    } else if (r->skipped) {
        printf("%s[%d/%d] skip   run %lld already done: %s\n", rank, r->index + 1, r->total,
               (long long)r->run_id, label);
    } else {
        printf("%s[%d/%d] %-6s %s %lld: %s: train loss %.4f, test accuracy %.4f, "
               "simulated %.3f s\n",
               rank, r->index + 1, r->total, r->status, r->rank > 0 ? "shard run" : "run",
               (long long)r->run_id, label,
               r->final_train_loss, r->final_test_accuracy, r->sim_time);
    }
    fflush(stdout);
}

static void sweep_tick(void *ctx, const sim_progress *p)
{
    an_sweep_tick t = {.iteration = p->iteration, .sim_time = p->sim_time,
                       .train_loss = p->train_loss, .test_accuracy = p->test_accuracy,
                       .fraction = p->fraction};
    an_sweep_job_tick(ctx, &t);
}

/* The sweep's run function: one experiment through the experiment runner. */
static int sweep_run_one(void *ctx, const sim_config *cfg, an_db *db, an_sweep_job *job,
                         an_sweep_outcome *out, sim_err *err)
{
    const int *threads = ctx;
    sim_run_opts o = {.db = db, .on_progress = sweep_tick, .progress_interval = 0.25,
                      .ctx = job, .interrupt = &interrupt_flag, .threads = *threads};
    sim_run_result r;
    int rc = sim_experiment_run(cfg, &o, &r, err);
    if (rc < 0)
        return rc;
    out->run_id = r.run_id;
    snprintf(out->status, sizeof out->status, "%s", r.status);
    out->sim_time = r.sim_time;
    out->final_train_loss = r.final_train_loss;
    out->final_test_accuracy = r.final_test_accuracy;
    return 0;
}

typedef struct sweep_check_ctx {
    sim_check *chk;
    int warned;
} sweep_check_ctx;

/* Checks every configuration; the warnings of the first one (the keys the
 * file and --set wrote that the method ignores) are printed once. */
static int sweep_check_one(void *ctx, const sim_config *cfg, sim_err *err)
{
    sweep_check_ctx *c = ctx;
    if (!c->warned) {
        c->warned = 1;
        print_warnings(cfg);
    }
    return sim_experiment_check(cfg, c->chk, err);
}

static int cmd_sweep(int argc, char **argv)
{
    const char *sets[MAX_SETS], *grids[MAX_SETS];
    an_sweep_opts o = {.db_path = "results.db", .jobs = 1, .mpi = 1, .sets = sets,
                       .grids = grids, .run = sweep_run_one};
    int quiet = 0;
    const char *threads_opt = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        static const char *const with_value[] = {"--grid", "--set", "--seeds", "--jobs",
                                                 "--db", "--shard-dir", "--threads"};
        int opt = -1;
        for (int k = 0; k < 7; k++) {
            size_t len = strlen(with_value[k]);
            if (strcmp(a, with_value[k]) == 0) {
                if (i + 1 >= argc)
                    return usage_error("sweep", "%s needs a value", a);
                opt = k;
                v = argv[++i];
            } else if (strncmp(a, with_value[k], len) == 0 && a[len] == '=') {
                opt = k;
                v = a + len + 1;
            }
        }
        if (is_help(a)) {
            help_sweep(stdout);
            return 0;
        } else if (opt == 0 || opt == 1) {
            int *n = opt == 0 ? &o.n_grids : &o.n_sets;
            if (*n == MAX_SETS)
                return usage_error("sweep", "too many %s options", a);
            (opt == 0 ? grids : sets)[(*n)++] = v;
        } else if (opt == 2) {
            o.seeds = v;
        } else if (opt == 3) {
            char *end;
            long j = strtol(v, &end, 10);
            if (*end || j < 1 || j > 256)
                return usage_error("sweep", "--jobs: expected a number from 1 to 256, got '%s'",
                                   v);
            o.jobs = (int)j;
        } else if (opt == 4) {
            o.db_path = v;
        } else if (opt == 5) {
            o.shard_dir = v;
        } else if (opt == 6) {
            threads_opt = v;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("sweep", "unknown option '%s'", a);
        } else if (!o.experiment) {
            o.experiment = a;
        } else {
            return usage_error("sweep", "unexpected argument '%s'", a);
        }
    }
    if (!o.experiment)
        return usage_error("sweep", "%s", "missing EXPERIMENT.ini");
    int threads = threads_of("sweep", threads_opt);
    if (threads < 0)
        return 2;
    if (!threads_opt && !getenv("DTSIM_THREADS") && o.jobs > 1)
        threads = threads / o.jobs > 1 ? threads / o.jobs : 1; /* the jobs share the cores */
    o.run_ctx = &threads;
    sweep_cli c = {.progress = !quiet && isatty(2), .mpi = an_sweep_under_mpirun()};
    o.on_result = sweep_on_result;
    o.on_status = c.progress ? sweep_on_status : NULL;
    o.ctx = &c;
    sim_check *chk = sim_check_create();
    sweep_check_ctx cc = {.chk = chk};
    o.check = sweep_check_one;
    o.check_ctx = &cc;
    sim_err err = {0};
    an_sweep_summary sum;
    install_interrupt_handlers();
    o.interrupt = &interrupt_flag;
    int rc = an_sweep_run(&o, &sum, &err);
    sim_check_destroy(chk);
    sweep_clear(&c);
    if (sum.rank == 0 && sum.total > 0) {
        printf("sweep%s: %d configurations: %d run, %d already done, %d failed",
               rc == SIM_EINTR ? " interrupted" : "", sum.total, sum.ran, sum.skipped,
               sum.failed);
        if (sum.not_started > 0)
            printf(", %d not started", sum.not_started);
        if (sum.size > 1)
            printf(" (%d MPI ranks; %d runs merged from their shards)", sum.size, sum.merged);
        printf(" -> %s\n", o.db_path);
        fflush(stdout);
    }
    if (rc == SIM_EINTR) {
        fail(&err);
        return 130; /* 128 + SIGINT, as a shell reports a Ctrl-C */
    }
    if (rc < 0)
        return fail(&err);
    return 0;
}

/* ---- plot --------------------------------------------------------------- */

static void help_plot(FILE *f)
{
    fprintf(f,
            "Usage: dtsim plot DB --y METRIC [--x sim_time|iteration|epoch|samples|bytes_sent]\n"
            "                  [--by COLUMN] [--where SQL] [--logx] [--logy] [--title TEXT]\n"
            "                  [--size WxH] -o FILE.png|.svg|.pdf\n"
            "       dtsim plot DB --scaling [--y scaling|throughput|step_time]\n"
            "                  [--x n_workers|compression|PARAMS_KEY] [--by PARAMS_KEY] ...\n\n"
            "Draws one line per group of finished runs (done or diverged): the mean over\n"
            "the runs that differ only in their seed, with a translucent min-max band,\n"
            "interpolated where all of them have data. The format follows the file name.\n\n"
            "  --y METRIC       a metrics column: train_loss, test_loss, test_accuracy,\n"
            "                   consensus_distance, bytes_sent, epoch, samples, ...; or\n"
            "                   series:NAME, a method's series (keep_fraction, ...) drawn\n"
            "                   as steps to the run's end (--x sim_time or iteration)\n"
            "  --x COLUMN       sim_time (default, simulated seconds), iteration, epoch,\n"
            "                   samples or bytes_sent\n"
            "  --by COLUMN      a runs column (algorithm, n_workers, ...) or a params key\n"
            "                   (network.topology, algorithm.lr, ...); default: one line\n"
            "                   per configuration, labelled by the keys that differ\n"
            "  --where SQL      condition on the runs table r, e.g. \"r.n_workers = 8\" or\n"
            "                   \"r.id IN (SELECT run_id FROM params WHERE key =\n"
            "                   'network.topology' AND value = 'ring')\"\n"
            "  --logx, --logy   logarithmic axis\n"
            "  --title TEXT     instead of the automatic title\n"
            "  --size WxH       pixels (PNG) or points (SVG, PDF); default 960x640\n"
            "  -o FILE          output: .png, .svg or .pdf (also --output FILE)\n"
            "  --scaling        points of `dtsim report --scaling` instead: y = scaling\n"
            "                   (default), throughput or step_time (seconds per\n"
            "                   iteration); x = n_workers (default), a numeric params key\n"
            "                   (network.bandwidth in Gb/s, algorithm.bucket in MiB) or\n"
            "                   compression (largest workload.sim_params of the line over\n"
            "                   the run's); --by a params key; --where selects the points\n");
}

static int cmd_plot(int argc, char **argv)
{
    const char *path = NULL;
    an_plot_opts o = {0};
    int scaling = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            help_plot(stdout);
            return 0;
        } else if (strcmp(a, "--logx") == 0) {
            o.logx = 1;
        } else if (strcmp(a, "--logy") == 0) {
            o.logy = 1;
        } else if (strcmp(a, "--scaling") == 0) {
            scaling = 1;
        } else if (strcmp(a, "--y") == 0 || strcmp(a, "--x") == 0 || strcmp(a, "--by") == 0 ||
                   strcmp(a, "--where") == 0 || strcmp(a, "--title") == 0 ||
                   strcmp(a, "--size") == 0 || strcmp(a, "-o") == 0 ||
                   strcmp(a, "--output") == 0) {
            if (i + 1 >= argc)
                return usage_error("plot", "%s needs a value", a);
            const char *v = argv[++i];
            if (strcmp(a, "--y") == 0)
                o.y = v;
            else if (strcmp(a, "--x") == 0)
                o.x = v;
            else if (strcmp(a, "--by") == 0)
                o.by = v;
            else if (strcmp(a, "--where") == 0)
                o.where = v;
            else if (strcmp(a, "--title") == 0)
                o.title = v;
            else if (strcmp(a, "--size") == 0) {
                if (sscanf(v, "%dx%d", &o.width, &o.height) != 2 || o.width < 100 ||
                    o.height < 100 || o.width > 10000 || o.height > 10000)
                    return usage_error("plot", "--size: expected WxH such as 960x640, got '%s'",
                                       v);
            } else
                o.output = v;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("plot", "unknown option '%s'", a);
        } else if (!path) {
            path = a;
        } else {
            return usage_error("plot", "unexpected argument '%s'", a);
        }
    }
    if (!path)
        return usage_error("plot", "%s", "missing DB");
    if (!o.y && !scaling)
        return usage_error("plot", "%s", "missing --y METRIC");
    if (!o.output)
        return usage_error("plot", "%s", "missing -o FILE.png|.svg|.pdf");
    sim_err err = {0};
    int n_series = 0, n_runs = 0;
    if (scaling) {
        if (an_scaling_plot_write(path, &o, &n_series, &n_runs, &err) < 0)
            return fail(&err);
        printf("plot: %d line%s, %d point%s -> %s\n", n_series, n_series == 1 ? "" : "s",
               n_runs, n_runs == 1 ? "" : "s", o.output);
        return 0;
    }
    if (an_plot_write(path, &o, &n_series, &n_runs, &err) < 0)
        return fail(&err);
    printf("plot: %d line%s from %d run%s -> %s\n", n_series, n_series == 1 ? "" : "s", n_runs,
           n_runs == 1 ? "" : "s", o.output);
    return 0;
}

/* ---- topo --------------------------------------------------------------- */

static void help_topo(FILE *f)
{
    fprintf(f,
            "Usage: dtsim topo GRAPH [--n N] [--weights metropolis|uniform|metropolis_lazy]\n"
            "                        [--seed S] [--export FILE.graphml|.dot]\n\n"
            "Builds a logical graph as [topology] graph names it (ring, torus(4, 4),\n"
            "random_regular(4), file(G.graphml), ...; `dtsim list graphs`) and prints its\n"
            "nodes, edges, degree range, diameter, whether it is connected, lambda (the\n"
            "second-largest eigenvalue magnitude of the mixing matrix W; for\n"
            "one_peer_exponential the contraction of one period of W_t) and the spectral\n"
            "gaps 1 - lambda and p = 1 - lambda^2.\n\n"
            "  --n N          nodes (workers); default: r x c for a torus, the file's node\n"
            "                 count for file(...), else %d\n"
            "  --weights W    metropolis (default), uniform (regular graphs only) or\n"
            "                 metropolis_lazy ((I + W) / 2 of metropolis)\n"
            "  --seed S       master seed for random graphs (default 1): the graph an\n"
            "                 experiment with [experiment] seed = S gossips on\n"
            "  --export FILE  also write the graph as GraphML (.graphml) or dot (.dot)\n",
            TOPO_GRAPH_DEFAULT_N);
}

static int cmd_topo(int argc, char **argv)
{
    const char *spec = NULL, *export = NULL, *weights = "metropolis";
    long long n = 0, seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (is_help(a)) {
            help_topo(stdout);
            return 0;
        }
        const char *opts[] = {"--n", "--weights", "--seed", "--export"};
        int which = -1;
        for (int k = 0; k < 4; k++) {
            size_t len = strlen(opts[k]);
            if (strncmp(a, opts[k], len) == 0 && (a[len] == '\0' || a[len] == '=')) {
                which = k;
                if (a[len] == '=')
                    v = a + len + 1;
                else if (i + 1 < argc)
                    v = argv[++i];
                else
                    return usage_error("topo", "%s needs a value", opts[k]);
            }
        }
        if (which == 0 || which == 2) {
            char *end;
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (*end || errno || x < (which == 0 ? 1 : 0) || (which == 0 && x > 1 << 24))
                return usage_error("topo", which == 0 ? "--n: expected a node count >= 1, got '%s'"
                                                      : "--seed: expected an integer >= 0, got '%s'",
                                   v);
            if (which == 0)
                n = x;
            else
                seed = x;
        } else if (which == 1) {
            weights = v;
        } else if (which == 3) {
            export = v;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("topo", "unknown option '%s'", a);
        } else if (!spec) {
            spec = a;
        } else {
            return usage_error("topo", "unexpected argument '%s'", a);
        }
    }
    if (!spec)
        return usage_error("topo", "%s", "missing GRAPH (see `dtsim list graphs`)");
    sim_err err = {0};
    topo_weights w;
    if (topo_weights_parse(weights, &w, &err) < 0)
        return usage_error("topo",
                           "--weights: expected metropolis, uniform or metropolis_lazy, got '%s'",
                           weights);
    gsl_rng *rng = sim_rng_create((uint64_t)seed, SIM_STREAM_TOPOLOGY, 0);
    if (!rng) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    topo_graph g;
    int rc = topo_graph_build(&g, spec, (int)n, rng, &err);
    gsl_rng_free(rng);
    if (rc < 0)
        return fail(&err);
    topo_graph_props p;
    rc = topo_graph_describe(&g, w, &p, &err);
    if (rc == 0 && export)
        rc = topo_graph_export(&g, export, &err);
    topo_graph_release(&g);
    if (rc < 0)
        return fail(&err);
    printf("graph       %s, %s weights\n", spec, topo_weights_name(w));
    printf("nodes       %d\n", p.n);
    printf("edges       %lld%s\n", (long long)p.n_edges,
           p.time_varying ? " (union over one period)" : "");
    printf("degree      %d .. %d%s\n", p.deg_min, p.deg_max, p.deg_min == p.deg_max ? " (regular)" : "");
    if (p.time_varying)
        printf("schedule    time-varying, period %d steps, %d peer%s per step\n", p.period,
               p.peers_per_step, p.peers_per_step == 1 ? "" : "s");
    if (p.diameter >= 0)
        printf("diameter    %d\n", p.diameter);
    else
        printf("diameter    infinite\n");
    printf("connected   %s\n", p.connected ? "yes" : "no");
    printf("lambda      %.10g  (%s; %s)\n", p.lambda,
           p.time_varying ? "||W_{p-1}..W_0 - J||, one period" : "second-largest |eigenvalue| of W",
           topo_lambda_method_name(p.lambda_method));
    printf("gap         %.10g  (1 - lambda)\n", p.gap);
    printf("p           %.10g  (1 - lambda^2)\n", p.p);
    if (export)
        printf("exported    %s\n", export);
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
    if (strcmp(cmd, "sweep") == 0)
        return cmd_sweep(argc - 1, argv + 1);
    if (strcmp(cmd, "plot") == 0)
        return cmd_plot(argc - 1, argv + 1);
    if (strcmp(cmd, "topo") == 0)
        return cmd_topo(argc - 1, argv + 1);
    fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
    help_main(stderr);
    return 2;
}
