/* The recorder (experiment/record.c): the params rows keep every value as
 * written (spacing normalized) with its SI number, and runs.config the
 * canonical text; runs.blas says whether cnn's sparse replay was used. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment/experiment.h"
#include "tests/common.h"

static const char *const record_ini = "[experiment]\n"
                                      "max_iterations = 3\n"
                                      "[workers]\n"
                                      "count = 2\n"
                                      "compute = constant(10ms)\n"
                                      "[workload]\n"
                                      "model = softmax\n"
                                      "dataset = blobs(3, 5, 200)\n";

/* params rows: the value as written (spacing normalized) and its SI number;
 * runs.config keeps the canonical text that identifies the experiment. */
Test(record, params_keep_values_as_written)
{
    const char *dir = test_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/p.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    const char *sets[] = {"network.bandwidth=10 Gbps", "network.latency=5us",
                          "network.topology=star"};
    cfg_config cfg;
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "r.ini", record_ini, sets, 3,
                                        &cfg, &err), 0, "%s", err.msg);
    xp_run_opts o = {.db = db};
    cr_assert_eq(xp_experiment_run(&cfg, &o, NULL, &err), 0, "%s", err.msg);
    an_db_close(db);
    cfg_release(&cfg);
    char text[256];
    test_sql_text(path, "select value from params where key = 'network.bandwidth'", text,
           sizeof text);
    cr_assert_str_eq(text, "10Gbps");
    cr_assert_eq(test_sql_int(path, "select num = 1250000000 from params"
                             " where key = 'network.bandwidth'"), 1);
    test_sql_text(path, "select value from params where key = 'workers.compute'", text,
                  sizeof text);
    cr_assert_str_eq(text, "constant(10ms)");
    cr_assert_eq(test_sql_int(path, "select num is null from params where key = 'workers.compute'"),
                 1);
    cr_assert_eq(test_sql_int(path, "select num * 1e9 = 5000 from params"
                             " where key = 'network.latency'"), 1);
    cr_assert_eq(test_sql_int(path, "select instr(config, 'bandwidth = 1250000000B/s') > 0"
                             " from runs"), 1);
}

/* A cnn run on Fashion-MNIST records its sparse replay in runs.blas ("on"
 * with the OpenBLAS dev.sh installs, the kernel pinned) and, switched off
 * by DTSIM_SPARSE_REPLAY=off, why not; its metric rows are the same bits
 * either way (8 steps of 2 workers, evaluated at 0 and 8). */
static void cnn_run(const char *dir, const char *name, test_rows *rows, char *blas, size_t len)
{
    static const char ini[] = "[experiment]\nmax_iterations = 8\neval_every = 8\n"
                              "eval_train_samples = 64\n"
                              "[workers]\ncount = 2\ncompute = constant(10ms)\n"
                              "[algorithm]\nname = allreduce_sgd\nlr = 0.05\nmomentum = 0.9\n"
                              "batch = 32\n"
                              "[workload]\nmodel = cnn\ndataset = fashion_mnist\n";
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    cfg_config cfg;
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "cnn.ini", ini, NULL, 0, &cfg, &err), 0,
                 "%s", err.msg);
    rows->n = 0;
    xp_run_opts o = {.db = db, .on_metric = test_rows_collect, .ctx = rows};
    cr_assert_eq(xp_experiment_run(&cfg, &o, NULL, &err), 0, "%s", err.msg);
    an_db_close(db);
    cfg_release(&cfg);
    test_sql_text(path, "select blas from runs", blas, len);
}

Test(record, cnn_records_its_sparse_replay_and_off_changes_no_bit)
{
    const char *dir = test_tmpdir();
    static test_rows on, off;
    char blas_on[512], blas_off[512];
    unsetenv("DTSIM_SPARSE_REPLAY");
    cnn_run(dir, "on.db", &on, blas_on, sizeof blas_on);
    setenv("DTSIM_SPARSE_REPLAY", "off", 1);
    cnn_run(dir, "off.db", &off, blas_off, sizeof blas_off);
    unsetenv("DTSIM_SPARSE_REPLAY");
    cr_expect(strstr(blas_off, "), sparse replay off (DTSIM_SPARSE_REPLAY=off)"), "runs.blas = '%s'",
              blas_off);
    if (strstr(blas_on, "OpenBLAS 0.3.21 Haswell (pinned)") == blas_on)
        cr_expect(strstr(blas_on, "), sparse replay on") &&
                      blas_on[strlen(blas_on) - 1] == 'n',
                  "runs.blas = '%s'", blas_on);
    else
        cr_expect(strstr(blas_on, ", sparse replay "), "runs.blas = '%s'", blas_on);
    cr_assert_eq(on.n, 2, "%d rows", on.n);
    cr_assert_eq(off.n, on.n);
    for (int i = 0; i < on.n; i++) {
        const an_metric_row *a = &on.r[i], *b = &off.r[i];
        cr_expect(a->iteration == b->iteration && a->train_loss == b->train_loss &&
                      a->test_loss == b->test_loss && a->test_accuracy == b->test_accuracy,
                  "row %d: train loss %.17g against %.17g", i, a->train_loss, b->train_loss);
    }
    cr_expect_neq(on.r[1].train_loss, on.r[0].train_loss, "the run trained");
}
