/* dtsim sweep: the Cartesian product of --grid values and --seeds into one
 * database (analysis/sweep.c), each configuration through the experiment
 * runner; a line per configuration and a summary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "analysis/sweep.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "experiment/experiment.h"

#define MAX_SETS 256

static const char help_head[] =
    "Usage: dtsim sweep EXPERIMENT.ini --grid SECTION.KEY=V1,V2,... [--grid ...]\n"
    "                   [--set SECTION.KEY=VALUE]... [--seeds A-B] [--jobs N]\n"
    "                   [--db FILE] [--threads N] [--shard-dir DIR]\n"
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
    "  mpirun --hostfile hosts -np 8 dtsim sweep exp.ini --grid ... --db results.db\n";

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

typedef struct sweep_check_ctx {
    xp_check *chk;
    int warned;
} sweep_check_ctx;

/* Checks every configuration; the warnings of the first one (the keys the
 * file and --set wrote that the method ignores) are printed once. */
static int sweep_check_one(void *ctx, const cfg_config *cfg, sim_err *err)
{
    sweep_check_ctx *c = ctx;
    if (!c->warned) {
        c->warned = 1;
        cli_warnings_print(cfg);
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
    sweep_cli c = {.progress = !quiet && isatty(2), .mpi = an_sweep_under_mpirun()};
    o.on_result = sweep_on_result;
    o.on_status = c.progress ? sweep_on_status : NULL;
    o.ctx = &c;
    xp_check *chk = xp_check_create();
    sweep_check_ctx cc = {.chk = chk};
    o.check = sweep_check_one;
    o.check_ctx = &cc;
    sim_err err = {0};
    an_sweep_summary sum;
    cli_interrupt_install();
    o.interrupt = &cli_interrupted;
    int rc = an_sweep_run(&o, &sum, &err);
    xp_check_destroy(chk);
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
