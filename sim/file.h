/* Input files. One named in an experiment (trace, fault schedule): a path
 * that is a directory is the user's input error, named as such, not an
 * I/O failure or a parse error of an empty text. And the one-number lines
 * of the system's files (/proc/stat, /proc/meminfo). */
#ifndef DTSIM_SIM_FILE_H
#define DTSIM_SIM_FILE_H

#include <stdio.h>

#include "sim/err.h"

/* 0 when the open stream f (of path) is not a directory; otherwise
 * SIM_EINPUT "PATH: is a directory, expected WHAT". */
int sim_file_check(FILE *f, const char *path, const char *what, sim_err *err);
/* Reads the first line of the text file path that matches fmt, a sscanf
 * format with one %lld ("btime %lld"), into *out. 0, or -1 when the file
 * cannot be read or no line matches (*out untouched). */
int sim_file_scan_line(const char *path, const char *fmt, long long *out);

#endif
