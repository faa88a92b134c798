/* analysis/report_match.c: time to target and baselines on a database with
 * known answers: accuracy (reached when >=) and loss (when <=) targets, a
 * run's own target, --sustain on a noisy curve, and which run is a run's
 * automatic baseline. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/db.h"
#include "analysis/report.h"
#include "tests/analysis/fixtures.h"
#include "tests/common.h"

Test(report_match, accuracy_target_auto_baseline)
{
    an_db *db = fx_report_known_db();
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.8};
    an_report rep;
    sim_err err = {0};
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_eq(rep.n_rows, N_RUNS);
    for (int i = 0; i < N_RUNS; i++)
        cr_assert_eq(rep.rows[i].id, i + 1);

    const an_report_row *base = fx_report_row(&rep, R_BASE);
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

    const an_report_row *fast = fx_report_row(&rep, R_FAST);
    cr_assert_float_eq(fast->time_to_target, 0.5, 1e-12);
    cr_assert_eq(fast->baseline_id, R_BASE);
    cr_assert_float_eq(fast->speedup, 4.0, 1e-12);

    const an_report_row *never = fx_report_row(&rep, R_NEVER);
    cr_assert(isnan(never->time_to_target));
    cr_assert(isnan(never->speedup));
    cr_assert_eq(never->baseline_id, R_BASE);

    /* other params: its own baseline; a failed twin is never a baseline */
    cr_assert_eq(fx_report_row(&rep, R_OTHER)->baseline_id, R_OTHER);
    cr_assert_eq(fx_report_row(&rep, R_FAILED)->baseline_id, R_BASE);
    cr_assert_float_eq(fx_report_row(&rep, R_FAILED)->speedup, 20.0, 1e-12);
    /* a different common training key (lr) is another experiment */
    cr_assert_eq(fx_report_row(&rep, R_LR)->baseline_id, R_LR);
    /* lowest id wins among matching baselines */
    cr_assert_eq(fx_report_row(&rep, R_DUP)->baseline_id, R_BASE);
    cr_assert_float_eq(fx_report_row(&rep, R_DUP)->speedup, 2.0, 1e-12);

    const an_report_row *running = fx_report_row(&rep, R_RUNNING);
    cr_assert_str_eq(running->status, "running");
    cr_assert(isnan(running->final_train_loss));
    cr_assert_eq(running->bytes_sent, -1);
    cr_assert_float_eq(running->time_to_target, 0.5, 1e-12);
    an_report_release(&rep);
    an_db_close(db);
}

Test(report_match, default_target_from_params)
{
    an_db *db = fx_report_known_db();
    an_report_opts opts = {0};
    an_report rep;
    sim_err err = {0};
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_float_eq(fx_report_row(&rep, R_FAST)->target, 0.8, 1e-12);
    cr_assert_float_eq(fx_report_row(&rep, R_FAST)->time_to_target, 0.5, 1e-12);
    cr_assert_float_eq(fx_report_row(&rep, R_FAST)->speedup, 4.0, 1e-12);
    an_report_release(&rep);
    an_db_close(db);
}

Test(report_match, loss_target_reached_when_at_most)
{
    an_db *db = fx_report_known_db();
    an_report_opts opts = {.target_metric = "train_loss", .target_value = 0.4};
    an_report rep;
    sim_err err = {0};
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_float_eq(fx_report_row(&rep, R_BASE)->time_to_target, 2.0, 1e-12);
    cr_assert_float_eq(fx_report_row(&rep, R_FAST)->time_to_target, 0.5, 1e-12);
    cr_assert_float_eq(fx_report_row(&rep, R_FAST)->speedup, 4.0, 1e-12);
    cr_assert(isnan(fx_report_row(&rep, R_NEVER)->time_to_target));
    an_report_release(&rep);

    /* test_loss = train_loss + 0.05 in this database */
    opts.target_metric = "test_loss";
    opts.target_value = 0.56;
    cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
    cr_assert_float_eq(fx_report_row(&rep, R_BASE)->time_to_target, 1.5, 1e-12);
    cr_assert_float_eq(fx_report_row(&rep, R_DUP)->time_to_target, 1.0, 1e-12);
    an_report_release(&rep);
    an_db_close(db);
}

/* --sustain K on a noisy curve: the first crossing (t = 1) falls back
 * below; the target holds from t = 3 for three evaluations, then dips. */
Test(report_match, sustained_target_on_a_noisy_curve)
{
    const char *dir = test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/noisy.db", dir);
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    static const fx_point noisy[] = {{0.0, 0.50, 1.0}, {1.0, 0.90, 0.3}, {2.0, 0.70, 0.6},
                                  {3.0, 0.86, 0.4}, {4.0, 0.88, 0.35}, {5.0, 0.91, 0.3},
                                  {6.0, 0.84, 0.45}, {7.0, 0.87, 0.4}};
    int64_t id = fx_report_run(db, "noisy", "allreduce_sgd", "4", "0.1", noisy, 8, "done", 0);
    an_report_opts opts = {.target_metric = "test_accuracy", .target_value = 0.85};
    an_report rep;
    const double want[] = {1.0, 1.0, 3.0, 3.0, NAN};
    for (int k = 0; k <= 4; k++) {
        opts.sustain = k == 4 ? 4 : k;
        cr_assert_eq(an_report_build(db, &opts, &rep, &err), 0, "%s", err.msg);
        const an_report_row *r = fx_report_row(&rep, id);
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
    cr_assert_float_eq(fx_report_row(&rep, id)->time_to_target, 3.0, 1e-12);
    an_report_release(&rep);
    an_db_close(db);
}
