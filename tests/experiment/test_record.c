/* The recorder (experiment/record.c): the params rows keep every value as
 * written (spacing normalized) with its SI number, and runs.config the
 * canonical text. */
#include <criterion/criterion.h>
#include <stdio.h>

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
