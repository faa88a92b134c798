/* `dtsim plot`: the curves (mean and min-max over seeds on the union of
 * their x values, groups by a runs column or params key, labels from the
 * params that vary), valid PNG, SVG and PDF files, and the usage errors,
 * on a small database with known answers. */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "analysis/db.h"
#include "analysis/plot.h"
#include "tests/common.h"

static char db_path[4096];

typedef struct pt {
    double t, loss, acc;
} pt;

static int64_t add_run(an_db *db, const char *algo, const char *seed, const char *compute,
                       const pt *pts, int n, const char *status)
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
static const char *known_db(void)
{
    const char *dir = test_tmpdir();
    snprintf(db_path, sizeof db_path, "%s/plot.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(db_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    static const pt a1[] = {{0, 1.0, 0.1}, {1, 0.5, 0.5}, {2, 0.25, 0.8}, {3, 0.2, 0.9}};
    static const pt a2[] = {{0, 0.8, 0.2}, {2, 0.4, 0.7}, {2.5, 0.3, 0.75}};
    static const pt b1[] = {{0, 1.0, 0.1}, {0.5, 0.6, 0.6}, {1.5, 0.3, 0.85}};
    static const pt c1[] = {{0, 1.0, 0.1}, {4, 0.1, 0.95}};
    static const pt f1[] = {{0, 9.0, 0.0}, {1, 9.0, 0.0}};
    cr_assert_eq(add_run(db, "allreduce_sgd", "1", "constant(1000000ns)", a1, 4, NULL), 1);
    cr_assert_eq(add_run(db, "allreduce_sgd", "2", "constant(1000000ns)", a2, 3, NULL), 2);
    cr_assert_eq(add_run(db, "asgd", "1", "constant(1000000ns)", b1, 3, NULL), 3);
    cr_assert_eq(add_run(db, "asgd", "1", "exponential(2000000ns)", c1, 2, NULL), 4);
    cr_assert_eq(add_run(db, "asgd", "3", "constant(1000000ns)", f1, 2, "failed"), 5);
    an_db_close(db);
    return dir;
}

static an_db *open_known(void)
{
    known_db();
    sim_err err = {0};
    an_db *db = an_db_open_readonly(db_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    return db;
}

static const an_plot_series *series_of(const an_plot_data *d, const char *label)
{
    for (int i = 0; i < d->n_series; i++)
        if (strcmp(d->series[i].label, label) == 0)
            return &d->series[i];
    cr_assert_fail("no series labelled '%s'", label);
    return NULL;
}

Test(plot, mean_and_band_over_seeds_on_the_common_range)
{
    an_db *db = open_known();
    an_plot_opts o = {.y = "train_loss"};
    an_plot_data d;
    sim_err err = {0};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n_series, 3);
    cr_assert_eq(d.n_runs, 4);  /* the failed run is left out */
    /* labels: the params that vary among the curves, times made readable */
    const an_plot_series *a = series_of(&d, "algorithm=allreduce_sgd, compute=constant(1ms)");
    series_of(&d, "algorithm=asgd, compute=constant(1ms)");
    series_of(&d, "algorithm=asgd, compute=exponential(2ms)");
    cr_assert_eq(a->n_runs, 2);
    /* union of x within [0, 2.5] (run 2 ends at 2.5): 0, 1, 2, 2.5 */
    cr_assert_eq(a->n, 4);
    double xs[] = {0, 1, 2, 2.5};
    /* run 1: 1, 0.5, 0.25, 0.225; run 2: 0.8, 0.6, 0.4, 0.3 */
    double r1[] = {1.0, 0.5, 0.25, 0.225}, r2[] = {0.8, 0.6, 0.4, 0.3};
    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(a->x[i] * d.x_scale, xs[i], 1e-12);
        cr_assert_float_eq(a->mean[i], 0.5 * (r1[i] + r2[i]), 1e-12, "at %d", i);
        cr_assert_float_eq(a->lo[i], fmin(r1[i], r2[i]), 1e-12);
        cr_assert_float_eq(a->hi[i], fmax(r1[i], r2[i]), 1e-12);
    }
    cr_assert_float_eq(d.x_scale, 1.0, 1e-15);
    cr_assert_str_eq(d.xlabel, "simulated time (s)");
    cr_assert_str_eq(d.ylabel, "training loss");
    cr_assert(strstr(d.title, "Training loss vs simulated time"), "%s", d.title);
    an_plot_release(&d);
    an_db_close(db);
}

/* --y series:NAME: the run's rows of that series (worker -1 or NULL), drawn
 * as steps (each value holds until the next row) and held to the run's
 * end; other names and per-worker rows are left out. */
Test(plot, series_rows_as_steps_to_the_run_end)
{
    known_db();
    sim_err err = {0};
    an_db *db = an_db_open(db_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    cr_assert_eq(sqlite3_exec(an_db_sqlite(db),
                              "INSERT INTO series VALUES (3, 0, 0, NULL, 'keep_fraction', 0.1),"
                              " (3, 0.5, 5, NULL, 'keep_fraction', 0.05),"
                              " (3, 0.7, 7, -1, 'keep_fraction', 0.05),"
                              " (3, 0.6, 6, 2, 'keep_fraction', 9.0),"
                              " (3, 0.6, 6, NULL, 'gain', 3.0)",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    an_db_close(db);
    db = an_db_open_readonly(db_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    an_plot_opts o = {.y = "series:keep_fraction", .where = "r.id = 3"};
    an_plot_data d;
    cr_assert_eq(an_plot_build(db, &o, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n_series, 1);
    const an_plot_series *se = &d.series[0];
    /* run 3 ends at 1.5 s */
    double xs[] = {0, nextafter(0.5, -INFINITY), 0.5, 0.7, 1.5};
    double ys[] = {0.1, 0.1, 0.05, 0.05, 0.05};
    cr_assert_eq(se->n, 5);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(se->x[i] * d.x_scale, xs[i], "x at %d: %.17g", i, se->x[i]);
        cr_assert_eq(se->mean[i], ys[i], "y at %d", i);
    }
    cr_assert_str_eq(d.ylabel, "keep_fraction");
    an_plot_release(&d);

    o = (an_plot_opts){.y = "series:keep_fraction", .x = "epoch"};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--x 'epoch' with --y series:keep_fraction"), "%s", err.msg);
    o = (an_plot_opts){.y = "series:"};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "expected series:NAME"), "%s", err.msg);
    an_db_close(db);
}

Test(plot, by_runs_column_and_params_key)
{
    an_db *db = open_known();
    an_plot_opts o = {.y = "test_accuracy", .by = "algorithm", .x = "bytes_sent"};
    an_plot_data d;
    sim_err err = {0};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n_series, 3);
    /* allreduce_sgd is one curve; asgd has two configs, told apart by compute */
    series_of(&d, "allreduce_sgd");
    series_of(&d, "asgd, compute=constant(1ms)");
    series_of(&d, "asgd, compute=exponential(2ms)");
    cr_assert_str_eq(d.xlabel, "data sent, all workers (MB)");
    cr_assert_float_eq(d.x_scale, 1e6, 1e-9);
    cr_assert(strstr(d.title, "by algorithm"), "%s", d.title);
    an_plot_release(&d);

    o.by = "workers.compute";
    o.x = "epoch";
    o.where = "r.algorithm = 'asgd'";
    cr_assert_eq(an_plot_build(db, &o, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n_series, 2);
    cr_assert_eq(d.n_runs, 2);
    series_of(&d, "compute=constant(1ms)");
    cr_assert_str_eq(d.xlabel, "epoch");
    an_plot_release(&d);
    an_db_close(db);
}

Test(plot, log_axis_leaves_out_non_positive_values)
{
    an_db *db = open_known();
    an_plot_opts o = {.y = "train_loss", .x = "iteration", .logx = 1,
                      .where = "r.id = 4"};
    an_plot_data d;
    sim_err err = {0};
    /* run 4 has iterations 0 and 10: only 10 is left on a log axis */
    cr_assert_eq(an_plot_build(db, &o, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n_series, 1);
    cr_assert_eq(d.series[0].n, 1);
    cr_assert_float_eq(d.series[0].x[0], 10, 1e-12);
    cr_assert_float_eq(d.series[0].mean[0], 0.1, 1e-12);
    an_plot_release(&d);
    an_db_close(db);
}

Test(plot, usage_errors)
{
    an_db *db = open_known();
    an_plot_data d;
    sim_err err = {0};
    an_plot_opts o = {.y = "loss"};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--y 'loss'"), "%s", err.msg);
    o = (an_plot_opts){.y = "train_loss", .x = "wall"};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--x 'wall'"), "%s", err.msg);
    o = (an_plot_opts){.y = "train_loss", .by = "network.nope"};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--by 'network.nope'"), "%s", err.msg);
    o = (an_plot_opts){.y = "train_loss", .by = "colour"};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), SIM_EUSAGE);
    o = (an_plot_opts){.y = "train_loss", .by = "x; drop table runs"};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), SIM_EUSAGE);
    o = (an_plot_opts){.y = "train_loss", .where = "no_such_column = 1"};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--where"), "%s", err.msg);
    o = (an_plot_opts){.y = "train_loss", .where = "1); DELETE FROM runs; SELECT (1"};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), SIM_EUSAGE);
    o = (an_plot_opts){.y = "train_loss", .where = "r.algorithm = 'none'"};
    cr_assert_eq(an_plot_build(db, &o, &d, &err), SIM_EINPUT);
    cr_assert(strstr(err.msg, "no finished runs"), "%s", err.msg);
    an_db_close(db);

    o = (an_plot_opts){.y = "train_loss", .output = "figure.gif"};
    cr_assert_eq(an_plot_write(db_path, &o, NULL, NULL, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "figure.gif"), "%s", err.msg);
    o.output = "/nonexistent-dir/figure.png";
    cr_assert_eq(an_plot_write(db_path, &o, NULL, NULL, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "/nonexistent-dir/figure.png"), "%s", err.msg);
}

static size_t slurp(const char *path, unsigned char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s missing", path);
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n;
}

static unsigned char file_buf[4 << 20];

static void write_figure(const char *dir, const char *name, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", dir, name);
    an_plot_opts o = {.y = "test_accuracy", .by = "algorithm", .output = path,
                      .width = 800, .height = 500};
    sim_err err = {0};
    int n_series = 0, n_runs = 0;
    cr_assert_eq(an_plot_write(db_path, &o, &n_series, &n_runs, &err), 0, "%s", err.msg);
    cr_assert_eq(n_series, 3);
    cr_assert_eq(n_runs, 4);
}

Test(plot, png_is_valid)
{
    const char *dir = known_db();
    char path[4200];
    write_figure(dir, "fig.png", path, sizeof path);
    size_t n = slurp(path, file_buf, sizeof file_buf);
    cr_assert_gt(n, 1000);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    cr_assert_eq(memcmp(file_buf, sig, 8), 0);
    cr_assert_eq(memcmp(file_buf + 12, "IHDR", 4), 0);
    unsigned w = (unsigned)file_buf[16] << 24 | (unsigned)file_buf[17] << 16 |
                 (unsigned)file_buf[18] << 8 | file_buf[19];
    unsigned h = (unsigned)file_buf[20] << 24 | (unsigned)file_buf[21] << 16 |
                 (unsigned)file_buf[22] << 8 | file_buf[23];
    cr_assert_eq(w, 800);
    cr_assert_eq(h, 500);
    cr_assert_eq(memcmp(file_buf + n - 8, "IEND", 4), 0);
}

Test(plot, svg_is_valid)
{
    const char *dir = known_db();
    char path[4200];
    write_figure(dir, "fig.svg", path, sizeof path);
    size_t n = slurp(path, file_buf, sizeof file_buf);
    cr_assert_gt(n, 1000);
    cr_assert(strncmp((char *)file_buf, "<?xml", 5) == 0 ||
              strncmp((char *)file_buf, "<svg", 4) == 0);
    cr_assert(strstr((char *)file_buf, "<svg") != NULL);
    cr_assert(strstr((char *)file_buf, "</svg>") != NULL);
}

Test(plot, pdf_is_valid)
{
    const char *dir = known_db();
    char path[4200];
    write_figure(dir, "fig.pdf", path, sizeof path);
    size_t n = slurp(path, file_buf, sizeof file_buf);
    cr_assert_gt(n, 1000);
    cr_assert_eq(memcmp(file_buf, "%PDF-", 5), 0);
    size_t end = n;
    while (end > 0 && (file_buf[end - 1] == '\n' || file_buf[end - 1] == '\r'))
        end--;
    cr_assert_geq(end, 5);
    cr_assert_eq(memcmp(file_buf + end - 5, "%%EOF", 5), 0);
}

Test(plot, command_line)
{
    const char *dir = known_db();
    const char *exe = getenv("DTSIM_EXE");
    cr_assert_not_null(exe, "DTSIM_EXE not set (run under meson test)");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' plot plot.db --y train_loss --by algorithm "
                              "--logy -o cli.png >/dev/null 2>&1", dir, exe);
    int st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' plot plot.db --y nope -o bad.png >/dev/null 2>&1",
             dir, exe);
    st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d", st);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' plot plot.db --y train_loss --by nope "
                              "-o bad.png >/dev/null 2>&1", dir, exe);
    st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d", st);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' plot plot.db -o bad.png >/dev/null 2>&1", dir,
             exe);
    st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d", st);
}

/* A log axis inside fewer than two decades gets labels between the powers
 * of ten; a wider one keeps PLplot's (the powers alone). */
Test(plot, log_axis_labels_inside_a_decade)
{
    double v[32];
    int n = an_plot_log_labels(log10(0.3), log10(0.9), v, 32);
    cr_assert_eq(n, 7);
    for (int i = 0; i < n; i++)
        cr_assert_float_eq(v[i], 0.1 * (i + 3), 1e-12, "%d: %g", i, v[i]);
    n = an_plot_log_labels(log10(2), log10(30), v, 32);
    cr_assert_eq(n, 4); /* 2, 5, 10, 20 */
    cr_assert(fabs(v[0] - 2) < 1e-12 && fabs(v[1] - 5) < 1e-12 && fabs(v[2] - 10) < 1e-12 &&
              fabs(v[3] - 20) < 1e-12);
    n = an_plot_log_labels(log10(2.1), log10(2.4), v, 32);
    cr_assert_eq(n, 4); /* 2.1 .. 2.4 */
    cr_assert_float_eq(v[0], 2.1, 1e-12);
    cr_assert_float_eq(v[3], 2.4, 1e-12);
    cr_assert_eq(an_plot_log_labels(0, 3, v, 32), 0);
    cr_assert_eq(an_plot_log_labels(-1, 1, v, 32), 0);
    cr_assert_eq(an_plot_log_labels(log10(0.3), log10(0.9), v, 1), 1);

    /* the figure with such an axis renders (the labels are cairo glyphs in
     * the SVG, so they are checked by eye: docs/usage.md) */
    const char *dir = known_db();
    char path[4200];
    snprintf(path, sizeof path, "%s/log.svg", dir);
    an_plot_opts o = {.y = "test_accuracy", .by = "algorithm", .output = path, .logy = 1,
                      .width = 800, .height = 500};
    sim_err err = {0};
    int n_series = 0, n_runs = 0;
    cr_assert_eq(an_plot_write(db_path, &o, &n_series, &n_runs, &err), 0, "%s", err.msg);
    size_t len = slurp(path, file_buf, sizeof file_buf - 1);
    file_buf[len] = '\0';
    cr_assert(strstr((char *)file_buf, "</svg>") != NULL);
}
