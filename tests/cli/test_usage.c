/* The command line's help texts and usage errors, byte for byte: every case
 * of tests/cli/expected/cases runs the built dtsim (DTSIM_EXE) in an empty
 * folder and compares its exit status, standard output and standard error
 * with NAME.out and NAME.err, captured from the dtsim before cli/ was split
 * into one file per command (but the cases marked as added with the shared
 * parser; expected/capture.sh writes them). One test per command: the cases
 * whose name starts with it. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/common.h"

#define MAX_ARGS 32

/* The whole file at path in a malloc'ed string (NULL if unreadable). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap)
            s = realloc(s, cap *= 2);
    }
    fclose(f);
    if (s)
        s[n] = '\0';
    return s;
}

/* Runs dtsim with the space-separated args in dir, its output streams in
 * dir/out and dir/err; returns the exit status. */
static int run_dtsim(const char *dir, char *args)
{
    const char *exe = getenv("DTSIM_EXE");
    cr_assert_not_null(exe, "DTSIM_EXE not set (run under meson test)");
    char *argv[MAX_ARGS + 2] = {(char *)exe};
    int argc = 1;
    for (char *t = strtok(args, " "); t; t = strtok(NULL, " ")) {
        cr_assert_lt(argc, MAX_ARGS);
        argv[argc++] = t;
    }
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/out", dir);
        int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        snprintf(path, sizeof path, "%s/err", dir);
        int err = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || err < 0 || chdir(dir) != 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(127);
        execv(exe, argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect_stream(const char *name, const char *dir, const char *stream)
{
    char path[4096];
    snprintf(path, sizeof path, "tests/cli/expected/%s.%s", name, stream);
    char *want = slurp(test_source_path(path));
    cr_assert_not_null(want, "cannot read %s", path);
    snprintf(path, sizeof path, "%s/%s", dir, stream);
    char *got = slurp(path);
    cr_assert_not_null(got);
    cr_expect_str_eq(got, want, "%s: standard %s differs:\n--- got\n%s--- expected\n%s", name,
                     strcmp(stream, "out") == 0 ? "output" : "error", got, want);
    free(want);
    free(got);
}

/* Checks every case whose name starts with prefix; returns their count. */
static int check_cases(const char *prefix)
{
    char *cases = slurp(test_source_path("tests/cli/expected/cases"));
    cr_assert_not_null(cases, "cannot read tests/cli/expected/cases");
    int n = 0;
    for (char *line = cases, *next; *line; line = next) {
        next = strchr(line, '\n');
        next = next ? (*next = '\0', next + 1) : line + strlen(line);
        char *status = strchr(line, '\t');
        if (line[0] == '#' || !status || strncmp(line, prefix, strlen(prefix)) != 0)
            continue;
        *status++ = '\0';
        char *args = strchr(status, '\t');
        cr_assert_not_null(args, "cases: %s: no arguments column", line);
        *args++ = '\0';
        const char *dir = test_tmpdir();
        cr_assert_not_null(dir);
        int rc = run_dtsim(dir, args);
        cr_expect_eq(rc, atoi(status), "%s: exit %d, expected %s", line, rc, status);
        expect_stream(line, dir, "out");
        expect_stream(line, dir, "err");
        n++;
    }
    free(cases);
    return n;
}

Test(usage, main) { cr_assert_gt(check_cases("main_"), 0); }
Test(usage, run) { cr_assert_gt(check_cases("run_"), 0); }
Test(usage, sweep) { cr_assert_gt(check_cases("sweep_"), 0); }
Test(usage, report) { cr_assert_gt(check_cases("report_"), 0); }
Test(usage, plot) { cr_assert_gt(check_cases("plot_"), 0); }
Test(usage, topo) { cr_assert_gt(check_cases("topo_"), 0); }
Test(usage, trace) { cr_assert_gt(check_cases("trace_"), 0); }
Test(usage, estimate) { cr_assert_gt(check_cases("estimate_"), 0); }
Test(usage, list) { cr_assert_gt(check_cases("list_"), 0); }
