/* `dtsim plot --scaling` (see scaling.h): the scaling report's rows as
 * points, one line per value of a params key, drawn by an_plot_render. */
#include "analysis/plot.h"
#include "analysis/scaling.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"

typedef struct point {
    double x, y, sim_params;
    int line;
} point;

static int oom(sim_err *err) { return sim_err_set(err, SIM_ENOMEM, "plot: out of memory"); }

/* The params value of key for run (text copied into out; "" when absent). */
static int param_text(sqlite3_stmt *q, int64_t run, const char *key, char *out, size_t size)
{
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
    out[0] = '\0';
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(out, size, "%s", (const char *)sqlite3_column_text(q, 0));
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/* Axis value of a params value (as written, "10Gbps", or canonical in an
 * older database, "1250000000B/s"): bandwidths in Gb/s, sizes in MiB, times
 * in seconds, plain numbers as they are. */
static double axis_of(const char *key, const char *text, char *unit, size_t size)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text)
        return NAN;
    double q;
    sim_time t;
    if (strstr(key, "bandwidth")) {
        if (!*end)
            q = v; /* a bare number: bytes/s */
        else if (sim_parse_rate(text, &q, NULL) != 0)
            return NAN;
        snprintf(unit, size, " (Gb/s)");
        return q * 8 / 1e9;
    }
    if (strstr(key, "bucket")) {
        if (!*end)
            q = v; /* a bare number: bytes */
        else if (sim_parse_size(text, &q, NULL) != 0)
            return NAN;
        snprintf(unit, size, " (MiB)");
        return q / 1048576.0;
    }
    if (*end && sim_parse_time(text, &t, NULL) == 0) {
        snprintf(unit, size, " (s)");
        return (double)t / 1e9;
    }
    return v;
}

static int point_cmp(const void *pa, const void *pb)
{
    const point *a = pa, *b = pb;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return a->x < b->x ? -1 : a->x > b->x;
}

static int selected(an_db *db, const char *where, int64_t id, int *ok, sim_err *err)
{
    *ok = 1;
    if (!where || !*where)
        return 0;
    char *sql = sqlite3_mprintf("SELECT 1 FROM runs r WHERE r.id = ?1 AND (%s)", where);
    sqlite3_stmt *q = NULL;
    if (!sql)
        return oom(err);
    int rc = sqlite3_prepare_v2(an_db_sqlite(db), sql, -1, &q, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK)
        return sim_err_set(err, SIM_EUSAGE, "--where: %s", sqlite3_errmsg(an_db_sqlite(db)));
    sqlite3_bind_int64(q, 1, id);
    rc = sqlite3_step(q);
    *ok = rc == SQLITE_ROW;
    sqlite3_finalize(q);
    return rc == SQLITE_ROW || rc == SQLITE_DONE
               ? 0
               : sim_err_set(err, SIM_EUSAGE, "--where: %s", sqlite3_errmsg(an_db_sqlite(db)));
}

int an_scaling_plot_write(const char *path, const struct an_plot_opts *opts, int *n_series,
                          int *n_points, sim_err *err)
{
    const char *y = opts->y ? opts->y : "scaling";
    const char *x = opts->x ? opts->x : "n_workers";
    int yk = strcmp(y, "scaling") == 0 ? 0 : strcmp(y, "throughput") == 0 ? 1
             : strcmp(y, "step_time") == 0 ? 2 : -1;
    if (yk < 0)
        return sim_err_set(err, SIM_EUSAGE, "--y with --scaling: expected scaling, throughput "
                                            "or step_time, got '%s'", y);
    an_db *db = an_db_open_readonly(path, err);
    if (!db)
        return err ? err->code : SIM_EDB;
    an_scaling sc = {0};
    an_plot_data d = {0};
    point *pts = NULL;
    char (*lines)[128] = NULL;
    sqlite3_stmt *q = NULL;
    int np = 0, nl = 0;
    char unit[32] = "";
    int ret = an_scaling_build(db, NULL, 0, &sc, err);
    if (ret == 0 && sqlite3_prepare_v2(an_db_sqlite(db), "SELECT value FROM params WHERE "
                                       "run_id = ?1 AND key = ?2", -1, &q, NULL) != SQLITE_OK)
        ret = sim_err_set(err, SIM_EDB, "%s: %s", path, sqlite3_errmsg(an_db_sqlite(db)));
    if (ret == 0 && sc.n_rows > 0) {
        pts = calloc((size_t)sc.n_rows, sizeof *pts);
        lines = calloc((size_t)sc.n_rows, sizeof *lines);
        if (!pts || !lines)
            ret = oom(err);
    }
    for (int i = 0; ret == 0 && i < sc.n_rows; i++) {
        const an_scaling_row *r = &sc.rows[i];
        int ok = 0;
        ret = selected(db, opts->where, r->id, &ok, err);
        double yv = yk == 0 ? r->scaling : yk == 1 ? r->throughput : r->step_time;
        if (ret || !ok || isnan(yv))
            continue;
        char text[256], line[128] = "";
        point *p = &pts[np];
        p->y = yv;
        if (opts->by) {
            if (param_text(q, r->id, opts->by, text, sizeof text) < 0)
                ret = sim_err_set(err, SIM_EDB, "%s: %s", path,
                                  sqlite3_errmsg(an_db_sqlite(db)));
            snprintf(line, sizeof line, "%.120s", text[0] ? text : "-");
        }
        if (strcmp(x, "n_workers") == 0) {
            p->x = r->n_workers;
        } else if (strcmp(x, "compression") == 0) {
            if (param_text(q, r->id, "workload.sim_params", text, sizeof text) < 0)
                ret = sim_err_set(err, SIM_EDB, "%s: %s", path,
                                  sqlite3_errmsg(an_db_sqlite(db)));
            p->sim_params = strtod(text, NULL);
            p->x = NAN;
        } else {
            if (param_text(q, r->id, x, text, sizeof text) < 0)
                ret = sim_err_set(err, SIM_EDB, "%s: %s", path,
                                  sqlite3_errmsg(an_db_sqlite(db)));
            p->x = axis_of(x, text, unit, sizeof unit);
            if (isnan(p->x))
                continue;
        }
        p->line = -1;
        for (int k = 0; k < nl && p->line < 0; k++)
            if (strcmp(lines[k], line) == 0)
                p->line = k;
        if (p->line < 0) {
            snprintf(lines[nl], sizeof lines[nl], "%s", line);
            p->line = nl++;
        }
        np++;
    }
    if (ret == 0 && strcmp(x, "compression") == 0) {
        for (int k = 0; k < nl; k++) {
            double top = 0;
            for (int i = 0; i < np; i++)
                if (pts[i].line == k && pts[i].sim_params > top)
                    top = pts[i].sim_params;
            for (int i = 0; i < np; i++)
                if (pts[i].line == k)
                    pts[i].x = pts[i].sim_params > 0 ? top / pts[i].sim_params : NAN;
        }
    }
    if (ret == 0 && np == 0)
        ret = sim_err_set(err, SIM_EINPUT, "%s: no finished runs to plot", path);
    if (ret == 0) {
        qsort(pts, (size_t)np, sizeof *pts, point_cmp);
        d.series = calloc((size_t)nl, sizeof *d.series);
        if (!d.series)
            ret = oom(err);
    }
    for (int k = 0; ret == 0 && k < nl; k++) {
        an_plot_series *s = &d.series[d.n_series++];
        int cnt = 0;
        for (int i = 0; i < np; i++)
            cnt += pts[i].line == k;
        s->x = malloc((size_t)cnt * sizeof *s->x);
        s->mean = malloc((size_t)cnt * sizeof *s->mean);
        s->lo = malloc((size_t)cnt * sizeof *s->lo);
        s->hi = malloc((size_t)cnt * sizeof *s->hi);
        if (!s->x || !s->mean || !s->lo || !s->hi) {
            ret = oom(err);
            break;
        }
        for (int i = 0; i < np; i++)
            if (pts[i].line == k && !isnan(pts[i].x)) {
                s->x[s->n] = pts[i].x;
                s->mean[s->n] = s->lo[s->n] = s->hi[s->n] = pts[i].y;
                s->n++;
            }
        s->n_runs = 1;
        if (opts->by)
            snprintf(s->label, sizeof s->label, "%.120s = %.120s", opts->by, lines[k]);
        else
            snprintf(s->label, sizeof s->label, "runs");
    }
    if (ret == 0) {
        d.x_scale = d.y_scale = 1;
        snprintf(d.xlabel, sizeof d.xlabel, "%s%s",
                 strcmp(x, "compression") == 0 ? "compression ratio (largest message / message)"
                                                : x, unit);
        snprintf(d.ylabel, sizeof d.ylabel, "%s",
                 yk == 0 ? "scaling factor: throughput(n) / (n x throughput(1))"
                 : yk == 1 ? "throughput (samples per simulated second)"
                           : "simulated seconds per iteration");
        snprintf(d.title, sizeof d.title, "%s", opts->title ? opts->title : y);
        d.n_runs = np;
        ret = an_plot_render(&d, opts, err);
    }
    if (n_series)
        *n_series = ret == 0 ? d.n_series : 0;
    if (n_points)
        *n_points = ret == 0 ? np : 0;
    an_plot_release(&d);
    sqlite3_finalize(q);
    free(pts);
    free(lines);
    an_scaling_release(&sc);
    an_db_close(db);
    return ret;
}
