#include "tests/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/err.h"

const char *test_source_path(const char *rel)
{
    static char buf[4096];
    const char *root = getenv("DTSIM_SOURCE_ROOT");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : ".", rel);
    return buf;
}

const char *test_tmpdir(void)
{
    static char buf[4096];
    const char *t = getenv("TMPDIR");
    snprintf(buf, sizeof buf, "%s/dtsim-test-XXXXXX", t ? t : "/tmp");
    if (!mkdtemp(buf))
        return NULL;
    return buf;
}

const char *test_write_file(const char *dir, const char *name, const char *text)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    FILE *f = fopen(buf, "w");
    if (!f)
        return NULL;
    fputs(text, f);
    fclose(f);
    return buf;
}

/* Library error handlers for every suite: GSL and igraph must not abort. */
__attribute__((constructor)) static void test_init_handlers(void)
{
    sim_err_install_library_handlers();
}
