/* dtsim sweep: the Cartesian product of --grid values and --seeds into one
 * database (analysis/sweep.c), each configuration through the experiment
 * runner; a line per configuration and a summary. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/sweep.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "experiment/experiment.h"

#define MAX_SETS 256

static const char help_head[] =
    "Usage: dtsim sweep EXPERIMENT.ini --grid SECTION.KEY=V1,V2,... [--grid ...]\n"
    "                   [--set SECTION.KEY=VALUE]... [--seeds A-B] [--jobs N]\n"
    "                   [--db FILE] [--threads N] [--shard-dir DIR] [--part K/N]\n"
    "                   [--max-memory SIZE] [--quiet]\n\n"
    "Runs the Cartesian product of the --grid values times the --seeds, with every\n"
    "--set applied to all, into one database (default results.db). Every\n"
    "configuration is validated before anything runs. A configuration already done\n"
    "in the database (same canonical config) is skipped, so an interrupted sweep\n"
    "resumes; a run left 'running' by a killed sweep is marked failed and redone.\n"
    "Prints one line per configuration; while running, a progress line on standard\n"
    "error when it is a terminal.\n\n";

static const char help_tail[] =
    "\nCtrl-C (SIGINT or SIGTERM) starts nothing more, stops the runs in flight\n"
    "(marked failed), prints the summary and exits with status 130; the same\n"
    "command again resumes.\n\n"
    "Under mpirun (OpenMPI), the ranks share the configurations still to do; rank 0\n"
    "writes the database, the others shard databases whose contents they send to\n"
    "rank 0 in MPI messages, merged at the end (no shared filesystem needed):\n"
    "  mpirun --hostfile hosts -np 8 dtsim sweep exp.ini --grid ... --db results.db\n\n"
    "Without MPI (a Slurm job array, GNU parallel), --part K/N runs the K-th of N\n"
    "disjoint slices (configuration i, counted from 0 in the order of the lines, when\n"
    "i mod N = K - 1), each into its own database, and dtsim merge joins them:\n"
    "  dtsim sweep exp.ini --grid ... --part $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT \\\n"
    "      --db part-$SLURM_ARRAY_TASK_ID.db       (sbatch --array=1-N)\n"
    "  dtsim merge results.db part-*.db\n";

/* One warning line and the configurations (by sweep index) it concerns. */
typedef struct sweep_warning {
    char *text;
    unsigned char *hit;         /* per configuration: 1 if it warned so */
} sweep_warning;

/* A --grid axis as the sweep expands it (analysis/sweep.c: seeds vary
 * fastest, then the last axis, the first slowest). */
typedef struct sweep_axis {
    char key[128];              /* "algorithm.name", "local_sgd:algorithm.local_steps" */
    char scope[64];             /* the method of a scoped key, "" if none */
    char **values;
    int n;
} sweep_axis;

typedef struct sweep_check_ctx {
    xp_check *chk;
    sweep_axis axes[MAX_SETS];
    int n_axes;
    long long n_seeds, total;   /* configurations, as the plan expands them */
    long long index;            /* of the next configuration checked */
    char (*algo)[64];           /* per configuration: its method */
    sweep_warning *warn;
    int n_warn;
    int mixed;                  /* 1: the configurations have more than one method */
} sweep_check_ctx;

/* The one method of every configuration, or NULL. */
static const char *sweep_only_algo(const sweep_check_ctx *c)
{
    return c && c->algo && c->index > 0 && !c->mixed ? c->algo[0] : NULL;
}

/* The grid as the sweep will expand it; total 0 when it cannot (the
 * sweep reports that itself). */
static void check_ctx_init(sweep_check_ctx *c, const an_sweep_opts *o)
{
    uint64_t lo = 0, hi = 0;
    c->n_seeds = 1;
    if (o->seeds && an_sweep_parse_seeds(o->seeds, &lo, &hi, NULL) == 0)
        c->n_seeds = (long long)(hi - lo + 1);
    c->total = c->n_seeds;
    for (int g = 0; g < o->n_grids && c->total > 0; g++) {
        sweep_axis *a = &c->axes[c->n_axes];
        const char *eq = strchr(o->grids[g], '=');
        if (!eq || (size_t)(eq - o->grids[g]) >= sizeof a->key) {
            c->total = 0;
            break;
        }
        snprintf(a->key, sizeof a->key, "%.*s", (int)(eq - o->grids[g]), o->grids[g]);
        size_t scope = strcspn(a->key, ":");
        if (a->key[scope] == ':' && scope < sizeof a->scope) {
            memcpy(a->scope, a->key, scope);
            a->scope[scope] = '\0';
        }
        a->n = an_sweep_split_values(eq + 1, &a->values, NULL);
        if (a->n <= 0 || c->total > 1000000 / a->n) {
            c->total = 0;
            break;
        }
        c->n_axes++;
        c->total *= a->n;
    }
    c->algo = c->total > 0 ? calloc((size_t)c->total, sizeof *c->algo) : NULL;
    if (!c->algo)
        c->total = 0;
}

static void check_ctx_release(sweep_check_ctx *c)
{
    for (int a = 0; a < c->n_axes; a++)
        an_sweep_values_free(c->axes[a].values, c->axes[a].n);
    for (int w = 0; w < c->n_warn; w++) {
        free(c->warn[w].text);
        free(c->warn[w].hit);
    }
    free(c->warn);
    free(c->algo);
}

/* The value configuration i takes on axis a, -1 where a scoped key does
 * not apply (another method's run). */
static int axis_pick(const sweep_check_ctx *c, long long i, int a)
{
    long long rest = i / c->n_seeds;
    for (int b = c->n_axes - 1; b > a; b--)
        rest /= c->axes[b].n;
    int v = (int)(rest % c->axes[a].n);
    if (c->axes[a].scope[0] && strcmp(c->axes[a].scope, c->algo[i]) != 0)
        return -1;
    return v;
}

/* Configuration i's grid point: its value index on every axis (-1 where
 * a scoped key does not apply); the seed left out. */
static void point_of(const sweep_check_ctx *c, long long i, int *pick)
{
    for (int a = 0; a < c->n_axes; a++)
        pick[a] = axis_pick(c, i, a);
}

/* The distinct grid points of the configurations with hit[i] (all when hit
 * is NULL), as rows of n_axes picks; returns how many. */
static long long points_distinct(const sweep_check_ctx *c, const unsigned char *hit,
                                 int *rows)
{
    long long n = 0;
    int na = c->n_axes;
    for (long long i = 0; i < c->total; i++) {
        if (hit && !hit[i])
            continue;
        point_of(c, i, &rows[n * na]);
        long long j = 0;
        while (j < n && memcmp(&rows[j * na], &rows[n * na], (size_t)na * sizeof *rows) != 0)
            j++;
        n += j == n;
    }
    return n;
}

/* Where a warning applies: "" when to every grid point, else " (grid
 * points with KEY=V1,V2 and ...: k of N)" naming each axis whose values
 * among the points warned are not all of its values (a scoped key counts
 * where it applies), or " (k of the N grid points)" when the points warned
 * are no such product. */
static void warning_scope(const sweep_check_ctx *c, const sweep_warning *w, char *out,
                          size_t size)
{
    int na = c->n_axes > 0 ? c->n_axes : 1;
    int *all = malloc((size_t)c->total * (size_t)na * sizeof *all);
    int *hit = malloc((size_t)c->total * (size_t)na * sizeof *hit);
    out[0] = '\0';
    if (!all || !hit) {
        free(all);
        free(hit);
        return;
    }
    long long n_all = points_distinct(c, NULL, all), n_hit = points_distinct(c, w->hit, hit);
    long long product = 1;
    size_t len = 0;
    int named = 0;
    for (int a = 0; n_hit < n_all && a < c->n_axes; a++) {
        int n = c->axes[a].n, n_seen = 0, real_seen = 0, real_all = 0, na_seen = 0;
        unsigned char *seen = calloc((size_t)n, 1), *some = calloc((size_t)n, 1);
        for (long long j = 0; seen && some && j < n_all; j++)
            if (all[j * c->n_axes + a] >= 0)
                real_all += !some[all[j * c->n_axes + a]], some[all[j * c->n_axes + a]] = 1;
        for (long long j = 0; seen && some && j < n_hit; j++) {
            int v = hit[j * c->n_axes + a];
            if (v < 0)
                na_seen = 1;
            else
                real_seen += !seen[v], seen[v] = 1;
        }
        n_seen = real_seen + na_seen;
        product *= n_seen;
        if (seen && real_seen > 0 && real_seen < real_all) {
            len += (size_t)snprintf(out + len, len < size ? size - len : 0, "%s%s=",
                                    named ? " and " : " (grid points with ", c->axes[a].key);
            for (int v = 0, first = 1; v < n; v++)
                if (seen[v]) {
                    len += (size_t)snprintf(out + len, len < size ? size - len : 0, "%s%s",
                                            first ? "" : ",", c->axes[a].values[v]);
                    first = 0;
                }
            named++;
        }
        free(seen);
        free(some);
    }
    if (n_hit < n_all && (!named || product != n_hit))
        snprintf(out, size, " (%lld of the %lld grid points)", n_hit, n_all);
    else if (n_hit < n_all && len < size)
        snprintf(out + len, size - len, ": %lld of %lld grid point%s)", n_hit, n_all,
                 n_all == 1 ? "" : "s");
    free(all);
    free(hit);
}

/* Each warning once, naming the configurations it concerns. */
static void warnings_print(const sweep_check_ctx *c)
{
    for (int w = 0; w < c->n_warn; w++) {
        char scope[1024];
        warning_scope(c, &c->warn[w], scope, sizeof scope);
        fprintf(stderr, "dtsim: warning: %s%s\n", c->warn[w].text, scope);
    }
}

/* Keeps configuration index's warnings (the keys the file and --set
 * wrote that its method ignores, ...) until the last is checked. */
static void warnings_collect(sweep_check_ctx *c, const cfg_config *cfg)
{
    char buf[4096];
    if (c->index > 0 && strcmp(c->algo[0], cfg->algorithm) != 0)
        c->mixed = 1;
    snprintf(c->algo[c->index], sizeof c->algo[0], "%s", cfg->algorithm);
    if (xp_experiment_warnings(cfg, buf, sizeof buf) == 0)
        return;
    for (char *line = buf, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        *nl = '\0';
        int w = 0;
        while (w < c->n_warn && strcmp(c->warn[w].text, line) != 0)
            w++;
        if (w == c->n_warn) {
            sweep_warning *grown = realloc(c->warn, (size_t)(w + 1) * sizeof *grown);
            if (!grown)
                return;
            c->warn = grown;
            c->warn[w].text = strdup(line);
            c->warn[w].hit = calloc((size_t)c->total, 1);
            if (!c->warn[w].text || !c->warn[w].hit) {
                free(c->warn[w].text);
                free(c->warn[w].hit);
                return;
            }
            c->n_warn++;
        }
        c->warn[w].hit[c->index] = 1;
    }
}

/* The label without the scoped keys that belong to another method than
 * the run's: "algorithm.name=allreduce_sgd local_sgd:algorithm.local_steps=2"
 * is labelled "algorithm.name=allreduce_sgd". */
static void label_scoped(const char *label, const char *only_algo, char *out, size_t size)
{
    const char *algo = NULL;
    size_t algo_len = 0, len = 0;
    for (const char *p = label; *p; p += strcspn(p, " "), p += *p == ' ')
        if (strncmp(p, "algorithm.name=", 15) == 0) {
            algo = p + 15;
            algo_len = strcspn(algo, " ");
        }
    if (!algo && only_algo) {
        algo = only_algo;
        algo_len = strlen(only_algo);
    }
    out[0] = '\0';
    for (const char *p = label; *p; p += *p == ' ') {
        size_t n = strcspn(p, " ");
        const char *colon = memchr(p, ':', n), *eq = memchr(p, '=', n);
        int other = algo && colon && (!eq || colon < eq) &&
                    ((size_t)(colon - p) != algo_len || strncmp(p, algo, algo_len) != 0);
        if (!other && len < size)
            len += (size_t)snprintf(out + len, size - len, "%s%.*s", len ? " " : "", (int)n, p);
        p += n;
    }
}

typedef struct sweep_cli {
    const sweep_check_ctx *chk; /* the configurations' methods */
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
    char scoped[2048];
    label_scoped(r->label, sweep_only_algo(c->chk), scoped, sizeof scoped);
    const char *label = scoped[0] ? scoped : "(the file as is)";
    if (r->code != 0) {
        fflush(stdout);
        fprintf(stderr, "%s[%d/%d] failed: %s\n", rank, r->index + 1, r->total, r->message);
    } else if (r->skipped == 2) {
        printf("%s[%d/%d] skip   running in another sweep: %s\n", rank, r->index + 1, r->total,
               label);
    } else if (r->skipped) {
        printf("%s[%d/%d] skip   run %lld already done: %s\n", rank, r->index + 1, r->total,
               (long long)r->run_id, label);
    } else {
        printf("%s[%d/%d] %-6s %s %lld: %s: train loss %.4f, test accuracy %.4f, "
               "simulated %.3f s\n",
               rank, r->index + 1, r->total, r->status, r->rank > 0 ? "shard run" : "run",
               (long long)r->run_id, label,
               r->final_train_loss, r->final_test_accuracy, r->sim_time);
        if (r->trace_dropped > 0) {
            fflush(stdout);
            cli_warn_trace_dropped(r->run_id, r->trace_dropped);
        }
    }
    fflush(stdout);
}

static void sweep_tick(void *ctx, const xp_progress *p)
{
    an_sweep_tick t = {.iteration = p->iteration, .sim_time = p->sim_time,
                       .train_loss = p->train_loss, .test_accuracy = p->test_accuracy,
                       .fraction = p->fraction};
    an_sweep_job_tick(ctx, &t);
}

/* The sweep's run function: one experiment through the experiment runner. */
static int sweep_run_one(void *ctx, const cfg_config *cfg, an_db *db, an_sweep_job *job,
                         an_sweep_outcome *out, sim_err *err)
{
    const int *threads = ctx;
    xp_run_opts o = {.db = db, .on_progress = sweep_tick, .progress_interval = 0.25,
                      .ctx = job, .interrupt = &cli_interrupted, .threads = *threads};
    xp_run_result r;
    int rc = xp_experiment_run(cfg, &o, &r, err);
    if (rc < 0)
        return rc;
    out->run_id = r.run_id;
    snprintf(out->status, sizeof out->status, "%s", r.status);
    out->sim_time = r.sim_time;
    out->final_train_loss = r.final_train_loss;
    out->final_test_accuracy = r.final_test_accuracy;
    out->trace_dropped = r.trace_dropped;
    return 0;
}

/* Checks every configuration; the warnings are printed once all are
 * checked, each naming the grid points it concerns (a sweep over methods
 * warns "allreduce_sgd uses no logical graph" for allreduce_sgd's points
 * only). Without a grid it knows, the first configuration's, as run does. */
static int sweep_check_one(void *ctx, const cfg_config *cfg, sim_err *err)
{
    sweep_check_ctx *c = ctx;
    if (c->total == 0) {
        if (c->index++ == 0)
            cli_warnings_print(cfg);
    } else if (c->index < c->total) {
        warnings_collect(c, cfg);
        if (++c->index == c->total)
            warnings_print(c);
    }
    return xp_experiment_check(cfg, c->chk, err);
}

static void print_summary(const an_sweep_summary *sum, int rc, const char *db_path)
{
    printf("sweep%s: %d configurations: %d run, %d already done, %d failed",
           rc == SIM_EINTR ? " interrupted" : "", sum->total, sum->ran, sum->skipped,
           sum->failed);
    if (sum->elsewhere > 0)
        printf(", %d running in another sweep", sum->elsewhere);
    if (sum->not_started > 0)
        printf(", %d not started", sum->not_started);
    if (sum->size > 1)
        printf(" (%d MPI ranks; %d runs merged from their shards)", sum->size, sum->merged);
    printf(" -> %s\n", db_path);
    fflush(stdout);
}

/* --part K/N: 1 <= K <= N <= 1000000, both whole numbers. */
static int parse_part(const char *command, const char *value, void *dest)
{
    an_sweep_opts *o = dest;
    char *end = NULL;
    errno = 0;
    long k = strtol(value, &end, 10), n = 0;
    if (end != value && *end == '/') {
        const char *s = end + 1;
        n = strtol(s, &end, 10);
        if (end == s)
            n = 0;
    }
    if (errno || !end || *end || n < 1 || n > 1000000 || k < 1 || k > n)
        return cli_usage_error(command,
                               "--part: expected K/N with 1 <= K <= N (the K-th of N slices; "
                               "a job array numbered from 0 passes K + 1), got '%s'",
                               value);
    o->part = (int)k;
    o->n_parts = (int)n;
    return 0;
}

int cli_sweep_main(int argc, char **argv)
{
    const char *sets[MAX_SETS], *grids[MAX_SETS], *threads_opt = NULL;
    an_sweep_opts o = {.db_path = "results.db", .jobs = 1, .mpi = 1, .sets = sets,
                       .grids = grids, .run = sweep_run_one,
                       .schema = xp_experiment_schema()};
    cli_list grid_list = {.items = grids, .cap = MAX_SETS};
    cli_list set_list = {.items = sets, .cap = MAX_SETS};
    long long jobs = 1;
    int quiet = 0, status;
    const cli_opt opts[] = {
        CLI_LIST("--grid", &grid_list,
                 "  --grid SECTION.KEY=V1,V2,...  values of one key (repeatable); commas inside\n"
                 "                         parentheses do not split: 'workers.compute=\n"
                 "                         constant(1ms),lognormal(1ms, 0.5)'\n"),
        CLI_LIST("--set", &set_list,
                 "  --set SECTION.KEY=VALUE  override a key in every configuration "
                 "(repeatable);\n"
                 "                         METHOD:SECTION.KEY=VALUE only in that method's\n"
                 "                         (also in --grid): local_sgd:algorithm.local_steps=8\n"),
        CLI_STRING("--seeds", NULL, &o.seeds,
                   "  --seeds A-B            experiment.seed = A..B for every grid point "
                   "(or one A)\n"),
        CLI_INT("--jobs", &jobs, 1, 256, "--jobs: expected a number from 1 to 256, got '%s'",
                "  --jobs N               run N experiments at once, in separate processes\n"),
        CLI_STRING("--threads", NULL, &threads_opt,
                   "  --threads N            threads computing each run's gradients (default:\n"
                   "                         $DTSIM_THREADS, else the cores divided by --jobs)\n"),
        CLI_STRING("--db", NULL, &o.db_path,
                   "  --db FILE              results database (created if missing)\n"),
        CLI_STRING("--shard-dir", NULL, &o.shard_dir,
                   "  --shard-dir DIR        under mpirun: where ranks other than 0 keep their\n"
                   "                         shard databases (default: next to the --db file)\n"),
        CLI_CALL("--max-memory", cli_max_memory, NULL,
                 "  --max-memory SIZE      refuse (exit 2, before anything runs) a point whose\n"
                 "                         models, data or graph need more than SIZE (512M,\n"
                 "                         8G; default: $DTSIM_MAX_MEMORY, else the machine's)\n"),
        CLI_CALL("--part", parse_part, &o,
                 "  --part K/N             only the K-th of N disjoint slices of the\n"
                 "                         configurations (K from 1 to N), for a job array\n"),
        CLI_FLAG("--quiet", "-q", &quiet, "  --quiet, -q            no progress line\n"),
        CLI_END,
    };
    const cli_spec spec = {.command = "sweep", .head = help_head, .opts = opts,
                           .tail = help_tail, .operand = &o.experiment,
                           .missing = "missing EXPERIMENT.ini"};
    if (cli_options_parse(&spec, argc, argv, &status))
        return status;
    o.n_grids = grid_list.n;
    o.n_sets = set_list.n;
    o.jobs = (int)jobs;
    int threads = cli_threads("sweep", threads_opt);
    if (threads < 0)
        return 2;
    if (!threads_opt && !getenv("DTSIM_THREADS") && o.jobs > 1)
        threads = threads / o.jobs > 1 ? threads / o.jobs : 1; /* the jobs share the cores */
    o.run_ctx = &threads;
    static sweep_check_ctx cc;
    sweep_cli c = {.progress = !quiet && isatty(2), .mpi = an_sweep_under_mpirun(), .chk = &cc};
    o.on_result = sweep_on_result;
    o.on_status = c.progress ? sweep_on_status : NULL;
    o.ctx = &c;
    xp_check *chk = xp_check_create();
    cc.chk = chk;
    check_ctx_init(&cc, &o);
    o.check = sweep_check_one;
    o.check_ctx = &cc;
    sim_err err = {0};
    an_sweep_summary sum;
    cli_interrupt_install();
    o.interrupt = &cli_interrupted;
    int rc = an_sweep_run(&o, &sum, &err);
    xp_check_destroy(chk);
    check_ctx_release(&cc);
    sweep_clear(&c);
    if (sum.rank == 0 && sum.total > 0)
        print_summary(&sum, rc, o.db_path);
    if (rc == SIM_EINTR) {
        cli_fail(&err);
        return 130; /* 128 + SIGINT, as a shell reports a Ctrl-C */
    }
    if (rc < 0)
        return cli_fail(&err);
    return 0;
}
