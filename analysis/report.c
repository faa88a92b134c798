/* `dtsim report`: per-run summary rows with time to target and speedup
 * against a baseline run (see report.h for the rules): which runs, their
 * final values, their target and baseline (report_match.c), and the whole
 * command (an_report_print). Rendering is report_format.c's, aggregation
 * over seeds report_aggregate.c's. */
#include "analysis/report.h"
#include "analysis/report_internal.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int an_report_parse_target(const char *text, char *metric, size_t size, double *value,
                           sim_err *err)
{
    const char *eq = text ? strchr(text, '=') : NULL;
    if (!eq || eq == text)
        return sim_err_set(err, SIM_EUSAGE,
                           "--target '%s': expected METRIC=VALUE such as test_accuracy=0.9",
                           text ? text : "");
    size_t len = (size_t)(eq - text);
    char name[64];
    if (len >= sizeof name || len >= size)
        return sim_err_set(err, SIM_EUSAGE, "--target '%s': metric name too long", text);
    memcpy(name, text, len);
    name[len] = '\0';
    if (report_metric_find(name) < 0)
        return report_metric_unknown(name, err);
    char *end = NULL;
    double v = strtod(eq + 1, &end);
    if (end == eq + 1 || *end != '\0' || !isfinite(v))
        return sim_err_set(err, SIM_EUSAGE, "--target '%s': expected a number after '='",
                           text);
    if (strcmp(name, "test_accuracy") == 0 && !(v >= 0 && v <= 1))
        return sim_err_set(err, SIM_EUSAGE,
                           "--target '%s': test_accuracy is a fraction in [0, 1]%s", text,
                           v > 1 && v <= 100 ? " (for a percent write e.g. 0.8, not 80)" : "");
    memcpy(metric, name, len + 1);
    *value = v;
    return 0;
}

static int run_exists(report_ctx *c, int64_t id, int *exists, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    int ret = report_prepare(c, "SELECT 1 FROM runs WHERE id = ?1", &s, err);
    if (ret != 0)
        return ret;
    sqlite3_bind_int64(s, 1, id);
    int rc = sqlite3_step(s);
    *exists = rc == SQLITE_ROW;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        ret = report_sql_error(c, err);
    sqlite3_finalize(s);
    return ret;
}

static double column_real(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

static void column_copy(sqlite3_stmt *s, int i, char *dst, size_t size)
{
    const char *text = (const char *)sqlite3_column_text(s, i);
    snprintf(dst, size, "%s", text ? text : "");
}

static int row_load(report_ctx *c, int64_t id, an_report_row *row, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    int ret = report_prepare(c, "SELECT name, algorithm, status, n_workers, final_train_loss,"
                         " final_test_accuracy, sim_time, bytes_sent, idle_fraction,"
                         " mean_staleness, consensus_distance FROM runs WHERE id = ?1",
                      &s, err);
    if (ret != 0)
        return ret;
    sqlite3_bind_int64(s, 1, id);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        row->id = id;
        column_copy(s, 0, row->name, sizeof row->name);
        column_copy(s, 1, row->algorithm, sizeof row->algorithm);
        column_copy(s, 2, row->status, sizeof row->status);
        if (strcmp(row->status, "running") == 0 && an_db_run_orphaned(c->db, id))
            snprintf(row->status, sizeof row->status, "failed (interrupted)");
        row->n_workers = sqlite3_column_int(s, 3);
        row->final_train_loss = column_real(s, 4);
        row->final_test_accuracy = column_real(s, 5);
        row->sim_time = column_real(s, 6);
        row->bytes_sent = sqlite3_column_type(s, 7) == SQLITE_NULL
                              ? -1 : sqlite3_column_int64(s, 7);
        row->idle_fraction = column_real(s, 8);
        row->mean_staleness = column_real(s, 9);
        row->consensus_distance = column_real(s, 10);
    } else if (rc == SQLITE_DONE) {
        ret = sim_err_set(err, SIM_EUSAGE, "%s: run %lld: no such run", an_db_path(c->db),
                          (long long)id);
    } else {
        ret = report_sql_error(c, err);
    }
    sqlite3_finalize(s);
    return ret;
}

static double speedup_of(double base_tta, double tta)
{
    if (isnan(base_tta) || isnan(tta))
        return NAN;
    if (tta <= 0.0)
        return base_tta <= 0.0 ? 1.0 : NAN;
    return base_tta / tta;
}

static int row_fill(report_ctx *c, const an_report_opts *opts, int fixed_metric,
                    int64_t id, an_report_row *row, sim_err *err)
{
    int ret = row_load(c, id, row, err);
    if (ret != 0)
        return ret;
    int metric = fixed_metric;
    row->target = NAN;
    if (metric >= 0) {
        row->target = opts->target_value;
    } else {
        ret = report_own_target(c, id, &row->target, err);
        if (ret != 0)
            return ret;
        if (!isnan(row->target))
            metric = report_metric_find("test_accuracy");
    }
    snprintf(row->target_metric, sizeof row->target_metric, "%s",
             metric >= 0 ? report_metrics[metric].name : "");
    ret = report_tta(c, id, metric, row->target, &row->time_to_target, err);
    if (ret != 0)
        return ret;
    row->baseline_id = opts->baseline;
    if (row->baseline_id == 0) {
        ret = report_baseline_auto(c, id, &row->baseline_id, err);
        if (ret != 0)
            return ret;
    }
    double base_tta = NAN;
    if (row->baseline_id != 0) {
        ret = report_tta(c, row->baseline_id, metric, row->target, &base_tta, err);
        if (ret != 0)
            return ret;
    }
    row->speedup = speedup_of(base_tta, row->time_to_target);
    return 0;
}

/* The ids to report: the requested ones (checked) or every run by id. */
static int ids_collect(report_ctx *c, const an_report_opts *opts, int64_t **ids, int *n,
                       sim_err *err)
{
    *ids = NULL;
    *n = 0;
    if (opts->n_run_ids > 0) {
        for (int i = 0; i < opts->n_run_ids; i++) {
            int exists = 0;
            int ret = run_exists(c, opts->run_ids[i], &exists, err);
            if (ret != 0)
                return ret;
            if (!exists)
                return sim_err_set(err, SIM_EUSAGE, "--run %lld: no such run in %s",
                                   (long long)opts->run_ids[i], an_db_path(c->db));
        }
        *ids = malloc((size_t)opts->n_run_ids * sizeof **ids);
        if (!*ids)
            return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        memcpy(*ids, opts->run_ids, (size_t)opts->n_run_ids * sizeof **ids);
        *n = opts->n_run_ids;
        return 0;
    }
    sqlite3_stmt *s = NULL;
    int ret = report_prepare(c, "SELECT id FROM runs ORDER BY id", &s, err);
    if (ret != 0)
        return ret;
    int rc, cap = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            int64_t *grown = realloc(*ids, (size_t)cap * sizeof *grown);
            if (!grown) {
                ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
                break;
            }
            *ids = grown;
        }
        (*ids)[(*n)++] = sqlite3_column_int64(s, 0);
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = report_sql_error(c, err);
    sqlite3_finalize(s);
    if (ret != 0) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return ret;
}

int an_report_build(an_db *db, const an_report_opts *opts, an_report *rep, sim_err *err)
{
    memset(rep, 0, sizeof *rep);
    int fixed_metric = -1;
    if (opts->target_metric) {
        fixed_metric = report_metric_find(opts->target_metric);
        if (fixed_metric < 0)
            return report_metric_unknown(opts->target_metric, err);
        if (!isfinite(opts->target_value))
            return sim_err_set(err, SIM_EUSAGE, "--target %s: the value must be a number",
                               opts->target_metric);
    }
    report_ctx c = {.db = db, .conn = an_db_sqlite(db), .sustain = opts->sustain};
    int ret = 0;
    if (opts->sustain < 0)
        return sim_err_set(err, SIM_EUSAGE, "--sustain %d: expected a count >= 1",
                           opts->sustain);
    if (opts->baseline != 0) {
        int exists = 0;
        ret = run_exists(&c, opts->baseline, &exists, err);
        if (ret == 0 && !exists)
            ret = sim_err_set(err, SIM_EUSAGE, "--baseline %lld: no such run in %s",
                              (long long)opts->baseline, an_db_path(db));
    }
    int64_t *ids = NULL;
    int n = 0;
    if (ret == 0)
        ret = ids_collect(&c, opts, &ids, &n, err);
    if (ret == 0 && n > 0) {
        rep->rows = calloc((size_t)n, sizeof *rep->rows);
        if (!rep->rows)
            ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    }
    for (int i = 0; ret == 0 && i < n; i++) {
        ret = row_fill(&c, opts, fixed_metric, ids[i], &rep->rows[i], err);
        if (ret == 0)
            rep->n_rows++;
    }
    if (ret == 0)
        ret = report_keys_fill(&c, opts->columns, rep, err);
    free(ids);
    report_ctx_release(&c);
    if (ret != 0)
        an_report_release(rep);
    return ret;
}

void an_report_release(an_report *rep)
{
    if (!rep)
        return;
    report_keys_release(rep);
    free(rep->rows);
    rep->rows = NULL;
    rep->n_rows = 0;
}

int an_report_print(const char *path, const an_report_opts *opts, FILE *out,
                    sim_err *err)
{
    an_db *db = an_db_open_readonly(path, err);
    if (!db)
        return err ? err->code : SIM_EDB;
    an_report rep;
    int ret = an_report_build(db, opts, &rep, err);
    if (ret == 0 && opts->staleness) {
        ret = an_report_staleness_write(db, &rep, opts->csv, out, err);
        an_report_release(&rep);
        an_db_close(db);
        return ret;
    }
    if (ret == 0 && opts->aggregate) {
        an_report_groups agg = {0};
        ret = an_report_aggregate(db, &rep, &agg, err);
        /* --compare's errors come before any output */
        if (ret == 0 && opts->compare)
            ret = an_report_compare_write(&agg, opts->compare, opts->adjust, opts->csv, NULL,
                                             err);
        if (ret == 0)
            ret = an_report_groups_write(&agg, opts->csv, out, err);
        if (ret == 0 && opts->compare)
            ret = an_report_compare_write(&agg, opts->compare, opts->adjust, opts->csv, out,
                                             err);
        an_report_groups_release(&agg);
        an_report_release(&rep);
        an_db_close(db);
        return ret;
    }
    an_db_close(db);
    if (ret != 0)
        return ret;
    ret = an_report_write(&rep, opts->csv, out, err);
    an_report_release(&rep);
    return ret;
}
