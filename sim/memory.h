/* What memory the machine gives a process, for the size checks made before
 * an experiment or a graph is built: the physical memory, the cgroup's
 * limit (v2 memory.max, v1 memory.limit_in_bytes, the process's own cgroup
 * and its parents), DTSIM_MAX_MEMORY, and the address-space limit
 * (RLIMIT_AS: ulimit -v, prlimit --as), which counts reservations such as
 * OpenBLAS's buffers and thread stacks, not only what is touched. */
#ifndef DTSIM_SIM_MEMORY_H
#define DTSIM_SIM_MEMORY_H

#include <stdint.h>

#include "sim/err.h"

/* A size as DTSIM_MAX_MEMORY and --max-memory take it: a number with an
 * optional binary unit k, M, G, T (either case, optionally followed by B
 * or iB: 8g = 8G = 8GiB = 8 x 2^30 bytes); a bare number is bytes and must
 * be a whole number. Refused: no number, another suffix, a result below
 * 1 byte or above 2^62. 0 and *out, or -1. */
int sim_memory_parse_size(const char *text, int64_t *out);
/* Bytes into *limit: the physical memory (MemTotal), or the cgroup's limit
 * when lower; DTSIM_MAX_MEMORY when set and lower still. -1 when none is
 * known (then nothing is refused). Returns 0, or SIM_EUSAGE naming
 * DTSIM_MAX_MEMORY when it is not a size. */
int sim_memory_limit_get(int64_t *limit, sim_err *err);
/* sim_memory_limit_get without the error (-1 also for a bad
 * DTSIM_MAX_MEMORY, which the checks report). */
int64_t sim_memory_limit(void);
/* The lowest cgroup memory limit on the path of the process's cgroup, read
 * from the cgroup file proc_cgroup (/proc/self/cgroup) under the cgroup
 * mount root (/sys/fs/cgroup): v2 memory.max and v1
 * memory/.../memory.limit_in_bytes, "max" or a v1 value of 2^60 or more
 * being no limit. -1 when none. */
int64_t sim_memory_cgroup_limit(const char *proc_cgroup, const char *root);
/* The address space left under RLIMIT_AS (its soft limit minus the
 * process's VmSize now), 0 when none is left; -1 when unlimited. *limit
 * (may be NULL) gets the limit itself. */
int64_t sim_memory_as_room(int64_t *limit);
/* 0 when need bytes fit sim_memory_limit(); else code, with err's message
 * "<what> need about X, more than the Y this machine gives
 * (DTSIM_MAX_MEMORY lowers the limit)", what formatted from fmt. The one
 * wording of every size check made before something large is built.
 * SIM_EUSAGE when DTSIM_MAX_MEMORY is not a size. */
int sim_memory_check(double need, int code, sim_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A byte count as text such as "4.2 GB" into buf. */
const char *sim_memory_format(double bytes, char *buf, int len);

#endif
