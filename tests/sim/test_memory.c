/* Memory limits (sim/memory.c): strict sizes (DTSIM_MAX_MEMORY and
 * --max-memory read them alike), the cgroup v1 and v2 limits along the
 * process's cgroup path, the address-space room. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "sim/memory.h"
#include "tests/common.h"

Test(memory, sizes_are_parsed_strictly)
{
    int64_t v = 0;
    cr_assert_eq(sim_memory_parse_size("8g", &v), 0);
    cr_assert_eq(v, 8LL << 30);
    cr_assert_eq(sim_memory_parse_size("8G", &v), 0);
    cr_assert_eq(v, 8LL << 30);
    cr_assert_eq(sim_memory_parse_size("8GiB", &v), 0);
    cr_assert_eq(v, 8LL << 30);
    cr_assert_eq(sim_memory_parse_size("512M", &v), 0);
    cr_assert_eq(v, 512LL << 20);
    cr_assert_eq(sim_memory_parse_size("0.5G", &v), 0);
    cr_assert_eq(v, 512LL << 20);
    cr_assert_eq(sim_memory_parse_size("1k", &v), 0);
    cr_assert_eq(v, 1024);
    cr_assert_eq(sim_memory_parse_size("4096", &v), 0);
    cr_assert_eq(v, 4096);
    v = 7;
    const char *bad[] = {"lots", "", "0", "0.5", "-1G", "8X", "8 G B", "1e30", "nan", "G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(sim_memory_parse_size(bad[i], &v), -1, "'%s'", bad[i]);
    cr_assert_eq(v, 7);
}

Test(memory, a_bad_dtsim_max_memory_is_an_error)
{
    int64_t limit;
    sim_err err = {0};
    setenv("DTSIM_MAX_MEMORY", "lots", 1);
    cr_assert_eq(sim_memory_limit_get(&limit, &err), SIM_EUSAGE);
    cr_assert_str_eq(err.msg, "DTSIM_MAX_MEMORY: expected a size such as 512M or 8G (k, M, G,"
                              " T: powers of 1024; a bare number is bytes), got 'lots'");
    cr_assert_eq(sim_memory_check(1.0, SIM_ECONFIG, &err, "x"), SIM_EUSAGE);
    setenv("DTSIM_MAX_MEMORY", "8g", 1);
    cr_assert_eq(sim_memory_limit_get(&limit, &err), 0);
    cr_assert_leq(limit, 8LL << 30);
    cr_assert_gt(limit, 8); /* not 8 bytes */
    setenv("DTSIM_MAX_MEMORY", "1M", 1);
    cr_assert_eq(sim_memory_limit_get(&limit, &err), 0);
    cr_assert_eq(limit, 1 << 20);
    unsetenv("DTSIM_MAX_MEMORY");
}

static void put(const char *dir, const char *rel, const char *text)
{
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    for (char *s = p + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0700);
        *s = '/';
    }
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fputs(text, f);
    fclose(f);
}

Test(memory, cgroup_limits_v1_and_v2_along_the_path)
{
    const char *d = test_tmpdir();
    char root[1100], proc[1100];
    snprintf(root, sizeof root, "%s/cg", d);
    snprintf(proc, sizeof proc, "%s/cgroup", d);
    /* v2: the lowest memory.max from the process's cgroup up */
    put(d, "cgroup", "0::/a/b\n");
    put(root, "a/b/memory.max", "max\n");
    put(root, "a/memory.max", "700000000\n");
    cr_assert_eq(sim_memory_cgroup_limit(proc, root), 700000000);
    put(root, "a/b/memory.max", "300000000\n");
    cr_assert_eq(sim_memory_cgroup_limit(proc, root), 300000000);
    /* v1: memory.limit_in_bytes under the memory controller; 2^63-4096 is none */
    snprintf(root, sizeof root, "%s/cg1", d);
    put(d, "cgroup", "12:cpu,cpuacct:/x\n4:memory:/job/42\n0::/\n");
    put(root, "memory/job/42/memory.limit_in_bytes", "9223372036854771712\n");
    cr_assert_eq(sim_memory_cgroup_limit(proc, root), -1);
    put(root, "memory/job/memory.limit_in_bytes", "123456789\n");
    cr_assert_eq(sim_memory_cgroup_limit(proc, root), 123456789);
    cr_assert_eq(sim_memory_cgroup_limit("/nonexistent", "/nonexistent"), -1);
}

Test(memory, address_space_room_follows_rlimit_as)
{
    struct rlimit old, rl;
    cr_assert_eq(getrlimit(RLIMIT_AS, &old), 0);
    int64_t limit;
    if (old.rlim_cur == RLIM_INFINITY)
        cr_assert_eq(sim_memory_as_room(&limit), -1);
    rl = old;
    rl.rlim_cur = (rlim_t)64 << 40; /* far above what the process maps */
    cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
    int64_t room = sim_memory_as_room(&limit);
    cr_assert_eq(limit, 64LL << 40);
    cr_assert_gt(room, 0);
    cr_assert_lt(room, limit);
    cr_assert_eq(setrlimit(RLIMIT_AS, &old), 0);
}
