/* Private glue between the partition registry (partition.c) and the
 * partition kinds (partition_kinds.c). A new partition is one
 * `const wl_partition_vt` in its file, the file's line in meson.build and
 * its line in partitions.def. */
#ifndef DTSIM_WL_PARTITION_IMPL_H
#define DTSIM_WL_PARTITION_IMPL_H

#include <stdint.h>

#include "sim/err.h"
#include "sim/units.h"
#include "workloads/partition.h"

/* The checks common to every kind, in this order: at least one worker; at
 * least per_worker x n_workers training samples ("fewer than the N what",
 * what such as "workers"); a stream when rq->vt->needs_rng (else
 * SIM_EINTERNAL). Then a partition with n_workers set, offset zeroed and
 * index allocated for train.n entries (unset). NULL with err set. */
wl_partition *wl_partition_start(const wl_partition_req *rq, int64_t per_worker,
                                 const char *what, sim_err *err);

#endif
