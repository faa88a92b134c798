/* The crash-conformance table: properties every method that supports
 * worker crashes shares, checked for each row of one table of methods
 * (docs/faults.md), so that a new method gets the fault tests by adding a
 * row. Per row: (a) no crash equals the plain run (a schedule holding only
 * a slowdown of 1, and one holding only an event past the end, give the
 * metric rows of the run without a schedule); (b) a single crash of a
 * worker costs the timeout once and the run continues over the survivors;
 * (c) random crashes and rejoins run through and give the same rows at 1,
 * 2 and 4 threads; (d) a method or configuration that refuses crashes
 * names the key that makes it refuse. Below the table: the synchronous
 * methods with compression (gravac, the 1-bit methods) under random
 * crashes and with the hierarchical collective. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/core/fault.h"
#include "tests/algorithms/harness.h"

/* ---- the table ---------------------------------------------------------- */

/* A method that supports crashes, as overrides of test_base_ini (8 workers
 * on a ring, constant 10 ms steps, ideal network). sync = 1: its workers
 * wait for a crashed worker until sync_timeout (synchronous rounds and
 * synchronous gossip); 2: they wait, but the wait overlaps their local
 * steps (one iteration is late, by less than the timeout); 0: asynchronous
 * (nobody waits). */
typedef struct crash_row {
    const char *name; /* the row's label */
    const char *sets[4];
    int nsets;
    int sync;
    /* iterations per 10 ms step of every worker: 1, or n for asgd (one
     * iteration per server update) */
    int per_step;
} crash_row;

static const crash_row crash_rows[] = {
#define ROW(label, sync_, ...)                                                                  \
    {.name = label, .sets = {__VA_ARGS__},                                                     \
     .nsets = sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *), .sync = sync_}
    ROW("allreduce_sgd", 1, "algorithm.name=allreduce_sgd"),
    ROW("allreduce_sgd bucket", 1, "algorithm.name=allreduce_sgd", "algorithm.bucket=64B"),
    ROW("local_sgd", 1, "algorithm.name=local_sgd", "algorithm.local_steps=4"),
    ROW("post_local_sgd", 1, "algorithm.name=post_local_sgd", "algorithm.local_steps=4",
        "algorithm.switch_epoch=0.5"),
    ROW("adaptive_local_sgd", 1, "algorithm.name=adaptive_local_sgd"),
    ROW("slowmo", 1, "algorithm.name=slowmo", "algorithm.local_steps=4"),
    ROW("slowmo base = dpsgd", 1, "algorithm.name=slowmo", "algorithm.base=dpsgd",
        "algorithm.local_steps=4"),
    ROW("overlap_local_sgd", 2, "algorithm.name=overlap_local_sgd", "algorithm.local_steps=4"),
    ROW("overlap_local_sgd bucket", 2, "algorithm.name=overlap_local_sgd",
        "algorithm.local_steps=4", "algorithm.bucket=64B"),
    ROW("gravac", 1, "algorithm.name=gravac", "algorithm.window=5"),
    ROW("onebit_adam", 1, "algorithm.name=onebit_adam", "algorithm.freeze_step=20",
        "algorithm.lr=0.01"),
    ROW("onebit_lamb", 1, "algorithm.name=onebit_lamb", "algorithm.freeze_step=20",
        "algorithm.lr=0.01"),
    ROW("onebit_adam bucket", 1, "algorithm.name=onebit_adam", "algorithm.freeze_step=20",
        "algorithm.lr=0.01", "algorithm.bucket=64B"),
    ROW("dpsgd", 1, "algorithm.name=dpsgd"),
    ROW("CHOCO dpsgd", 1, "algorithm.name=dpsgd", "algorithm.compressor=topk(0.1)"),
    ROW("CHOCO dsgd_atc", 1, "algorithm.name=dsgd_atc", "algorithm.compressor=topk(0.1)"),
    ROW("dsgd_atc", 1, "algorithm.name=dsgd_atc"),
    ROW("dsgd_atc one_peer_exponential", 1, "algorithm.name=dsgd_atc",
        "topology.graph=one_peer_exponential"),
    ROW("dmsgd", 1, "algorithm.name=dmsgd"),
    ROW("decentlam", 1, "algorithm.name=decentlam"),
    ROW("momentum_consensus", 1, "algorithm.name=momentum_consensus"),
    ROW("consensus_control", 1, "algorithm.name=consensus_control"),
    {.name = "asgd", .sets = {"algorithm.name=asgd"}, .nsets = 1, .per_step = 8},
    {.name = "ad_psgd", .sets = {"algorithm.name=ad_psgd"}, .nsets = 1, .per_step = 8},
    {.name = "swarm_sgd", .sets = {"algorithm.name=swarm_sgd"}, .nsets = 1, .per_step = 8},
#undef ROW
};
enum { N_CRASH_ROWS = sizeof crash_rows / sizeof crash_rows[0] };

/* A configuration that refuses crashes, and the key its error names. */
typedef struct refusal_row {
    const char *name;
    const char *sets[3];
    int nsets;
    const char *key;
} refusal_row;

static const refusal_row refusal_rows[] = {
    {"CHOCO dpsgd on a time-varying graph",
     {"algorithm.name=dpsgd", "algorithm.compressor=topk(0.5)",
      "topology.graph=one_peer_exponential"},
     3, "compressor"},
};

enum { MAX_SETS = 12 };

/* The row's overrides, then extra[0..nextra), into out; returns the count. */
static int row_sets(const crash_row *row, const char *const *extra, int nextra,
                    const char **out)
{
    int n = 0;
    for (int k = 0; k < row->nsets; k++)
        out[n++] = row->sets[k];
    for (int k = 0; k < nextra && n < MAX_SETS; k++)
        out[n++] = extra[k];
    return n;
}

/* Runs a row with extra overrides at `threads` threads, collecting rows. */
static void run_row(const crash_row *row, const char *const *extra, int nextra, int threads,
                    test_rows *rs)
{
    const char *sets[MAX_SETS];
    int n = row_sets(row, extra, nextra, sets);
    rs->n = 0;
    xp_run_opts opts = {.on_metric = test_rows_collect, .ctx = rs, .threads = threads};
    xp_run_result res;
    sim_err err = {0};
    int rc = test_run_try(test_base_ini, sets, n, &opts, &res, &err);
    cr_assert_eq(rc, 0, "%s: %s", row->name, err.msg);
}

/* The row's per_step (1 when not set). */
static int row_per_step(const crash_row *row) { return row->per_step > 0 ? row->per_step : 1; }

/* -1 when two runs' rows are identical (iteration, time, train loss, test
 * loss and accuracy, bit for bit), else the first row that differs. */
static int rows_differ(const test_rows *a, const test_rows *b)
{
    if (a->n != b->n || a->n < 4)
        return 0;
    for (int i = 0; i < a->n; i++) {
        const an_metric_row *x = &a->r[i], *y = &b->r[i];
        if (x->iteration != y->iteration || x->sim_time != y->sim_time ||
            memcmp(&x->train_loss, &y->train_loss, sizeof x->train_loss) != 0 ||
            memcmp(&x->test_loss, &y->test_loss, sizeof x->test_loss) != 0 ||
            memcmp(&x->test_accuracy, &y->test_accuracy, sizeof x->test_accuracy) != 0)
            return i;
    }
    return -1;
}

/* Appends "label (detail); " to the list of rows that fail a property:
 * every row is checked before the test fails, and its message names all
 * that do. */
static void note_failure(char *bad, size_t cap, const char *label, const char *detail)
{
    size_t len = strlen(bad);
    snprintf(bad + len, cap - len, "%s (%s); ", label, detail);
}

static test_rows plain, other;

/* (a) No crash equals the plain run: a schedule with only a slowdown of
 * 1, or only a crash after the run's end (60 iterations of 10 ms), gives
 * the rows of the run without a schedule. */
Test(crash_conformance, no_crash_equals_the_plain_run)
{
    char slow1[64], late[64], set1[96], set2[96], what[64], bad[2048] = "";
    test_write_temp(slow1, "time,event,target,value\n0.05s,slowdown,2,1\n");
    test_write_temp(late, "time,event,target,value\n100s,crash,3,\n");
    snprintf(set1, sizeof set1, "faults.schedule=%s", slow1);
    snprintf(set2, sizeof set2, "faults.schedule=%s", late);
    const char *iters = "experiment.max_iterations=60";
    for (int r = 0; r < N_CRASH_ROWS; r++) {
        const crash_row *row = &crash_rows[r];
        const char *none[] = {iters};
        const char *with1[] = {iters, set1, "faults.sync_timeout=50ms"};
        const char *with2[] = {iters, set2, "faults.sync_timeout=50ms"};
        run_row(row, none, 1, 1, &plain);
        run_row(row, with1, 3, 1, &other);
        int at = rows_differ(&plain, &other);
        snprintf(what, sizeof what, "slowdown of 1: row %d differs", at);
        if (at >= 0)
            note_failure(bad, sizeof bad, row->name, what);
        run_row(row, with2, 3, 1, &other);
        at = rows_differ(&plain, &other);
        snprintf(what, sizeof what, "crash after the end: row %d differs", at);
        if (at >= 0)
            note_failure(bad, sizeof bad, row->name, what);
    }
    unlink(slow1);
    unlink(late);
    cr_assert_eq(bad[0], 0, "no crash differs from the plain run: %s", bad);
}

/* (b) A crash costs the timeout once: worker 5 crashes at 0.105 s (inside
 * its 11th step) for good, sync_timeout = 50 ms. The run completes 60
 * steps' worth of iterations over the 7 survivors; worker 5 takes no step
 * after the crash.
 * For a method whose workers wait for it, exactly one iteration takes at
 * least the timeout after the one before it (the affected round ends
 * sync_timeout after its start at the earliest; rounds over 7 may then be
 * shorter or longer than over 8); when the wait overlaps local steps,
 * exactly one iteration after the crash is later than every one before
 * it, by less than the timeout; for an asynchronous method no iteration
 * waits that long. */
Test(crash_conformance, a_crash_costs_the_timeout_once)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n0.105s,crash,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const double timeout = 0.05;
    char what[64], bad[2048] = "";
    for (int r = 0; r < N_CRASH_ROWS; r++) {
        const crash_row *row = &crash_rows[r];
        const char *extra[] = {set, "faults.sync_timeout=50ms"};
        const char *sets[MAX_SETS];
        int n = row_sets(row, extra, 2, sets);
        static times ts;
        ts.n = 0;
        harness h;
        h_build(&h, test_base_ini, sets, n);
        h.probe = record_time;
        h.probe_ctx = &ts;
        int iters = 60 * row_per_step(row);
        h_run(&h, iters);
        cr_assert_eq(ts.n, iters, "%s", row->name);
        /* waits: iterations that took the timeout; late: iterations that
         * took longer than any before the crash */
        int waits = 0, late = 0;
        double prev = 0, usual = 0;
        for (int i = 0; i < ts.n; i++) {
            double gap = ts.t[i] - prev;
            if (ts.t[i] < 0.105)
                usual = fmax(usual, gap);
            else
                late += gap > usual + 1e-9;
            waits += gap >= timeout - 1e-9;
            prev = ts.t[i];
        }
        int ok = row->sync == 1 ? waits == 1
                 : row->sync == 2 ? waits == 0 && late == 1
                                  : waits == 0;
        snprintf(what, sizeof what, "%d took the timeout, %d were late", waits, late);
        if (!ok)
            note_failure(bad, sizeof bad, row->name, what);
        cr_assert(h.env->w[5].down, "%s", row->name);
        cr_assert_leq(h.env->w[5].steps, 11, "%s: worker 5 took %lld steps", row->name,
                      (long long)h.env->w[5].steps);
        for (int i = 0; i < h.env->n; i++)
            if (i != 5)
                cr_assert_gt(h.env->w[i].steps, 40, "%s: worker %d", row->name, i);
        h_free(&h);
    }
    unlink(path);
    cr_assert_eq(bad[0], 0, "the timeout is not paid once: %s", bad);
}

/* (c) Random crashes and rejoins (several a worker) run through, and the
 * rows are the same at 1, 2 and 4 threads. */
Test(crash_conformance, random_crashes_give_the_same_rows_at_1_2_and_4_threads)
{
    const char *extra[] = {"faults.mtbf=exponential(150ms)", "faults.downtime=constant(30ms)",
                           "faults.sync_timeout=5ms", "experiment.max_iterations=120"};
    char what[64], bad[2048] = "";
    for (int r = 0; r < N_CRASH_ROWS; r++) {
        const crash_row *row = &crash_rows[r];
        run_row(row, extra, 4, 1, &plain);
        for (int threads = 2; threads <= 4; threads *= 2) {
            run_row(row, extra, 4, threads, &other);
            int at = rows_differ(&plain, &other);
            snprintf(what, sizeof what, "%d threads: row %d differs", threads, at);
            if (at >= 0)
                note_failure(bad, sizeof bad, row->name, what);
        }
    }
    cr_assert_eq(bad[0], 0, "rows depend on the threads: %s", bad);
}

/* (d) A configuration that refuses crashes says so as an error naming the
 * key that makes it refuse, with a schedule and with random crashes. */
Test(crash_conformance, a_refusal_names_the_key)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n0.105s,crash,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *faults[] = {set, "faults.mtbf=exponential(1s)"};
    for (size_t r = 0; r < sizeof refusal_rows / sizeof refusal_rows[0]; r++) {
        const refusal_row *row = &refusal_rows[r];
        for (int f = 0; f < 2; f++) {
            const char *sets[5];
            int n = 0;
            for (int k = 0; k < row->nsets; k++)
                sets[n++] = row->sets[k];
            sets[n++] = faults[f];
            xp_run_result res;
            sim_err err = {0};
            int rc = test_run_try(test_base_ini, sets, n, NULL, &res, &err);
            cr_assert_neq(rc, 0, "%s accepted %s", row->name, faults[f]);
            cr_assert_not_null(strstr(err.msg, row->key), "%s: '%s' does not name %s",
                               row->name, err.msg, row->key);
        }
    }
    unlink(path);
}

/* ---- the synchronous methods with compression -------------------------- */

/* gravac, onebit_adam and onebit_lamb run through random crashes and
 * rejoins (several a worker): every worker keeps taking part, the model
 * stays finite, and the crash and rejoin rows are there. */
Test(crash_conformance, scrash_methods_run_through_random_crashes)
{
    const char *methods[][2] = {
        {"algorithm.name=gravac", "algorithm.window=5"},
        {"algorithm.name=onebit_adam", "algorithm.freeze_step=20"},
        {"algorithm.name=onebit_lamb", "algorithm.freeze_step=20"},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        const char *sets[] = {methods[m][0], methods[m][1], "faults.mtbf=exponential(60ms)",
                              "faults.downtime=constant(25ms)", "faults.sync_timeout=5ms",
                              "algorithm.lr=0.01"};
        harness h;
        h_build(&h, test_base_ini, sets, 6);
        h_run(&h, 300);
        for (int i = 0; i < h.env->n; i++)
            cr_assert_gt(h.env->w[i].steps, 20, "%s: worker %d", methods[m][0], i);
        float s[64];
        const float *x = h.vt->model(h.alg, s);
        for (int64_t j = 0; j < h.env->d; j++)
            cr_assert(isfinite(x[j]), "%s", methods[m][0]);
        h_free(&h);
    }
}

/* gravac and the 1-bit methods with the hierarchical collective under
 * random crashes: each group's dense all-reduce is the hierarchical one over
 * its members' servers (partial servers included), as allreduce_sgd's; the
 * all-gather and all-to-all do not depend on it. Every worker computes and
 * the model stays finite. */
Test(crash_conformance, scrash_methods_run_with_the_hierarchical_collective)
{
    const char *methods[][2] = {
        {"algorithm.name=gravac", "algorithm.window=5"},
        {"algorithm.name=onebit_adam", "algorithm.freeze_step=20"},
        {"algorithm.name=onebit_lamb", "algorithm.freeze_step=20"},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        const char *sets[] = {methods[m][0], methods[m][1], "faults.mtbf=exponential(60ms)",
                              "faults.downtime=constant(25ms)", "faults.sync_timeout=5ms",
                              "algorithm.lr=0.01", "network.topology=hierarchical(2, 4)",
                              "network.collective=hierarchical"};
        harness h;
        h_build(&h, test_base_ini, sets, 8);
        h_run(&h, 300);
        for (int i = 0; i < h.env->n; i++)
            cr_assert_gt(h.env->w[i].steps, 20, "%s: worker %d", methods[m][0], i);
        float s[64];
        const float *x = h.vt->model(h.alg, s);
        for (int64_t j = 0; j < h.env->d; j++)
            cr_assert(isfinite(x[j]), "%s", methods[m][0]);
        h_free(&h);
    }
}
