/* `dtsim report --scaling` (rules in scaling.h): loads each finished run's
 * worker count, last (samples, sim_time) and a params fingerprint that
 * leaves out the name, the worker count and the topology's arguments;
 * groups equal fingerprints, sorts each group by worker count and divides
 * by the group's smallest-count throughput. */
#include "analysis/scaling.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    an_scaling_row row;
    char *fingerprint;
    int order;              /* position in the requested ids, for stable sorting */
} entry;

static int sql_error(an_db *db, sim_err *err)
{
    return sim_err_set(err, SIM_EDB, "%s: %s", an_db_path(db),
                       sqlite3_errmsg(an_db_sqlite(db)));
}

static int oom(sim_err *err) { return sim_err_set(err, SIM_ENOMEM, "report: out of memory"); }

/* The value that counts for grouping: network.topology without its
 * arguments; NULL when the key does not count at all. */
static const char *counted_value(const char *key, const char *value, size_t *len)
{
    if (strcmp(key, "experiment.name") == 0 || strcmp(key, "workers.count") == 0)
        return NULL;
    *len = strlen(value);
    if (strcmp(key, "network.topology") == 0) {
        const char *paren = strchr(value, '(');
        if (paren)
            *len = (size_t)(paren - value);
    }
    return value;
}

static int fingerprint(an_db *db, sqlite3_stmt *s, int64_t run, char **out, sim_err *err)
{
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 1, run);
    size_t len = 0, cap = 256;
    char *buf = malloc(cap);
    if (!buf)
        return oom(err);
    buf[0] = '\0';
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(s, 0);
        const char *value = (const char *)sqlite3_column_text(s, 1);
        size_t vlen = 0;
        if (!key || !(value = counted_value(key, value ? value : "", &vlen)))
            continue;
        size_t need = len + strlen(key) + vlen + 3;
        if (need > cap) {
            while (cap < need)
                cap *= 2;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                return oom(err);
            }
            buf = grown;
        }
        /* unit and record separators cannot occur in canonical values */
        len += (size_t)sprintf(buf + len, "%s\x1f%.*s\x1e", key, (int)vlen, value);
    }
    if (rc != SQLITE_DONE) {
        free(buf);
        return sql_error(db, err);
    }
    *out = buf;
    return 0;
}

/* Loads one run; *keep = 0 when it does not count (not 'done'). */
static int entry_load(an_db *db, sqlite3_stmt *run_q, sqlite3_stmt *last_q,
                      sqlite3_stmt *params_q, int64_t id, entry *e, int *keep, sim_err *err)
{
    *keep = 0;
    sqlite3_reset(run_q);
    sqlite3_bind_int64(run_q, 1, id);
    int rc = sqlite3_step(run_q);
    if (rc == SQLITE_DONE)
        return sim_err_set(err, SIM_EUSAGE, "--run %lld: no such run in %s", (long long)id,
                           an_db_path(db));
    if (rc != SQLITE_ROW)
        return sql_error(db, err);
    const char *status = (const char *)sqlite3_column_text(run_q, 2);
    if (!status || strcmp(status, "done") != 0)
        return 0;
    memset(e, 0, sizeof *e);
    e->row.id = id;
    const char *name = (const char *)sqlite3_column_text(run_q, 0);
    const char *algo = (const char *)sqlite3_column_text(run_q, 1);
    snprintf(e->row.name, sizeof e->row.name, "%s", name ? name : "");
    snprintf(e->row.algorithm, sizeof e->row.algorithm, "%s", algo ? algo : "");
    e->row.n_workers = sqlite3_column_int(run_q, 3);
    e->row.throughput = NAN;
    e->row.scaling = NAN;
    e->row.step_time = NAN;
    if (sqlite3_column_type(run_q, 4) != SQLITE_NULL && sqlite3_column_int64(run_q, 5) > 0)
        e->row.step_time =
            sqlite3_column_double(run_q, 4) / (double)sqlite3_column_int64(run_q, 5);
    sqlite3_reset(last_q);
    sqlite3_bind_int64(last_q, 1, id);
    rc = sqlite3_step(last_q);
    if (rc == SQLITE_ROW && sqlite3_column_type(last_q, 0) != SQLITE_NULL &&
        sqlite3_column_type(last_q, 1) != SQLITE_NULL) {
        double t = sqlite3_column_double(last_q, 0);
        double samples = (double)sqlite3_column_int64(last_q, 1);
        if (t > 0 && samples > 0)
            e->row.throughput = samples / t;
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        return sql_error(db, err);
    }
    int ret = fingerprint(db, params_q, id, &e->fingerprint, err);
    if (ret == 0)
        *keep = 1;
    return ret;
}

static int ids_all(an_db *db, int64_t **ids, int *n, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    *ids = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(an_db_sqlite(db), "SELECT id FROM runs ORDER BY id", -1, &s,
                           NULL) != SQLITE_OK)
        return sql_error(db, err);
    int rc, cap = 0, ret = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            int64_t *grown = realloc(*ids, (size_t)cap * sizeof *grown);
            if (!grown) {
                ret = oom(err);
                break;
            }
            *ids = grown;
        }
        (*ids)[(*n)++] = sqlite3_column_int64(s, 0);
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = sql_error(db, err);
    sqlite3_finalize(s);
    if (ret != 0) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return ret;
}

static int entry_cmp(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    if (a->row.group != b->row.group)
        return a->row.group < b->row.group ? -1 : 1;
    if (a->row.n_workers != b->row.n_workers)
        return a->row.n_workers < b->row.n_workers ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Groups (numbered by first appearance), sorts and fills the factors. */
static void entries_group(entry *e, int n, int *n_groups)
{
    *n_groups = 0;
    for (int i = 0; i < n; i++) {
        e[i].row.group = 0;
        for (int j = 0; j < i && !e[i].row.group; j++)
            if (strcmp(e[j].fingerprint, e[i].fingerprint) == 0)
                e[i].row.group = e[j].row.group;
        if (!e[i].row.group)
            e[i].row.group = ++*n_groups;
    }
    qsort(e, (size_t)n, sizeof *e, entry_cmp);
    for (int i = 0; i < n;) {
        int end = i;
        while (end < n && e[end].row.group == e[i].row.group)
            end++;
        const an_scaling_row *ref = &e[i].row; /* smallest count, lowest order */
        for (int k = i; k < end; k++) {
            an_scaling_row *r = &e[k].row;
            r->ref_workers = ref->n_workers;
            if (!isnan(r->throughput) && !isnan(ref->throughput) && ref->n_workers > 0)
                r->scaling = r->throughput /
                             ((double)r->n_workers / ref->n_workers * ref->throughput);
        }
        i = end;
    }
}

int an_scaling_build(an_db *db, const int64_t *run_ids, int n, an_scaling *sc, sim_err *err)
{
    sc->rows = NULL;
    sc->n_rows = 0;
    sc->n_groups = 0;
    sqlite3 *conn = an_db_sqlite(db);
    sqlite3_stmt *run_q = NULL, *last_q = NULL, *params_q = NULL;
    int64_t *all = NULL;
    entry *e = NULL;
    int n_e = 0, ret = 0;
    if (sqlite3_prepare_v2(conn, "SELECT name, algorithm, status, n_workers, sim_time,"
                                 " iterations FROM runs"
                                 " WHERE id = ?1", -1, &run_q, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(conn, "SELECT sim_time, samples FROM metrics WHERE run_id = ?1"
                                 " ORDER BY sim_time DESC, iteration DESC LIMIT 1",
                           -1, &last_q, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(conn, "SELECT key, value FROM params WHERE run_id = ?1"
                                 " ORDER BY key, value", -1, &params_q, NULL) != SQLITE_OK)
        ret = sql_error(db, err);
    if (ret == 0 && n <= 0) {
        ret = ids_all(db, &all, &n, err);
        run_ids = all;
    }
    if (ret == 0 && n > 0 && !(e = calloc((size_t)n, sizeof *e)))
        ret = oom(err);
    for (int i = 0; ret == 0 && i < n; i++) {
        int keep = 0;
        ret = entry_load(db, run_q, last_q, params_q, run_ids[i], &e[n_e], &keep, err);
        if (ret == 0 && keep)
            e[n_e++].order = i;
    }
    if (ret == 0 && n_e > 0) {
        entries_group(e, n_e, &sc->n_groups);
        sc->rows = malloc((size_t)n_e * sizeof *sc->rows);
        if (!sc->rows)
            ret = oom(err);
        for (int i = 0; ret == 0 && i < n_e; i++)
            sc->rows[i] = e[i].row;
        if (ret == 0)
            sc->n_rows = n_e;
    }
    for (int i = 0; e && i < n_e; i++)
        free(e[i].fingerprint);
    free(e);
    free(all);
    sqlite3_finalize(run_q);
    sqlite3_finalize(last_q);
    sqlite3_finalize(params_q);
    if (ret != 0)
        an_scaling_release(sc);
    return ret;
}

void an_scaling_release(an_scaling *sc)
{
    if (!sc)
        return;
    free(sc->rows);
    sc->rows = NULL;
    sc->n_rows = 0;
    sc->n_groups = 0;
}

/* CSV field: quoted when it holds a comma, quote or line break. */
static void csv_text(FILE *out, const char *text)
{
    if (!strpbrk(text, ",\"\r\n")) {
        fputs(text, out);
        return;
    }
    fputc('"', out);
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

static void csv_real(FILE *out, double v)
{
    if (!isnan(v))
        fprintf(out, "%.9g", v);
}

int an_scaling_write(const an_scaling *sc, int csv, FILE *out, sim_err *err)
{
    if (csv) {
        fputs("group,id,name,algorithm,n_workers,throughput,ref_workers,scaling_factor\n", out);
        for (int i = 0; i < sc->n_rows; i++) {
            const an_scaling_row *r = &sc->rows[i];
            fprintf(out, "%d,%lld,", r->group, (long long)r->id);
            csv_text(out, r->name);
            fputc(',', out);
            csv_text(out, r->algorithm);
            fprintf(out, ",%d,", r->n_workers);
            csv_real(out, r->throughput);
            fprintf(out, ",%d,", r->ref_workers);
            csv_real(out, r->scaling);
            fputc('\n', out);
        }
    } else {
        int wn = 4, wa = 9;
        for (int i = 0; i < sc->n_rows; i++) {
            int ln = (int)strlen(sc->rows[i].name), la = (int)strlen(sc->rows[i].algorithm);
            wn = ln > wn ? ln : wn;
            wa = la > wa ? la : wa;
        }
        fprintf(out, "%5s  %6s  %-*s  %-*s  %7s  %16s  %4s  %7s\n", "group", "id", wn, "name",
                wa, "algorithm", "workers", "samples/s (sim)", "base", "scaling");
        for (int i = 0; i < sc->n_rows; i++) {
            const an_scaling_row *r = &sc->rows[i];
            char thr[32] = "-", fac[32] = "-";
            if (!isnan(r->throughput))
                snprintf(thr, sizeof thr, "%.1f", r->throughput);
            if (!isnan(r->scaling))
                snprintf(fac, sizeof fac, "%.3f", r->scaling);
            fprintf(out, "%5d  %6lld  %-*s  %-*s  %7d  %16s  %4d  %7s\n", r->group,
                    (long long)r->id, wn, r->name[0] ? r->name : "-", wa,
                    r->algorithm[0] ? r->algorithm : "-", r->n_workers, thr, r->ref_workers,
                    fac);
        }
        if (sc->n_rows == 0)
            fputs("no finished runs\n", out);
    }
    if (fflush(out) != 0 || ferror(out))
        return sim_err_set(err, SIM_EIO, "report: write failed");
    return 0;
}

int an_scaling_print(const char *path, const int64_t *run_ids, int n, int csv, FILE *out,
                     sim_err *err)
{
    an_db *db = an_db_open_readonly(path, err);
    if (!db)
        return err ? err->code : SIM_EDB;
    an_scaling sc;
    int ret = an_scaling_build(db, run_ids, n, &sc, err);
    an_db_close(db);
    if (ret == 0)
        ret = an_scaling_write(&sc, csv, out, err);
    an_scaling_release(&sc);
    return ret;
}
