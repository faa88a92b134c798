/* File names written inside an experiment file ([faults] schedule,
 * [workers] compute = trace(FILE), file(FILE) graphs and networks,
 * libsvm(FILE) and text(FILE) data sets) resolve against the experiment
 * file's folder, as include files do in other tools: the experiment works
 * from any current directory. An absolute name stays as it is. */
#ifndef DTSIM_SIM_PATH_H
#define DTSIM_SIM_PATH_H

#include <stddef.h>

#include "sim/err.h"

#define SIM_PATH_MAX 4096 /* bytes of a resolved file name, with its NUL */

/* The folder of the file named file, into out (len bytes, truncated):
 * "experiments/a.ini" -> "experiments", "/a.ini" -> "/", "a.ini" -> ""
 * (the current directory). */
void sim_path_dir(const char *file, char *out, size_t len);

/* name resolved against the folder dir, into out (len bytes): name itself
 * when it is absolute or dir is NULL or "", else "dir/name". SIM_EINPUT
 * naming the file when the result does not fit. */
int sim_path_resolve(const char *dir, const char *name, char *out, size_t len, sim_err *err);

#endif
