/* What memory the machine gives a process, for the size checks made before
 * an experiment or a graph is built. */
#ifndef DTSIM_SIM_MEMORY_H
#define DTSIM_SIM_MEMORY_H

#include <stdint.h>

/* Bytes: the physical memory (MemTotal), or the cgroup's memory.max when
 * lower; DTSIM_MAX_MEMORY (bytes, or with a k/M/G/T suffix) when set and
 * lower still. -1 when none is known (then nothing is refused). */
int64_t sim_memory_limit(void);
/* A byte count as text such as "4.2 GB" into buf. */
const char *sim_memory_format(double bytes, char *buf, int len);

#endif
