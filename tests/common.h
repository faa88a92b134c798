/* The one harness shared by every test suite: paths and temporary files,
 * running an experiment given as INI text (with overrides), its metric rows
 * and their comparison, temporary databases and SQL probes. */
#ifndef DTSIM_TESTS_COMMON_H
#define DTSIM_TESTS_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/db.h"
#include "config/config.h"
#include "experiment/experiment.h"
#include "sim/err.h"

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
 * layer (xp_experiment_schema): methods local_sgd (keys local_steps,
 * sync, mode, codec) and allreduce_sgd (none), optimizers sgd, adam,
 * adamw, lamb, device v100 (15.7 TFLOPS, any case). */
extern const cfg_schema test_config_registries;
/* Loads text as "exp.ini" with schema sc (NULL: no registries) and the
 * --set values set; fails the test on an error. */
void test_config_load_ok(const cfg_schema *sc, const char *text, const char *const *set,
                         int n_set, cfg_config *cfg);
/* The same expecting error code with exactly the message want, and the
 * config left released. */
void test_config_load_fails(const cfg_schema *sc, const char *text,
                            const char *const *set, int n_set, int code, const char *want);
/* The number of common keys (cfg_keys). */
int test_config_key_count(void);

/* Writes text to a fresh temporary file (mkstemp); its name goes to path
 * (at least 64 bytes). The caller unlinks it. */
void test_write_temp(char *path, const char *text);

/* ---- running an experiment --------------------------------------------- */

/* The base experiment of the algorithm and fault suites: softmax on
 * blobs(4, 10) (d = 44, S = 176 bytes), 8 workers with constant 10 ms
 * steps on an ideal network, a ring graph, dsgd_atc, 150 iterations. */
extern const char *const test_base_ini;

enum { TEST_ROWS_MAX = 4096 };

/* The metric rows of a run, in order (the first TEST_ROWS_MAX). */
typedef struct test_rows {
    an_metric_row r[TEST_ROWS_MAX];
    int n;
} test_rows;

/* xp_run_opts.on_metric for a test_rows context. */
void test_rows_collect(void *ctx, const an_metric_row *row);

/* Loads ini (named "test.ini") with the overrides sets[0..nsets) and runs
 * it with opts (NULL: no database, no callbacks). Returns 0, the config
 * error's code or the run's; the message is in err. */
int test_run_try(const char *ini, const char *const *sets, int nsets, const xp_run_opts *opts,
                 xp_run_result *res, sim_err *err);
/* The same, asserting that the config loads: returns the run's code. */
int test_run_loaded(const char *ini, const char *const *sets, int nsets,
                    const xp_run_opts *opts, xp_run_result *res, sim_err *err);
/* Loads and runs ini with the overrides, asserting success; rs (may be
 * NULL) is cleared and collects the metric rows. */
xp_run_result test_run_ini(const char *ini, const char *const *sets, int nsets, test_rows *rs);
/* As test_run_ini with opts given (its on_metric and ctx are kept). */
xp_run_result test_run_opts(const char *ini, const char *const *sets, int nsets,
                             const xp_run_opts *opts);

/* Two runs' rows have the same iterations and bit-identical
 * train loss, test loss and test accuracy (more than 3 rows). */
void test_rows_assert_identical(const test_rows *a, const test_rows *b, const char *what);
/* Two runs' rows have the same iterations; train loss and test accuracy
 * agree within tol. */
void test_rows_assert_close(const test_rows *a, const test_rows *b, double tol,
                            const char *what);

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
