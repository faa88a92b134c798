/* The statistics of the aggregated report: mean, spread and the 95%
 * confidence interval of a group's mean over its seeds (Student's t with
 * n - 1 degrees of freedom), the interval of the difference of two groups'
 * means (Welch's t, Welch-Satterthwaite degrees of freedom); --compare's
 * table of such differences is report_compare.c's.
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
    d->exact = 0;
    if (a->n < 2 || b->n < 2)
        return;
    if (a->min == a->max && b->min == b->max) {
        d->exact = 1; /* every value equal: min - min is exact where mean - mean may not be */
        d->diff = b->min - a->min;
        return;
    }
    double va = a->sd * a->sd / a->n, vb = b->sd * b->sd / b->n;
    double se = sqrt(va + vb);
    d->df = (va + vb) * (va + vb) / (va * va / (a->n - 1) + vb * vb / (b->n - 1));
    double half = gsl_cdf_tdist_Pinv(0.975, d->df) * se;
    d->lo = d->diff - half;
    d->hi = d->diff + half;
}
