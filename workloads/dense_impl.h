/* Private: dense-layer kernels and the softmax cross-entropy head shared by
 * the models that end in one (softmax, mlp, cnn, charlm). Row-major float
 * arrays through CBLAS; a dense layer's parameters are W (nout x nin) then
 * its nout biases. Nothing here allocates, so the kernels can serve the
 * gradient hot path. */
#ifndef DTSIM_WL_DENSE_IMPL_H
#define DTSIM_WL_DENSE_IMPL_H

#include <stdint.h>

#include "workloads/model.h"

/* out (b x nout) = in (b x nin) W^T + bias: the bias rows are copied into
 * out, then one sgemm adds the product. */
void wl_dense_forward(const float *w, int nin, int nout, const float *in, int64_t b,
                      float *out);

/* din (b x nin) = delta (b x nout) W: the gradient reaching the input. */
void wl_dense_backward(const float *delta, const float *w, int nin, int nout, int64_t b,
                       float *din);

/* gw (nout x nin) = delta^T in, then its biases = wl_dense_bias_grad. */
void wl_dense_grad(const float *delta, const float *in, int nin, int nout, int64_t b,
                   float *gw);

/* gb[k] = sum over the b rows of delta[i][k] (n columns), summed in double. */
void wl_dense_bias_grad(const float *delta, int64_t b, int n, float *gb);

/* gb[k] += (float) the same double sum (a later chunk of the rows). */
void wl_dense_bias_grad_add(const float *delta, int64_t b, int n, float *gb);

/* One sample's share of a dense layer's batch statistics (see
 * wl_stats_finish): ds its delta (nout, scaled by 1/nb), xs its input (nin),
 * ts = G xs + g_b (nout). Adds nb^2 ||ds||^2 (||xs||^2 + 1) to *sq and
 * nb ds.ts to *q. */
void wl_dense_sample_stats(const float *ds, const float *xs, const float *ts, int nin,
                           int nout, double nb, double *sq, double *q);

/* Row z (c logits): returns its cross-entropy against label yi (an
 * out-of-range label scores against the maximum). *argmax (if not NULL)
 * gets the predicted class, ties to the lower class. */
double wl_softmax_row_loss(const float *z, int c, int yi, int *argmax);

/* The loss head of a training step over b rows of c logits with labels y:
 * adds each row's cross-entropy to *loss, in row order, and replaces the
 * row by its logit gradient (p - e_y) * invb. */
void wl_softmax_xent_grad(float *z, int64_t b, int c, const float *y, float invb,
                          double *loss);

/* Computes the logits (b x m->classes) of b samples into the workspace ws
 * and returns where they are. */
typedef float *(*wl_logits_fn)(const wl_model *m, const float *params, const float *x,
                               int64_t b, float *ws);

/* evaluate() of a softmax-headed model: mean cross-entropy and accuracy over
 * n samples taken step at a time (step <= the workspace's batch); NANs when
 * n or step is not positive. */
wl_eval wl_softmax_evaluate(const wl_model *m, const float *params, const float *x,
                            const float *y, int64_t n, float *ws, int64_t step,
                            wl_logits_fn logits);

#endif
