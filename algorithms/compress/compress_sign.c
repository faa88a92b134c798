/* sign: scaled sign, C(v) = (|v|_1 / d) sign(v) with sign(0) = +1
 * (docs/algorithms.md section 1.7; the compressor of EF-signSGD). A
 * message is d sign bits and one fp32 scale, ceil(d/8) + 4 bytes; the
 * workers' scales differ, so messages are gathered. Biased: use it with
 * error feedback. The l1 norm is summed in double. */
#include <math.h>
#include <stdint.h>

#include "algorithms/compress/compress.h"

static double wire_bytes(const algo_compressor *c SIM_UNUSED, int64_t d,
                         int value_bytes SIM_UNUSED)
{
    return (double)((d + 7) / 8) + 4.0;
}

static void encode(const algo_compressor *c SIM_UNUSED, const float *v, int64_t d,
                   gsl_rng *rng SIM_UNUSED, algo_compress_msg *msg)
{
    double l1 = 0;
    for (int64_t j = 0; j < d; j++)
        l1 += fabs((double)v[j]);
    const float s = d > 0 ? (float)(l1 / (double)d) : 0.0f;
    for (int64_t j = 0; j < d; j++)
        msg->values[j] = v[j] >= 0.0f ? s : -s;
    msg->nnz = d;
    msg->d = d;
}

const algo_compress_vt algo_compress_sign = {
    .name = "sign",
    .args = "",
    .summary = "scaled sign: (|v|_1 / d) sign(v), biased (use error feedback)",
    .size_rule = "ceil(d/8) + 4 bytes (sign bits + fp32 scale), gathered",
    .agg = ALGO_COMPRESS_ALLGATHER,
    .wire_bytes = wire_bytes,
    .encode = encode,
};
