#include "tests/common.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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

int test_dtsim(const char *dir, const char *args, char *out, size_t len)
{
    const char *exe = getenv("DTSIM_EXE");
    if (!exe || len == 0)
        return -2;
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", dir, exe, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -2;
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

const char *test_run_statuses(const char *db_path)
{
    static char buf[4096];
    buf[0] = '\0';
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return buf;
    }
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT group_concat(status) FROM (SELECT status FROM runs"
                               " ORDER BY id)", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        snprintf(buf, sizeof buf, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(db);
    return buf;
}
