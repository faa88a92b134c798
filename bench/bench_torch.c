/* The torch(FILE) path against PyTorch's own training loop
 * (docs/benchmarks.md): samples per second of loss and gradient through
 * dtsim's helper (parameters and batches through shared memory, one
 * request for every worker's gradient) and of a plain zero_grad / forward /
 * backward loop on the same module and batch size (bench/torch_own.py, the
 * helper's process set-up), one thread each; and the helper batched across
 * 16 workers (functorch.vmap) against looped, also by CPU time in one
 * process (robust to a loaded machine). Prints a note and nothing
 * else when the interpreter (DTSIM_PYTHON, else /usr/bin/python3) cannot
 * import torch. Run from the source root (meson's benchmark workdir).
 * Usage: bench_torch [SECONDS per figure, default 3 [MODULE: only the rows whose
 * name holds it]] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workloads/model.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bench_case {
    const char *name;
    const char *file;     /* the module, relative to the source root */
    int c, h, w, dim, classes;
    int batch;
} bench_case;

/* Samples/s of n workers' gradients, one request per round; best of 3. */
static double helper_rate(const bench_case *bc, const char *batched, int n, double seconds,
                          int *was_batched)
{
    wl_dataset ds;
    memset(&ds, 0, sizeof ds);
    ds.dim = bc->dim;
    ds.classes = bc->classes;
    ds.channels = bc->c;
    ds.height = bc->h;
    ds.width = bc->w;
    snprintf(ds.name, sizeof ds.name, "random");
    char spec[512];
    snprintf(spec, sizeof spec, "torch(%s)", bc->file);
    wl_model_opts o = {.torch_batched = batched, .seed = 1};
    sim_err err = {0};
    wl_model *m = wl_model_create_opts(spec, &ds, &o, &err);
    if (!m) {
        fprintf(stderr, "bench_torch: %s\n", err.msg);
        return NAN;
    }
    char desc[128] = "";
    wl_model_kernels(m, desc, sizeof desc);
    *was_batched = strstr(desc, "batched") != NULL;
    const int64_t d = m->n_params, b = bc->batch;
    float *p = malloc((size_t)(n * d) * sizeof *p), *g = malloc((size_t)(n * d) * sizeof *g);
    float *x = malloc((size_t)(n * b * bc->dim) * sizeof *x), *y = malloc((size_t)(n * b) * sizeof *y);
    wl_grad_req *rq = calloc((size_t)n, sizeof *rq);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 1);
    for (int i = 0; i < n; i++)
        m->vt->init(m, p + i * d, r);
    for (int64_t i = 0; i < n * b * bc->dim; i++)
        x[i] = (float)(gsl_rng_uniform(r) * 2 - 1);
    for (int64_t i = 0; i < n * b; i++)
        y[i] = (float)gsl_rng_uniform_int(r, (unsigned long)bc->classes);
    for (int i = 0; i < n; i++)
        rq[i] = (wl_grad_req){.worker = i, .params = p + i * d, .x = x + i * b * bc->dim,
                              .y = y + i * b, .b = b, .grad = g + i * d};
    double best = 0;
    int ok = m->vt->loss_grad_many(m, rq, n, &err) == 0; /* warm-up */
    for (int round = 0; ok && round < 3; round++) {
        int64_t k = 0;
        double t0 = now(), el;
        do {
            ok = m->vt->loss_grad_many(m, rq, n, &err) == 0;
            k++;
            el = now() - t0;
        } while (ok && el < seconds / 3);
        best = fmax(best, (double)(k * n * b) / el);
    }
    if (!ok)
        fprintf(stderr, "bench_torch: %s\n", err.msg);
    gsl_rng_free(r);
    free(p);
    free(g);
    free(x);
    free(y);
    free(rq);
    wl_model_destroy(m);
    return ok ? best : NAN;
}

/* bench/torch_own.py: samples per CPU second of PyTorch's own loop and of
 * the helper's looped and batched request of 16 gradients, in one process. */
static void cpu_rates(const bench_case *bc, double seconds, double out[3])
{
    const char *py = getenv("DTSIM_PYTHON");
    if (!py || !*py)
        py = "/usr/bin/python3";
    char cmd[1024], line[256];
    snprintf(cmd, sizeof cmd, "%s bench/torch_own.py %s %d %d %d %d %d 0 %d %.2f 16", py,
             bc->file, bc->c, bc->h, bc->w, bc->dim, bc->classes, bc->batch, seconds);
    out[0] = out[1] = out[2] = NAN;
    FILE *f = popen(cmd, "r");
    if (f && fgets(line, sizeof line, f))
        sscanf(line, "%lf %lf %lf", &out[0], &out[1], &out[2]);
    if (f)
        pclose(f);
}

static int torch_importable(void)
{
    const char *py = getenv("DTSIM_PYTHON");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch, functorch' >/dev/null 2>&1",
             py && *py ? py : "/usr/bin/python3");
    return system(cmd) == 0;
}

int main(int argc, char **argv)
{
    const double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!torch_importable()) {
        printf("# python3-torch is not importable: no torch(FILE) figures\n");
        return 0;
    }
    char tmp[] = "/tmp/bench_torchXXXXXX";
    if (!mkdtemp(tmp))
        return 1;
    char small[600];
    snprintf(small, sizeof small, "%s/mlp_64_32_10.py", tmp);
    FILE *f = fopen(small, "w");
    fputs("import torch.nn as nn\ndef model(shape, classes):\n"
          "    return nn.Sequential(nn.Linear(shape[0], 32), nn.ReLU(), nn.Linear(32, classes))\n",
          f);
    fclose(f);
    const bench_case cases[] = {
        {"mlp 64-32-10", small, 0, 0, 0, 64, 10, 16},
        {"mlp 784-256-10", "experiments/torch/mlp_equal.py", 0, 0, 0, 784, 10, 32},
        {"resnet8 (GroupNorm)", "experiments/torch/resnet8.py", 1, 28, 28, 784, 10, 32},
    };
    double load[3] = {0};
    getloadavg(load, 3);
    printf("torch(FILE) gradients, samples/s, one thread, best of 3 rounds of %.1f s; "
           "load average %.1f %.1f %.1f\n",
           seconds / 3, load[0], load[1], load[2]);
    printf("CPU: samples per CPU second in one process (bench/torch_own.py): PyTorch's own\n"
           "loop; the helper's request of 16 gradients looped and batched (vmap).\n"
           "wall: samples per second through dtsim's helper (shared memory, one round trip\n"
           "per request): 1 gradient a request, 16 looped, 16 batched.\n");
    printf("%-20s %5s | %9s %9s %9s %6s %6s | %9s %9s %9s\n", "module", "batch", "own",
           "looped16", "batch16", "lp/own", "b/l", "wall x1", "looped16", "batch16");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bench_case *bc = &cases[i];
        if (argc > 2 && !strstr(bc->name, argv[2]))
            continue;
        int bat = 0;
        double cpu[3];
        cpu_rates(bc, seconds, cpu);
        double one = helper_rate(bc, "off", 1, seconds, &bat);
        double loop16 = helper_rate(bc, "off", 16, seconds, &bat);
        double bat16 = helper_rate(bc, "on", 16, seconds, &bat);
        printf("%-20s %5d | %9.0f %9.0f %9.0f %6.2f %6.2f | %9.0f %9.0f %9.0f\n", bc->name,
               bc->batch, cpu[0], cpu[1], cpu[2], cpu[1] / cpu[0], cpu[2] / cpu[1], one,
               loop16, bat ? bat16 : NAN);
        fflush(stdout);
    }
    unlink(small);
    rmdir(tmp);
    return 0;
}
