/* Fuzz target: text(FILE[, k]) data, through the dataset builder with a
 * hold-out split, for a context of 1 and of the default 8 characters. The
 * input is the file's bytes (any byte value is allowed in a text file). */
#include <stdio.h>

#include "sim/rng.h"
#include "tests/fuzz/fuzz_util.h"
#include "workloads/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    const char *path = fuzz_write_temp("text", ".txt", data, size);
    static const int contexts[] = {1, WL_TEXT_DEFAULT_CONTEXT};
    for (int c = 0; c < 2; c++) {
        char spec[4200];
        snprintf(spec, sizeof spec, "text(%s, %d)", path, contexts[c]);
        gsl_rng *rng = sim_rng_create(1, SIM_STREAM_DATA, 0);
        wl_dataset_opts opts = {spec, 0.25, 0, rng, NULL, NULL};
        sim_err err = {0};
        wl_dataset *ds = wl_dataset_create(&opts, &err);
        fuzz_report("wl_dataset_create", ds ? 0 : -1, &err);
        if (ds) {
            (void)wl_dataset_unigram_loss(ds);
            wl_dataset_destroy(ds);
        }
        gsl_rng_free(rng);
    }
    return 0;
}
