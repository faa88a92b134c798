/* Fashion-MNIST from the four gzip IDX files (big-endian headers: magic
 * 2051 for images with count, rows, cols; 2049 for labels with count).
 * Pixels become floats in [0, 1]; labels must be 0..9 and counts must match.
 * The decoded bytes are kept in the decoded-data cache (dataset_cache.c),
 * checked against the four files at every load, so only the first load
 * (or the first after a file changes) inflates them (about 0.4 s); the
 * floats are made from the bytes the same way either way. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "workloads/dataset.h"
#include "workloads/dataset_impl.h"

#define FM_SIDE 28
#define FM_DIM (FM_SIDE * FM_SIDE)
#define FM_CLASSES 10
#define FM_CHUNK (1 << 20)
#define FM_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"

static const char *const fm_hint =
    "install the Debian package dataset-fashion-mnist, or set DTSIM_FASHION_MNIST_DIR";

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads up to len bytes; returns the count read, or -1 after a gzip error
 * that is not a plain early end of data (message in err). */
static int64_t read_bytes(gzFile f, const char *path, unsigned char *buf, int64_t len,
                          sim_err *err)
{
    int64_t got = 0;
    while (got < len) {
        unsigned want = (unsigned)(len - got > FM_CHUNK ? FM_CHUNK : len - got);
        int k = gzread(f, buf + got, want);
        if (k < 0) {
            int zerr;
            const char *msg = gzerror(f, &zerr);
            if (zerr == Z_BUF_ERROR) /* unexpected end of the compressed stream */
                return got;
            sim_err_set(err, SIM_EINPUT, "%s: gzip error at byte offset %lld: %s", path,
                        (long long)got, msg);
            return -1;
        }
        if (k == 0)
            break;
        got += k;
    }
    return got;
}

static gzFile open_gz(const char *path, sim_err *err)
{
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        sim_err_set(err, SIM_EINPUT, "%s: cannot open (%s)", path, fm_hint);
        return NULL;
    }
    gzbuffer(f, 1 << 17);
    return f;
}

/* Header of an IDX file: magic, then n_dims counts. Returns 0 or SIM_EINPUT. */
static int read_header(gzFile f, const char *path, uint32_t magic, int n_dims, uint32_t *dims,
                       sim_err *err)
{
    unsigned char h[16];
    int64_t len = 4 + 4 * (int64_t)n_dims;
    int64_t got = read_bytes(f, path, h, len, err);
    if (got < 0)
        return err ? err->code : SIM_EINPUT;
    if (got < len)
        return sim_err_set(err, SIM_EINPUT,
                           "%s: truncated: expected %lld bytes of header, got %lld", path,
                           (long long)len, (long long)got);
    uint32_t m = be32(h);
    if (m != magic)
        return sim_err_set(err, SIM_EINPUT,
                           "%s: bad magic number %u (expected %u, an IDX %s file)", path, m,
                           magic, magic == 2051 ? "image" : "label");
    for (int i = 0; i < n_dims; i++)
        dims[i] = be32(h + 4 + 4 * i);
    return 0;
}

/* Opens dir/name and checks its header; *n gets the image count. */
static gzFile open_images(const char *path, int64_t *n, sim_err *err)
{
    gzFile f = open_gz(path, err);
    if (!f)
        return NULL;
    uint32_t dims[3];
    if (read_header(f, path, 2051, 3, dims, err) != 0)
        goto fail;
    if (dims[1] != FM_SIDE || dims[2] != FM_SIDE) {
        sim_err_set(err, SIM_EINPUT, "%s: expected %dx%d images, got %ux%u", path, FM_SIDE,
                    FM_SIDE, dims[1], dims[2]);
        goto fail;
    }
    if (dims[0] == 0) {
        sim_err_set(err, SIM_EINPUT, "%s: contains no images", path);
        goto fail;
    }
    *n = dims[0];
    return f;
fail:
    gzclose(f);
    return NULL;
}

/* Reads n images' pixel bytes into px. */
static int read_pixels(gzFile f, const char *path, int64_t n, unsigned char *px, sim_err *err)
{
    const int64_t total = n * FM_DIM;
    int64_t got = read_bytes(f, path, px, total, err);
    if (got < 0)
        return err ? err->code : SIM_EINPUT;
    if (got < total)
        return sim_err_set(err, SIM_EINPUT,
                           "%s: truncated: expected %lld bytes of pixel data, got %lld "
                           "(data ends at byte offset %lld)",
                           path, (long long)total, (long long)got, (long long)(16 + got));
    return 0;
}

/* A label byte outside 0..9: its offset in the label file in the message. */
static int check_labels(const char *path, const unsigned char *lb, int64_t n, sim_err *err)
{
    for (int64_t i = 0; i < n; i++)
        if (lb[i] >= FM_CLASSES)
            return sim_err_set(err, SIM_EINPUT,
                               "%s: label %u at byte offset %lld is outside 0..%d", path, lb[i],
                               (long long)(8 + i), FM_CLASSES - 1);
    return 0;
}

static int read_labels(const char *path, int64_t n_images, const char *images_path,
                       unsigned char *lb, sim_err *err)
{
    gzFile f = open_gz(path, err);
    if (!f)
        return err ? err->code : SIM_EINPUT;
    uint32_t dims[1];
    int rc = read_header(f, path, 2049, 1, dims, err);
    if (rc != 0)
        goto done;
    if ((int64_t)dims[0] != n_images) {
        rc = sim_err_set(err, SIM_EINPUT, "%s: has %u labels but %s has %lld images", path,
                         dims[0], images_path, (long long)n_images);
        goto done;
    }
    int64_t got = read_bytes(f, path, lb, n_images, err);
    if (got < 0) {
        rc = err ? err->code : SIM_EINPUT;
        goto done;
    }
    rc = check_labels(path, lb, got, err);
    if (rc == 0 && got < n_images)
        rc = sim_err_set(err, SIM_EINPUT,
                         "%s: truncated: expected %lld bytes of label data, got %lld", path,
                         (long long)n_images, (long long)got);
done:
    gzclose(f);
    return rc;
}

/* The decoded bytes (the cache's payload): n_train and n_test as int64,
 * then the training pixels, the test pixels, the training labels and the
 * test labels, one byte each. */
typedef struct fm_raw {
    int64_t n_train, n_test;
    unsigned char *px_train, *px_test, *lb_train, *lb_test;
} fm_raw;

#define FM_RAW_HEAD (2 * (int64_t)sizeof(int64_t))

static size_t raw_len(int64_t n_train, int64_t n_test)
{
    return (size_t)(FM_RAW_HEAD + (n_train + n_test) * (FM_DIM + 1));
}

/* Points r into payload; -1 when its length does not fit its counts. */
static int raw_view(unsigned char *payload, size_t len, fm_raw *r)
{
    if (len < (size_t)FM_RAW_HEAD)
        return -1;
    memcpy(&r->n_train, payload, sizeof r->n_train);
    memcpy(&r->n_test, payload + sizeof r->n_train, sizeof r->n_test);
    if (r->n_train < 1 || r->n_test < 1 || r->n_train > UINT32_MAX || r->n_test > UINT32_MAX ||
        raw_len(r->n_train, r->n_test) != len)
        return -1;
    r->px_train = payload + FM_RAW_HEAD;
    r->px_test = r->px_train + r->n_train * FM_DIM;
    r->lb_train = r->px_test + r->n_test * FM_DIM;
    r->lb_test = r->lb_train + r->n_train;
    return 0;
}

/* Decodes the four files into a payload (malloc'ed, *len bytes). */
static unsigned char *decode(char path[4][4096], size_t *len, sim_err *err)
{
    gzFile ftrain = NULL, ftest = NULL;
    unsigned char *payload = NULL;
    int64_t n_train = 0, n_test = 0;
    fm_raw r;
    if (!(ftrain = open_images(path[0], &n_train, err)))
        goto fail;
    if (!(ftest = open_images(path[2], &n_test, err)))
        goto fail;
    *len = raw_len(n_train, n_test);
    payload = malloc(*len);
    if (!payload) {
        sim_err_set(err, SIM_ENOMEM, "fashion_mnist: out of memory");
        goto fail;
    }
    memcpy(payload, &n_train, sizeof n_train);
    memcpy(payload + sizeof n_train, &n_test, sizeof n_test);
    raw_view(payload, *len, &r);
    if (read_pixels(ftrain, path[0], n_train, r.px_train, err) != 0 ||
        read_pixels(ftest, path[2], n_test, r.px_test, err) != 0 ||
        read_labels(path[1], n_train, path[0], r.lb_train, err) != 0 ||
        read_labels(path[3], n_test, path[2], r.lb_test, err) != 0)
        goto fail;
    gzclose(ftrain);
    gzclose(ftest);
    return payload;
fail:
    if (ftrain)
        gzclose(ftrain);
    if (ftest)
        gzclose(ftest);
    free(payload);
    return NULL;
}

static void to_floats(const unsigned char *b, int64_t n, float *out, float scale)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = (float)b[i] * scale;
}

wl_dataset *wl_dataset_fashion_mnist(const char *dir, sim_err *err)
{
    if (!dir || !*dir)
        dir = getenv("DTSIM_FASHION_MNIST_DIR");
    if (!dir || !*dir)
        dir = FM_DEFAULT_DIR;
    static const char *const names[4] = {
        "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    char path[4][4096];
    for (int i = 0; i < 4; i++)
        if (snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]) >= (int)sizeof path[i]) {
            sim_err_set(err, SIM_EINPUT, "%s: directory name too long", dir);
            return NULL;
        }
    /* the decoded bytes from the cache when it matches the files, else
     * decoded now and cached */
    const char *src[4] = {path[0], path[1], path[2], path[3]};
    wl_cache cache;
    void *cached = NULL;
    size_t len = 0;
    fm_raw r;
    unsigned char *payload = NULL;
    if (wl_cache_open(&cache, "fashion_mnist", src, 4, &cached, &len) &&
        raw_view(cached, len, &r) == 0 && check_labels(path[1], r.lb_train, r.n_train, NULL) == 0 &&
        check_labels(path[3], r.lb_test, r.n_test, NULL) == 0) {
        payload = cached;
    } else {
        free(cached);
        payload = decode(path, &len, err);
        if (!payload)
            return NULL;
        raw_view(payload, len, &r);
        wl_cache_store(&cache, payload, len);
    }
    wl_dataset *ds = wl_dataset_alloc("fashion_mnist", FM_DIM, FM_CLASSES, r.n_train, r.n_test,
                                      err);
    if (ds) {
        ds->channels = 1;
        ds->height = FM_SIDE;
        ds->width = FM_SIDE;
        to_floats(r.px_train, r.n_train * FM_DIM, ds->train.x, 1.0f / 255.0f);
        to_floats(r.px_test, r.n_test * FM_DIM, ds->test.x, 1.0f / 255.0f);
        to_floats(r.lb_train, r.n_train, ds->train.y, 1.0f);
        to_floats(r.lb_test, r.n_test, ds->test.y, 1.0f);
    }
    free(payload);
    return ds;
}

static wl_dataset *fashion_mnist_create(const sim_spec *sp, const wl_dataset_opts *opts,
                                        sim_err *err)
{
    if (sp->nargs != 0) {
        sim_err_set(err, SIM_ECONFIG,
                    "dataset '%s': expected fashion_mnist (the directory is a separate "
                    "setting)",
                    opts->spec);
        return NULL;
    }
    return wl_dataset_fashion_mnist(opts->data_dir, err);
}

const wl_dataset_vt wl_dataset_fashion_mnist_vt = {
    .name = "fashion_mnist",
    .args = "",
    .summary = "Fashion-MNIST 28x28 grey images, 10 classes, 60000 + 10000 "
               "(Debian package dataset-fashion-mnist)",
    .create = fashion_mnist_create,
};
