/* qsgd(levels[, bucket]) (Alistarh et al.; docs/algorithms.md section
 * 1.7): per bucket of b coordinates (default 512) with norm N = |v_B|_2,
 *   l = floor(s |v_j| / N),  p = s |v_j| / N - l,
 *   Q(v)_j = N sign(v_j) (l + 1)/s with probability p, else N sign(v_j) l/s
 * (one uniform per coordinate from the worker's compressor stream).
 * Unbiased, E|Q(v) - v|^2 = sum_B (N_B^2 / s^2) sum_j p_j (1 - p_j).
 * Fixed-length encoding: 32 bits per bucket (the norm) plus
 * 1 + ceil(log2(s + 1)) bits per coordinate (sign and level):
 *   4 ceil(d/b) + ceil(d (1 + ceil(log2(s + 1))) / 8) bytes,
 * gathered (the workers' norms differ). The message holds the dequantized
 * values (d floats). Norms are computed in double. */
#include <math.h>
#include <stdint.h>

#include "algorithms/compress/compress.h"
#include "sim/units.h"

static int parse(algo_compressor *c, const char *const *args, int nargs, sim_err *err)
{
    if (nargs < 1 || nargs > 2)
        return sim_err_set(err, SIM_ECONFIG,
                           "qsgd takes the levels and optionally the bucket size, such as "
                           "qsgd(4) or qsgd(4, 512); got %d arguments",
                           nargs);
    int64_t s, b = 512;
    if (sim_parse_int(args[0], &s, err) != 0 || s < 1)
        return sim_err_set(err, SIM_ECONFIG, "qsgd: levels must be an integer >= 1, got '%s'",
                           args[0]);
    if (nargs == 2 && (sim_parse_int(args[1], &b, err) != 0 || b < 1))
        return sim_err_set(err, SIM_ECONFIG, "qsgd: bucket must be an integer >= 1, got '%s'",
                           args[1]);
    c->param[0] = (double)s;
    c->param[1] = (double)b;
    return 0;
}

/* 1 + ceil(log2(s + 1)) bits per coordinate */
static int64_t bits_per_value(int64_t s)
{
    int64_t bits = 0;
    while (((int64_t)1 << bits) < s + 1)
        bits++;
    return 1 + bits;
}

static double wire_bytes(const algo_compressor *c, int64_t d, int value_bytes SIM_UNUSED)
{
    const int64_t s = (int64_t)c->param[0], b = (int64_t)c->param[1];
    const int64_t buckets = (d + b - 1) / b;
    return 4.0 * (double)buckets + (double)((d * bits_per_value(s) + 7) / 8);
}

static void encode(const algo_compressor *c, const float *v, int64_t d, gsl_rng *rng,
                   algo_compress_msg *msg)
{
    const double s = c->param[0];
    const int64_t b = (int64_t)c->param[1];
    for (int64_t o = 0; o < d; o += b) {
        const int64_t end = o + b < d ? o + b : d;
        double nrm = 0;
        for (int64_t j = o; j < end; j++)
            nrm += (double)v[j] * (double)v[j];
        nrm = sqrt(nrm);
        for (int64_t j = o; j < end; j++) {
            if (nrm == 0) {
                msg->values[j] = 0.0f;
                continue;
            }
            double a = s * fabs((double)v[j]) / nrm;
            double l = floor(a);
            if (gsl_rng_uniform(rng) < a - l)
                l += 1;
            float q = (float)(nrm * l / s);
            msg->values[j] = v[j] < 0.0f ? -q : q;
        }
    }
    msg->nnz = d;
    msg->d = d;
}

const algo_compress_vt algo_compress_qsgd = {
    .name = "qsgd",
    .args = "(levels[, bucket])",
    .summary = "QSGD stochastic quantization to s levels per bucket (default 512), unbiased",
    .size_rule = "4 ceil(d/b) + ceil(d (1 + ceil(log2(s+1))) / 8) bytes, gathered",
    .agg = ALGO_COMPRESS_ALLGATHER,
    .random = 1,
    .parse = parse,
    .wire_bytes = wire_bytes,
    .encode = encode,
};
