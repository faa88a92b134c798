/* `dtsim report`: time to target, automatic and explicit baselines, speedup,
 * text and CSV output, and its usage errors, on a small database with
 * known answers. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/db.h"
#include "analysis/report.h"
#include "tests/common.h"

static char db_path[4096];

typedef struct point {
    double t, acc, loss;
} point;

/* Params shared by the "same experiment" runs; workers.count is varied to
 * make a non-matching one. */
static int64_t add_run(an_db *db, const char *name, const char *algo, const char *workers,
                       const char *lr, const point *pts, int n, const char *status,
                       int64_t bytes)
{
    /* a method's own key and its logical graph do not count for the baseline */
    int local = strcmp(algo, "local_sgd") == 0;
    const char *keys[] = {"experiment.name", "experiment.seed", "experiment.target_accuracy",
                          "workers.count", "network.bandwidth", "algorithm.name",
                          "algorithm.lr", "topology.graph", "algorithm.local_steps"};
    const char *values[] = {name, "1", "0.8", workers, "10000000000", algo, lr,
                            local ? "torus(2, 2)" : "ring", "4"};
    an_run_info info = {.name = name, .algorithm = algo, .seed = 1, .n_workers = 4,
                        .config = name, .version = "0.1.0", .n_params = local ? 9 : 8,
                        .param_keys = keys, .param_values = values};
    sim_err err = {0};
    int64_t id = 0;
    cr_assert_eq(an_db_run_begin(db, &info, &id, &err), 0, "%s", err.msg);
    for (int i = 0; i < n; i++) {
        an_metric_row r = {.sim_time = pts[i].t, .iteration = 10 * i, .epoch = 0.1 * i,
                           .samples = 320 * i, .train_loss = pts[i].loss,
                           .test_loss = pts[i].loss + 0.05, .test_accuracy = pts[i].acc,
                           .consensus_distance = 0.01, .bytes_sent = 100 * i};
        cr_assert_eq(an_db_metric(db, id, &r, &err), 0, "%s", err.msg);
        /* a training-only row between evaluations: no accuracy, no loss */
        an_metric_row mid = r;
        mid.sim_time += 0.01;
        mid.iteration += 1;
        mid.test_accuracy = NAN;
        mid.train_loss = NAN;
        mid.test_loss = NAN;
        cr_assert_eq(an_db_metric(db, id, &mid, &err), 0, "%s", err.msg);
    }
    if (status) {
        an_run_summary s = {.status = status, .sim_time = pts[n - 1].t,
                            .iterations = 10 * n, .wall_seconds = 0.1,
                            .bytes_sent = bytes, .final_train_loss = pts[n - 1].loss,
                            .final_test_accuracy = pts[n - 1].acc,
                            .mean_staleness = NAN, .idle_fraction = 0.25,
                            .consensus_distance = 0.0};
        cr_assert_eq(an_db_run_finish(db, id, &s, NULL, 0, NULL, 0, &err), 0, "%s", err.msg);
    }
    return id;
}

static const point base_pts[] = {
    {0.5, 0.30, 1.0}, {1.0, 0.60, 0.7}, {1.5, 0.75, 0.5}, {2.0, 0.80, 0.4}, {2.5, 0.85, 0.3},
};
static const point fast_pts[] = {{0.25, 0.5, 0.9}, {0.5, 0.8, 0.4}, {1.0, 0.9, 0.2}};
static const point never_pts[] = {{1.0, 0.1, 2.0}, {2.0, 0.3, 1.5}, {3.0, 0.5, 1.2}};
static const point other_pts[] = {{1.0, 0.85, 0.3}};
static const point dup_pts[] = {{0.5, 0.7, 0.6}, {1.0, 0.8, 0.5}};
static const point early_pts[] = {{0.1, 0.9, 0.1}};

enum { R_FAILED = 1, R_BASE, R_FAST, R_NEVER, R_OTHER, R_DUP, R_RUNNING, R_LR, N_RUNS = R_LR };

/* Runs 1..8: a failed allreduce (must never be a baseline), the baseline,
 * a fast method, one that never reaches 0.8, an allreduce with other
 * params, a second matching allreduce (not the lowest id), a run still
 * 'running' and an allreduce with another lr. */
static an_db *known_db(void)
{
    const char *dir = test_tmpdir();
    snprintf(db_path, sizeof db_path, "%s/results.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(db_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    cr_assert_eq(add_run(db, "failed", "allreduce_sgd", "4", "0.1", early_pts, 1,
                         "failed", 10), R_FAILED);
    cr_assert_eq(add_run(db, "base", "allreduce_sgd", "4", "0.1", base_pts, 5, "done",
                         1234567890), R_BASE);
    cr_assert_eq(add_run(db, "fast", "local_sgd", "4", "0.1", fast_pts, 3, "done", 999),
                 R_FAST);
    cr_assert_eq(add_run(db, "never", "dpsgd", "4", "0.1", never_pts, 3, "diverged", 5000),
                 R_NEVER);
    cr_assert_eq(add_run(db, "other", "allreduce_sgd", "8", "0.1", other_pts, 1, "done",
                         42), R_OTHER);
    cr_assert_eq(add_run(db, "dup", "allreduce_sgd", "4", "0.1", dup_pts, 2, "done", 7),
                 R_DUP);
    cr_assert_eq(add_run(db, "running", "dpsgd", "4", "0.1", fast_pts, 3, NULL, 0),
                 R_RUNNING);
    cr_assert_eq(add_run(db, "lr", "allreduce_sgd", "4", "0.3", dup_pts, 2, "done", 7),
                 R_LR);
    cr_assert_eq(an_db_flush(db, &err), 0, "%s", err.msg);
    return db;
}

static const an_report_row *row_of(const an_report *rep, int64_t id)
{
    for (int i = 0; i < rep->n_rows; i++)
        if (rep->rows[i].id == id)
            return &rep->rows[i];
    cr_assert_fail("run %lld missing from the report", (long long)id);
    return NULL;
}

Test(report, accuracy_target_auto_baseline)
{
    an_db *db = known_db();
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8};
    an_report rep;
    sim_err err = {0};
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_eq(rep.n_rows, N_RUNS);
    for (int i = 0; i < N_RUNS; i++)
        cr_assert_eq(rep.rows[i].id, i + 1);

    const an_report_row *base = row_of(&rep, R_BASE);
    cr_assert_float_eq(base->time_to_target, 2.0, 1e-12);
    cr_assert_eq(base->baseline_id, R_BASE);
    cr_assert_float_eq(base->speedup, 1.0, 1e-12);
    cr_assert_str_eq(base->algorithm, "allreduce_sgd");
    cr_assert_str_eq(base->status, "done");
    cr_assert_eq(base->bytes_sent, 1234567890);
    cr_assert_float_eq(base->final_train_loss, 0.3, 1e-12);
    cr_assert_float_eq(base->final_test_accuracy, 0.85, 1e-12);
    cr_assert_float_eq(base->sim_time, 2.5, 1e-12);
    cr_assert_str_eq(base->target_metric, "test_accuracy");

    const an_report_row *fast = row_of(&rep, R_FAST);
    cr_assert_float_eq(fast->time_to_target, 0.5, 1e-12);
    cr_assert_eq(fast->baseline_id, R_BASE);
    cr_assert_float_eq(fast->speedup, 4.0, 1e-12);

    const an_report_row *never = row_of(&rep, R_NEVER);
    cr_assert(isnan(never->time_to_target));
    cr_assert(isnan(never->speedup));
    cr_assert_eq(never->baseline_id, R_BASE);

    /* other params: its own baseline; a failed twin is never a baseline */
    cr_assert_eq(row_of(&rep, R_OTHER)->baseline_id, R_OTHER);
    cr_assert_eq(row_of(&rep, R_FAILED)->baseline_id, R_BASE);
    cr_assert_float_eq(row_of(&rep, R_FAILED)->speedup, 20.0, 1e-12);
    /* a different common training key (lr) is another experiment */
    cr_assert_eq(row_of(&rep, R_LR)->baseline_id, R_LR);
    /* lowest id wins among matching baselines */
    cr_assert_eq(row_of(&rep, R_DUP)->baseline_id, R_BASE);
    cr_assert_float_eq(row_of(&rep, R_DUP)->speedup, 2.0, 1e-12);

    const an_report_row *running = row_of(&rep, R_RUNNING);
    cr_assert_str_eq(running->status, "running");
    cr_assert(isnan(running->final_train_loss));
    cr_assert_eq(running->bytes_sent, -1);
    cr_assert_float_eq(running->time_to_target, 0.5, 1e-12);
    an_report_release(&rep);
    an_db_close(db);
}

Test(report, default_target_from_params)
{
    an_db *db = known_db();
    an_report_opts opts = {0};
    an_report rep;
    sim_err err = {0};
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_float_eq(row_of(&rep, R_FAST)->target, 0.8, 1e-12);
    cr_assert_float_eq(row_of(&rep, R_FAST)->time_to_target, 0.5, 1e-12);
    cr_assert_float_eq(row_of(&rep, R_FAST)->speedup, 4.0, 1e-12);
    an_report_release(&rep);
    an_db_close(db);
}

Test(report, loss_target_reached_when_at_most)
{
    an_db *db = known_db();
    an_report_opts opts = {.target_metric = "train_loss", .target_value = 0.4};
    an_report rep;
    sim_err err = {0};
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_float_eq(row_of(&rep, R_BASE)->time_to_target, 2.0, 1e-12);
    cr_assert_float_eq(row_of(&rep, R_FAST)->time_to_target, 0.5, 1e-12);
    cr_assert_float_eq(row_of(&rep, R_FAST)->speedup, 4.0, 1e-12);
    cr_assert(isnan(row_of(&rep, R_NEVER)->time_to_target));
    an_report_release(&rep);

    /* test_loss = train_loss + 0.05 in this database */
    opts.target_metric = "test_loss";
    opts.target_value = 0.56;
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_float_eq(row_of(&rep, R_BASE)->time_to_target, 1.5, 1e-12);
    cr_assert_float_eq(row_of(&rep, R_DUP)->time_to_target, 1.0, 1e-12);
    an_report_release(&rep);
    an_db_close(db);
}

/* --sustain K on a noisy curve: the first crossing (t = 1) falls back
 * below; the target holds from t = 3 for three evaluations, then dips. */
Test(report, sustained_target_on_a_noisy_curve)
{
    const char *dir = test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/noisy.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    static const point noisy[] = {{0.0, 0.50, 1.0}, {1.0, 0.90, 0.3}, {2.0, 0.70, 0.6},
                                  {3.0, 0.86, 0.4}, {4.0, 0.88, 0.35}, {5.0, 0.91, 0.3},
                                  {6.0, 0.84, 0.45}, {7.0, 0.87, 0.4}};
    int64_t id = add_run(db, "noisy", "allreduce_sgd", "4", "0.1", noisy, 8, "done", 0);
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.85};
    an_report rep;
    const double want[] = {1.0, 1.0, 3.0, 3.0, NAN};
    for (int k = 0; k <= 4; k++) {
        opts.sustain = k == 4 ? 4 : k;
        cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
        const an_report_row *r = row_of(&rep, id);
        if (isnan(want[k]))
            cr_assert(isnan(r->time_to_target), "sustain %d: %g", opts.sustain,
                      r->time_to_target);
        else
            cr_assert_float_eq(r->time_to_target, want[k], 1e-12, "sustain %d: %g",
                               opts.sustain, r->time_to_target);
        an_report_release(&rep);
    }
    /* a loss target (reached when <=) sustained */
    opts.target_metric = "train_loss";
    opts.target_value = 0.4;
    opts.sustain = 3;
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_float_eq(row_of(&rep, id)->time_to_target, 3.0, 1e-12);
    an_report_release(&rep);
    an_db_close(db);
}

Test(report, explicit_baseline_and_selected_runs)
{
    an_db *db = known_db();
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
    an_db *db = known_db();
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

/* Reads a tmpfile back into buf. */
static size_t slurp(FILE *f, char *buf, size_t size)
{
    rewind(f);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    return n;
}

Test(report, csv_output_parses)
{
    an_db *db = known_db();
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8, .csv = 1};
    an_report rep;
    sim_err err = {0};
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cr_assert_eq(an_report_write(&rep, 1, f, &err), 0, "%s", err.msg);
    static char buf[65536];
    slurp(f, buf, sizeof buf);
    fclose(f);
    an_report_release(&rep);
    an_db_close(db);

    const char *header = "id,name,algorithm,status,n_workers,final_train_loss,"
                         "final_test_accuracy,sim_time,target_metric,target,time_to_target,"
                         "baseline_id,speedup,bytes_sent,idle_fraction,mean_staleness,"
                         "consensus_distance";
    cr_assert(strncmp(buf, header, strlen(header)) == 0, "%s", buf);
    int lines = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        int commas = 0;
        for (const char *p = line; *p; p++)
            commas += *p == ',';
        cr_assert_eq(commas, 16, "line %d: %s", lines, line);
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
Test(report, text_table_fits_120_columns)
{
    const char *dir = test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/wide.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    add_run(db, "a_very_long_experiment_name_from_a_sweep_of_many_keys", "adaptive_local_sgd",
            "4", "0.1", base_pts, 5, "done", 1234567890);
    add_run(db, "short", "allreduce_sgd", "4", "0.1", base_pts, 5, "done", 1000);
    an_db_close(db);
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8};
    FILE *f = tmpfile();
    cr_assert_eq(an_report_print(path, &opts, f, &err), 0, "%s", err.msg);
    static char buf[65536];
    slurp(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strstr(buf, "acc>=0.8"), "%s", buf);
    cr_assert(strstr(buf, "~"), "%s", buf);
    cr_assert_null(strstr(buf, "stale"), "%s", buf);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        cr_assert_leq(strlen(line), 120, "%zu: '%s'", strlen(line), line);
}

Test(report, text_table_aligned)
{
    an_db *db = known_db();
    an_db_close(db);
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8};
    FILE *f = tmpfile();
    sim_err err = {0};
    cr_assert_eq(an_report_print(db_path, &opts, f, &err), 0, "%s", err.msg);
    static char buf[65536];
    slurp(f, buf, sizeof buf);
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

Test(report, empty_database_and_missing_file)
{
    const char *dir = test_tmpdir();
    snprintf(db_path, sizeof db_path, "%s/empty.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(db_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_db_close(db);
    an_report_opts opts = {0};
    FILE *f = tmpfile();
    cr_assert_eq(an_report_print(db_path, &opts, f, &err), 0, "%s", err.msg);
    static char buf[4096];
    slurp(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strncmp(buf, "id  ", 4) == 0, "%s", buf);
    cr_assert(strstr(buf, "\nno runs\n") != NULL, "%s", buf);

    snprintf(db_path, sizeof db_path, "%s/missing.db", dir);
    f = tmpfile();
    cr_assert_eq(an_report_print(db_path, &opts, f, &err), SIM_EDB);
    cr_assert(strncmp(err.msg, db_path, strlen(db_path)) == 0, "%s", err.msg);
    fclose(f);
}

Test(report, csv_quotes_names)
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
    slurp(f, buf, sizeof buf);
    fclose(f);
    const char *line = strchr(buf, '\n') + 1;
    cr_assert_str_eq(line, "3,\"a,\"\"b\"\"\",dpsgd,done,2,0.5,,1.5,,,,,,12,0,,\n");
}

/* ---- aggregation over seeds (--aggregate) ---- */

static int64_t add_seed_run(an_db *db, const char *name, const char *seed, const char *lr,
                            const point *pts, int n, const char *status, int64_t bytes)
{
    const char *keys[] = {"experiment.name", "experiment.seed", "workers.count",
                          "algorithm.name", "algorithm.lr"};
    const char *values[] = {name, seed, "4", "allreduce_sgd", lr};
    an_run_info info = {.name = name, .algorithm = "allreduce_sgd",
                        .seed = (uint64_t)atoi(seed), .n_workers = 4, .config = name,
                        .n_params = 5, .param_keys = keys, .param_values = values};
    sim_err err = {0};
    int64_t id = 0;
    cr_assert_eq(an_db_run_begin(db, &info, &id, &err), 0, "%s", err.msg);
    for (int i = 0; i < n; i++) {
        an_metric_row r = {.sim_time = pts[i].t, .iteration = i, .train_loss = pts[i].loss,
                           .test_loss = pts[i].loss, .test_accuracy = pts[i].acc};
        cr_assert_eq(an_db_metric(db, id, &r, &err), 0, "%s", err.msg);
    }
    an_run_summary s = {.status = status, .sim_time = pts[n - 1].t, .iterations = n,
                        .bytes_sent = bytes, .final_train_loss = pts[n - 1].loss,
                        .final_test_accuracy = pts[n - 1].acc, .mean_staleness = NAN,
                        .idle_fraction = 0.1, .consensus_distance = 0.0};
    if (strcmp(status, "running") == 0)
        cr_assert_eq(an_db_flush(db, &err), 0, "%s", err.msg);
    else
        cr_assert_eq(an_db_run_finish(db, id, &s, NULL, 0, NULL, 0, &err), 0, "%s", err.msg);
    return id;
}

/* Runs 1-3: one config, seeds 1-3 (names differ); 4: another lr; 5: a
 * fourth seed still running (left out). */
static void seeds_db(void)
{
    const char *dir = test_tmpdir();
    snprintf(db_path, sizeof db_path, "%s/seeds.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(db_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    add_seed_run(db, "s1", "1", "0.1", base_pts, 5, "done", 100);
    add_seed_run(db, "s2", "2", "0.1", fast_pts, 3, "done", 200);
    add_seed_run(db, "s3", "3", "0.1", never_pts, 3, "diverged", 300);
    add_seed_run(db, "other", "1", "0.2", other_pts, 1, "done", 50);
    add_seed_run(db, "s4", "4", "0.1", early_pts, 1, "running", 0);
    an_db_close(db);
}

Test(report, aggregate_seeds_mean_and_spread)
{
    seeds_db();
    sim_err err = {0};
    an_db *db = an_db_open_readonly(db_path, &err);
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

Test(report, aggregate_text_and_csv)
{
    seeds_db();
    sim_err err = {0};
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8,
                           .aggregate = 1};
    FILE *f = tmpfile();
    cr_assert_eq(an_report_print(db_path, &opts, f, &err), 0, "%s", err.msg);
    static char buf[65536];
    slurp(f, buf, sizeof buf);
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
    cr_assert_eq(an_report_print(db_path, &opts, f, &err), 0, "%s", err.msg);
    slurp(f, buf, sizeof buf);
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
