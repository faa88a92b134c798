/* The params shown as report columns: those chosen with --columns, else
 * the keys whose values differ among the runs listed (a common key that
 * some runs lack differs too; a method's own key only when its values
 * differ among the runs that have it), leaving out
 * experiment.name and algorithm.name, which have columns of their own.
 * Keys come in params order (the canonical order of the configuration). */
#include "analysis/report.h"
#include "analysis/report_internal.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void report_keys_release(an_report *rep)
{
    for (int i = 0; rep->key_values && i < rep->n_rows * rep->n_keys; i++)
        free(rep->key_values[i]);
    free(rep->key_values);
    free(rep->keys);
    rep->key_values = NULL;
    rep->keys = NULL;
    rep->n_keys = 0;
}

const char *report_key_header(char (*keys)[64], int n_keys, int i)
{
    const char *dot = strchr(keys[i], '.');
    if (!dot)
        return keys[i];
    for (int j = 0; j < n_keys; j++) {
        const char *other = strchr(keys[j], '.');
        if (j != i && other && strcmp(other, dot) == 0)
            return keys[i];
    }
    return dot + 1;
}

/* Every key of every row's params, in first-seen order (at most cap). */
typedef struct key_set {
    char (*keys)[64];
    int n, cap;
} key_set;

static int key_index(const key_set *ks, const char *key)
{
    for (int i = 0; i < ks->n; i++)
        if (strcmp(ks->keys[i], key) == 0)
            return i;
    return -1;
}

static int key_add(key_set *ks, const char *key)
{
    if (key_index(ks, key) >= 0 || strlen(key) >= sizeof ks->keys[0])
        return 0;
    if (ks->n == ks->cap) {
        int cap = ks->cap ? 2 * ks->cap : 64;
        char (*grown)[64] = realloc(ks->keys, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        ks->keys = grown;
        ks->cap = cap;
    }
    snprintf(ks->keys[ks->n++], sizeof ks->keys[0], "%s", key);
    return 0;
}

/* Fills the chosen keys from "a.b,c.d" (blanks around a key are left
 * out: "a.b, c.d"). */
static int keys_chosen(const char *columns, key_set *ks, sim_err *err)
{
    const char *p = columns;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p), skip = 0;
        while (skip < len && (p[skip] == ' ' || p[skip] == '\t'))
            skip++;
        while (len > skip && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        p += skip, len -= skip;
        char key[64];
        if (len == 0 || len >= sizeof key || !memchr(p, '.', len))
            return sim_err_set(err, SIM_EUSAGE, "--columns '%s': expected SECTION.KEY,..."
                               " such as network.bandwidth,algorithm.lr", columns);
        snprintf(key, sizeof key, "%.*s", (int)len, p);
        if (ks->n >= AN_REPORT_MAX_KEYS)
            return sim_err_set(err, SIM_EUSAGE, "--columns '%s': more than %d keys", columns,
                               AN_REPORT_MAX_KEYS);
        if (key_add(ks, key) < 0)
            return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        p = end ? end + 1 : p + strlen(p);
    }
    return 0;
}

/* Loads every row's params into all (n_rows x all->n slots, grown as
 * keys appear; NULL where a run has none). */
static int params_load(report_ctx *c, const an_report *rep, key_set *all, char ***vals,
                       int *cols, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    int ret = report_prepare(c, "SELECT key, value FROM params WHERE run_id = ?1"
                             " ORDER BY rowid", &s, err);
    *vals = NULL;
    *cols = 0;
    for (int r = 0; ret == 0 && r < rep->n_rows; r++) {
        sqlite3_bind_int64(s, 1, rep->rows[r].id);
        int rc;
        while (ret == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
            const char *key = (const char *)sqlite3_column_text(s, 0);
            const char *value = (const char *)sqlite3_column_text(s, 1);
            if (!key || key_add(all, key) < 0) {
                ret = key ? sim_err_set(err, SIM_ENOMEM, "report: out of memory") : 0;
                continue;
            }
            int k = key_index(all, key);
            if (k < 0)
                continue;
            if (all->cap > *cols) {
                char **grown = realloc(*vals, (size_t)rep->n_rows * all->cap * sizeof *grown);
                if (!grown) {
                    ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
                    continue;
                }
                /* re-lay the rows out at the new width */
                for (int i = rep->n_rows - 1; i >= 0; i--)
                    for (int j = all->cap - 1; j >= 0; j--)
                        grown[(size_t)i * all->cap + j] =
                            j < *cols ? grown[(size_t)i * *cols + j] : NULL;
                *vals = grown;
                *cols = all->cap;
            }
            char **slot = &(*vals)[(size_t)r * *cols + k];
            free(*slot);
            if (!(*slot = strdup(value ? value : "")))
                ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        }
        if (ret == 0 && rc != SQLITE_DONE)
            ret = report_sql_error(c, err);
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    return ret;
}

/* Key k's values differ among the rows: a run without the key differs
 * from one with it, except for a method's own key (which only the runs of
 * that method have, told apart by the algorithm column already). */
static int differs(char **vals, int cols, int n_rows, int k, int own)
{
    const char *first = NULL;
    int seen = 0;
    for (int r = 0; r < n_rows; r++) {
        const char *v = vals[(size_t)r * cols + k];
        if (own && !v)
            continue;
        if (seen++ == 0)
            first = v;
        else if ((v == NULL) != (first == NULL) || (v && strcmp(v, first) != 0))
            return 1;
    }
    return 0;
}

int report_keys_fill(report_ctx *c, const char *columns, an_report *rep, sim_err *err)
{
    key_set all = {0}, shown = {0};
    char **vals = NULL;
    int cols = 0;
    int ret = columns ? keys_chosen(columns, &shown, err) : 0;
    if (ret == 0)
        ret = params_load(c, rep, &all, &vals, &cols, err);
    for (int k = 0; ret == 0 && !columns && k < all.n && shown.n < AN_REPORT_MAX_KEYS; k++)
        if (strcmp(all.keys[k], "experiment.name") != 0 &&
            strcmp(all.keys[k], "algorithm.name") != 0 && vals &&
            differs(vals, cols, rep->n_rows, k, !report_common_key(all.keys[k])) &&
            key_add(&shown, all.keys[k]) < 0)
            ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    for (int k = 0; ret == 0 && columns && k < shown.n; k++)
        if (key_index(&all, shown.keys[k]) < 0 && rep->n_rows > 0)
            ret = sim_err_set(err, SIM_EUSAGE, "--columns %s: no run listed has this key"
                              " (params keys are SECTION.KEY, as in --set)", shown.keys[k]);
    if (ret == 0 && shown.n > 0 && rep->n_rows > 0) {
        rep->key_values = calloc((size_t)rep->n_rows * shown.n, sizeof *rep->key_values);
        if (!rep->key_values)
            ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    }
    for (int r = 0; ret == 0 && rep->key_values && r < rep->n_rows; r++)
        for (int k = 0; ret == 0 && k < shown.n; k++) {
            int a = key_index(&all, shown.keys[k]);
            const char *v = a >= 0 && vals ? vals[(size_t)r * cols + a] : NULL;
            if (!(rep->key_values[(size_t)r * shown.n + k] = strdup(v ? v : "")))
                ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        }
    rep->keys = shown.keys;
    rep->n_keys = shown.n;
    rep->keys_chosen = columns != NULL;
    for (size_t i = 0; vals && i < (size_t)rep->n_rows * cols; i++)
        free(vals[i]);
    free(vals);
    free(all.keys);
    if (ret != 0)
        report_keys_release(rep);
    return ret;
}
