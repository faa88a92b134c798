/* dataset: synthetic generators (shapes, determinism), standardisation,
 * the real Fashion-MNIST files and hand-made broken copies of them. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int same_bytes(const wl_dataset *a, const wl_dataset *b)
{
    return a->train.n == b->train.n && a->test.n == b->test.n &&
           memcmp(a->train.x, b->train.x, sizeof(float) * a->train.n * a->dim) == 0 &&
           memcmp(a->train.y, b->train.y, sizeof(float) * a->train.n) == 0 &&
           memcmp(a->test.x, b->test.x, sizeof(float) * a->test.n * a->dim) == 0 &&
           memcmp(a->test.y, b->test.y, sizeof(float) * a->test.n) == 0;
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
    int n = 0;
    while (wl_dataset_table[n].name)
        n++;
    cr_assert_geq(n, 3);
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
