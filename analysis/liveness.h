/* Whether the process that owns a 'running' run row is gone, so that a
 * resume may mark the row failed and run its point again. */
#ifndef DTSIM_AN_LIVENESS_H
#define DTSIM_AN_LIVENESS_H

#include <stdint.h>

/* 1 when no live process of this host is the owner of a row written by
 * process `pid` at `started_at` (UTC, "YYYY-MM-DDTHH:MM:SSZ", or NULL when
 * unknown): no process has the id, or it is a zombie or dead (killed and
 * not yet reaped), or it started well after the row was written (the id
 * was reused). 0 when it may be alive. */
int an_process_gone(int64_t pid, const char *started_at);

#endif
