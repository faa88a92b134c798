/* Gradient throughput of every model on random data of the shapes the
 * quality experiments use (Fashion-MNIST: dim 784 = 1 x 28 x 28, 10
 * classes; text: context 8, vocabulary 96), beside the raw cblas_sgemm rate
 * of the same machine measured in the same run. Single-threaded OpenBLAS,
 * as the simulator runs one thread per process. GFLOP/s uses the model's
 * nominal flops_per_sample (3 x forward, a multiply-add = 2 FLOPs). Also
 * the cost of the per-sample gradient statistics (wl_model_batch_stats)
 * relative to one loss_grad call. About 11 s in all. */
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

/* A dataset shell of the given kind: the models only read its shape. */
static wl_dataset shell(const char *spec)
{
    wl_dataset ds;
    memset(&ds, 0, sizeof ds);
    if (strncmp(spec, "charlm", 6) == 0) {
        snprintf(ds.name, sizeof ds.name, "random text(8), 96 symbols");
        ds.dim = ds.context = 8;
        ds.classes = 96;
    } else {
        snprintf(ds.name, sizeof ds.name, "random 1x28x28");
        ds.dim = 784;
        ds.channels = 1;
        ds.height = ds.width = 28;
        ds.classes = strcmp(spec, "linreg") == 0 ? 0 : strcmp(spec, "logreg") == 0 ? 2 : 10;
    }
    return ds;
}

/* Returns GFLOP/s of loss_grad (and prints the line). */
static double bench_model(const char *spec, int64_t batch, int stats, gsl_rng *r)
{
    wl_dataset ds = shell(spec);
    sim_err err = {0};
    wl_model *m = wl_model_create(spec, &ds, &err);
    if (!m) {
        fprintf(stderr, "bench_grad: %s\n", err.msg);
        exit(1);
    }
    const int dim = ds.dim;
    float *x = malloc(sizeof(float) * (size_t)batch * dim);
    float *y = malloc(sizeof(float) * (size_t)batch);
    float *p = malloc(sizeof(float) * (size_t)m->n_params);
    float *g = malloc(sizeof(float) * (size_t)m->n_params);
    size_t wsf = stats ? wl_model_stats_workspace_floats(m, batch)
                       : wl_model_workspace_floats(m, batch);
    float *ws = malloc(sizeof(float) * wsf);
    for (int64_t i = 0; i < batch * dim; i++)
        x[i] = ds.context ? (float)gsl_rng_uniform_int(r, (unsigned long)ds.classes)
                          : (float)gsl_rng_uniform(r);
    for (int64_t i = 0; i < batch; i++)
        y[i] = ds.classes ? (float)gsl_rng_uniform_int(r, (unsigned long)ds.classes)
                          : (float)gsl_rng_uniform(r);
    m->vt->init(m, p, r);
    int64_t iters = 0;
    double t0 = now(), t;
    do {
        for (int k = 0; k < 10; k++) {
            if (stats) {
                wl_batch_stats st;
                wl_model_batch_stats(m, p, x, y, batch, &st, ws);
                sink += st.v_norm;
            } else {
                sink += m->vt->loss_grad(m, p, x, y, batch, g, ws);
            }
        }
        iters += 10;
        t = now() - t0;
    } while (t < MIN_SECONDS);
    double sps = (double)(iters * batch) / t;
    double gf = sps * m->flops_per_sample * 1e-9;
    printf("  %-16s batch %4lld  %10.0f samples/s  %7.2f GFLOP/s  (%8.1f us/call)\n",
           stats ? "  batch_stats" : spec, (long long)batch, sps, gf,
           1e6 * t / (double)iters);
    free(x);
    free(y);
    free(p);
    free(g);
    free(ws);
    wl_model_destroy(m);
    return gf;
}

static double bench_sgemm(int mm, int nn, int kk, gsl_rng *r)
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
    return gf;
}

int main(void)
{
    openblas_set_num_threads(1);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 1);
    printf("bench_grad: OpenBLAS single-threaded (openblas_set_num_threads(1)); random data; "
           ">= %.1f s per figure\n",
           MIN_SECONDS);
    printf("reference cblas_sgemm in the same run:\n");
    double ref = bench_sgemm(128, 256, 784, r);
    double big = bench_sgemm(512, 512, 512, r);
    printf("loss_grad (GFLOP/s = samples/s x flops_per_sample; the nominal 3x forward counts\n"
           "  an input gradient that the first layer does not need, so the arithmetic done\n"
           "  is 2/3 of it for one-layer models):\n");
    static const char *const specs[] = {"linreg", "logreg", "softmax", "mlp(256)",
                                        "mlp(256, 128)", "cnn", "charlm"};
    const int64_t batches[2] = {32, 128};
    double mlp128 = 0;
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++)
        for (int i = 0; i < 2; i++) {
            double gf = bench_model(specs[s], batches[i], 0, r);
            if (strcmp(specs[s], "mlp(256)") == 0 && batches[i] == 128)
                mlp128 = gf;
        }
    printf("per-sample gradient statistics (wl_model_batch_stats; cnn: generic per-sample "
           "loop;\n  GFLOP/s in units of one training pass over the batch):\n");
    static const char *const stat_specs[] = {"softmax", "mlp(256)", "cnn", "charlm"};
    for (size_t s = 0; s < sizeof stat_specs / sizeof stat_specs[0]; s++) {
        printf("  %s\n", stat_specs[s]);
        bench_model(stat_specs[s], 128, 1, r);
    }
    printf("mlp(256) batch 128: %.2f GFLOP/s = %.0f%% of sgemm (128x784)*(784x256), "
           "%.0f%% of sgemm 512^3 (target >= 50%%)\n",
           mlp128, 100 * mlp128 / ref, 100 * mlp128 / big);
    gsl_rng_free(r);
    return sink == 12345.678 ? 2 : 0;
}
