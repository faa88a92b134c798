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
#include <math.h>
#include <stdint.h>

#include "algorithms/compress/compress.h"
#include "sim/units.h"

static int parse(algo_compressor *c, const char *const *args, int nargs, sim_err *err)
{
    if (nargs != 1)
        return sim_err_set(err, SIM_ECONFIG,
                           "randomk takes one argument, the kept fraction, such as "
                           "randomk(0.01); got %d",
                           nargs);
    double r;
    if (sim_parse_double(args[0], &r, err) != 0)
        return sim_err_set(err, SIM_ECONFIG, "randomk: expected a ratio such as 0.01, got '%s'",
                           args[0]);
    if (!(r > 0.0 && r <= 1.0))
        return sim_err_set(err, SIM_ECONFIG, "randomk: ratio must be in (0, 1], got %s",
                           args[0]);
    c->param[0] = r;
    return 0;
}

static int64_t entries(const algo_compressor *c, int64_t d)
{
    if (d <= 0)
        return 0;
    long long k = llround(c->param[0] * (double)d);
    if (k < 1)
        k = 1;
    return k > d ? d : (int64_t)k;
}

static double wire_bytes(const algo_compressor *c, int64_t d, int value_bytes)
{
    (void)value_bytes;
    return 4.0 * (double)entries(c, d);
}

static void encode(const algo_compressor *c, const float *v, int64_t d, gsl_rng *rng,
                   algo_compress_msg *msg)
{
    const int64_t k = entries(c, d);
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

static void decode_add(const algo_compressor *c, const algo_compress_msg *msg, float scale,
                       float *out)
{
    (void)c;
    for (int64_t i = 0; i < msg->nnz; i++)
        out[msg->indices[i]] += scale * msg->values[i];
}

const algo_compress_vt algo_compress_randomk = {
    .name = "randomk",
    .args = "(ratio)",
    .summary = "random-k: k uniform coordinates, shared by all workers; x d/k without "
               "error feedback",
    .size_rule = "4k bytes (fp32 values; indices from the shared seed), all-reduced",
    .agg = ALGO_COMPRESS_ALLREDUCE,
    .identity = 0,
    .random = 1,
    .parse = parse,
    .entries = entries,
    .wire_bytes = wire_bytes,
    .encode = encode,
    .decode_add = decode_add,
    .shared_random = 1,
};
