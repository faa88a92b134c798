/* `dtsim report`: per-run summary rows with time to target and speedup
 * against a baseline run (see report.h for the rules), and their text or
 * CSV rendering.
 *
 * Baseline matching compares params "fingerprints": the run's params rows
 * sorted by key, without "algorithm.*" and "experiment.name", joined into
 * one string. Candidate baselines (allreduce_sgd, status 'done') are loaded
 * once per report, in id order, so the lowest id wins. */
#include "analysis/report.h"

#include "config/config.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

typedef struct metric_def {
    const char *name;   /* a metrics column */
    int at_least;       /* 1: reached when >= target, 0: when <= */
} metric_def;

static const metric_def metric_defs[] = {
    {"test_accuracy", 1},
    {"train_loss", 0},
    {"test_loss", 0},
};
#define N_METRICS ((int)(sizeof metric_defs / sizeof metric_defs[0]))

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

static int sql_error(report_ctx *c, sim_err *err)
{
    return sim_err_set(err, SIM_EDB, "%s: %s", an_db_path(c->db), sqlite3_errmsg(c->conn));
}

static int prepare(report_ctx *c, const char *sql, sqlite3_stmt **s, sim_err *err)
{
    if (sqlite3_prepare_v2(c->conn, sql, -1, s, NULL) != SQLITE_OK)
        return sql_error(c, err);
    return 0;
}

static int metric_find(const char *name)
{
    for (int i = 0; i < N_METRICS; i++)
        if (strcmp(metric_defs[i].name, name) == 0)
            return i;
    return -1;
}

static int metric_unknown(const char *name, sim_err *err)
{
    return sim_err_set(err, SIM_EUSAGE,
                       "--target: unknown metric '%s' (expected test_accuracy, "
                       "train_loss or test_loss)", name);
}

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
    if (metric_find(name) < 0)
        return metric_unknown(name, err);
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
    int ret = prepare(c, "SELECT 1 FROM runs WHERE id = ?1", &s, err);
    if (ret != 0)
        return ret;
    sqlite3_bind_int64(s, 1, id);
    int rc = sqlite3_step(s);
    *exists = rc == SQLITE_ROW;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        ret = sql_error(c, err);
    sqlite3_finalize(s);
    return ret;
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
                 metric_defs[metric].name, metric_defs[metric].name);
        int ret = prepare(c, sql, &c->curve[metric], err);
        if (ret != 0)
            return ret;
    }
    sqlite3_stmt *s = c->curve[metric];
    sqlite3_bind_int64(s, 1, run);
    int rc, streak = 0;
    double start = NAN;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        double v = sqlite3_column_double(s, 1);
        int reached = metric_defs[metric].at_least ? v >= target : v <= target;
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
    int ret = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_error(c, err);
    sqlite3_reset(s);
    return ret;
}

/* The first sim_time at which metric reaches target (and, with --sustain
 * K, stays there for K evaluations), or NAN. */
static int tta_query(report_ctx *c, int64_t run, int metric, double target, double *tta,
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
                 metric_defs[metric].name, metric_defs[metric].name,
                 metric_defs[metric].at_least ? ">=" : "<=");
        int ret = prepare(c, sql, &c->tta[metric], err);
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
        ret = sql_error(c, err);
    sqlite3_reset(s);
    return ret;
}

/* 1 if "section.key" is one of the common config keys (not a method's own). */
static int common_key(const char *key)
{
    const char *dot = strchr(key, '.');
    if (!dot)
        return 0;
    size_t sl = (size_t)(dot - key);
    for (const sim_key *k = sim_config_keys; k->key; k++)
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
    return !common_key(key) || strcmp(key, "algorithm.name") == 0 ||
           strcmp(key, "experiment.name") == 0 || strcmp(key, "experiment.eval_model") == 0 ||
           strncmp(key, "topology.", 9) == 0;
}

/* Malloc'd fingerprint of a run's params ("" when it has none that count). */
static int fingerprint_of(report_ctx *c, int64_t run, int seeds, char **out, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    int ret = prepare(c, "SELECT key, value FROM params WHERE run_id = ?1"
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
        ret = sql_error(c, err);
        free(buf);
        buf = NULL;
    }
    sqlite3_finalize(s);
    *out = buf;
    return ret;
}

static int fingerprint(report_ctx *c, int64_t run, char **out, sim_err *err)
{
    return fingerprint_of(c, run, 0, out, err);
}

static int candidates_load(report_ctx *c, sim_err *err)
{
    if (c->cands_loaded)
        return 0;
    sqlite3_stmt *s = NULL;
    int ret = prepare(c, "SELECT id FROM runs WHERE algorithm = 'allreduce_sgd'"
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
        ret = sql_error(c, err);
    sqlite3_finalize(s);
    c->cands_loaded = ret == 0;
    return ret;
}

static int baseline_auto(report_ctx *c, int64_t run, int64_t *base, sim_err *err)
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
static int own_target(report_ctx *c, int64_t run, double *target, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    *target = NAN;
    int ret = prepare(c, "SELECT value FROM params WHERE run_id = ?1"
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
        ret = sql_error(c, err);
    }
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
    int ret = prepare(c, "SELECT name, algorithm, status, n_workers, final_train_loss,"
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
        ret = sql_error(c, err);
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
        ret = own_target(c, id, &row->target, err);
        if (ret != 0)
            return ret;
        if (!isnan(row->target))
            metric = metric_find("test_accuracy");
    }
    snprintf(row->target_metric, sizeof row->target_metric, "%s",
             metric >= 0 ? metric_defs[metric].name : "");
    ret = tta_query(c, id, metric, row->target, &row->time_to_target, err);
    if (ret != 0)
        return ret;
    row->baseline_id = opts->baseline;
    if (row->baseline_id == 0) {
        ret = baseline_auto(c, id, &row->baseline_id, err);
        if (ret != 0)
            return ret;
    }
    double base_tta = NAN;
    if (row->baseline_id != 0) {
        ret = tta_query(c, row->baseline_id, metric, row->target, &base_tta, err);
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
    int ret = prepare(c, "SELECT id FROM runs ORDER BY id", &s, err);
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
        ret = sql_error(c, err);
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
    rep->rows = NULL;
    rep->n_rows = 0;
    int fixed_metric = -1;
    if (opts->target_metric) {
        fixed_metric = metric_find(opts->target_metric);
        if (fixed_metric < 0)
            return metric_unknown(opts->target_metric, err);
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
    free(ids);
    for (int i = 0; i < N_METRICS; i++) {
        sqlite3_finalize(c.tta[i]);
        sqlite3_finalize(c.curve[i]);
    }
    for (int i = 0; i < c.n_cands; i++)
        free(c.cands[i].fingerprint);
    free(c.cands);
    if (ret != 0)
        an_report_release(rep);
    return ret;
}

void an_report_release(an_report *rep)
{
    if (!rep)
        return;
    free(rep->rows);
    rep->rows = NULL;
    rep->n_rows = 0;
}

/* ---- formatting ---- */

enum {
    COL_ID, COL_NAME, COL_ALGO, COL_STATUS, COL_WORKERS, COL_TRAIN_LOSS, COL_TEST_ACC,
    COL_SIM_TIME, COL_TARGET_METRIC, COL_TARGET, COL_TTA, COL_BASELINE, COL_SPEEDUP,
    COL_BYTES, COL_IDLE, COL_STALENESS, COL_CONSENSUS, N_COLS
};

#define CELL 160

/* Short, so that a table fits about 120 columns (the metric and its target
 * share one cell, "acc>=0.8"; see an_report_write). */
static const char *const text_headers[N_COLS] = {
    "id", "name", "algorithm", "status", "n", "loss", "acc", "sim(s)", "metric",
    "target", "tta(s)", "base", "speedup", "bytes", "idle", "stale", "consensus",
};

/* The text table's width goal, in columns. */
#define TEXT_WIDTH 120

static const char *const csv_headers[N_COLS] = {
    "id", "name", "algorithm", "status", "n_workers", "final_train_loss",
    "final_test_accuracy", "sim_time", "target_metric", "target", "time_to_target",
    "baseline_id", "speedup", "bytes_sent", "idle_fraction", "mean_staleness",
    "consensus_distance",
};

/* Text columns are left-aligned, numbers right-aligned. */
static int col_left(int col)
{
    return col == COL_NAME || col == COL_ALGO || col == COL_STATUS ||
           col == COL_TARGET_METRIC;
}

static void fmt_real(char *cell, const char *fmt, double v, const char *missing)
{
    if (isnan(v))
        snprintf(cell, CELL, "%s", missing);
    else
        snprintf(cell, CELL, fmt, v);
}

static void fmt_bytes_si(char *cell, int64_t bytes)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    if (bytes < 0) {
        snprintf(cell, CELL, "-");
        return;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1000.0 && u < 6) {
        v /= 1000.0;
        u++;
    }
    if (u == 0)
        snprintf(cell, CELL, "%lld B", (long long)bytes);
    else
        snprintf(cell, CELL, "%.2f %s", v, units[u]);
}

/* CSV field: quoted when it holds a comma, quote or line break. */
static void fmt_csv_text(char *cell, const char *text)
{
    if (!strpbrk(text, ",\"\r\n")) {
        snprintf(cell, CELL, "%s", text);
        return;
    }
    size_t j = 0;
    cell[j++] = '"';
    for (const char *p = text; *p && j + 3 < CELL; p++) {
        if (*p == '"')
            cell[j++] = '"';
        cell[j++] = *p;
    }
    cell[j++] = '"';
    cell[j] = '\0';
}

static void row_cells(const an_report_row *r, int csv, char cells[N_COLS][CELL])
{
    const char *miss = csv ? "" : "-";
    snprintf(cells[COL_ID], CELL, "%lld", (long long)r->id);
    if (csv) {
        fmt_csv_text(cells[COL_NAME], r->name);
        fmt_csv_text(cells[COL_ALGO], r->algorithm);
        fmt_csv_text(cells[COL_STATUS], r->status);
        fmt_csv_text(cells[COL_TARGET_METRIC], r->target_metric);
    } else {
        snprintf(cells[COL_NAME], CELL, "%s", r->name[0] ? r->name : "-");
        snprintf(cells[COL_ALGO], CELL, "%s", r->algorithm[0] ? r->algorithm : "-");
        snprintf(cells[COL_STATUS], CELL, "%s", r->status[0] ? r->status : "-");
        /* one cell "acc>=0.8" (COL_TARGET_METRIC is left empty) */
        cells[COL_TARGET_METRIC][0] = '\0';
    }
    snprintf(cells[COL_WORKERS], CELL, "%d", r->n_workers);
    const char *f4 = csv ? "%.9g" : "%.4f";
    const char *f3 = csv ? "%.9g" : "%.3f";
    fmt_real(cells[COL_TRAIN_LOSS], f4, r->final_train_loss, miss);
    fmt_real(cells[COL_TEST_ACC], f4, r->final_test_accuracy, miss);
    fmt_real(cells[COL_SIM_TIME], f3, r->sim_time, miss);
    if (csv || isnan(r->target) || !r->target_metric[0]) {
        fmt_real(cells[COL_TARGET], csv ? "%.9g" : "%g", r->target, miss);
    } else {
        int m = metric_find(r->target_metric);
        const char *shortname = strcmp(r->target_metric, "test_accuracy") == 0 ? "acc"
                                : strcmp(r->target_metric, "train_loss") == 0  ? "loss"
                                                                               : r->target_metric;
        snprintf(cells[COL_TARGET], CELL, "%s%s%g", shortname,
                 m >= 0 && !metric_defs[m].at_least ? "<=" : ">=", r->target);
    }
    fmt_real(cells[COL_TTA], f3, r->time_to_target, miss);
    if (r->baseline_id > 0)
        snprintf(cells[COL_BASELINE], CELL, "%lld", (long long)r->baseline_id);
    else
        snprintf(cells[COL_BASELINE], CELL, "%s", miss);
    fmt_real(cells[COL_SPEEDUP], csv ? "%.9g" : "%.2f", r->speedup, miss);
    if (csv) {
        if (r->bytes_sent >= 0)
            snprintf(cells[COL_BYTES], CELL, "%lld", (long long)r->bytes_sent);
        else
            cells[COL_BYTES][0] = '\0';
    } else {
        fmt_bytes_si(cells[COL_BYTES], r->bytes_sent);
    }
    fmt_real(cells[COL_IDLE], f3, r->idle_fraction, miss);
    fmt_real(cells[COL_STALENESS], csv ? "%.9g" : "%.2f", r->mean_staleness, miss);
    fmt_real(cells[COL_CONSENSUS], csv ? "%.9g" : "%.4g", r->consensus_distance, miss);
}

/* Text: columns of width 0 are left out; sep blanks between columns; a
 * cell wider than its column (name, algorithm) is cut with '~'. */
static void line_write(FILE *out, char cells[N_COLS][CELL], const int *width, int csv,
                       int sep)
{
    int last = N_COLS - 1;
    while (!csv && last > 0 && width[last] == 0)
        last--;
    int first = 1;
    for (int col = 0; col <= last; col++) {
        if (csv) {
            fprintf(out, "%s%s", col ? "," : "", cells[col]);
            continue;
        }
        if (width[col] == 0)
            continue;
        if (!first)
            fprintf(out, "%*s", sep, "");
        first = 0;
        char cut[CELL];
        const char *text = cells[col];
        if ((int)strlen(text) > width[col]) {
            snprintf(cut, sizeof cut, "%.*s~", width[col] - 1, text);
            text = cut;
        }
        if (col_left(col) && col != last)
            fprintf(out, "%-*s", width[col], text);
        else if (col_left(col))
            fputs(text, out);
        else
            fprintf(out, "%*s", width[col], text);
    }
    fputc('\n', out);
}

/* Fits the text table into TEXT_WIDTH columns where it can: a column that
 * is "-" in every row goes, then the separator shrinks to one blank, then
 * the name and algorithm columns are cut (to 10 characters at least).
 * Returns the separator. */
static int text_fit(char (*cells)[N_COLS][CELL], int n_rows, int *width)
{
    for (int col = COL_WORKERS; col < N_COLS; col++) {
        int missing = col != COL_TARGET_METRIC && n_rows > 0;
        for (int i = 0; i < n_rows && missing; i++)
            missing = strcmp(cells[i][col], "-") == 0;
        if (missing || col == COL_TARGET_METRIC)
            width[col] = 0;
    }
    int sep = 2;
    for (;;) {
        int total = 0, cols = 0;
        for (int col = 0; col < N_COLS; col++)
            if (width[col] > 0) {
                total += width[col];
                cols++;
            }
        total += sep * (cols - 1);
        if (total <= TEXT_WIDTH)
            return sep;
        if (sep == 2) {
            sep = 1;
            continue;
        }
        int col = width[COL_NAME] >= width[COL_ALGO] ? COL_NAME : COL_ALGO;
        if (width[col] <= 10)
            return sep;
        width[col]--;
    }
}

int an_report_write(const an_report *rep, int csv, FILE *out, sim_err *err)
{
    char (*cells)[N_COLS][CELL] = NULL;
    if (rep->n_rows > 0) {
        cells = malloc((size_t)rep->n_rows * sizeof *cells);
        if (!cells)
            return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    }
    int width[N_COLS];
    char head[N_COLS][CELL];
    for (int col = 0; col < N_COLS; col++) {
        snprintf(head[col], CELL, "%s", csv ? csv_headers[col] : text_headers[col]);
        width[col] = (int)strlen(head[col]);
    }
    for (int i = 0; i < rep->n_rows; i++) {
        row_cells(&rep->rows[i], csv, cells[i]);
        for (int col = 0; col < N_COLS; col++) {
            int w = (int)strlen(cells[i][col]);
            if (w > width[col])
                width[col] = w;
        }
    }
    int sep = csv ? 0 : text_fit(cells, rep->n_rows, width);
    line_write(out, head, width, csv, sep);
    for (int i = 0; i < rep->n_rows; i++)
        line_write(out, cells[i], width, csv, sep);
    if (rep->n_rows == 0 && !csv)
        fputs("no runs\n", out);
    free(cells);
    if (fflush(out) != 0 || ferror(out))
        return sim_err_set(err, SIM_EIO, "report: write failed");
    return 0;
}

/* ---- aggregation over seeds ---- */

static void stat_add(an_report_stat *s, double v)
{
    if (isnan(v))
        return;
    if (s->n == 0) {
        s->mean = s->min = s->max = v;
    } else {
        s->mean += v;
        s->min = fmin(s->min, v);
        s->max = fmax(s->max, v);
    }
    s->n++;
}

static void stat_finish(an_report_stat *s)
{
    if (s->n > 0)
        s->mean /= s->n;
    else
        s->mean = s->min = s->max = NAN;
}

static void group_add_row(an_report_group *g, const an_report_row *r)
{
    g->run_ids[g->n_runs++] = r->id;
    stat_add(&g->final_train_loss, r->final_train_loss);
    stat_add(&g->final_test_accuracy, r->final_test_accuracy);
    stat_add(&g->sim_time, r->sim_time);
    stat_add(&g->time_to_target, r->time_to_target);
    if (!isnan(r->time_to_target))
        g->n_reached++;
    stat_add(&g->speedup, r->speedup);
    stat_add(&g->bytes_sent, r->bytes_sent >= 0 ? (double)r->bytes_sent : NAN);
    stat_add(&g->idle_fraction, r->idle_fraction);
    stat_add(&g->mean_staleness, r->mean_staleness);
    stat_add(&g->consensus_distance, r->consensus_distance);
}

void an_report_groups_release(an_report_groups *agg)
{
    if (!agg)
        return;
    for (int i = 0; i < agg->n_groups; i++)
        free(agg->groups[i].run_ids);
    free(agg->groups);
    agg->groups = NULL;
    agg->n_groups = 0;
}

int an_report_aggregate(an_db *db, const an_report *rep, an_report_groups *agg,
                        sim_err *err)
{
    agg->groups = NULL;
    agg->n_groups = 0;
    report_ctx c = {.db = db, .conn = an_db_sqlite(db)};
    char **fps = calloc((size_t)rep->n_rows + 1, sizeof *fps);
    int *of = calloc((size_t)rep->n_rows + 1, sizeof *of);
    int ret = fps && of ? 0 : sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    if (ret == 0 && rep->n_rows > 0) {
        agg->groups = calloc((size_t)rep->n_rows, sizeof *agg->groups);
        if (!agg->groups)
            ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    }
    for (int i = 0; ret == 0 && i < rep->n_rows; i++) {
        const an_report_row *r = &rep->rows[i];
        of[i] = -1;
        if (strcmp(r->status, "done") != 0 && strcmp(r->status, "diverged") != 0)
            continue;
        ret = fingerprint_of(&c, r->id, 1, &fps[i], err);
        if (ret != 0)
            break;
        for (int j = 0; j < i && of[i] < 0; j++)
            if (fps[j] && of[j] >= 0 && strcmp(fps[j], fps[i]) == 0 &&
                strcmp(rep->rows[j].target_metric, r->target_metric) == 0)
                of[i] = of[j];
        if (of[i] < 0) {
            an_report_group *g = &agg->groups[agg->n_groups];
            g->run_ids = malloc((size_t)rep->n_rows * sizeof *g->run_ids);
            if (!g->run_ids) {
                ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
                break;
            }
            of[i] = agg->n_groups++;
            snprintf(g->name, sizeof g->name, "%s", r->name);
            snprintf(g->algorithm, sizeof g->algorithm, "%s", r->algorithm);
            snprintf(g->target_metric, sizeof g->target_metric, "%s", r->target_metric);
            g->n_workers = r->n_workers;
            g->target = r->target;
        }
        group_add_row(&agg->groups[of[i]], r);
    }
    for (int i = 0; i < agg->n_groups; i++) {
        an_report_stat *st[] = {&agg->groups[i].final_train_loss,
                                &agg->groups[i].final_test_accuracy, &agg->groups[i].sim_time,
                                &agg->groups[i].time_to_target, &agg->groups[i].speedup,
                                &agg->groups[i].bytes_sent, &agg->groups[i].idle_fraction,
                                &agg->groups[i].mean_staleness,
                                &agg->groups[i].consensus_distance};
        for (size_t k = 0; k < sizeof st / sizeof st[0]; k++)
            stat_finish(st[k]);
    }
    for (int i = 0; fps && i < rep->n_rows; i++)
        free(fps[i]);
    free(fps);
    free(of);
    if (ret != 0)
        an_report_groups_release(agg);
    return ret;
}

enum {
    AG_IDS, AG_SEEDS, AG_NAME, AG_ALGO, AG_WORKERS, AG_TRAIN_LOSS, AG_TEST_ACC, AG_SIM_TIME,
    AG_METRIC, AG_TARGET, AG_TTA, AG_REACHED, AG_SPEEDUP, AG_BYTES, AG_IDLE, AG_STALENESS,
    AG_CONSENSUS, N_AG
};

static const char *const ag_headers[N_AG] = {
    "runs", "seeds", "name", "algorithm", "n", "loss", "acc", "sim(s)", "metric",
    "target", "tta(s)", "reached", "speedup", "bytes", "idle", "stale", "consensus",
};

/* "mean [min, max]", or the mean alone when the runs agree or there is one. */
static void fmt_stat(char *cell, const char *fmt, const an_report_stat *s)
{
    char a[48], b[48], m[48];
    if (s->n == 0) {
        snprintf(cell, CELL, "-");
        return;
    }
    snprintf(m, sizeof m, fmt, s->mean);
    snprintf(a, sizeof a, fmt, s->min);
    snprintf(b, sizeof b, fmt, s->max);
    if (s->n == 1 || strcmp(a, b) == 0)
        snprintf(cell, CELL, "%s", m);
    else
        snprintf(cell, CELL, "%s [%s, %s]", m, a, b);
}

static void fmt_stat_bytes(char *cell, const an_report_stat *s)
{
    char a[CELL], b[CELL], m[CELL];
    if (s->n == 0) {
        snprintf(cell, CELL, "-");
        return;
    }
    fmt_bytes_si(m, (int64_t)llround(s->mean));
    fmt_bytes_si(a, (int64_t)llround(s->min));
    fmt_bytes_si(b, (int64_t)llround(s->max));
    if (s->n == 1 || strcmp(a, b) == 0)
        snprintf(cell, CELL, "%.40s", m);
    else
        snprintf(cell, CELL, "%.40s [%.40s, %.40s]", m, a, b);
}

static void group_ids(const an_report_group *g, char *cell, const char *sep)
{
    size_t len = 0;
    cell[0] = '\0';
    for (int i = 0; i < g->n_runs; i++) {
        int w = snprintf(cell + len, CELL - len, "%s%lld", i ? sep : "",
                         (long long)g->run_ids[i]);
        if (w < 0 || len + (size_t)w + 5 >= CELL) {
            snprintf(cell + len, CELL - len, "...");
            return;
        }
        len += (size_t)w;
    }
}

static void group_cells(const an_report_group *g, char cells[N_AG][CELL])
{
    group_ids(g, cells[AG_IDS], ",");
    snprintf(cells[AG_SEEDS], CELL, "%d", g->n_runs);
    snprintf(cells[AG_NAME], CELL, "%s", g->name[0] ? g->name : "-");
    snprintf(cells[AG_ALGO], CELL, "%s", g->algorithm[0] ? g->algorithm : "-");
    snprintf(cells[AG_WORKERS], CELL, "%d", g->n_workers);
    fmt_stat(cells[AG_TRAIN_LOSS], "%.4f", &g->final_train_loss);
    fmt_stat(cells[AG_TEST_ACC], "%.4f", &g->final_test_accuracy);
    fmt_stat(cells[AG_SIM_TIME], "%.3f", &g->sim_time);
    snprintf(cells[AG_METRIC], CELL, "%s", g->target_metric[0] ? g->target_metric : "-");
    fmt_real(cells[AG_TARGET], "%g", g->target, "-");
    fmt_stat(cells[AG_TTA], "%.3f", &g->time_to_target);
    if (g->target_metric[0])
        snprintf(cells[AG_REACHED], CELL, "%d/%d", g->n_reached, g->n_runs);
    else
        snprintf(cells[AG_REACHED], CELL, "-");
    fmt_stat(cells[AG_SPEEDUP], "%.2f", &g->speedup);
    fmt_stat_bytes(cells[AG_BYTES], &g->bytes_sent);
    fmt_stat(cells[AG_IDLE], "%.3f", &g->idle_fraction);
    fmt_stat(cells[AG_STALENESS], "%.2f", &g->mean_staleness);
    fmt_stat(cells[AG_CONSENSUS], "%.4g", &g->consensus_distance);
}

static void csv_stat(FILE *out, const an_report_stat *s)
{
    if (s->n == 0)
        fputs(",,", out);
    else
        fprintf(out, "%.9g,%.9g,%.9g", s->mean, s->min, s->max);
}

static void groups_csv(const an_report_groups *agg, FILE *out)
{
    static const char *const stats[] = {"final_train_loss", "final_test_accuracy",
                                        "sim_time", "time_to_target", "speedup",
                                        "bytes_sent", "idle_fraction", "mean_staleness",
                                        "consensus_distance"};
    fputs("run_ids,n_runs,name,algorithm,n_workers,target_metric,target,n_reached", out);
    for (size_t k = 0; k < sizeof stats / sizeof stats[0]; k++)
        fprintf(out, ",%s_mean,%s_min,%s_max", stats[k], stats[k], stats[k]);
    fputc('\n', out);
    for (int i = 0; i < agg->n_groups; i++) {
        const an_report_group *g = &agg->groups[i];
        char ids[CELL], name[CELL], algo[CELL], metric[CELL];
        group_ids(g, ids, ";");
        fmt_csv_text(name, g->name);
        fmt_csv_text(algo, g->algorithm);
        fmt_csv_text(metric, g->target_metric);
        fprintf(out, "%s,%d,%s,%s,%d,%s,", ids, g->n_runs, name, algo, g->n_workers, metric);
        if (!isnan(g->target))
            fprintf(out, "%.9g", g->target);
        fprintf(out, ",%d", g->n_reached);
        const an_report_stat *st[] = {&g->final_train_loss, &g->final_test_accuracy,
                                      &g->sim_time, &g->time_to_target, &g->speedup,
                                      &g->bytes_sent, &g->idle_fraction, &g->mean_staleness,
                                      &g->consensus_distance};
        for (size_t k = 0; k < sizeof st / sizeof st[0]; k++) {
            fputc(',', out);
            csv_stat(out, st[k]);
        }
        fputc('\n', out);
    }
}

int an_report_groups_write(const an_report_groups *agg, int csv, FILE *out, sim_err *err)
{
    if (csv) {
        groups_csv(agg, out);
    } else {
        char (*cells)[N_AG][CELL] = calloc((size_t)agg->n_groups + 1, sizeof *cells);
        if (!cells)
            return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        int width[N_AG];
        for (int col = 0; col < N_AG; col++) {
            snprintf(cells[0][col], CELL, "%s", ag_headers[col]);
            width[col] = (int)strlen(ag_headers[col]);
        }
        for (int i = 0; i < agg->n_groups; i++) {
            group_cells(&agg->groups[i], cells[i + 1]);
            for (int col = 0; col < N_AG; col++)
                if ((int)strlen(cells[i + 1][col]) > width[col])
                    width[col] = (int)strlen(cells[i + 1][col]);
        }
        /* columns that are "-" in every group are left out (mean [min, max]
         * cells make this table wider than the per-run one; --csv has it all) */
        int last = -1;
        for (int col = 0; col < N_AG; col++) {
            int missing = col >= AG_WORKERS && agg->n_groups > 0;
            for (int i = 1; i <= agg->n_groups && missing; i++)
                missing = strcmp(cells[i][col], "-") == 0;
            if (missing)
                width[col] = 0;
            else
                last = col;
        }
        for (int i = 0; i <= agg->n_groups; i++) {
            for (int col = 0; col <= last; col++) {
                if (width[col] == 0)
                    continue;
                int left = col == AG_IDS || col == AG_NAME || col == AG_ALGO ||
                           col == AG_METRIC;
                if (col == last && left)
                    fputs(cells[i][col], out);
                else if (col == last)
                    fprintf(out, "%*s", width[col], cells[i][col]);
                else
                    fprintf(out, left ? "%-*s  " : "%*s  ", width[col], cells[i][col]);
            }
            fputc('\n', out);
        }
        if (agg->n_groups == 0)
            fputs("no finished runs\n", out);
        free(cells);
    }
    if (fflush(out) != 0 || ferror(out))
        return sim_err_set(err, SIM_EIO, "report: write failed");
    return 0;
}

int an_report_print(const char *path, const an_report_opts *opts, FILE *out,
                    sim_err *err)
{
    an_db *db = an_db_open_readonly(path, err);
    if (!db)
        return err ? err->code : SIM_EDB;
    an_report rep;
    int ret = an_report_build(db, opts, &rep, err);
    if (ret == 0 && opts->aggregate) {
        an_report_groups agg = {0};
        ret = an_report_aggregate(db, &rep, &agg, err);
        if (ret == 0)
            ret = an_report_groups_write(&agg, opts->csv, out, err);
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
