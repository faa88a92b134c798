/* The per-run report as an aligned text table (short headers, fitted into
 * about 120 columns) or CSV (full column names, all digits). */
#include "analysis/report.h"
#include "analysis/report_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    COL_ID, COL_NAME, COL_ALGO, COL_STATUS, COL_WORKERS, COL_TRAIN_LOSS, COL_TEST_ACC,
    COL_SIM_TIME, COL_TARGET_METRIC, COL_TARGET, COL_TTA, COL_BASELINE, COL_SPEEDUP,
    COL_BYTES, COL_IDLE, COL_STALENESS, COL_CONSENSUS, N_COLS
};

/* The cells of a line: the fixed columns, then the report's key columns
 * (shown after the algorithm in text, last in CSV so that the fixed
 * columns keep their places). */
#define N_ALL (N_COLS + AN_REPORT_MAX_KEYS)

/* The cell shown at position pos of a line with n_keys key columns. */
static int col_at(int pos, int n_keys, int csv)
{
    if (csv) /* the key columns last, after the fixed ones */
        return pos;
    if (pos <= COL_ALGO)
        return pos;
    if (pos <= COL_ALGO + n_keys)
        return N_COLS + pos - COL_ALGO - 1;
    return pos - n_keys;
}

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
           col == COL_TARGET_METRIC || col >= N_COLS;
}

void report_fmt_real(char *cell, const char *fmt, double v, const char *missing)
{
    if (isnan(v))
        snprintf(cell, REPORT_CELL, "%s", missing);
    else
        snprintf(cell, REPORT_CELL, fmt, v);
}

void report_fmt_bytes(char *cell, int64_t bytes)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    if (bytes < 0) {
        snprintf(cell, REPORT_CELL, "-");
        return;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1000.0 && u < 6) {
        v /= 1000.0;
        u++;
    }
    if (u == 0)
        snprintf(cell, REPORT_CELL, "%lld B", (long long)bytes);
    else
        snprintf(cell, REPORT_CELL, "%.2f %s", v, units[u]);
}

/* CSV field: quoted when it holds a comma, quote or line break. */
void report_fmt_csv(char *cell, const char *text)
{
    if (!strpbrk(text, ",\"\r\n")) {
        snprintf(cell, REPORT_CELL, "%s", text);
        return;
    }
    size_t j = 0;
    cell[j++] = '"';
    for (const char *p = text; *p && j + 3 < REPORT_CELL; p++) {
        if (*p == '"')
            cell[j++] = '"';
        cell[j++] = *p;
    }
    cell[j++] = '"';
    cell[j] = '\0';
}

void report_fmt_keys(char (*cells)[REPORT_CELL], char *const *values, int n_keys, int csv)
{
    for (int k = 0; k < n_keys; k++) {
        if (csv)
            report_fmt_csv(cells[k], values[k]);
        else
            snprintf(cells[k], REPORT_CELL, "%s", values[k][0] ? values[k] : "-");
    }
}

static void row_cells(const an_report_row *r, int csv, char cells[N_ALL][REPORT_CELL])
{
    const char *miss = csv ? "" : "-";
    snprintf(cells[COL_ID], REPORT_CELL, "%lld", (long long)r->id);
    if (csv) {
        report_fmt_csv(cells[COL_NAME], r->name);
        report_fmt_csv(cells[COL_ALGO], r->algorithm);
        report_fmt_csv(cells[COL_STATUS], r->status);
        report_fmt_csv(cells[COL_TARGET_METRIC], r->target_metric);
    } else {
        snprintf(cells[COL_NAME], REPORT_CELL, "%s", r->name[0] ? r->name : "-");
        snprintf(cells[COL_ALGO], REPORT_CELL, "%s", r->algorithm[0] ? r->algorithm : "-");
        snprintf(cells[COL_STATUS], REPORT_CELL, "%s", r->status[0] ? r->status : "-");
        /* one cell "acc>=0.8" (COL_TARGET_METRIC is left empty) */
        cells[COL_TARGET_METRIC][0] = '\0';
    }
    snprintf(cells[COL_WORKERS], REPORT_CELL, "%d", r->n_workers);
    const char *f4 = csv ? "%.9g" : "%.4f";
    const char *f3 = csv ? "%.9g" : "%.3f";
    report_fmt_real(cells[COL_TRAIN_LOSS], f4, r->final_train_loss, miss);
    report_fmt_real(cells[COL_TEST_ACC], f4, r->final_test_accuracy, miss);
    report_fmt_real(cells[COL_SIM_TIME], f3, r->sim_time, miss);
    if (csv || isnan(r->target) || !r->target_metric[0]) {
        report_fmt_real(cells[COL_TARGET], csv ? "%.9g" : "%g", r->target, miss);
    } else {
        int m = report_metric_find(r->target_metric);
        const char *shortname = strcmp(r->target_metric, "test_accuracy") == 0 ? "acc"
                                : strcmp(r->target_metric, "train_loss") == 0  ? "loss"
                                                                               : r->target_metric;
        snprintf(cells[COL_TARGET], REPORT_CELL, "%s%s%g", shortname,
                 m >= 0 && !report_metrics[m].at_least ? "<=" : ">=", r->target);
    }
    report_fmt_real(cells[COL_TTA], f3, r->time_to_target, miss);
    if (r->baseline_id > 0)
        snprintf(cells[COL_BASELINE], REPORT_CELL, "%lld", (long long)r->baseline_id);
    else
        snprintf(cells[COL_BASELINE], REPORT_CELL, "%s", miss);
    report_fmt_real(cells[COL_SPEEDUP], csv ? "%.9g" : "%.2f", r->speedup, miss);
    if (csv) {
        if (r->bytes_sent >= 0)
            snprintf(cells[COL_BYTES], REPORT_CELL, "%lld", (long long)r->bytes_sent);
        else
            cells[COL_BYTES][0] = '\0';
    } else {
        report_fmt_bytes(cells[COL_BYTES], r->bytes_sent);
    }
    report_fmt_real(cells[COL_IDLE], f3, r->idle_fraction, miss);
    report_fmt_real(cells[COL_STALENESS], csv ? "%.9g" : "%.2f", r->mean_staleness, miss);
    report_fmt_real(cells[COL_CONSENSUS], csv ? "%.9g" : "%.4g", r->consensus_distance, miss);
}

/* Text: columns of width 0 are left out; sep blanks between columns; a
 * cell wider than its column (name, algorithm) is cut with '~'. */
static void line_write(FILE *out, char cells[N_ALL][REPORT_CELL], const int *width, int csv,
                       int sep, int n_keys)
{
    int last = N_COLS + n_keys - 1;
    while (!csv && last > 0 && width[col_at(last, n_keys, csv)] == 0)
        last--;
    int first = 1;
    for (int pos = 0; pos <= last; pos++) {
        int col = col_at(pos, n_keys, csv);
        if (csv) {
            fprintf(out, "%s%s", pos ? "," : "", cells[col]);
            continue;
        }
        if (width[col] == 0)
            continue;
        if (!first)
            fprintf(out, "%*s", sep, "");
        first = 0;
        char cut[REPORT_CELL];
        const char *text = cells[col];
        if ((int)strlen(text) > width[col]) {
            snprintf(cut, sizeof cut, "%.*s~", width[col] - 1, text);
            text = cut;
        }
        if (col_left(col) && pos != last)
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
 * the name and algorithm columns are cut (to 10 characters at least). Key
 * columns are never cut and do not count: they widen the table.
 * Returns the separator. */
static int text_fit(char (*cells)[N_ALL][REPORT_CELL], int n_rows, int *width)
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
    char (*cells)[N_ALL][REPORT_CELL] = NULL;
    if (rep->n_rows > 0) {
        cells = calloc((size_t)rep->n_rows, sizeof *cells);
        if (!cells)
            return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    }
    int width[N_ALL] = {0};
    char head[N_ALL][REPORT_CELL];
    int n_keys = rep->n_keys;
    for (int col = 0; col < N_COLS + n_keys; col++) {
        if (col < N_COLS)
            snprintf(head[col], REPORT_CELL, "%s", csv ? csv_headers[col] : text_headers[col]);
        else if (csv)
            report_fmt_csv(head[col], rep->keys[col - N_COLS]);
        else
            snprintf(head[col], REPORT_CELL, "%s",
                     report_key_header(rep->keys, n_keys, col - N_COLS));
        width[col] = (int)strlen(head[col]);
    }
    for (int i = 0; i < rep->n_rows; i++) {
        row_cells(&rep->rows[i], csv, cells[i]);
        if (n_keys > 0)
            report_fmt_keys(&cells[i][N_COLS], &rep->key_values[(size_t)i * n_keys], n_keys,
                            csv);
        for (int col = 0; col < N_COLS + n_keys; col++) {
            int w = (int)strlen(cells[i][col]);
            if (w > width[col])
                width[col] = w;
        }
    }
    int sep = csv ? 0 : text_fit(cells, rep->n_rows, width);
    line_write(out, head, width, csv, sep, n_keys);
    for (int i = 0; i < rep->n_rows; i++)
        line_write(out, cells[i], width, csv, sep, n_keys);
    if (rep->n_rows == 0 && !csv)
        fputs("no runs\n", out);
    free(cells);
    if (fflush(out) != 0 || ferror(out))
        return sim_err_set(err, SIM_EIO, "report: write failed");
    return 0;
}
