/* Topology benchmark.
 * 1. Build time and peak memory of graph + mixing weights + lambda for
 *    n = 64, 1024, 4096 on ring, exponential and random_regular(4). Each
 *    case runs in a forked child so that its peak is its own: the child
 *    resets the kernel's RSS high-water mark (/proc/self/clear_refs, "5"),
 *    builds, and reports VmHWM - VmRSS(before) (falls back to ru_maxrss).
 * 2. One gossip step X_out = W X_in over 1024 workers with 100k float
 *    parameters each (410 MB in, 410 MB out), in GB/s of streamed bytes
 *    (every term of every row read once, every output written once),
 *    against memcpy's bandwidth (read + write) measured in the same run.
 * Usage: bench_topology [workers [params]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/rng.h"
#include "topology/graph.h"
#include "topology/mixing.h"
#include "topology/props.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A field of /proc/self/status in kB, or -1. */
static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t len = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0 && line[len] == ':') {
            v = strtol(line + len + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static int reset_hwm(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

typedef struct build_result {
    int ok;
    double t_graph, t_weights, t_lambda; /* seconds */
    double peak_mb;
    double lambda;
    long long edges;
    int method;
    char msg[256];
} build_result;

static void build_case(const char *spec, int n, build_result *r)
{
    memset(r, 0, sizeof *r);
    long rss0 = status_kb("VmRSS");
    int hwm_ok = reset_hwm() == 0;
    gsl_rng *rng = sim_rng_create(1, SIM_STREAM_TOPOLOGY, 0);
    sim_err err = {0};
    topo_graph g;
    double t0 = now_s();
    if (topo_graph_build(&g, spec, n, rng, &err)) {
        snprintf(r->msg, sizeof r->msg, "%.200s", err.msg);
        gsl_rng_free(rng);
        return;
    }
    double t1 = now_s();
    topo_mixing *m = topo_mixing_create(&g, TOPO_WEIGHTS_METROPOLIS, &err);
    double t2 = now_s();
    topo_lambda_method used = TOPO_LAMBDA_AUTO;
    if (!m || topo_mixing_lambda_ex(m, TOPO_LAMBDA_AUTO, &r->lambda, &used, &err)) {
        snprintf(r->msg, sizeof r->msg, "%.200s", err.msg);
    } else {
        r->ok = 1;
    }
    double t3 = now_s();
    r->t_graph = t1 - t0;
    r->t_weights = t2 - t1;
    r->t_lambda = t3 - t2;
    r->edges = (long long)g.n_edges;
    r->method = (int)used;
    long hwm = status_kb("VmHWM");
    if (hwm_ok && hwm >= 0 && rss0 >= 0) {
        r->peak_mb = (double)(hwm - rss0) / 1024.0;
    } else {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        r->peak_mb = (double)(ru.ru_maxrss - (rss0 > 0 ? rss0 : 0)) / 1024.0;
    }
    topo_mixing_destroy(m);
    topo_graph_release(&g);
    gsl_rng_free(rng);
}

/* Runs build_case in a child process; the result comes back through a pipe. */
static void build_case_forked(const char *spec, int n, build_result *r)
{
    int fd[2];
    memset(r, 0, sizeof *r);
    if (pipe(fd) != 0) {
        build_case(spec, n, r);
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        build_result c;
        build_case(spec, n, &c);
        ssize_t w = write(fd[1], &c, sizeof c);
        _exit(w == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fd[1]);
    if (pid < 0 || read(fd[0], r, sizeof *r) != (ssize_t)sizeof *r)
        snprintf(r->msg, sizeof r->msg, "child failed");
    close(fd[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

static double bench_memcpy(float *dst, const float *src, size_t bytes)
{
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_s();
        memcpy(dst, src, bytes);
        double t = now_s() - t0;
        best = t < best ? t : best;
    }
    return 2.0 * (double)bytes / best / 1e9;
}

static void bench_gossip(const char *spec, int n, int64_t d, float **xin, float **xout,
                         double memcpy_gbs, int reps)
{
    gsl_rng *rng = sim_rng_create(1, SIM_STREAM_TOPOLOGY, 0);
    sim_err err = {0};
    topo_graph g;
    if (topo_graph_build(&g, spec, n, rng, &err)) {
        printf("  %s: %s\n", spec, err.msg);
        gsl_rng_free(rng);
        return;
    }
    topo_mixing *m = topo_mixing_create(&g, TOPO_WEIGHTS_METROPOLIS, &err);
    if (!m) {
        printf("  %s: %s\n", spec, err.msg);
        topo_graph_release(&g);
        gsl_rng_free(rng);
        return;
    }
    const topo_wmat *W = topo_mixing_at(m, 0);
    double best = 1e30;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now_s();
        topo_mixing_apply(W, (const float *const *)xin, xout, d);
        double t = now_s() - t0;
        best = t < best ? t : best;
    }
    double bytes = (double)(W->nnz + n) * (double)d * sizeof(float);
    double gbs = bytes / best / 1e9;
    printf("  %-18s %5.2f terms/row  step %7.3f s  %6.2f GB/s streamed  (%.0f%% of memcpy)\n", spec,
           (double)W->nnz / n, best, gbs, 100.0 * gbs / memcpy_gbs);
    topo_mixing_destroy(m);
    topo_graph_release(&g);
    gsl_rng_free(rng);
}

int main(int argc, char **argv)
{
    sim_err_install_library_handlers();
    int workers = argc > 1 ? atoi(argv[1]) : 1024;
    int64_t d = argc > 2 ? atoll(argv[2]) : 100000;
    if (workers < 2 || d < 1) {
        fprintf(stderr, "usage: bench_topology [workers >= 2 [params >= 1]]\n");
        return 2;
    }

    printf("graph + Metropolis weights + lambda (each case in a fresh process; peak = extra RSS)\n");
    printf("  %-18s %5s %8s %10s %9s %9s %9s %9s %8s\n", "graph", "n", "edges", "lambda", "method",
           "graph ms", "W ms", "lambda ms", "peak MB");
    const char *specs[] = {"ring", "exponential", "random_regular(4)"};
    int sizes[] = {64, 1024, 4096};
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 3; k++) {
            build_result r;
            build_case_forked(specs[s], sizes[k], &r);
            if (!r.ok) {
                printf("  %-18s %5d  failed: %s\n", specs[s], sizes[k], r.msg);
                continue;
            }
            printf("  %-18s %5d %8lld %10.7f %9s %9.2f %9.2f %9.2f %8.1f\n", specs[s], sizes[k],
                   r.edges, r.lambda, topo_lambda_method_name((topo_lambda_method)r.method),
                   1e3 * r.t_graph, 1e3 * r.t_weights, 1e3 * r.t_lambda, r.peak_mb);
        }

    size_t per = (size_t)d, total = per * (size_t)workers;
    float *in = malloc(sizeof *in * total), *out = malloc(sizeof *out * total);
    float **xin = malloc(sizeof *xin * (size_t)workers), **xout = malloc(sizeof *xout * (size_t)workers);
    if (!in || !out || !xin || !xout) {
        fprintf(stderr, "bench_topology: out of memory for %d x %lld floats\n", workers, (long long)d);
        return 1;
    }
    for (size_t k = 0; k < total; k++) {
        in[k] = (float)(k % 1000) * 1e-3f;
        out[k] = 0.0f;
    }
    for (int i = 0; i < workers; i++) {
        xin[i] = in + (size_t)i * per;
        xout[i] = out + (size_t)i * per;
    }
    double mc = bench_memcpy(out, in, sizeof *in * total);
    printf("\ngossip step X_out = W X_in: %d workers x %lld floats (%.0f MB per side)\n", workers,
           (long long)d, 4.0 * (double)total / 1e6);
    printf("  memcpy: %.2f GB/s (read + write)\n", mc);
    bench_gossip("ring", workers, d, xin, xout, mc, 3);
    bench_gossip("random_regular(4)", workers, d, xin, xout, mc, 3);
    bench_gossip("exponential", workers, d, xin, xout, mc, 2);
    free(in);
    free(out);
    free(xin);
    free(xout);
    return 0;
}
