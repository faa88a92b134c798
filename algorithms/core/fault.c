/* Fault events (see fault.h): the names the faults table writes, and the
 * events of a parsed schedule (config/schedule.c) as the algorithms apply
 * them. */
#include "algorithms/core/fault.h"

#include <stdlib.h>

/* The schedule's events are the first four; "lost" and "resent" are only
 * written (faults table). */
static const char *const kind_names[] = {"crash", "rejoin", "slowdown", "link", "lost",
                                         "resent"};

const char *algo_fault_kind_name(algo_fault_kind k)
{
    return (unsigned)k < 6 ? kind_names[k] : "?";
}

_Static_assert((int)ALGO_FAULT_CRASH == (int)CFG_FAULT_CRASH &&
                   (int)ALGO_FAULT_REJOIN == (int)CFG_FAULT_REJOIN &&
                   (int)ALGO_FAULT_SLOWDOWN == (int)CFG_FAULT_SLOWDOWN &&
                   (int)ALGO_FAULT_LINK == (int)CFG_FAULT_LINK,
               "a schedule's event kinds are the first fault kinds");

int algo_fault_from_schedule(const cfg_fault *rows, int n, algo_fault **out, sim_err *err)
{
    *out = NULL;
    algo_fault *ev = calloc((size_t)n + 1, sizeof *ev);
    if (!ev)
        return sim_err_set(err, SIM_ENOMEM, "out of memory for the fault schedule");
    for (int i = 0; i < n; i++)
        ev[i] = (algo_fault){rows[i].time, (algo_fault_kind)rows[i].kind, rows[i].target,
                             rows[i].target2, rows[i].value};
    *out = ev;
    return 0;
}
