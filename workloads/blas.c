/* The pinned BLAS kernel and the description recorded with every run
 * (blas.h). */
#include "workloads/blas.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static int cpu_has_avx2(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

static int native_requested(void)
{
    const char *m = getenv("DTSIM_BLAS");
    return m && strcmp(m, "native") == 0;
}

int wl_blas_pin(char **argv)
{
    if (native_requested() || !cpu_has_avx2())
        return 0;
    const char *now = getenv("OPENBLAS_CORETYPE");
    if (now && strcmp(now, WL_BLAS_KERNEL) == 0)
        return 0; /* the library read it when it loaded */
    if (setenv("OPENBLAS_CORETYPE", WL_BLAS_KERNEL, 1) != 0)
        return -1;
    /* The executable's own path (under valgrind /proc/self/exe itself
     * would name the tool, readlink gives the program). */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || n >= (ssize_t)sizeof self - 1)
        return -1; /* no /proc: run on with the library's own choice */
    self[n] = '\0';
    execv(self, argv);
    return -1;
}

int wl_blas_pinned(void)
{
    const char *core = openblas_get_corename();
    return core && strcasecmp(core, WL_BLAS_KERNEL) == 0;
}

void wl_blas_describe(char *buf, size_t len)
{
    /* openblas_get_config(): "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." */
    char version[64] = "OpenBLAS";
    const char *cfg = openblas_get_config();
    if (cfg) {
        const char *sp = strchr(cfg, ' ');
        size_t n = sp ? strcspn(sp + 1, " ") + (size_t)(sp - cfg) + 1 : strlen(cfg);
        snprintf(version, sizeof version, "%.*s", (int)n, cfg);
    }
    const char *core = openblas_get_corename();
    const char *why = wl_blas_pinned() ? "pinned"
                      : native_requested() ? "native: DTSIM_BLAS=native"
                      : !cpu_has_avx2()    ? "not pinned: no AVX2"
                                           : "not pinned";
    snprintf(buf, len, "%s %s (%s)", version, core ? core : "unknown", why);
}

void wl_cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *v = strchr(line, ':');
        if (!v)
            break;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        snprintf(buf, len, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    fclose(f);
}
