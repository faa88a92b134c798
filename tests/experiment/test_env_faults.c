/* The [faults] section of the environment (experiment/env_faults.c): the
 * schedule file is found beside the experiment file whatever the current
 * directory, an absolute name is used as it is, and the error of a
 * missing schedule names the file it tried. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "experiment/env.h"
#include "experiment/experiment.h"
#include "tests/common.h"

static const char *const faults_ini = "[workers]\n"
                                      "count = 4\n"
                                      "compute = constant(10ms)\n"
                                      "[algorithm]\n"
                                      "name = dpsgd\n"
                                      "batch = 8\n"
                                      "[workload]\n"
                                      "model = softmax\n"
                                      "dataset = blobs(3, 5, 600)\n"
                                      "[faults]\n"
                                      "schedule = crash.csv\n";

/* dir/exp/e.ini beside its schedule crash.csv, and an empty dir/elsewhere
 * as the current directory. */
static const char *setup(void)
{
    const char *dir = test_experiment_dir(faults_ini);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/exp", dir);
    test_write_file(sub, "crash.csv", "time,event,target,value\n1s,crash,2,\n");
    snprintf(sub, sizeof sub, "%s/elsewhere", dir);
    cr_assert_eq(chdir(sub), 0);
    return dir;
}

/* Loads ../exp/e.ini with sets, builds it and creates the method (which
 * loads the schedule): 0, *crashes = 1 when the schedule was read (its
 * crash event), or the error. */
static int load_schedule(const char *const *sets, int nsets, int *crashes, sim_err *err)
{
    cfg_config cfg;
    cr_assert_eq(cfg_load(xp_experiment_schema(), "../exp/e.ini", sets, nsets, &cfg,
                                 err), 0, "%s", err->msg);
    xp_env *x = xp_env_create(&cfg, NULL, err);
    cr_assert_not_null(x, "%s", err->msg);
    int rc = xp_env_algo_create(x, err);
    *crashes = algo_env_crashes(xp_env_algo_env(x));
    xp_env_destroy(x);
    cfg_release(&cfg);
    return rc;
}

Test(env_faults, the_schedule_is_found_beside_the_experiment_file)
{
    const char *dir = setup();
    int crashes = 0;
    sim_err err = {0};
    cr_assert_eq(load_schedule(NULL, 0, &crashes, &err), 0, "%s", err.msg);
    cr_assert_eq(crashes, 1);
    /* an absolute name stays as it is */
    char set[4300];
    snprintf(set, sizeof set, "faults.schedule=%s/exp/crash.csv", dir);
    const char *sets[] = {set};
    crashes = 0;
    cr_assert_eq(load_schedule(sets, 1, &crashes, &err), 0, "%s", err.msg);
    cr_assert_eq(crashes, 1);
}

Test(env_faults, a_missing_schedule_names_the_resolved_file)
{
    setup();
    int n = 0;
    sim_err err = {0};
    const char *sets[] = {"faults.schedule=gone.csv"};
    cr_assert_eq(load_schedule(sets, 1, &n, &err), SIM_EINPUT, "%s", err.msg);
    cr_assert_str_eq(err.msg, "--set faults.schedule: ../exp/gone.csv: cannot open: No such "
                              "file or directory");
    /* the file's own value: the error names the file and line of the key */
    remove("../exp/crash.csv");
    cr_assert_eq(load_schedule(NULL, 0, &n, &err), SIM_EINPUT, "%s", err.msg);
    cr_assert_str_eq(err.msg, "../exp/e.ini:11: [faults] schedule: ../exp/crash.csv: cannot "
                              "open: No such file or directory");
}

/* A crash cuts the step in progress: it counts neither as a step nor as
 * compute time. dsgd_atc on an ideal network with constant 10 ms steps:
 * worker 5 starts steps at 0, 10, ..., 100 ms and crashes for good at
 * 105 ms, inside its 11th: 10 steps, 0.1 s of compute. */
Test(env_faults, a_crashed_workers_lost_step_is_not_counted)
{
    const char *path = test_db_path("lost.db");
    char sched[64], set[96];
    test_write_temp(sched, "time,event,target,value\n0.105s,crash,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", sched);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    xp_run_opts o = {.db = db};
    const char *sets[] = {set, "experiment.max_iterations=30"};
    test_run_opts(test_base_ini, sets, 2, &o);
    an_db_close(db);
    unlink(sched);
    cr_assert_eq(test_sql_int(path, "SELECT steps FROM workers WHERE worker = 5"), 10);
    cr_assert_float_eq(test_sql_real(path, "SELECT compute_time FROM workers WHERE worker = 5"),
                       0.1, 1e-9);
    /* a live worker's steps all count: 30 iterations of one step each */
    cr_assert_eq(test_sql_int(path, "SELECT steps FROM workers WHERE worker = 4"), 30);
}

/* [faults] sync_timeout is read once, by the environment, for every method
 * (the drivers and asgd schedule their timeouts with env->sync_timeout);
 * a negative one never gets there: the time parser refuses it. */
Test(env_faults, the_sync_timeout_is_read_once_for_every_method)
{
    setup();
    static const char *const methods[] = {"algorithm.name=dpsgd", "algorithm.name=asgd",
                                          "algorithm.name=allreduce_sgd"};
    for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
        const char *sets[] = {"faults.schedule=none", "faults.sync_timeout=250ms", methods[m]};
        cfg_config cfg;
        sim_err err = {0};
        cr_assert_eq(cfg_load(xp_experiment_schema(), "../exp/e.ini", sets, 3, &cfg, &err), 0,
                     "%s", err.msg);
        xp_env *x = xp_env_create(&cfg, NULL, &err);
        cr_assert_not_null(x, "%s", err.msg);
        cr_assert_eq(xp_env_algo_env(x)->sync_timeout, sim_time_from_s(0.25), "%s", methods[m]);
        xp_env_destroy(x);
        cfg_release(&cfg);
    }
    const char *neg[] = {"faults.sync_timeout=-1s"};
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_lt(cfg_load(xp_experiment_schema(), "../exp/e.ini", neg, 1, &cfg, &err), 0);
    cr_assert_str_eq(err.msg, "--set faults.sync_timeout=-1s: expected a time such as 5us, got "
                              "'-1s'");
}
