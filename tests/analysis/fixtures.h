/* Fixtures the analysis suites share (the harness of tests/common.h does
 * the temporary files and SQL probes): standard run rows for the database
 * suites, the schema of an older dtsim, and small databases with known
 * answers for the report, plot and scaling suites. */
#ifndef DTSIM_TESTS_ANALYSIS_FIXTURES_H
#define DTSIM_TESTS_ANALYSIS_FIXTURES_H

#include <stdint.h>

#include "analysis/db.h"
#include "analysis/report.h"

/* ---- database suites ---- */

/* A run of allreduce_sgd, seed 7, 4 workers, three params, this config. */
an_run_info fx_run_info(const char *config);
/* Metric row i: NaN test_loss on odd i, test_accuracy only every 10th. */
an_metric_row fx_metric_at(int i);
/* Series row i: worker -1 (NULL) every third row, a NaN value at i = 4. */
an_series_row fx_series_at(int i);
/* A 'done' summary of 600 iterations. */
an_run_summary fx_summary_done(void);
/* Begins fx_run_info(config); fails the test unless it gets an id. */
int64_t fx_run_begin(an_db *db, const char *config);
/* Finishes run id with fx_summary_done() and this status. */
void fx_run_finish(an_db *db, int64_t id, const char *status);
/* The schema of a dtsim before the series, labels, links and faults tables,
 * runs.error, runs.pid, runs.host and params.num, with one 'done' run and
 * one metric row. */
extern const char fx_old_schema[];

/* ---- report suites ---- */

typedef struct fx_point {
    double t, acc, loss; /* simulated seconds, test accuracy, train loss */
} fx_point;

extern const fx_point fx_base_pts[5], fx_fast_pts[3], fx_never_pts[3], fx_other_pts[1],
    fx_dup_pts[2], fx_early_pts[1];

/* A run of algo with params experiment.* (target_accuracy 0.8),
 * workers.count, network.bandwidth, algorithm.name and lr, topology.graph
 * (and a method key for local_sgd), an evaluation at each point with a
 * training-only row after it, finished with status (NULL: left running). */
int64_t fx_report_run(an_db *db, const char *name, const char *algo, const char *workers,
                      const char *lr, const fx_point *pts, int n, const char *status,
                      int64_t bytes);

/* Runs 1..8 of fx_report_known_db, by id. */
enum { R_FAILED = 1, R_BASE, R_FAST, R_NEVER, R_OTHER, R_DUP, R_RUNNING, R_LR, N_RUNS = R_LR };
/* A fresh database (at fx_path()) holding runs R_FAILED..R_LR: a
 * failed allreduce (never a baseline), the baseline, a fast method, one that
 * never reaches 0.8, an allreduce with other params, a second matching
 * allreduce (not the lowest id), a run still 'running' and an allreduce with
 * another lr. Open for writing; the caller closes it. */
an_db *fx_report_known_db(void);
/* Runs 1-3: one config, seeds 1-3 (names differ); 4: another lr; 5: a
 * fourth seed still running. Written to fx_path() and closed. */
void fx_report_seeds_db(void);
/* The path of the database the last fx_*_db call wrote (static buffer). */
const char *fx_path(void);
/* The row of run id; fails the test when it is missing. */
const an_report_row *fx_report_row(const an_report *rep, int64_t id);

/* ---- plot and scaling suites ---- */

/* Runs 1, 2: allreduce_sgd seeds 1 and 2 (one config); 3: asgd seed 1;
 * 4: asgd with another compute; 5: a failed run (never plotted). Written
 * to fx_path() ("plot.db") and closed; returns its directory. */
const char *fx_plot_db(void);
/* Runs 1..10 of known throughput at fx_path(): four groups of runs that
 * differ only in the worker count, a failed run and a running one (see
 * fixtures.c). Open for writing; the caller closes it. */
an_db *fx_scaling_db(void);

#endif
