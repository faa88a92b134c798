/* analysis/plot.c: the curves (mean and min-max over seeds on the union of
 * their x values, groups by a runs column or params key, labels from the
 * params that vary) and the usage errors, on a small database with known
 * answers, and `dtsim plot` from the command line. */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "analysis/db.h"
#include "analysis/plot.h"
#include "tests/analysis/fixtures.h"
#include "tests/common.h"

static an_db *open_known(void)
{
    fx_plot_db();
    sim_err err = {0};
    an_db *db = an_db_open_readonly(fx_path(), &err);
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
    fx_plot_db();
    sim_err err = {0};
    an_db *db = an_db_open(fx_path(), &err);
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
    db = an_db_open_readonly(fx_path(), &err);
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
    cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "figure.gif"), "%s", err.msg);
    o.output = "/nonexistent-dir/figure.png";
    cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "/nonexistent-dir/figure.png"), "%s", err.msg);
}

Test(plot, command_line)
{
    const char *dir = fx_plot_db();
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
