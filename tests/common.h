/* Helpers shared by the test suites. */
#ifndef DTSIM_TESTS_COMMON_H
#define DTSIM_TESTS_COMMON_H

#include <stddef.h>

/* Path below the source root (DTSIM_SOURCE_ROOT, set by meson test), in a
 * static buffer. */
const char *test_source_path(const char *rel);
/* A fresh temporary directory for this test (mkdtemp under TMPDIR). */
const char *test_tmpdir(void);
/* Writes text to dir/name and returns the full path (static buffer). */
const char *test_write_file(const char *dir, const char *name, const char *text);
/* Runs "dtsim ARGS" (DTSIM_EXE) in dir; stdout and stderr land in out
 * (truncated to len). Returns the exit status, -1 when killed. */
int test_dtsim(const char *dir, const char *args, char *out, size_t len);
/* The statuses of a database's runs in id order, comma-separated ("" when
 * the file or its runs table is missing), in a static buffer. */
const char *test_run_statuses(const char *db_path);

#endif
