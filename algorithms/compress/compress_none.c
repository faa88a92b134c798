/* none: no compression. The message is the dense vector, d values of the
 * [workload] wire_dtype size (4 bytes fp32, 2 bytes fp16 or bf16; values
 * stay fp32 in memory), summed by an all-reduce. With error feedback the
 * residual stays exactly 0 (p - p). */
#include <string.h>

#include "algorithms/compress/compress.h"

static int parse(algo_compressor *c, const char *const *args, int nargs, sim_err *err)
{
    (void)c;
    (void)args;
    if (nargs != 0)
        return sim_err_set(err, SIM_ECONFIG, "none takes no arguments, got %d", nargs);
    return 0;
}

static int64_t entries(const algo_compressor *c, int64_t d)
{
    (void)c;
    return d;
}

static double wire_bytes(const algo_compressor *c, int64_t d, int value_bytes)
{
    (void)c;
    return (double)d * (double)value_bytes;
}

static void encode(const algo_compressor *c, const float *v, int64_t d, gsl_rng *rng,
                   algo_compress_msg *msg)
{
    (void)c;
    (void)rng;
    memcpy(msg->values, v, (size_t)d * sizeof *v);
    msg->nnz = d;
    msg->d = d;
}

static void decode_add(const algo_compressor *c, const algo_compress_msg *msg, float scale,
                       float *out)
{
    (void)c;
    const float *v = msg->values;
    for (int64_t j = 0; j < msg->nnz; j++)
        out[j] += scale * v[j];
}

const algo_compress_vt algo_compress_none = {
    .name = "none",
    .args = "",
    .summary = "no compression: the dense vector",
    .size_rule = "d x wire bytes per value (wire_dtype: fp32 4, fp16/bf16 2)",
    .agg = ALGO_COMPRESS_ALLREDUCE,
    .identity = 1,
    .random = 0,
    .parse = parse,
    .entries = entries,
    .wire_bytes = wire_bytes,
    .encode = encode,
    .decode_add = decode_add,
};
