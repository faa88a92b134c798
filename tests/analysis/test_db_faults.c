/* The faults table (analysis/db.c, written by the runner): random crashes
 * are recorded deterministically (each crash with its rejoin, the
 * downtime as the crash row's value), and lost and re-sent messages on a
 * down link are recorded with their bytes, which reconcile with the run's
 * byte counters. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/db.h"
#include "config/config.h"
#include "experiment/experiment.h"
#include "tests/common.h"

/* ---- random faults and the faults table -------------------------------- */

/* asgd with random crashes: mtbf = exponential(0.5s) per worker, downtime
 * constant(0.1s), 8 workers, 4 s. Every crash is followed by the same
 * worker's rejoin exactly 0.1 s later (unless the run ended first), the
 * crash row's value is the downtime, the scheduled slowdown is there too,
 * and a second run writes the same rows (own streams: deterministic). The
 * number of crashes is a Poisson-like count with mean about
 * 8 x 4 / (0.5 + 0.1) = 53: asserted within [25, 90]. */
Test(db_faults, random_crashes_are_recorded_deterministically_in_the_faults_table)
{
    char csv[64], set[96], dbpath[64];
    test_write_temp(csv, "time,event,target,value\n1s,slowdown,2,3\n");
    test_write_temp(dbpath, "");
    unlink(dbpath);
    snprintf(set, sizeof set, "faults.schedule=%s", csv);
    const char *sets[] = {set, "algorithm.name=asgd", "faults.mtbf=exponential(0.5s)",
                          "faults.downtime=constant(0.1s)", "experiment.max_iterations=0",
                          "experiment.max_time=4s", "experiment.eval_every=1s"};
    sim_err err = {0};
    an_db *db = an_db_open(dbpath, &err);
    cr_assert_not_null(db, "%s", err.msg);
    for (int run = 0; run < 2; run++) {
        cfg_config cfg;
        cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini, sets,
                                            7, &cfg, &err), 0, "%s",
                     err.msg);
        xp_run_opts o = {.db = db};
        xp_run_result res;
        cr_assert_eq(xp_experiment_run(&cfg, &o, &res, &err), 0, "%s", err.msg);
        cfg_release(&cfg);
    }
    an_db_close(db);
    int64_t crashes = test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1"
                                           " AND event = 'crash'");
    cr_assert(crashes >= 25 && crashes <= 90, "%lld crashes", (long long)crashes);
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1 AND"
                                      " event = 'crash' AND value = 0.1"),
                 crashes);
    /* each crash's rejoin 0.1 s later, same worker */
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM faults c WHERE c.run_id = 1 AND"
                                      " c.event = 'crash' AND c.sim_time < 3.9 AND NOT EXISTS"
                                      " (SELECT 1 FROM faults r WHERE r.run_id = 1 AND"
                                      " r.event = 'rejoin' AND r.target = c.target AND"
                                      " abs(r.sim_time - c.sim_time - 0.1) < 1e-9)"), 0);
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1 AND"
                                      " event = 'rejoin' AND value IS NULL"),
                 test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1 AND"
                                      " event = 'rejoin'"));
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1 AND"
                                      " event = 'slowdown' AND target = '2' AND value = 3"
                                      " AND sim_time = 1"), 1);
    /* both runs wrote the same rows */
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 2"),
                 test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1"));
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM (SELECT sim_time, event, target, value"
                                      " FROM faults WHERE run_id = 1 EXCEPT SELECT sim_time, event,"
                                      " target, value FROM faults WHERE run_id = 2)"), 0);
    unlink(dbpath);
    unlink(csv);
}

/* The same dpsgd run through the runner: the faults table has the down
 * row (value 0), the up row (the configured rate), one `lost` row per lost
 * attempt (the bytes sent before the loss, 0 to S = 176) and one `resent`
 * row per re-send (S each; at most one per loss). The byte counters count
 * what was sent: the run's bytes are the workers' sum, and minus the lost
 * rows' bytes they are whole messages. */
Test(db_faults, lost_and_resent_messages_are_recorded_in_the_faults_table)
{
    char csv[64], set[96], dbpath[64];
    test_write_temp(csv, "time,event,target,value\n0.05s,link,2-3,down\n0.25s,link,2-3,up\n");
    test_write_temp(dbpath, "");
    unlink(dbpath);
    snprintf(set, sizeof set, "faults.schedule=%s", csv);
    const char *sets[] = {set, "algorithm.name=dpsgd", "faults.sync_timeout=20ms",
                          "network.topology=ring", "network.latency=100us",
                          "network.bandwidth=10kB/s", "experiment.max_iterations=40"};
    sim_err err = {0};
    an_db *db = an_db_open(dbpath, &err);
    cr_assert_not_null(db, "%s", err.msg);
    cfg_config cfg;
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", test_base_ini, sets, 7,
                                        &cfg, &err), 0, "%s",
                 err.msg);
    xp_run_opts o = {.db = db};
    xp_run_result res;
    cr_assert_eq(xp_experiment_run(&cfg, &o, &res, &err), 0, "%s", err.msg);
    cfg_release(&cfg);
    an_db_close(db);
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'link' AND"
                                      " target = '2-3' AND value = 0 AND sim_time = 0.05"), 1);
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'link' AND"
                                      " target = '2-3' AND value = 10000 AND sim_time = 0.25"), 1);
    int64_t lost = test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'lost'");
    int64_t resent = test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'resent'");
    cr_assert_gt(lost, 0);
    cr_assert_gt(resent, 0);
    cr_assert_leq(resent, lost);
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'lost' AND"
                                      " (value < 0 OR value > 176 OR sim_time < 0.05)"), 0);
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'resent' AND"
                                      " value <> 176"), 0);
    /* the lost messages were between 2 and 3 (both directions) */
    cr_assert_eq(test_sql_int(dbpath, "SELECT count(*) FROM faults WHERE event IN"
                                      " ('lost', 'resent') AND target NOT IN ('2-3', '3-2')"),
                 0);
    int64_t bytes = test_sql_int(dbpath, "SELECT bytes_sent FROM runs");
    cr_assert_eq(test_sql_int(dbpath, "SELECT sum(bytes_sent) FROM workers"), bytes);
    double whole = (double)bytes - test_sql_real(dbpath, "SELECT sum(value) FROM faults"
                                                         " WHERE event = 'lost'");
    cr_assert(fabs(whole - 176.0 * round(whole / 176.0)) <= 1.0, "%.3f bytes", whole);
    unlink(dbpath);
    unlink(csv);
}
