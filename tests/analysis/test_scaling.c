/* `dtsim report --scaling`: grouping of runs that differ only in the worker
 * count, throughput and scaling factors on a database with known answers. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/db.h"
#include "analysis/plot.h"
#include "analysis/scaling.h"
#include "tests/common.h"

static char db_path[4096];

/* One run whose last metric row is (t, samples); an earlier row at t / 2
 * with half the samples and a row at 0 come first. */
static int64_t add_run(an_db *db, const char *name, int workers, const char *lr,
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
static an_db *known_db(void)
{
    const char *dir = test_tmpdir();
    snprintf(db_path, sizeof db_path, "%s/results.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(db_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    cr_assert_eq(add_run(db, "a-n4", 4, "0.1", "star", 10, 3200, "done"), 1);
    cr_assert_eq(add_run(db, "a-n1", 1, "0.1", "star", 10, 1000, "done"), 2);
    cr_assert_eq(add_run(db, "a-n2", 2, "0.1", "star", 5, 900, "done"), 3);
    cr_assert_eq(add_run(db, "b-n4", 4, "0.3", "star", 10, 3600, "done"), 4);
    cr_assert_eq(add_run(db, "b-n2", 2, "0.3", "star", 10, 2000, "done"), 5);
    cr_assert_eq(add_run(db, "h8", 8, "0.1", "hierarchical(1, 8)", 2, 1600, "done"), 6);
    cr_assert_eq(add_run(db, "h16", 16, "0.1", "hierarchical(2, 8)", 2, 2400, "done"), 7);
    cr_assert_eq(add_run(db, "s16", 16, "0.5", "star", 2, 2400, "done"), 8);
    cr_assert_eq(add_run(db, "a-n8-failed", 8, "0.1", "star", 10, 100, "failed"), 9);
    cr_assert_eq(add_run(db, "a-n8-running", 8, "0.1", "star", 10, 100, NULL), 10);
    cr_assert_eq(an_db_flush(db, &err), 0, "%s", err.msg);
    return db;
}

static const struct {
    int group;
    int64_t id;
    int n, ref;
    double thr, scaling;
} expect[] = {
    {1, 2, 1, 1, 100, 1.0}, {1, 3, 2, 1, 180, 0.9}, {1, 1, 4, 1, 320, 0.8},
    {2, 5, 2, 2, 200, 1.0}, {2, 4, 4, 2, 360, 0.9}, {3, 6, 8, 8, 800, 1.0},
    {3, 7, 16, 8, 1200, 0.75}, {4, 8, 16, 16, 1200, 1.0},
};
#define N_EXPECT ((int)(sizeof expect / sizeof expect[0]))

Test(scaling, groups_throughput_and_factors)
{
    an_db *db = known_db();
    an_scaling sc;
    sim_err err = {0};
    cr_assert_eq(an_scaling_build(db, NULL, 0, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(sc.n_rows, N_EXPECT);
    cr_assert_eq(sc.n_groups, 4);
    for (int i = 0; i < N_EXPECT; i++) {
        const an_scaling_row *r = &sc.rows[i];
        cr_assert_eq(r->group, expect[i].group, "row %d", i);
        cr_assert_eq(r->id, expect[i].id, "row %d: id %lld", i, (long long)r->id);
        cr_assert_eq(r->n_workers, expect[i].n);
        cr_assert_eq(r->ref_workers, expect[i].ref);
        cr_assert_float_eq(r->throughput, expect[i].thr, 1e-9);
        cr_assert_float_eq(r->scaling, expect[i].scaling, 1e-12, "row %d: %g", i,
                           r->scaling);
    }
    cr_assert_str_eq(sc.rows[0].name, "a-n1");
    cr_assert_str_eq(sc.rows[0].algorithm, "allreduce_sgd");
    an_scaling_release(&sc);
    an_scaling_release(NULL);

    /* selected runs: the base is the smallest count among them */
    const int64_t ids[] = {1, 3, 9};
    cr_assert_eq(an_scaling_build(db, ids, 3, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(sc.n_rows, 2);
    cr_assert_eq(sc.rows[0].id, 3);
    cr_assert_eq(sc.rows[1].ref_workers, 2);
    cr_assert_float_eq(sc.rows[1].scaling, 320.0 / (2 * 180.0), 1e-12);
    an_scaling_release(&sc);

    const int64_t bad[] = {1, 42};
    cr_assert_eq(an_scaling_build(db, bad, 2, &sc, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--run 42"), "%s", err.msg);
    cr_assert_eq(sc.n_rows, 0);
    an_db_close(db);
}

static size_t slurp(FILE *f, char *buf, size_t size)
{
    rewind(f);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    return n;
}

Test(scaling, text_and_csv)
{
    an_db *db = known_db();
    an_db_close(db);
    sim_err err = {0};
    char buf[8192];
    FILE *f = tmpfile();
    cr_assert_eq(an_scaling_print(db_path, NULL, 0, 1, f, &err), 0, "%s", err.msg);
    slurp(f, buf, sizeof buf);
    fclose(f);
    static const char head[] = "group,id,name,algorithm,n_workers,throughput,ref_workers,"
                               "scaling_factor\n1,2,a-n1,allreduce_sgd,1,100,1,1\n"
                               "1,3,a-n2,allreduce_sgd,2,180,1,0.9\n"
                               "1,1,a-n4,allreduce_sgd,4,320,1,0.8\n";
    cr_assert(strncmp(buf, head, strlen(head)) == 0, "%s", buf);
    int lines = 0;
    for (const char *p = buf; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 1 + N_EXPECT);

    f = tmpfile();
    cr_assert_eq(an_scaling_print(db_path, NULL, 0, 0, f, &err), 0, "%s", err.msg);
    slurp(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strstr(buf, "scaling") && strstr(buf, "0.750") && strstr(buf, "1200.0"), "%s",
              buf);

    /* an empty database and a missing file */
    char empty[4096];
    snprintf(empty, sizeof empty, "%s/empty.db", test_tmpdir());
    an_db *e = an_db_open(empty, &err);
    cr_assert_not_null(e, "%s", err.msg);
    an_db_close(e);
    f = tmpfile();
    cr_assert_eq(an_scaling_print(empty, NULL, 0, 0, f, &err), 0, "%s", err.msg);
    slurp(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strstr(buf, "no finished runs"), "%s", buf);
    snprintf(empty, sizeof empty, "%s/missing.db", test_tmpdir());
    cr_assert_lt(an_scaling_print(empty, NULL, 0, 0, stdout, &err), 0);
    cr_assert(strstr(err.msg, "missing.db"), "%s", err.msg);
}

/* `dtsim plot --scaling`: one line per value of the --by key, the points
 * selected by --where, an image written; bad y and empty selections refused. */
Test(scaling, plot_lines_and_points)
{
    an_db *db = known_db();
    an_db_close(db);
    char png[4096];
    snprintf(png, sizeof png, "%s/s.png", test_tmpdir());
    an_plot_opts o = {.y = "scaling", .x = "n_workers", .by = "algorithm.lr",
                      .where = "r.id <= 5", .output = png};
    sim_err err = {0};
    int lines = 0, points = 0;
    cr_assert_eq(an_scaling_plot_write(db_path, &o, &lines, &points, &err), 0, "%s", err.msg);
    cr_assert_eq(lines, 2);  /* lr 0.1 and 0.3 */
    cr_assert_eq(points, 5); /* runs 1..5 */
    FILE *f = fopen(png, "rb");
    cr_assert_not_null(f);
    fclose(f);
    o.y = "step_time";
    o.x = "network.bandwidth";
    o.where = NULL;
    cr_assert_eq(an_scaling_plot_write(db_path, &o, &lines, &points, &err), 0, "%s", err.msg);
    cr_assert_eq(lines, 3);
    cr_assert_eq(points, 8);
    o.y = "speed";
    cr_assert_eq(an_scaling_plot_write(db_path, &o, &lines, &points, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "speed"), "%s", err.msg);
    o.y = "throughput";
    o.where = "r.id > 100";
    cr_assert_eq(an_scaling_plot_write(db_path, &o, &lines, &points, &err), SIM_EINPUT);
}
