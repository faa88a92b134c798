/* Deterministic random streams (STYLE.md 9). Every stream is a gsl_rng
 * seeded from (master seed, stream kind, index) through a mixing hash; the
 * seed is never 0 and no two (kind, index) pairs share a stream. */
#ifndef DTSIM_SIM_RNG_H
#define DTSIM_SIM_RNG_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

typedef enum sim_stream {
    SIM_STREAM_SAMPLING = 1,  /* index = worker: batch sampling, shuffles */
    SIM_STREAM_COMPUTE,       /* index = worker: compute-time draws */
    SIM_STREAM_COMPRESSOR,    /* index = worker */
    SIM_STREAM_ALGORITHM,     /* index = worker, or n for a global stream */
    SIM_STREAM_TOPOLOGY,      /* index 0: random graphs (seed igraph from it) */
    SIM_STREAM_PARTITION,     /* index 0 */
    SIM_STREAM_INIT,          /* index = worker (init = independent) or 0 */
    SIM_STREAM_DATA,          /* index 0: synthetic dataset generation */
    SIM_STREAM_NOISE,         /* index = worker: injected gradient noise */
    SIM_STREAM_FAULT          /* index = worker: random crashes and downtimes */
} sim_stream;

/* The mixed 64-bit seed (splitmix64 over the three inputs), never 0. */
uint64_t sim_rng_seed(uint64_t master, sim_stream kind, uint64_t index);
/* A new Mersenne-Twister stream; NULL when out of memory. Free with gsl_rng_free. */
gsl_rng *sim_rng_create(uint64_t master, sim_stream kind, uint64_t index);

#endif
