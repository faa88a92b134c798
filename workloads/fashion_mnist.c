/* Fashion-MNIST from the four gzip IDX files (big-endian headers: magic
 * 2051 for images with count, rows, cols; 2049 for labels with count).
 * Pixels become floats in [0, 1]; labels must be 0..9 and counts must match.
 * Pixels are decompressed in large chunks straight into the float array, so
 * loading the 60000 + 10000 images takes a fraction of a second. */
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

static int read_pixels(gzFile f, const char *path, int64_t n, float *x, unsigned char *buf,
                       sim_err *err)
{
    const int64_t total = n * FM_DIM;
    int64_t done = 0;
    while (done < total) {
        int64_t want = total - done > FM_CHUNK ? FM_CHUNK : total - done;
        int64_t got = read_bytes(f, path, buf, want, err);
        if (got < 0)
            return err ? err->code : SIM_EINPUT;
        for (int64_t i = 0; i < got; i++)
            x[done + i] = (float)buf[i] * (1.0f / 255.0f);
        done += got;
        if (got < want)
            return sim_err_set(err, SIM_EINPUT,
                               "%s: truncated: expected %lld bytes of pixel data, got %lld "
                               "(data ends at byte offset %lld)",
                               path, (long long)total, (long long)done,
                               (long long)(16 + done));
    }
    return 0;
}

static int read_labels(const char *path, int64_t n_images, const char *images_path, float *y,
                       unsigned char *buf, sim_err *err)
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
    int64_t done_n = 0;
    while (done_n < n_images) {
        int64_t want = n_images - done_n > FM_CHUNK ? FM_CHUNK : n_images - done_n;
        int64_t got = read_bytes(f, path, buf, want, err);
        if (got < 0) {
            rc = err ? err->code : SIM_EINPUT;
            goto done;
        }
        for (int64_t i = 0; i < got; i++) {
            if (buf[i] >= FM_CLASSES) {
                rc = sim_err_set(err, SIM_EINPUT,
                                 "%s: label %u at byte offset %lld is outside 0..%d", path,
                                 buf[i], (long long)(8 + done_n + i), FM_CLASSES - 1);
                goto done;
            }
            y[done_n + i] = (float)buf[i];
        }
        done_n += got;
        if (got < want) {
            rc = sim_err_set(err, SIM_EINPUT,
                             "%s: truncated: expected %lld bytes of label data, got %lld",
                             path, (long long)n_images, (long long)done_n);
            goto done;
        }
    }
done:
    gzclose(f);
    return rc;
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

    wl_dataset *ds = NULL;
    gzFile ftrain = NULL, ftest = NULL;
    unsigned char *buf = NULL;
    int64_t n_train = 0, n_test = 0;
    if (!(ftrain = open_images(path[0], &n_train, err)))
        goto fail;
    if (!(ftest = open_images(path[2], &n_test, err)))
        goto fail;
    buf = malloc(FM_CHUNK);
    if (!buf) {
        sim_err_set(err, SIM_ENOMEM, "fashion_mnist: out of memory");
        goto fail;
    }
    ds = wl_dataset_alloc("fashion_mnist", FM_DIM, FM_CLASSES, n_train, n_test, err);
    if (!ds)
        goto fail;
    ds->channels = 1;
    ds->height = FM_SIDE;
    ds->width = FM_SIDE;
    if (read_pixels(ftrain, path[0], n_train, ds->train.x, buf, err) != 0 ||
        read_pixels(ftest, path[2], n_test, ds->test.x, buf, err) != 0 ||
        read_labels(path[1], n_train, path[0], ds->train.y, buf, err) != 0 ||
        read_labels(path[3], n_test, path[2], ds->test.y, buf, err) != 0)
        goto fail;
    gzclose(ftrain);
    gzclose(ftest);
    free(buf);
    return ds;
fail:
    if (ftrain)
        gzclose(ftrain);
    if (ftest)
        gzclose(ftest);
    free(buf);
    wl_dataset_destroy(ds);
    return NULL;
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
