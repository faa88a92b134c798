/* Fault schedules ([faults] schedule = FILE.csv, docs/faults.md): a CSV
 * file with the header time,event,target,value and one event a row, in any
 * time order (applied in time order, file order on equal times):
 *   0.5s,crash,3,          worker 3 stops; its in-flight work is lost
 *   2s,rejoin,3,           worker 3 starts again from the current model
 *   1s,slowdown,2,10       worker 2's compute time x10 (1 restores)
 *   1s,link,0-8,1Gbps      link between vertices 0 and 8 of the physical
 *                          network (hosts first, then switches), both ways
 *   1s,link,0-8,down       ... down: carries nothing, messages on it are lost
 *   1s,link,0-8,up         ... back up at its configured rate
 * The parser of a user's file, in the layer that parses user files; the
 * algorithms apply the events (algorithms/core/fault.h). Errors name
 * file:line:column. */
#ifndef DTSIM_CONFIG_SCHEDULE_H
#define DTSIM_CONFIG_SCHEDULE_H

#include "sim/err.h"
#include "sim/units.h"

typedef enum cfg_fault_kind {
    CFG_FAULT_CRASH = 0,
    CFG_FAULT_REJOIN,
    CFG_FAULT_SLOWDOWN,
    CFG_FAULT_LINK
} cfg_fault_kind;

/* One event. The algorithms apply these as they are (algo_fault is this
 * type) and add kinds of their own past CFG_FAULT_LINK for the faults
 * table (a message lost on a down link, its re-send). */
typedef struct cfg_fault {
    sim_time time;        /* simulated time of the event */
    int kind;             /* a cfg_fault_kind (or an algo_fault_kind) */
    int target;           /* worker, or the first vertex of a link */
    int target2;          /* the second vertex of a link, else -1 */
    double value;         /* slowdown factor; link rate in bytes/s, 0 = down,
                             -1 = up (the configured rate); else 0; the
                             algorithms' kinds: bytes lost or re-sent */
} cfg_fault;

/* Parses schedule text (name used in messages). On success *out is a
 * malloc'd array of *n events sorted by time (stable); free() it. Workers
 * must be < n_workers and link ends < n_hosts (the vertex count). Returns
 * 0 or SIM_ECONFIG with "name:line:column: ..." in err (SIM_ENOMEM when
 * out of memory). */
int cfg_schedule_parse(const char *name, const char *text, int n_workers, int n_hosts,
                       cfg_fault **out, int *n, sim_err *err);
/* The same from a file, read whole (SIM_EINPUT when it cannot be read, is
 * a directory or holds a NUL byte, config/input.h). */
int cfg_schedule_load(const char *path, int n_workers, int n_hosts, cfg_fault **out, int *n,
                      sim_err *err);

#endif
