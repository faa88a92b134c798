/* Helpers shared by the test suites. */
#ifndef DTSIM_TESTS_COMMON_H
#define DTSIM_TESTS_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Path below the source root (DTSIM_SOURCE_ROOT, set by meson test), in a
 * static buffer. */
const char *test_source_path(const char *rel);
/* A fresh temporary directory for this test (mkdtemp under TMPDIR). */
const char *test_tmpdir(void);
/* Writes text to dir/name and returns the full path (static buffer). */
const char *test_write_file(const char *dir, const char *name, const char *text);

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

#endif
