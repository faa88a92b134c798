/* Fault events (see fault.h): the names the faults table writes. */
#include "algorithms/core/fault.h"

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
