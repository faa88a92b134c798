/* Gradient throughput of the real models on Fashion-MNIST-shaped random
 * data (dim 784, 10 classes; no file needed), beside the raw cblas_sgemm
 * rate of the same machine measured in the same run. Single-threaded
 * OpenBLAS, as the simulator runs one thread per process. */
#include <cblas.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "workloads/model.h"

void openblas_set_num_threads(int);

#define MIN_SECONDS 0.5

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double sink; /* keeps results observable */

static void bench_model(const char *spec, int classes, int64_t batch, gsl_rng *r)
{
    wl_dataset ds;
    memset(&ds, 0, sizeof ds);
    snprintf(ds.name, sizeof ds.name, "random(784, %d)", classes);
    ds.dim = 784;
    ds.classes = classes;
    sim_err err = {0};
    wl_model *m = wl_model_create(spec, &ds, &err);
    if (!m) {
        fprintf(stderr, "bench_grad: %s\n", err.msg);
        exit(1);
    }
    float *x = malloc(sizeof(float) * (size_t)batch * 784);
    float *y = malloc(sizeof(float) * (size_t)batch);
    float *p = malloc(sizeof(float) * (size_t)m->n_params);
    float *g = malloc(sizeof(float) * (size_t)m->n_params);
    float *ws = malloc(sizeof(float) * wl_model_workspace_floats(m, batch));
    for (int64_t i = 0; i < batch * 784; i++)
        x[i] = (float)gsl_rng_uniform(r);
    for (int64_t i = 0; i < batch; i++)
        y[i] = classes ? (float)gsl_rng_uniform_int(r, (unsigned long)classes)
                       : (float)gsl_rng_uniform(r);
    for (int64_t i = 0; i < m->n_params; i++)
        p[i] = (float)(0.01 * (gsl_rng_uniform(r) - 0.5));
    int64_t iters = 0;
    double t0 = now(), t;
    do {
        for (int k = 0; k < 50; k++)
            sink += m->vt->loss_grad(m, p, x, y, batch, g, ws);
        iters += 50;
        t = now() - t0;
    } while (t < MIN_SECONDS);
    double sps = (double)(iters * batch) / t;
    printf("  %-8s batch %4lld  %12.0f samples/s  %7.2f GFLOP/s  (%.1f us/step)\n", spec,
           (long long)batch, sps, sps * m->flops_per_sample * 1e-9, 1e6 * t / (double)iters);
    free(x);
    free(y);
    free(p);
    free(g);
    free(ws);
    wl_model_destroy(m);
}

static void bench_sgemm(int mm, int nn, int kk, gsl_rng *r)
{
    float *a = malloc(sizeof(float) * (size_t)mm * kk);
    float *b = malloc(sizeof(float) * (size_t)kk * nn);
    float *c = malloc(sizeof(float) * (size_t)mm * nn);
    for (int64_t i = 0; i < (int64_t)mm * kk; i++)
        a[i] = (float)gsl_rng_uniform(r);
    for (int64_t i = 0; i < (int64_t)kk * nn; i++)
        b[i] = (float)gsl_rng_uniform(r);
    int64_t iters = 0;
    double t0 = now(), t;
    do {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mm, nn, kk, 1.0f, a, kk, b, nn,
                    0.0f, c, nn);
        sink += c[0];
        iters++;
        t = now() - t0;
    } while (t < MIN_SECONDS);
    double gf = 2.0 * mm * nn * kk * (double)iters / t * 1e-9;
    printf("  sgemm (%d x %d) * (%d x %d)  %7.2f GFLOP/s  (%.1f us/call)\n", mm, kk, kk, nn, gf,
           1e6 * t / (double)iters);
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    openblas_set_num_threads(1);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 1);
    printf("bench_grad: OpenBLAS single-threaded (openblas_set_num_threads(1)); "
           "random data, dim 784; >= %.1f s per figure\n",
           MIN_SECONDS);
    printf("loss_grad (FLOPs = flops_per_sample x batch: linreg 6d, softmax 6dC; nominal,\n"
           "  a single layer needs no input gradient, so the arithmetic done is ~2/3 of it):\n");
    int64_t batches[2] = {32, 128};
    for (int i = 0; i < 2; i++)
        bench_model("linreg", 0, batches[i], r);
    for (int i = 0; i < 2; i++)
        bench_model("softmax", 10, batches[i], r);
    printf("reference cblas_sgemm in the same run:\n");
    bench_sgemm(128, 256, 784, r);
    bench_sgemm(512, 512, 512, r);
    gsl_rng_free(r);
    return sink == 12345.678 ? 2 : 0;
}
