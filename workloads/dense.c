/* Dense-layer kernels and the softmax cross-entropy head (see
 * dense_impl.h). The floating-point order of every loop is part of the
 * models' results: a run must repeat bit for bit, so these keep the order
 * the models were written with (bias rows first, sums in double in row
 * order). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "workloads/dense_impl.h"

void wl_dense_forward(const float *w, int nin, int nout, const float *in, int64_t b,
                      float *out)
{
    const float *bias = w + (int64_t)nout * nin;
    for (int64_t i = 0; i < b; i++)
        memcpy(out + i * nout, bias, (size_t)nout * sizeof *out);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, nout, nin, 1.0f, in, nin, w,
                nin, 1.0f, out, nout);
}

void wl_dense_backward(const float *delta, const float *w, int nin, int nout, int64_t b,
                       float *din)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)b, nin, nout, 1.0f, delta,
                nout, w, nin, 0.0f, din, nin);
}

void wl_dense_grad(const float *delta, const float *in, int nin, int nout, int64_t b,
                   float *gw)
{
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nout, nin, (int)b, 1.0f, delta, nout,
                in, nin, 0.0f, gw, nin);
    wl_dense_bias_grad(delta, b, nout, gw + (int64_t)nout * nin);
}

/* Columns summed at once: the rows are read in memory order into one
 * double accumulator per column, each column still summed from row 0 up
 * (the bits of a column-at-a-time loop, without its strided reads). */
#define BIAS_CHUNK 256

static void bias_sums(const float *delta, int64_t b, int n, float *gb, int add)
{
    double acc[BIAS_CHUNK];
    for (int k0 = 0; k0 < n; k0 += BIAS_CHUNK) {
        const int w = n - k0 < BIAS_CHUNK ? n - k0 : BIAS_CHUNK;
        for (int k = 0; k < w; k++)
            acc[k] = 0;
        for (int64_t i = 0; i < b; i++) {
            const float *row = delta + i * n + k0;
            for (int k = 0; k < w; k++)
                acc[k] += row[k];
        }
        for (int k = 0; k < w; k++)
            gb[k0 + k] = add ? gb[k0 + k] + (float)acc[k] : (float)acc[k];
    }
}

void wl_dense_bias_grad(const float *delta, int64_t b, int n, float *gb)
{
    bias_sums(delta, b, n, gb, 0);
}

void wl_dense_bias_grad_add(const float *delta, int64_t b, int n, float *gb)
{
    bias_sums(delta, b, n, gb, 1);
}

void wl_dense_sample_stats(const float *ds, const float *xs, const float *ts, int nin,
                           int nout, double nb, double *sq, double *q)
{
    double xx = 1, dd = 0, dt = 0;
    for (int j = 0; j < nin; j++)
        xx += (double)xs[j] * xs[j];
    for (int k = 0; k < nout; k++) {
        dd += (double)ds[k] * ds[k];
        dt += (double)ds[k] * ts[k];
    }
    *sq += nb * nb * dd * xx;
    *q += nb * dt;
}

double wl_softmax_row_loss(float *z, int c, int yi, int probs, int *argmax)
{
    int am = 0;
    float mx = z[0];
    for (int k = 1; k < c; k++)
        if (z[k] > mx) {
            mx = z[k];
            am = k;
        }
    double s = 0;
    float zy = (yi >= 0 && yi < c) ? z[yi] : mx;
    for (int k = 0; k < c; k++) {
        float e = expf(z[k] - mx);
        s += e;
        if (probs)
            z[k] = e;
    }
    if (probs) {
        float inv = (float)(1.0 / s);
        for (int k = 0; k < c; k++)
            z[k] *= inv;
    }
    if (argmax)
        *argmax = am;
    return log(s) - ((double)zy - (double)mx);
}

void wl_softmax_xent_grad(float *z, int64_t b, int c, const float *y, float invb,
                          double *loss)
{
    for (int64_t i = 0; i < b; i++) {
        float *zi = z + i * c;
        int yi = (int)y[i];
        *loss += wl_softmax_row_loss(zi, c, yi, 1, NULL);
        if (yi >= 0 && yi < c)
            zi[yi] -= 1.0f;
        for (int k = 0; k < c; k++)
            zi[k] *= invb;
    }
}

wl_eval wl_softmax_evaluate(const wl_model *m, const float *params, const float *x,
                            const float *y, int64_t n, float *ws, int64_t step,
                            wl_logits_fn logits)
{
    wl_eval ev = {NAN, NAN};
    if (n <= 0 || step <= 0)
        return ev;
    const int c = m->classes;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t i0 = 0; i0 < n; i0 += step) {
        const int64_t b = n - i0 < step ? n - i0 : step;
        float *z = logits(m, params, x + i0 * m->dim, b, ws);
        for (int64_t i = 0; i < b; i++) {
            int yi = (int)y[i0 + i], am;
            loss += wl_softmax_row_loss(z + i * c, c, yi, 0, &am);
            correct += am == yi;
        }
    }
    ev.loss = loss / (double)n;
    ev.accuracy = (double)correct / (double)n;
    return ev;
}
