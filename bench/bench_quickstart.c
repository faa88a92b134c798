/* Benchmark: the quick-start experiment end to end (no database), printing
 * wall time, simulated time, events processed and gradients per second.
 * Usage: bench_quickstart [EXPERIMENT.ini] (default experiments/quickstart.ini,
 * relative to the current directory or DTSIM_SOURCE_ROOT). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "config/config.h"
#include "sim/err.h"
#include "experiment/experiment.h"
#include "workloads/blas.h"

int main(int argc, char **argv)
{
    wl_blas_pin(argv); /* re-executes once with the simulator's kernel */
    char path[4096];
    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
    } else {
        const char *root = getenv("DTSIM_SOURCE_ROOT");
        snprintf(path, sizeof path, "%s/experiments/quickstart.ini", root ? root : ".");
    }
    sim_err_install_library_handlers();
    sim_err err = {0};
    cfg_config cfg;
    if (cfg_load(xp_experiment_schema(), path, NULL, 0, &cfg, &err) < 0) {
        fprintf(stderr, "bench_quickstart: %s\n", err.msg);
        return sim_err_exit_status(err.code);
    }
    xp_run_result r;
    if (xp_experiment_run(&cfg, NULL, &r, &err) < 0) {
        fprintf(stderr, "bench_quickstart: %s\n", err.msg);
        cfg_release(&cfg);
        return sim_err_exit_status(err.code);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("experiment        %s (%s, %d workers, %lld parameters computed on)\n", path,
           r.algorithm, r.n_workers, (long long)r.n_params);
    printf("status            %s after %lld iterations, %.2f epochs\n", r.status,
           (long long)r.iterations, r.epochs);
    printf("simulated time    %.3f s\n", r.sim_time);
    printf("wall time         %.3f s (includes loading the data set)\n", r.wall_seconds);
    printf("events            %llu (%.2f M events/s of wall time)\n",
           (unsigned long long)r.events, 1e-6 * (double)r.events / r.wall_seconds);
    printf("gradients         %lld (%.0f gradients/s)\n", (long long)r.gradients,
           (double)r.gradients / r.wall_seconds);
    printf("final             train loss %.4f, test accuracy %.4f\n", r.final_train_loss,
           r.final_test_accuracy);
    printf("peak RSS          %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
    cfg_release(&cfg);
    return 0;
}
