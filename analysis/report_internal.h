/* The report's internals, shared by its files (not a public header: only
 * analysis/report*.c include it):
 *   report.c           building the rows (runs, targets, baselines), release,
 *                      an_report_print
 *   report_match.c     the queries: time to target, params fingerprints,
 *                      baseline matching, a run's own target
 *   report_format.c    the per-run text table and CSV
 *   report_aggregate.c aggregation over seeds and its table and CSV
 *   report_stats.c     means, confidence intervals, Welch differences
 *   report_compare.c   --compare: each value against the first
 *   report_keys.c      the params shown as columns */
#ifndef DTSIM_AN_REPORT_INTERNAL_H
#define DTSIM_AN_REPORT_INTERNAL_H

#include <sqlite3.h>
#include <stdint.h>

#include "analysis/report.h"

typedef struct metric_def {
    const char *name;   /* a metrics column */
    int at_least;       /* 1: reached when >= target, 0: when <= */
} metric_def;

/* The metrics a target can name, in --target's order. */
#define N_METRICS 3
extern const metric_def report_metrics[N_METRICS];

typedef struct candidate {
    int64_t id;
    char *fingerprint;
} candidate;

/* State of one an_report_build call. */
typedef struct report_ctx {
    an_db *db;
    sqlite3 *conn;
    sqlite3_stmt *tta[N_METRICS];
    sqlite3_stmt *curve[N_METRICS]; /* --sustain: every evaluation of a metric */
    int sustain;
    candidate *cands;
    int n_cands;
    int cands_loaded;
} report_ctx;

/* SIM_EDB "path: sqlite message". */
int report_sql_error(report_ctx *c, sim_err *err);
/* sqlite3_prepare_v2 on the report's connection; SIM_EDB on failure. */
int report_prepare(report_ctx *c, const char *sql, sqlite3_stmt **s, sim_err *err);
/* Frees the statements and candidates the context cached. */
void report_ctx_release(report_ctx *c);
/* Index in report_metrics, or -1. */
int report_metric_find(const char *name);
/* SIM_EUSAGE naming an unknown --target metric. */
int report_metric_unknown(const char *name, sim_err *err);
/* The first sim_time at which metric (an index, < 0: none) reaches target
 * (and, with --sustain K, stays there for K evaluations), or NAN. */
int report_tta(report_ctx *c, int64_t run, int metric, double target, double *tta,
               sim_err *err);
/* Malloc'd fingerprint of a run's params ("" when it has none that count):
 * seeds = 1 leaves out the seed and name (aggregation), seeds = 0 what a
 * baseline may differ in. */
int report_fingerprint(report_ctx *c, int64_t run, int seeds, char **out, sim_err *err);
/* 1 when key ("section.key") is a common config key (cfg_keys), 0 for a
 * method's own key. */
int report_common_key(const char *key);
/* The automatic baseline of a run (report.h), or 0. */
int report_baseline_auto(report_ctx *c, int64_t run, int64_t *base, sim_err *err);
/* The run's own experiment.target_accuracy, NAN when absent or <= 0. */
int report_own_target(report_ctx *c, int64_t run, double *target, sim_err *err);

/* report_stats.c: accumulation of a statistic (NAN values are skipped),
 * then mean, sd and ci once all are in. */
void report_stat_add(an_report_stat *s, double v);
void report_stat_finish(an_report_stat *s);

/* report_keys.c: fills rep->keys and rep->key_values for its rows: the
 * keys of columns ("SECTION.KEY,...", SIM_EUSAGE naming one that no listed
 * run has), else those whose values differ among the rows. */
int report_keys_fill(report_ctx *c, const char *columns, an_report *rep, sim_err *err);
void report_keys_release(an_report *rep);
/* A column header for key: the part after the section, or the whole key
 * when another of the keys ends the same. */
const char *report_key_header(char (*keys)[64], int n_keys, int i);

/* report_format.c: cells of REPORT_CELL bytes. */
#define REPORT_CELL 160
/* v with fmt, or missing when v is NAN. */
void report_fmt_real(char *cell, const char *fmt, double v, const char *missing);
/* "1.25 MB" (SI), "999 B"; "-" when bytes < 0. */
void report_fmt_bytes(char *cell, int64_t bytes);
/* A CSV field: quoted when it holds a comma, quote or line break. */
void report_fmt_csv(char *cell, const char *text);
/* The cells of n_keys key columns from their values ("-" for "" in text). */
void report_fmt_keys(char (*cells)[REPORT_CELL], char *const *values, int n_keys, int csv);

#endif
