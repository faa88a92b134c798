#include "tests/common.h"

#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
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

const char *test_db_path(const char *name)
{
    static char buf[8192];
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir, "cannot create a temporary directory");
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

/* Opens path read-only and steps sql to its first row (the caller finalizes
 * *s and closes *c). */
static void probe_open(const char *path, const char *sql, sqlite3 **c, sqlite3_stmt **s)
{
    cr_assert_eq(sqlite3_open_v2(path, c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s: %s",
                 path, sqlite3_errmsg(*c));
    cr_assert_eq(sqlite3_prepare_v2(*c, sql, -1, s, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(*c));
    cr_assert_eq(sqlite3_step(*s), SQLITE_ROW, "%s", sql);
}

static void probe_close(sqlite3 *c, sqlite3_stmt *s)
{
    sqlite3_finalize(s);
    sqlite3_close(c);
}

int64_t test_sql_int(const char *path, const char *sql)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    probe_open(path, sql, &c, &s);
    int64_t v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
    probe_close(c, s);
    return v;
}

double test_sql_real(const char *path, const char *sql)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    probe_open(path, sql, &c, &s);
    double v = sqlite3_column_type(s, 0) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 0);
    probe_close(c, s);
    return v;
}

void test_sql_text(const char *path, const char *sql, char *out, size_t size)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    probe_open(path, sql, &c, &s);
    const char *t = (const char *)sqlite3_column_text(s, 0);
    snprintf(out, size, "%s", t ? t : "(null)");
    probe_close(c, s);
}

void test_sql_exec(const char *path, const char *sql)
{
    sqlite3 *c = NULL;
    cr_assert_eq(sqlite3_open(path, &c), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(c, sql, NULL, NULL, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(c));
    sqlite3_close(c);
}

size_t test_stream_read(FILE *f, char *buf, size_t size)
{
    rewind(f);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    return n;
}

/* Library error handlers for every suite: GSL and igraph must not abort. */
__attribute__((constructor)) static void test_init_handlers(void)
{
    sim_err_install_library_handlers();
}
