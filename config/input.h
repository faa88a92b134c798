/* Input files read whole: an experiment file, a calibration fragment, a
 * fault schedule. A text file never holds a NUL byte; one is an error
 * naming the file and its line (a C string would silently end there and
 * the rest of the file be ignored). */
#ifndef DTSIM_CONFIG_INPUT_H
#define DTSIM_CONFIG_INPUT_H

#include <stddef.h>

#include "sim/err.h"

/* Reads the text file path whole into *text (malloc'd, NUL-terminated, ""
 * for an empty file; free() it) and its length into *len (may be NULL).
 * what names the expected content in messages ("an experiment file").
 * Returns 0; SIM_EINPUT "PATH: cannot open: ...", "PATH: is a directory,
 * expected WHAT", "PATH:LINE: a NUL byte at column C: expected WHAT, a
 * text file"; SIM_ENOMEM. *text is NULL after an error. */
int cfg_input_read(const char *path, const char *what, char **text, size_t *len, sim_err *err);
/* The NUL check alone, on len bytes of data named path: 0 or SIM_EINPUT
 * as above. */
int cfg_input_check_text(const char *path, const char *what, const char *data, size_t len,
                         sim_err *err);

#endif
