/* analysis/report_format.c: the per-run text table (aligned, fitted into
 * 120 columns) and CSV (parses, quotes names). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/db.h"
#include "analysis/report.h"
#include "tests/analysis/fixtures.h"
#include "tests/common.h"

Test(report_format, csv_output_parses)
{
    an_db *db = fx_report_known_db();
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8, .csv = 1};
    an_report rep;
    sim_err err = {0};
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cr_assert_eq(an_report_write(&rep, 1, f, &err), 0, "%s", err.msg);
    static char buf[65536];
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    an_report_release(&rep);
    an_db_close(db);

    const char *header = "id,name,algorithm,status,n_workers,final_train_loss,"
                         "final_test_accuracy,sim_time,target_metric,target,time_to_target,"
                         "baseline_id,speedup,bytes_sent,idle_fraction,mean_staleness,"
                         "consensus_distance";
    cr_assert(strncmp(buf, header, strlen(header)) == 0, "%s", buf);
    cr_assert(strncmp(buf + strlen(header),
                      ",workers.count,algorithm.lr,topology.graph\n", 43) == 0, "%s", buf);
    int lines = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        int commas = 0, quoted = 0;
        for (const char *p = line; *p; p++) {
            quoted ^= *p == '"';
            commas += *p == ',' && !quoted;
        }
        /* and the 3 keys whose values differ, last */
        cr_assert_eq(commas, 19, "line %d: %s", lines, line);
        if (strncmp(line, "2,", 2) == 0)
            cr_assert(strstr(line, ",1234567890,") != NULL, "%s", line);
        if (strncmp(line, "3,", 2) == 0) {
            /* the speedup field (13th) is 4 */
            char *p = line;
            for (int k = 0; k < 12; k++)
                p = strchr(p, ',') + 1;
            cr_assert_float_eq(strtod(p, NULL), 4.0, 1e-9, "%s", line);
        }
        lines++;
    }
    cr_assert_eq(lines, N_RUNS + 1);
}

/* A long run name is cut with '~' so that the table keeps to 120 columns;
 * all-missing columns (staleness of synchronous runs) are left out. */
Test(report_format, text_table_fits_120_columns)
{
    const char *dir = test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/wide.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    fx_report_run(db, "a_very_long_experiment_name_from_a_sweep_of_many_keys", "adaptive_local_sgd",
            "4", "0.1", fx_base_pts, 5, "done", 1234567890);
    fx_report_run(db, "short", "allreduce_sgd", "4", "0.1", fx_base_pts, 5, "done", 1000);
    an_db_close(db);
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8};
    FILE *f = tmpfile();
    cr_assert_eq(an_report_print(path, &opts, f, &err), 0, "%s", err.msg);
    static char buf[65536];
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strstr(buf, "acc>=0.8"), "%s", buf);
    cr_assert(strstr(buf, "~"), "%s", buf);
    cr_assert_null(strstr(buf, "stale"), "%s", buf);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        cr_assert_leq(strlen(line), 120, "%zu: '%s'", strlen(line), line);
}

Test(report_format, text_table_aligned)
{
    an_db *db = fx_report_known_db();
    an_db_close(db);
    /* --columns '': no key columns */
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8,
                           .columns = ""};
    FILE *f = tmpfile();
    sim_err err = {0};
    cr_assert_eq(an_report_print(fx_path(), &opts, f, &err), 0, "%s", err.msg);
    static char buf[65536];
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strstr(buf, "1.23 GB") != NULL, "%s", buf);
    cr_assert(strstr(buf, "4.00") != NULL, "%s", buf);
    cr_assert(strstr(buf, "tta(s)") != NULL, "%s", buf);
    size_t width = 0;
    int lines = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (lines == 0)
            width = strlen(line);
        cr_assert_eq(strlen(line), width, "line %d: '%s'", lines, line);
        lines++;
    }
    cr_assert_eq(lines, N_RUNS + 1);
    /* about 120 columns at most: short headers, the metric in the target cell */
    cr_assert_leq(width, 120, "%zu columns", width);
}

Test(report_format, csv_quotes_names)
{
    an_report_row row = {.id = 3, .name = "a,\"b\"", .algorithm = "dpsgd", .status = "done",
                         .n_workers = 2, .final_train_loss = 0.5,
                         .final_test_accuracy = NAN, .sim_time = 1.5, .target = NAN,
                         .time_to_target = NAN, .speedup = NAN, .bytes_sent = 12,
                         .idle_fraction = 0.0, .mean_staleness = NAN,
                         .consensus_distance = NAN};
    an_report rep = {.rows = &row, .n_rows = 1};
    FILE *f = tmpfile();
    sim_err err = {0};
    cr_assert_eq(an_report_write(&rep, 1, f, &err), 0, "%s", err.msg);
    static char buf[4096];
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    const char *line = strchr(buf, '\n') + 1;
    cr_assert_str_eq(line, "3,\"a,\"\"b\"\"\",dpsgd,done,2,0.5,,1.5,,,,,,12,0,,\n");
}

/* The keys whose values differ among the runs become columns (after the
 * algorithm in text, last in CSV); --columns chooses them. */
Test(report_format, key_columns)
{
    an_db *db = fx_report_known_db();
    sim_err err = {0};
    an_report_opts opts = {0};
    an_report rep;
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    /* local_sgd's local_steps, which only its run has, is not one */
    cr_assert_eq(rep.n_keys, 3);
    cr_assert_str_eq(rep.keys[0], "workers.count");
    cr_assert_str_eq(rep.keys[1], "algorithm.lr");
    cr_assert_str_eq(rep.keys[2], "topology.graph");
    cr_assert_str_eq(rep.key_values[(R_FAST - 1) * 3 + 2], "torus(2, 2)");
    cr_assert_str_eq(rep.key_values[(R_OTHER - 1) * 3 + 0], "8");
    cr_assert_str_eq(rep.key_values[(R_LR - 1) * 3 + 1], "0.3");
    FILE *f = tmpfile();
    cr_assert_eq(an_report_write(&rep, 0, f, &err), 0, "%s", err.msg);
    static char buf[65536];
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    an_report_release(&rep);
    cr_assert(strstr(buf, "algorithm     count lr  graph       status"), "%s", buf);
    cr_assert(strstr(buf, "local_sgd     4     0.1 torus(2, 2) done"), "%s", buf);

    /* blanks after the commas (and around a key) are allowed */
    opts.columns = "network.bandwidth, \talgorithm.local_steps ";
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_str_eq(rep.keys[1], "algorithm.local_steps");
    cr_assert_eq(rep.n_keys, 2);
    cr_assert_eq(rep.keys_chosen, 1);
    cr_assert_str_eq(rep.key_values[0], rep.key_values[2]);
    cr_assert_str_eq(rep.key_values[(R_FAST - 1) * 2 + 1], "4");
    cr_assert_str_eq(rep.key_values[(R_BASE - 1) * 2 + 1], "");
    an_report_release(&rep);
    opts.columns = "network.bandwith";
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--columns network.bandwith: no run listed has this key"), "%s",
              err.msg);
    opts.columns = "bandwidth";
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "expected SECTION.KEY"), "%s", err.msg);
    an_db_close(db);
}
