/* Gradient throughput of every model on random data of the shapes the
 * quality experiments use (Fashion-MNIST: dim 784 = 1 x 28 x 28, 10
 * classes; text: context 8, vocabulary 96), beside the raw cblas_sgemm rate
 * of the same machine measured in the same run. Single-threaded OpenBLAS,
 * as the simulator runs one thread per process. GFLOP/s uses the model's
 * nominal flops_per_sample (3 x forward, a multiply-add = 2 FLOPs). Also
 * the cost of the per-sample gradient statistics (wl_model_batch_stats)
 * relative to one loss_grad call. Then, when Debian's python3-torch is
 * installed, PyTorch's figure for the same architectures and batches
 * (bench/torch_grad.py, one thread) beside dtsim's, with the ratio: the
 * script runs under $DTSIM_PYTHON when set, else /usr/bin/python3 (Debian's
 * interpreter, which sees python3-torch; a pyenv python3 first on PATH
 * does not), else python3. Run from the source root (meson's benchmark
 * workdir). Every figure is the best round of ~2 ms calls over 0.5 s (the
 * mean beside it), on both sides and for the sgemm references. About 20 s
 * in all. The BLAS kernel is pinned as the simulator
 * pins it (wl_blas_pin, the first thing main does), so the figures are
 * those of the kernel the simulator's gradients run on, and the kernel is
 * printed with them. With DTSIM_BENCH_CPU set, dtsim's figures (not
 * PyTorch's) are per second of this process's CPU time instead of wall
 * time: steadier on a shared machine, where the wall clock also counts the
 * time spent waiting for a core. */
#include <cblas.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workloads/blas.h"
#include "workloads/model.h"

void openblas_set_num_threads(int);

#define MIN_SECONDS 0.5

/* Wall time, or this process's CPU time when DTSIM_BENCH_CPU is set (a
 * steadier figure on a shared machine: time spent waiting for a core is
 * not counted). */
static double now(void)
{
    static int cpu = -1;
    if (cpu < 0)
        cpu = getenv("DTSIM_BENCH_CPU") != NULL;
    struct timespec ts;
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double sink; /* keeps results observable */

/* Best-of-rounds timing: rounds of `calls` calls (as many as take about
 * ROUND_SECONDS, found from the first call) until MIN_SECONDS in all; the
 * figure is the best round's time per call, the mean beside it. On a
 * shared virtual machine whose speed drifts within a second, the best
 * round is the steadier estimate of what the code costs, and the sgemm
 * references are timed the same way, so the shares compare like with
 * like. */
#define ROUND_SECONDS 0.002

typedef struct timing {
    int64_t calls;      /* per round */
    int64_t total;      /* calls timed, after the warm-up call */
    double t0, t_round; /* start of the timed rounds, of this round */
    double best, mean;  /* seconds per call */
} timing;

static void timing_start(timing *tm)
{
    tm->calls = 1;
    tm->total = -1; /* the first call is a warm-up that sizes the rounds */
    tm->best = 1e30;
    tm->mean = 0;
    tm->t0 = tm->t_round = now();
}

/* Ends a round of tm->calls calls; returns whether to run another. */
static int timing_round(timing *tm)
{
    double t = now(), per = (t - tm->t_round) / (double)tm->calls;
    if (tm->total < 0) {
        double c = ROUND_SECONDS / (per > 1e-9 ? per : 1e-9);
        tm->calls = c < 1 ? 1 : (int64_t)c;
        tm->total = 0;
        tm->t0 = tm->t_round = now();
        return 1;
    }
    if (per < tm->best)
        tm->best = per;
    tm->total += tm->calls;
    tm->mean = (t - tm->t0) / (double)tm->total;
    if (t - tm->t0 >= MIN_SECONDS)
        return 0;
    tm->t_round = now();
    return 1;
}

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

/* Returns GFLOP/s of loss_grad (and prints the line); *sps_out (may be
 * NULL) gets samples/s. */
static double bench_model(const char *spec, int64_t batch, int stats, gsl_rng *r,
                          double *sps_out)
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
    timing tm;
    timing_start(&tm);
    do {
        for (int64_t k = 0; k < tm.calls; k++) {
            if (stats) {
                wl_batch_stats st;
                wl_model_batch_stats(m, p, x, y, batch, &st, ws);
                sink += st.v_norm;
            } else {
                sink += m->vt->loss_grad(m, p, x, y, batch, g, ws);
            }
        }
    } while (timing_round(&tm));
    double sps = (double)batch / tm.best, mean_sps = (double)batch / tm.mean;
    double gf = sps * m->flops_per_sample * 1e-9;
    if (sps_out)
        *sps_out = sps;
    printf("  %-16s batch %4lld  %10.0f samples/s  %7.2f GFLOP/s  (%8.1f us/call; mean %10.0f "
           "samples/s)\n",
           stats ? "  batch_stats" : spec, (long long)batch, sps, gf, 1e6 * tm.best, mean_sps);
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
    timing tm;
    timing_start(&tm);
    do {
        for (int64_t k = 0; k < tm.calls; k++) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mm, nn, kk, 1.0f, a, kk, b,
                        nn, 0.0f, c, nn);
            sink += c[0];
        }
    } while (timing_round(&tm));
    double flops = 2.0 * mm * nn * kk;
    double gf = flops / tm.best * 1e-9;
    printf("  sgemm (%d x %d) * (%d x %d)  %7.2f GFLOP/s  (%.1f us/call; mean %.2f GFLOP/s)\n", mm,
           kk, kk, nn, gf, 1e6 * tm.best, flops / tm.mean * 1e-9);
    free(a);
    free(b);
    free(c);
    return gf;
}

#define N_SPECS 7
static const char *const specs[N_SPECS] = {"linreg",        "logreg", "softmax", "mlp(256)",
                                           "mlp(256, 128)", "cnn",    "charlm"};
static const int64_t batches[2] = {32, 128};

/* PyTorch's samples/s for the same models and batches (torch_grad.py),
 * printed beside dtsim's (ours[spec][batch]) with the ratio. */
static void compare_torch(double ours[N_SPECS][2])
{
    const char *py = getenv("DTSIM_PYTHON");
    if (!py)
        py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s bench/torch_grad.py %.1f 2>&1", py, MIN_SECONDS);
    FILE *p = popen(cmd, "r");
    if (!p) {
        printf("PyTorch comparison: cannot run %s\n", cmd);
        return;
    }
    printf("against PyTorch (bench/torch_grad.py; samples/s of loss and gradient, one thread;\n"
           "  ratio > 1: dtsim faster):\n");
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, p)) {
        if (line[0] == '#') {
            printf("  %s", line + 2);
            continue;
        }
        char name[64];
        long long batch;
        double theirs;
        if (sscanf(line, "%63[^\t]\t%lld\t%lf", name, &batch, &theirs) != 3) {
            printf("  (torch_grad.py: %s", line);
            continue;
        }
        for (int s = 0; s < N_SPECS; s++)
            for (int i = 0; i < 2; i++)
                if (strcmp(name, specs[s]) == 0 && batch == batches[i] && theirs > 0) {
                    printf("  %-16s batch %4lld  dtsim %10.0f  PyTorch %10.0f  ratio %5.2f\n",
                           name, batch, ours[s][i], theirs, ours[s][i] / theirs);
                    n++;
                }
    }
    pclose(p);
    if (n == 0)
        printf("  no PyTorch figures (install python3-torch; DTSIM_PYTHON names the "
               "interpreter)\n");
}

/* bench_grad [MODEL]: MODEL (e.g. charlm) limits the figures to that model
 * (for profiling). */
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    wl_blas_pin(argv); /* re-executes once with the simulator's kernel */
    openblas_set_num_threads(1);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 1);
    printf("bench_grad: OpenBLAS single-threaded (openblas_set_num_threads(1)); random data; "
           ">= %.1f s per figure%s\n",
           MIN_SECONDS, getenv("DTSIM_BENCH_CPU") ? " of process CPU time (DTSIM_BENCH_CPU)" : "");
    char blas[128];
    wl_blas_describe(blas, sizeof blas);
    printf("BLAS: %s\n", blas);
    printf("reference cblas_sgemm in the same run:\n");
    double ref = bench_sgemm(128, 256, 784, r);
    double big = bench_sgemm(512, 512, 512, r);
    printf("loss_grad (GFLOP/s = samples/s x flops_per_sample; the nominal 3x forward counts\n"
           "  an input gradient that the first layer does not need, so the arithmetic done\n"
           "  is 2/3 of it for one-layer models):\n");
    double gflops[N_SPECS][2] = {{0}}, ours[N_SPECS][2] = {{0}};
    for (int s = 0; s < N_SPECS; s++)
        for (int i = 0; i < 2 && (!only || strcmp(only, specs[s]) == 0); i++)
            gflops[s][i] = bench_model(specs[s], batches[i], 0, r, &ours[s][i]);
    printf("per-sample gradient statistics (wl_model_batch_stats; cnn: generic per-sample "
           "loop;\n  GFLOP/s in units of one training pass over the batch):\n");
    static const char *const stat_specs[] = {"softmax", "mlp(256)", "cnn", "charlm"};
    for (size_t s = 0; s < sizeof stat_specs / sizeof stat_specs[0]; s++) {
        if (only && strcmp(only, stat_specs[s]) != 0)
            continue;
        printf("  %s\n", stat_specs[s]);
        bench_model(stat_specs[s], 128, 1, r, NULL);
    }
    printf("nominal GFLOP/s against the sgemm references of this run (batch 32 / 128):\n");
    for (int s = 0; s < N_SPECS; s++) {
        const double *gf = gflops[s];
        if (strncmp(specs[s], "mlp", 3) != 0 && strcmp(specs[s], "cnn") != 0 &&
            strcmp(specs[s], "charlm") != 0)
            continue;
        if (gf[0] > 0)
            printf("  %-16s %3.0f%% / %3.0f%% of sgemm (128x784)*(784x256), %3.0f%% / %3.0f%% "
                   "of sgemm 512^3\n",
                   specs[s], 100 * gf[0] / ref, 100 * gf[1] / ref, 100 * gf[0] / big,
                   100 * gf[1] / big);
    }
    if (!only)
        compare_torch(ours);
    gsl_rng_free(r);
    return sink == 12345.678 ? 2 : 0;
}
