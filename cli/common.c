/* What the commands share (see cli.h): error printing, the thread count,
 * the interrupt flag and the unused-key warnings of run and sweep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "experiment/experiment.h"
#include "sim/memory.h"
#include "sim/pool.h"

int cli_fail(const sim_err *err)
{
    fprintf(stderr, "dtsim: %s\n", err->msg);
    return sim_err_exit_status(err->code);
}

int cli_threads(const char *command, const char *opt)
{
    const char *v = opt ? opt : getenv("DTSIM_THREADS");
    if (!v || !*v)
        return sim_pool_default_threads();
    char *end;
    long t = strtol(v, &end, 10);
    if (*end || t < 1 || t > 1024) {
        cli_usage_error(command, opt ? "--threads: expected a number from 1 to 1024, got '%s'"
                                     : "DTSIM_THREADS: expected a number from 1 to 1024, got '%s'",
                        v);
        return -1;
    }
    return (int)t;
}

int cli_max_memory(const char *command, const char *value, void *dest)
{
    (void)dest;
    int64_t bytes;
    if (sim_memory_parse_size(value, &bytes) != 0)
        return cli_usage_error(command,
                               "--max-memory: expected a size such as 512M or 8G (k, M, G, T:"
                               " powers of 1024; a bare number is bytes), got '%s'",
                               value);
    setenv("DTSIM_MAX_MEMORY", value, 1);
    return 0;
}

void cli_warn_trace_dropped(int64_t run_id, int64_t dropped)
{
    fprintf(stderr, "dtsim: warning: run %lld: the timeline reached [experiment]"
                    " trace_max_events; %lld later rows were not recorded\n",
            (long long)run_id, (long long)dropped);
}

volatile sig_atomic_t cli_interrupted;

/* The first signal asks the run to stop at its next event (its row marked
 * failed); a second one, or CLI_INTERRUPT_GRACE seconds without the run
 * stopping (stuck inside a library call), ends the process at once: its
 * row, left running, is marked failed (interrupted) by the next command
 * that opens the database, as for a killed process. */
#define CLI_INTERRUPT_GRACE 10

static void stop_now(int sig)
{
    static const char msg[] = "dtsim: interrupted; the run did not stop in time, exiting\n";
    (void)sig;
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

static void on_signal(int sig)
{
    if (cli_interrupted)
        stop_now(sig);
    cli_interrupted = 1;
    alarm(CLI_INTERRUPT_GRACE);
}

void cli_interrupt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = stop_now;
    sigaction(SIGALRM, &sa, NULL);
}

void cli_warnings_print(const cfg_config *cfg)
{
    char buf[4096];
    if (xp_experiment_warnings(cfg, buf, sizeof buf) == 0)
        return;
    for (char *line = buf, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl)
            break;
        fprintf(stderr, "dtsim: warning: %.*s\n", (int)(nl - line), line);
    }
}

void cli_format_bytes(double b, char *buf, size_t len)
{
    const char *u[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int i = 0;
    while (b >= 1000 && i < 5) {
        b /= 1000;
        i++;
    }
    snprintf(buf, len, i ? "%.2f %s" : "%.0f %s", b, u[i]);
}

int cli_experiment_load(const char *command, const char *file, const char *const *sets,
                        int n_sets, const char *threads_opt, cfg_config *cfg, int *threads)
{
    *threads = cli_threads(command, threads_opt);
    if (*threads < 0)
        return 2;
    sim_err err = {0};
    if (cfg_load(xp_experiment_schema(), file, sets, n_sets, cfg, &err) < 0)
        return cli_fail(&err);
    cli_warnings_print(cfg);
    return 0;
}
