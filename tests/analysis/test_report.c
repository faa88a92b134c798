/* analysis/report.c: building the report. The runs chosen (all, or those
 * asked for, in that order), an explicit baseline, every usage error, and
 * printing an empty database or a missing file. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/db.h"
#include "analysis/report.h"
#include "tests/analysis/fixtures.h"
#include "tests/common.h"

Test(report, explicit_baseline_and_selected_runs)
{
    an_db *db = fx_report_known_db();
    int64_t ids[] = {R_FAST, R_BASE};
    an_report_opts opts = {.run_ids = ids, .n_run_ids = 2, .target_metric = "test_accuracy",
                           .target_value = 0.8, .baseline = R_OTHER};
    an_report rep;
    sim_err err = {0};
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_eq(rep.n_rows, 2);
    cr_assert_eq(rep.rows[0].id, R_FAST);
    cr_assert_eq(rep.rows[1].id, R_BASE);
    cr_assert_eq(rep.rows[0].baseline_id, R_OTHER);
    cr_assert_float_eq(rep.rows[0].speedup, 2.0, 1e-12);   /* 1.0 / 0.5 */
    cr_assert_float_eq(rep.rows[1].speedup, 0.5, 1e-12);   /* 1.0 / 2.0 */
    an_report_release(&rep);
    an_db_close(db);
}

Test(report, usage_errors)
{
    an_db *db = fx_report_known_db();
    an_report rep;
    sim_err err = {0};
    an_report_opts opts = {.target_metric = "accuracy", .target_value = 0.8};
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "'accuracy'") != NULL, "%s", err.msg);
    cr_assert_eq(rep.n_rows, 0);

    int64_t ids[] = {R_BASE, 99};
    an_report_opts bad_run = {.run_ids = ids, .n_run_ids = 2};
    cr_assert_eq(an_report_build(db, &bad_run, &rep, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "99") != NULL, "%s", err.msg);

    an_report_opts bad_base = {.baseline = 42};
    cr_assert_eq(an_report_build(db, &bad_base, &rep, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--baseline 42") != NULL, "%s", err.msg);
    an_db_close(db);

    char metric[32];
    double v = 0;
    cr_assert_eq(an_report_parse_target("test_loss=0.25", metric, sizeof metric, &v, &err), 0);
    cr_assert_str_eq(metric, "test_loss");
    cr_assert_float_eq(v, 0.25, 1e-15);
    cr_assert_eq(an_report_parse_target("loss=0.25", metric, sizeof metric, &v, &err),
                 SIM_EUSAGE);
    cr_assert(strstr(err.msg, "unknown metric 'loss'") != NULL, "%s", err.msg);
    cr_assert_eq(an_report_parse_target("test_loss=", metric, sizeof metric, &v, &err),
                 SIM_EUSAGE);
    cr_assert_eq(an_report_parse_target("test_loss=abc", metric, sizeof metric, &v, &err),
                 SIM_EUSAGE);
    cr_assert_eq(an_report_parse_target("0.9", metric, sizeof metric, &v, &err),
                 SIM_EUSAGE);
    /* accuracy is a fraction: a percent is refused with what to write */
    cr_assert_eq(an_report_parse_target("test_accuracy=80", metric, sizeof metric, &v, &err),
                 SIM_EUSAGE);
    cr_assert_str_eq(err.msg, "--target 'test_accuracy=80': test_accuracy is a fraction in "
                              "[0, 1] (for a percent write e.g. 0.8, not 80)");
    cr_assert_eq(an_report_parse_target("test_accuracy=-0.1", metric, sizeof metric, &v, &err),
                 SIM_EUSAGE);
    cr_assert_eq(an_report_parse_target("test_accuracy=1", metric, sizeof metric, &v, &err), 0);
    cr_assert_eq(an_report_parse_target("train_loss=80", metric, sizeof metric, &v, &err), 0);
}

Test(report, empty_database_and_missing_file)
{
    const char *dir = test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/empty.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);
    an_report_opts opts = {0};
    FILE *f = tmpfile();
    cr_assert_eq(an_report_print(path, &opts, f, &err), 0, "%s", err.msg);
    static char buf[4096];
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strncmp(buf, "id  ", 4) == 0, "%s", buf);
    cr_assert(strstr(buf, "\nno runs\n") != NULL, "%s", buf);

    snprintf(path, sizeof path, "%s/missing.db", dir);
    f = tmpfile();
    cr_assert_eq(an_report_print(path, &opts, f, &err), SIM_EDB);
    cr_assert(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
    fclose(f);
}

/* Nearest-rank quantiles of a distribution given as values and counts. */
Test(report, staleness_quantiles_nearest_rank)
{
    const int64_t v[] = {1, 2, 3, 4}, ones[] = {1, 1, 1, 1};
    cr_assert_eq(an_report_quantile(v, ones, 4, 0.5), 2);
    cr_assert_eq(an_report_quantile(v, ones, 4, 0.9), 4);
    cr_assert_eq(an_report_quantile(v, ones, 4, 0.0), 1);
    const int64_t tail_v[] = {0, 5}, tail_c[] = {9, 1};
    cr_assert_eq(an_report_quantile(tail_v, tail_c, 2, 0.9), 0);
    cr_assert_eq(an_report_quantile(tail_v, tail_c, 2, 0.99), 5);
    const int64_t none[] = {0};
    cr_assert_eq(an_report_quantile(tail_v, none, 1, 0.5), -1);
}
