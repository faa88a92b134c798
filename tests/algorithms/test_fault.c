/* Faults ([faults] schedule, whose parser config/schedule.c has its own
 * suite, and the random-fault keys): configuration errors of schedules and random-fault
 * keys, and two rules every method shares under faults that the runner
 * applies (experiment/env.c, tested here beside the schedule that drives
 * them): the consensus distance covers the live workers only, and a run
 * whose workers are all down for good fails. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/core/fault.h"
#include "tests/algorithms/harness.h"

Test(fault, missing_file_and_unsupported_method_are_config_errors)
{
    cfg_config cfg;
    sim_err err = {0};
    const char *sets[] = {"faults.schedule=/nonexistent/f.csv", "algorithm.name=asgd"};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini, sets, 2,
                                        &cfg,
                                        &err), 0);
    xp_env *x = xp_env_create(&cfg, NULL, &err);
    cr_assert_not_null(x);
    cr_assert_lt(xp_env_algo_create(x, &err), 0);
    cr_assert_str_eq(err.msg, "--set faults.schedule: /nonexistent/f.csv: "
                              "cannot open: No such file or directory");
    xp_env_destroy(x);
    cfg_release(&cfg);

    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n1s,crash,1,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets2[] = {set, "algorithm.name=dpsgd", "algorithm.compressor=topk(0.5)",
                           "topology.graph=one_peer_exponential"};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini, sets2, 4,
                                        &cfg,
                                        &err), 0);
    x = xp_env_create(&cfg, NULL, &err);
    cr_assert_not_null(x);
    cr_assert_lt(xp_env_algo_create(x, &err), 0);
    cr_assert_str_eq(err.msg, "--set algorithm.compressor: dpsgd: compressed gossip on a "
                              "time-varying graph does not support worker crashes ([faults])");
    xp_env_destroy(x);
    cfg_release(&cfg);
    unlink(path);
}

Test(fault, random_fault_keys_are_checked)
{
    struct {
        const char *sets[2];
        const char *want;
        const char *sets3, *sets4;
    } cases[] = {
        {{"algorithm.name=asgd", "faults.mtbf=model"},
         "--set faults.mtbf: expected none or a distribution of times such as "
         "exponential(300s), got 'model'", NULL, NULL},
        {{"algorithm.name=asgd", "faults.downtime=exponential(-1s)"},
         "--set faults.downtime: exponential: mean: expected a time such as 5us, got '-1s'",
         NULL, NULL},
        {{"algorithm.name=dpsgd", "faults.mtbf=exponential(1s)"},
         "--set algorithm.compressor: dpsgd: compressed gossip on a time-varying graph does "
         "not support worker crashes ([faults])",
         "algorithm.compressor=topk(0.5)", "topology.graph=one_peer_exponential"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        cfg_config cfg;
        sim_err err = {0};
        const char *sets[4] = {cases[k].sets[0], cases[k].sets[1], cases[k].sets3,
                               cases[k].sets4};
        int nsets = 2 + (cases[k].sets3 != NULL) + (cases[k].sets4 != NULL);
        cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini, sets,
                                            nsets, &cfg, &err), 0, "%s", err.msg);
        xp_env *x = xp_env_create(&cfg, NULL, &err);
        cr_assert_not_null(x, "%s", err.msg);
        cr_assert_eq(xp_env_algo_create(x, &err), SIM_ECONFIG);
        cr_assert_str_eq(err.msg, cases[k].want);
        xp_env_destroy(x);
        cfg_release(&cfg);
    }
}

/* A link row naming no link of the physical network is a config error
 * naming the file (down and up alike). */
Test(fault, link_rows_must_name_a_link)
{
    const char *rows[] = {"0.1s,link,0-2,down\n", "0.1s,link,0-2,up\n"};
    for (int k = 0; k < 2; k++) {
        char path[64], set[96], text[128], expect[256];
        snprintf(text, sizeof text, "time,event,target,value\n%s", rows[k]);
        test_write_temp(path, text);
        snprintf(set, sizeof set, "faults.schedule=%s", path);
        const char *sets[] = {set, "algorithm.name=dpsgd", "network.topology=ring"};
        cfg_config cfg;
        sim_err err = {0};
        cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini, sets,
                                            3, &cfg, &err), 0, "%s",
                     err.msg);
        xp_env *x = xp_env_create(&cfg, NULL, &err);
        cr_assert_not_null(x, "%s", err.msg);
        cr_assert_lt(xp_env_algo_create(x, &err), 0);
        snprintf(expect, sizeof expect,
                 "--set faults.schedule: %s: no link 0-2 in the physical network", path);
        cr_assert_str_eq(err.msg, expect);
        xp_env_destroy(x);
        cfg_release(&cfg);
        unlink(path);
    }
}

/* ---- the consensus distance under crashes ------------------------------ */

/* A method through the real runner, wrapped: at every evaluation (the
 * runner takes the evaluated model, then the consensus distance) the
 * wrapper computes Xi of the workers that are up, and of all n, from the
 * workers' models; a crashed worker's model is set far away (every entry
 * 1000). */
static const algo_vt *cd_base;
static algo_env *cd_env;
static double cd_live[64], cd_all[64];
static int cd_n; /* evaluations so far */
static int cd_create(algo_env *env, void **out, sim_err *err)
{
    cd_env = env;
    return cd_base->create(env, out, err);
}

static double xi_of(const float *const *xs, const int *use, int n, int64_t d)
{
    double mean[64] = {0}, s = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        m += use[i];
    for (int i = 0; i < n; i++)
        for (int64_t e = 0; e < d && use[i]; e++)
            mean[e] += xs[i][e];
    for (int64_t e = 0; e < d; e++)
        mean[e] /= m;
    for (int i = 0; i < n; i++)
        for (int64_t e = 0; e < d && use[i]; e++)
            s += ((double)xs[i][e] - mean[e]) * ((double)xs[i][e] - mean[e]);
    return sqrt(s / m);
}

static const float *cd_model(void *s, float *scratch)
{
    const float *xs[8];
    int up[8], all[8];
    cd_base->worker_models(s, xs);
    for (int i = 0; i < 8; i++) {
        up[i] = !cd_env->w[i].down;
        all[i] = 1;
    }
    if (cd_n < 64) {
        cd_live[cd_n] = xi_of(xs, up, 8, cd_env->d);
        cd_all[cd_n++] = xi_of(xs, all, 8, cd_env->d);
    }
    return cd_base->model(s, scratch);
}

static void cd_fault(void *s, const algo_fault *ev)
{
    cd_base->fault(s, ev);
    if (ev->kind == ALGO_FAULT_CRASH)
        for (int64_t e = 0; e < cd_env->d; e++)
            cd_env->w[ev->target].x[e] = 1000.0f;
}

typedef struct cd_rows {
    an_metric_row r[64];
    int n;
} cd_rows;

static void cd_collect(void *ctx, const an_metric_row *row)
{
    cd_rows *rs = ctx;
    if (rs->n < 64)
        rs->r[rs->n++] = *row;
}

/* Worker 3 crashes at 0.105 s and stays down; its model is set to 1000
 * everywhere. The recorded consensus distance is that of the 7 live
 * workers (computed here from their models) after the crash, while the
 * distance over all 8 would be above 100; before the crash the rows equal
 * those of the same run without faults, whose distance is the one over all
 * 8 workers. dmsgd (the gossip driver's live set: the snapshot of the
 * workers that completed the iteration, here those up) and ad_psgd (the
 * runner's rule: the workers that are up). */
Test(fault, consensus_distance_covers_the_live_workers)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n0.105s,crash,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static cd_rows plain, crash;
    const char *methods[][3] = {
        {"algorithm.name=dmsgd", "experiment.eval_every=1", "experiment.max_iterations=30"},
        {"algorithm.name=ad_psgd", "experiment.eval_every=10", "experiment.max_iterations=300"}};
    for (int m = 0; m < 2; m++) {
        cd_base = algo_find(methods[m][0] + strlen("algorithm.name="));
        cr_assert_not_null(cd_base);
        algo_vt vt = *cd_base;
        vt.create = cd_create;
        vt.model = cd_model;
        vt.fault = cd_fault;
        memset(&plain, 0, sizeof plain);
        memset(&crash, 0, sizeof crash);
        for (int run = 0; run < 2; run++) {
            const char *sets[] = {methods[m][0], methods[m][1], methods[m][2],
                                  "algorithm.momentum=0.9", "workload.init=independent", set};
            cfg_config cfg;
            sim_err err = {0};
            cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini,
                                                sets, run ? 6 : 5, &cfg,
                                                &err), 0, "%s", err.msg);
            cd_n = 0;
            cd_rows *rs = run ? &crash : &plain;
            xp_run_opts o = {.algorithm = &vt, .on_metric = cd_collect, .ctx = rs};
            xp_run_result res;
            cr_assert_eq(xp_experiment_run(&cfg, &o, &res, &err), 0, "%s", err.msg);
            cr_assert_str_eq(res.status, "done");
            cr_assert_eq(rs->n, 31, "%s: %d rows", methods[m][0], rs->n);
            cr_assert_eq(cd_n, rs->n);
            int before = 0, after = 0;
            for (int k = 0; k < rs->n; k++) {
                const an_metric_row *r = &rs->r[k];
                double want = run ? cd_live[k] : cd_all[k];
                cr_assert(fabs(r->consensus_distance - want) <= 1e-12 * want,
                          "%s run %d, row %d: %.17g vs %.17g", methods[m][0], run, k,
                          r->consensus_distance, want);
                if (run && r->sim_time < 0.105) {
                    cr_assert_eq(r->consensus_distance, plain.r[k].consensus_distance,
                                 "%s: row %d before the crash", methods[m][0], k);
                    cr_assert_eq(r->train_loss, plain.r[k].train_loss);
                    before++;
                } else if (run) {
                    cr_assert_gt(cd_all[k], 100.0);
                    cr_assert_lt(r->consensus_distance, 10.0);
                    after++;
                }
            }
            if (run)
                cr_assert(before >= 5 && after >= 10, "%s: %d rows before the crash, %d after",
                          methods[m][0], before, after);
            cfg_release(&cfg);
        }
    }
    unlink(path);
}

/* ---- every worker down for good ---------------------------------------- */

/* mtbf without a downtime: the workers crash one by one and never rejoin.
 * When the last one goes down the run fails with an input error naming
 * [faults] (before, a run with time-based evaluations evaluated the same
 * model forever); a scheduled rejoin still to come, or a downtime, keeps
 * it going. */
Test(fault, a_run_whose_workers_are_all_down_for_good_fails)
{
    char path[64], set[96];
    const char *sets[] = {"algorithm.name=asgd", "workers.count=4", "faults.mtbf=exponential(1s)",
                          "experiment.max_iterations=0", "experiment.max_epochs=5",
                          "experiment.eval_every=100ms", NULL};
    sim_err err = {0};
    cfg_config cfg;
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini, sets, 6,
                                        &cfg, &err), 0, "%s",
                 err.msg);
    xp_run_result res;
    cr_assert_eq(xp_experiment_run(&cfg, NULL, &res, &err), SIM_EINPUT, "%s", err.msg);
    cr_assert(strstr(err.msg, "[faults]: every worker is down at ") &&
                  strstr(err.msg, "none rejoins"),
              "%s", err.msg);
    cfg_release(&cfg);

    /* the same crashes with a downtime: the run ends by its epochs */
    sets[6] = "faults.downtime=constant(0.2s)";
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini, sets, 7,
                                        &cfg, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(xp_experiment_run(&cfg, NULL, &res, &err), 0, "%s", err.msg);
    cr_assert_str_eq(res.status, "done");
    cfg_release(&cfg);

    /* every worker crashes by the schedule, one rejoins later: no failure */
    test_write_temp(path, "time,event,target,value\n"
                          "0.1s,crash,0,\n0.1s,crash,1,\n0.1s,crash,2,\n0.1s,crash,3,\n"
                          "0.5s,rejoin,2,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *s2[] = {"algorithm.name=asgd", "workers.count=4", set,
                        "experiment.max_iterations=0", "experiment.max_time=1s",
                        "experiment.eval_every=100ms"};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini, s2, 6,
                                        &cfg, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(xp_experiment_run(&cfg, NULL, &res, &err), 0, "%s", err.msg);
    /* 4 workers at 100 updates a second until 0.1 s, none until 0.5 s, then
     * worker 2 alone */
    cr_assert(res.iterations > 80 && res.iterations < 95, "%lld", (long long)res.iterations);
    cr_assert_float_eq(res.sim_time, 1.0, 1e-9);
    cfg_release(&cfg);
    unlink(path);
}
