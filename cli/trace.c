/* dtsim trace: a traced run's timeline as a Chrome trace (analysis/trace.h). */
#include <stdio.h>

#include "analysis/trace.h"
#include "cli/cli.h"
#include "cli/options.h"

static const char help_head[] =
    "Usage: dtsim trace DB --run ID -o FILE.json\n\n"
    "Writes the timeline of a run made with [experiment] trace = on in the Chrome\n"
    "trace event format, which Perfetto (ui.perfetto.dev) and chrome://tracing\n"
    "open: a track per worker (compute, idle, down, lost: a step a crash lost), a\n"
    "track per worker's sends, and a counter per link with its bytes in flight.\n"
    "Times are simulated (1 s simulated = 1 s on the trace's axis). A timeline cut\n"
    "by [experiment] trace_max_events, or of a run that did not finish, is\n"
    "exported with a warning (and a note in the file's otherData) saying where it\n"
    "stops. An output that is not a .json file, or cannot be written, is exit 2.\n\n";

int cli_trace_main(int argc, char **argv)
{
    const char *path = NULL, *out = NULL;
    long long run = 0;
    int status;
    const cli_opt opts[] = {
        CLI_INT("--run", &run, 1, INT64_MAX, "--run: expected a run id (a positive integer), got '%s'",
                "  --run ID         the run (dtsim report lists them)\n"),
        CLI_STRING("--output", "-o", &out,
                   "  -o FILE.json     output (also --output FILE)\n"),
        CLI_END,
    };
    const cli_spec spec = {.command = "trace", .head = help_head, .opts = opts,
                           .operand = &path, .missing = "missing DB"};
    if (cli_options_parse(&spec, argc, argv, &status))
        return status;
    if (run == 0)
        return cli_usage_error("trace", "%s", "missing --run ID");
    if (!out)
        return cli_usage_error("trace", "%s", "missing -o FILE.json");
    sim_err err = {0};
    int64_t n = 0;
    char note[512];
    if (an_trace_export(path, run, out, &n, note, sizeof note, &err) < 0)
        return cli_fail(&err);
    printf("trace: run %lld, %lld events -> %s\n", run, (long long)n, out);
    if (note[0]) {
        fflush(stdout);
        fprintf(stderr, "dtsim: warning: run %lld: %s\n", run, note);
    }
    return 0;
}
