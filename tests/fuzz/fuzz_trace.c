/* Fuzz target: compute traces, [workers] compute = trace(FILE.csv). The
 * input is the CSV file; it is loaded for three workers through the same
 * calls a run makes (sim_dist_parse, sim_compute_create), then every
 * worker's time is read for a few steps past the trace's end (it cycles). */
#include <stdio.h>

#include "sim/compute.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    const char *path = fuzz_write_temp("trace", ".csv", data, size);
    char spec[4200];
    snprintf(spec, sizeof spec, "trace(%s)", path);
    sim_compute_opts opts = {0};
    sim_err err = {0};
    if (sim_dist_parse(spec, &opts.dist, &err) != 0)
        return 0;
    opts.device_flops = 1e12;
    opts.efficiency = 0.5;
    opts.stragglers = 1;
    opts.straggler_slowdown = 2;
    opts.transient_slowdown = 1;
    sim_compute *c = sim_compute_create(&opts, 3, &err);
    fuzz_report("sim_compute_create", c ? 0 : -1, &err);
    if (!c)
        return 0;
    for (int64_t step = 0; step < 8; step++)
        for (int w = 0; w < 3; w++)
            if (!(sim_compute_step_time(c, w, step, 32, 1e6, NULL) >= 0))
                __builtin_trap(); /* a trace time is >= 0 by the loader's checks */
    sim_compute_destroy(c);
    return 0;
}
