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

/* An event as the schedule parser gives it (config/schedule.h), kind an
 * algo_fault_kind. */
typedef cfg_fault algo_fault;

/* Event names as the schedule and the faults table write them. */
const char *algo_fault_kind_name(algo_fault_kind k);

#endif
