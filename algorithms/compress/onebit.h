/* The 1-bit compressed all-reduce with two-stage error feedback, shared by
 * onebit_adam and onebit_lamb. Vectors are padded with zeros to d_pad, a
 * multiple of 8n, and cut into n chunks of d_pad/n:
 *   worker i:  c_i = m_i + e_i;  s_i = ||c_i|| / sqrt(d_pad);
 *              q_i = s_i sgn(c_i) (sgn(0) = +1);  e_i <- c_i - q_i
 *   phase 1:   all-to-all of the sign bits (chunk j to worker j) and of s_i
 *   server j:  a_j = (1/n) sum_i q_i[chunk j] + e_j^s;
 *              sigma_j = ||a_j|| / sqrt(d_pad/n);  r_j = sigma_j sgn(a_j);
 *              e_j^s <- a_j - r_j
 *   phase 2:   all-gather of the bits of r_j and sigma_j; r = concat_j r_j
 * The arithmetic is done once per round for all workers (the simulator
 * holds every worker's state); nothing allocates after algo_onebit_init.
 * docs/algorithms.md, section 7.1 (telescoping, error_feedback = false);
 * message sizes: docs/compressors.md. */
#ifndef DTSIM_ALGO_ONEBIT_H
#define DTSIM_ALGO_ONEBIT_H

#include <stdint.h>

#include "sim/err.h"

typedef struct algo_onebit {
    int n;
    int64_t d, d_pad, chunk; /* chunk = d_pad / n */
    int error_feedback;
    float *we;    /* n x d_pad worker errors */
    float *se;    /* d_pad: server errors, chunk j at j x chunk */
    float *q;     /* n x d_pad: the workers' compressed vectors (scratch) */
    float *a;     /* d_pad: server accumulation (scratch) */
} algo_onebit;

/* d padded up to a multiple of 8n. */
int64_t algo_onebit_padded(int n, int64_t d);
/* Bytes of one phase message for d_wire parameters: d_pad/(8n) + 4. */
double algo_onebit_phase_bytes(int n, int64_t d_wire);

/* 0, or SIM_ENOMEM (nothing to release then). Errors start at 0. */
int algo_onebit_init(algo_onebit *ob, int n, int64_t d, int error_feedback, sim_err *err);
void algo_onebit_release(algo_onebit *ob);
/* out (d floats) = the compressed all-reduce of in[0..n-1] (d floats
 * each); updates the errors. out may alias no input. */
void algo_onebit_allreduce(algo_onebit *ob, const float *const *in, float *out);

#endif
