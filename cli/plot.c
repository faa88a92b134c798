/* dtsim plot: curves of a metric over runs (analysis/plot.c), or the
 * points of the scaling table (analysis/scaling.c), to PNG, SVG or PDF. */
#include <stdio.h>

#include <math.h>
#include <stdlib.h>

#include "analysis/plot.h"
#include "analysis/scaling.h"
#include "analysis/trace.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "sim/units.h"

static const char help_head[] =
    "Usage: dtsim plot DB --y METRIC [--x sim_time|iteration|epoch|samples|bytes_sent]\n"
    "                  [--by COLUMN] [--where SQL] [--logx] [--logy] [--title TEXT]\n"
    "                  [--size WxH] [--xlim A,B] [--ylim A,B] -o FILE.png|.svg|.pdf\n"
    "       dtsim plot DB --scaling [--y scaling|throughput|step_time]\n"
    "                  [--x n_workers|compression|PARAMS_KEY] [--by PARAMS_KEY] ...\n"
    "       dtsim plot DB --run ID --timeline [--from T] [--to T] -o FILE.png|.svg|.pdf\n\n"
    "Draws one line per group of finished runs (done or diverged): the mean over\n"
    "the runs that differ only in their seed, with a translucent min-max band,\n"
    "interpolated where all of them have data. Lines differ in colour, dash\n"
    "pattern and marker. The format follows the file name. --timeline draws the\n"
    "Gantt chart of a run made with [experiment] trace = on instead.\n\n";

/* --xlim, --ylim A,B into the plot options. */
static int opt_range(const char *command, const char *v, double *range, char *unit, int *has,
                     const char *name)
{
    sim_err err = {0};
    if (an_plot_range_parse(name, v, range, unit, &err) < 0)
        return cli_usage_error(command, "%s", err.msg);
    *has = 1;
    return 0;
}

static int opt_xlim(const char *command, const char *v, void *dest)
{
    an_plot_opts *o = dest;
    return opt_range(command, v, o->xlim, o->xlim_unit, &o->has_xlim, "--xlim");
}

static int opt_ylim(const char *command, const char *v, void *dest)
{
    an_plot_opts *o = dest;
    return opt_range(command, v, o->ylim, o->ylim_unit, &o->has_ylim, "--ylim");
}

/* --from, --to T: simulated seconds (a number, or a time such as 20ms). */
static int opt_time(const char *command, const char *v, double *out, const char *name)
{
    sim_err err = {0};
    sim_time t = 0;
    char *end = NULL;
    double sec = strtod(v, &end);
    if (end != v && *end == '\0' && isfinite(sec) && sec >= 0) {
        *out = sec;
        return 0;
    }
    if (sim_parse_time(v, &t, &err) < 0 || t < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: expected a simulated time such as 1.5 or 20ms, got '%s'",
                 name, v);
        return cli_usage_error(command, "%s", msg);
    }
    *out = sim_time_to_s(t);
    return 0;
}

static int opt_from(const char *command, const char *v, void *dest)
{
    return opt_time(command, v, &((an_timeline_opts *)dest)->from, "--from");
}

static int opt_to(const char *command, const char *v, void *dest)
{
    return opt_time(command, v, &((an_timeline_opts *)dest)->to, "--to");
}

/* --size WxH into the plot options. */
static int opt_size(const char *command, const char *v, void *dest)
{
    an_plot_opts *o = dest;
    if (sscanf(v, "%dx%d", &o->width, &o->height) != 2 || o->width < 100 || o->height < 100 ||
        o->width > 10000 || o->height > 10000)
        return cli_usage_error(command, "--size: expected WxH such as 960x640, got '%s'", v);
    return 0;
}

/* --timeline: the Gantt chart of one run. */
static int timeline_main(const char *path, an_timeline_opts *tl, long long run,
                         const an_plot_opts *o)
{
    if (run == 0)
        return cli_usage_error("plot", "%s", "--timeline needs --run ID");
    if (!o->output)
        return cli_usage_error("plot", "%s", "missing -o FILE.png|.svg|.pdf");
    tl->run_id = run;
    tl->output = o->output;
    tl->title = o->title;
    tl->width = o->width;
    tl->height = o->height;
    sim_err err = {0};
    int64_t n = 0;
    char note[512];
    if (an_timeline_plot(path, tl, &n, note, sizeof note, &err) < 0)
        return cli_fail(&err);
    printf("plot: timeline of run %lld, %lld spans -> %s\n", run, (long long)n, o->output);
    if (note[0]) {
        fflush(stdout);
        fprintf(stderr, "dtsim: warning: run %lld: %s\n", run, note);
    }
    return 0;
}

int cli_plot_main(int argc, char **argv)
{
    const char *path = NULL;
    an_plot_opts o = {0};
    an_timeline_opts tl = {.from = NAN, .to = NAN};
    long long run = 0;
    int scaling = 0, timeline = 0, status;
    const cli_opt opts[] = {
        CLI_STRING("--y", NULL, &o.y,
                   "  --y METRIC       a metrics column: train_loss, test_loss, test_accuracy,\n"
                   "                   consensus_distance, bytes_sent, epoch, samples, ...; or\n"
                   "                   series:NAME, a method's series (keep_fraction, ...) drawn\n"
                   "                   as steps to the run's end (--x sim_time or iteration)\n"),
        CLI_STRING("--x", NULL, &o.x,
                   "  --x COLUMN       sim_time (default, simulated seconds), iteration, epoch,\n"
                   "                   samples or bytes_sent\n"),
        CLI_STRING("--by", NULL, &o.by,
                   "  --by COLUMN      a runs column (algorithm, n_workers, ...) or a params key\n"
                   "                   (network.topology, algorithm.lr, ...); default: one line\n"
                   "                   per configuration, labelled by the keys that differ\n"),
        CLI_STRING("--where", NULL, &o.where,
                   "  --where SQL      condition on the runs table r, e.g. \"r.n_workers = 8\" or\n"
                   "                   \"r.id IN (SELECT run_id FROM params WHERE key =\n"
                   "                   'network.topology' AND value = 'ring')\"\n"),
        CLI_FLAG("--logx", NULL, &o.logx, "  --logx, --logy   logarithmic axis\n"),
        CLI_FLAG("--logy", NULL, &o.logy, NULL),
        CLI_STRING("--title", NULL, &o.title,
                   "  --title TEXT     instead of the automatic title\n"),
        CLI_CALL("--size", opt_size, &o,
                 "  --size WxH       pixels (PNG) or points (SVG, PDF); default 960x640\n"),
        CLI_CALL("--xlim", opt_xlim, &o,
                 "  --xlim A,B       the x axis from A to B: plain numbers in the axis's unit\n"
                 "                   (as labelled: s, ms, MB, ...), or with a unit of their\n"
                 "                   own (0s,0.12s, 20ms,2min, 0MB,5GB); curves are clipped; a\n"
                 "                   window with no data is an error naming the data's range\n"),
        CLI_CALL("--ylim", opt_ylim, &o, "  --ylim A,B       the same for the y axis\n"),
        CLI_STRING("--output", "-o", &o.output,
                   "  -o FILE          output: .png, .svg or .pdf (also --output FILE)\n"),
        CLI_FLAG("--scaling", NULL, &scaling,
                 "  --scaling        points of `dtsim report --scaling` instead: y = scaling\n"
                 "                   (default), throughput or step_time (seconds per\n"
                 "                   iteration); x = n_workers (default), a numeric params key\n"
                 "                   (network.bandwidth in Gb/s, algorithm.bucket in MiB) or\n"
                 "                   compression (largest workload.sim_params of the line over\n"
                 "                   the run's); --by a params key; --where selects the points\n"),
        CLI_FLAG("--timeline", NULL, &timeline,
                 "  --timeline       the Gantt chart of one traced run (--run): a row per\n"
                 "                   worker, a colour per state (compute, idle, send, down,\n"
                 "                   lost)\n"),
        CLI_INT("--run", &run, 1, INT64_MAX,
                "--run: expected a run id (a positive integer), got '%s'",
                "  --run ID         the run of --timeline\n"),
        CLI_CALL("--from", opt_from, &tl,
                 "  --from T, --to T the window of --timeline in simulated time (1.5, 20ms;\n"
                 "                   default: the whole run)\n"),
        CLI_CALL("--to", opt_to, &tl, NULL),
        CLI_END,
    };
    const cli_spec spec = {.command = "plot", .head = help_head, .opts = opts,
                           .operand = &path, .missing = "missing DB"};
    if (cli_options_parse(&spec, argc, argv, &status))
        return status;
    if (timeline)
        return timeline_main(path, &tl, run, &o);
    if (!o.y && !scaling)
        return cli_usage_error("plot", "%s", "missing --y METRIC");
    if (!o.output)
        return cli_usage_error("plot", "%s", "missing -o FILE.png|.svg|.pdf");
    sim_err err = {0};
    int n_series = 0, n_runs = 0;
    if (scaling) {
        if (an_scaling_plot_write(path, &o, &n_series, &n_runs, &err) < 0)
            return cli_fail(&err);
        printf("plot: %d line%s, %d point%s -> %s\n", n_series, n_series == 1 ? "" : "s",
               n_runs, n_runs == 1 ? "" : "s", o.output);
        return 0;
    }
    if (an_plot_write(path, &o, &n_series, &n_runs, &err) < 0)
        return cli_fail(&err);
    printf("plot: %d line%s from %d run%s -> %s\n", n_series, n_series == 1 ? "" : "s", n_runs,
           n_runs == 1 ? "" : "s", o.output);
    return 0;
}
