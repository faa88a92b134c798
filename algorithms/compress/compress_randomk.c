/* randomk(ratio): keeps k coordinates chosen uniformly without replacement
 * (docs/algorithms.md section 1.7), k by topk's rule (min(d, max(1,
 * round(ratio x d)))). Every worker draws from the same stream (a seed
 * shared by all workers, vt->shared_random), so the supports agree and the
 * messages are summed by the configured all-reduce: k fp32 values, 4k
 * bytes (the index set is implied by the shared seed). With error feedback
 * the kept values are sent as they are; without it they are scaled by d/k,
 * which makes C unbiased with E|C(v) - v|^2 = (d/k - 1)|v|^2.
 *
 * Selection sampling (Knuth's algorithm S): coordinate j is kept with
 * probability (k - kept) / (d - j); one uniform per coordinate, indices
 * come out increasing, nothing allocates. */
#include <stdint.h>

#include "algorithms/compress/compress.h"

static double wire_bytes(const algo_compressor *c, int64_t d, int value_bytes SIM_UNUSED)
{
    return 4.0 * (double)algo_compress_ratio_entries(c, d);
}

static void encode(const algo_compressor *c, const float *v, int64_t d, gsl_rng *rng,
                   algo_compress_msg *msg)
{
    const int64_t k = algo_compress_ratio_entries(c, d);
    const float scale = c->error_feedback ? 1.0f : (float)((double)d / (double)k);
    msg->d = d;
    int64_t n = 0;
    for (int64_t j = 0; j < d && n < k; j++) {
        if (k - n == d - j || gsl_rng_uniform(rng) * (double)(d - j) < (double)(k - n)) {
            msg->values[n] = scale == 1.0f ? v[j] : scale * v[j];
            msg->indices[n] = (int32_t)j;
            n++;
        }
    }
    msg->nnz = n;
}

const algo_compress_vt algo_compress_randomk = {
    .name = "randomk",
    .args = "(ratio)",
    .summary = "random-k: k uniform coordinates, shared by all workers; x d/k without "
               "error feedback",
    .size_rule = "4k bytes (fp32 values; indices from the shared seed), all-reduced",
    .agg = ALGO_COMPRESS_ALLREDUCE,
    .random = 1,
    .parse = algo_compress_parse_ratio,
    .entries = algo_compress_ratio_entries,
    .wire_bytes = wire_bytes,
    .encode = encode,
    .decode_add = algo_compress_add_sparse,
    .shared_random = 1,
};
