/* Helpers shared by the decentralized methods (see gossip.h): the local
 * optimizer step written out of place, the local momentum buffers, the form
 * key, lr-phase lists and lattice quantization. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/drivers/gossip.h"

/* Blocks of a fixed 16 floats: GCC vectorises a fixed-count inner loop even
 * at -O2, and the block's accumulator stays in registers while every term
 * of the row is added, so each input is read once and the output written
 * once. Without FMA contraction (-std=c17) every element sees the same
 * scalar or vector operations in the same order as topo_mixing_apply_row
 * (first term scaled, the others added in column order), so the results
 * are bitwise the same whatever the blocking. row_block is always inlined,
 * so the full blocks run with n the constant ROW_BLOCK. */
#define ROW_BLOCK 16

static inline __attribute__((always_inline)) void
row_block(const topo_wmat *W, int64_t a, int64_t b, const float *const *in, int64_t off, int n,
          float *restrict acc)
{
    const float *x0 = in[W->col[a]] + off;
    const float w0 = W->wf[a];
    for (int j = 0; j < n; j++)
        acc[j] = w0 * x0[j];
    for (int64_t p = a + 1; p < b; p++) {
        const float *xp = in[W->col[p]] + off;
        const float wp = W->wf[p];
        for (int j = 0; j < n; j++)
            acc[j] += wp * xp[j];
    }
}

void algo_gossip_row_step(const topo_wmat *W, int i, const float *const *in, int64_t off,
                          int64_t len, float *restrict out, const float *restrict dir,
                          double lr)
{
    const int64_t a = W->row[i], b = W->row[i + 1];
    const float flr = (float)lr;
    float acc[ROW_BLOCK];
    int64_t k = 0;
    for (; k + ROW_BLOCK <= len; k += ROW_BLOCK) {
        row_block(W, a, b, in, off + k, ROW_BLOCK, acc);
        if (dir)
            for (int j = 0; j < ROW_BLOCK; j++)
                out[k + j] = acc[j] - flr * dir[k + j];
        else
            for (int j = 0; j < ROW_BLOCK; j++)
                out[k + j] = acc[j];
    }
    if (k < len) {
        int n = (int)(len - k);
        row_block(W, a, b, in, off + k, n, acc);
        for (int j = 0; j < n; j++)
            out[k + j] = dir ? acc[j] - flr * dir[k + j] : acc[j];
    }
}

void algo_gossip_row(const topo_wmat *W, int i, const float *const *in, int64_t off,
                     int64_t len, float *out)
{
    algo_gossip_row_step(W, i, in, off, len, out, NULL, 0.0);
}

algo_gossip_form algo_gossip_form_read(const cfg_config *cfg, algo_gossip_form dflt)
{
    const char *f = cfg_get_string(cfg, "algorithm", "form");
    if (f && strcmp(f, "atc") == 0)
        return ALGO_GOSSIP_ATC;
    if (f && strcmp(f, "awc") == 0)
        return ALGO_GOSSIP_AWC;
    return dflt;
}

int algo_phase_mask(const char *text, uint32_t *mask)
{
    *mask = 0;
    while (*text == ' ' || *text == '\t')
        text++;
    if (*text == '\0' || strcmp(text, "none") == 0)
        return 0;
    if (strcmp(text, "all") == 0) {
        *mask = 0xffffffffu;
        return 0;
    }
    const char *s = text;
    while (*s) {
        char *end;
        long p = strtol(s, &end, 10);
        if (end == s || p < 1 || p > 30)
            return SIM_ECONFIG;
        *mask |= 1u << p;
        s = end;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == ',') {
            s++;
            while (*s == ' ' || *s == '\t')
                s++;
            if (!*s)
                return SIM_ECONFIG;
        } else if (*s) {
            return SIM_ECONFIG;
        }
    }
    return 0;
}

void algo_lattice_encode(float *codes, const float *x, int64_t d, int q, double s)
{
    const double fq = (double)q;
    for (int64_t j = 0; j < d; j++) {
        double c = fmod(rint((double)x[j] / s), fq);
        if (c < 0)
            c += fq;
        codes[j] = (float)c;
    }
}

void algo_lattice_decode(float *out, const float *codes, const float *ref, int64_t d, int q,
                         double s)
{
    const double fq = (double)q, qs = fq * s;
    for (int64_t j = 0; j < d; j++) {
        double c = (double)codes[j];
        out[j] = (float)(qs * rint((double)ref[j] / qs - c / fq) + s * c);
    }
}
