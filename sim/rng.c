/* Random streams (STYLE.md 9): every stream's seed is a splitmix64-style
 * hash of (master seed, stream kind, index). Each mixing round is a
 * bijection of 64 bits, so for one master and kind, distinct indices give
 * distinct 64-bit seeds. gsl_rng_set would keep only 32 bits of a seed
 * (birthday collisions among a few thousand streams), so the Mersenne
 * Twister's 624-word state is filled directly from a splitmix64 sequence
 * started at the 64-bit seed, as NumPy's SeedSequence does: distinct seeds
 * give distinct streams. */
#include "sim/rng.h"

#include <string.h>

/* GSL's mt19937 state (gsl/rng/mt.c): 624 words and the position. */
typedef struct mt_state {
    unsigned long mt[624];
    int mti;
} mt_state;

#define GOLDEN 0x9E3779B97F4A7C15ull

/* splitmix64's finalizer over an increment of the golden ratio. */
static uint64_t mix(uint64_t z)
{
    z += GOLDEN;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t sim_rng_seed(uint64_t master, sim_stream kind, uint64_t index)
{
    uint64_t h = mix(master);
    h = mix(h ^ (uint64_t)kind);
    h = mix(h ^ index);
    return h ? h : GOLDEN;
}

gsl_rng *sim_rng_create(uint64_t master, sim_stream kind, uint64_t index)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return NULL;
    uint64_t h = sim_rng_seed(master, kind, index);
    gsl_rng_set(r, 1ul); /* initialises GSL's bookkeeping */
    if (gsl_rng_size(r) != sizeof(mt_state))
        return r;
    mt_state *st = gsl_rng_state(r);
    uint64_t z = h;
    for (int i = 0; i < 624; i++) {
        z = mix(z);
        st->mt[i] = (unsigned long)(z & 0xffffffffull);
    }
    st->mt[0] |= 0x80000000ul; /* never the all-zero state */
    st->mti = 624;             /* regenerate on the first draw */
    return r;
}
