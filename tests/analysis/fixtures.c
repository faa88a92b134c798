/* Fixtures the analysis suites share: see fixtures.h. */
#include "tests/analysis/fixtures.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"

static const char *const keys[] = {"experiment.seed", "workers.count", "algorithm.name"};
static const char *const values[] = {"7", "4", "allreduce_sgd"};

an_run_info fx_run_info(const char *config)
{
    an_run_info info = {
        .name = "t", .algorithm = "allreduce_sgd", .seed = 7, .n_workers = 4,
        .config = config, .version = "0.1.0",
        .n_params = 3, .param_keys = keys, .param_values = values,
    };
    return info;
}

an_metric_row fx_metric_at(int i)
{
    an_metric_row r = {
        .sim_time = 0.1 * i, .iteration = i, .epoch = 0.01 * i, .samples = 32 * i,
        .train_loss = 1.0 / (1 + i),
        .test_loss = (i % 2) ? NAN : 2.0 / (1 + i),
        .test_accuracy = (i % 10 == 0) ? 0.001 * i : NAN,
        .consensus_distance = 0.0, .bytes_sent = 1000 * (int64_t)i,
    };
    return r;
}

an_run_summary fx_summary_done(void)
{
    an_run_summary s = {
        .status = "done", .sim_time = 59.9, .iterations = 600, .wall_seconds = 0.5,
        .bytes_sent = 599000, .final_train_loss = 0.25, .final_test_accuracy = 0.59,
        .mean_staleness = NAN, .idle_fraction = 0.125, .consensus_distance = 0.0,
    };
    return s;
}

int64_t fx_run_begin(an_db *db, const char *config)
{
    sim_err err = {0};
    an_run_info info = fx_run_info(config);
    int64_t id = 0;
    cr_assert_eq(an_db_run_begin(db, &info, &id, &err), 0, "%s", err.msg);
    cr_assert_gt(id, 0);
    return id;
}

void fx_run_finish(an_db *db, int64_t id, const char *status)
{
    sim_err err = {0};
    an_run_summary s = fx_summary_done();
    s.status = status;
    cr_assert_eq(an_db_run_finish(db, id, &s, NULL, 0, NULL, 0, &err), 0, "%s", err.msg);
}

an_series_row fx_series_at(int i)
{
    an_series_row r = {.sim_time = 0.5 * i, .iteration = 10 * i, .worker = i % 3 - 1,
                       .name = (i % 2) ? "dropped" : "batch", .value = i == 4 ? NAN : 1.5 * i};
    return r;
}

const char fx_old_schema[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "INSERT INTO meta(key, value) VALUES('schema_version', '1');"
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, name TEXT, algorithm TEXT,"
    " status TEXT, seed INTEGER, n_workers INTEGER, config TEXT, started_at TEXT,"
    " finished_at TEXT, version TEXT, sim_time REAL, iterations INTEGER,"
    " wall_seconds REAL, bytes_sent INTEGER, final_train_loss REAL,"
    " final_test_accuracy REAL, mean_staleness REAL, idle_fraction REAL,"
    " consensus_distance REAL);"
    "CREATE TABLE params(run_id INTEGER, key TEXT, value TEXT);"
    "CREATE TABLE metrics(run_id INTEGER, sim_time REAL, iteration INTEGER,"
    " epoch REAL, samples INTEGER, train_loss REAL, test_loss REAL, test_accuracy REAL,"
    " consensus_distance REAL, bytes_sent INTEGER);"
    "CREATE TABLE workers(run_id INTEGER, worker INTEGER, steps INTEGER,"
    " compute_time REAL, idle_time REAL, bytes_sent INTEGER, mean_staleness REAL,"
    " gossip_rounds INTEGER);"
    "CREATE TABLE staleness(run_id INTEGER, staleness INTEGER, count INTEGER);"
    "INSERT INTO runs(name, algorithm, status, config) VALUES('old', 'asgd', 'done', 'c0');"
    "INSERT INTO metrics(run_id, iteration) VALUES(1, 5);";

static char last_path[4096];

const char *fx_path(void)
{
    return last_path;
}

/* Params shared by the "same experiment" runs; workers.count is varied to
 * make a non-matching one. */
int64_t fx_report_run(an_db *db, const char *name, const char *algo, const char *workers,
                      const char *lr, const fx_point *pts, int n, const char *status,
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

const fx_point fx_base_pts[] = {
    {0.5, 0.30, 1.0}, {1.0, 0.60, 0.7}, {1.5, 0.75, 0.5}, {2.0, 0.80, 0.4}, {2.5, 0.85, 0.3},
};
const fx_point fx_fast_pts[] = {{0.25, 0.5, 0.9}, {0.5, 0.8, 0.4}, {1.0, 0.9, 0.2}};
const fx_point fx_never_pts[] = {{1.0, 0.1, 2.0}, {2.0, 0.3, 1.5}, {3.0, 0.5, 1.2}};
const fx_point fx_other_pts[] = {{1.0, 0.85, 0.3}};
const fx_point fx_dup_pts[] = {{0.5, 0.7, 0.6}, {1.0, 0.8, 0.5}};
const fx_point fx_early_pts[] = {{0.1, 0.9, 0.1}};

an_db *fx_report_known_db(void)
{
    const char *dir = test_tmpdir();
    snprintf(last_path, sizeof last_path, "%s/results.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(last_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    cr_assert_eq(fx_report_run(db, "failed", "allreduce_sgd", "4", "0.1", fx_early_pts, 1,
                               "failed", 10), R_FAILED);
    cr_assert_eq(fx_report_run(db, "base", "allreduce_sgd", "4", "0.1", fx_base_pts, 5,
                               "done", 1234567890), R_BASE);
    cr_assert_eq(fx_report_run(db, "fast", "local_sgd", "4", "0.1", fx_fast_pts, 3, "done",
                               999), R_FAST);
    cr_assert_eq(fx_report_run(db, "never", "dpsgd", "4", "0.1", fx_never_pts, 3,
                               "diverged", 5000), R_NEVER);
    cr_assert_eq(fx_report_run(db, "other", "allreduce_sgd", "8", "0.1", fx_other_pts, 1,
                               "done", 42), R_OTHER);
    cr_assert_eq(fx_report_run(db, "dup", "allreduce_sgd", "4", "0.1", fx_dup_pts, 2, "done",
                               7), R_DUP);
    cr_assert_eq(fx_report_run(db, "running", "dpsgd", "4", "0.1", fx_fast_pts, 3, NULL, 0),
                 R_RUNNING);
    cr_assert_eq(fx_report_run(db, "lr", "allreduce_sgd", "4", "0.3", fx_dup_pts, 2, "done",
                               7), R_LR);
    cr_assert_eq(an_db_flush(db, &err), 0, "%s", err.msg);
    return db;
}

const an_report_row *fx_report_row(const an_report *rep, int64_t id)
{
    for (int i = 0; i < rep->n_rows; i++)
        if (rep->rows[i].id == id)
            return &rep->rows[i];
    cr_assert_fail("run %lld missing from the report", (long long)id);
    return NULL;
}

static int64_t add_seed_run(an_db *db, const char *name, const char *seed, const char *lr,
                            const fx_point *pts, int n, const char *status, int64_t bytes)
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
void fx_report_seeds_db(void)
{
    const char *dir = test_tmpdir();
    snprintf(last_path, sizeof last_path, "%s/seeds.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(last_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    add_seed_run(db, "s1", "1", "0.1", fx_base_pts, 5, "done", 100);
    add_seed_run(db, "s2", "2", "0.1", fx_fast_pts, 3, "done", 200);
    add_seed_run(db, "s3", "3", "0.1", fx_never_pts, 3, "diverged", 300);
    add_seed_run(db, "other", "1", "0.2", fx_other_pts, 1, "done", 50);
    add_seed_run(db, "s4", "4", "0.1", fx_early_pts, 1, "running", 0);
    an_db_close(db);
}

/* ---- plot and scaling suites ---- */

typedef struct plot_pt {
    double t, loss, acc;
} plot_pt;

static int64_t plot_run(an_db *db, const char *algo, const char *seed, const char *compute,
                        const plot_pt *pts, int n, const char *status)
{
    const char *keys[] = {"experiment.name", "experiment.seed", "workers.count",
                          "workers.compute", "algorithm.name"};
    const char *values[] = {"p", seed, "4", compute, algo};
    an_run_info info = {.name = "p", .algorithm = algo, .seed = (uint64_t)atoi(seed),
                        .n_workers = 4, .config = "c", .n_params = 5, .param_keys = keys,
                        .param_values = values};
    sim_err err = {0};
    int64_t id = 0;
    cr_assert_eq(an_db_run_begin(db, &info, &id, &err), 0, "%s", err.msg);
    for (int i = 0; i < n; i++) {
        an_metric_row r = {.sim_time = pts[i].t, .iteration = 10 * i, .epoch = 0.5 * i,
                           .samples = 1000 * i, .train_loss = pts[i].loss,
                           .test_loss = pts[i].loss, .test_accuracy = pts[i].acc,
                           .bytes_sent = 2000000 * i};
        cr_assert_eq(an_db_metric(db, id, &r, &err), 0, "%s", err.msg);
    }
    an_run_summary s = {.status = status ? status : "done", .sim_time = pts[n - 1].t,
                        .mean_staleness = NAN, .consensus_distance = NAN};
    if (status && strcmp(status, "running") == 0)
        cr_assert_eq(an_db_flush(db, &err), 0, "%s", err.msg);
    else
        cr_assert_eq(an_db_run_finish(db, id, &s, NULL, 0, NULL, 0, &err), 0, "%s", err.msg);
    return id;
}

/* Runs 1, 2: allreduce_sgd seeds 1 and 2 (one config); 3: asgd seed 1;
 * 4: asgd with another compute; 5: a failed run (never plotted). */
const char *fx_plot_db(void)
{
    const char *dir = test_tmpdir();
    snprintf(last_path, sizeof last_path, "%s/plot.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(last_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    static const plot_pt a1[] = {{0, 1.0, 0.1}, {1, 0.5, 0.5}, {2, 0.25, 0.8}, {3, 0.2, 0.9}};
    static const plot_pt a2[] = {{0, 0.8, 0.2}, {2, 0.4, 0.7}, {2.5, 0.3, 0.75}};
    static const plot_pt b1[] = {{0, 1.0, 0.1}, {0.5, 0.6, 0.6}, {1.5, 0.3, 0.85}};
    static const plot_pt c1[] = {{0, 1.0, 0.1}, {4, 0.1, 0.95}};
    static const plot_pt f1[] = {{0, 9.0, 0.0}, {1, 9.0, 0.0}};
    cr_assert_eq(plot_run(db, "allreduce_sgd", "1", "constant(1000000ns)", a1, 4, NULL), 1);
    cr_assert_eq(plot_run(db, "allreduce_sgd", "2", "constant(1000000ns)", a2, 3, NULL), 2);
    cr_assert_eq(plot_run(db, "asgd", "1", "constant(1000000ns)", b1, 3, NULL), 3);
    cr_assert_eq(plot_run(db, "asgd", "1", "exponential(2000000ns)", c1, 2, NULL), 4);
    cr_assert_eq(plot_run(db, "asgd", "3", "constant(1000000ns)", f1, 2, "failed"), 5);
    an_db_close(db);
    return dir;
}

/* One run whose last metric row is (t, samples); an earlier row at t / 2
 * with half the samples and a row at 0 come first. */
static int64_t scaling_run(an_db *db, const char *name, int workers, const char *lr,
                           const char *topology, double t, int64_t samples, const char *status)
{
    char count[16];
    snprintf(count, sizeof count, "%d", workers);
    const char *keys[] = {"experiment.name", "experiment.seed", "workers.count",
                          "network.bandwidth", "network.topology", "algorithm.name",
                          "algorithm.lr"};
    const char *values[] = {name, "1", count, "10000000000", topology, "allreduce_sgd", lr};
    an_run_info info = {.name = name, .algorithm = "allreduce_sgd", .seed = 1,
                        .n_workers = workers, .config = name, .version = "0.1.0",
                        .n_params = 7, .param_keys = keys, .param_values = values};
    sim_err err = {0};
    int64_t id = 0;
    cr_assert_eq(an_db_run_begin(db, &info, &id, &err), 0, "%s", err.msg);
    const double ts[3] = {0, t / 2, t};
    const int64_t ss[3] = {0, samples / 2, samples};
    for (int i = 0; i < 3; i++) {
        an_metric_row r = {.sim_time = ts[i], .iteration = 10 * i, .samples = ss[i],
                           .train_loss = 1.0, .test_loss = NAN, .test_accuracy = NAN};
        cr_assert_eq(an_db_metric(db, id, &r, &err), 0, "%s", err.msg);
    }
    if (status) {
        an_run_summary s = {.status = status, .sim_time = t, .iterations = 20,
                            .final_train_loss = 1.0, .final_test_accuracy = NAN,
                            .mean_staleness = NAN, .consensus_distance = NAN};
        cr_assert_eq(an_db_run_finish(db, id, &s, NULL, 0, NULL, 0, &err), 0, "%s", err.msg);
    }
    return id;
}

/* Runs 1..10. Group 1 (lr 0.1, star): n = 4, 1, 2 (ids 1, 2, 3) at 320,
 * 100, 180 samples/s. Group 2 (lr 0.3): n = 4, 2 at 360, 200 (no n = 1:
 * the base is 2). Group 3: hierarchical(1, 8) and hierarchical(2, 8) at
 * 800 and 1200. Group 4: star at 16 workers, lr 0.5, alone. Run 9 failed
 * and run 10 still running: not counted. */
an_db *fx_scaling_db(void)
{
    const char *dir = test_tmpdir();
    snprintf(last_path, sizeof last_path, "%s/results.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(last_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    cr_assert_eq(scaling_run(db, "a-n4", 4, "0.1", "star", 10, 3200, "done"), 1);
    cr_assert_eq(scaling_run(db, "a-n1", 1, "0.1", "star", 10, 1000, "done"), 2);
    cr_assert_eq(scaling_run(db, "a-n2", 2, "0.1", "star", 5, 900, "done"), 3);
    cr_assert_eq(scaling_run(db, "b-n4", 4, "0.3", "star", 10, 3600, "done"), 4);
    cr_assert_eq(scaling_run(db, "b-n2", 2, "0.3", "star", 10, 2000, "done"), 5);
    cr_assert_eq(scaling_run(db, "h8", 8, "0.1", "hierarchical(1, 8)", 2, 1600, "done"), 6);
    cr_assert_eq(scaling_run(db, "h16", 16, "0.1", "hierarchical(2, 8)", 2, 2400, "done"), 7);
    cr_assert_eq(scaling_run(db, "s16", 16, "0.5", "star", 2, 2400, "done"), 8);
    cr_assert_eq(scaling_run(db, "a-n8-failed", 8, "0.1", "star", 10, 100, "failed"), 9);
    cr_assert_eq(scaling_run(db, "a-n8-running", 8, "0.1", "star", 10, 100, NULL), 10);
    cr_assert_eq(an_db_flush(db, &err), 0, "%s", err.msg);
    return db;
}
