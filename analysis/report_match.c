/* The report's queries: time to target (the first evaluation reaching it,
 * or the first of K consecutive ones with --sustain K), params
 * fingerprints, baseline matching and a run's own target.
 *
 * Baseline matching compares params "fingerprints": the run's params rows
 * sorted by key, without the keys a baseline may differ in (report.h),
 * joined into one string. Candidate baselines (allreduce_sgd, status
 * 'done') are loaded once per report, in id order, so the lowest id wins. */
#include "analysis/report.h"
#include "analysis/report_internal.h"

#include "config/config.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const metric_def report_metrics[N_METRICS] = {
    {"test_accuracy", 1},
    {"train_loss", 0},
    {"test_loss", 0},
};

int report_sql_error(report_ctx *c, sim_err *err)
{
    return sim_err_set(err, SIM_EDB, "%s: %s", an_db_path(c->db), sqlite3_errmsg(c->conn));
}

int report_prepare(report_ctx *c, const char *sql, sqlite3_stmt **s, sim_err *err)
{
    if (sqlite3_prepare_v2(c->conn, sql, -1, s, NULL) != SQLITE_OK)
        return report_sql_error(c, err);
    return 0;
}

int report_metric_find(const char *name)
{
    for (int i = 0; i < N_METRICS; i++)
        if (strcmp(report_metrics[i].name, name) == 0)
            return i;
    return -1;
}

int report_metric_unknown(const char *name, sim_err *err)
{
    return sim_err_set(err, SIM_EUSAGE,
                       "--target: unknown metric '%s' (expected test_accuracy, "
                       "train_loss or test_loss)", name);
}

void report_ctx_release(report_ctx *c)
{
    for (int i = 0; i < N_METRICS; i++) {
        sqlite3_finalize(c->tta[i]);
        sqlite3_finalize(c->curve[i]);
    }
    for (int i = 0; i < c->n_cands; i++)
        free(c->cands[i].fingerprint);
    free(c->cands);
    c->cands = NULL;
    c->n_cands = 0;
}

/* --sustain K: the sim_time of the first evaluation of the first K
 * consecutive evaluations that all reach target, or NAN. */
static int tta_sustained(report_ctx *c, int64_t run, int metric, double target, double *tta,
                         sim_err *err)
{
    if (!c->curve[metric]) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT sim_time, %s FROM metrics WHERE run_id = ?1 AND %s IS NOT NULL"
                 " ORDER BY sim_time, iteration",
                 report_metrics[metric].name, report_metrics[metric].name);
        int ret = report_prepare(c, sql, &c->curve[metric], err);
        if (ret != 0)
            return ret;
    }
    sqlite3_stmt *s = c->curve[metric];
    sqlite3_bind_int64(s, 1, run);
    int rc, streak = 0;
    double start = NAN;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        double v = sqlite3_column_double(s, 1);
        int reached = report_metrics[metric].at_least ? v >= target : v <= target;
        if (!reached) {
            streak = 0;
            continue;
        }
        if (streak++ == 0)
            start = sqlite3_column_double(s, 0);
        if (streak >= c->sustain) {
            *tta = start;
            break;
        }
    }
    int ret = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : report_sql_error(c, err);
    sqlite3_reset(s);
    return ret;
}

/* The first sim_time at which metric reaches target (and, with --sustain
 * K, stays there for K evaluations), or NAN. */
int report_tta(report_ctx *c, int64_t run, int metric, double target, double *tta,
                     sim_err *err)
{
    *tta = NAN;
    if (metric < 0 || isnan(target))
        return 0;
    if (c->sustain > 1)
        return tta_sustained(c, run, metric, target, tta, err);
    if (!c->tta[metric]) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT sim_time FROM metrics WHERE run_id = ?1 AND %s IS NOT NULL"
                 " AND %s %s ?2 ORDER BY sim_time, iteration LIMIT 1",
                 report_metrics[metric].name, report_metrics[metric].name,
                 report_metrics[metric].at_least ? ">=" : "<=");
        int ret = report_prepare(c, sql, &c->tta[metric], err);
        if (ret != 0)
            return ret;
    }
    sqlite3_stmt *s = c->tta[metric];
    sqlite3_bind_int64(s, 1, run);
    sqlite3_bind_double(s, 2, target);
    int rc = sqlite3_step(s);
    int ret = 0;
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        *tta = sqlite3_column_double(s, 0);
    else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        ret = report_sql_error(c, err);
    sqlite3_reset(s);
    return ret;
}

/* 1 if "section.key" is one of the common config keys (not a method's own). */
int report_common_key(const char *key)
{
    const char *dot = strchr(key, '.');
    if (!dot)
        return 0;
    size_t sl = (size_t)(dot - key);
    for (const cfg_key *k = cfg_keys; k->key; k++)
        if (strlen(k->section) == sl && strncmp(k->section, key, sl) == 0 &&
            strcmp(k->key, dot + 1) == 0)
            return 1;
    return 0;
}

/* Keys that do not count. For aggregation (seeds = 1): the seed and the
 * name. For baselines (seeds = 0), the comparison is with an allreduce_sgd
 * run of the same experiment otherwise: the method's name and own keys,
 * the logical graph (all-reduce has none), the name and the evaluated-model
 * choice do not count; the common training keys (lr, batch, momentum, ...),
 * workers, network and workload do. */
static int excluded_key(const char *key, int seeds)
{
    if (seeds)
        return strcmp(key, "experiment.seed") == 0 || strcmp(key, "experiment.name") == 0;
    return !report_common_key(key) || strcmp(key, "algorithm.name") == 0 ||
           strcmp(key, "experiment.name") == 0 || strcmp(key, "experiment.eval_model") == 0 ||
           strncmp(key, "topology.", 9) == 0;
}

/* Malloc'd fingerprint of a run's params ("" when it has none that count). */
int report_fingerprint(report_ctx *c, int64_t run, int seeds, char **out, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    int ret = report_prepare(c, "SELECT key, value FROM params WHERE run_id = ?1"
                         " ORDER BY key, value", &s, err);
    if (ret != 0)
        return ret;
    sqlite3_bind_int64(s, 1, run);
    size_t len = 0, cap = 256;
    char *buf = malloc(cap);
    if (!buf) {
        sqlite3_finalize(s);
        return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    }
    buf[0] = '\0';
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(s, 0);
        const char *value = (const char *)sqlite3_column_text(s, 1);
        if (!key || excluded_key(key, seeds))
            continue;
        if (!value)
            value = "";
        size_t need = len + strlen(key) + strlen(value) + 3;
        if (need > cap) {
            while (cap < need)
                cap *= 2;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                sqlite3_finalize(s);
                return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
            }
            buf = grown;
        }
        /* unit and record separators cannot occur in canonical values */
        len += (size_t)sprintf(buf + len, "%s\x1f%s\x1e", key, value);
    }
    if (rc != SQLITE_DONE) {
        ret = report_sql_error(c, err);
        free(buf);
        buf = NULL;
    }
    sqlite3_finalize(s);
    *out = buf;
    return ret;
}

static int fingerprint(report_ctx *c, int64_t run, char **out, sim_err *err)
{
    return report_fingerprint(c, run, 0, out, err);
}

static int candidates_load(report_ctx *c, sim_err *err)
{
    if (c->cands_loaded)
        return 0;
    sqlite3_stmt *s = NULL;
    int ret = report_prepare(c, "SELECT id FROM runs WHERE algorithm = 'allreduce_sgd'"
                         " AND status = 'done' ORDER BY id", &s, err);
    if (ret != 0)
        return ret;
    int rc;
    while (ret == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        candidate *grown = realloc(c->cands, (size_t)(c->n_cands + 1) * sizeof *grown);
        if (!grown) {
            ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
            break;
        }
        c->cands = grown;
        candidate *cand = &c->cands[c->n_cands];
        cand->id = sqlite3_column_int64(s, 0);
        ret = fingerprint(c, cand->id, &cand->fingerprint, err);
        if (ret == 0)
            c->n_cands++;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = report_sql_error(c, err);
    sqlite3_finalize(s);
    c->cands_loaded = ret == 0;
    return ret;
}

int report_baseline_auto(report_ctx *c, int64_t run, int64_t *base, sim_err *err)
{
    *base = 0;
    int ret = candidates_load(c, err);
    if (ret != 0 || c->n_cands == 0)
        return ret;
    char *fp = NULL;
    ret = fingerprint(c, run, &fp, err);
    if (ret != 0)
        return ret;
    for (int i = 0; fp[0] && i < c->n_cands; i++)
        if (strcmp(c->cands[i].fingerprint, fp) == 0) {
            *base = c->cands[i].id;
            break;
        }
    free(fp);
    return 0;
}

/* The run's own experiment.target_accuracy, NAN when absent or <= 0. */
int report_own_target(report_ctx *c, int64_t run, double *target, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    *target = NAN;
    int ret = report_prepare(c, "SELECT value FROM params WHERE run_id = ?1"
                         " AND key = 'experiment.target_accuracy'", &s, err);
    if (ret != 0)
        return ret;
    sqlite3_bind_int64(s, 1, run);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
        const char *text = (const char *)sqlite3_column_text(s, 0);
        char *end = NULL;
        double v = text ? strtod(text, &end) : 0.0;
        if (end && end != text && v > 0.0 && isfinite(v))
            *target = v;
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        ret = report_sql_error(c, err);
    }
    sqlite3_finalize(s);
    return ret;
}
