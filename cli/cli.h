/* The commands of the dtsim command line, one file each, and what they
 * share: printing a library error, the thread count, interruption by a
 * signal, the warnings about unused keys. Only cli/ prints or exits. Exit
 * status: 0 success (a diverged run is a result), 2 usage, config, input
 * or database error, 1 anything else. */
#ifndef DTSIM_CLI_CLI_H
#define DTSIM_CLI_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "sim/err.h"

/* The commands: argv[0] is the command's name; each returns the exit status. */
int cli_run_main(int argc, char **argv);
int cli_sweep_main(int argc, char **argv);
int cli_report_main(int argc, char **argv);
int cli_plot_main(int argc, char **argv);
int cli_topo_main(int argc, char **argv);
int cli_trace_main(int argc, char **argv);
int cli_estimate_main(int argc, char **argv);
int cli_list_main(int argc, char **argv);
int cli_calibrate_main(int argc, char **argv);
int cli_merge_main(int argc, char **argv);

/* Prints "dtsim: " and the error's message to standard error; returns the
 * exit status of its code. */
int cli_fail(const sim_err *err);

/* --threads N (opt, a number from 1 to 1024, or NULL), else $DTSIM_THREADS,
 * else the online processors. Returns the count, or -1 after printing the
 * usage error of command. */
int cli_threads(const char *command, const char *opt);

/* --max-memory SIZE (a CLI_CALL): checks SIZE (a byte count with an
 * optional k, M, G or T suffix, > 0) and sets DTSIM_MAX_MEMORY to it, the
 * limit of the size checks made before anything is built (inherited by a
 * sweep's processes). 0, or 2 after printing the usage error. */
int cli_max_memory(const char *command, const char *value, void *dest);

/* The warning of run and sweep when a run's timeline reached [experiment]
 * trace_max_events: "dtsim: warning: run N: ... D later rows were not
 * recorded" on standard error. */
void cli_warn_trace_dropped(int64_t run_id, int64_t dropped);

/* Set by SIGINT and SIGTERM once cli_interrupt_install has run: a run
 * stops at its next iteration, marked failed. */
extern volatile sig_atomic_t cli_interrupted;
void cli_interrupt_install(void);

/* What run and estimate do first: --threads (cli_threads), the experiment
 * file with its --set overrides loaded into cfg, the unused-key warnings.
 * 0, or the exit status after printing the error (cfg then released). */
int cli_experiment_load(const char *command, const char *file, const char *const *sets,
                        int n_sets, const char *threads_opt, cfg_config *cfg, int *threads);

/* Bytes with a decimal unit: "512 B", "1.41 kB", "3.20 MB". */
void cli_format_bytes(double b, char *buf, size_t len);

/* Keys the user wrote that the experiment does not use: one warning line
 * each on standard error. */
void cli_warnings_print(const cfg_config *cfg);

#endif
