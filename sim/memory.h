/* What memory the machine gives a process, for the size checks made before
 * an experiment or a graph is built. */
#ifndef DTSIM_SIM_MEMORY_H
#define DTSIM_SIM_MEMORY_H

#include <stdint.h>

#include "sim/err.h"

/* Bytes: the physical memory (MemTotal), or the cgroup's memory.max when
 * lower; DTSIM_MAX_MEMORY (bytes, or with a k/M/G/T suffix) when set and
 * lower still. -1 when none is known (then nothing is refused). */
int64_t sim_memory_limit(void);
/* 0 when need bytes fit sim_memory_limit(); else code, with err's message
 * "<what> need about X, more than the Y this machine gives
 * (DTSIM_MAX_MEMORY lowers the limit)", what formatted from fmt. The one
 * wording of every size check made before something large is built. */
int sim_memory_check(double need, int code, sim_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A byte count as text such as "4.2 GB" into buf. */
const char *sim_memory_format(double bytes, char *buf, int len);

#endif
