/* dataset: synthetic generators (shapes, determinism), standardisation,
 * the real Fashion-MNIST files and hand-made broken copies of them. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "tests/common.h"
#include "workloads/dataset.h"
#include "workloads/dataset_impl.h"

static gsl_rng *rng_new(unsigned long seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    return r;
}

static wl_dataset *make(const char *spec, unsigned long seed, int normalize, sim_err *err)
{
    gsl_rng *r = rng_new(seed);
    wl_dataset_opts o = {.spec = spec, .test_fraction = 0.1, .normalize = normalize, .rng = r};
    wl_dataset *ds = wl_dataset_create(&o, err);
    gsl_rng_free(r);
    return ds;
}

static int same_split(const wl_dataset *a, const wl_split *sa, const wl_split *sb)
{
    if (!a->sparse)
        return memcmp(sa->x, sb->x, sizeof(float) * sa->n * a->dim) == 0;
    int64_t nnz = sa->csr.row[sa->n];
    return memcmp(sa->csr.row, sb->csr.row, sizeof(int64_t) * (sa->n + 1)) == 0 &&
           memcmp(sa->csr.col, sb->csr.col, sizeof(int32_t) * nnz) == 0 &&
           memcmp(sa->csr.val, sb->csr.val, sizeof(float) * nnz) == 0;
}

static int same_bytes(const wl_dataset *a, const wl_dataset *b)
{
    return a->train.n == b->train.n && a->test.n == b->test.n && a->sparse == b->sparse &&
           same_split(a, &a->train, &b->train) &&
           memcmp(a->train.y, b->train.y, sizeof(float) * a->train.n) == 0 &&
           same_split(a, &a->test, &b->test) &&
           memcmp(a->test.y, b->test.y, sizeof(float) * a->test.n) == 0;
}

/* Feature j of row i of split s (either storage). */
static float value_at(const wl_dataset *ds, const wl_split *s, int64_t i, int j)
{
    float *row = malloc((size_t)ds->dim * sizeof *row);
    wl_split_row(ds, s, i, row);
    float v = row[j];
    free(row);
    return v;
}

Test(dataset, synthetic_linear_shape_and_determinism)
{
    sim_err err = {0};
    wl_dataset *a = make("synthetic_linear(20, 1000)", 7, 0, &err);
    cr_assert_not_null(a, "%s", err.msg);
    wl_dataset *b = make("synthetic_linear(20, 1000)", 7, 0, &err);
    wl_dataset *c = make("synthetic_linear(20, 1000)", 8, 0, &err);
    cr_assert_eq(a->dim, 20);
    cr_assert_eq(a->classes, 0);
    cr_assert_eq(a->train.n, 1000);
    cr_assert_eq(a->test.n, 100);
    cr_assert_str_eq(a->name, "synthetic_linear(20, 1000)");
    cr_assert(same_bytes(a, b));
    cr_assert_not(same_bytes(a, c));
    /* x ~ N(0, 1): the sample variance of 20000 draws is within 5% of 1 */
    double s = 0, ss = 0;
    for (int64_t i = 0; i < 20000; i++) {
        s += a->train.x[i];
        ss += (double)a->train.x[i] * a->train.x[i];
    }
    cr_assert(fabs(ss / 20000 - 1) < 0.05 && fabs(s / 20000) < 0.03);
    /* var(y) = |w*|^2 + 0.01 with E|w*|^2 = 1; mean(y) ~ 0.5 */
    double my = 0;
    for (int64_t i = 0; i < 1000; i++)
        my += a->train.y[i];
    cr_assert(fabs(my / 1000 - 0.5) < 0.25, "mean y %g", my / 1000);
    wl_dataset_destroy(a);
    wl_dataset_destroy(b);
    wl_dataset_destroy(c);
    wl_dataset_destroy(NULL);
}

Test(dataset, blobs_shape_labels_determinism)
{
    sim_err err = {0};
    wl_dataset *a = make("blobs(3, 5, 300)", 1, 0, &err);
    cr_assert_not_null(a, "%s", err.msg);
    wl_dataset *b = make("blobs(3, 5, 300)", 1, 0, &err);
    wl_dataset *c = make("blobs(3, 5, 300)", 2, 0, &err);
    cr_assert_eq(a->classes, 3);
    cr_assert_eq(a->dim, 5);
    cr_assert_eq(a->train.n, 300);
    cr_assert_eq(a->test.n, 30);
    int count[3] = {0};
    for (int64_t i = 0; i < a->train.n; i++) {
        float y = a->train.y[i];
        cr_assert(y == 0 || y == 1 || y == 2);
        count[(int)y]++;
    }
    cr_assert(count[0] == 100 && count[1] == 100 && count[2] == 100);
    cr_assert(same_bytes(a, b));
    cr_assert_not(same_bytes(a, c));
    /* samples lie around their class centre with unit spread: the mean of
     * each class's first feature differs across classes far less often
     * than not; check the within-class variance is ~1 (within 30%) */
    for (int k = 0; k < 3; k++) {
        double s = 0, ss = 0;
        for (int64_t i = k; i < 300; i += 3) {
            s += a->train.x[i * 5];
            ss += (double)a->train.x[i * 5] * a->train.x[i * 5];
        }
        double var = ss / 100 - (s / 100) * (s / 100);
        cr_assert(var > 0.7 && var < 1.3, "class %d variance %g", k, var);
    }
    wl_dataset_destroy(a);
    wl_dataset_destroy(b);
    wl_dataset_destroy(c);
}

static void check_standard(const wl_dataset *ds, int skip_feature)
{
    for (int j = 0; j < ds->dim; j++) {
        if (j == skip_feature)
            continue;
        double s = 0, ss = 0;
        for (int64_t i = 0; i < ds->train.n; i++) {
            double v = ds->train.x[i * ds->dim + j];
            s += v;
            ss += v * v;
        }
        double mean = s / ds->train.n, sd = sqrt(ss / ds->train.n - mean * mean);
        cr_assert(fabs(mean) < 1e-4, "feature %d mean %g", j, mean);
        cr_assert(fabs(sd - 1) < 1e-4, "feature %d sd %g", j, sd);
    }
}

Test(dataset, normalize_standard)
{
    sim_err err = {0};
    wl_dataset *raw = make("blobs(4, 6, 500)", 3, 0, &err);
    wl_dataset *ds = make("blobs(4, 6, 500)", 3, 1, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    check_standard(ds, -1);
    /* test rows use the train statistics: the map raw -> normalised is the
     * same affine map for train and test, so ratios of differences agree */
    int j = 2;
    double k_train = (ds->train.x[j] - ds->train.x[6 + j]) / (raw->train.x[j] - raw->train.x[6 + j]);
    double k_test = (ds->test.x[j] - ds->train.x[j]) / (raw->test.x[j] - raw->train.x[j]);
    cr_assert(fabs(k_train - k_test) < 1e-4 * fabs(k_train));
    wl_dataset_destroy(raw);
    wl_dataset_destroy(ds);

    /* a constant feature is only centred */
    wl_dataset *c = wl_dataset_alloc("hand", 2, 0, 4, 1, &err);
    float x[8] = {1, 5, 2, 5, 3, 5, 4, 5};
    memcpy(c->train.x, x, sizeof x);
    c->test.x[0] = 2.5f;
    c->test.x[1] = 7;
    cr_assert_eq(wl_dataset_normalize(c, &err), 0);
    check_standard(c, 1);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(c->train.x[i * 2 + 1], 0.0f);
    cr_assert(fabs(c->test.x[0]) < 1e-7);
    cr_assert(fabs(c->test.x[1] - 2) < 1e-6);
    wl_dataset_destroy(c);
}

Test(dataset, bad_specs)
{
    sim_err err = {0};
    cr_assert_null(make("blobs(3)", 1, 0, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "dataset 'blobs(3)': expected blobs(classes, d, n)") == err.msg,
              "%s", err.msg);
    cr_assert_null(make("blobs(1, 2, 10)", 1, 0, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_null(make("synthetic_linear(0, 10)", 1, 0, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_null(make("synthetic_linear(x, 10)", 1, 0, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "expected synthetic_linear(d, n)"), "%s", err.msg);
    cr_assert_null(make("imagenet", 1, 0, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "imagenet") && strstr(err.msg, "fashion_mnist") &&
                  strstr(err.msg, "synthetic_linear(d, n)") &&
                  strstr(err.msg, "blobs(classes, d, n)"),
              "%s", err.msg);
    cr_assert_null(make("blobs(2, 3", 1, 0, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
}

/* Every kind is listed with a name, its argument list and a summary; names
 * are unique and wl_dataset_find returns each entry itself. Invariants
 * only: a new kind needs no edit here. */
Test(dataset, registry)
{
    for (int n = 0; wl_dataset_registry[n]; n++) {
        const wl_dataset_vt *vt = wl_dataset_registry[n];
        cr_assert(vt->name && vt->name[0], "entry %d has no name", n);
        cr_assert_not_null(vt->args, "%s", vt->name);
        cr_assert(vt->args[0] == '\0' ||
                      (vt->args[0] == '(' && vt->args[strlen(vt->args) - 1] == ')'),
                  "%s: args '%s'", vt->name, vt->args);
        cr_assert(vt->summary && vt->summary[0], "%s has no summary", vt->name);
        cr_assert_not_null(vt->create, "%s", vt->name);
        for (int j = 0; j < n; j++)
            cr_assert_str_neq(wl_dataset_registry[j]->name, vt->name);
        cr_assert_eq(wl_dataset_find(vt->name), vt, "%s", vt->name);
    }
    cr_assert_null(wl_dataset_find("imagenet"));
    cr_assert_null(wl_dataset_find("blobs(2, 3, 10)"));
    cr_assert_null(wl_dataset_find(""));
    cr_assert_null(wl_dataset_find(NULL));
}

/* Each kind checks its own arguments; the messages name the whole spec. */
Test(dataset, kind_argument_messages)
{
    static const struct {
        const char *spec;
        int normalize;
        const char *msg;
    } cases[] = {
        {"fashion_mnist(/tmp)", 0,
         "dataset 'fashion_mnist(/tmp)': expected fashion_mnist (the directory is a separate "
         "setting)"},
        {"synthetic_linear(3)", 0,
         "dataset 'synthetic_linear(3)': expected synthetic_linear(d, n) with d, n >= 1"},
        {"synthetic_linear(1000001, 5)", 0,
         "dataset 'synthetic_linear(1000001, 5)': expected synthetic_linear(d, n) with d, n "
         ">= 1"},
        {"blobs(2, 0, 10)", 0,
         "dataset 'blobs(2, 0, 10)': expected blobs(classes, d, n) with classes >= 2 and d, n "
         ">= 1"},
        {"libsvm", 0, "dataset 'libsvm': expected libsvm(TRAIN[, TEST])"},
        {"libsvm(a, b, c)", 0, "dataset 'libsvm(a, b, c)': expected libsvm(TRAIN[, TEST])"},
        {"text", 0, "dataset 'text': expected text(FILE[, k]) with k in 1..4096"},
        {"text(f.txt, 4097)", 0,
         "dataset 'text(f.txt, 4097)': expected text(FILE[, k]) with k in 1..4096"},
        {"text(f.txt, 4)", 1,
         "dataset 'text(f.txt, 4)': normalize = standard does not apply to character ids"},
        {"mnist(3)", 0,
         "unknown dataset 'mnist' (known: fashion_mnist, synthetic_linear(d, n), "
         "blobs(classes, d, n), libsvm(TRAIN[, TEST]), text(FILE[, k]), torch(FILE)..."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_err err = {0};
        cr_assert_null(make(cases[i].spec, 1, cases[i].normalize, &err), "%s", cases[i].spec);
        cr_assert_eq(err.code, SIM_ECONFIG, "%s", cases[i].spec);
        /* "...": the registry's own entries follow (a new one needs no edit here) */
        size_t want = strlen(cases[i].msg);
        if (want > 3 && strcmp(cases[i].msg + want - 3, "...") == 0)
            cr_assert(strncmp(err.msg, cases[i].msg, want - 3) == 0, "%s", err.msg);
        else
            cr_assert_str_eq(err.msg, cases[i].msg);
    }
}

Test(dataset, fashion_mnist_real_files)
{
    sim_err err = {0};
    wl_dataset *ds = wl_dataset_fashion_mnist(NULL, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert_eq(ds->train.n, 60000);
    cr_assert_eq(ds->test.n, 10000);
    cr_assert_eq(ds->dim, 784);
    cr_assert_eq(ds->classes, 10);
    cr_assert(ds->channels == 1 && ds->height == 28 && ds->width == 28);
    int64_t count[10] = {0}, tcount[10] = {0};
    for (int64_t i = 0; i < 60000; i++) {
        float y = ds->train.y[i];
        cr_assert(y >= 0 && y <= 9 && y == floorf(y));
        count[(int)y]++;
    }
    for (int64_t i = 0; i < 10000; i++)
        tcount[(int)ds->test.y[i]]++;
    for (int k = 0; k < 10; k++)
        cr_assert(count[k] == 6000 && tcount[k] == 1000, "class %d: %lld / %lld", k,
                  (long long)count[k], (long long)tcount[k]);
    float lo = 1, hi = 0;
    for (int64_t i = 0; i < 60000 * 784; i++) {
        float v = ds->train.x[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    cr_assert(lo == 0.0f && hi == 1.0f, "pixel range [%g, %g]", lo, hi);
    wl_dataset_destroy(ds);
}

/* ---- hand-made IDX files ---- */

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void write_gz(const char *dir, const char *name, const unsigned char *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    gzFile f = gzopen(path, "wb");
    cr_assert_not_null(f);
    if (len)
        cr_assert_eq(gzwrite(f, data, (unsigned)len), (int)len);
    gzclose(f);
}

/* images: magic, count n_hdr, rows, cols, then n_px pixel bytes (value i % 256) */
static void write_images(const char *dir, const char *name, uint32_t magic, uint32_t n_hdr,
                         uint32_t rows, size_t n_px)
{
    unsigned char *b = malloc(16 + n_px);
    put32(b, magic);
    put32(b + 4, n_hdr);
    put32(b + 8, rows);
    put32(b + 12, 28);
    for (size_t i = 0; i < n_px; i++)
        b[16 + i] = (unsigned char)(i % 256);
    write_gz(dir, name, b, 16 + n_px);
    free(b);
}

static void write_labels(const char *dir, const char *name, uint32_t n, unsigned char first)
{
    unsigned char b[8 + 16];
    put32(b, 2049);
    put32(b + 4, n);
    for (uint32_t i = 0; i < n && i < 16; i++)
        b[8 + i] = (unsigned char)(i == 0 ? first : i % 10);
    write_gz(dir, name, b, 8 + n);
}

/* A valid tiny set: 3 training images, 2 test images. */
static const char *tiny_set(void)
{
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir);
    write_images(dir, "train-images-idx3-ubyte.gz", 2051, 3, 28, 3 * 784);
    write_labels(dir, "train-labels-idx1-ubyte.gz", 3, 9);
    write_images(dir, "t10k-images-idx3-ubyte.gz", 2051, 2, 28, 2 * 784);
    write_labels(dir, "t10k-labels-idx1-ubyte.gz", 2, 0);
    return dir;
}

Test(dataset, fashion_mnist_tiny_valid_set_and_env)
{
    sim_err err = {0};
    const char *dir = tiny_set();
    wl_dataset *ds = wl_dataset_fashion_mnist(dir, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert(ds->train.n == 3 && ds->test.n == 2);
    cr_assert(ds->train.y[0] == 9 && ds->train.y[1] == 1 && ds->train.y[2] == 2);
    /* pixel i has byte value i % 256 */
    cr_assert_eq(ds->train.x[0], 0.0f);
    cr_assert(fabsf(ds->train.x[255] - 1.0f) < 1e-7);
    cr_assert(fabsf(ds->train.x[1000] - (1000 % 256) / 255.0f) < 1e-7);
    wl_dataset_destroy(ds);
    /* the environment variable supplies the directory when none is given */
    setenv("DTSIM_FASHION_MNIST_DIR", dir, 1);
    wl_dataset_opts o = {.spec = "fashion_mnist"};
    ds = wl_dataset_create(&o, &err);
    unsetenv("DTSIM_FASHION_MNIST_DIR");
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert_eq(ds->train.n, 3);
    cr_assert_str_eq(ds->name, "fashion_mnist");
    wl_dataset_destroy(ds);
}

/* ---- the decoded-data cache ---- */

/* The one cache file in dir (path in out); its inode, 0 when none. */
static ino_t cache_file(const char *dir, char *out, size_t n)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (strstr(e->d_name, "fashion_mnist-") == e->d_name && strstr(e->d_name, ".bin")) {
            snprintf(out, n, "%s/%s", dir, e->d_name);
            found++;
        }
    closedir(d);
    cr_assert_leq(found, 1, "one cache file per set of sources");
    struct stat st;
    return found && stat(out, &st) == 0 ? st.st_ino : 0;
}

static void assert_same(const wl_dataset *a, const wl_dataset *b)
{
    cr_assert(a->train.n == b->train.n && a->test.n == b->test.n);
    cr_assert(memcmp(a->train.x, b->train.x, (size_t)a->train.n * 784 * sizeof(float)) == 0);
    cr_assert(memcmp(a->test.x, b->test.x, (size_t)a->test.n * 784 * sizeof(float)) == 0);
    cr_assert(memcmp(a->train.y, b->train.y, (size_t)a->train.n * sizeof(float)) == 0);
    cr_assert(memcmp(a->test.y, b->test.y, (size_t)a->test.n * sizeof(float)) == 0);
}

static wl_dataset *load_ok(const char *dir)
{
    sim_err err = {0};
    wl_dataset *ds = wl_dataset_fashion_mnist(dir, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    return ds;
}

/* The first load writes the cache, the next ones read it (the file is not
 * rewritten) and give the same floats; a corrupt or truncated cache, and
 * a source changed behind the same size and modification time, are
 * detected: the sources are decoded again and the cache rewritten. */
Test(dataset, fashion_mnist_decoded_cache)
{
    const char *dir = tiny_set();
    char cdir[4096], cpath[4200], lpath[4200];
    snprintf(cdir, sizeof cdir, "%s/cache/sub", dir);
    setenv("DTSIM_CACHE_DIR", cdir, 1);
    wl_dataset *ref = load_ok(dir);
    ino_t ino = cache_file(cdir, cpath, sizeof cpath);
    cr_assert_neq(ino, 0, "the first load writes the cache");
    wl_dataset *ds = load_ok(dir);
    assert_same(ref, ds);
    wl_dataset_destroy(ds);
    cr_assert_eq(cache_file(cdir, cpath, sizeof cpath), ino, "a valid cache is read, not rebuilt");

    /* one payload byte flipped: the CRC fails */
    FILE *f = fopen(cpath, "r+b");
    cr_assert_not_null(f);
    fseek(f, -1, SEEK_END);
    int c = fgetc(f);
    fseek(f, -1, SEEK_END);
    fputc(c ^ 0x01, f);
    fclose(f);
    ds = load_ok(dir);
    assert_same(ref, ds);
    wl_dataset_destroy(ds);
    ino_t ino2 = cache_file(cdir, cpath, sizeof cpath);
    cr_assert(ino2 != 0 && ino2 != ino, "a corrupt cache is rebuilt");

    /* truncated */
    cr_assert_eq(truncate(cpath, 100), 0);
    ds = load_ok(dir);
    assert_same(ref, ds);
    wl_dataset_destroy(ds);
    ino_t ino3 = cache_file(cdir, cpath, sizeof cpath);
    cr_assert(ino3 != 0 && ino3 != ino2, "a truncated cache is rebuilt");

    /* a label changed, the file's size and modification time put back */
    snprintf(lpath, sizeof lpath, "%s/train-labels-idx1-ubyte.gz", dir);
    struct stat st;
    cr_assert_eq(stat(lpath, &st), 0);
    write_labels(dir, "train-labels-idx1-ubyte.gz", 3, 7);
    struct stat st2;
    cr_assert_eq(stat(lpath, &st2), 0);
    cr_assert_eq(st2.st_size, st.st_size);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    cr_assert_eq(utimensat(AT_FDCWD, lpath, times, 0), 0);
    ds = load_ok(dir);
    cr_assert_eq(ds->train.y[0], 7.0f, "a stale cache is not trusted");
    wl_dataset_destroy(ds);
    cr_assert_neq(cache_file(cdir, cpath, sizeof cpath), ino3, "a stale cache is rebuilt");
    wl_dataset_destroy(ref);

    /* off: nothing read or written */
    cr_assert_eq(unlink(cpath), 0);
    setenv("DTSIM_CACHE_DIR", "off", 1);
    wl_dataset_destroy(load_ok(dir));
    unsetenv("DTSIM_CACHE_DIR");
    cr_assert_eq(cache_file(cdir, cpath, sizeof cpath), 0, "no cache when off");
}

Test(dataset, fashion_mnist_truncated_pixels)
{
    sim_err err = {0};
    const char *dir = tiny_set();
    write_images(dir, "train-images-idx3-ubyte.gz", 2051, 3, 28, 1000);
    wl_dataset *ds = wl_dataset_fashion_mnist(dir, &err);
    cr_assert_null(ds);
    cr_assert_eq(err.code, SIM_EINPUT);
    char want[4200];
    snprintf(want, sizeof want,
             "%s/train-images-idx3-ubyte.gz: truncated: expected 2352 bytes of pixel data, "
             "got 1000",
             dir);
    cr_assert(strstr(err.msg, want) == err.msg, "%s", err.msg);
}

Test(dataset, fashion_mnist_truncated_gzip_stream)
{
    /* the first bytes of a real compressed file: the gzip stream itself ends early */
    sim_err err = {0};
    const char *dir = tiny_set();
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz");
    snprintf(dst, sizeof dst, "%s/t10k-images-idx3-ubyte.gz", dir);
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    cr_assert(in && out);
    static unsigned char buf[10000];
    size_t k = fread(buf, 1, sizeof buf, in);
    cr_assert_eq(k, sizeof buf);
    fwrite(buf, 1, k, out);
    fclose(in);
    fclose(out);
    wl_dataset *ds = wl_dataset_fashion_mnist(dir, &err);
    cr_assert_null(ds);
    cr_assert_eq(err.code, SIM_EINPUT);
    cr_assert(strstr(err.msg, dst) == err.msg && strstr(err.msg, "truncated"), "%s", err.msg);
}

Test(dataset, fashion_mnist_missing_dir_names_package)
{
    sim_err err = {0};
    wl_dataset *ds = wl_dataset_fashion_mnist("/nonexistent/dtsim-fm", &err);
    cr_assert_null(ds);
    cr_assert_eq(err.code, SIM_EINPUT);
    cr_assert(strstr(err.msg, "/nonexistent/dtsim-fm/train-images-idx3-ubyte.gz: cannot open") ==
                  err.msg,
              "%s", err.msg);
    cr_assert(strstr(err.msg, "dataset-fashion-mnist"), "%s", err.msg);
    cr_assert(strstr(err.msg, "DTSIM_FASHION_MNIST_DIR"), "%s", err.msg);
}

Test(dataset, fashion_mnist_bad_files)
{
    sim_err err = {0};
    const char *dir = tiny_set();
    /* bad magic number */
    write_images(dir, "t10k-images-idx3-ubyte.gz", 2052, 2, 28, 2 * 784);
    cr_assert_null(wl_dataset_fashion_mnist(dir, &err));
    cr_assert_eq(err.code, SIM_EINPUT);
    cr_assert(strstr(err.msg, "t10k-images-idx3-ubyte.gz: bad magic number 2052"), "%s",
              err.msg);
    /* wrong geometry */
    write_images(dir, "t10k-images-idx3-ubyte.gz", 2051, 2, 27, 2 * 784);
    cr_assert_null(wl_dataset_fashion_mnist(dir, &err));
    cr_assert(strstr(err.msg, "expected 28x28 images, got 27x28"), "%s", err.msg);
    write_images(dir, "t10k-images-idx3-ubyte.gz", 2051, 2, 28, 2 * 784);
    /* label out of range */
    write_labels(dir, "t10k-labels-idx1-ubyte.gz", 2, 10);
    cr_assert_null(wl_dataset_fashion_mnist(dir, &err));
    cr_assert_eq(err.code, SIM_EINPUT);
    cr_assert(strstr(err.msg, "label 10 at byte offset 8 is outside 0..9"), "%s", err.msg);
    /* counts disagree */
    write_labels(dir, "t10k-labels-idx1-ubyte.gz", 3, 0);
    cr_assert_null(wl_dataset_fashion_mnist(dir, &err));
    cr_assert(strstr(err.msg, "has 3 labels but") && strstr(err.msg, "has 2 images"), "%s",
              err.msg);
    /* label file with a bad magic number, header cut short */
    write_labels(dir, "t10k-labels-idx1-ubyte.gz", 2, 0);
    write_gz(dir, "train-labels-idx1-ubyte.gz", (const unsigned char *)"\0\0\x08\x03", 4);
    cr_assert_null(wl_dataset_fashion_mnist(dir, &err));
    cr_assert(strstr(err.msg, "train-labels-idx1-ubyte.gz: truncated: expected 8 bytes of "
                              "header, got 4"),
              "%s", err.msg);
    write_gz(dir, "train-labels-idx1-ubyte.gz",
             (const unsigned char *)"\0\0\x08\x03\0\0\0\x03\0\0\0", 11);
    cr_assert_null(wl_dataset_fashion_mnist(dir, &err));
    cr_assert(strstr(err.msg, "bad magic number 2051"), "%s", err.msg);
    /* empty file */
    write_gz(dir, "train-images-idx3-ubyte.gz", NULL, 0);
    cr_assert_null(wl_dataset_fashion_mnist(dir, &err));
    cr_assert(strstr(err.msg, "truncated: expected 16 bytes of header, got 0"), "%s", err.msg);
}

/* ---- libsvm -------------------------------------------------------------- */

static wl_dataset *make_file(const char *fmt, const char *path, const char *path2,
                             double test_fraction, unsigned long seed, sim_err *err)
{
    char spec[4096];
    if (path2)
        snprintf(spec, sizeof spec, fmt, path, path2);
    else
        snprintf(spec, sizeof spec, fmt, path);
    gsl_rng *r = rng_new(seed);
    wl_dataset_opts o = {.spec = spec, .test_fraction = test_fraction, .rng = r};
    wl_dataset *ds = wl_dataset_create(&o, err);
    gsl_rng_free(r);
    return ds;
}

Test(dataset, libsvm_sparse_binary_with_test_file)
{
    sim_err err = {0};
    const char *dir = test_tmpdir();
    char train[4096], test[4096];
    snprintf(train, sizeof train, "%s",
             test_write_file(dir, "a.train", "+1 1:0.5 3:-2\n-1 2:1e-1\n+1\t4:3 \n"));
    snprintf(test, sizeof test, "%s", test_write_file(dir, "a.test", "-1 7:1.25\r\n"));
    wl_dataset *ds = make_file("libsvm(%s, %s)", train, test, 0.5, 1, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    /* dim = the largest index over both files; the test file keeps its own split */
    cr_assert_eq(ds->dim, 7);
    cr_assert_eq(ds->classes, 2);
    cr_assert_eq(ds->train.n, 3);
    cr_assert_eq(ds->test.n, 1);
    const float want[3][7] = {{0.5f, 0, -2, 0, 0, 0, 0}, {0, 0.1f, 0, 0, 0, 0, 0},
                              {0, 0, 0, 3, 0, 0, 0}};
    /* kept sparse: CSR rows of the non-zeros, 0-based columns */
    cr_assert_eq(ds->sparse, 1);
    cr_assert_null(ds->train.x);
    const int64_t rows[4] = {0, 2, 3, 4};
    const int32_t cols[4] = {0, 2, 1, 3};
    const float vals[4] = {0.5f, -2, 0.1f, 3};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(ds->train.csr.row[i], rows[i]);
    for (int k = 0; k < 4; k++)
        cr_assert(ds->train.csr.col[k] == cols[k] && ds->train.csr.val[k] == vals[k]);
    cr_assert_eq(wl_split_entries(ds, &ds->train), 4);
    cr_assert_eq(wl_split_entries(ds, &ds->test), 1);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 7; j++)
            cr_assert_eq(value_at(ds, &ds->train, i, j), want[i][j], "x[%d][%d]", i, j);
    cr_assert(ds->train.y[0] == 1 && ds->train.y[1] == 0 && ds->train.y[2] == 1);
    cr_assert_eq(ds->test.y[0], 0.0f);
    cr_assert_eq(value_at(ds, &ds->test, 0, 6), 1.25f);
    /* the dense copy holds the same rows */
    cr_assert_eq(wl_dataset_densify(ds, "test", &err), 0, "%s", err.msg);
    cr_assert(ds->sparse == 0 && ds->train.x && !ds->train.csr.row);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 7; j++)
            cr_assert_eq(ds->train.x[i * 7 + j], want[i][j], "x[%d][%d]", i, j);
    cr_assert_eq(ds->test.x[6], 1.25f);
    wl_dataset_destroy(ds);
}

Test(dataset, libsvm_label_kinds_and_dense_rows)
{
    sim_err err = {0};
    const char *dir = test_tmpdir();
    /* integers -> classes in sorted order; dense rows */
    wl_dataset *ds = make_file("libsvm(%s)",
                               test_write_file(dir, "m", "7 1 2\n3 3 4\n5 5 6\n7 0 0\n"), NULL,
                               0, 1, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert_eq(ds->classes, 3);
    cr_assert_eq(ds->dim, 2);
    const float y[4] = {2, 0, 1, 2};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(ds->train.y[i], y[i]);
    cr_assert(value_at(ds, &ds->train, 1, 0) == 3 && value_at(ds, &ds->train, 1, 1) == 4);
    /* the dense row "7 0 0" stores nothing */
    cr_assert_eq(ds->train.csr.row[4] - ds->train.csr.row[3], 0);
    wl_dataset_destroy(ds);
    /* {0, 1} -> binary */
    ds = make_file("libsvm(%s)", test_write_file(dir, "z", "0 1:1\n1 1:2\n"), NULL, 0, 1, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert(ds->classes == 2 && ds->train.y[0] == 0 && ds->train.y[1] == 1);
    wl_dataset_destroy(ds);
    /* non-integer targets -> regression, kept as given */
    ds = make_file("libsvm(%s)", test_write_file(dir, "r", "1.5 1:1\n-2 2:1\n3 1:0\n"), NULL,
                   0, 1, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert(ds->classes == 0 && ds->train.y[0] == 1.5f && ds->train.y[1] == -2.0f);
    wl_dataset_destroy(ds);
    /* more than 1000 distinct integers -> regression */
    char *big = malloc(1100 * 16);
    big[0] = '\0';
    for (int i = 0; i < 1001; i++)
        sprintf(big + strlen(big), "%d 1:1\n", i);
    ds = make_file("libsvm(%s)", test_write_file(dir, "big", big), NULL, 0, 1, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert_eq(ds->classes, 0);
    cr_assert_eq(ds->train.y[1000], 1000.0f);
    wl_dataset_destroy(ds);
    free(big);
}

/* test_fraction: a random subset held out, both parts in file order, the
 * union is the file; the same seed gives the same split. */
Test(dataset, libsvm_test_fraction_holdout)
{
    sim_err err = {0};
    const char *dir = test_tmpdir();
    char text[4096] = "";
    for (int i = 0; i < 40; i++)
        sprintf(text + strlen(text), "%d 1:%d\n", i % 2 ? 1 : -1, i);
    const char *path = test_write_file(dir, "h", text);
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    wl_dataset *a = make_file("libsvm(%s)", p, NULL, 0.25, 5, &err);
    wl_dataset *b = make_file("libsvm(%s)", p, NULL, 0.25, 5, &err);
    wl_dataset *c = make_file("libsvm(%s)", p, NULL, 0.25, 6, &err);
    cr_assert(a && b && c, "%s", err.msg);
    cr_assert_eq(a->train.n, 30);
    cr_assert_eq(a->test.n, 10);
    cr_assert(same_bytes(a, b));
    cr_assert_not(same_bytes(a, c));
    int seen[40] = {0};
    const wl_split *sp[2] = {&a->train, &a->test};
    for (int s = 0; s < 2; s++)
        for (int64_t i = 0; i < sp[s]->n; i++) {
            int v = (int)value_at(a, sp[s], i, 0);
            cr_assert(i == 0 || v > (int)value_at(a, sp[s], i - 1, 0), "file order");
            cr_assert_eq(sp[s]->y[i], v % 2 ? 1.0f : 0.0f);
            seen[v]++;
        }
    for (int i = 0; i < 40; i++)
        cr_assert_eq(seen[i], 1);
    wl_dataset_destroy(a);
    wl_dataset_destroy(b);
    wl_dataset_destroy(c);
}

Test(dataset, libsvm_rejects_bad_files_with_line)
{
    const char *dir = test_tmpdir();
    struct { const char *text, *want; } cases[] = {
        {"", "bad: empty file"},
        {"1 1:2\n1 2:3", "bad:2: truncated: the last line has no newline"},
        {"1 1:2\n\n1 2:3\n", "bad:2: empty line"},
        {"1 1:2\nx 2:3\n", "bad:2: expected a numeric label, got 'x'"},
        {"1 1:abc\n", "bad:1: '1:abc': expected a finite value"},
        {"1 1:\n", "bad:1: '1:': expected a finite value"},
        {"1 0:1\n", "bad:1: '0:1': expected index:value with an index in 1.."},
        {"1 -2:1\n", "bad:1: '-2:1': expected index:value"},
        {"1 3:1 2:1\n", "bad:1: index 2 after 3: indices must increase"},
        {"1 3:1 3:1\n", "bad:1: index 3 after 3"},
        {"1 1:1 5\n", "bad:1: '5' mixes dense values"},
        {"1 2 3\n1 2\n", "bad:2: dense row of 1 values, earlier rows have 2"},
        {"1 1:nan\n", "bad:1: '1:nan': expected a finite value"},
        /* finite as a double, inf as a float (found by fuzz_libsvm) */
        {"1 1:1e42\n", "bad:1: '1:1e42': expected a finite value after ':' (at most 3.4e38"},
        {"1 2.5 1e42 -0.5\n", "bad:1: '1e42': expected a number"},
        {"1e39 1:1\n", "bad:1: expected a numeric label, got '1e39'"},
        {"inf 1:1\n", "bad:1: expected a numeric label, got 'inf'"},
        {"1\n", "bad: no features on any line"},
        {"1 1:2:3\n", "bad:1: '1:2:3': expected a finite value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_err err = {0};
        char p[4096];
        snprintf(p, sizeof p, "%s", test_write_file(dir, "bad", cases[i].text));
        cr_assert_null(make_file("libsvm(%s)", p, NULL, 0, 1, &err), "case %zu", i);
        cr_assert_eq(err.code, SIM_EINPUT, "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, cases[i].want), "case %zu: '%s'", i, err.msg);
    }
    /* a bad test file is named, and a missing one */
    sim_err err = {0};
    char good[4096];
    snprintf(good, sizeof good, "%s", test_write_file(dir, "good", "1 1:1\n"));
    const char *bad = test_write_file(dir, "bad2", "1 1:1\n1 x\n");
    cr_assert_null(make_file("libsvm(%s, %s)", good, bad, 0, 1, &err));
    cr_assert(strstr(err.msg, "bad2:2: 'x': expected a number"), "%s", err.msg);
    cr_assert_null(make_file("libsvm(%s, %s)", good, "/nonexistent/t", 0, 1, &err));
    cr_assert_eq(err.code, SIM_EINPUT);
    cr_assert(strstr(err.msg, "/nonexistent/t: cannot open"), "%s", err.msg);
    cr_assert_null(make("libsvm()", 1, 0, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_null(make("libsvm(a, b, c)", 1, 0, &err));
    cr_assert(strstr(err.msg, "expected libsvm(TRAIN[, TEST])"), "%s", err.msg);
}

/* A sparse index would make every dense row that long: 60 short lines
 * naming index 9999999 asked for 2.4 GB (found by tests/fuzz/fuzz_libsvm).
 * The rows are kept sparse, so the file loads in memory of its own size; a
 * dense copy (a model without sparse kernels, standardisation) is refused
 * before anything that size is allocated, naming the data set (its file). */
Test(dataset, libsvm_refuses_huge_dense_size)
{
    const char *dir = test_tmpdir();
    char text[1024] = "", train[4096], want[4300];
    for (int i = 0; i < 60; i++)
        strcat(text, i == 30 ? "-1 2:1 9999999:1\n" : "1 1:1\n");
    snprintf(train, sizeof train, "%s", test_write_file(dir, "wide", text));
    sim_err err = {0};
    wl_dataset *ds = make_file("libsvm(%s)", train, NULL, 0, 1, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert(ds->sparse == 1 && ds->dim == 9999999 && ds->train.n == 60);
    cr_assert_eq(wl_split_entries(ds, &ds->train), 61);
    cr_assert_eq(wl_dataset_dense_check(ds, "model mlp", &err), SIM_EINPUT);
    snprintf(want, sizeof want,
             "dataset 'libsvm(%s)': model mlp needs dense rows, and 60 samples x 9999999 "
             "features is more than the 268435456 values (1 GiB of floats) a dense copy may "
             "hold (61 values are stored)",
             train);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(wl_dataset_densify(ds, "model mlp", &err), SIM_EINPUT);
    cr_assert(ds->sparse == 1 && ds->train.csr.row, "a refused copy leaves the rows");
    wl_dataset_destroy(ds);
    /* standardisation needs the dense copy too */
    gsl_rng *r = rng_new(1);
    char spec[4200];
    snprintf(spec, sizeof spec, "libsvm(%s)", train);
    wl_dataset_opts o = {.spec = spec, .normalize = 1, .rng = r};
    cr_assert_null(wl_dataset_create(&o, &err));
    gsl_rng_free(r);
    cr_assert(strstr(err.msg, "normalize = standard needs dense rows"), "%s", err.msg);
    /* both files' samples count */
    char test[4096];
    snprintf(test, sizeof test, "%s", test_write_file(dir, "wide.t", "1 1:1\n1 3:1 9999999:2\n"));
    char narrow[256] = "";
    for (int i = 0; i < 25; i++)
        strcat(narrow, "1 1:1\n");
    snprintf(train, sizeof train, "%s", test_write_file(dir, "narrow", narrow));
    ds = make_file("libsvm(%s, %s)", train, test, 0, 1, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert_eq(wl_dataset_densify(ds, "x", &err), SIM_EINPUT);
    cr_assert(strstr(err.msg, "27 samples x 9999999 features"), "%s", err.msg);
    wl_dataset_destroy(ds);
}

/* Hold-out on sparse rows moves the same rows as on dense ones. */
Test(dataset, libsvm_sparse_holdout_matches_dense)
{
    const char *dir = test_tmpdir();
    char text[8192] = "";
    gsl_rng *g = rng_new(3);
    for (int i = 0; i < 50; i++) {
        sprintf(text + strlen(text), "%d", i % 3);
        for (int j = 1; j <= 9; j++)
            if (gsl_rng_uniform(g) < 0.3)
                sprintf(text + strlen(text), " %d:%d", j, (int)(gsl_rng_uniform(g) * 100) - 50);
        strcat(text, "\n");
    }
    gsl_rng_free(g);
    char path[4096];
    snprintf(path, sizeof path, "%s", test_write_file(dir, "ho", text));
    sim_err err = {0};
    wl_dataset *a = make_file("libsvm(%s)", path, NULL, 0.3, 9, &err);
    cr_assert_not_null(a, "%s", err.msg);
    wl_dataset *b = make_file("libsvm(%s)", path, NULL, 0, 9, &err);
    cr_assert_not_null(b, "%s", err.msg);
    cr_assert_eq(wl_dataset_densify(b, "test", &err), 0);
    gsl_rng *r = rng_new(9);
    cr_assert_eq(wl_dataset_holdout(b, 0.3, r, &err), 0);
    gsl_rng_free(r);
    cr_assert(a->sparse && !b->sparse);
    cr_assert(a->train.n == b->train.n && a->test.n == b->test.n && a->test.n == 15);
    cr_assert_eq(wl_dataset_densify(a, "test", &err), 0);
    cr_assert(same_bytes(a, b));
    wl_dataset_destroy(a);
    wl_dataset_destroy(b);
}

/* ---- text ------------------------------------------------------------------ */

/* "abracadabra" with k = 3: vocabulary a b c d r -> ids 0..4; 8 windows. */
Test(dataset, text_windows_and_vocabulary)
{
    sim_err err = {0};
    const char *dir = test_tmpdir();
    wl_dataset *ds = make_file("text(%s, 3)", test_write_file(dir, "t", "abracadabra"), NULL,
                               0, 1, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert_eq(ds->classes, 5);
    cr_assert_eq(ds->dim, 3);
    cr_assert_eq(ds->context, 3);
    cr_assert_eq(memcmp(ds->vocab, "abcdr", 5), 0);
    cr_assert_eq(ds->train.n, 8);
    cr_assert_eq(ds->test.n, 0);
    /* window 0: "abr" -> 'a'; window 7: "abr" -> 'a'; window 3: "aca" -> 'd' */
    const float w0[3] = {0, 1, 4}, w3[3] = {0, 2, 0};
    for (int j = 0; j < 3; j++) {
        cr_assert_eq(ds->train.x[j], w0[j]);
        cr_assert_eq(ds->train.x[3 * 3 + j], w3[j]);
        cr_assert_eq(ds->train.x[7 * 3 + j], w0[j]);
    }
    cr_assert(ds->train.y[0] == 0 && ds->train.y[3] == 3 && ds->train.y[7] == 0);
    /* unigram baseline on train (no test split): counts of the 8 targets
     * a c a d a b r a -> a 4, b 1, c 1, d 1, r 1; add-one over 8 + 5 */
    double want = -(4 * log(5.0 / 13) + 4 * log(2.0 / 13)) / 8;
    cr_assert(fabs(wl_dataset_unigram_loss(ds) - want) < 1e-12);
    wl_dataset_destroy(ds);
}

Test(dataset, text_default_context_holdout_and_errors)
{
    sim_err err = {0};
    const char *dir = test_tmpdir();
    char p[4096];
    snprintf(p, sizeof p, "%s",
             test_write_file(dir, "t", "the quick brown fox jumps over the lazy dog\n"));
    wl_dataset *ds = make_file("text(%s)", p, NULL, 0.1, 1, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert_eq(ds->dim, WL_TEXT_DEFAULT_CONTEXT);
    /* 44 bytes - 8 = 36 windows, 4 held out */
    cr_assert_eq(ds->train.n + ds->test.n, 36);
    cr_assert_eq(ds->test.n, 4);
    wl_dataset_destroy(ds);
    gsl_rng *r = rng_new(1);
    char spec[4200];
    snprintf(spec, sizeof spec, "text(%s)", p);
    wl_dataset_opts o = {.spec = spec, .normalize = 1, .rng = r};
    cr_assert_null(wl_dataset_create(&o, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "does not apply to character ids"), "%s", err.msg);
    gsl_rng_free(r);
    struct { const char *text, *want; } cases[] = {
        {"", "t2: empty file"},
        {"abcdefgh", "t2: 8 bytes, fewer than the 9 needed"},
        {"aaaaaaaaaaaa", "t2: only one distinct byte"},
    };
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s", test_write_file(dir, "t2", cases[i].text));
        cr_assert_null(make_file("text(%s)", p, NULL, 0, 1, &err));
        cr_assert_eq(err.code, SIM_EINPUT);
        cr_assert(strstr(err.msg, cases[i].want), "%s", err.msg);
    }
    cr_assert_null(make_file("text(%s, 0)", p, NULL, 0, 1, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_null(make_file("text(%s)", "/nonexistent/corpus", NULL, 0, 1, &err));
    cr_assert_eq(err.code, SIM_EINPUT);
    cr_assert(strstr(err.msg, "/nonexistent/corpus: cannot open"), "%s", err.msg);
}

/* The default corpus of the README: Debian package fortunes (dev.sh
 * installs it). */
Test(dataset, text_fortunes_corpus)
{
    sim_err err = {0};
    wl_dataset *ds = make_file("text(%s)", "/usr/share/games/fortunes/fortunes", NULL, 0.1, 1,
                               &err);
    cr_assert_not_null(ds, "%s (install the Debian package fortunes)", err.msg);
    cr_assert_gt(ds->train.n, 20000);
    cr_assert(ds->classes > 60 && ds->classes < 256, "vocabulary %d", ds->classes);
    double u = wl_dataset_unigram_loss(ds);
    /* English text: the unigram entropy is around 3 nats (4.1-4.4 bits) */
    cr_assert(u > 2.5 && u < 3.5, "unigram loss %g", u);
    wl_dataset_destroy(ds);
}
