/* `dtsim report --scaling`: the simulated throughput of runs that differ
 * only in the worker count, and their scaling factor
 *   scaling(n) = throughput(n) / ((n / n0) x throughput(n0))
 * with n0 the smallest worker count of the group (1 in a usual sweep, and
 * then the factor is throughput(n) / (n x throughput(1)), the definition of
 * Zhang et al. 2020 and of the Horovod paper).
 *
 * Throughput = samples / sim_time of the run's last metrics row (samples
 * processed by all workers per simulated second, from the start). Only runs
 * with status 'done' count. Two runs are in the same group when their params
 * are equal on every key except experiment.name, workers.count and the
 * arguments of network.topology (its kind, the text before '(', must match:
 * hierarchical(2, 8) and hierarchical(8, 8) are one group, star and
 * fat_tree(4) are not). Groups are ordered by their lowest run id, rows by
 * worker count then id. The library writes only to the FILE* it is given. */
#ifndef DTSIM_AN_SCALING_H
#define DTSIM_AN_SCALING_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/db.h"
#include "sim/err.h"

typedef struct an_scaling_row {
    int group;              /* 1-based group number */
    int64_t id;
    char name[128];
    char algorithm[64];
    int n_workers;
    double throughput;      /* samples per simulated second; NAN when unknown */
    int ref_workers;        /* n0: the group's smallest worker count */
    double scaling;         /* see above; NAN when either throughput is unknown */
    double step_time;       /* simulated seconds per iteration (runs.sim_time /
                               runs.iterations); NAN when unknown */
} an_scaling_row;

typedef struct an_scaling {
    an_scaling_row *rows;   /* grouped, in output order */
    int n_rows;
    int n_groups;
} an_scaling;

/* Fills sc (caller storage, released with an_scaling_release) from the
 * runs run_ids[0..n) (n = 0: every run). Unknown run id: SIM_EUSAGE;
 * database errors: SIM_EDB. */
int an_scaling_build(an_db *db, const int64_t *run_ids, int n, an_scaling *sc, sim_err *err);
void an_scaling_release(an_scaling *sc);
/* Text table (csv = 0; "no finished runs" when empty) or CSV with a header:
 * group,id,name,algorithm,n_workers,throughput,ref_workers,scaling_factor.
 * Write failures: SIM_EIO. */
int an_scaling_write(const an_scaling *sc, int csv, FILE *out, sim_err *err);
/* Opens path read-only, builds and writes: the whole of `dtsim report --scaling`. */
int an_scaling_print(const char *path, const int64_t *run_ids, int n, int csv, FILE *out,
                     sim_err *err);

/* `dtsim plot --scaling`: one line per value of opts->by (a params key, or
 * NULL: one line) through the rows of the scaling report that satisfy
 * opts->where (SQL on runs r; the factors are computed over all runs
 * first), y = opts->y: scaling | throughput | step_time, against opts->x:
 * n_workers, a numeric params key (bandwidths drawn in Gb/s, sizes in MiB)
 * or compression (the largest workload.sim_params on the row's line over
 * the row's own). Points are sorted by x. Unknown y, x or no points:
 * SIM_EUSAGE / SIM_EINPUT; then as an_plot_render. */
struct an_plot_opts;
int an_scaling_plot_write(const char *path, const struct an_plot_opts *opts, int *n_series,
                          int *n_points, sim_err *err);

#endif
