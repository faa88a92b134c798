/* The 1-bit compressed all-reduce (see onebit.h). Norms in double, values
 * in float; workers and chunks in index order, so results are
 * deterministic. */
#include "algorithms/compress/onebit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t algo_onebit_padded(int n, int64_t d)
{
    int64_t unit = 8 * (int64_t)n;
    return (d + unit - 1) / unit * unit;
}

double algo_onebit_phase_bytes(int n, int64_t d_wire)
{
    return (double)(algo_onebit_padded(n, d_wire) / (8 * (int64_t)n)) + 4.0;
}

int algo_onebit_init(algo_onebit *ob, int n, int64_t d, int error_feedback, sim_err *err)
{
    memset(ob, 0, sizeof *ob);
    ob->n = n;
    ob->d = d;
    ob->d_pad = algo_onebit_padded(n, d);
    ob->chunk = ob->d_pad / n;
    ob->error_feedback = error_feedback;
    size_t dp = (size_t)ob->d_pad;
    ob->we = calloc((size_t)n * dp, sizeof *ob->we);
    ob->se = calloc(dp, sizeof *ob->se);
    ob->q = calloc((size_t)n * dp, sizeof *ob->q);
    ob->a = calloc(dp, sizeof *ob->a);
    if (!ob->we || !ob->se || !ob->q || !ob->a) {
        algo_onebit_release(ob);
        return sim_err_set(err, SIM_ENOMEM, "1-bit all-reduce: out of memory");
    }
    return 0;
}

void algo_onebit_release(algo_onebit *ob)
{
    if (!ob)
        return;
    free(ob->we);
    free(ob->se);
    free(ob->q);
    free(ob->a);
    memset(ob, 0, sizeof *ob);
}

/* v <- s sgn(v) on len floats, s = ||v|| / sqrt(len); err (may be NULL)
 * <- v - s sgn(v). */
static void sign_compress(float *v, float *e, int64_t len)
{
    double nrm = 0;
    for (int64_t j = 0; j < len; j++)
        nrm += (double)v[j] * (double)v[j];
    const float s = (float)(sqrt(nrm) / sqrt((double)len));
    for (int64_t j = 0; j < len; j++) {
        float q = v[j] >= 0.0f ? s : -s;
        if (e)
            e[j] = v[j] - q;
        v[j] = q;
    }
}

void algo_onebit_allreduce(algo_onebit *ob, const float *const *in, float *out)
{
    const int n = ob->n;
    const int64_t d = ob->d, dp = ob->d_pad, ch = ob->chunk;
    const int ef = ob->error_feedback;
    /* worker side: q_i = C(m_i + e_i) */
    for (int i = 0; i < n; i++) {
        float *q = ob->q + (size_t)i * (size_t)dp, *e = ob->we + (size_t)i * (size_t)dp;
        memcpy(q, in[i], (size_t)d * sizeof *q);
        memset(q + d, 0, (size_t)(dp - d) * sizeof *q);
        if (ef)
            for (int64_t j = 0; j < dp; j++)
                q[j] += e[j];
        sign_compress(q, ef ? e : NULL, dp);
    }
    /* server side, chunk by chunk: a_j = mean_i q_i + e_j^s, then r_j */
    const float inv = 1.0f / (float)n;
    float *a = ob->a;
    memset(a, 0, (size_t)dp * sizeof *a);
    for (int i = 0; i < n; i++) {
        const float *q = ob->q + (size_t)i * (size_t)dp;
        for (int64_t j = 0; j < dp; j++)
            a[j] += q[j];
    }
    for (int64_t j = 0; j < dp; j++) {
        a[j] *= inv;
        if (ef)
            a[j] += ob->se[j];
    }
    for (int c = 0; c < n; c++)
        sign_compress(a + (size_t)c * (size_t)ch, ef ? ob->se + (size_t)c * (size_t)ch : NULL,
                      ch);
    memcpy(out, a, (size_t)d * sizeof *out);
}
