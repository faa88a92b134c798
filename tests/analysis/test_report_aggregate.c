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
    cr_assert(strstr(buf, "0.5667 [0.2000, 1.2000]") != NULL, "%s", buf);
    cr_assert(strstr(buf, "1.250 [0.500, 2.000]") != NULL, "%s", buf);
    cr_assert(strstr(buf, "2/3") != NULL, "%s", buf);
    cr_assert(strstr(buf, "1,2,3") != NULL, "%s", buf);
    int lines = 0;
    for (const char *p = buf; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 3);

    opts.csv = 1;
    f = tmpfile();
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), 0, "%s", err.msg);
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    const char *head = "run_ids,n_runs,name,algorithm,n_workers,target_metric,target,"
                       "n_reached,final_train_loss_mean,final_train_loss_min,"
                       "final_train_loss_max,";
    cr_assert(strncmp(buf, head, strlen(head)) == 0, "%s", buf);
    const char *row = strchr(buf, '\n') + 1;
    const char *first = "1;2;3,3,s1,allreduce_sgd,4,test_accuracy,0.8,2,0.566666667,0.2,1.2,";
    cr_assert(strncmp(row, first, strlen(first)) == 0, "%s", row);
    int commas = 0;
    for (const char *p = row; *p && *p != '\n'; p++)
        commas += *p == ',';
    cr_assert_eq(commas, 7 + 27);
}
