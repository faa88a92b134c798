/* The command line as a user meets it: exit codes, messages naming
 * file:line and key, a run landing in the database, help texts. Runs the
 * built dtsim binary (DTSIM_EXE, set by meson test). */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/common.h"

static char out_text[65536];

/* Runs "dtsim ARGS" in dir; returns the exit status; stdout+stderr in out_text. */
static int dtsim(const char *dir, const char *args)
{
    const char *exe = getenv("DTSIM_EXE");
    cr_assert_not_null(exe, "DTSIM_EXE not set (run under meson test)");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", dir, exe, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out_text, 1, sizeof out_text - 1, p);
    out_text[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *small_ini = "[experiment]\n"
                               "name = small\n"
                               "max_epochs = 0\n"
                               "max_iterations = 40\n"
                               "eval_every = 10\n"
                               "[workers]\n"
                               "count = 4\n"
                               "compute = constant(1ms)\n"
                               "[algorithm]\n"
                               "name = allreduce_sgd\n"
                               "[workload]\n"
                               "model = softmax\n"
                               "dataset = blobs(3, 5, 600)\n";

static void expect_config_error(const char *ini, const char *needle1, const char *needle2)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "bad.ini", ini);
    int rc = dtsim(dir, "run bad.ini --quiet");
    cr_assert_eq(rc, 2, "exit %d, output: %s", rc, out_text);
    cr_assert(strstr(out_text, needle1), "'%s' not in: %s", needle1, out_text);
    cr_assert(strstr(out_text, needle2), "'%s' not in: %s", needle2, out_text);
    /* nothing was written */
    char db[4096];
    snprintf(db, sizeof db, "%s/results.db", dir);
    FILE *f = fopen(db, "r");
    cr_assert_null(f, "a failed config must not create a run");
}

Test(cli, unknown_key_names_file_line_and_key)
{
    expect_config_error("[experiment]\nseed = 1\n[network]\nbandwith = 10Gbps\n", "bad.ini:4",
                        "bandwith");
}

Test(cli, bad_unit_names_file_line_and_key)
{
    expect_config_error("[network]\n\nbandwidth = fast\n", "bad.ini:3", "bandwidth");
}

Test(cli, bad_distribution_names_file_line_and_key)
{
    expect_config_error("[workers]\ncount = 4\ncompute = gaussian(1ms)\n", "bad.ini:3",
                        "compute");
}

/* A value the method does not use must still be valid; a valid one the
 * user wrote gets a one-line warning; defaults never warn. */
Test(cli, unused_keys_are_checked_and_warned_about)
{
    const char *dir = test_tmpdir();
    char ini[2048];
    snprintf(ini, sizeof ini, "%s[topology]\ngraph = rnig\n", small_ini);
    test_write_file(dir, "bad.ini", ini);
    int rc = dtsim(dir, "run bad.ini --quiet --db bad.db");
    cr_assert_eq(rc, 2, "exit %d, output: %s", rc, out_text);
    cr_assert(strstr(out_text, "bad.ini:15: [topology] graph: unknown graph 'rnig' (did you "
                               "mean 'ring'?"), "%s", out_text);

    snprintf(ini, sizeof ini, "%s[topology]\ngraph = ring\n", small_ini);
    test_write_file(dir, "warn.ini", ini);
    rc = dtsim(dir, "run warn.ini --quiet --db w.db --set algorithm.beta1=0.8");
    cr_assert_eq(rc, 0, "exit %d, output: %s", rc, out_text);
    cr_assert(strstr(out_text, "dtsim: warning: warn.ini:15: [topology] graph: ignored: "
                               "allreduce_sgd uses no logical graph\n"), "%s", out_text);
    cr_assert(strstr(out_text, "dtsim: warning: --set algorithm.beta1: ignored: optimizer = "
                               "sgd"), "%s", out_text);
    /* count = 4 and compute are used; nothing else was written */
    int warnings = 0;
    for (const char *p = out_text; (p = strstr(p, "warning:")); p++)
        warnings++;
    cr_assert_eq(warnings, 2, "%s", out_text);

    test_write_file(dir, "ok.ini", small_ini);
    rc = dtsim(dir, "run ok.ini --quiet --db ok.db");
    cr_assert_eq(rc, 0, "exit %d, output: %s", rc, out_text);
    cr_assert_null(strstr(out_text, "warning"), "%s", out_text);
}

Test(cli, missing_file_is_exit_2)
{
    const char *dir = test_tmpdir();
    int rc = dtsim(dir, "run nope.ini");
    cr_assert_eq(rc, 2);
    cr_assert(strstr(out_text, "nope.ini"), "%s", out_text);
}

Test(cli, run_lands_in_the_database)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    int rc = dtsim(dir, "run small.ini --quiet --db out.db --set experiment.seed=3");
    cr_assert_eq(rc, 0, "%s", out_text);
    cr_assert(strstr(out_text, "done"), "%s", out_text);
    char path[4096];
    snprintf(path, sizeof path, "%s/out.db", dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "select status, n_workers, iterations, seed, "
                                    "(select count(*) from metrics where run_id = runs.id), "
                                    "(select count(*) from workers where run_id = runs.id), "
                                    "(select value from params where run_id = runs.id and "
                                    "key = 'experiment.seed') from runs",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "done");
    cr_assert_eq(sqlite3_column_int(st, 1), 4);
    cr_assert_eq(sqlite3_column_int(st, 2), 40);
    cr_assert_eq(sqlite3_column_int(st, 3), 3);
    cr_assert_eq(sqlite3_column_int(st, 4), 5); /* t = 0 and every 10 iterations */
    cr_assert_eq(sqlite3_column_int(st, 5), 4);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 6), "3");
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    /* star of 4 hosts: every byte a host sends crosses its uplink to the
     * switch once and one downlink; all 8 directed links carried bytes */
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "select count(*), sum(bytes), "
                                    "(select sum(bytes) from links where src < 4), "
                                    "(select sum(bytes) from links where dst < 4), "
                                    "(select bytes_sent from runs) from links",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(st, 0), 8);
    sqlite3_int64 sent = sqlite3_column_int64(st, 4);
    cr_assert_gt(sent, 0);
    cr_assert_eq(sqlite3_column_int64(st, 2), sent);
    cr_assert_eq(sqlite3_column_int64(st, 3), sent);
    cr_assert_eq(sqlite3_column_int64(st, 1), 2 * sent);
    sqlite3_finalize(st);
    /* per-worker time adds up: computing plus blocked never exceeds the run,
     * and a synchronous worker's steps are the iterations */
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "select max(w.compute_time + w.idle_time) - r.sim_time, "
                                    "min(w.steps), max(w.steps), r.iterations "
                                    "from workers w join runs r on r.id = w.run_id",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_leq(sqlite3_column_double(st, 0), 1e-9);
    cr_assert_eq(sqlite3_column_int(st, 1), sqlite3_column_int(st, 3));
    cr_assert_eq(sqlite3_column_int(st, 2), sqlite3_column_int(st, 3));
    sqlite3_finalize(st);
    /* label histogram of the iid partition: every training sample once */
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "select sum(count), count(distinct worker), "
                                    "count(distinct label) from labels",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int(st, 0), 600);
    cr_assert_eq(sqlite3_column_int(st, 1), 4);
    cr_assert_eq(sqlite3_column_int(st, 2), 3);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

Test(cli, diverged_run_is_a_result)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    int rc = dtsim(dir, "run small.ini --quiet --set workload.model=linreg "
                        "--set 'workload.dataset=synthetic_linear(5, 500)' --set algorithm.lr=1e7");
    cr_assert_eq(rc, 0, "%s", out_text);
    cr_assert(strstr(out_text, "diverged"), "%s", out_text);
}

Test(cli, unwritable_database_is_exit_2_naming_it)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    /* a directory where the database file should be: cannot be opened */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir '%s/blocked.db'", dir);
    cr_assert_eq(system(cmd), 0);
    int rc = dtsim(dir, "run small.ini --quiet --db blocked.db");
    cr_assert_eq(rc, 2, "%s", out_text);
    cr_assert(strstr(out_text, "blocked.db"), "%s", out_text);
}

Test(cli, help_and_list)
{
    const char *dir = test_tmpdir();
    cr_assert_eq(dtsim(dir, "--help"), 0);
    cr_assert(strstr(out_text, "dtsim run"));
    cr_assert_eq(dtsim(dir, "run --help"), 0);
    cr_assert(strstr(out_text, "--set"));
    cr_assert_eq(dtsim(dir, "list algorithms"), 0);
    cr_assert(strstr(out_text, "allreduce_sgd") && strstr(out_text, "asgd"), "%s", out_text);
    cr_assert_eq(dtsim(dir, "list optimizers"), 0);
    cr_assert(strstr(out_text, "adamw") && strstr(out_text, "lamb"), "%s", out_text);
    cr_assert_eq(dtsim(dir, "list"), 0);
    cr_assert(strstr(out_text, "exponential"), "%s", out_text);
    cr_assert_eq(dtsim(dir, "list presets"), 0);
    cr_assert(strstr(out_text, "layers") && strstr(out_text, "     54  224x224x3"), "%s",
              out_text);
    cr_assert_eq(dtsim(dir, "list nonsense"), 2);
    cr_assert_eq(dtsim(dir, "frobnicate"), 2);
    cr_assert_eq(dtsim(dir, "--version"), 0);
    cr_assert(strstr(out_text, "dtsim 0."));
}

Test(cli, gossip_rounds_per_worker)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    int rc = dtsim(dir, "run small.ini --quiet --db g.db --set algorithm.name=dpsgd "
                        "--set topology.graph=ring --set experiment.max_iterations=40");
    cr_assert_eq(rc, 0, "%s", out_text);
    char path[4096];
    snprintf(path, sizeof path, "%s/g.db", dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "select min(gossip_rounds), max(gossip_rounds), "
                                        "count(*) from workers",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    /* one gossip step per iteration; a worker may be one iteration ahead */
    cr_assert_geq(sqlite3_column_int(st, 0), 40);
    cr_assert_leq(sqlite3_column_int(st, 1), 41);
    cr_assert_eq(sqlite3_column_int(st, 2), 4);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

Test(cli, signal_marks_the_run_failed)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    const char *exe = getenv("DTSIM_EXE");
    cr_assert_not_null(exe);
    char db[4096];
    snprintf(db, sizeof db, "%s/sig.db", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char ini[4096];
        snprintf(ini, sizeof ini, "%s/small.ini", dir);
        execl(exe, exe, "run", ini, "--quiet", "--db", db, "--set",
              "experiment.max_iterations=100000000", (char *)NULL);
        _exit(127);
    }
    /* wait until the run row exists, then interrupt */
    sqlite3 *h = NULL;
    int seen = 0;
    for (int tries = 0; tries < 200 && !seen; tries++) {
        usleep(50000);
        if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
            sqlite3_stmt *st;
            if (sqlite3_prepare_v2(h, "select count(*) from runs", -1, &st, NULL) ==
                    SQLITE_OK &&
                sqlite3_step(st) == SQLITE_ROW)
                seen = sqlite3_column_int(st, 0) > 0;
            sqlite3_finalize(st);
        }
        sqlite3_close(h);
        h = NULL;
    }
    cr_assert(seen, "the run row never appeared");
    kill(pid, SIGTERM);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "select status, error from runs", -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "failed");
    const char *msg = (const char *)sqlite3_column_text(st, 1);
    cr_assert(msg && strstr(msg, "small.ini: allreduce_sgd: at ") &&
                  strstr(msg, "interrupted by a signal"),
              "error: %s", msg ? msg : "(null)");
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* Runs a count query on the database at path (-1 if it cannot be read). */
static int db_count(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    int n = -1;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return n;
}

/* Ctrl-C (SIGINT to the sweep's process alone) on a sweep of a quick
 * configuration and long ones: the runs in flight are marked failed, what
 * was not started is counted, a summary line is printed, exit 130; nothing
 * stays 'running', and the same sweep again skips what is done. */
static void sweep_interrupt(const char *jobs, int rows_before, int want_failed,
                            int want_not_started)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    const char *exe = getenv("DTSIM_EXE");
    cr_assert_not_null(exe);
    char db[4096], ini[4096], out[4200];
    snprintf(db, sizeof db, "%s/sweep.db", dir);
    snprintf(ini, sizeof ini, "%s/small.ini", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        FILE *f = freopen(out, "w", stdout);
        if (!f || !freopen(out, "a", stderr))
            _exit(127);
        execl(exe, exe, "sweep", ini, "--quiet", "--db", db, "--jobs", jobs, "--grid",
              "experiment.max_iterations=5,100000000,200000000,300000000", (char *)NULL);
        _exit(127);
    }
    int seen = 0;
    for (int tries = 0; tries < 600 && !seen; tries++) {
        usleep(50000);
        seen = db_count(db, "select count(*) from runs") >= rows_before &&
               db_count(db, "select count(*) from runs where status = 'done'") >= 1;
    }
    cr_assert(seen, "the runs never appeared");
    usleep(200000);
    kill(pid, SIGINT);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    FILE *f = fopen(out, "r");
    cr_assert_not_null(f);
    size_t n = fread(out_text, 1, sizeof out_text - 1, f);
    out_text[n] = '\0';
    fclose(f);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d: %s", status,
              out_text);
    char want[256];
    snprintf(want, sizeof want, "sweep interrupted: 4 configurations: 1 run, 0 already done, "
             "%d failed", want_failed);
    cr_assert(strstr(out_text, want), "'%s' not in: %s", want, out_text);
    if (want_not_started > 0) {
        snprintf(want, sizeof want, ", %d not started", want_not_started);
        cr_assert(strstr(out_text, want), "'%s' not in: %s", want, out_text);
    }
    cr_assert(strstr(out_text, "run the same command again to resume"), "%s", out_text);
    cr_assert_eq(db_count(db, "select count(*) from runs where status = 'running'"), 0);
    cr_assert_eq(db_count(db, "select count(*) from runs where status = 'failed'"
                              " and error like '%interrupted by a signal%'"), want_failed);
    /* the same sweep again resumes: the quick configuration is not redone */
    char args[8400];
    snprintf(args, sizeof args, "sweep small.ini --quiet --db sweep.db --jobs %s --grid "
             "experiment.max_iterations=5", jobs);
    int rc = dtsim(dir, args);
    cr_assert_eq(rc, 0, "%s", out_text);
    cr_assert(strstr(out_text, "1 configurations: 0 run, 1 already done, 0 failed"), "%s",
              out_text);
}

Test(cli, ctrl_c_on_a_sweep, .timeout = 120)
{
    sweep_interrupt("1", 2, 1, 2);
}

Test(cli, ctrl_c_on_a_sweep_with_two_jobs, .timeout = 120)
{
    sweep_interrupt("2", 3, 2, 1);
}

/* Counts the runs in dir/name (0 when the file does not exist). */
static int count_runs(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    fclose(f);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "select count(*) from runs", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

Test(cli, disconnected_network_file_is_exit_2_naming_file_and_hosts)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "islands.ini",
                    "[experiment]\nmax_epochs = 0\nmax_iterations = 20\n"
                    "[workers]\ncount = 4\ncompute = constant(1ms)\n"
                    "[network]\ntopology = file(net.txt)\n"
                    "[algorithm]\nname = dpsgd\n"
                    "[workload]\nmodel = softmax\ndataset = blobs(3, 5, 600)\n");
    test_write_file(dir, "net.txt", "0 1\n2 3\n");
    int rc = dtsim(dir, "run islands.ini --quiet");
    cr_assert_eq(rc, 2, "exit %d: %s", rc, out_text);
    cr_assert(strstr(out_text, "islands.ini:8: [network] topology: "), "%s", out_text);
    cr_assert(strstr(out_text, "net.txt: host 0 and host 2 are not connected"), "%s", out_text);
    cr_assert_eq(count_runs(dir, "results.db"), 0, "no run may be recorded");
    /* the same islands are fine for 2 workers, which use hosts 0 and 1 only */
    rc = dtsim(dir, "run islands.ini --quiet --set workers.count=2");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out_text);
    cr_assert(strstr(out_text, "run 1 done"), "%s", out_text);
}

Test(cli, sweep_checks_every_config_before_running)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    /* torus(2, 2) has 4 hosts: the 5-worker configs cannot be built, so
     * nothing may run, not even the valid ones */
    int rc = dtsim(dir, "sweep small.ini --quiet --db s.db --grid 'network.topology=torus(2,2),ring' "
                        "--grid workers.count=4,5");
    cr_assert_eq(rc, 2, "%s", out_text);
    cr_assert(strstr(out_text, "torus(2, 2)") && strstr(out_text, "fewer than the 5"), "%s",
              out_text);
    char path[4096];
    snprintf(path, sizeof path, "%s/s.db", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        sqlite3 *db;
        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        sqlite3_stmt *st;
        cr_assert_eq(sqlite3_prepare_v2(db, "select count(*) from runs", -1, &st, NULL),
                     SQLITE_OK);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(st, 0), 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
}

/* ---- every option a parser accepts is in the help texts ------------------ */

#define MAX_OPTS 32

/* Collects the string literals that are whole option names ("-o", "--logx")
 * in src, the source of one command (cli/NAME.c); returns their count. */
static int parser_options(const char *src, char opts[][32])
{
    int n = 0;
    for (const char *q = strchr(src, '"'); q; q = strchr(q, '"')) {
        const char *close = strchr(q + 1, '"');
        cr_assert_not_null(close);
        size_t len = (size_t)(close - q - 1);
        const char *s = q + 1;
        size_t dashes = len > 1 && s[1] == '-' ? 2 : 1;
        int is_opt = s[0] == '-' && len > dashes && len < 32 && s[dashes] >= 'a' &&
                     s[dashes] <= 'z';
        for (size_t i = dashes; is_opt && i < len; i++)
            is_opt = (s[i] >= 'a' && s[i] <= 'z') || s[i] == '-';
        int seen = 0;
        for (int i = 0; is_opt && i < n; i++)
            seen |= strlen(opts[i]) == len && strncmp(opts[i], s, len) == 0;
        if (is_opt && !seen) {
            cr_assert_lt(n, MAX_OPTS);
            memcpy(opts[n], s, len);
            opts[n++][len] = '\0';
        }
        q = close + 1;
    }
    return n;
}

/* opt appears in text as a whole word (not as a prefix of --runs). */
static int mentions(const char *text, const char *opt)
{
    size_t len = strlen(opt);
    for (const char *p = strstr(text, opt); p; p = strstr(p + 1, opt)) {
        char before = p == text ? ' ' : p[-1], after = p[len];
        int word = (after < 'a' || after > 'z') && after != '-' && before != '-' &&
                   (before < 'a' || before > 'z');
        if (word)
            return 1;
    }
    return 0;
}

static int has_opt(char opts[][32], int n, const char *opt)
{
    for (int i = 0; i < n; i++)
        if (strcmp(opts[i], opt) == 0)
            return 1;
    return 0;
}

Test(cli, help_lists_every_option_the_parsers_accept)
{
    const char *dir = test_tmpdir();
    static char main_help[sizeof out_text];
    cr_assert_eq(dtsim(dir, "--help"), 0);
    memcpy(main_help, out_text, sizeof main_help);

    /* options that are only aliases, named in the command's own help */
    static const char *const aliases[] = {"-q", "--output"};
    static const char *const cmds[] = {"run", "sweep", "report", "plot", "topo"};
    char opts[5][MAX_OPTS][32];
    int n[5];
    for (int c = 0; c < 5; c++) {
        char path[64];
        snprintf(path, sizeof path, "cli/%s.c", cmds[c]);
        FILE *f = fopen(test_source_path(path), "r");
        cr_assert_not_null(f, "cannot read %s", path);
        static char src[1 << 20];
        size_t len = fread(src, 1, sizeof src - 1, f);
        fclose(f);
        src[len] = '\0';
        n[c] = parser_options(src, opts[c]);
        char args[128];
        snprintf(args, sizeof args, "%s --help", cmds[c]);
        cr_assert_eq(dtsim(dir, args), 0, "dtsim %s", args);
        for (int i = 0; i < n[c]; i++) {
            cr_expect(mentions(out_text, opts[c][i]), "`dtsim %s --help` does not list %s",
                      cmds[c], opts[c][i]);
            int alias = 0;
            for (size_t k = 0; k < sizeof aliases / sizeof aliases[0]; k++)
                alias |= strcmp(opts[c][i], aliases[k]) == 0;
            cr_expect(alias || mentions(main_help, opts[c][i]),
                      "`dtsim --help` does not list %s %s", cmds[c], opts[c][i]);
        }
        /* each collected name is an option the parser knows, not stray text */
        for (int i = 0; i < n[c]; i++) {
            snprintf(args, sizeof args, "%s %.31s", cmds[c], opts[c][i]);
            dtsim(dir, args);
            cr_expect(!strstr(out_text, "unknown option"), "dtsim %s: %s", args, out_text);
        }
    }
    /* the scan finds what the parsers are known to accept */
    cr_assert(has_opt(opts[0], n[0], "--set") && has_opt(opts[0], n[0], "--db") &&
              has_opt(opts[0], n[0], "--quiet") && has_opt(opts[0], n[0], "-q"));
    cr_assert(has_opt(opts[1], n[1], "--grid") && has_opt(opts[1], n[1], "--shard-dir") &&
              has_opt(opts[1], n[1], "--quiet") && has_opt(opts[1], n[1], "--jobs"));
    cr_assert(has_opt(opts[2], n[2], "--aggregate") && has_opt(opts[2], n[2], "--csv") &&
              has_opt(opts[2], n[2], "--target") && has_opt(opts[2], n[2], "--baseline"));
    cr_assert(has_opt(opts[3], n[3], "--logx") && has_opt(opts[3], n[3], "--logy") &&
              has_opt(opts[3], n[3], "--title") && has_opt(opts[3], n[3], "--size") &&
              has_opt(opts[3], n[3], "-o") && has_opt(opts[3], n[3], "--output"));
    cr_assert(has_opt(opts[4], n[4], "--n") && has_opt(opts[4], n[4], "--export"));
    cr_assert(!has_opt(opts[3], n[3], "--frobnicate"));
    cr_assert(mentions("a --runs b", "--runs") && !mentions("a --runs b", "--run"));
}

Test(cli, report_scaling)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    int rc = dtsim(dir, "sweep small.ini --grid workers.count=1,2,4 --db s.db --quiet");
    cr_assert_eq(rc, 0, "%s", out_text);
    cr_assert_eq(dtsim(dir, "report s.db --scaling --csv"), 0, "%s", out_text);
    /* one group; the base is n = 1 (32 samples per 1 ms step), whose factor is 1 */
    cr_assert(strstr(out_text, "group,id,name,algorithm,n_workers,throughput,ref_workers,"
                               "scaling_factor\n1,1,"), "%s", out_text);
    cr_assert(strstr(out_text, "1,1,small,allreduce_sgd,1,32000,1,1\n") && strstr(out_text, "\n1,3,") &&
              !strstr(out_text, "\n2,"), "%s", out_text);
    cr_assert_eq(dtsim(dir, "report s.db --scaling --aggregate"), 2, "%s", out_text);
    cr_assert(strstr(out_text, "--scaling"), "%s", out_text);
}

/* Ctrl-C is honoured between events, not only between iterations: a run
 * whose single iteration is a million gossip steps of 64 workers (about
 * 10^8 events, minutes of work) stops within a few seconds of SIGINT, exit
 * status 1, its row failed at iteration 0. */
Test(cli, signal_between_events_of_one_long_iteration, .timeout = 120)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "long.ini",
                    "[experiment]\nname = long\nmax_epochs = 0\nmax_iterations = 1\n"
                    "[workers]\ncount = 64\ncompute = constant(1ms)\n"
                    "[topology]\ngraph = ring\n"
                    "[algorithm]\nname = dpsgd\nbatch = 4\ngossip_steps = 1000000\n"
                    "[workload]\nmodel = softmax\ndataset = blobs(3, 5, 600)\n");
    const char *exe = getenv("DTSIM_EXE");
    cr_assert_not_null(exe);
    char db[4096], ini[4096];
    snprintf(db, sizeof db, "%s/long.db", dir);
    snprintf(ini, sizeof ini, "%s/long.ini", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        execl(exe, exe, "run", ini, "--quiet", "--db", db, (char *)NULL);
        _exit(127);
    }
    sqlite3 *h = NULL;
    int seen = 0;
    for (int tries = 0; tries < 400 && !seen; tries++) {
        usleep(50000);
        if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
            sqlite3_stmt *st;
            if (sqlite3_prepare_v2(h, "select count(*) from runs", -1, &st, NULL) ==
                    SQLITE_OK &&
                sqlite3_step(st) == SQLITE_ROW)
                seen = sqlite3_column_int(st, 0) > 0;
            sqlite3_finalize(st);
        }
        sqlite3_close(h);
        h = NULL;
    }
    cr_assert(seen, "the run row never appeared");
    usleep(500000); /* well inside the first iteration */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill(pid, SIGINT);
    int status = 0;
    pid_t got = 0;
    double waited = 0;
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 && waited < 20) {
        usleep(20000);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        waited = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    }
    if (got == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        cr_assert_fail("still running %.1f s after SIGINT", waited);
    }
    cr_assert_lt(waited, 5.0, "exited %.1f s after SIGINT", waited);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(h, "select status, error, iterations from runs", -1, &st,
                                    NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "failed");
    const char *msg = (const char *)sqlite3_column_text(st, 1);
    cr_assert(msg && strstr(msg, "iteration 0") && strstr(msg, "interrupted by a signal"),
              "error: %s", msg ? msg : "(null)");
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* One BLAS kernel everywhere (workloads/blas.h): a chaotic run (Top-k with
 * error feedback and momentum on an mlp) gives identical rows whatever
 * kernel OPENBLAS_CORETYPE asks for, and every run records the kernel. */
static const char *chaotic_ini = "[experiment]\nname = chaotic\nmax_epochs = 0\n"
                                 "max_iterations = 60\neval_every = 20\n"
                                 "[workers]\ncount = 4\ncompute = constant(1ms)\n"
                                 "[algorithm]\nname = allreduce_sgd\nlr = 0.5\nmomentum = 0.9\n"
                                 "batch = 32\ncompressor = topk(0.05)\nerror_feedback = true\n"
                                 "[workload]\nmodel = mlp(32)\ndataset = blobs(10, 40, 2000)\n";

/* Runs chaotic.ini with OPENBLAS_CORETYPE = core and DTSIM_BLAS = blas
 * (NULL: unset); its metric rows and runs.blas into rows and blas_text. */
static void chaotic_rows(const char *dir, const char *core, const char *blas, char *rows,
                         size_t len, char *blas_text, size_t blas_len)
{
    char db[4096];
    snprintf(db, sizeof db, "%s/results.db", dir);
    remove(db);
    setenv("OPENBLAS_CORETYPE", core, 1);
    if (blas)
        setenv("DTSIM_BLAS", blas, 1);
    int rc = dtsim(dir, "run chaotic.ini --quiet");
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("DTSIM_BLAS");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out_text);
    test_sql_text(db,
                  "SELECT group_concat(printf('%.17g %.17g', train_loss, test_accuracy), ',')"
                  " FROM metrics",
                  rows, len);
    test_sql_text(db, "SELECT blas FROM runs", blas_text, blas_len);
}

/* Skips the test on a CPU where dtsim pins no kernel. */
static void skip_without_avx2(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        cr_skip_test("this CPU has no AVX2: dtsim keeps OpenBLAS's own kernel");
#else
    cr_skip_test("the pinned kernel is x86-64's");
#endif
}

Test(cli, blas_kernel_is_pinned_and_recorded)
{
    skip_without_avx2();
    const char *dir = test_tmpdir();
    test_write_file(dir, "chaotic.ini", chaotic_ini);
    static char a[8192], b[8192], native[8192];
    char blas_a[256], blas_b[256], blas_n[256];
    chaotic_rows(dir, "Sandybridge", NULL, a, sizeof a, blas_a, sizeof blas_a);
    chaotic_rows(dir, "Haswell", NULL, b, sizeof b, blas_b, sizeof blas_b);
    cr_assert_str_eq(a, b, "rows differ between kernels");
    cr_assert(strstr(blas_a, "Haswell (pinned)"), "runs.blas = '%s'", blas_a);
    cr_assert(strstr(blas_a, "OpenBLAS "), "runs.blas = '%s'", blas_a);
    /* the opt-out is honoured and recorded */
    chaotic_rows(dir, "Sandybridge", "native", native, sizeof native, blas_n, sizeof blas_n);
    cr_assert(strstr(blas_n, "Sandybridge (native: DTSIM_BLAS=native)"), "runs.blas = '%s'",
              blas_n);
    /* the case is chaotic enough to tell kernels apart (else the test above
     * proves nothing on this machine) */
    if (strcmp(native, a) == 0)
        cr_log_warn("the Sandybridge and Haswell kernels gave the same rows here");
}

/* How many times OpenBLAS loaded running "dtsim ARGS" in dir (OpenBLAS
 * built with DYNAMIC_ARCH prints "Core: NAME" as it loads under
 * OPENBLAS_VERBOSE=2), starting without a kernel asked for. */
static int blas_loads(const char *dir, const char *args)
{
    setenv("OPENBLAS_VERBOSE", "2", 1);
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("DTSIM_BLAS");
    dtsim(dir, args);
    unsetenv("OPENBLAS_VERBOSE");
    int n = 0;
    for (const char *c = out_text; (c = strstr(c, "Core: ")) != NULL; c++)
        n++;
    return n;
}

/* dtsim re-executes itself with the pinned kernel (so OpenBLAS loads
 * twice) for the commands whose results go through the BLAS, and only
 * for them: not for the help, list, report, estimate (time model only). */
Test(cli, only_commands_that_compute_pin_the_kernel)
{
    skip_without_avx2();
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    const int once = blas_loads(dir, "list models");
    if (once == 0)
        cr_skip_test("this OpenBLAS does not say when it loads (no DYNAMIC_ARCH)");
    cr_expect_eq(once, 1, "list: %s", out_text);
    static const char *const plain[] = {"--help", "run --help", "sweep -h", "list",
                                        "estimate small.ini", "report missing.db",
                                        "trace missing.db --run 1 -o t.json"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        cr_expect_eq(blas_loads(dir, plain[i]), 1, "dtsim %s: %s", plain[i], out_text);
    static const char *const pinned[] = {"run small.ini --quiet --db r.db", "topo ring --n 8"};
    for (size_t i = 0; i < sizeof pinned / sizeof *pinned; i++)
        cr_expect_eq(blas_loads(dir, pinned[i]), 2, "dtsim %s: %s", pinned[i], out_text);
}

Test(cli, provenance_is_recorded)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    int rc = dtsim(dir, "run small.ini --quiet --threads 2");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out_text);
    char db[4096], text[512];
    snprintf(db, sizeof db, "%s/results.db", dir);
    cr_assert_eq(test_sql_int(db, "SELECT threads FROM runs"), 2);
    test_sql_text(db, "SELECT cpu FROM runs", text, sizeof text);
    cr_assert(text[0] != '\0');
    test_sql_text(db, "SELECT commit_id FROM runs", text, sizeof text);
    cr_assert(text[0] != '\0');
    test_sql_text(db, "SELECT version FROM runs", text, sizeof text);
    cr_assert_str_eq(text, DTSIM_VERSION);
}

/* estimate warns, naming the method and why, when its time follows the
 * data (algo_vt.data_time), after the table and with exit 0; not else. */
Test(cli, estimate_warns_where_time_depends_on_the_data)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    int rc = dtsim(dir, "estimate small.ini --iterations 4 --set algorithm.name=gravac");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out_text);
    cr_assert(strstr(out_text, "dtsim: warning: gravac: its keep fraction"), "%s", out_text);
    cr_assert(strstr(out_text, "this estimate may be off"), "%s", out_text);
    rc = dtsim(dir, "estimate small.ini --iterations 4");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out_text);
    cr_assert_null(strstr(out_text, "warning"), "%s", out_text);
}

/* A timeline cut at trace_max_events is said by run and by sweep alike,
 * with the run and the number of rows not recorded. */
Test(cli, truncated_timeline_is_warned_by_run_and_sweep)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    const char *needle = "trace_max_events; ";
    int rc = dtsim(dir, "run small.ini --quiet --set experiment.trace=on"
                        " --set experiment.trace_max_events=5");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out_text);
    cr_assert(strstr(out_text, "dtsim: warning: run 1: the timeline reached"), "%s", out_text);
    cr_assert(strstr(out_text, needle), "%s", out_text);
    rc = dtsim(dir, "sweep small.ini --quiet --jobs 2 --set experiment.trace=on"
                    " --set experiment.trace_max_events=5 --grid workers.count=2,3");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out_text);
    int n = 0;
    for (const char *p = out_text; (p = strstr(p, needle)); p++)
        n++;
    cr_assert_eq(n, 2, "%d warnings in: %s", n, out_text);
    rc = dtsim(dir, "run small.ini --quiet --set experiment.trace=on");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out_text);
    cr_assert_null(strstr(out_text, needle), "%s", out_text);
}

/* ASGD with 16 workers and a 10x straggler: the straggler's updates are
 * about 150 versions stale, past the staleness histogram's last bin
 * (4n + 63 = 127); staleness_workers keeps every value, with the same
 * updates, and report --staleness gives its quantiles. */
Test(cli, staleness_distribution_has_no_cap)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    int rc = dtsim(dir, "run small.ini --quiet --db s.db --set algorithm.name=asgd "
                        "--set workers.count=16 --set workers.stragglers=1 "
                        "--set workers.straggler_slowdown=10 "
                        "--set experiment.max_iterations=1600");
    cr_assert_eq(rc, 0, "%s", out_text);
    char path[4096];
    snprintf(path, sizeof path, "%s/s.db", dir);
    cr_assert_eq(db_count(path, "SELECT max(staleness) FROM staleness"), 127);
    cr_assert_gt(db_count(path, "SELECT max(staleness) FROM staleness_workers"
                                " WHERE worker = 0"), 127);
    cr_assert_lt(db_count(path, "SELECT max(staleness) FROM staleness_workers"
                                " WHERE worker = 1"), 127);
    cr_assert_eq(db_count(path, "SELECT sum(count) FROM staleness_workers"),
                 db_count(path, "SELECT sum(count) FROM staleness"));
    cr_assert_eq(db_count(path, "SELECT sum(count) FROM staleness_workers"
                                " WHERE staleness < 127"),
                 db_count(path, "SELECT sum(count) FROM staleness WHERE staleness < 127"));
    cr_assert_eq(db_count(path, "SELECT count(DISTINCT worker) FROM staleness_workers"), 16);

    cr_assert_eq(dtsim(dir, "report s.db --staleness"), 0, "%s", out_text);
    cr_assert(strstr(out_text, "   id worker  updates     mean median   p90   p99   max\n"),
              "%s", out_text);
    int worker = -1;
    long long updates = 0, median = 0, p90 = 0, p99 = 0, max = 0;
    double mean = 0;
    const char *line = strchr(out_text, '\n') + 1;
    cr_assert_eq(sscanf(line, "%*d %d %lld %lf %lld %lld %lld %lld", &worker, &updates, &mean,
                        &median, &p90, &p99, &max), 7, "%s", out_text);
    cr_assert_eq(worker, 0);
    cr_assert_eq(max, db_count(path, "SELECT max(staleness) FROM staleness_workers"
                                     " WHERE worker = 0"));
    cr_assert_gt(median, 127, "%s", out_text);
    cr_assert(median <= p90 && p90 <= p99 && p99 <= max, "%s", out_text);
    cr_assert_eq(dtsim(dir, "report s.db --staleness --aggregate"), 2, "%s", out_text);
}

/* A method comparison end to end: one sweep of three methods with a key
 * scoped to one of them, 2 bandwidths and 3 seeds; the aggregated report
 * tells the six groups apart by bandwidth and method, and --compare gives
 * the methods' difference at each bandwidth. */
Test(cli, method_comparison_sweep_and_report)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    int rc = dtsim(dir, "sweep small.ini --quiet --db c.db "
                        "--grid network.bandwidth=1Gbps,10Gbps "
                        "--grid algorithm.name=allreduce_sgd,local_sgd,dpsgd "
                        "--set local_sgd:algorithm.local_steps=8 --set topology.graph=ring "
                        "--seeds 1-3");
    cr_assert_eq(rc, 0, "%s", out_text);
    char path[4096];
    snprintf(path, sizeof path, "%s/c.db", dir);
    cr_assert_eq(db_count(path, "SELECT count(*) FROM runs WHERE status = 'done'"), 18);
    cr_assert_eq(db_count(path, "SELECT count(*) FROM params WHERE key ="
                                " 'algorithm.local_steps' AND value = '8'"), 6);
    cr_assert_eq(db_count(path, "SELECT count(*) FROM params WHERE key ="
                                " 'algorithm.local_steps'"), 6);

    cr_assert_eq(dtsim(dir, "report c.db --aggregate"), 0, "%s", out_text);
    /* the bandwidth tells the groups apart; a method's own keys, the same
     * in all its runs, do not add columns; the seed is aggregated over */
    cr_assert(strstr(out_text, "algorithm      bandwidth  n "), "%s", out_text);
    cr_assert_null(strstr(out_text, "local_steps"), "%s", out_text);
    cr_assert_null(strstr(out_text, "seed "), "%s", out_text);
    int lines = 0;
    for (const char *p = out_text; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 1 + 6 + 1, "%s", out_text);
    cr_assert(strstr(out_text, "local_sgd      1Gbps      4"), "%s", out_text);

    rc = dtsim(dir, "report c.db --aggregate --csv --compare "
                    "algorithm.name=allreduce_sgd,local_sgd");
    cr_assert_eq(rc, 0, "%s", out_text);
    int pairs = 0;
    for (const char *p = out_text; (p = strstr(p, "\nalgorithm.name,allreduce_sgd,local_sgd,"))
                                   != NULL; p++)
        pairs++;
    /* 2 bandwidths x the statistics both groups have */
    cr_assert_geq(pairs, 2 * 3, "%s", out_text);
    cr_assert(strstr(out_text, ",final_test_accuracy,3,3,"), "%s", out_text);
    cr_assert_eq(dtsim(dir, "report c.db --compare algorithm.name=a,b"), 2, "%s", out_text);
}

/* A sweep's warnings name the grid points they concern: over three methods
 * with a logical graph set, "uses no logical graph" is said of
 * allreduce_sgd's point and local_sgd's, never as if of the sweep; a key
 * scoped to local_sgd labels local_sgd's runs only. */
Test(cli, sweep_warnings_name_their_grid_points)
{
    const char *dir = test_tmpdir();
    char ini[2048];
    snprintf(ini, sizeof ini, "%s[topology]\ngraph = ring\n", small_ini);
    test_write_file(dir, "g.ini", ini);
    int rc = dtsim(dir, "sweep g.ini --quiet --db g.db "
                        "--grid algorithm.name=allreduce_sgd,local_sgd,dpsgd "
                        "--grid local_sgd:algorithm.local_steps=2,4");
    cr_assert_eq(rc, 0, "%s", out_text);
    cr_assert(strstr(out_text, "g.ini:15: [topology] graph: ignored: allreduce_sgd uses no "
                               "logical graph (grid points with algorithm.name=allreduce_sgd: "
                               "1 of 4 grid points)\n"), "%s", out_text);
    cr_assert(strstr(out_text, "g.ini:15: [topology] graph: ignored: local_sgd uses no "
                               "logical graph (grid points with algorithm.name=local_sgd: "
                               "2 of 4 grid points)\n"), "%s", out_text);
    cr_assert_null(strstr(out_text, "logical graph\n"), "a warning as if of the sweep: %s",
                   out_text);
    cr_assert(strstr(out_text, ": algorithm.name=allreduce_sgd: train loss"), "%s", out_text);
    cr_assert(strstr(out_text, ": algorithm.name=dpsgd: train loss"), "%s", out_text);
    cr_assert(strstr(out_text, ": algorithm.name=local_sgd local_sgd:algorithm.local_steps=4: "
                               "train loss"), "%s", out_text);
    cr_assert_null(strstr(out_text, "dpsgd local_sgd:"), "%s", out_text);
    /* a warning that concerns every point reads as run's */
    rc = dtsim(dir, "sweep g.ini --quiet --db h.db --grid network.bandwidth=1Gbps,10Gbps");
    cr_assert_eq(rc, 0, "%s", out_text);
    cr_assert(strstr(out_text, "warning: g.ini:15: [topology] graph: ignored: allreduce_sgd "
                               "uses no logical graph\n"), "%s", out_text);
}

/* experiments/tour.sh replays the README's tour into a scratch folder: its
 * database and both figures land in OUT, and the tracked figures in docs/
 * are left alone (rewritten only with FIGURES=docs). */
Test(cli, tour_writes_its_figures_to_its_folder_not_docs, .timeout = 300)
{
    const char *src = getenv("DTSIM_SOURCE_ROOT"), *exe = getenv("DTSIM_EXE");
    cr_assert(src && exe, "run under meson test");
    char docs[2][4200];
    struct stat before[2], after;
    for (int i = 0; i < 2; i++) {
        snprintf(docs[i], sizeof docs[i], "%s/docs/%s", src, i ? "tour_timeline.png" : "tour.png");
        cr_assert_eq(stat(docs[i], &before[i]), 0, "%s", docs[i]);
    }
    const char *dir = test_tmpdir();
    char cmd[12800];
    snprintf(cmd, sizeof cmd, "DTSIM='%s' '%s/experiments/tour.sh' '%s/out' >'%s/tour.log' 2>&1",
             exe, src, dir, dir);
    cr_assert_eq(system(cmd), 0, "tour.sh failed: see %s/tour.log", dir);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(stat(docs[i], &after), 0);
        cr_assert(after.st_mtime == before[i].st_mtime && after.st_size == before[i].st_size,
                  "%s was rewritten", docs[i]);
        char made[4400];
        snprintf(made, sizeof made, "%s/out/%s", dir, i ? "tour_timeline.png" : "tour.png");
        cr_assert_eq(stat(made, &after), 0, "%s missing", made);
        cr_assert_gt(after.st_size, 1000);
    }
}
