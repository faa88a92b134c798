/* `dtsim report --staleness`: per worker of each run, the distribution of
 * the staleness of its applied updates from the staleness_workers table
 * (every value with its count, no cap): updates, mean, median, p90, p99
 * and maximum. Quantiles are nearest-rank: the q-quantile of N updates is
 * the smallest value v with at least ceil(q N) updates at or below v (the
 * median of 1, 2, 3, 4 is 2). */
#include "analysis/report.h"
#include "analysis/report_internal.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t an_report_quantile(const int64_t *values, const int64_t *counts, int n, double q)
{
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += counts[i];
    if (total == 0)
        return -1;
    int64_t rank = (int64_t)ceil(q * (double)total);
    if (rank < 1)
        rank = 1;
    int64_t seen = 0;
    for (int i = 0; i < n; i++) {
        seen += counts[i];
        if (seen >= rank)
            return values[i];
    }
    return values[n - 1];
}

/* One worker's distribution, collected from consecutive rows. */
typedef struct dist {
    int64_t *values, *counts;
    int n, cap;
} dist;

static int dist_push(dist *d, int64_t v, int64_t c)
{
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 64;
        int64_t *nv = realloc(d->values, (size_t)cap * sizeof *nv);
        if (!nv)
            return -1;
        d->values = nv;
        int64_t *nc = realloc(d->counts, (size_t)cap * sizeof *nc);
        if (!nc)
            return -1;
        d->counts = nc;
        d->cap = cap;
    }
    d->values[d->n] = v;
    d->counts[d->n++] = c;
    return 0;
}

static void dist_write(FILE *out, int csv, int64_t run, int worker, const dist *d)
{
    int64_t total = 0;
    double sum = 0;
    for (int i = 0; i < d->n; i++) {
        total += d->counts[i];
        sum += (double)d->values[i] * (double)d->counts[i];
    }
    long long q50 = an_report_quantile(d->values, d->counts, d->n, 0.5);
    long long q90 = an_report_quantile(d->values, d->counts, d->n, 0.9);
    long long q99 = an_report_quantile(d->values, d->counts, d->n, 0.99);
    long long max = d->values[d->n - 1];
    fprintf(out, csv ? "%lld,%d,%lld,%.9g,%lld,%lld,%lld,%lld\n"
                     : "%5lld %6d %8lld %8.2f %6lld %5lld %5lld %5lld\n",
            (long long)run, worker, (long long)total, sum / (double)total, q50, q90, q99, max);
}

int an_report_staleness_write(an_db *db, const an_report *rep, int csv, FILE *out,
                              sim_err *err)
{
    report_ctx c = {.db = db, .conn = an_db_sqlite(db)};
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c.conn, "SELECT worker, staleness, count FROM staleness_workers"
                           " WHERE run_id = ?1 ORDER BY worker, staleness", -1, &s,
                           NULL) != SQLITE_OK) {
        fputs("no staleness distribution: the database was written before dtsim recorded"
              " one\n", out);
        return fflush(out) != 0 || ferror(out) ? sim_err_set(err, SIM_EIO, "report: write"
                                                             " failed") : 0;
    }
    fputs(csv ? "id,worker,updates,mean,median,p90,p99,max\n"
              : "   id worker  updates     mean median   p90   p99   max\n", out);
    dist d = {0};
    int ret = 0, rows = 0;
    for (int i = 0; ret == 0 && i < rep->n_rows; i++) {
        int64_t run = rep->rows[i].id;
        sqlite3_bind_int64(s, 1, run);
        int rc, worker = -1;
        d.n = 0;
        while (ret == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
            int w = sqlite3_column_int(s, 0);
            if (w != worker && d.n > 0) {
                dist_write(out, csv, run, worker, &d);
                rows++;
                d.n = 0;
            }
            worker = w;
            if (dist_push(&d, sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2)) < 0)
                ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        }
        if (ret == 0 && rc != SQLITE_DONE)
            ret = report_sql_error(&c, err);
        if (ret == 0 && d.n > 0) {
            dist_write(out, csv, run, worker, &d);
            rows++;
        }
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    free(d.values);
    free(d.counts);
    if (ret == 0 && rows == 0 && !csv)
        fputs("no staleness recorded (synchronous methods track none)\n", out);
    if (ret == 0 && (fflush(out) != 0 || ferror(out)))
        ret = sim_err_set(err, SIM_EIO, "report: write failed");
    return ret;
}
