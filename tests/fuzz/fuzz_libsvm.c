/* Fuzz target: LIBSVM data files, through the dataset builder as an
 * experiment uses it (libsvm(TRAIN[, TEST]) with hold-out and
 * standardisation). The input up to its first NUL byte is the training
 * file; the bytes after it, if any, the test file (which may hold further
 * NULs). The loader takes paths, so each part is written to a scratch file. */
#include <stdio.h>
#include <string.h>

#include "sim/rng.h"
#include "tests/fuzz/fuzz_util.h"
#include "workloads/dataset.h"

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
    wl_dataset_opts opts = {spec, 0.25, (int)(size & 1), rng, NULL};
    sim_err err = {0};
    wl_dataset *ds = wl_dataset_create(&opts, &err);
    fuzz_report("wl_dataset_create", ds ? 0 : -1, &err);
    if (ds) {
        (void)wl_dataset_unigram_loss(ds);
        wl_dataset_destroy(ds);
    }
    gsl_rng_free(rng);
    return 0;
}
