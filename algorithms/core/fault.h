/* Fault events as the algorithms apply them: the events of a fault
 * schedule (parsed by config/schedule.h, docs/faults.md) and the kinds the
 * faults table writes beside them (a message lost on a down link, its
 * re-send). */
#ifndef DTSIM_ALGO_FAULT_H
#define DTSIM_ALGO_FAULT_H

#include <stdint.h>

#include "config/schedule.h"
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
/* The parsed schedule rows[0..n) as *out, a malloc'd array of n events
 * (free() it; SIM_ENOMEM). */
int algo_fault_from_schedule(const cfg_fault *rows, int n, algo_fault **out, sim_err *err);

#endif
