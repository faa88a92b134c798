/* `dtsim plot`, the data half: runs -> groups -> mean and min-max curves.
 * Plain SQL and arithmetic, so that the tests can check the curves; the
 * drawing is in plot_render.c.
 *
 * Groups are formed in run-id order; a group's runs are interpolated onto
 * the union of their x values over the range all of them cover, so the
 * mean never extrapolates a run past its last evaluation. */
#include "analysis/plot.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct column_def {
    const char *name;
    const char *label;  /* axis label without unit */
    const char *unit;   /* "" = none; "t" seconds, "B" bytes and "#" counts are
                           scaled to the data (ms, MB, millions) */
} column_def;

static const column_def columns[] = {
    {"sim_time", "simulated time", "t"},
    {"iteration", "iteration", ""},
    {"epoch", "epoch", ""},
    {"samples", "training samples", "#"},
    {"bytes_sent", "data sent, all workers", "B"},
    {"train_loss", "training loss", ""},
    {"test_loss", "test loss", ""},
    {"test_accuracy", "test accuracy", ""},
    {"consensus_distance", "consensus distance", ""},
};
#define N_COLUMNS ((int)(sizeof columns / sizeof columns[0]))
#define N_X_COLUMNS 5   /* the first five may be x */

static const column_def *column_find(const char *name, int n)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(columns[i].name, name) == 0)
            return &columns[i];
    return NULL;
}

/* ---- building the curves ------------------------------------------------ */

typedef struct member {
    double *x, *y;
    int n;
} member;

typedef struct subgroup {
    char *byval;        /* value of `by` ("" when none) */
    char *fp;           /* params without seed and name: "k\x1fv\x1e..." */
    int64_t *ids;
    int n_ids;
} subgroup;

typedef struct build_ctx {
    an_db *db;
    sqlite3 *conn;
    const an_plot_opts *o;
    const column_def *xc, *yc;
    subgroup *groups;
    int n_groups;
    const char *series;   /* --y series:NAME: the series' name, else NULL */
    column_def series_col;
    sqlite3_stmt *run_end; /* series: the run's last x (runs.sim_time or iterations) */
} build_ctx;

static int sql_fail(build_ctx *c, sim_err *err)
{
    return sim_err_set(err, SIM_EDB, "%s: %s", an_db_path(c->db), sqlite3_errmsg(c->conn));
}

static int nomem(sim_err *err)
{
    return sim_err_set(err, SIM_ENOMEM, "plot: out of memory");
}

static int is_runs_column(build_ctx *c, const char *name, int *found, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    *found = 0;
    if (sqlite3_prepare_v2(c->conn, "SELECT name FROM pragma_table_info('runs')", -1, &s,
                           NULL) != SQLITE_OK)
        return sql_fail(c, err);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *col = (const char *)sqlite3_column_text(s, 0);
        if (col && strcmp(col, name) == 0)
            *found = 1;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : sql_fail(c, err);
}

static int is_params_key(build_ctx *c, const char *key, int *found, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->conn, "SELECT 1 FROM params WHERE key = ?1 LIMIT 1", -1, &s,
                           NULL) != SQLITE_OK)
        return sql_fail(c, err);
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    *found = rc == SQLITE_ROW;
    sqlite3_finalize(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(c, err);
}

/* The SQL expression giving a run's `by` value (malloc'd). */
static int by_expr(build_ctx *c, char **expr, int *param, sim_err *err)
{
    const char *by = c->o->by;
    *param = 0;
    if (!by || !*by) {
        *expr = strdup("''");
        return *expr ? 0 : nomem(err);
    }
    for (const char *p = by; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.')
            return sim_err_set(err, SIM_EUSAGE, "--by '%s': not a runs column or params key",
                               by);
    int found = 0;
    int ret = strchr(by, '.') ? is_params_key(c, by, &found, err)
                              : is_runs_column(c, by, &found, err);
    if (ret != 0)
        return ret;
    if (!found)
        return sim_err_set(err, SIM_EUSAGE,
                           "--by '%s': not a runs column (algorithm, n_workers, seed, ...) "
                           "or params key (network.topology, algorithm.lr, ...) of %s",
                           by, an_db_path(c->db));
    *param = strchr(by, '.') != NULL;
    *expr = strdup(*param ? "(SELECT value FROM params p WHERE p.run_id = r.id"
                            " AND p.key = ?1 LIMIT 1)"
                          : by);
    if (*expr && !*param) {
        free(*expr);
        *expr = NULL;
        if (asprintf(expr, "r.\"%s\"", by) < 0)
            *expr = NULL;
    }
    return *expr ? 0 : nomem(err);
}

static int append(char **buf, size_t *len, size_t *cap, const char *a, const char *b)
{
    size_t need = *len + strlen(a) + strlen(b) + 3;
    if (need > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < need)
            nc *= 2;
        char *g = realloc(*buf, nc);
        if (!g)
            return -1;
        *buf = g;
        *cap = nc;
    }
    *len += (size_t)sprintf(*buf + *len, "%s\x1f%s\x1e", a, b);
    return 0;
}

/* Params of a run without experiment.seed and experiment.name. */
static int fingerprint(build_ctx *c, sqlite3_stmt *s, int64_t id, char **out, sim_err *err)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    sqlite3_bind_int64(s, 1, id);
    int rc, ret = 0;
    if (append(&buf, &len, &cap, "", "") < 0)
        ret = nomem(err);
    len = 0;
    buf[0] = '\0';
    while (ret == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(s, 0);
        const char *v = (const char *)sqlite3_column_text(s, 1);
        if (!k || strcmp(k, "experiment.seed") == 0 || strcmp(k, "experiment.name") == 0)
            continue;
        if (append(&buf, &len, &cap, k, v ? v : "") < 0)
            ret = nomem(err);
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = sql_fail(c, err);
    sqlite3_reset(s);
    if (ret != 0) {
        free(buf);
        buf = NULL;
    }
    *out = buf;
    return ret;
}

static int group_add(build_ctx *c, int64_t id, const char *byval, char *fp, sim_err *err)
{
    subgroup *g = NULL;
    for (int i = 0; i < c->n_groups && !g; i++)
        if (strcmp(c->groups[i].byval, byval) == 0 && strcmp(c->groups[i].fp, fp) == 0)
            g = &c->groups[i];
    if (g) {
        free(fp);
    } else {
        subgroup *grown = realloc(c->groups, (size_t)(c->n_groups + 1) * sizeof *grown);
        if (!grown) {
            free(fp);
            return nomem(err);
        }
        c->groups = grown;
        g = &c->groups[c->n_groups++];
        *g = (subgroup){.byval = strdup(byval), .fp = fp};
        if (!g->byval)
            return nomem(err);
    }
    int64_t *ids = realloc(g->ids, (size_t)(g->n_ids + 1) * sizeof *ids);
    if (!ids)
        return nomem(err);
    g->ids = ids;
    g->ids[g->n_ids++] = id;
    return 0;
}

static int runs_collect(build_ctx *c, sim_err *err)
{
    char *expr = NULL, *sql = NULL;
    int param = 0;
    int ret = by_expr(c, &expr, &param, err);
    if (ret != 0)
        return ret;
    const char *where = c->o->where && *c->o->where ? c->o->where : "1";
    if (asprintf(&sql, "SELECT r.id, %s FROM runs r WHERE r.status IN ('done', 'diverged')"
                       " AND (%s) ORDER BY r.id", expr, where) < 0) {
        free(expr);
        return nomem(err);
    }
    free(expr);
    sqlite3_stmt *s = NULL, *ps = NULL;
    const char *tail = NULL;
    if (sqlite3_prepare_v2(c->conn, sql, -1, &s, &tail) != SQLITE_OK || (tail && *tail)) {
        ret = sim_err_set(err, SIM_EUSAGE, "--where '%s': %s", where,
                          s ? "more than one statement" : sqlite3_errmsg(c->conn));
        sqlite3_finalize(s);
        free(sql);
        return ret;
    }
    free(sql);
    if (param)
        sqlite3_bind_text(s, 1, c->o->by, -1, SQLITE_STATIC);
    if (sqlite3_prepare_v2(c->conn, "SELECT key, value FROM params WHERE run_id = ?1"
                                    " ORDER BY key, value", -1, &ps, NULL) != SQLITE_OK)
        ret = sql_fail(c, err);
    int rc = SQLITE_DONE;
    while (ret == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        const char *bv = (const char *)sqlite3_column_text(s, 1);
        char byval[256];
        snprintf(byval, sizeof byval, "%s", bv ? bv : "(none)");
        char *fp = NULL;
        ret = fingerprint(c, ps, id, &fp, err);
        if (ret == 0)
            ret = group_add(c, id, byval, fp, err);
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = sim_err_set(err, SIM_EUSAGE, "--where '%s': %s", where, sqlite3_errmsg(c->conn));
    sqlite3_finalize(s);
    sqlite3_finalize(ps);
    if (ret == 0 && c->n_groups == 0)
        ret = sim_err_set(err, SIM_EINPUT, "%s: no finished runs%s%s", an_db_path(c->db),
                          c->o->where ? " match --where " : "", c->o->where ? where : "");
    return ret;
}

/* Loads one run's (x, y) points: finite (positive on a log axis), sorted by
 * x, one point per x (the last one). */
static int member_push(member *m, int *cap, double x, double y, sim_err *err)
{
    if (m->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        double *gx = realloc(m->x, (size_t)*cap * sizeof *gx);
        if (gx)
            m->x = gx;
        double *gy = gx ? realloc(m->y, (size_t)*cap * sizeof *gy) : NULL;
        if (gy)
            m->y = gy;
        if (!gx || !gy)
            return nomem(err);
    }
    m->x[m->n] = x;
    m->y[m->n++] = y;
    return 0;
}

static int member_load(build_ctx *c, sqlite3_stmt *s, int64_t id, member *m, sim_err *err)
{
    int cap = 0, rc, ret = 0;
    m->n = 0;
    m->x = m->y = NULL;
    sqlite3_bind_int64(s, 1, id);
    while (ret == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        double x = sqlite3_column_double(s, 0), y = sqlite3_column_double(s, 1);
        if (!isfinite(x) || !isfinite(y) || (c->o->logx && x <= 0) || (c->o->logy && y <= 0))
            continue;
        if (m->n > 0 && x <= m->x[m->n - 1]) {
            m->y[m->n - 1] = y;  /* same x (ordered query): keep the later row */
            continue;
        }
        if (c->series && m->n > 0 && y != m->y[m->n - 1]) {
            /* a series row holds from its x to the next row's: a step */
            double xs = nextafter(x, -INFINITY);
            if (xs > m->x[m->n - 1] && (ret = member_push(m, &cap, xs, m->y[m->n - 1], err)))
                break;
        }
        if ((ret = member_push(m, &cap, x, y, err)))
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = sql_fail(c, err);
    sqlite3_reset(s);
    if (ret == 0 && c->series && m->n > 0) {
        /* the last value holds until the run's end */
        sqlite3_bind_int64(c->run_end, 1, id);
        rc = sqlite3_step(c->run_end);
        if (rc == SQLITE_ROW && sqlite3_column_type(c->run_end, 0) != SQLITE_NULL) {
            double end = sqlite3_column_double(c->run_end, 0);
            if (isfinite(end) && end > m->x[m->n - 1])
                ret = member_push(m, &cap, end, m->y[m->n - 1], err);
        } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            ret = sql_fail(c, err);
        }
        sqlite3_reset(c->run_end);
    }
    return ret;
}

static double interp(const member *m, double x)
{
    int lo = 0, hi = m->n - 1;
    if (x <= m->x[0])
        return m->y[0];
    if (x >= m->x[hi])
        return m->y[hi];
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (m->x[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    double t = (x - m->x[lo]) / (m->x[hi] - m->x[lo]);
    return m->y[lo] + t * (m->y[hi] - m->y[lo]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Mean and min-max of the members on the union of their x values inside
 * the range where all of them have data. */
static int series_compute(member *ms, int n_ms, an_plot_series *out, sim_err *err)
{
    double lo = -INFINITY, hi = INFINITY;
    int total = 0, used = 0;
    for (int k = 0; k < n_ms; k++) {
        if (ms[k].n == 0)
            continue;
        used++;
        lo = fmax(lo, ms[k].x[0]);
        hi = fmin(hi, ms[k].x[ms[k].n - 1]);
        total += ms[k].n;
    }
    out->n = 0;
    if (used == 0)
        return 0;
    if (lo > hi) {  /* no common range: show the first run alone */
        for (int k = 0; k < n_ms; k++)
            if (ms[k].n > 0)
                return series_compute(&ms[k], 1, out, err);
    }
    double *grid = malloc((size_t)total * sizeof *grid);
    if (!grid)
        return nomem(err);
    int n = 0;
    for (int k = 0; k < n_ms; k++)
        for (int i = 0; i < ms[k].n; i++)
            if (ms[k].x[i] >= lo && ms[k].x[i] <= hi)
                grid[n++] = ms[k].x[i];
    qsort(grid, (size_t)n, sizeof *grid, cmp_double);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || grid[i] > grid[u - 1])
            grid[u++] = grid[i];
    out->x = grid;
    out->mean = malloc((size_t)(u ? u : 1) * sizeof *out->mean);
    out->lo = malloc((size_t)(u ? u : 1) * sizeof *out->lo);
    out->hi = malloc((size_t)(u ? u : 1) * sizeof *out->hi);
    if (!out->mean || !out->lo || !out->hi)
        return nomem(err);
    for (int i = 0; i < u; i++) {
        double sum = 0, mn = INFINITY, mx = -INFINITY;
        int cnt = 0;
        for (int k = 0; k < n_ms; k++) {
            if (ms[k].n == 0)
                continue;
            double v = interp(&ms[k], grid[i]);
            sum += v;
            mn = fmin(mn, v);
            mx = fmax(mx, v);
            cnt++;
        }
        out->mean[i] = sum / cnt;
        out->lo[i] = mn;
        out->hi[i] = mx;
    }
    out->n = u;
    return 0;
}

/* Does key have different values among the groups that have it (only
 * those whose `by` value is byval, unless byval is NULL)? */
static int key_varies(const build_ctx *c, const char *key, const char *byval)
{
    const char *first = NULL;
    size_t first_len = 0;
    char pat[256];
    int pl = snprintf(pat, sizeof pat, "%s\x1f", key);
    for (int i = 0; i < c->n_groups; i++) {
        if (byval && strcmp(c->groups[i].byval, byval) != 0)
            continue;
        const char *fp = c->groups[i].fp;
        const char *hit = NULL;
        for (const char *p = fp; *p; p = strchr(p, '\x1e') + 1) {
            if (strncmp(p, pat, (size_t)pl) == 0) {
                hit = p + pl;
                break;
            }
        }
        if (!hit)
            continue;
        size_t len = (size_t)(strchr(hit, '\x1e') - hit);
        if (!first) {
            first = hit;
            first_len = len;
        } else if (len != first_len || strncmp(hit, first, len) != 0) {
            return 1;
        }
    }
    return 0;
}

/* Canonical values print times in ns: "constant(1000000ns)" reads better
 * as "constant(1ms)". */
static void value_pretty(const char *in, size_t len, char *out, size_t size)
{
    size_t j = 0;
    for (size_t i = 0; i < len && j + 1 < size;) {
        size_t k = i;
        while (k < len && ((in[k] >= '0' && in[k] <= '9') || in[k] == '.'))
            k++;
        int starts = i == 0 || !(isalnum((unsigned char)in[i - 1]) || in[i - 1] == '.');
        if (k > i && starts && k + 1 < len + 1 && k + 2 <= len && in[k] == 'n' &&
            in[k + 1] == 's' && (k + 2 == len || !isalnum((unsigned char)in[k + 2]))) {
            char num[64];
            snprintf(num, sizeof num, "%.*s", (int)(k - i), in + i);
            double v = strtod(num, NULL);
            const char *unit = "ns";
            if (v >= 1e9) {
                v /= 1e9;
                unit = "s";
            } else if (v >= 1e6) {
                v /= 1e6;
                unit = "ms";
            } else if (v >= 1e3) {
                v /= 1e3;
                unit = "us";
            }
            int w = snprintf(out + j, size - j, "%g%s", v, unit);
            j = w > 0 && (size_t)w < size - j ? j + (size_t)w : size - 1;
            i = k + 2;
            continue;
        }
        if (k > i) {
            while (i < k && j + 1 < size)
                out[j++] = in[i++];
            continue;
        }
        out[j++] = in[i++];
    }
    out[j] = '\0';
}

/* "algorithm.name" -> "algorithm", "workers.compute" -> "compute". */
static void key_short(const char *key, char *out, size_t size)
{
    const char *dot = strchr(key, '.');
    if (!dot)
        snprintf(out, size, "%s", key);
    else if (strcmp(dot + 1, "name") == 0)
        snprintf(out, size, "%.*s", (int)(dot - key), key);
    else
        snprintf(out, size, "%s", dot + 1);
}

/* Legend text: the `by` value, plus the params that vary among the curves
 * sharing it (or, without `by`, the params that vary among all curves). */
static void series_label(const build_ctx *c, int gi, char *out, size_t size)
{
    const subgroup *g = &c->groups[gi];
    int has_by = c->o->by && *c->o->by;
    const char *filter = has_by ? g->byval : NULL;
    size_t len = 0;
    out[0] = '\0';
    if (has_by) {
        /* the value alone for the method's name; else "key=value" */
        char shrt[160], val[256];
        key_short(c->o->by, shrt, sizeof shrt);
        value_pretty(g->byval, strlen(g->byval), val, sizeof val);
        size_t ls = strlen(shrt), lv = strlen(val);
        if (strcmp(shrt, "algorithm") == 0 || ls + lv + 2 > size)
            ls = 0;
        else
            memcpy(out, shrt, ls);
        if (ls)
            out[ls++] = '=';
        if (lv > size - 1 - ls)
            lv = size - 1 - ls;
        memcpy(out + ls, val, lv);
        out[ls + lv] = '\0';
        len = strlen(out);
    }
    int n_vary = 0;
    for (const char *p = g->fp; *p; p = strchr(p, '\x1e') + 1) {
        const char *sep = strchr(p, '\x1f');
        char key[160];
        snprintf(key, sizeof key, "%.*s", (int)(sep - p), p);
        n_vary += key_varies(c, key, filter);
    }
    for (const char *p = g->fp; *p && len + 1 < size; p = strchr(p, '\x1e') + 1) {
        const char *sep = strchr(p, '\x1f');
        const char *end = strchr(sep, '\x1e');
        char key[160], shrt[160], val[256];
        snprintf(key, sizeof key, "%.*s", (int)(sep - p), p);
        if (!key_varies(c, key, filter))
            continue;
        key_short(key, shrt, sizeof shrt);
        value_pretty(sep + 1, (size_t)(end - sep - 1), val, sizeof val);
        if (!has_by && n_vary == 1)
            len += (size_t)snprintf(out + len, size - len, "%s", val);
        else
            len += (size_t)snprintf(out + len, size - len, "%s%s=%s", len ? ", " : "", shrt,
                                    val);
    }
    if (out[0] == '\0')
        snprintf(out, size, "%s", has_by ? "(none)" : "all runs");
}

/* The one key that varies among the curves, or NULL. */
static int varying_keys(const build_ctx *c, char *one, size_t size)
{
    int n = 0;
    if (c->n_groups == 0)
        return 0;
    const char *fp = c->groups[0].fp;
    for (const char *p = fp; *p; p = strchr(p, '\x1e') + 1) {
        const char *sep = strchr(p, '\x1f');
        char key[160];
        snprintf(key, sizeof key, "%.*s", (int)(sep - p), p);
        if (key_varies(c, key, NULL)) {
            if (n == 0)
                snprintf(one, size, "%s", key);
            n++;
        }
    }
    return n;
}

/* An SI prefix for values up to vmax of a "B" or "#" unit. */
static double si_scale(const column_def *col, double vmax, char *label, size_t size)
{
    static const char *const pre[] = {"", "k", "M", "G", "T", "P"};
    static const char *const words[] = {"", "thousands", "millions", "billions",
                                        "trillions", "quadrillions"};
    int i = 0;
    double scale = 1;
    if (col->unit[0] == 't') {
        const char *u = vmax < 1e-3 ? "us" : vmax < 1 ? "ms" : "s";
        snprintf(label, size, "%s (%s)", col->label, u);
        return vmax < 1e-3 ? 1e-6 : vmax < 1 ? 1e-3 : 1;
    }
    if (col->unit[0] == 'B' || col->unit[0] == '#')
        while (i < 5 && vmax / scale >= 1000) {
            scale *= 1000;
            i++;
        }
    if (col->unit[0] == 'B')
        snprintf(label, size, "%s (%sB)", col->label, pre[i]);
    else if (col->unit[0] == '#' && i > 0)
        snprintf(label, size, "%s (%s)", col->label, words[i]);
    else if (col->unit[0] && col->unit[0] != '#')
        snprintf(label, size, "%s (%s)", col->label, col->unit);
    else
        snprintf(label, size, "%s", col->label);
    return scale;
}

void an_plot_release(an_plot_data *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->n_series; i++) {
        free(d->series[i].x);
        free(d->series[i].mean);
        free(d->series[i].lo);
        free(d->series[i].hi);
    }
    free(d->series);
    d->series = NULL;
    d->n_series = 0;
}

static int curves_build(build_ctx *c, an_plot_data *d, sim_err *err)
{
    char sql[256];
    if (c->series)
        snprintf(sql, sizeof sql,
                 "SELECT %s, value FROM series WHERE run_id = ?1 AND name = ?2 AND (worker "
                 "IS NULL OR worker < 0) AND %s IS NOT NULL AND value IS NOT NULL ORDER BY %s, "
                 "iteration, rowid",
                 c->xc->name, c->xc->name, c->xc->name);
    else
        snprintf(sql, sizeof sql,
                 "SELECT %s, %s FROM metrics WHERE run_id = ?1 AND %s IS NOT NULL"
                 " AND %s IS NOT NULL ORDER BY %s, iteration, rowid",
                 c->xc->name, c->yc->name, c->xc->name, c->yc->name, c->xc->name);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->conn, sql, -1, &s, NULL) != SQLITE_OK)
        return sql_fail(c, err);
    if (c->series) {
        sqlite3_bind_text(s, 2, c->series, -1, SQLITE_STATIC);
        const char *end = strcmp(c->xc->name, "sim_time") == 0
                              ? "SELECT sim_time FROM runs WHERE id = ?1"
                              : "SELECT iterations FROM runs WHERE id = ?1";
        if (sqlite3_prepare_v2(c->conn, end, -1, &c->run_end, NULL) != SQLITE_OK) {
            sqlite3_finalize(s);
            return sql_fail(c, err);
        }
    }
    d->series = calloc((size_t)c->n_groups, sizeof *d->series);
    if (!d->series) {
        sqlite3_finalize(s);
        return nomem(err);
    }
    char one[160] = "";
    int n_varying = varying_keys(c, one, sizeof one);
    int ret = 0;
    for (int g = 0; ret == 0 && g < c->n_groups; g++) {
        subgroup *sg = &c->groups[g];
        member *ms = calloc((size_t)sg->n_ids, sizeof *ms);
        if (!ms) {
            ret = nomem(err);
            break;
        }
        for (int k = 0; ret == 0 && k < sg->n_ids; k++)
            ret = member_load(c, s, sg->ids[k], &ms[k], err);
        an_plot_series *se = &d->series[d->n_series];
        if (ret == 0)
            ret = series_compute(ms, sg->n_ids, se, err);
        if ((ret == 0 && se->n > 0) || se->x) {
            se->n_runs = sg->n_ids;
            series_label(c, g, se->label, sizeof se->label);
            d->n_series++;
            d->n_runs += sg->n_ids;
        }
        for (int k = 0; k < sg->n_ids; k++) {
            free(ms[k].x);
            free(ms[k].y);
        }
        free(ms);
    }
    sqlite3_finalize(s);
    if (ret != 0)
        return ret;
    /* axis scales and labels */
    double xmax = 0, ymax = 0;
    int points = 0;
    for (int i = 0; i < d->n_series; i++)
        for (int j = 0; j < d->series[i].n; j++) {
            xmax = fmax(xmax, fabs(d->series[i].x[j]));
            ymax = fmax(ymax, fabs(d->series[i].hi[j]));
            points++;
        }
    if (points == 0)
        return sim_err_set(err, SIM_EINPUT, "%s: the runs have no %s values%s to plot",
                           an_db_path(c->db), c->yc->name,
                           c->o->logx || c->o->logy ? " (positive, for a log axis)" : "");
    d->x_scale = si_scale(c->xc, xmax, d->xlabel, sizeof d->xlabel);
    d->y_scale = si_scale(c->yc, ymax, d->ylabel, sizeof d->ylabel);
    d->x_unit = strchr("tB", c->xc->unit[0]) ? c->xc->unit[0] : 0;
    d->y_unit = strchr("tB", c->yc->unit[0]) ? c->yc->unit[0] : 0;
    for (int i = 0; i < d->n_series; i++)
        for (int j = 0; j < d->series[i].n; j++) {
            d->series[i].x[j] /= d->x_scale;
            d->series[i].mean[j] /= d->y_scale;
            d->series[i].lo[j] /= d->y_scale;
            d->series[i].hi[j] /= d->y_scale;
        }
    int max_runs = 0;
    for (int i = 0; i < d->n_series; i++)
        if (d->series[i].n_runs > max_runs)
            max_runs = d->series[i].n_runs;
    char shrt[160];
    key_short(one, shrt, sizeof shrt);
    const char *by = c->o->by && *c->o->by ? c->o->by : n_varying == 1 ? shrt : NULL;
    (void)max_runs;
    if (c->o->title) {
        snprintf(d->title, sizeof d->title, "%s", c->o->title);
    } else {
        snprintf(d->title, sizeof d->title, "%s vs %s%s%s", c->yc->label, c->xc->label,
                 by ? " by " : "", by ? by : "");
        d->title[0] = (char)toupper((unsigned char)d->title[0]);
    }
    return 0;
}

int an_plot_build(an_db *db, const an_plot_opts *o, an_plot_data *d, sim_err *err)
{
    memset(d, 0, sizeof *d);
    build_ctx c = {.db = db, .conn = an_db_sqlite(db), .o = o};
    const char *x = o->x ? o->x : "sim_time";
    c.xc = column_find(x, N_X_COLUMNS);
    if (!c.xc)
        return sim_err_set(err, SIM_EUSAGE, "--x '%s': expected sim_time, iteration, epoch, "
                                            "samples or bytes_sent", x);
    if (o->y && strncmp(o->y, "series:", 7) == 0) {
        c.series = o->y + 7;
        if (!c.series[0])
            return sim_err_set(err, SIM_EUSAGE, "--y 'series:': expected series:NAME, a name "
                                                "of the series table (keep_fraction, ...)");
        if (strcmp(c.xc->name, "sim_time") != 0 && strcmp(c.xc->name, "iteration") != 0)
            return sim_err_set(err, SIM_EUSAGE,
                               "--x '%s' with --y %s: a series has sim_time and iteration only",
                               x, o->y);
        c.series_col = (column_def){"value", c.series, ""};
        c.yc = &c.series_col;
    } else {
        c.yc = column_find(o->y, N_COLUMNS);
    }
    if (!c.yc)
        return sim_err_set(err, SIM_EUSAGE,
                           "--y '%s': not a metrics column (train_loss, test_loss, "
                           "test_accuracy, consensus_distance, bytes_sent, sim_time, "
                           "iteration, epoch, samples) or series:NAME", o->y ? o->y : "");
    int ret = runs_collect(&c, err);
    if (ret == 0)
        ret = curves_build(&c, d, err);
    sqlite3_finalize(c.run_end);
    for (int i = 0; i < c.n_groups; i++) {
        free(c.groups[i].byval);
        free(c.groups[i].fp);
        free(c.groups[i].ids);
    }
    free(c.groups);
    if (ret != 0)
        an_plot_release(d);
    return ret;
}
