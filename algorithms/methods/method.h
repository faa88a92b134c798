/* What the methods share beside their drivers: the head of their
 * vtables, the range checks of their [algorithm] keys, the end of their
 * constructors and the evaluated model of a method with one shared model. */
#ifndef DTSIM_ALGO_METHOD_H
#define DTSIM_ALGO_METHOD_H

#include "algorithms/core/algo.h"

/* The head of a method's vtable: its name, summary and docs/algorithms.md
 * section, with its file's static `keys` table and `create`. */
#define ALGO_METHOD(NAME, SUMMARY, REF)                                                        \
    .name = NAME, .summary = SUMMARY, .reference = REF, .keys = keys, .create = create

/* The [algorithm] key row of compress_time_per_value (default 1e-9 s), its
 * description completing "compute seconds per parameter (d_wire) ...". */
#define ALGO_KEY_COMPRESS_TIME(WHAT)                                                           \
    {"algorithm", "compress_time_per_value", "1e-9", CFG_KEY_DOUBLE, NULL,                     \
     "compute seconds per parameter (d_wire) " WHAT " (>= 0)"}

/* Reads the [algorithm] integer key into *out and checks lo <= *out <= hi
 * (hi = INT64_MAX: no upper bound); a value out of range is a config error
 * naming the key. 0 or a negative code (err). */
int algo_key_int(const cfg_config *c, const char *key, int64_t lo, int64_t hi, int64_t *out,
                 sim_err *err);
/* The same for a double key in the interval from lo to hi whose bounds
 * are open or closed as bounds[0] and bounds[1] say ("[)": lo <= x < hi).
 * hi = INFINITY: "]" accepts infinity, ")" does not. */
int algo_key_double(const cfg_config *c, const char *key, double lo, double hi,
                    const char *bounds, double *out, sim_err *err);

/* The evaluated model of a method whose state begins with its one shared
 * model (float *x, the first field). */
const float *algo_method_shared_model(void *state, float *scratch);

#endif
