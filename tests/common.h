/* Helpers shared by the test suites. */
#ifndef DTSIM_TESTS_COMMON_H
#define DTSIM_TESTS_COMMON_H

/* Path below the source root (DTSIM_SOURCE_ROOT, set by meson test), in a
 * static buffer. */
const char *test_source_path(const char *rel);
/* A fresh temporary directory for this test (mkdtemp under TMPDIR). */
const char *test_tmpdir(void);
/* Writes text to dir/name and returns the full path (static buffer). */
const char *test_write_file(const char *dir, const char *name, const char *text);

#endif
