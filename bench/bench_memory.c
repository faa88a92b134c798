/* Benchmark: memory per simulated worker. Each case runs in a child
 * process: it builds the experiment (the runner's xp_experiment_run, no
 * database) for N workers of a method and runs 2 iterations; its peak RSS
 * comes from wait4. The data set is the same in every case, so the
 * difference between two worker counts divided by the difference in
 * workers is the memory of one worker (its model, gradient, batch buffers,
 * workspace, RNG streams and the method's own per-worker state), printed
 * beside the bytes of one model (d floats).
 * Usage: bench_memory [MODEL] [N1 N2 ...]   (default softmax 256 1024 4096). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "experiment/experiment.h"
#include "workloads/blas.h"

void openblas_set_num_threads(int num_threads);

#define MAX_N 8

static const char *const methods[] = {"allreduce_sgd", "dpsgd", "ad_psgd", "local_sgd",
                                      "asgd", NULL};

/* The child: one run; exit 0 on success. d goes to fd. */
static int child(const char *method, const char *model, int n, int fd)
{
    openblas_set_num_threads(1);
    sim_err_install_library_handlers();
    char ini[1024];
    snprintf(ini, sizeof ini,
             "[experiment]\nmax_epochs = 0\nmax_iterations = 2\neval_every = 1000\n"
             "eval_train_samples = 100\n"
             "[workers]\ncount = %d\ncompute = constant(10ms)\n"
             "[network]\ntopology = star\nbandwidth = 10Gbps\nlatency = 5us\n"
             "[topology]\ngraph = ring\n"
             "[algorithm]\nname = %s\nbatch = 32\nlr = 0.05\n"
             "[workload]\nmodel = %s\ndataset = blobs(10, 784, 20000)\n",
             n, method, model);
    cfg_config cfg;
    sim_err err = {0};
    if (cfg_load_string(xp_experiment_schema(), "bench_memory", ini, NULL, 0, &cfg,
                               &err) < 0) {
        fprintf(stderr, "bench_memory: %s\n", err.msg);
        return 1;
    }
    xp_run_result r;
    if (xp_experiment_run(&cfg, NULL, &r, &err) < 0) {
        fprintf(stderr, "bench_memory: %s %d: %s\n", method, n, err.msg);
        return 1;
    }
    long long d = r.n_params;
    if (write(fd, &d, sizeof d) != (ssize_t)sizeof d)
        return 1;
    cfg_release(&cfg);
    return 0;
}

/* Peak RSS in bytes of one case, or -1. */
static double peak_rss(const char *method, const char *model, int n, long long *d)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        _exit(child(method, model, n, fds[1]));
    }
    close(fds[1]);
    int st = 0;
    struct rusage ru;
    if (read(fds[0], d, sizeof *d) != (ssize_t)sizeof *d)
        *d = 0;
    close(fds[0]);
    if (wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    return (double)ru.ru_maxrss * 1024.0;
}

int main(int argc, char **argv)
{
    wl_blas_pin(argv); /* re-executes once with the simulator's kernel */
    const char *model = argc > 1 ? argv[1] : "softmax";
    int ns[MAX_N] = {256, 1024, 4096}, k = 3;
    if (argc > 2) {
        k = 0;
        for (int a = 2; a < argc && k < MAX_N; a++)
            ns[k++] = atoi(argv[a]);
    }
    if (k < 2) {
        fprintf(stderr, "usage: bench_memory [MODEL] N1 N2 [N...]\n");
        return 2;
    }
    printf("bench_memory: %s on blobs(10, 784, 20000), batch 32, 2 iterations; peak RSS "
           "of a fresh process per case (MiB); per worker = difference between the "
           "largest and smallest count\n\n",
           model);
    printf("%-14s", "method");
    for (int i = 0; i < k; i++)
        printf(" %9d", ns[i]);
    printf("   bytes/worker  models (d floats)/worker\n");
    for (int m = 0; methods[m]; m++) {
        double rss[MAX_N];
        long long d = 0;
        printf("%-14s", methods[m]);
        int ok = 1;
        for (int i = 0; i < k; i++) {
            rss[i] = peak_rss(methods[m], model, ns[i], &d);
            ok &= rss[i] > 0;
            printf(" %9.1f", rss[i] / 1048576.0);
            fflush(stdout);
        }
        if (ok && d > 0) {
            double per = (rss[k - 1] - rss[0]) / (double)(ns[k - 1] - ns[0]);
            printf("   %12.0f  %6.2f (d = %lld)", per, per / (4.0 * (double)d), d);
        }
        printf("\n");
    }
    return 0;
}
