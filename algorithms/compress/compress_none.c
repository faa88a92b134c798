/* none: no compression. The message is the dense vector, d values of the
 * [workload] wire_dtype size (4 bytes fp32, 2 bytes fp16 or bf16; values
 * stay fp32 in memory), summed by an all-reduce. With error feedback the
 * residual stays exactly 0 (p - p). */
#include <string.h>

#include "algorithms/compress/compress.h"

static double wire_bytes(const algo_compressor *c SIM_UNUSED, int64_t d, int value_bytes)
{
    return (double)d * (double)value_bytes;
}

static void encode(const algo_compressor *c SIM_UNUSED, const float *v, int64_t d,
                   gsl_rng *rng SIM_UNUSED, algo_compress_msg *msg)
{
    memcpy(msg->values, v, (size_t)d * sizeof *v);
    msg->nnz = d;
    msg->d = d;
}

const algo_compress_vt algo_compress_none = {
    .name = "none",
    .args = "",
    .summary = "no compression: the dense vector",
    .size_rule = "d x wire bytes per value (wire_dtype: fp32 4, fp16/bf16 2)",
    .agg = ALGO_COMPRESS_ALLREDUCE,
    .identity = 1,
    .wire_bytes = wire_bytes,
    .encode = encode,
};
