/* `dtsim report`: per-run summary rows with time to target and speedup
 * against a baseline run (see report.h for the rules), and their text or
 * CSV rendering.
 *
 * Baseline matching compares params "fingerprints": the run's params rows
 * sorted by key, without "algorithm.*" and "experiment.name", joined into
 * one string. Candidate baselines (allreduce_sgd, status 'done') are loaded
 * once per report, in id order, so the lowest id wins. */
#include "analysis/report.h"

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

/* The first sim_time at which metric reaches target, or NAN. */
static int tta_query(report_ctx *c, int64_t run, int metric, double target, double *tta,
                     sim_err *err)
{
    *tta = NAN;
    if (metric < 0 || isnan(target))
        return 0;
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

static int excluded_key(const char *key)
{
    return strncmp(key, "algorithm.", 10) == 0 || strcmp(key, "experiment.name") == 0;
}

/* Malloc'd fingerprint of a run's params ("" when it has none that count). */
static int fingerprint(report_ctx *c, int64_t run, char **out, sim_err *err)
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
        if (!key || excluded_key(key))
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
    report_ctx c = {.db = db, .conn = an_db_sqlite(db)};
    int ret = 0;
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
    for (int i = 0; i < N_METRICS; i++)
        sqlite3_finalize(c.tta[i]);
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

static const char *const text_headers[N_COLS] = {
    "id", "name", "algorithm", "status", "workers", "train_loss", "test_acc",
    "sim_time(s)", "metric", "target", "tta(s)", "baseline", "speedup", "bytes",
    "idle", "staleness", "consensus",
};

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
        snprintf(cells[COL_TARGET_METRIC], CELL, "%s",
                 r->target_metric[0] ? r->target_metric : "-");
    }
    snprintf(cells[COL_WORKERS], CELL, "%d", r->n_workers);
    const char *f4 = csv ? "%.9g" : "%.4f";
    const char *f3 = csv ? "%.9g" : "%.3f";
    fmt_real(cells[COL_TRAIN_LOSS], f4, r->final_train_loss, miss);
    fmt_real(cells[COL_TEST_ACC], f4, r->final_test_accuracy, miss);
    fmt_real(cells[COL_SIM_TIME], f3, r->sim_time, miss);
    fmt_real(cells[COL_TARGET], csv ? "%.9g" : "%g", r->target, miss);
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

static void line_write(FILE *out, char cells[N_COLS][CELL], const int *width, int csv)
{
    for (int col = 0; col < N_COLS; col++) {
        if (csv) {
            fprintf(out, "%s%s", col ? "," : "", cells[col]);
        } else {
            int last = col == N_COLS - 1;
            if (col_left(col) && !last)
                fprintf(out, "%-*s", width[col], cells[col]);
            else if (col_left(col))
                fputs(cells[col], out);
            else
                fprintf(out, "%*s", width[col], cells[col]);
            if (!last)
                fputs("  ", out);
        }
    }
    fputc('\n', out);
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
    line_write(out, head, width, csv);
    for (int i = 0; i < rep->n_rows; i++)
        line_write(out, cells[i], width, csv);
    if (rep->n_rows == 0 && !csv)
        fputs("no runs\n", out);
    free(cells);
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
    an_db_close(db);
    if (ret != 0)
        return ret;
    ret = an_report_write(&rep, opts->csv, out, err);
    an_report_release(&rep);
    return ret;
}
