/* topk(ratio): keeps the k entries of largest magnitude (docs/algorithms.md
 * section 1.7), k = min(d, max(1, round(ratio x d))) with round-half-away
 * (llround), ratio in (0, 1]. A message is k (fp32 value, int32 index)
 * pairs, 8k bytes whatever wire_dtype says, gathered from every worker
 * because the supports differ. Contractive: |C(v) - v|^2 <= (1 - k/d)|v|^2.
 *
 * Selection is an exact radix select on the bits of |v_j| (for floats >= 0
 * the IEEE-754 bit pattern orders like the value): four histogram passes
 * of one byte each find the k-th largest magnitude t, then one pass keeps
 * every entry above t and the first entries equal to t in index order
 * until k are kept. O(d), no workspace, deterministic; indices come out
 * increasing. A NaN has the largest pattern and is kept first. */
#include <stdint.h>
#include <string.h>

#include "algorithms/compress/compress.h"

static double wire_bytes(const algo_compressor *c, int64_t d, int value_bytes SIM_UNUSED)
{
    return 8.0 * (double)algo_compress_ratio_entries(c, d);
}

static inline uint32_t mag_key(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u & 0x7fffffffu;
}

static void encode(const algo_compressor *c, const float *v, int64_t d, gsl_rng *rng SIM_UNUSED,
                   algo_compress_msg *msg)
{
    int64_t k = algo_compress_ratio_entries(c, d);
    msg->d = d;
    msg->nnz = k;
    if (k == d) {
        for (int64_t j = 0; j < d; j++) {
            msg->values[j] = v[j];
            msg->indices[j] = (int32_t)j;
        }
        return;
    }
    /* find t = the k-th largest key and `need` = how many keys equal to t to keep */
    uint32_t prefix = 0, mask = 0;
    int64_t need = k;
    for (int shift = 24; shift >= 0; shift -= 8) {
        int64_t hist[256];
        memset(hist, 0, sizeof hist);
        for (int64_t j = 0; j < d; j++) {
            uint32_t key = mag_key(v[j]);
            if ((key & mask) == prefix)
                hist[(key >> shift) & 0xffu]++;
        }
        int b = 255;
        while (b > 0 && hist[b] < need) {
            need -= hist[b];
            b--;
        }
        prefix |= (uint32_t)b << shift;
        mask |= 0xffu << shift;
    }
    int64_t n = 0;
    for (int64_t j = 0; j < d && n < k; j++) {
        uint32_t key = mag_key(v[j]);
        if (key > prefix || (key == prefix && need > 0)) {
            if (key == prefix)
                need--;
            msg->values[n] = v[j];
            msg->indices[n] = (int32_t)j;
            n++;
        }
    }
}

const algo_compress_vt algo_compress_topk = {
    .name = "topk",
    .args = "(ratio)",
    .summary = "top-k sparsification: the k entries of largest |v|, ratio in (0, 1]",
    .size_rule = "8k bytes (fp32 value + int32 index), k = min(d, max(1, round(ratio x d)))",
    .agg = ALGO_COMPRESS_ALLGATHER,
    .parse = algo_compress_parse_ratio,
    .entries = algo_compress_ratio_entries,
    .wire_bytes = wire_bytes,
    .encode = encode,
    .decode_add = algo_compress_add_sparse,
};
