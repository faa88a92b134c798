/* --compare KEY=BASE,V1,V2,...: each value against the first, over the
 * groups of the aggregated report whose params differ only in KEY.
 *
 * Everything that can go wrong (the text, a key no group has, a value no
 * group has, a value with no group to pair with BASE) is found by
 * compare_plan before a byte is written, so an error leaves stdout empty
 * (an_report_print calls the checks before the aggregated table). A
 * statistic with no spread in either group (the same value for every
 * seed: deterministic) gets its exact difference, with no interval and no
 * verdict; Welch's interval would have width zero and claim certainty. */
#include "analysis/report.h"
#include "analysis/report_internal.h"
#include "sim/units.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 64

/* The statistics a comparison covers, with their names. */
static const an_report_stat *compared(const an_report_group *g, int k, const char **name)
{
    static const char *const names[] = {"final_test_accuracy", "final_train_loss",
                                        "time_to_target", "sim_time", "speedup",
                                        "idle_fraction", "mean_staleness"};
    const an_report_stat *st[] = {&g->final_test_accuracy, &g->final_train_loss,
                                  &g->time_to_target, &g->sim_time, &g->speedup,
                                  &g->idle_fraction, &g->mean_staleness};
    if (k >= (int)(sizeof st / sizeof st[0]))
        return NULL;
    *name = names[k];
    return st[k];
}

/* Splits fingerprint fp into the value of key (malloc'd, NULL when absent)
 * and the rest (malloc'd). Comparing methods (key algorithm.name), the
 * rest leaves out the methods' own keys. */
static int fp_split(const char *fp, const char *key, char **value, char **rest)
{
    size_t klen = strlen(key), used = 0;
    int methods = strcmp(key, "algorithm.name") == 0;
    *value = NULL;
    *rest = malloc(strlen(fp) + 1);
    if (!*rest)
        return -1;
    (*rest)[0] = '\0';
    for (const char *p = fp; *p;) {
        const char *end = strchr(p, '\x1e');
        size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
        const char *sep = memchr(p, '\x1f', len);
        char name[128];
        snprintf(name, sizeof name, "%.*s", sep ? (int)(sep - p) : 0, p);
        if (strncmp(p, key, klen) == 0 && p[klen] == '\x1f') {
            size_t vlen = len - klen - 1 - (end ? 1 : 0);
            free(*value);
            if (!(*value = malloc(vlen + 1)))
                return -1;
            memcpy(*value, p + klen + 1, vlen);
            (*value)[vlen] = '\0';
        } else if (!(methods && !report_common_key(name))) {
            memcpy(*rest + used, p, len);
            used += len;
            (*rest)[used] = '\0';
        }
        p += len;
    }
    return 0;
}

/* One comparison: groups base and other, other having values[value]. */
typedef struct cmp_pair {
    int base, other, value;
} cmp_pair;

typedef struct cmp_plan {
    char key[128];
    char *text;                 /* a copy of the values, cut at the commas */
    const char *values[MAX_VALUES];
    int n_values;
    char **vals, **rests;       /* per group: its value of key (NULL: none), the rest */
    int n_groups;
    cmp_pair *pairs;
    int n_pairs;
} cmp_plan;

static void plan_release(cmp_plan *p)
{
    for (int g = 0; g < p->n_groups; g++) {
        free(p->vals ? p->vals[g] : NULL);
        free(p->rests ? p->rests[g] : NULL);
    }
    free(p->vals);
    free(p->rests);
    free(p->pairs);
    free(p->text);
}

static int usage_shape(const char *text, sim_err *err)
{
    return sim_err_set(err, SIM_EUSAGE, "--compare '%s': expected SECTION.KEY=BASE,V1,... such"
                       " as algorithm.name=allreduce_sgd,local_sgd,dpsgd (each value against"
                       " the first)", text);
}

static int plan_parse(const char *text, cmp_plan *p, sim_err *err)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text || !memchr(text, '.', (size_t)(eq - text)) ||
        (size_t)(eq - text) >= sizeof p->key)
        return usage_shape(text, err);
    snprintf(p->key, sizeof p->key, "%.*s", (int)(eq - text), text);
    if (!(p->text = strdup(eq + 1)))
        return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    for (char *v = p->text, *comma;; v = comma + 1) {
        comma = strchr(v, ',');
        if (comma)
            *comma = '\0';
        v = sim_str_trim(v);
        if (!*v || p->n_values == MAX_VALUES)
            return usage_shape(text, err);
        for (int i = 0; i < p->n_values; i++)
            if (strcmp(p->values[i], v) == 0)
                return sim_err_set(err, SIM_EUSAGE, "--compare '%s': the value '%s' is given "
                                   "twice", text, v);
        p->values[p->n_values++] = v;
        if (!comma)
            break;
    }
    if (p->n_values < 2)
        return usage_shape(text, err);
    return 0;
}

/* The keys of the groups' params, as a list for sim_suggest. */
static char *known_keys(const an_report_groups *agg)
{
    size_t cap = 1024, len = 0;
    char *out = calloc(cap, 1);
    for (int g = 0; out && g < agg->n_groups; g++)
        for (const char *q = agg->fingerprints[g]; *q;) {
            size_t n = strcspn(q, "\x1f\x1e");
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(n < 127 ? n : 127), q);
            q += n;
            q += strcspn(q, "\x1e");
            if (*q)
                q++;
            char probe[132];
            snprintf(probe, sizeof probe, ",%s,", name);
            char *have = out[0] ? strstr(out, probe) : NULL;
            if (have || !name[0])
                continue;
            if (len + strlen(name) + 3 > cap) {
                char *grown = realloc(out, cap *= 2);
                if (!grown) {
                    free(out);
                    return NULL;
                }
                out = grown;
            }
            len += (size_t)sprintf(out + len, "%s%s,", len ? "" : ",", name);
        }
    return out;
}

/* The distinct values of the key among the groups: "a, b, c". */
static void values_seen(const cmp_plan *p, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int g = 0; g < p->n_groups; g++) {
        int dup = !p->vals[g];
        for (int h = 0; !dup && h < g; h++)
            dup = p->vals[h] && strcmp(p->vals[h], p->vals[g]) == 0;
        if (dup)
            continue;
        int w = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", p->vals[g]);
        if (w < 0 || len + (size_t)w >= size - 5) {
            snprintf(buf + len, size - len, ", ...");
            return;
        }
        len += (size_t)w;
    }
}

static int plan_build(const an_report_groups *agg, const char *text, cmp_plan *p,
                      sim_err *err)
{
    int ret = plan_parse(text, p, err);
    if (ret != 0)
        return ret;
    p->vals = calloc((size_t)agg->n_groups + 1, sizeof *p->vals);
    p->rests = calloc((size_t)agg->n_groups + 1, sizeof *p->rests);
    p->pairs = calloc((size_t)agg->n_groups * (size_t)agg->n_groups + 1, sizeof *p->pairs);
    if (!p->vals || !p->rests || !p->pairs)
        return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    int has_key = 0;
    for (int g = 0; g < agg->n_groups; g++) {
        p->n_groups = g + 1;
        if (fp_split(agg->fingerprints[g], p->key, &p->vals[g], &p->rests[g]) < 0)
            return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        has_key |= p->vals[g] != NULL;
    }
    if (agg->n_groups == 0)
        return sim_err_set(err, SIM_EUSAGE, "--compare %s: no finished runs (done or "
                           "diverged) to compare", text);
    if (!has_key) {
        char *known = known_keys(agg), hint[160];
        sim_suggest(p->key, known ? known : "", hint, sizeof hint);
        char *h = sim_str_trim(hint);
        ret = sim_err_set(err, SIM_EUSAGE, "--compare %s: no run has the key '%s'%s%s%s",
                          text, p->key, h[0] ? " (" : "", h,
                          h[0] ? ")" : "; a key as in --set, such as algorithm.name");
        free(known);
        return ret;
    }
    char seen[512];
    values_seen(p, seen, sizeof seen);
    for (int v = 0; v < p->n_values; v++) {
        int any = 0;
        for (int g = 0; g < agg->n_groups && !any; g++)
            any = p->vals[g] && strcmp(p->vals[g], p->values[v]) == 0;
        if (!any)
            return sim_err_set(err, SIM_EUSAGE, "--compare %s: no finished group has %s = '%s'"
                               " (its values: %s)", text, p->key, p->values[v], seen);
    }
    for (int v = 1; v < p->n_values; v++) {
        int found = 0;
        for (int b = 0; b < agg->n_groups; b++) {
            if (!p->vals[b] || strcmp(p->vals[b], p->values[0]) != 0)
                continue;
            for (int o = 0; o < agg->n_groups; o++)
                if (o != b && p->vals[o] && strcmp(p->vals[o], p->values[v]) == 0 &&
                    strcmp(p->rests[b], p->rests[o]) == 0) {
                    p->pairs[p->n_pairs++] = (cmp_pair){b, o, v};
                    found = 1;
                }
        }
        if (!found)
            return sim_err_set(err, SIM_EUSAGE, "--compare %s: no two groups (done or diverged)"
                               " differ only in %s with the values %s and %s", text, p->key,
                               p->values[0], p->values[v]);
    }
    return 0;
}

/* The interval's side of zero. */
static const char *verdict(const an_report_diff *d)
{
    if (d->exact)
        return "exact";
    if (isnan(d->lo))
        return "n < 2";
    if (d->lo > 0)
        return "higher";
    if (d->hi < 0)
        return "lower";
    return "inconclusive";
}

static void runs_cell(char *cell, size_t size, const an_report_group *g)
{
    snprintf(cell, size, "%lld%s", (long long)g->run_ids[0], g->n_runs > 1 ? "..." : "");
}

/* One line of the table: a pair, a statistic, its difference (the
 * interval adjusted when asked) and the raw verdict. */
typedef struct cmp_row {
    int pair, stat;
    const an_report_stat *sa, *sb;
    const char *name;
    an_report_diff d;
    double se, p, p_adj;        /* Welch's standard error and two-sided p; NAN: none */
    const char *raw;            /* the unadjusted verdict */
} cmp_row;

int an_report_parse_adjust(const char *text, int *adjust, sim_err *err)
{
    static const char *const names[] = {"none", "bonferroni", "holm"};
    for (int i = 0; text && i < 3; i++)
        if (strcmp(text, names[i]) == 0) {
            *adjust = i;
            return 0;
        }
    return sim_err_set(err, SIM_EUSAGE, "--adjust '%s': expected holm, bonferroni or none",
                       text ? text : "");
}

/* Rows with an interval sorted by p (then table order). */
static int by_p(const void *x, const void *y)
{
    const cmp_row *a = *(cmp_row *const *)x, *b = *(cmp_row *const *)y;
    if (a->p != b->p)
        return a->p < b->p ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The interval of row r at two-sided level alpha. */
static void row_interval(cmp_row *r, double alpha)
{
    double half = gsl_cdf_tdist_Pinv(1 - alpha / 2, r->d.df) * r->se;
    r->d.lo = r->d.diff - half;
    r->d.hi = r->d.diff + half;
}

/* Adjusts the rows with an interval over their family (report.h). */
static void rows_adjust(cmp_row *rows, int n, int adjust)
{
    const double alpha = 0.05;
    cmp_row **fam = malloc((size_t)n * sizeof *fam + 1);
    int m = 0;
    for (int i = 0; fam && i < n; i++)
        if (!isnan(rows[i].p))
            fam[m++] = &rows[i];
    if (!fam || m == 0 || adjust == AN_ADJUST_NONE) {
        free(fam);
        return;
    }
    if (adjust == AN_ADJUST_BONFERRONI) {
        for (int i = 0; i < m; i++) {
            fam[i]->p_adj = fmin(1.0, m * fam[i]->p);
            row_interval(fam[i], alpha / m);
        }
        free(fam);
        return;
    }
    qsort(fam, (size_t)m, sizeof *fam, by_p);
    double level = 0, running = 0;
    int stopped = 0;
    for (int i = 0; i < m; i++) {
        double step = alpha / (m - i);
        if (!stopped) {
            level = step;
            stopped = fam[i]->p > step;
        }
        running = fmax(running, fmin(1.0, (m - i) * fam[i]->p));
        fam[i]->p_adj = running;
        row_interval(fam[i], level);
    }
    free(fam);
}

/* The comparisons of the plan, in table order. */
static cmp_row *rows_build(const cmp_plan *p, const an_report_groups *agg, int *n_rows)
{
    cmp_row *rows = calloc((size_t)p->n_pairs * 8 + 1, sizeof *rows);
    int n = 0;
    for (int i = 0; rows && i < p->n_pairs; i++) {
        const an_report_group *a = &agg->groups[p->pairs[i].base];
        const an_report_group *b = &agg->groups[p->pairs[i].other];
        const char *name = NULL;
        for (int k = 0; compared(a, k, &name); k++) {
            cmp_row *r = &rows[n];
            r->sa = compared(a, k, &name);
            r->sb = compared(b, k, &r->name);
            if (r->sa->n == 0 || r->sb->n == 0)
                continue;
            r->pair = i, r->stat = k;
            an_report_diff_of(r->sa, r->sb, &r->d);
            r->raw = verdict(&r->d);
            r->se = r->p = r->p_adj = NAN;
            if (!isnan(r->d.lo)) {
                r->se = sqrt(r->sa->sd * r->sa->sd / r->sa->n + r->sb->sd * r->sb->sd / r->sb->n);
                r->p = 2 * gsl_cdf_tdist_Q(fabs(r->d.diff) / r->se, r->d.df);
                r->p_adj = r->p;
            }
            n++;
        }
    }
    *n_rows = n;
    return rows;
}

static const char *const adjust_names[] = {"", "bonferroni", "holm"};

static int plan_write(const cmp_plan *p, const an_report_groups *agg, int adjust, int csv,
                      FILE *out, sim_err *err)
{
    int n = 0, m = 0;
    cmp_row *rows = rows_build(p, agg, &n);
    if (!rows)
        return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    rows_adjust(rows, n, adjust);
    for (int i = 0; i < n; i++)
        m += !isnan(rows[i].p);
    int vw = (int)strlen("value");
    for (int v = 1; v < p->n_values; v++)
        if ((int)strlen(p->values[v]) > vw)
            vw = (int)strlen(p->values[v]);
    if (csv) {
        fputs("key,v1,v2,runs_v1,runs_v2,statistic,n1,n2,mean_v1,mean_v2,diff,ci_lo,ci_hi,"
              "verdict", out);
        fputs(adjust ? ",p,p_adjusted,adjust,m,raw_verdict\n" : "\n", out);
    } else {
        char how[96] = "";
        if (adjust)
            snprintf(how, sizeof how, "; %s over the %d comparisons with an interval",
                     adjust == AN_ADJUST_HOLM ? "Holm" : "Bonferroni", m);
        fprintf(out, "\n%s: each value minus %s, 95%% interval of the difference (Welch%s)\n"
                "%-*s  %-14s  %-20s  %10s  %10s  %11s  %-24s  %s%s\n", p->key, p->values[0],
                how, vw, "value", "runs", "statistic", "base", "value", "difference",
                "interval", "verdict", adjust ? "       raw" : "");
    }
    for (int i = 0; i < n; i++) {
        const cmp_row *r = &rows[i];
        const an_report_group *a = &agg->groups[p->pairs[r->pair].base];
        const an_report_group *b = &agg->groups[p->pairs[r->pair].other];
        const char *value = p->values[p->pairs[r->pair].value];
        const char *v = verdict(&r->d);
        if (csv) {
            fprintf(out, "%s,%s,%s,%lld,%lld,%s,%d,%d,%.9g,%.9g,%.9g,", p->key, p->values[0],
                    value, (long long)a->run_ids[0], (long long)b->run_ids[0], r->name,
                    r->sa->n, r->sb->n, r->sa->mean, r->sb->mean, r->d.diff);
            if (r->d.exact)
                fprintf(out, ",,%s", v);
            else
                fprintf(out, "%.9g,%.9g,%s", r->d.lo, r->d.hi, v);
            if (adjust)
                fprintf(out, ",%.9g,%.9g,%s,%d,%s", r->p, r->p_adj, adjust_names[adjust], m,
                        r->raw);
            fputc('\n', out);
            continue;
        }
        char ra[40], rb[40], runs[84], interval[64];
        runs_cell(ra, sizeof ra, a);
        runs_cell(rb, sizeof rb, b);
        snprintf(runs, sizeof runs, "%s vs %s", ra, rb);
        if (r->d.exact)
            snprintf(interval, sizeof interval, "(same for every seed)");
        else if (isnan(r->d.lo))
            snprintf(interval, sizeof interval, "-");
        else
            snprintf(interval, sizeof interval, "[%+.4g, %+.4g]", r->d.lo, r->d.hi);
        fprintf(out, "%-*s  %-14s  %-20s  %10.4g  %10.4g  %+11.4g  %-24s  ", vw, value, runs,
                r->name, r->sa->mean, r->sb->mean, r->d.diff, interval);
        if (adjust)
            fprintf(out, "%-12s  %s\n", r->d.exact ? "-" : v, r->d.exact ? "-" : r->raw);
        else
            fprintf(out, "%s\n", r->d.exact ? "-" : v);
    }
    free(rows);
    return 0;
}

int an_report_compare_write(const an_report_groups *agg, const char *compare, int adjust,
                            int csv, FILE *out, sim_err *err)
{
    cmp_plan p = {.n_values = 0};
    int ret = plan_build(agg, compare ? compare : "", &p, err);
    if (ret == 0 && out) {
        ret = plan_write(&p, agg, adjust, csv, out, err);
        if (ret == 0 && (fflush(out) != 0 || ferror(out)))
            ret = sim_err_set(err, SIM_EIO, "report: write failed");
    }
    plan_release(&p);
    return ret;
}
