/* analysis/report_aggregate.c: aggregation over seeds (--aggregate): groups,
 * mean and spread, and the text and CSV tables. */
#include <criterion/criterion.h>
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/db.h"
#include "analysis/report.h"
#include "tests/analysis/fixtures.h"
#include "tests/common.h"

Test(report_aggregate, aggregate_seeds_mean_and_spread)
{
    fx_report_seeds_db();
    sim_err err = {0};
    an_db *db = an_db_open_readonly(fx_path(), &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8};
    an_report rep;
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    an_report_groups agg;
    cr_assert_eq(an_report_aggregate(db, &rep, &agg, &err), 0, "%s", err.msg);
    an_db_close(db);
    cr_assert_eq(agg.n_groups, 2);
    const an_report_group *g = &agg.groups[0];
    cr_assert_eq(g->n_runs, 3);
    cr_assert_eq(g->run_ids[0], 1);
    cr_assert_eq(g->run_ids[2], 3);
    cr_assert_str_eq(g->name, "s1");
    /* final losses 0.3, 0.2, 1.2 */
    cr_assert_float_eq(g->final_train_loss.mean, 1.7 / 3, 1e-12);
    cr_assert_float_eq(g->final_train_loss.min, 0.2, 1e-12);
    cr_assert_float_eq(g->final_train_loss.max, 1.2, 1e-12);
    cr_assert_eq(g->final_train_loss.n, 3);
    /* time to 0.8: 2.0, 0.5 and never */
    cr_assert_eq(g->n_reached, 2);
    cr_assert_eq(g->time_to_target.n, 2);
    cr_assert_float_eq(g->time_to_target.mean, 1.25, 1e-12);
    cr_assert_float_eq(g->time_to_target.min, 0.5, 1e-12);
    cr_assert_float_eq(g->time_to_target.max, 2.0, 1e-12);
    cr_assert_float_eq(g->bytes_sent.mean, 200, 1e-9);
    cr_assert_float_eq(g->bytes_sent.min, 100, 1e-9);
    cr_assert_float_eq(g->bytes_sent.max, 300, 1e-9);
    cr_assert_float_eq(g->sim_time.mean, (2.5 + 1.0 + 3.0) / 3, 1e-12);
    cr_assert_eq(g->mean_staleness.n, 0);
    cr_assert(isnan(g->mean_staleness.mean));
    cr_assert_eq(agg.groups[1].n_runs, 1);
    cr_assert_eq(agg.groups[1].run_ids[0], 4);
    an_report_groups_release(&agg);
    an_report_release(&rep);
}

Test(report_aggregate, aggregate_text_and_csv)
{
    fx_report_seeds_db();
    sim_err err = {0};
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8,
                           .aggregate = 1};
    FILE *f = tmpfile();
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), 0, "%s", err.msg);
    static char buf[65536];
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strncmp(buf, "runs   seeds", 12) == 0, "%s", buf);
    /* losses 0.3, 0.2, 1.2: sd 0.55076, t(0.975, 2) = 4.30265, h = 4.30265 sd / sqrt(3);
     * times to target 2.0, 0.5: sd 1.06066, t(0.975, 1) = 12.7062 */
    cr_assert(strstr(buf, "0.5667 +-1.3682") != NULL, "%s", buf);
    cr_assert(strstr(buf, "1.250 +-9.530") != NULL, "%s", buf);
    /* the groups told apart by the key that differs (lr), not by the seed */
    cr_assert(strstr(buf, "algorithm      lr ") != NULL, "%s", buf);
    cr_assert_null(strstr(buf, "seed "), "%s", buf);
    cr_assert(strstr(buf, "2/3") != NULL, "%s", buf);
    cr_assert(strstr(buf, "1,2,3") != NULL, "%s", buf);
    int lines = 0;
    for (const char *p = buf; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 4); /* and the line that says what +- is */

    opts.csv = 1;
    f = tmpfile();
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), 0, "%s", err.msg);
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    const char *head = "run_ids,n_runs,name,algorithm,n_workers,target_metric,target,"
                       "n_reached,final_train_loss_mean,final_train_loss_min,"
                       "final_train_loss_max,final_train_loss_ci_lo,final_train_loss_ci_hi,";
    cr_assert(strncmp(buf, head, strlen(head)) == 0, "%s", buf);
    const char *row = strchr(buf, '\n') + 1;
    const char *first = "1;2;3,3,s1,allreduce_sgd,4,test_accuracy,0.8,2,0.566666667,0.2,1.2,";
    cr_assert(strncmp(row, first, strlen(first)) == 0, "%s", row);
    int commas = 0;
    for (const char *p = row; *p && *p != '\n'; p++)
        commas += *p == ',';
    cr_assert_eq(commas, 7 + 45 + 1); /* 9 statistics of 5 columns, the key lr */
}

/* Known answers: 1..5 has mean 3 and half-width t(0.975, 4) sqrt(2.5) / sqrt(5). */
Test(report_aggregate, confidence_intervals)
{
    const double a[] = {1, 2, 3, 4, 5}, b[] = {3, 4, 5, 6, 7}, c[] = {11, 12, 13, 14, 15};
    an_report_stat sa, sb, sc, one;
    an_report_stat_of(a, 5, &sa);
    cr_assert_float_eq(sa.mean, 3.0, 1e-15);
    cr_assert_float_eq(sa.sd, sqrt(2.5), 1e-12);
    cr_assert_float_eq(sa.ci, 2.7764451052 * sqrt(2.5) / sqrt(5.0), 1e-9);
    an_report_stat_of(a, 1, &one);
    cr_assert(isnan(one.ci) && isnan(one.sd));
    cr_assert_eq(one.mean, 1.0);
    /* equal spreads and sizes: Welch's df = 2 (n - 1) = 8, t(0.975, 8) = 2.3060041 */
    an_report_stat_of(b, 5, &sb);
    an_report_diff d;
    an_report_diff_of(&sa, &sb, &d);
    cr_assert_float_eq(d.diff, 2.0, 1e-12);
    cr_assert_float_eq(d.df, 8.0, 1e-9);
    cr_assert_float_eq(d.lo, 2.0 - 2.3060041350, 1e-8);
    cr_assert_float_eq(d.hi, 2.0 + 2.3060041350, 1e-8);
    an_report_stat_of(c, 5, &sc);
    an_report_diff_of(&sa, &sc, &d);
    cr_assert_gt(d.lo, 0.0);
    /* no spread at all: a degenerate interval */
    const double flat1[] = {1, 1}, flat2[] = {2, 2};
    an_report_stat_of(flat1, 2, &sa);
    an_report_stat_of(flat2, 2, &sb);
    an_report_diff_of(&sa, &sb, &d);
    cr_assert_eq(d.diff, 1.0);
    cr_assert_eq(d.exact, 1, "no spread: an exact difference");
    cr_assert(isnan(d.lo) && isnan(d.hi), "and no interval");
    an_report_diff_of(&one, &sb, &d);
    cr_assert_float_eq(d.diff, 1.0, 1e-15);
    cr_assert(isnan(d.lo));
}

Test(report_aggregate, compare_two_configurations)
{
    fx_report_seeds_db();
    sim_err err = {0};
    an_report_opts opts = {.aggregate = 1, .compare = "algorithm.lr=0.1,0.2"};
    FILE *f = tmpfile();
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), 0, "%s", err.msg);
    static char buf[65536];
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strstr(buf, "algorithm.lr: each value minus 0.1, 95% interval of the "
                          "difference (Welch)"), "%s", buf);
    cr_assert(strstr(buf, "final_train_loss"), "%s", buf);
    cr_assert(strstr(buf, "n < 2"), "%s", buf);

    opts.csv = 1;
    f = tmpfile();
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), 0, "%s", err.msg);
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    /* losses 0.3, 0.2, 1.2 against 0.3 */
    cr_assert(strstr(buf, "algorithm.lr,0.1,0.2,1,4,final_train_loss,3,1,0.566666667,0.3,"
                          "-0.266666667,nan,nan,n < 2"), "%s", buf);

    opts.compare = "algorithm.lr=0.1";
    f = tmpfile();
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "expected SECTION.KEY=BASE,V1,..."), "%s", err.msg);
    opts.compare = "algorithm.lr=0.1,0.9";
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "no finished group has algorithm.lr = '0.9' (its values: 0.1, "
                              "0.2)"), "%s", err.msg);
    fclose(f);
}

/* Three methods, two runs each (seeds; fx_report_run): allreduce_sgd
 * (final accuracy 0.85, 0.9), dpsgd (0.5, 0.85), asgd (0.85, 0.85); the
 * idle fraction is 0.25 in every run. Written to fx_path(). */
static void three_methods_db(void)
{
    an_db *db = fx_report_known_db(); /* a fresh file; its runs are replaced */
    an_db_close(db);
    remove(fx_path());
    sim_err err = {0};
    db = an_db_open(fx_path(), &err);
    cr_assert_not_null(db, "%s", err.msg);
    fx_report_run(db, "a1", "allreduce_sgd", "4", "0.1", fx_base_pts, 5, "done", 10);
    fx_report_run(db, "a2", "allreduce_sgd", "4", "0.1", fx_fast_pts, 3, "done", 10);
    fx_report_run(db, "d1", "dpsgd", "4", "0.1", fx_never_pts, 3, "done", 10);
    fx_report_run(db, "d2", "dpsgd", "4", "0.1", fx_other_pts, 1, "done", 10);
    fx_report_run(db, "s1", "asgd", "4", "0.1", fx_base_pts, 5, "done", 10);
    fx_report_run(db, "s2", "asgd", "4", "0.1", fx_base_pts, 5, "done", 10);
    an_db_close(db);
}

static long print_compare(const char *compare, int csv, char *buf, size_t size, sim_err *err)
{
    an_report_opts opts = {.aggregate = 1, .compare = compare, .csv = csv};
    FILE *f = tmpfile();
    int rc = an_report_print(fx_path(), &opts, f, err);
    long len = ftell(f);
    test_stream_read(f, buf, size);
    fclose(f);
    return rc < 0 ? -1 - len : len;
}

/* KEY=BASE,V1,V2: each value against the first in one table; the Welch
 * interval by hand for dpsgd - allreduce_sgd's accuracy; a statistic with
 * no spread in either group is an exact difference, no interval, no
 * verdict. */
Test(report_aggregate, compare_each_value_against_the_first)
{
    three_methods_db();
    static char buf[65536];
    sim_err err = {0};
    cr_assert_gt(print_compare("algorithm.name=allreduce_sgd,dpsgd,asgd", 1, buf, sizeof buf,
                               &err), 0, "%s", err.msg);
    /* a = {0.85, 0.9}, b = {0.5, 0.85}: diff -0.2, va = 0.000625, vb = 0.030625,
     * df = 0.03125^2 / (va^2 + vb^2) = 1.0407993, t(0.975, df) = 11.711...;
     * the interval contains 0 */
    const char *row = strstr(buf, "algorithm.name,allreduce_sgd,dpsgd,1,3,final_test_accuracy,"
                                  "2,2,0.875,0.675,-0.2,");
    cr_assert_not_null(row, "%s", buf);
    double lo = 0, hi = 0;
    cr_assert_eq(sscanf(row + strlen("algorithm.name,allreduce_sgd,dpsgd,1,3,final_test_"
                                     "accuracy,2,2,0.875,0.675,-0.2,"), "%lf,%lf", &lo, &hi),
                 2, "%s", row);
    double se = sqrt(0.03125), df = 0.03125 * 0.03125 / (0.000625 * 0.000625 +
                                                         0.030625 * 0.030625);
    cr_assert_float_eq(df, 1.0407993, 1e-6);
    double t = (hi - lo) / (2 * se);
    cr_assert(t > 11 && t < 13, "t(0.975, %g) = %g", df, t);
    cr_assert_float_eq((lo + hi) / 2, -0.2, 1e-9);
    cr_assert(strstr(row, ",inconclusive\n") < strchr(row, '\n') + 1, "%s", row);
    /* both against allreduce_sgd; the idle fraction is 0.25 everywhere */
    cr_assert(strstr(buf, "algorithm.name,allreduce_sgd,asgd,1,5,final_test_accuracy,2,2,"
                          "0.875,0.85,-0.025,"), "%s", buf);
    cr_assert(strstr(buf, "algorithm.name,allreduce_sgd,dpsgd,1,3,idle_fraction,2,2,0.25,"
                          "0.25,0,,,exact\n"), "%s", buf);
    cr_assert_null(strstr(buf, "algorithm.name,dpsgd,asgd"), "not each against each");

    cr_assert_gt(print_compare("algorithm.name=allreduce_sgd,dpsgd,asgd", 0, buf, sizeof buf,
                               &err), 0, "%s", err.msg);
    const char *head = strstr(buf, "algorithm.name: each value minus allreduce_sgd, 95% "
                                   "interval of the difference");
    cr_assert_not_null(head, "%s", buf);
    cr_assert_null(strstr(head + 40, "each value minus"), "one table: %s", buf);
    cr_assert(strstr(head, "\ndpsgd  1... vs 3...") && strstr(head, "\nasgd   1... vs 5..."),
              "%s", buf);
    const char *idle = strstr(head, "idle_fraction");
    cr_assert_not_null(idle);
    cr_assert(strstr(idle, "(same for every seed)") < strchr(idle, '\n'), "%s", idle);
    cr_assert(strstr(idle, "inconclusive") > strchr(idle, '\n') ||
              !strstr(idle, "inconclusive"), "no verdict on an exact difference: %s", idle);
}

/* Every --compare error comes before any output (stdout stays empty): a
 * misspelt key is named with the close match, a value no group has is
 * named with those there are. */
Test(report_aggregate, compare_errors_print_nothing)
{
    three_methods_db();
    static char buf[65536];
    sim_err err = {0};
    cr_assert_eq(print_compare("algoritm.name=allreduce_sgd,dpsgd", 0, buf, sizeof buf, &err),
                 -1, "stdout: %s", buf);
    cr_assert_str_eq(err.msg, "--compare algoritm.name=allreduce_sgd,dpsgd: no run has the "
                              "key 'algoritm.name' (did you mean 'algorithm.name'?)");
    cr_assert_eq(print_compare("algorithm.name=allreduce_sgd,dpsdg", 0, buf, sizeof buf, &err),
                 -1, "stdout: %s", buf);
    cr_assert_str_eq(err.msg, "--compare algorithm.name=allreduce_sgd,dpsdg: no finished group "
                              "has algorithm.name = 'dpsdg' (its values: allreduce_sgd, "
                              "dpsgd, asgd)");
    cr_assert_eq(print_compare("algorithm.name=dpsgd", 1, buf, sizeof buf, &err), -1);
    cr_assert(strstr(err.msg, "expected SECTION.KEY=BASE,V1,..."), "%s", err.msg);
    cr_assert_eq(print_compare("algorithm.name=dpsgd,asgd,dpsgd", 1, buf, sizeof buf, &err),
                 -1);
    cr_assert(strstr(err.msg, "the value 'dpsgd' is given twice"), "%s", err.msg);
    cr_assert_eq(print_compare("workers.count=4,8", 0, buf, sizeof buf, &err), -1);
    cr_assert(strstr(err.msg, "no finished group has workers.count = '8' (its values: 4)"),
              "%s", err.msg);
}

/* The comparison rows of a --compare CSV with --adjust: 19 fields each. */
typedef struct adj_row {
    char v2[32], stat[32], verdict[16], raw[16];
    double diff, lo, hi, p, p_adj;
    int m;
} adj_row;

static int adj_rows(const char *csv, adj_row *rows, int max)
{
    const char *at = strstr(csv, "key,v1,v2,");
    cr_assert_not_null(at, "%s", csv);
    at = strchr(at, '\n') + 1;
    int n = 0;
    for (; *at && n < max; at = strchr(at, '\n') + 1) {
        char line[512], *f[20];
        size_t len = strcspn(at, "\n");
        snprintf(line, sizeof line, "%.*s", (int)len, at);
        int k = 0;
        for (char *p = line; k < 20; k++) {
            f[k] = p;
            p = strchr(p, ',');
            if (!p) {
                k++;
                break;
            }
            *p++ = '\0';
        }
        cr_assert_eq(k, 19, "%s", f[0]);
        adj_row *r = &rows[n++];
        snprintf(r->v2, sizeof r->v2, "%s", f[2]);
        snprintf(r->stat, sizeof r->stat, "%s", f[5]);
        snprintf(r->verdict, sizeof r->verdict, "%s", f[13]);
        snprintf(r->raw, sizeof r->raw, "%s", f[18]);
        r->diff = strtod(f[10], NULL);
        r->lo = *f[11] ? strtod(f[11], NULL) : NAN;
        r->hi = *f[12] ? strtod(f[12], NULL) : NAN;
        r->p = strtod(f[14], NULL);
        r->p_adj = strtod(f[15], NULL);
        r->m = atoi(f[17]);
        if (!at[len])
            break;
    }
    return n;
}

/* --adjust bonferroni and holm against a hand computation: the family is
 * every comparison with an interval the call makes (here 8: dpsgd's
 * accuracy, loss and time, asgd's five; the n < 2 and exact rows are not
 * in it); Welch's p of dpsgd's accuracy by hand; Bonferroni's interval at
 * 1 - 0.05 / 8; Holm's adjusted p-values by the step-down on the raw ones,
 * each verdict significant exactly when its adjusted p is below 0.05. */
Test(report_aggregate, compare_adjusted_for_several_comparisons)
{
    three_methods_db();
    static char buf[65536];
    sim_err err = {0};
    an_report_opts opts = {.aggregate = 1, .csv = 1, .adjust = AN_ADJUST_BONFERRONI,
                           .compare = "algorithm.name=allreduce_sgd,dpsgd,asgd"};
    FILE *f = tmpfile();
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), 0, "%s", err.msg);
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    adj_row rows[32];
    int n = adj_rows(buf, rows, 32), m = 0;
    const adj_row *acc = NULL;
    for (int i = 0; i < n; i++) {
        m += !isnan(rows[i].p);
        if (!strcmp(rows[i].v2, "dpsgd") && !strcmp(rows[i].stat, "final_test_accuracy"))
            acc = &rows[i];
    }
    cr_assert_eq(m, 8, "%s", buf);
    cr_assert_not_null(acc);
    cr_assert_eq(acc->m, 8);
    double se = sqrt(0.000625 + 0.030625), df = 0.03125 * 0.03125 / (0.000625 * 0.000625 +
                                                                      0.030625 * 0.030625);
    double p = 2 * gsl_cdf_tdist_Q(0.2 / se, df);
    cr_assert_float_eq(acc->p, p, 1e-8, "%.9g vs %.9g", acc->p, p);
    cr_assert_float_eq(acc->p_adj, fmin(1, 8 * p), 1e-8);
    double half = gsl_cdf_tdist_Pinv(1 - 0.05 / 16, df) * se;
    cr_assert_float_eq(acc->lo, -0.2 - half, 1e-6, "%g vs %g", acc->lo, -0.2 - half);
    cr_assert_float_eq(acc->hi, -0.2 + half, 1e-6);
    cr_assert_str_eq(acc->verdict, "inconclusive");

    opts.adjust = AN_ADJUST_HOLM;
    f = tmpfile();
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), 0, "%s", err.msg);
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    n = adj_rows(buf, rows, 32);
    /* the step-down by hand: sort the raw p, p_adj(i) = max over j <= i of
     * min(1, (m - j + 1) p(j)) */
    int order[32], k = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(rows[i].p))
            order[k++] = i;
    cr_assert_eq(k, 8);
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && rows[order[j]].p < rows[order[j - 1]].p; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    double running = 0;
    for (int i = 0; i < k; i++) {
        const adj_row *r = &rows[order[i]];
        running = fmax(running, fmin(1, (k - i) * r->p));
        cr_assert_float_eq(r->p_adj, running, 1e-9, "%s %s", r->v2, r->stat);
        int sig = running < 0.05;
        cr_assert_str_eq(r->verdict, sig ? (r->diff > 0 ? "higher" : "lower") : "inconclusive",
                         "%s %s: p_adj %g", r->v2, r->stat, running);
        cr_assert(sig == !(r->lo <= 0 && r->hi >= 0), "%s %s: [%g, %g] and p_adj %g", r->v2,
                  r->stat, r->lo, r->hi, running);
    }
    /* rows outside the family keep their words */
    int exact = 0;
    for (int i = 0; i < n; i++)
        exact += !strcmp(rows[i].verdict, "exact") && !strcmp(rows[i].raw, "exact");
    cr_assert_eq(exact, 2, "%s", buf);
    cr_assert_eq(an_report_parse_adjust("hochberg", &k, &err), SIM_EUSAGE);
    cr_assert_str_eq(err.msg, "--adjust 'hochberg': expected holm, bonferroni or none");
}
