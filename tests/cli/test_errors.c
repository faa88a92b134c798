/* The bad-input corpus of the command line: every case is a command over
 * one small experiment and the files below, with the exit status, a piece
 * of the message (naming the key or file) and the runs rows it may leave.
 * A configuration error writes no row; a time beyond the 64-bit clock is
 * refused when it is read or fails the run, never recorded as done. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/common.h"

static const char *small_ini = "[experiment]\n"
                               "name = small\n"
                               "max_epochs = 0\n"
                               "max_iterations = 20\n"
                               "eval_every = 5\n"
                               "[workers]\n"
                               "count = 4\n"
                               "compute = constant(1ms)\n"
                               "[algorithm]\n"
                               "name = allreduce_sgd\n"
                               "[workload]\n"
                               "model = softmax\n"
                               "dataset = blobs(3, 5, 600)\n";

typedef struct bad_case {
    const char *args;   /* after "dtsim"; the experiment is small.ini, the db r.db */
    int exit_code;
    const char *needle; /* in the output */
    const char *rows;   /* the runs' statuses afterwards, "" = none */
} bad_case;

static char out_text[65536];

/* A fresh directory with small.ini and the input files the cases name. */
static const char *case_dir(void)
{
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir);
    test_write_file(dir, "small.ini", small_ini);
    test_write_file(dir, "good.csv", "time,event,target,value\n1ms,slowdown,0,2\n");
    test_write_file(dir, "bad.csv", "time,event,target,value\n1ms,explode,0,\n");
    test_write_file(dir, "crash.csv", "time,event,target,value\n1ms,crash,0,\n");
    test_write_file(dir, "slow_1e300.csv", "time,event,target,value\n1ms,slowdown,0,1e300\n");
    test_write_file(dir, "cell_1e300.csv", "0.001,0.001,0.001,1e300\n");
    test_write_file(dir, "cell_1e9.csv", "0.001,0.001,0.001,1e9\n");
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/adir", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    return dir;
}

static void run_cases(const bad_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const bad_case *c = &cases[i];
        const char *dir = case_dir();
        char args[4096], db[4200];
        snprintf(args, sizeof args, "%s --db r.db --quiet", c->args);
        int rc = test_dtsim(dir, args, out_text, sizeof out_text);
        cr_assert_eq(rc, c->exit_code, "dtsim %s: exit %d, output: %s", c->args, rc, out_text);
        cr_assert(strstr(out_text, c->needle), "dtsim %s: '%s' not in: %s", c->args, c->needle,
                  out_text);
        snprintf(db, sizeof db, "%s/r.db", dir);
        const char *rows = test_run_statuses(db);
        cr_assert_str_eq(rows, c->rows, "dtsim %s: runs '%s', expected '%s'", c->args, rows,
                         c->rows);
    }
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Values whose times cannot fit the clock are refused as they are read,
 * naming the key or the file's line; a time that overflows only while
 * running fails the run with a message, and nothing is recorded done. */
Test(errors, clock_overflow_is_refused_or_fails_the_run)
{
    static const bad_case cases[] = {
        {"run small.ini --set workers.stragglers=1 --set workers.straggler_slowdown=1e300", 2,
         "straggler_slowdown=1e300: must be in [1, 1e6]", ""},
        {"run small.ini --set workers.transient_prob=0.5 --set workers.transient_slowdown=1e300",
         2, "transient_slowdown=1e300: must be in [1, 1e6]", ""},
        {"run small.ini --set workload.sim_params=1000000000000000000", 2,
         "sim_params=1000000000000000000: must be in [0, 1e15]", ""},
        {"run small.ini --set faults.schedule=slow_1e300.csv", 2,
         "slow_1e300.csv:2:16: expected a slowdown factor in (0, 1e6]", ""},
        {"run small.ini --set 'workers.compute=trace(cell_1e300.csv)'", 2,
         "cell_1e300.csv:1: column 4: time '1e300' is beyond the simulated clock", ""},
        /* fits as a value, overflows after a few steps */
        {"run small.ini --set 'workers.compute=trace(cell_1e9.csv)'", 2,
         "simulated time overflows", "failed"},
        {"run small.ini --set workers.transient_prob=1 --set workers.transient_slowdown=1e6"
         " --set 'workers.compute=constant(1000000s)'", 2, "simulated time overflows", "failed"},
        {"run small.ini --set workload.sim_params=1000000000000000 --set network.bandwidth=1bps",
         2, "simulated time overflows", "failed"},
    };
    run_cases(cases, N(cases));
}
