/* The memory limit of the size checks (memory.h). The total, not what is
 * free now: the check refuses what cannot fit at all, and gives the same
 * answer however busy the machine is. The address-space room is the
 * exception: it is what this process has left under its own limit. */
#include "sim/memory.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sim/file.h"

#define NO_LIMIT_V1 (1LL << 60) /* v1 writes "no limit" as about 2^63 */

static int64_t lower(int64_t a, int64_t b) { return a < 0 ? b : b < 0 ? a : a < b ? a : b; }

static int64_t meminfo_total(void)
{
    long long kb = -1;
    if (sim_file_scan_line("/proc/meminfo", "MemTotal: %lld kB", &kb) != 0)
        return -1;
    return kb > 0 ? (int64_t)kb * 1024 : -1;
}

int sim_memory_parse_size(const char *text, int64_t *out)
{
    if (!text)
        return -1;
    while (isspace((unsigned char)*text))
        text++;
    if (!isdigit((unsigned char)*text) && *text != '.')
        return -1;
    char *end;
    double v = strtod(text, &end);
    if (end == text || !isfinite(v))
        return -1;
    static const char units[] = "kmgt";
    const char *u = *end ? strchr(units, tolower((unsigned char)*end)) : NULL;
    if (u && *end) {
        for (const char *p = units; p <= u; p++)
            v *= 1024;
        end++;
        if (*end == 'i' && end[1] == 'B')
            end += 2;
        else if (*end == 'B' || *end == 'b')
            end++;
    } else if (*end == 'B' || *end == 'b') {
        end++;
    }
    while (isspace((unsigned char)*end))
        end++;
    if (*end || !(v >= 1) || v > 4.6e18 || (!u && v != floor(v)))
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* The value of one limit file: a byte count, or -1 for "max", no limit or
 * no file. */
static int64_t limit_file(const char *path)
{
    long long v = -1;
    if (sim_file_scan_line(path, "%lld", &v) != 0)
        return -1;
    return v > 0 && v < NO_LIMIT_V1 ? (int64_t)v : -1;
}

/* The lowest limit of file name in dir/path and each of its parents. */
static int64_t limit_up(const char *dir, const char *path, const char *name)
{
    char p[4096], f[4200];
    snprintf(p, sizeof p, "%s", path);
    int64_t best = -1;
    for (;;) {
        size_t n = strlen(p);
        while (n > 0 && p[n - 1] == '/')
            p[--n] = '\0';
        snprintf(f, sizeof f, "%s%s/%s", dir, p, name);
        best = lower(best, limit_file(f));
        char *slash = strrchr(p, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
    return best;
}

int64_t sim_memory_cgroup_limit(const char *proc_cgroup, const char *root)
{
    int64_t best = -1;
    FILE *f = fopen(proc_cgroup, "r");
    char line[4096], dir[4200];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctrl = c1 + 1, *path = c2 + 1;
        if (!*ctrl) { /* v2: "0::/path" */
            best = lower(best, limit_up(root, path, "memory.max"));
        } else {
            for (char *save = NULL, *t = strtok_r((char *)ctrl, ",", &save); t;
                 t = strtok_r(NULL, ",", &save))
                if (strcmp(t, "memory") == 0) {
                    snprintf(dir, sizeof dir, "%s/memory", root);
                    best = lower(best, limit_up(dir, path, "memory.limit_in_bytes"));
                }
        }
    }
    if (f)
        fclose(f);
    /* a container sees its own cgroup as the root of the mount */
    char top[4200];
    snprintf(top, sizeof top, "%s/memory.max", root);
    best = lower(best, limit_file(top));
    snprintf(top, sizeof top, "%s/memory/memory.limit_in_bytes", root);
    return lower(best, limit_file(top));
}

int64_t sim_memory_as_room(int64_t *limit)
{
    struct rlimit rl;
    if (limit)
        *limit = -1;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return -1;
    if (limit)
        *limit = (int64_t)rl.rlim_cur;
    long long kb = 0;
    sim_file_scan_line("/proc/self/status", "VmSize: %lld kB", &kb);
    int64_t used = (int64_t)kb * 1024;
    return (int64_t)rl.rlim_cur > used ? (int64_t)rl.rlim_cur - used : 0;
}

int sim_memory_limit_get(int64_t *limit, sim_err *err)
{
    *limit = lower(meminfo_total(), sim_memory_cgroup_limit("/proc/self/cgroup",
                                                            "/sys/fs/cgroup"));
    const char *s = getenv("DTSIM_MAX_MEMORY");
    if (!s || !*s)
        return 0;
    int64_t env;
    if (sim_memory_parse_size(s, &env) != 0)
        return sim_err_set(err, SIM_EUSAGE, "DTSIM_MAX_MEMORY: expected a size such as 512M or "
                           "8G (k, M, G, T: powers of 1024; a bare number is bytes), got '%s'",
                           s);
    *limit = lower(*limit, env);
    return 0;
}

int64_t sim_memory_limit(void)
{
    int64_t limit;
    return sim_memory_limit_get(&limit, NULL) == 0 ? limit : -1;
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
    int64_t limit;
    int rc = sim_memory_limit_get(&limit, err);
    if (rc)
        return rc;
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
