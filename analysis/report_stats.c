/* The statistics of the aggregated report: mean, spread and the 95%
 * confidence interval of a group's mean over its seeds (Student's t with
 * n - 1 degrees of freedom), the interval of the difference of two groups'
 * means (Welch's t, Welch-Satterthwaite degrees of freedom), and
 * --compare's table of such differences.
 *
 * Accumulation: stat_add keeps the running sum in mean (divided at the
 * end, so a mean is exactly sum / n) and Welford's running mean and sum of
 * squared deviations in ci and sd until report_stat_finish. */
#include "analysis/report.h"
#include "analysis/report_internal.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void report_stat_add(an_report_stat *s, double v)
{
    if (isnan(v))
        return;
    if (s->n == 0) {
        s->mean = s->min = s->max = v;
        s->ci = v;
        s->sd = 0.0;
    } else {
        s->mean += v;
        s->min = fmin(s->min, v);
        s->max = fmax(s->max, v);
        double delta = v - s->ci;
        s->ci += delta / (s->n + 1);
        s->sd += delta * (v - s->ci);
    }
    s->n++;
}

void report_stat_finish(an_report_stat *s)
{
    if (s->n == 0) {
        s->mean = s->min = s->max = s->sd = s->ci = NAN;
        return;
    }
    s->mean /= s->n;
    if (s->n < 2) {
        s->sd = s->ci = NAN;
        return;
    }
    s->sd = sqrt(fmax(s->sd, 0.0) / (s->n - 1));
    s->ci = gsl_cdf_tdist_Pinv(0.975, s->n - 1) * s->sd / sqrt((double)s->n);
}

void an_report_stat_of(const double *values, int n, an_report_stat *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < n; i++)
        report_stat_add(s, values[i]);
    report_stat_finish(s);
}

void an_report_diff_of(const an_report_stat *a, const an_report_stat *b, an_report_diff *d)
{
    d->diff = a->n > 0 && b->n > 0 ? b->mean - a->mean : NAN;
    d->lo = d->hi = d->df = NAN;
    if (a->n < 2 || b->n < 2)
        return;
    double va = a->sd * a->sd / a->n, vb = b->sd * b->sd / b->n;
    double se = sqrt(va + vb);
    if (se == 0.0) {
        d->lo = d->hi = d->diff;
        return;
    }
    d->df = (va + vb) * (va + vb) / (va * va / (a->n - 1) + vb * vb / (b->n - 1));
    double half = gsl_cdf_tdist_Pinv(0.975, d->df) * se;
    d->lo = d->diff - half;
    d->hi = d->diff + half;
}

/* ---- --compare ---------------------------------------------------------- */

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

/* Splits fingerprint fp into the value of key (copied to value, "" when
 * absent) and the rest (copied to rest). Comparing methods (key
 * algorithm.name), the rest leaves out the methods' own keys. */
static void fp_split(const char *fp, const char *key, char *value, size_t vlen, char *rest,
                     size_t rlen)
{
    size_t klen = strlen(key), used = 0;
    int methods = strcmp(key, "algorithm.name") == 0;
    value[0] = rest[0] = '\0';
    for (const char *p = fp; *p;) {
        const char *end = strchr(p, '\x1e');
        size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
        const char *sep = memchr(p, '\x1f', len);
        char name[128];
        snprintf(name, sizeof name, "%.*s", sep ? (int)(sep - p) : 0, p);
        if (strncmp(p, key, klen) == 0 && p[klen] == '\x1f')
            snprintf(value, vlen, "%.*s", (int)(len - klen - 2), p + klen + 1);
        else if (methods && !report_common_key(name))
            ;
        else if (used + len < rlen)
            used += (size_t)snprintf(rest + used, rlen - used, "%.*s", (int)len, p);
        p += len;
    }
}

static int parse_compare(const char *text, char *key, size_t klen, char *v1, char *v2,
                         size_t vlen, sim_err *err)
{
    const char *eq = strchr(text, '=');
    const char *comma = eq ? strchr(eq, ',') : NULL;
    if (!eq || !comma || eq == text || comma == eq + 1 || !comma[1] || strchr(comma + 1, ',') ||
        !memchr(text, '.', (size_t)(eq - text)) || (size_t)(eq - text) >= klen)
        return sim_err_set(err, SIM_EUSAGE, "--compare '%s': expected SECTION.KEY=V1,V2 such"
                           " as algorithm.name=allreduce_sgd,local_sgd", text);
    snprintf(key, klen, "%.*s", (int)(eq - text), text);
    snprintf(v1, vlen, "%.*s", (int)(comma - eq - 1), eq + 1);
    snprintf(v2, vlen, "%s", comma + 1);
    return 0;
}

/* "held" words: the interval's side of zero. */
static const char *verdict(const an_report_diff *d)
{
    if (isnan(d->lo))
        return "n < 2";
    if (d->lo > 0)
        return "higher";
    if (d->hi < 0)
        return "lower";
    return "inconclusive";
}

int an_report_compare_write(const an_report_groups *agg, const char *compare, int csv,
                            FILE *out, sim_err *err)
{
    char key[128], v1[512], v2[512];
    int ret = parse_compare(compare, key, sizeof key, v1, v2, sizeof v1, err);
    if (ret != 0)
        return ret;
    size_t big = 1 << 16;
    char *val = malloc(sizeof v1), *rest_a = malloc(big), *rest_b = malloc(big);
    if (!val || !rest_a || !rest_b) {
        free(val);
        free(rest_a);
        free(rest_b);
        return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    }
    int pairs = 0;
    if (csv)
        fputs("key,v1,v2,runs_v1,runs_v2,statistic,n1,n2,mean_v1,mean_v2,diff,ci_lo,ci_hi,"
              "verdict\n", out);
    else
        fprintf(out, "\n%s: %s - %s, 95%% interval of the difference (Welch)\n", key, v2, v1);
    for (int i = 0; i < agg->n_groups; i++) {
        fp_split(agg->fingerprints[i], key, val, sizeof v1, rest_a, big);
        if (strcmp(val, v1) != 0)
            continue;
        for (int j = 0; j < agg->n_groups; j++) {
            if (j == i)
                continue;
            fp_split(agg->fingerprints[j], key, val, sizeof v1, rest_b, big);
            if (strcmp(val, v2) != 0 || strcmp(rest_a, rest_b) != 0)
                continue;
            const an_report_group *a = &agg->groups[i], *b = &agg->groups[j];
            pairs++;
            if (!csv)
                fprintf(out, "groups of runs %lld... (%d seeds) and %lld... (%d seeds):\n",
                        (long long)a->run_ids[0], a->n_runs, (long long)b->run_ids[0],
                        b->n_runs);
            const char *name = NULL;
            for (int k = 0; compared(a, k, &name); k++) {
                const an_report_stat *sa = compared(a, k, &name), *sb = compared(b, k, &name);
                if (sa->n == 0 || sb->n == 0)
                    continue;
                an_report_diff d;
                an_report_diff_of(sa, sb, &d);
                if (csv)
                    fprintf(out, "%s,%s,%s,%lld,%lld,%s,%d,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%s\n",
                            key, v1, v2, (long long)a->run_ids[0], (long long)b->run_ids[0],
                            name, sa->n, sb->n, sa->mean, sb->mean, d.diff, d.lo, d.hi,
                            verdict(&d));
                else
                    fprintf(out, "  %-20s %10.4g -> %-10.4g diff %+.4g  [%+.4g, %+.4g]  %s\n",
                            name, sa->mean, sb->mean, d.diff, d.lo, d.hi, verdict(&d));
            }
        }
    }
    free(val);
    free(rest_a);
    free(rest_b);
    if (pairs == 0)
        return sim_err_set(err, SIM_EUSAGE, "--compare %s: no two groups (done or diverged)"
                           " differ only in %s with the values %s and %s", compare, key, v1,
                           v2);
    if (fflush(out) != 0 || ferror(out))
        return sim_err_set(err, SIM_EIO, "report: write failed");
    return 0;
}
