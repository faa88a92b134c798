/* What the methods share beside their drivers: the head of their
 * vtables, the range checks of their [algorithm] keys, the end of their
 * constructors and the evaluated model of a method with one shared model. */
#ifndef DTSIM_ALGO_METHOD_H
#define DTSIM_ALGO_METHOD_H

#include <math.h>
#include <stddef.h>

#include "algorithms/core/algo.h"

/* The head of a method's vtable: its name, summary and docs/algorithms.md
 * section, with its file's static `keys` table and `create`. */
#define ALGO_METHOD(NAME, SUMMARY, REF)                                                        \
    .name = NAME, .summary = SUMMARY, .reference = REF, .keys = keys, .create = create

/* The [algorithm] key row of compress_time_per_value (default 1e-9 s, >= 0,
 * read into the double FIELD of ST), its description completing "compute
 * seconds per parameter (d_wire) ...". */
#define ALGO_KEY_COMPRESS_TIME(ST, FIELD, WHAT)                                                \
    ALGO_KEY_DOUBLE("compress_time_per_value", "1e-9", 0, INFINITY, "[)", ST, FIELD,         \
                    "compute seconds per parameter (d_wire) " WHAT)

/* A key row whose value algo_keys_read stores in the field FIELD of the
 * method's state type ST: a double in the interval from LO to HI (BOUNDS
 * as algo_key_double's; NULL: any value), an integer in [LO, HI] (HI =
 * INFINITY: no upper bound; "must be in [LO, HI]" or "must be >= LO")
 * into an int or int64_t field, a bool into an int. The _EXT rows store
 * into the state's extension instead. */
#define ALGO_KEY_FIELD(KEY, DEF, TYPE, LO, HI, BOUNDS, ST, FIELD, EXT, DOC)                   \
    {.section = "algorithm", .key = KEY, .def = DEF, .type = TYPE, .doc = DOC, .lo = LO,      \
     .hi = HI, .bounds = BOUNDS, .offset = offsetof(ST, FIELD),                               \
     .size = sizeof(((ST *)0)->FIELD), .ext = EXT}
#define ALGO_KEY_DOUBLE(KEY, DEF, LO, HI, BOUNDS, ST, FIELD, DOC)                             \
    ALGO_KEY_FIELD(KEY, DEF, CFG_KEY_DOUBLE, LO, HI, BOUNDS, ST, FIELD, 0, DOC)
#define ALGO_KEY_DOUBLE_EXT(KEY, DEF, LO, HI, BOUNDS, ST, FIELD, DOC)                         \
    ALGO_KEY_FIELD(KEY, DEF, CFG_KEY_DOUBLE, LO, HI, BOUNDS, ST, FIELD, 1, DOC)
#define ALGO_KEY_INT(KEY, DEF, LO, HI, ST, FIELD, DOC)                                        \
    ALGO_KEY_FIELD(KEY, DEF, CFG_KEY_INT, LO, HI, "[]", ST, FIELD, 0, DOC)
#define ALGO_KEY_INT_EXT(KEY, DEF, LO, HI, ST, FIELD, DOC)                                    \
    ALGO_KEY_FIELD(KEY, DEF, CFG_KEY_INT, LO, HI, "[]", ST, FIELD, 1, DOC)

/* Reads every row of keys that names a field (ALGO_KEY_*) into st, or into
 * ext for the _EXT rows, in table order, each with its range check; rows
 * whose target is NULL are skipped. 0 or the first failure's code (err). */
int algo_keys_read(const cfg_config *c, const cfg_key *keys, void *st, void *ext,
                   sim_err *err);

/* The evaluated model of a method whose state begins with its one shared
 * model (float *x, the first field). */
const float *algo_method_shared_model(void *state, float *scratch);

#endif
