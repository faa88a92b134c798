/* Fault schedules ([faults] schedule = FILE.csv, docs/algorithms.md section
 * 12 and docs/faults.md): a CSV file with the header time,event,target,value
 * and one event a row, in any time order (applied in time order, file order
 * on equal times):
 *   0.5s,crash,3,          worker 3 stops; its in-flight work is lost
 *   2s,rejoin,3,           worker 3 starts again from the current model
 *   1s,slowdown,2,10       worker 2's compute time x10 (1 restores)
 *   1s,link,0-8,1Gbps      link between vertices 0 and 8 of the physical
 *                          network (hosts first, then switches), both ways
 *   1s,link,0-8,down       ... down: carries nothing, messages on it are lost
 *   1s,link,0-8,up         ... back up at its configured rate
 * Errors name file:line:column. */
#ifndef DTSIM_ALGO_FAULT_H
#define DTSIM_ALGO_FAULT_H

#include <stdint.h>

#include "sim/err.h"
#include "sim/units.h"

typedef enum algo_fault_kind {
    ALGO_FAULT_CRASH = 0,
    ALGO_FAULT_REJOIN,
    ALGO_FAULT_SLOWDOWN,
    ALGO_FAULT_LINK,
    ALGO_FAULT_LOST,  /* not schedule events (faults table rows only): a */
    ALGO_FAULT_RESENT /* message attempt lost on a down link, its re-send */
} algo_fault_kind;

typedef struct algo_fault {
    sim_time time;        /* simulated time of the event */
    algo_fault_kind kind;
    int target;           /* worker, or the first host of a link */
    int target2;          /* the second host of a link, else -1 */
    double value;         /* slowdown factor; link rate in bytes/s, 0 = down,
                             -1 = up (the configured rate); lost: bytes sent
                             before the loss; resent: bytes re-sent */
} algo_fault;

/* Event names as the schedule and the faults table write them. */
const char *algo_fault_kind_name(algo_fault_kind k);
/* Parses schedule text (name used in messages). On success *out is a
 * malloc'd array of *n events sorted by time (stable); free() it. Workers
 * must be < n_workers and link ends < n_hosts (the vertex count). Returns 0 or SIM_ECONFIG with
 * "name:line:column: ..." in err (SIM_ENOMEM when out of memory). */
int algo_fault_parse(const char *name, const char *text, int n_workers, int n_hosts,
                     algo_fault **out, int *n, sim_err *err);
/* The same from a file (SIM_EINPUT when it cannot be read). */
int algo_fault_load(const char *path, int n_workers, int n_hosts, algo_fault **out, int *n,
                    sim_err *err);

#endif
