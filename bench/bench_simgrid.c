/* dtsim against SimGrid 3.32 on the hypercube gossip (bench_network part 1:
 * 1 MB to each of log2(n) neighbours, 5 rounds, lock-step, a 10 Gb/s star
 * with 5 us links, max-min fair sharing): whole processes, startup and
 * platform building included. Runs `bench_network N 3` (dtsim) and
 * `gossip_simgrid N DIR` with SimGrid's CM02 model without cross traffic
 * or TCP window bound (pure max-min alpha-beta: the same prediction), each
 * `reps` times, and prints the best CPU seconds (user + system of the
 * child, what a quiet machine's wall time would be) and wall seconds of
 * each, their predictions and the ratio. The machine may be shared: run it
 * quiet, and report the load (printed from /proc/loadavg).
 * Usage: bench_simgrid [reps [n ...]] (default 3 reps, n = 1024 4096); run
 * from the build directory's bench/ or with the executables beside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct timing {
    double cpu, wall;
    char out[256]; /* the child's last line (its prediction) */
} timing;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs argv, its standard output into t->out; 0 or -1. */
static int run_child(char *const argv[], timing *t)
{
    int fd[2];
    if (pipe(fd))
        return -1;
    double t0 = wall_now();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[256];
    t->out[0] = 0;
    while (f && fgets(line, sizeof line, f))
        snprintf(t->out, sizeof t->out, "%s", line);
    if (f)
        fclose(f);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
        return -1;
    t->wall = wall_now() - t0;
    t->cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
             (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    t->out[strcspn(t->out, "\n")] = 0;
    return 0;
}

static int best_of(int reps, char *const argv[], timing *best)
{
    for (int k = 0; k < reps; k++) {
        timing t;
        if (run_child(argv, &t)) {
            fprintf(stderr, "bench_simgrid: %s failed\n", argv[0]);
            return -1;
        }
        if (k == 0 || t.cpu < best->cpu)
            *best = t;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", argv[0]);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    char dt[4200], sg[4200];
    snprintf(dt, sizeof dt, "%s/bench_network", dir);
    snprintf(sg, sizeof sg, "%s/gossip_simgrid", dir);
    char tmp[] = "/tmp/bench_simgrid.XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("bench_simgrid");
        return 1;
    }
    FILE *la = fopen("/proc/loadavg", "r");
    char load[128] = "?";
    if (la && fgets(load, sizeof load, la))
        load[strcspn(load, "\n")] = 0;
    if (la)
        fclose(la);
    printf("hypercube gossip, 1 MB x log2(n), 5 rounds, 10 Gb/s star, fair; best of %d, "
           "whole processes (load average: %s)\n",
           reps, load);
    printf("%6s | %9s %9s %12s | %9s %9s %12s | %7s %7s\n", "hosts", "dtsim cpu", "wall",
           "predicts", "SimGrid", "wall", "predicts", "cpu x", "wall x");
    const char *def[] = {"1024", "4096"};
    int nn = argc > 2 ? argc - 2 : 2;
    for (int i = 0; i < nn; i++) {
        char *n = argc > 2 ? argv[2 + i] : (char *)def[i];
        char *da[] = {dt, n, "3", NULL};
        char *sa[] = {sg, n, tmp, "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                      "--cfg=network/TCP-gamma:0", "--log=root.thresh:critical", NULL};
        timing a, b;
        if (best_of(reps, da, &a) || best_of(reps, sa, &b))
            return 1;
        printf("%6s | %9.3f %9.3f %12s | %9.3f %9.3f %12s | %7.1f %7.1f\n", n, a.cpu, a.wall,
               a.out + (strncmp(a.out, "simulated ", 10) ? 0 : 10), b.cpu, b.wall,
               b.out + (strncmp(b.out, "simulated ", 10) ? 0 : 10), b.cpu / a.cpu,
               b.wall / a.wall);
    }
    rmdir(tmp);
    return 0;
}
