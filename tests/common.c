#include "tests/common.h"

#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"
#include "sim/err.h"
#include "workloads/blas.h"

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

void test_write_temp(char *path, const char *text)
{
    strcpy(path, "/tmp/dtsim_faults_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
}

/* ---- running an experiment --------------------------------------------- */

const char *const test_base_ini = "[experiment]\n"
                                  "seed = 3\n"
                                  "max_epochs = 0\n"
                                  "max_iterations = 150\n"
                                  "eval_every = 15\n"
                                  "eval_train_samples = 600\n"
                                  "[workers]\n"
                                  "count = 8\n"
                                  "compute = constant(10ms)\n"
                                  "[network]\n"
                                  "topology = ideal\n"
                                  "[topology]\n"
                                  "graph = ring\n"
                                  "[algorithm]\n"
                                  "name = dsgd_atc\n"
                                  "lr = 0.1\n"
                                  "batch = 16\n"
                                  "[workload]\n"
                                  "model = softmax\n"
                                  "dataset = blobs(4, 10, 4000)\n"
                                  "partition = iid\n";

void test_rows_collect(void *ctx, const an_metric_row *row)
{
    test_rows *rs = ctx;
    if (rs->n < TEST_ROWS_MAX)
        rs->r[rs->n++] = *row;
}

/* Loads and runs; a config error is returned, or asserted against when
 * config_must_load. */
static int run_config(const char *ini, const char *const *sets, int nsets,
                      const xp_run_opts *opts, xp_run_result *res, sim_err *err,
                      int config_must_load)
{
    cfg_config cfg;
    int rc = cfg_load_string(xp_experiment_schema(), "test.ini", ini, sets, nsets, &cfg,
                                    err);
    if (config_must_load)
        cr_assert_eq(rc, 0, "config: %s", err->msg);
    if (rc != 0)
        return rc;
    xp_run_opts none = {0};
    rc = xp_experiment_run(&cfg, opts ? opts : &none, res, err);
    cfg_release(&cfg);
    return rc;
}

int test_run_try(const char *ini, const char *const *sets, int nsets, const xp_run_opts *opts,
                 xp_run_result *res, sim_err *err)
{
    return run_config(ini, sets, nsets, opts, res, err, 0);
}

int test_run_loaded(const char *ini, const char *const *sets, int nsets,
                    const xp_run_opts *opts, xp_run_result *res, sim_err *err)
{
    return run_config(ini, sets, nsets, opts, res, err, 1);
}

xp_run_result test_run_opts(const char *ini, const char *const *sets, int nsets,
                             const xp_run_opts *opts)
{
    xp_run_result res;
    sim_err err = {0};
    int rc = test_run_try(ini, sets, nsets, opts, &res, &err);
    cr_assert_eq(rc, 0, "run: %s", err.msg);
    return res;
}

xp_run_result test_run_ini(const char *ini, const char *const *sets, int nsets, test_rows *rs)
{
    if (rs)
        rs->n = 0;
    xp_run_opts opts = {.on_metric = rs ? test_rows_collect : NULL, .ctx = rs};
    return test_run_opts(ini, sets, nsets, &opts);
}

void test_rows_assert_identical(const test_rows *a, const test_rows *b, const char *what)
{
    cr_assert_eq(a->n, b->n, "%s: %d vs %d rows", what, a->n, b->n);
    cr_assert_gt(a->n, 3, "%s: too few rows", what);
    for (int i = 0; i < a->n; i++) {
        cr_assert_eq(a->r[i].iteration, b->r[i].iteration, "%s row %d", what, i);
        cr_assert_eq(a->r[i].train_loss, b->r[i].train_loss, "%s row %d: %.17g vs %.17g", what,
                     i, a->r[i].train_loss, b->r[i].train_loss);
        cr_assert_eq(a->r[i].test_loss, b->r[i].test_loss, "%s row %d", what, i);
        cr_assert_eq(a->r[i].test_accuracy, b->r[i].test_accuracy, "%s row %d", what, i);
    }
}

void test_rows_assert_close(const test_rows *a, const test_rows *b, double tol,
                            const char *what)
{
    cr_assert_eq(a->n, b->n, "%s: %d vs %d rows", what, a->n, b->n);
    cr_assert_gt(a->n, 3, "%s: too few rows", what);
    for (int i = 0; i < a->n; i++) {
        cr_assert_eq(a->r[i].iteration, b->r[i].iteration, "%s: row %d", what, i);
        cr_assert(fabs(a->r[i].train_loss - b->r[i].train_loss) <= tol,
                  "%s: row %d (iteration %lld) train loss %.9g vs %.9g", what, i,
                  (long long)a->r[i].iteration, a->r[i].train_loss, b->r[i].train_loss);
        cr_assert(fabs(a->r[i].test_accuracy - b->r[i].test_accuracy) <= tol,
                  "%s: row %d test accuracy %.9g vs %.9g", what, i, a->r[i].test_accuracy,
                  b->r[i].test_accuracy);
    }
}

/* ---- temporary databases and SQL probes --------------------------------- */

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

const char *test_experiment_dir(const char *ini)
{
    static char dir[4096];
    const char *t = test_tmpdir();
    cr_assert_not_null(t);
    snprintf(dir, sizeof dir, "%s", t);
    char sub[3100]; /* leaves test_write_file room for "/e.ini" */
    snprintf(sub, sizeof sub, "%.3000s/elsewhere", dir);
    cr_assert_eq(mkdir(sub, 0700), 0, "%s", sub);
    snprintf(sub, sizeof sub, "%.3000s/exp", dir);
    cr_assert_eq(mkdir(sub, 0700), 0, "%s", sub);
    cr_assert_not_null(test_write_file(sub, "e.ini", ini));
    return dir;
}

/* Library error handlers for every suite: GSL and igraph must not abort. */
__attribute__((constructor)) static void test_init_handlers(void)
{
    sim_err_install_library_handlers();
}

/* Every test executable computes with the BLAS kernel dtsim pins
 * (workloads/blas.h): re-executed once, before Criterion's main, with
 * OPENBLAS_CORETYPE set, however it is started (meson test, by hand, a
 * debugger); Criterion's workers inherit the variable and so do not
 * re-execute. glibc hands an executable's constructors main's arguments. */
__attribute__((constructor)) static void test_pin_blas(int argc, char **argv, char **envp)
{
    (void)envp;
    if (argc > 0 && argv && argv[0])
        wl_blas_pin(argv);
}

/* ---- configurations ---- */

static const cfg_key local_keys[] = {
    {"algorithm", "local_steps", "4", CFG_KEY_INT, NULL, "steps between averages"},
    {"algorithm", "sync", "1ms", CFG_KEY_TIME, NULL, "barrier time"},
    {"algorithm", "mode", "avg", CFG_KEY_CHOICE, "avg|sum", "how to merge"},
    {"algorithm", "codec", "none", CFG_KEY_STRING, NULL, "codec spec"},
    {NULL, NULL, NULL, CFG_KEY_STRING, NULL, NULL},
};
static const cfg_key no_keys[] = {{NULL, NULL, NULL, CFG_KEY_STRING, NULL, NULL}};

static const cfg_key *stand_in_algo_keys(const char *name)
{
    if (strcmp(name, "local_sgd") == 0)
        return local_keys;
    if (strcmp(name, "allreduce_sgd") == 0)
        return no_keys;
    return NULL;
}

static const char *stand_in_optim_at(int i)
{
    static const char *const names[] = {"sgd", "adam", "adamw", "lamb", NULL};
    return i >= 0 && i < 4 ? names[i] : NULL;
}

/* v100 as the presets have it: fp32 15.7, fp16 125 TFLOPS, no tf32, bf16 */
static double stand_in_device(const char *name, int precision, char *names, size_t len)
{
    static const double peak[4] = {15.7e12, 0, 125e12, 0};
    if (strcasecmp(name, "v100") != 0)
        return 0.0;
    if (peak[precision & 3] > 0)
        return peak[precision & 3];
    if (names)
        snprintf(names, len, "fp32, fp16");
    return -1.0;
}

const cfg_schema test_config_registries = {
    .algo_keys = stand_in_algo_keys,
    .optim_name = stand_in_optim_at,
    .device_flops = stand_in_device,
};

void test_config_load_ok(const cfg_schema *sc, const char *text, const char *const *set,
                         int n_set, cfg_config *cfg)
{
    sim_err err;
    sim_err_clear(&err);
    int rc = cfg_load_string(sc, "exp.ini", text, set, n_set, cfg, &err);
    cr_assert_eq(rc, 0, "load failed: %s", err.msg);
}

void test_config_load_fails(const cfg_schema *sc, const char *text,
                            const char *const *set, int n_set, int code, const char *want)
{
    cfg_config cfg;
    sim_err err;
    sim_err_clear(&err);
    int rc = cfg_load_string(sc, "exp.ini", text, set, n_set, &cfg, &err);
    cr_assert_eq(rc, code, "rc %d (%s), want %d", rc, err.msg, code);
    cr_assert_eq(err.code, code);
    cr_assert_str_eq(err.msg, want);
    /* a failed load leaves the config released */
    cr_assert_null(cfg.entries);
    cr_assert_eq(cfg.n_entries, 0);
}

int test_config_key_count(void)
{
    int n = 0;
    while (cfg_keys[n].key)
        n++;
    return n;
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
