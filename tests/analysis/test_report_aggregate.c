/* analysis/report_aggregate.c: aggregation over seeds (--aggregate): groups,
 * mean and spread, and the text and CSV tables. */
#include <criterion/criterion.h>
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
    cr_assert_eq(d.lo, 1.0);
    cr_assert_eq(d.hi, 1.0);
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
    cr_assert(strstr(buf, "algorithm.lr: 0.2 - 0.1, 95% interval"), "%s", buf);
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
    cr_assert(strstr(err.msg, "expected SECTION.KEY=V1,V2"), "%s", err.msg);
    opts.compare = "algorithm.lr=0.1,0.9";
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "no two groups"), "%s", err.msg);
    fclose(f);
}
