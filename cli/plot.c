/* dtsim plot: curves of a metric over runs (analysis/plot.c), or the
 * points of the scaling table (analysis/scaling.c), to PNG, SVG or PDF. */
#include <stdio.h>

#include "analysis/plot.h"
#include "analysis/scaling.h"
#include "cli/cli.h"
#include "cli/options.h"

static const char help_head[] =
    "Usage: dtsim plot DB --y METRIC [--x sim_time|iteration|epoch|samples|bytes_sent]\n"
    "                  [--by COLUMN] [--where SQL] [--logx] [--logy] [--title TEXT]\n"
    "                  [--size WxH] -o FILE.png|.svg|.pdf\n"
    "       dtsim plot DB --scaling [--y scaling|throughput|step_time]\n"
    "                  [--x n_workers|compression|PARAMS_KEY] [--by PARAMS_KEY] ...\n\n"
    "Draws one line per group of finished runs (done or diverged): the mean over\n"
    "the runs that differ only in their seed, with a translucent min-max band,\n"
    "interpolated where all of them have data. The format follows the file name.\n\n";

/* --size WxH into the plot options. */
static int opt_size(const char *command, const char *v, void *dest)
{
    an_plot_opts *o = dest;
    if (sscanf(v, "%dx%d", &o->width, &o->height) != 2 || o->width < 100 || o->height < 100 ||
        o->width > 10000 || o->height > 10000)
        return cli_usage_error(command, "--size: expected WxH such as 960x640, got '%s'", v);
    return 0;
}

int cli_plot_main(int argc, char **argv)
{
    const char *path = NULL;
    an_plot_opts o = {0};
    int scaling = 0, status;
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
        CLI_STRING("--output", "-o", &o.output,
                   "  -o FILE          output: .png, .svg or .pdf (also --output FILE)\n"),
        CLI_FLAG("--scaling", NULL, &scaling,
                 "  --scaling        points of `dtsim report --scaling` instead: y = scaling\n"
                 "                   (default), throughput or step_time (seconds per\n"
                 "                   iteration); x = n_workers (default), a numeric params key\n"
                 "                   (network.bandwidth in Gb/s, algorithm.bucket in MiB) or\n"
                 "                   compression (largest workload.sim_params of the line over\n"
                 "                   the run's); --by a params key; --where selects the points\n"),
        CLI_END,
    };
    const cli_spec spec = {.command = "plot", .head = help_head, .opts = opts,
                           .operand = &path, .missing = "missing DB"};
    if (cli_options_parse(&spec, argc, argv, &status))
        return status;
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
