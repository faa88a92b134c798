/* The 1-bit compressed all-reduce (algorithms/compress/onebit.c,
 * docs/algorithms.md section 7): padding and message sizes; the two-stage
 * error-feedback identity sum_t r_t = sum_t mean_i m_i - mean_i e_i,T -
 * e^s_T; exactness on sign vectors of one magnitude. The methods on it,
 * onebit_adam and onebit_lamb, are tested in test_onebit_adam.c. */
#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/compress/onebit.h"
#include "tests/algorithms/harness.h"

Test(onebit, padding_and_sizes)
{
    cr_assert_eq(algo_onebit_padded(4, 1000), 1024);
    cr_assert_eq(algo_onebit_padded(4, 1024), 1024);
    cr_assert_eq(algo_onebit_padded(8, 44), 64);
    cr_assert_eq(algo_onebit_phase_bytes(4, 1000), 32.0 + 4.0);
    /* a step sends 2(n-1)(d_pad/(8n) + 4): about d/4 bytes for large d */
    cr_assert_eq(algo_onebit_phase_bytes(16, 25600000), 200000.0 + 4.0);
}

/* Summed over steps, the outputs equal the summed mean inputs minus the
 * final worker errors (averaged) and server errors, up to rounding. */
Test(onebit, two_stage_error_feedback_telescopes)
{
    const int n = 4, T = 30;
    const int64_t d = 37; /* padded to 64: chunks of 16 */
    algo_onebit ob;
    sim_err err;
    cr_assert_eq(algo_onebit_init(&ob, n, d, 1, &err), 0);
    cr_assert_eq(ob.d_pad, 64);
    cr_assert_eq(ob.chunk, 16);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    float in[4][37], out[37];
    const float *ptr[4] = {in[0], in[1], in[2], in[3]};
    double sum_r[37] = {0}, sum_m[37] = {0};
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < n; i++)
            for (int64_t j = 0; j < d; j++) {
                in[i][j] = (float)gsl_ran_gaussian(r, 1.0 + 0.1 * (double)j);
                sum_m[j] += in[i][j] / (double)n;
            }
        algo_onebit_allreduce(&ob, ptr, out);
        for (int64_t j = 0; j < d; j++)
            sum_r[j] += out[j];
    }
    double worst = 0, scale = 0;
    for (int64_t j = 0; j < d; j++) {
        double e = 0;
        for (int i = 0; i < n; i++)
            e += ob.we[(size_t)i * 64 + (size_t)j] / (double)n;
        double want = sum_m[j] - e - ob.se[j];
        worst = fmax(worst, fabs(sum_r[j] - want));
        scale = fmax(scale, fabs(sum_m[j]));
    }
    cr_assert_leq(worst, 1e-4 * fmax(1.0, scale), "gap %g", worst);
    /* the errors are not trivially 0: compression really happened */
    cr_assert_gt(fabs(ob.we[0]) + fabs(ob.se[0]) + fabs(ob.se[5]), 0.0);
    gsl_rng_free(r);
    algo_onebit_release(&ob);
}

/* Inputs of one magnitude and one sign pattern per chunk shared by all
 * workers compress without loss: the output is the input, errors stay 0. */
Test(onebit, sign_vectors_pass_exactly)
{
    const int n = 2;
    const int64_t d = 16; /* d_pad = 16, chunks of 8 */
    algo_onebit ob;
    cr_assert_eq(algo_onebit_init(&ob, n, d, 1, NULL), 0);
    float a[16], out[16];
    for (int j = 0; j < 16; j++)
        a[j] = (j % 3 == 0) ? -0.5f : 0.5f;
    const float *ptr[2] = {a, a};
    for (int t = 0; t < 3; t++) {
        algo_onebit_allreduce(&ob, ptr, out);
        for (int j = 0; j < 16; j++) {
            cr_assert_float_eq(out[j], a[j], 1e-7f, "j = %d", j);
            cr_assert_float_eq(ob.we[j], 0.0f, 1e-7f);
            cr_assert_float_eq(ob.se[j], 0.0f, 1e-7f);
        }
    }
    /* opposite workers cancel: the mean is 0, sgn(0) = +1 with scale 0 */
    float b[16];
    for (int j = 0; j < 16; j++)
        b[j] = -a[j];
    const float *ptr2[2] = {a, b};
    algo_onebit_release(&ob);
    cr_assert_eq(algo_onebit_init(&ob, n, d, 0, NULL), 0);
    algo_onebit_allreduce(&ob, ptr2, out);
    for (int j = 0; j < 16; j++)
        cr_assert_eq(out[j], 0.0f);
    algo_onebit_release(&ob);
}
