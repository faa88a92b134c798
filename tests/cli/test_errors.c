/* The bad-input corpus of the command line: every case is a command over
 * one small experiment and the files below, with the exit status, a piece
 * of the message (naming the key or file) and the runs rows it may leave.
 * A configuration error writes no row; a time beyond the 64-bit clock is
 * refused when it is read or fails the run, never recorded as done. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "algorithms/core/algo.h"
#include "cli/cli.h"
#include "config/config.h"
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
    test_write_file(dir, "badlink.csv", "time,event,target,value\n1ms,link,0-99,1Gbps\n");
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
        int db_opts = strncmp(c->args, "run ", 4) == 0 || strncmp(c->args, "sweep ", 6) == 0;
        snprintf(args, sizeof args, "%s%s", c->args, db_opts ? " --db r.db --quiet" : "");
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

/* A sweep checks every point before anything runs, [faults] values and
 * files and the method's own create-time refusals included: a bad point
 * leaves no row at all. */
Test(errors, grids_are_checked_whole_before_running)
{
    static const bad_case cases[] = {
        {"sweep small.ini --grid faults.schedule=good.csv,bad.csv", 2,
         "bad.csv:2:5: unknown event 'explode'", ""},
        {"sweep small.ini --grid 'faults.mtbf=none,exponential(-1s)'", 2, "faults.mtbf", ""},
        {"sweep small.ini --set 'faults.mtbf=exponential(1s)' --grid"
         " 'faults.downtime=none,constant(-1s)'", 2, "faults.downtime", ""},
        {"sweep small.ini --grid faults.schedule=none,adir", 2, "adir: is a directory", ""},
        {"sweep small.ini --grid faults.schedule=none,badlink.csv", 2, "badlink.csv:2:10", ""},
        {"sweep small.ini --grid 'faults.mtbf=none,constant(1ns)'", 2, "far below", ""},
        /* refusals only the method's create finds, at the second point */
        {"sweep small.ini --set algorithm.name=local_sgd --grid algorithm.local_steps=4,0", 2,
         "sweep config 2 of 2 (algorithm.local_steps=0): --set algorithm.local_steps: must be"
         " in [1, 1000000], got 0", ""},
        {"sweep small.ini --set algorithm.name=gravac --set algorithm.theta_max=0.5"
         " --grid algorithm.theta_min=0.9,0.1", 2,
         "sweep config 2 of 2 (algorithm.theta_min=0.1): --set algorithm.theta_max: must be in"
         " (0, theta_min], got 0.5", ""},
    };
    run_cases(cases, N(cases));
}

/* Messages name the key or file, and an input's fault is exit 2. */
Test(errors, messages_name_the_key_and_input_faults_exit_2)
{
    static const bad_case cases[] = {
        {"run small.ini --set 'workers.compute=trace(adir)'", 2,
         "adir: is a directory, expected a trace", ""},
        {"run small.ini --set faults.schedule=adir", 2,
         "adir: is a directory, expected a fault schedule", ""},
        {"sweep small.ini --grid algorithm.lr=", 2, "algorithm.lr", ""},
        {"sweep small.ini --grid 'workers.compute=constant(1ms,exponential(1ms)'", 2,
         "workers.compute", ""},
        {"run small.ini --set 'workload.dataset=blobs(10, 10, 1000000000)'", 2,
         "workload.dataset", ""},
        {"run small.ini --set 'workload.model=mlp(100000, 100000)'", 2, "workload.model", ""},
    };
    run_cases(cases, N(cases));
}

/* Configuration errors write no row: [faults], method keys and the crash
 * refusals are read before the run row exists. */
Test(errors, configuration_errors_write_no_row)
{
    static const bad_case cases[] = {
        {"run small.ini --set 'faults.mtbf=exponential(-1s)'", 2, "faults.mtbf", ""},
        {"run small.ini --set faults.schedule=bad.csv", 2, "bad.csv:2:5", ""},
        {"run small.ini --set faults.schedule=missing.csv", 2, "missing.csv", ""},
        {"run small.ini --set 'faults.mtbf=exponential(1s)' --set faults.downtime=banana", 2,
         "faults.downtime", ""},
        {"run small.ini --set algorithm.name=dpsgd --set 'algorithm.compressor=qsgd(16)'"
         " --set topology.graph=one_peer_exponential --set faults.schedule=crash.csv",
         2, "does not support worker crashes", ""},
        {"run small.ini --set algorithm.name=local_sgd --set algorithm.local_steps=0", 2,
         "local_steps", ""},
        {"run small.ini --set algorithm.name=gravac --set algorithm.theta_min=0.01"
         " --set algorithm.theta_max=0.1", 2, "theta", ""},
    };
    run_cases(cases, N(cases));
}

/* Every key, common and per method, with values a user may get wrong: a
 * run that fails before it starts simulating (no "s simulated" in its
 * message) leaves no row. In this process (`dtsim run`'s own function,
 * its output caught in a file), not one dtsim per value: the walk makes
 * about 450 runs. */
static int run_in_process(const char *const *args, int n)
{
    char *argv[16];
    cr_assert_lt(n, 16);
    for (int i = 0; i < n; i++)
        argv[i] = (char *)args[i];
    argv[n] = NULL;
    FILE *out = tmpfile();
    cr_assert_not_null(out);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    cr_assert(saved_out >= 0 && saved_err >= 0);
    dup2(fileno(out), 1);
    dup2(fileno(out), 2);
    int rc = cli_run_main(n, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    rewind(out);
    size_t got = fread(out_text, 1, sizeof out_text - 1, out);
    out_text[got] = '\0';
    fclose(out);
    return rc;
}

static void walk_key(const char *method, const cfg_key *k)
{
    static const char *const bad[] = {"bogus", "-1", "1e300"};
    for (size_t v = 0; v < N(bad); v++) {
        char db[64], algo[128], set[512];
        snprintf(db, sizeof db, "r%zu.db", v);
        snprintf(algo, sizeof algo, "algorithm.name=%s", method ? method : "");
        snprintf(set, sizeof set, "%s.%s=%s", k->section, k->key, bad[v]);
        const char *args[12] = {"run", "small.ini", "--quiet", "--db", db, "--set",
                                "experiment.max_time=10s"};
        int n = 7;
        if (method) {
            args[n++] = "--set";
            args[n++] = algo;
        }
        args[n++] = "--set";
        args[n++] = set;
        int rc = run_in_process(args, n);
        cr_assert(rc >= 0 && rc <= 2, "dtsim run --set %s --set %s: exit %d: %s", algo, set,
                  rc, out_text);
        const char *rows = test_run_statuses(db);
        if (rc != 0 && !strstr(out_text, " s simulated"))
            cr_assert_str_eq(rows, "", "dtsim run --set %s --set %s: exit %d, runs '%s': %s",
                             algo, set, rc, rows, out_text);
        remove(db);
    }
}

Test(errors, every_key_bad_value_writes_no_row_before_the_run, .timeout = 600)
{
    cr_assert_eq(chdir(case_dir()), 0);
    for (const cfg_key *k = cfg_keys; k->key; k++)
        walk_key(NULL, k);
    for (const algo_vt *const *vt = algo_registry; *vt; vt++)
        for (const cfg_key *k = (*vt)->keys; k && k->key; k++)
            walk_key((*vt)->name, k);
}

/* Oversized configurations are refused before anything is built, with the
 * key and the estimate (DTSIM_MAX_MEMORY stands for a small machine); the
 * machine's real limit refuses the sizes of the reliability pass. */
Test(errors, oversized_configurations_are_refused_up_front)
{
    static const bad_case real[] = {
        {"topo complete --n 65536", 2, "topo: --n 65536: graph 'complete' on 65536 nodes", ""},
        {"run small.ini --set 'workload.dataset=blobs(10, 10, 100000000000)'", 2,
         "workload.dataset: 100000000000 samples of 10 features need about", ""},
        {"run small.ini --set 'workload.model=mlp(100000, 100000)'", 2, "need about", ""},
        /* --max-memory stands for DTSIM_MAX_MEMORY */
        {"run small.ini --max-memory 64M --set 'workload.model=mlp(2000, 2000)'", 2,
         "workload.model: 4 workers (workers.count) of 4020003 parameters need about", ""},
        {"sweep small.ini --max-memory=64M --grid 'workload.model=softmax,mlp(2000, 2000)'", 2,
         "more than the 64.0 MB", ""},
    };
    run_cases(real, N(real));
    cr_assert_eq(setenv("DTSIM_MAX_MEMORY", "64M", 1), 0);
    static const bad_case small[] = {
        {"topo complete --n 4096", 2, "8386560 edges need about 383.9 MB, more than the 64.0 MB", ""},
        {"run small.ini --set 'workload.model=mlp(2000, 2000)'", 2,
         "workload.model: 4 workers (workers.count) of 4020003 parameters need about", ""},
        {"sweep small.ini --grid 'workload.model=softmax,mlp(2000, 2000)'", 2, "need about",
         ""},
        /* a data set estimated from its spec before it is drawn */
        {"run small.ini --set 'workload.dataset=blobs(10, 10, 2000000)'", 2,
         "workload.dataset: 2000000 samples of 10 features need about 83.9 MB, more than the"
         " 64.0 MB", ""},
        {"sweep small.ini --grid 'workload.dataset=blobs(3, 5, 600),blobs(3, 5, 4000000)'", 2,
         "workload.dataset: 4000000 samples of 5 features need about", ""},
        /* models and data together */
        {"run small.ini --set 'workload.dataset=blobs(10, 100, 120000)'"
         " --set 'workload.model=mlp(3000)'", 2,
         "(4 copies of each model) and the data set (workload.dataset, 46.2 MB) need about", ""},
    };
    run_cases(small, N(small));
    unsetenv("DTSIM_MAX_MEMORY");
}

/* Data files are sized before they are read or decoded: a file larger than
 * the limit is refused with its size, and a data set whose decoded samples
 * exceed it with their count, each naming [workload] dataset (exit 2, no
 * run row), instead of running out of memory while loading. */
Test(errors, oversized_data_files_are_refused_before_loading)
{
    const char *dir = case_dir();
    static char svm[1300000], text[100001];
    size_t n = 0;
    for (int i = 0; n + 32 < sizeof svm - 1; i++)
        n += (size_t)snprintf(svm + n, sizeof svm - n, "%d 1:%d 2:0.5\n", i % 2, i % 7);
    test_write_file(dir, "big.svm", svm);
    for (size_t i = 0; i < sizeof text - 1; i++)
        text[i] = (char)('a' + (i * 7) % 26);
    test_write_file(dir, "big.txt", text);
    cr_assert_eq(setenv("DTSIM_MAX_MEMORY", "1M", 1), 0);
    static const bad_case cases[] = {
        {"run small.ini --set 'workload.dataset=libsvm(big.svm)'", 2,
         "workload.dataset: ", ""},
        {"run small.ini --set 'workload.dataset=libsvm(big.svm)'", 2,
         "big.svm: its 12", ""},
        {"run small.ini --set 'workload.dataset=text(big.txt)' --set workload.model=charlm", 2,
         "dataset 'text': 99992 samples of 8 features need about 3.4 MB, more than the 1.0 MB",
         ""},
    };
    for (size_t i = 0; i < N(cases); i++) {
        char args[512];
        snprintf(args, sizeof args, "%s --db r.db --quiet", cases[i].args);
        int rc = test_dtsim(dir, args, out_text, sizeof out_text);
        cr_assert_eq(rc, cases[i].exit_code, "dtsim %s: exit %d: %s", args, rc, out_text);
        cr_assert(strstr(out_text, cases[i].needle), "dtsim %s: '%s' not in: %s", args,
                  cases[i].needle, out_text);
        char db[4200];
        snprintf(db, sizeof db, "%s/r.db", dir);
        cr_assert_str_eq(test_run_statuses(db), "", "dtsim %s left a run row", args);
    }
    cr_assert_eq(setenv("DTSIM_MAX_MEMORY", "100M", 1), 0);
    int rc = test_dtsim(dir, "run small.ini --set workload.dataset=fashion_mnist --db r.db --quiet",
                        out_text, sizeof out_text);
    /* without Debian's data files the loader names the package instead */
    if (!strstr(out_text, "dataset-fashion-mnist")) {
        cr_assert_eq(rc, 2, "exit %d: %s", rc, out_text);
        cr_assert(strstr(out_text, "dataset 'fashion_mnist': 70000 samples of 784 features need"
                                   " about 209.6 MB, more than the 100.0 MB"),
                  "%s", out_text);
    }
    unsetenv("DTSIM_MAX_MEMORY");
}
