/* text(FILE[, k]): next-character prediction windows over a byte string.
 * The vocabulary is the set of distinct bytes of the file in increasing
 * byte order (id 0 = the smallest byte); classes = its size. Sample i
 * (i = 0..len-k-1) has x = ids of bytes i..i+k-1 and y = id of byte i+k, so
 * a file of len bytes gives len - k samples in file order. Any byte value is
 * accepted; an empty file, one shorter than k + 1 bytes or one with a single
 * distinct byte is rejected. Also the unigram baseline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/path.h"
#include "workloads/dataset.h"
#include "workloads/dataset_impl.h"

wl_dataset *wl_dataset_text(const char *path, int k, sim_err *err)
{
    if (k < 1 || k > 4096) {
        sim_err_set(err, SIM_ECONFIG, "dataset text(%s, %d): k must be in 1..4096", path, k);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    if (wl_read_file(path, &text, &len, err) != 0)
        return NULL;
    wl_dataset *ds = NULL;
    if (len == 0) {
        sim_err_set(err, SIM_EINPUT, "%s: empty file (no text)", path);
        goto done;
    }
    if (len <= (size_t)k) {
        sim_err_set(err, SIM_EINPUT,
                    "%s: %zu bytes, fewer than the %d needed for one sample of context %d",
                    path, len, k + 1, k);
        goto done;
    }
    const unsigned char *t = (const unsigned char *)text;
    int present[256] = {0}, id[256];
    for (size_t i = 0; i < len; i++)
        present[t[i]] = 1;
    int v = 0;
    unsigned char vocab[256];
    for (int c = 0; c < 256; c++)
        if (present[c]) {
            vocab[v] = (unsigned char)c;
            id[c] = v++;
        }
    if (v < 2) {
        sim_err_set(err, SIM_EINPUT, "%s: only one distinct byte (0x%02x); nothing to predict",
                    path, vocab[0]);
        goto done;
    }
    const int64_t n = (int64_t)len - k;
    ds = wl_dataset_alloc("text", k, v, n, 0, err);
    if (!ds)
        goto done;
    ds->context = k;
    memcpy(ds->vocab, vocab, (size_t)v);
    for (int64_t i = 0; i < n; i++) {
        float *row = ds->train.x + i * k;
        for (int j = 0; j < k; j++)
            row[j] = (float)id[t[i + j]];
        ds->train.y[i] = (float)id[t[i + k]];
    }
done:
    free(text);
    return ds;
}

double wl_dataset_unigram_loss(const wl_dataset *ds)
{
    const int c = ds->classes;
    if (c < 2 || ds->train.n <= 0)
        return NAN;
    double *count = calloc((size_t)c, sizeof *count);
    if (!count)
        return NAN;
    for (int64_t i = 0; i < ds->train.n; i++) {
        int y = (int)ds->train.y[i];
        if (y >= 0 && y < c)
            count[y] += 1;
    }
    const double total = (double)ds->train.n + c;
    const wl_split *ev = ds->test.n > 0 ? &ds->test : &ds->train;
    double loss = 0;
    for (int64_t i = 0; i < ev->n; i++) {
        int y = (int)ev->y[i];
        double p = (y >= 0 && y < c ? count[y] + 1 : 1) / total;
        loss -= log(p);
    }
    free(count);
    return loss / (double)ev->n;
}

static wl_dataset *text_create(const sim_spec *sp, const wl_dataset_opts *opts, sim_err *err)
{
    int64_t k = WL_TEXT_DEFAULT_CONTEXT;
    if (sp->nargs < 1 || sp->nargs > 2 || !sp->args[0][0] ||
        (sp->nargs == 2 &&
         (sim_parse_int(sp->args[1], &k, NULL) != 0 || k < 1 || k > 4096))) {
        sim_err_set(err, SIM_ECONFIG,
                    "dataset '%s': expected text(FILE[, k]) with k in 1..4096", opts->spec);
        return NULL;
    }
    if (opts->normalize) {
        sim_err_set(err, SIM_ECONFIG,
                    "dataset '%s': normalize = standard does not apply to character ids",
                    opts->spec);
        return NULL;
    }
    char path[SIM_PATH_MAX];
    if (sim_path_resolve(opts->dir, sp->args[0], path, sizeof path, err))
        return NULL;
    return wl_dataset_text(path, (int)k, err);
}

const wl_dataset_vt wl_dataset_text_vt = {
    .name = "text",
    .args = "(FILE[, k])",
    .summary = "next byte from the k (default 8) previous ones; vocabulary = the file's bytes "
               "(corpus: Debian package fortunes, /usr/share/games/fortunes/)",
    .create = text_create,
};
