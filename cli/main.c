/* dtsim: the command-line shell. A table of commands, each in its own file
 * over the one option parser (options.h); each maps argv to one library
 * call and prints results and errors. Only cli/ prints or exits. Exit
 * status: 0 success (a diverged run is a result), 2 usage, config, input
 * or database error, 1 anything else. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "experiment/experiment.h"
#include "sim/memory.h"
#include "workloads/blas.h"

/* pin: the command's results go through the BLAS (gradients; topo's
 * eigenvalues through GSL's BLAS calls), so it runs on the pinned kernel
 * (workloads/blas.h): wl_blas_pin re-executes dtsim once. The others
 * compute nothing with it: estimate uses the time model only, calibrate
 * times MPI messages, the rest read files and databases. */
static const struct {
    const char *name;
    int (*main)(int argc, char **argv); /* argv[0] is the command's name */
    int pin;
} commands[] = {
    {"run", cli_run_main, 1},       {"list", cli_list_main, 0},
    {"report", cli_report_main, 0}, {"sweep", cli_sweep_main, 1},
    {"plot", cli_plot_main, 0},     {"topo", cli_topo_main, 1},
    {"calibrate", cli_calibrate_main, 0},
    {"trace", cli_trace_main, 0},   {"estimate", cli_estimate_main, 0},
    {"merge", cli_merge_main, 0},
};

/* 1 when a command's arguments open with --help (later, "-h" may be an
 * option's value: such a command is pinned, which costs one exec). */
static int asks_help(int argc, char **argv)
{
    return argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
}

static void help_main(FILE *f)
{
    fprintf(f,
            "dtsim %s: a discrete-event simulator of distributed deep-learning training\n"
            "with real gradients on real data.\n\n"
            "Usage:\n"
            "  dtsim run EXPERIMENT.ini [--set SECTION.KEY=VALUE]... [--db FILE] [--threads N]\n"
            "              [--max-memory SIZE] [--quiet]\n"
            "  dtsim sweep EXPERIMENT.ini --grid SECTION.KEY=V1,V2,... [--grid ...]\n"
            "              [--set SECTION.KEY=VALUE]... [--seeds A-B] [--jobs N] [--db FILE]\n"
            "              [--threads N] [--shard-dir DIR] [--part K/N] [--max-memory SIZE]\n"
            "              [--quiet]\n"
            "  dtsim merge OUT.db PART.db... [--force]\n"
            "  dtsim report DB [--run ID]... [--target METRIC=VALUE] [--sustain K]\n"
            "              [--baseline RUN] [--columns KEY,...] [--csv]\n"
            "              [--aggregate [--compare KEY=BASE,V1,... [--adjust holm|bonferroni]]\n"
            "              | --scaling | --staleness]\n"
            "  dtsim plot DB --y METRIC [--x sim_time|iteration|epoch|samples|bytes_sent]\n"
            "              [--by COLUMN] [--where SQL] [--logx] [--logy] [--title TEXT]\n"
            "              [--size WxH] [--xlim A,B] [--ylim A,B] -o FILE.png|.svg|.pdf\n"
            "  dtsim plot DB --run ID --timeline [--from T] [--to T] -o FILE.png|.svg|.pdf\n"
            "  dtsim trace DB --run ID -o FILE.json\n"
            "  dtsim estimate EXPERIMENT.ini [--set SECTION.KEY=VALUE]... [--iterations N]\n"
            "              [--price PER_GPU_HOUR] [--threads N]\n"
            "  dtsim topo GRAPH [--n N] [--weights metropolis|uniform|metropolis_lazy]\n"
            "              [--seed S] [--export FILE.graphml|.dot] [--max-memory SIZE]\n"
            "  mpirun -np N dtsim calibrate [-o FILE] [--min-size SIZE] [--max-size SIZE]\n"
            "              [--factor F] [--reps R] [--hops H] [--bandwidth RATE] [--latency TIME]\n"
            "              [--by-size] [--quiet]\n"
            "  dtsim list [algorithms|graphs|networks|models|datasets|partitions|distributions|\n"
            "              presets|compressors|optimizers|keys]\n"
            "  dtsim --version | --help     (every subcommand has --help too)\n\n"
            "Exit status: 0 success (a diverged run is a result), 2 usage, config, input\n"
            "or database error (the message names file, line and key), 1 anything else.\n"
            "Results go to an SQLite database (default results.db); see README.md and\n"
            "docs/usage.md.\n",
            DTSIM_VERSION);
}

/* The command's status. Under an address-space limit the process ends
 * without the libraries' destructors: OpenBLAS's blas_thread_shutdown_
 * waits for ever on a pool the limit kept from starting (everything of
 * dtsim's is closed by then). */
static int leave(int status)
{
    if (sim_memory_as_room(NULL) >= 0) {
        fflush(NULL);
        _exit(status);
    }
    return status;
}

int main(int argc, char **argv)
{
    sim_err_install_library_handlers();
    /* past a file-size limit (ulimit -f) a write fails with EFBIG, which the
     * database reports and the run's row records, instead of the signal
     * killing the process with its row left running */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        help_main(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        help_main(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("dtsim %s\n", DTSIM_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0) {
            if (commands[i].pin && !asks_help(argc - 1, argv + 1))
                wl_blas_pin(argv); /* re-executes once with the pinned kernel */
            return leave(commands[i].main(argc - 1, argv + 1));
        }
    fprintf(stderr, "dtsim: unknown command '%s'\n", cmd);
    help_main(stderr);
    return 2;
}
