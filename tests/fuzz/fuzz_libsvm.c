/* Fuzz target: LIBSVM data files, through the dataset builder as an
 * experiment uses it (libsvm(TRAIN[, TEST]) with hold-out and
 * standardisation). The input up to its first NUL byte is the training
 * file; the bytes after it, if any, the test file (which may hold further
 * NULs). The loader takes paths, so each part is written to a scratch file.
 * Standardisation (on odd-sized inputs) densifies the rows, which the
 * library allows up to 2^28 values (1 GiB): a 900-byte file with a large
 * index then takes seconds and a gigabyte under ASan, a timeout on a loaded
 * machine. The target standardises only data sets of at most 2^22 values,
 * calling wl_dataset_normalize after the load (what wl_dataset_create does
 * last).
 * A sparse result must be well-formed CSR (offsets increasing, columns
 * increasing and below dim, values finite and non-zero); when the model is
 * small, the linear model of its label kind (linreg, logreg, softmax) runs
 * its sparse gradient and evaluation on it, then the dense copy is made. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/rng.h"
#include "tests/fuzz/fuzz_util.h"
#include "workloads/dataset.h"
#include "workloads/dataset_impl.h"
#include "workloads/model.h"

static void check_csr(const wl_dataset *ds, const wl_split *s)
{
    const wl_csr *c = &s->csr;
    if (c->row[0] != 0)
        abort();
    for (int64_t i = 0; i < s->n; i++) {
        if (c->row[i + 1] < c->row[i])
            abort();
        for (int64_t k = c->row[i]; k < c->row[i + 1]; k++)
            if (c->col[k] < 0 || c->col[k] >= ds->dim ||
                (k > c->row[i] && c->col[k] <= c->col[k - 1]) || !isfinite(c->val[k]) ||
                c->val[k] == 0)
                abort();
    }
}

/* The sparse kernels of the model that fits ds, on a few rows. */
static void run_sparse_model(const wl_dataset *ds)
{
    const char *spec = ds->classes == 0 ? "linreg" : ds->classes == 2 ? "logreg" : "softmax";
    int64_t outs = ds->classes > 2 ? ds->classes : 1;
    if ((int64_t)ds->dim * outs > 100000 || ds->train.n == 0)
        return;
    sim_err err = {0};
    wl_model *m = wl_model_create(spec, ds, &err);
    fuzz_report("wl_model_create", m ? 0 : -1, &err);
    if (!m)
        return;
    const int64_t b = ds->train.n < 8 ? ds->train.n : 8;
    float *p = calloc((size_t)m->n_params, sizeof *p), *g = malloc((size_t)m->n_params * 4);
    float *ws = malloc(wl_model_workspace_floats(m, b) * sizeof *ws);
    int64_t rows[8];
    if (p && g && ws) {
        for (int64_t i = 0; i < b; i++)
            rows[i] = (i * 7919) % ds->train.n;
        for (int64_t j = 0; j < m->n_params; j++)
            p[j] = (float)((j % 7) - 3) * 0.01f;
        (void)m->vt->loss_grad_sparse(m, p, &ds->train.csr, rows, ds->train.y, b, g, ws);
        (void)m->vt->evaluate_sparse(m, p, &ds->test.csr, NULL, ds->test.y, ds->test.n, ws, b);
    }
    free(p);
    free(g);
    free(ws);
    wl_model_destroy(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    const uint8_t *nul = memchr(data, 0, size);
    size_t train_len = nul ? (size_t)(nul - data) : size;
    const char *train = fuzz_write_temp("train", ".svm", data, train_len);
    char spec[8300];
    if (nul) {
        const char *test =
            fuzz_write_temp("test", ".svm", nul + 1, size - train_len - 1);
        snprintf(spec, sizeof spec, "libsvm(%s, %s)", train, test);
    } else {
        snprintf(spec, sizeof spec, "libsvm(%s)", train);
    }
    gsl_rng *rng = sim_rng_create(1, SIM_STREAM_DATA, 0);
    wl_dataset_opts opts = {spec, 0.25, 0, rng, NULL, NULL};
    sim_err err = {0};
    wl_dataset *ds = wl_dataset_create(&opts, &err);
    fuzz_report("wl_dataset_create", ds ? 0 : -1, &err);
    if (ds && (size & 1) &&
        (ds->train.n + ds->test.n) * (int64_t)ds->dim <= (INT64_C(1) << 22)) {
        int rc = wl_dataset_normalize(ds, &err);
        fuzz_report("wl_dataset_normalize", rc, &err);
        if (rc != 0) {
            wl_dataset_destroy(ds);
            ds = NULL;
        }
    }
    if (ds) {
        (void)wl_dataset_unigram_loss(ds);
        if (ds->sparse) {
            check_csr(ds, &ds->train);
            check_csr(ds, &ds->test);
            run_sparse_model(ds);
            /* the dense copy, when it is small (a fuzz run keeps to 2 GB) */
            if ((ds->train.n + ds->test.n) * (int64_t)ds->dim <= (INT64_C(1) << 22)) {
                int rc = wl_dataset_densify(ds, "fuzz", &err);
                fuzz_report("wl_dataset_densify", rc, &err);
            }
        }
        wl_dataset_destroy(ds);
    }
    gsl_rng_free(rng);
    return 0;
}
