/* Quantities with units. Times, rates and sizes need their unit (a bare 0
 * excepted); a bare compute speed is in FLOP/s. Each parser returns 0 or
 * SIM_ECONFIG with a message "expected a <kind> such as <example>, got '<s>'"
 * (the caller prefixes file:line and key). Simulated time is int64 ns. */
#ifndef DTSIM_SIM_UNITS_H
#define DTSIM_SIM_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "sim/err.h"

typedef int64_t sim_time; /* simulated nanoseconds */

#define SIM_NS_PER_S 1000000000LL
#define SIM_TIME_MAX INT64_MAX

/* 250ns, 5us, 1.5ms, 2s, 3min, 1h; the unit is required (a bare 0 is
 * accepted). Rounded to ns. */
int sim_parse_time(const char *s, sim_time *out, sim_err *err);
/* 100Mbps, 10Gbps (bits), 25GB/s, 100MB/s, 1KB/s (bytes); unit required but for 0. */
int sim_parse_rate(const char *s, double *bytes_per_s, sim_err *err);
/* 512B, 4KB, 100MB, 2GB (decimal), 4KiB, 1MiB; unit required but for 0. */
int sim_parse_size(const char *s, double *bytes, sim_err *err);
/* 50GFLOPS, 15.7TFLOPS, 1PFLOPS, MFLOPS; bare = FLOP/s. */
int sim_parse_flops(const char *s, double *flops, sim_err *err);
/* A plain number (no unit); accepts 1e-3, 0.5. */
int sim_parse_double(const char *s, double *out, sim_err *err);
int sim_parse_int(const char *s, int64_t *out, sim_err *err);
/* true/false/yes/no/on/off/1/0 */
int sim_parse_bool(const char *s, int *out, sim_err *err);

static inline double sim_time_to_s(sim_time t) { return (double)t * 1e-9; }
/* Rounds to the nearest ns; never negative for non-negative input. */
sim_time sim_time_from_s(double seconds);
/* x + b + b + ... (k additions, each rounded as the loop would round it),
 * in O(binades crossed) for x >= 0, b >= 0 (a plain loop otherwise). */
double sim_fsum_repeat(double x, double b, int64_t k);

/* Splits "name(a, b, c)" into name and up to max_args trimmed argument
 * strings (nested parentheses are kept inside an argument). A bare "name"
 * gives nargs = 0. Returns 0 or SIM_ECONFIG. */
#define SIM_SPEC_MAX_ARGS 8
#define SIM_SPEC_ARG_LEN 512
typedef struct sim_spec {
    char name[64];
    int nargs;
    char args[SIM_SPEC_MAX_ARGS][SIM_SPEC_ARG_LEN];
} sim_spec;
int sim_spec_parse(const char *s, sim_spec *out, sim_err *err);

/* For a message about an unknown name: the closest names of `known`
 * (a list separated by commas and/or blanks or '|') to `word`, as "did you
 * mean 'ring'? " (case-insensitive edit distance with transpositions, at
 * most 2 and less than half the name's length), else "". Writes into buf
 * (len bytes) and returns buf, so that it fits a format such as
 * "unknown graph '%s' (%sknown: %s)". */
const char *sim_suggest(const char *word, const char *known, char *buf, size_t len);
/* The edit distance sim_suggest uses (optimal string alignment, ASCII case
 * ignored); 99 for words longer than 63 characters. */
int sim_edit_distance(const char *a, const char *b);

/* Cuts the white space (isspace) off both ends of s in place; returns the
 * first character kept. */
char *sim_str_trim(char *s);

#endif
