/* Liveness of a run row's owner. `kill(pid, 0)` alone is not enough: a
 * killed process stays a zombie until its parent (or process 1, which in
 * many containers never reaps) collects it, and signal 0 succeeds on a
 * zombie. So the process state is read from /proc/PID/stat: 'Z' (zombie)
 * and 'X' (dead) count as gone. Its start time there also tells a reused
 * id: the owner started before it wrote its row, so a process that started
 * more than START_SLACK seconds after the row's started_at is another one
 * (the slack absorbs the one-second resolution of both clocks and small
 * steps of the wall clock). Without /proc, the signal test decides. */
#include "analysis/liveness.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim/file.h"

#define START_SLACK 30 /* seconds */

/* Boot time in seconds since the epoch (/proc/stat btime), or -1. */
static long long boot_time(void)
{
    long long bt = -1;
    return sim_file_scan_line("/proc/stat", "btime %lld", &bt) == 0 ? bt : -1;
}

/* Seconds since the epoch of "YYYY-MM-DDTHH:MM:SSZ", or -1. */
static long long utc_parse(const char *text)
{
    struct tm tm = {0};
    if (!text)
        return -1;
    const char *end = strptime(text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (!end || *end)
        return -1;
    return (long long)timegm(&tm);
}

/* Reads the state letter and the start time (clock ticks after boot) of
 * /proc/PID/stat. Returns 0, or -1 when the file cannot be read. */
static int stat_read(int pid, char *state, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "pid (comm) S ppid ...": comm may hold spaces and ')' */
    char *p = strrchr(buf, ')');
    if (!p || sscanf(p + 1, " %c", state) != 1)
        return -1;
    /* the start time is field 22; the state is field 3 */
    *start = 0;
    p += 2;
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    if (p)
        *start = strtoull(p, NULL, 10);
    return 0;
}

int an_process_gone(int64_t pid, const char *started_at)
{
    if (pid <= 0 || pid > INT32_MAX)
        return 0;
    char state = '?';
    unsigned long long start = 0;
    if (stat_read((int)pid, &state, &start) != 0)
        return kill((pid_t)pid, 0) == -1 && errno == ESRCH;
    if (state == 'Z' || state == 'X' || state == 'x')
        return 1;
    long long row = utc_parse(started_at), boot = boot_time();
    long ticks = sysconf(_SC_CLK_TCK);
    if (row < 0 || boot < 0 || ticks <= 0 || start == 0)
        return 0;
    long long began = boot + (long long)(start / (unsigned long long)ticks);
    return began > row + START_SLACK;
}
