/* `dtsim report`: one row per run of a results database with its final
 * metrics, time to a target (docs/algorithms.md 0.9: the sim_time of the first
 * evaluation row, ordered by sim_time then iteration, whose metric reaches
 * the target) and speedup = baseline TTA / this run's TTA.
 *
 * The automatic baseline of a run is the lowest-id allreduce_sgd run with
 * status 'done' whose params equal this run's on every common config key
 * (cfg_keys) except algorithm.name, the [topology] keys,
 * experiment.name and experiment.eval_model (a method's own keys do not
 * count); an explicit baseline applies to all rows. Without a target, each
 * run's own experiment.target_accuracy (when > 0) is the target. The library writes only to the FILE* it is given. */
#ifndef DTSIM_AN_REPORT_H
#define DTSIM_AN_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/db.h"
#include "sim/err.h"

typedef struct an_report_opts {
    const int64_t *run_ids;     /* runs to report, in this order */
    int n_run_ids;              /* 0 = every run, by id */
    const char *target_metric;  /* test_accuracy (>=) | train_loss | test_loss (<=);
                                   NULL = each run's experiment.target_accuracy */
    double target_value;        /* in the metric's unit */
    int sustain;                /* > 1: the target must hold for this many
                                   consecutive evaluations; the time to target
                                   is the first of them (0, 1: first crossing) */
    int64_t baseline;           /* run id; 0 = automatic */
    int csv;                    /* an_report_print: CSV instead of a text table */
    int aggregate;              /* an_report_print: one row per group of seeds */
    const char *columns;        /* "SECTION.KEY,..." params shown as columns (at
                                   most AN_REPORT_MAX_KEYS); NULL = the keys whose
                                   values differ among the runs listed */
    int staleness;              /* an_report_print: per-worker staleness quantiles
                                   instead of the run table */
    const char *compare;        /* with aggregate: "SECTION.KEY=BASE,V1,V2,...": the
                                   difference Vi - BASE of every pair of groups that
                                   differ only in that key (Welch); NULL = none */
    int adjust;                 /* with compare: AN_ADJUST_* over all its comparisons */
} an_report_opts;

/* Multiple-comparison adjustment of --compare's intervals and verdicts. */
enum { AN_ADJUST_NONE = 0, AN_ADJUST_BONFERRONI, AN_ADJUST_HOLM };

/* "none", "bonferroni" or "holm" into *adjust; SIM_EUSAGE naming text
 * otherwise. */
int an_report_parse_adjust(const char *text, int *adjust, sim_err *err);

/* Params shown as columns, at most. */
#define AN_REPORT_MAX_KEYS 16

typedef struct an_report_row {
    int64_t id;
    char name[128];
    char algorithm[64];
    char status[24];        /* "failed (interrupted)": running, process gone */
    int n_workers;
    double final_train_loss;    /* NAN when unknown (run not finished) */
    double final_test_accuracy; /* NAN when unknown */
    double sim_time;            /* simulated seconds at the end; NAN when unknown */
    char target_metric[32];     /* "" when the run has no target */
    double target;              /* the target value; NAN when none */
    double time_to_target;      /* simulated seconds; NAN if never reached */
    int64_t baseline_id;        /* 0 = none found */
    double speedup;             /* baseline TTA / time_to_target; NAN if either missing */
    int64_t bytes_sent;         /* bytes, summed over workers; -1 when unknown */
    double idle_fraction;       /* NAN when unknown */
    double mean_staleness;      /* NAN when unknown */
    double consensus_distance;  /* final; NAN when unknown */
} an_report_row;

typedef struct an_report {
    an_report_row *rows;
    int n_rows;
    /* params shown as columns: the chosen keys (--columns), else those whose
     * values differ among the rows (but experiment.name and algorithm.name,
     * which have columns of their own), in params order */
    int n_keys;
    int keys_chosen;            /* 1: given with --columns */
    char (*keys)[64];           /* "network.bandwidth" */
    char **key_values;          /* n_rows x n_keys, row-major; "" when the run has none */
} an_report;

/* Aggregation over seeds (--aggregate): runs whose params differ only in
 * experiment.seed and experiment.name form one group; only runs with
 * status done or diverged count. Each statistic is over the group's runs
 * that have a value (time to target and speedup: those that reached it). */
typedef struct an_report_stat {
    double mean, min, max;      /* NAN when n = 0 */
    int n;                      /* runs with a value */
    double sd;                  /* sample standard deviation (n - 1); NAN when n < 2 */
    double ci;                  /* half-width of the 95% confidence interval of the
                                   mean, t(0.975, n - 1) sd / sqrt(n); NAN when n < 2 */
} an_report_stat;

/* The 95% confidence interval of the difference of two means (Welch's t). */
typedef struct an_report_diff {
    double diff;                /* mean(b) - mean(a); NAN when either has no value */
    double lo, hi;              /* the interval; NAN when either has n < 2 or exact */
    double df;                  /* Welch-Satterthwaite degrees of freedom */
    int exact;                  /* 1: every seed of both groups gave the same value (a
                                   deterministic statistic): the difference is exact,
                                   no interval and no verdict */
} an_report_diff;

/* Mean, sd and ci of n values (NAN where not defined). */
void an_report_stat_of(const double *values, int n, an_report_stat *s);
/* The Welch interval of mean(b) - mean(a) at 95% (none, and exact = 1,
 * when both spreads are 0). */
void an_report_diff_of(const an_report_stat *a, const an_report_stat *b, an_report_diff *d);

typedef struct an_report_group {
    int64_t *run_ids;           /* in report order */
    int n_runs;                 /* seeds */
    char name[128];             /* of the first run */
    char algorithm[64];
    int n_workers;
    char target_metric[32];
    double target;              /* NAN when none */
    int n_reached;              /* runs that reached the target */
    an_report_stat final_train_loss, final_test_accuracy, sim_time, time_to_target,
        speedup, bytes_sent, idle_fraction, mean_staleness, consensus_distance;
} an_report_group;

typedef struct an_report_groups {
    an_report_group *groups;    /* ordered by their first run */
    int n_groups;
    /* the report's key columns that tell the groups apart (experiment.seed
     * only when chosen with --columns); values of each group's first run */
    int n_keys;
    char (*keys)[64];
    char **key_values;          /* n_groups x n_keys, row-major */
    char **fingerprints;        /* per group: its params without seed and name */
} an_report_groups;

/* Groups the rows of rep (built from db). agg is caller storage. */
int an_report_aggregate(an_db *db, const an_report *rep, an_report_groups *agg,
                        sim_err *err);
void an_report_groups_release(an_report_groups *agg);
/* Text table ("mean ±ci" cells) or CSV (X_mean, X_min, X_max, X_ci_lo,
 * X_ci_hi). */
int an_report_groups_write(const an_report_groups *agg, int csv, FILE *out, sim_err *err);
/* --compare KEY=BASE,V1,V2,...: for every value Vi and every pair of groups
 * whose params differ only in KEY, one with BASE and one with Vi, the
 * difference Vi - BASE of each statistic with its 95% interval and the
 * verdict, as one table (text or CSV); a statistic that is the same for
 * every seed of both groups gets the exact difference alone. SIM_EUSAGE,
 * before anything is written, for a malformed text, a key no group has
 * (naming the closest keys), a value no group has (naming those there
 * are) or a value with no group to pair with BASE. out NULL: only these
 * checks. adjust (AN_ADJUST_*) widens the intervals and judges the
 * verdicts over the family of every comparison with an interval the call
 * makes (all values, pairs and statistics, m of them): Bonferroni at 95% /
 * m each; Holm by the step-down on Welch's p-values (the comparison of
 * rank i at 1 - 0.05 / (m - i + 1), up to the first that contains zero,
 * the rest at that one's level), adjusted p-values in the CSV. */
int an_report_compare_write(const an_report_groups *agg, const char *compare, int adjust,
                            int csv, FILE *out, sim_err *err);

/* The nearest-rank q-quantile of a distribution given as n increasing
 * values with their counts: the smallest value with at least ceil(q N) of
 * the N counted at or below it; -1 when N = 0. */
int64_t an_report_quantile(const int64_t *values, const int64_t *counts, int n, double q);
/* --staleness: for each run of rep and each of its workers with rows in
 * staleness_workers, the updates, mean, median, p90, p99 and maximum
 * staleness (text or CSV). A database without the table says so. */
int an_report_staleness_write(an_db *db, const an_report *rep, int csv, FILE *out,
                              sim_err *err);

/* Parses "METRIC=VALUE" (as given to --target) into metric (size bytes) and
 * *value. SIM_EUSAGE names the text when the metric or value is bad. */
int an_report_parse_target(const char *text, char *metric, size_t size, double *value,
                           sim_err *err);
/* Fills rep (caller-owned storage, released with an_report_release). Unknown
 * run id, baseline or metric: SIM_EUSAGE; database errors: SIM_EDB. */
int an_report_build(an_db *db, const an_report_opts *opts, an_report *rep, sim_err *err);
void an_report_release(an_report *rep);
/* Writes an aligned text table (csv = 0) or CSV with a header line to out.
 * An empty report prints the header and "no runs" (text mode only).
 * Write failures: SIM_EIO. */
int an_report_write(const an_report *rep, int csv, FILE *out, sim_err *err);
/* Opens path read-only, builds the report and writes it (opts->csv,
 * opts->aggregate) to out: the whole of `dtsim report`. */
int an_report_print(const char *path, const an_report_opts *opts, FILE *out,
                    sim_err *err);

#endif
