/* Helpers shared by the fuzz targets (tests/fuzz/fuzz_<name>.c): one-time
 * set-up of the library's error handlers and the algorithm key tables, and
 * a scratch file per process for parsers that only take a path. */
#ifndef DTSIM_TESTS_FUZZ_UTIL_H
#define DTSIM_TESTS_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "sim/err.h"

/* libFuzzer's entry point; each fuzz_<name>.c defines it, and both the
 * libFuzzer build and the replay driver (replay.c) call it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Installs the GSL/igraph error handlers and registers the algorithms' key
 * tables, once per process. */
void fuzz_init(void);

/* The input as a NUL-terminated string (a NUL inside it ends the text
 * early, as C's string functions would): malloc'd, the caller frees it;
 * NULL when out of memory (the target then returns 0). */
char *fuzz_text(const uint8_t *data, size_t size);

/* Writes data to this process's scratch file `slot` (a short name such as
 * "train") with extension ext (".csv", "" ...) under /dev/shm (else TMPDIR
 * or /tmp) and returns its path (static storage per slot, at most 4 slots).
 * The files are removed at exit. Aborts when the file cannot be written: a
 * fuzz run without its input is meaningless. */
const char *fuzz_write_temp(const char *slot, const char *ext, const uint8_t *data,
                            size_t size);

/* Prints what a target's call returned ("ok" or err's message) to stderr
 * when DTSIM_FUZZ_VERBOSE is set (replaying one input by hand); silent
 * otherwise, so that fuzzing is not slowed by output. */
void fuzz_report(const char *what, int rc, const sim_err *err);

/* 1 if the first non-blank byte of data is '<' (an XML file). */
int fuzz_looks_like_xml(const uint8_t *data, size_t size);

#endif
