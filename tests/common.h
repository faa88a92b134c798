/* Helpers shared by the test suites. */
#ifndef DTSIM_TESTS_COMMON_H
#define DTSIM_TESTS_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"

/* Path below the source root (DTSIM_SOURCE_ROOT, set by meson test), in a
 * static buffer. */
const char *test_source_path(const char *rel);
/* A fresh temporary directory for this test (mkdtemp under TMPDIR). */
const char *test_tmpdir(void);
/* Writes text to dir/name and returns the full path (static buffer). */
const char *test_write_file(const char *dir, const char *name, const char *text);
/* A fresh temporary directory D holding the experiment file D/exp/e.ini
 * (text ini) and an empty folder D/elsewhere to run it from; returns D
 * (static buffer). The test writes the files the experiment names into
 * D/exp. */
const char *test_experiment_dir(const char *ini);

/* ---- configurations ---- */

/* A stand-in for the registries the experiment layer hands the config
 * layer (sim_experiment_schema): methods local_sgd (keys local_steps,
 * sync, mode, codec) and allreduce_sgd (none), optimizers sgd, adam,
 * adamw, lamb, device v100 (15.7 TFLOPS, any case). */
extern const sim_config_schema test_config_registries;
/* Loads text as "exp.ini" with schema sc (NULL: no registries) and the
 * --set values set; fails the test on an error. */
void test_config_load_ok(const sim_config_schema *sc, const char *text, const char *const *set,
                         int n_set, sim_config *cfg);
/* The same expecting error code with exactly the message want, and the
 * config left released. */
void test_config_load_fails(const sim_config_schema *sc, const char *text,
                            const char *const *set, int n_set, int code, const char *want);
/* The number of common keys (sim_config_keys). */
int test_config_key_count(void);

/* ---- temporary databases and SQL probes ----
 * Probes open their own connection (read-only, except test_sql_exec), so
 * they see what a handle has committed and nothing it still buffers; a
 * probe that fails (no such file, bad SQL, no row) fails the test. */

/* dir/name in a fresh temporary directory (static buffer): a database path
 * that does not exist yet. */
const char *test_db_path(const char *name);
/* The first column of the query's first row: an integer (-1 when NULL), a
 * real (NAN when NULL), text copied into out ("(null)" when NULL). */
int64_t test_sql_int(const char *path, const char *sql);
double test_sql_real(const char *path, const char *sql);
void test_sql_text(const char *path, const char *sql, char *out, size_t size);
/* Runs statements on a read-write connection (creating the file). */
void test_sql_exec(const char *path, const char *sql);
/* Reads a stream written by the code under test (a tmpfile) back into buf
 * (size bytes, NUL-terminated); returns the length. */
size_t test_stream_read(FILE *f, char *buf, size_t size);
/* Runs "dtsim ARGS" (DTSIM_EXE) in dir; stdout and stderr land in out
 * (truncated to len). Returns the exit status, -1 when killed. */
int test_dtsim(const char *dir, const char *args, char *out, size_t len);
/* The statuses of a database's runs in id order, comma-separated ("" when
 * the file or its runs table is missing), in a static buffer. */
const char *test_run_statuses(const char *db_path);

#endif
