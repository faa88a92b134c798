/* Memory limits and signals (issue 35 item 9): under an address-space
 * limit (prlimit --as, ulimit -v) a run either completes or is refused up
 * front with exit 2, within seconds, never leaving a running row (OpenBLAS
 * retries a buffer it cannot map for ever, so the refusal must come before
 * the first BLAS call); SIGTERM ends a run promptly with its row failed.
 * Sizes below about 120 MB fail in the dynamic loader or in OpenBLAS's
 * constructor, before dtsim's code runs, and are not tested. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/common.h"

static const char ini[] = "[experiment]\nseed = 1\nmax_iterations = 40\neval_every = 10\n"
                          "[workers]\ncount = 4\n[algorithm]\nname = allreduce_sgd\nlr = 0.1\n"
                          "batch = 32\n[workload]\nmodel = mlp(32)\ndataset = blobs(4, 16, 2000)\n";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* dtsim run under an address-space limit of mb MB (a fresh database);
 * the exit status (-1 killed by the 60 s guard), its time in *secs. */
static int run_limited(const char *dir, int mb, const char *db, double *secs, char *out,
                       size_t len)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && rm -f '%s' && (ulimit -v %d; exec timeout -s KILL 60 '%s' run e.ini "
             "--db '%s' --threads 1 --quiet) 2>&1",
             dir, db, mb * 1000, getenv("DTSIM_EXE"), db);
    double t0 = now();
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    *secs = now() - t0;
    return WIFEXITED(st) && WEXITSTATUS(st) != 137 ? WEXITSTATUS(st) : -1;
}

/* Built with AddressSanitizer (the ASan stage of ./dev.sh test), dtsim
 * reserves terabytes of shadow memory at start, which no address-space
 * limit admits: the test speaks of the plain build only. */
#if defined(__SANITIZE_ADDRESS__)
#define BUILT_WITH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BUILT_WITH_ASAN 1
#endif
#endif

Test(limits, any_address_space_limit_ends_the_run_with_exit_2_or_completes)
{
#ifdef BUILT_WITH_ASAN
    cr_skip_test("dtsim is built with AddressSanitizer, whose shadow memory no "
                 "address-space limit admits; the plain build runs this test");
#endif
    const char *dir = test_tmpdir();
    test_write_file(dir, "e.ini", ini);
    char out[4096], db[1100];
    snprintf(db, sizeof db, "%s/r.db", dir);
    double secs;
    /* the smallest limit that completes, to 8 MB, by bisection: every
     * attempt on the way must end within seconds with 0 or 2 */
    int lo = 120, hi = 4000;
    while (hi - lo > 8) {
        int mid = (lo + hi) / 2;
        int rc = run_limited(dir, mid, db, &secs, out, sizeof out);
        cr_assert(rc == 0 || rc == 2, "--as %d MB: exit %d after %.1f s: %s", mid, rc, secs,
                  out);
        cr_assert_lt(secs, 20, "--as %d MB: %.1f s", mid, secs);
        cr_assert_str_eq(test_run_statuses(db), rc == 0 ? "done" : "", "--as %d MB: %s", mid,
                         out);
        if (rc == 0)
            hi = mid;
        else
            lo = mid;
    }
    cr_assert_lt(hi, 4000, "no limit up to 4 GB lets the run complete");
    int sizes[] = {120, 160, 200, hi / 2, hi - 40, hi - 9};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i] < 120)
            continue;
        int rc = run_limited(dir, sizes[i], db, &secs, out, sizeof out);
        cr_assert_eq(rc, 2, "--as %d MB: exit %d: %s", sizes[i], rc, out);
        cr_assert_lt(secs, 20);
        cr_assert_str_eq(test_run_statuses(db), "");
        cr_assert(strstr(out, "address") || strstr(out, "out of memory") ||
                      strstr(out, "memory"), "%s", out);
    }
    cr_assert_eq(run_limited(dir, hi, db, &secs, out, sizeof out), 0, "%s", out);
}

Test(limits, sigterm_ends_a_run_promptly_with_its_row_failed)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "e.ini", ini);
    char db[1100];
    snprintf(db, sizeof db, "%s/r.db", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (chdir(dir) != 0)
            _exit(99);
        execl(getenv("DTSIM_EXE"), "dtsim", "run", "e.ini", "--db", db, "--quiet",
              "--set", "experiment.max_iterations=100000000", (char *)NULL);
        _exit(98);
    }
    sleep(2);
    cr_assert_str_eq(test_run_statuses(db), "running");
    double t0 = now();
    kill(pid, SIGTERM);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert_lt(now() - t0, 5);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d", st);
    cr_assert_str_eq(test_run_statuses(db), "failed");
}

/* A full disk, as a file-size limit (ulimit -f 300: 150 KB in 512-byte
 * blocks, as sh counts them; the database starts at 100 KB) makes it: the run exits 2
 * and its row is failed, not running (the buffered rows that do not fit
 * are dropped so the status can be written). */
Test(limits, a_full_disk_fails_the_run_with_exit_2_and_no_running_row)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "e.ini", ini);
    char out[4096], cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' run e.ini --db r.db --quiet >/dev/null && (ulimit -f 300; exec "
             "'%s' run e.ini --db r.db --quiet --set experiment.max_iterations=4000 --set "
             "experiment.eval_every=1) 2>&1",
             dir, getenv("DTSIM_EXE"), getenv("DTSIM_EXE"));
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d: %s", st, out);
    char db[1100];
    snprintf(db, sizeof db, "%s/r.db", dir);
    const char *got = test_run_statuses(db);
    cr_assert_str_eq(got, "done,failed", "%s: %s", got, out);
}
