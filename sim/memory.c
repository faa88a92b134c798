/* The memory limit of the size checks (memory.h). The total, not what is
 * free now: the check refuses what cannot fit at all, and gives the same
 * answer however busy the machine is. */
#include "sim/memory.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/file.h"

static int64_t lower(int64_t a, int64_t b) { return a < 0 ? b : b < 0 ? a : a < b ? a : b; }

static int64_t meminfo_total(void)
{
    long long kb = -1;
    if (sim_file_scan_line("/proc/meminfo", "MemTotal: %lld kB", &kb) != 0)
        return -1;
    return kb > 0 ? (int64_t)kb * 1024 : -1;
}

static int64_t cgroup_max(void)
{
    long long v = -1; /* the file says "max" when there is no limit */
    if (sim_file_scan_line("/sys/fs/cgroup/memory.max", "%lld", &v) != 0)
        return -1;
    return v > 0 ? (int64_t)v : -1;
}

static int64_t env_limit(void)
{
    const char *s = getenv("DTSIM_MAX_MEMORY");
    if (!s || !*s)
        return -1;
    char *end;
    double v = strtod(s, &end);
    const char *units = "kMGT";
    const char *u = *end ? strchr(units, *end) : NULL;
    if (u)
        for (const char *p = units; p <= u; p++)
            v *= 1024;
    return v > 0 && v < 9e18 ? (int64_t)v : -1;
}

int64_t sim_memory_limit(void)
{
    return lower(lower(meminfo_total(), cgroup_max()), env_limit());
}

const char *sim_memory_format(double bytes, char *buf, int len)
{
    static const char *const unit[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    int k = 0;
    while (bytes >= 1024 && k < 6) {
        bytes /= 1024;
        k++;
    }
    snprintf(buf, (size_t)len, "%.1f %s", bytes, unit[k]);
    return buf;
}

int sim_memory_check(double need, int code, sim_err *err, const char *fmt, ...)
{
    int64_t limit = sim_memory_limit();
    if (limit < 0 || need <= (double)limit)
        return 0;
    char what[1024], a[32], b[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sim_err_set(err, code,
                       "%s need about %s, more than the %s this machine gives"
                       " (DTSIM_MAX_MEMORY lowers the limit)",
                       what, sim_memory_format(need, a, sizeof a),
                       sim_memory_format((double)limit, b, sizeof b));
}
