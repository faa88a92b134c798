/* Benchmark: one epoch of dpsgd (D-PSGD, AWC) training mlp(256) on
 * Fashion-MNIST with 16 workers on a ring (Metropolis weights 1/3), batch 32
 * per worker, over a 10 Gb/s star network: wall time, samples per second,
 * and the split between gradients (the model's loss_grad, timed by a
 * wrapper around its vtable slot), gossip (the W_t rows, timed inside the
 * gossip driver with algo_gossip_set_profile), the local updates (the
 * method's prepare/finish) and the rest (event engine, network model,
 * sampling and bookkeeping). The environment comes from the runner's
 * builder (experiment/env.h) and the engine is driven here, so that
 * evaluation and data loading stay out of the timed epoch. One OpenBLAS thread, as in the simulator.
 * Each epoch is timed on its own; the best one is reported (the machine is
 * shared) beside the others.
 * The same run is then repeated with each thread count given (default 1
 * and 2): gradients on a thread pool (xp_env_opts.threads), the speed-up
 * of the best epoch over the first count's, and whether every worker's
 * final model is bit for bit the first count's. With more than one thread
 * the gradient share is not split out (the wrapper times one thread).
 * On a shared machine the wall times measure the other jobs too; the CPU
 * seconds of the engine's thread and of all threads are printed as well,
 * and the first count's CPU time over the engine thread's bounds the
 * speed-up an idle machine would give (the engine thread runs its share
 * of every batch of gradients, so it is the critical path when the
 * helpers keep up).
 * Last, the whole run as `dtsim run` makes it (xp_experiment_run, no
 * database): the data set loaded (from the decoded-data cache after the
 * first load, docs/models-and-data.md), the environment built, one epoch
 * with the evaluations at its start and end, at each thread count: wall
 * time, speed-up over the first count, and whether the final metrics are
 * bit for bit the first count's.
 * Usage: bench_dpsgd [MODEL] [WORKERS] [EPOCHS] [THREADS...]
 *        (default mlp(256) 16 3 1 2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algorithms/core/algo.h"
#include "algorithms/core/runner.h"
#include "algorithms/drivers/gossip.h"
#include "config/config.h"
#include "experiment/env.h"
#include "experiment/experiment.h"
#include "workloads/dataset.h"
#include "workloads/blas.h"

void openblas_set_num_threads(int num_threads);

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }

/* The timing wrapper around the model's gradient. */
static const wl_model_vt *real_vt;
static wl_model_vt timed_vt;
static double grad_s;
static int timing_grads; /* the wrapper is installed (one thread) */

static double timed_loss_grad(const wl_model *m, const float *params, const float *x,
                              const float *y, int64_t b, float *grad, float *ws)
{
    double t0 = now();
    double loss = real_vt->loss_grad(m, params, x, y, b, grad, ws);
    grad_s += now() - t0;
    return loss;
}

#define MAX_EPOCHS 16

/* Stops after the last epoch and takes the clocks at every epoch end. */
typedef struct stopper {
    sim_engine *eng;
    int64_t *iterations;
    int64_t per_epoch, stop_at;
    algo_gossip_profile *prof;
    int n_marks;
    double wall[MAX_EPOCHS + 1], grad[MAX_EPOCHS + 1], mix[MAX_EPOCHS + 1],
        upd[MAX_EPOCHS + 1];
    double cpu_main[MAX_EPOCHS + 1], cpu_all[MAX_EPOCHS + 1]; /* CPU seconds */
} stopper;

static void mark(stopper *s)
{
    if (s->n_marks > MAX_EPOCHS)
        return;
    s->wall[s->n_marks] = now();
    s->cpu_main[s->n_marks] = clock_s(CLOCK_THREAD_CPUTIME_ID);
    s->cpu_all[s->n_marks] = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    s->grad[s->n_marks] = grad_s;
    s->mix[s->n_marks] = s->prof ? s->prof->mix_s : 0;
    s->upd[s->n_marks] = s->prof ? s->prof->update_s : 0;
    s->n_marks++;
}

static void on_iteration(void *p)
{
    stopper *s = p;
    if (*s->iterations % s->per_epoch == 0)
        mark(s);
    if (*s->iterations >= s->stop_at)
        sim_engine_stop(s->eng);
}

static int fail(const char *what, const sim_err *err)
{
    fprintf(stderr, "bench_dpsgd: %s: %s\n", what, err->msg);
    return 1;
}

typedef struct outcome {
    double best_wall;  /* seconds of the fastest epoch */
    double cpu_main, cpu_all; /* its CPU seconds: engine thread, all threads */
    uint64_t hash;     /* FNV-1a over every worker's final model bits */
} outcome;

static uint64_t models_hash(const algo_env *env, const algo_gossip *g)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < env->n; i++) { /* in place: env->w[i].x is x_i^0 */
        const unsigned char *b = (const unsigned char *)algo_gossip_x(g, i);
        for (size_t k = 0; k < (size_t)env->d * sizeof(float); k++)
            h = (h ^ b[k]) * 1099511628211ull;
    }
    return h;
}

static int run_once(const cfg_config *cfg, wl_dataset *ds, const char *model_spec, int n,
                    int batch, int epochs, int threads, double t_load, outcome *out)
{
    sim_err err = {0};
    xp_env_opts xo = {.dataset = ds, .threads = threads};
    xp_env *x = xp_env_create(cfg, &xo, &err);
    if (!x)
        return fail("environment", &err);
    wl_model *model = xp_env_model(x);
    real_vt = model->vt;
    timing_grads = threads <= 1;
    grad_s = 0;
    if (timing_grads) {
        timed_vt = *model->vt;
        timed_vt.loss_grad = timed_loss_grad;
        model->vt = &timed_vt;
    }
    algo_env *env = xp_env_algo_env(x);
    sim_engine *eng = xp_env_engine(x);
    int64_t per_epoch = (int64_t)ceil((double)ds->train.n / ((double)n * batch));
    algo_gossip_profile prof = {0};
    stopper st = {.eng = eng, .iterations = &env->iterations, .per_epoch = per_epoch,
                  .stop_at = per_epoch * epochs, .prof = &prof};
    env->run->hooks.iteration = on_iteration;
    env->run->hooks.exp = &st;

    if (xp_env_algo_create(x, &err) < 0)
        return fail("dpsgd", &err);
    const algo_vt *vt = xp_env_vt(x);
    algo_gossip_set_profile(xp_env_state(x), &prof);

    mark(&st);
    if (vt->start(xp_env_state(x), &err) < 0)
        return fail("start", &err);
    sim_engine_run_until(eng, SIM_TIME_MAX);
    algo_env_grad_join(env);
    if (env->error.code)
        return fail("run", &env->error);

    printf("\n== %d thread%s ==\n", threads, threads > 1 ? "s" : "");
    printf("workload          %s on Fashion-MNIST, d = %lld, %d workers on a ring (W = 1/3), "
           "batch %d, dpsgd (AWC)\n",
           model_spec, (long long)env->d, n, batch);
    printf("epoch             %lld iterations, %lld samples (data set load %.2f s, not "
           "timed)\n",
           (long long)per_epoch, (long long)(per_epoch * n * batch), t_load);
    int best = 1;
    for (int e = 1; e < st.n_marks; e++) {
        double w = st.wall[e] - st.wall[e - 1];
        printf("  epoch %d         %.3f s wall\n", e, w);
        if (w < st.wall[best] - st.wall[best - 1])
            best = e;
    }
    double wall = st.wall[best] - st.wall[best - 1];
    double g = st.grad[best] - st.grad[best - 1], mx = st.mix[best] - st.mix[best - 1],
           up = st.upd[best] - st.upd[best - 1];
    double samples = (double)(per_epoch * n * batch);
    printf("best epoch        %.3f s: %.0f samples/s, %.0f gradients/s\n", wall,
           samples / wall, (double)(per_epoch * n) / wall);
    if (timing_grads) {
        double rest = wall - g - mx - up;
        printf("  gradients       %.3f s (%4.1f%%), %.1f us each\n", g, 100 * g / wall,
               1e6 * g / (double)(per_epoch * n));
        printf("  gossip + update %.3f s (%4.1f%%), %.1f us per worker step (W row fused "
               "with the SGD step)\n",
               mx, 100 * mx / wall, 1e6 * mx / (double)(per_epoch * n));
        printf("  other updates   %.3f s (%4.1f%%)\n", up, 100 * up / wall);
        printf("  engine + rest   %.3f s (%4.1f%%): event engine, network model, batch "
               "sampling\n",
               rest, 100 * rest / wall);
    } else {
        printf("  gossip + update %.3f s (%4.1f%%) queued, other updates %.3f s; gradients "
               "and the gossip + update steps on the pool\n",
               mx, 100 * mx / wall, up);
    }
    printf("events            %llu in all, simulated time %.3f s\n",
           (unsigned long long)sim_engine_processed(eng), sim_time_to_s(sim_engine_now(eng)));
    out->best_wall = wall;
    out->cpu_main = st.cpu_main[best] - st.cpu_main[best - 1];
    out->cpu_all = st.cpu_all[best] - st.cpu_all[best - 1];
    printf("CPU               %.3f s on the engine's thread, %.3f s on all threads\n",
           out->cpu_main, out->cpu_all);
    out->hash = models_hash(env, xp_env_state(x));
    model->vt = real_vt;
    xp_env_destroy(x);
    return 0;
}

#define MAX_RUNS 8

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The whole one-epoch run (ini with max_epochs = 1) per thread count. */
static int whole_runs(const char *ini, const int *threads, int runs)
{
    char one[2048];
    const char *at = strstr(ini, "max_epochs = ");
    snprintf(one, sizeof one, "%.*smax_epochs = 1%s", (int)(at - ini), ini,
             strchr(at, '\n'));
    printf("\nwhole run, one epoch (load, build, evaluations at the start and end; "
           "xp_experiment_run)\nthreads  wall      speed-up | CPU engine thread  CPU all  "
           "bound | final metrics\n");
    double w0 = 0, c0 = 0;
    xp_run_result r0 = {0};
    for (int r = 0; r < runs; r++) {
        sim_err err = {0};
        cfg_config cfg;
        if (cfg_load_string(xp_experiment_schema(), "bench_dpsgd", one, NULL, 0, &cfg, &err) < 0)
            return fail("config", &err);
        xp_run_opts o = {.threads = threads[r]};
        xp_run_result res;
        double t0 = now(), m0 = clock_s(CLOCK_THREAD_CPUTIME_ID),
               a0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        int rc = xp_experiment_run(&cfg, &o, &res, &err);
        double w = now() - t0, cm = clock_s(CLOCK_THREAD_CPUTIME_ID) - m0,
               ca = clock_s(CLOCK_PROCESS_CPUTIME_ID) - a0;
        cfg_release(&cfg);
        if (rc < 0)
            return fail("whole run", &err);
        if (r == 0) {
            w0 = w;
            c0 = ca;
            r0 = res;
        }
        int same = same_bits(res.final_train_loss, r0.final_train_loss) &&
                   same_bits(res.final_test_loss, r0.final_test_loss) &&
                   same_bits(res.final_test_accuracy, r0.final_test_accuracy) &&
                   same_bits(res.consensus_distance, r0.consensus_distance);
        printf("%7d  %6.3f s  %6.2fx | %15.3f s  %6.3f s  %4.2fx | %s (test accuracy %.4f)\n",
               threads[r], w, w0 / w, cm, ca, c0 / cm, same ? "identical" : "DIFFERENT",
               res.final_test_accuracy);
    }
    return 0;
}

int main(int argc, char **argv)
{
    wl_blas_pin(argv); /* re-executes once with the simulator's kernel */
    const char *model_spec = argc > 1 ? argv[1] : "mlp(256)";
    int n = argc > 2 ? atoi(argv[2]) : 16;
    int epochs = argc > 3 ? atoi(argv[3]) : 3;
    int threads[MAX_RUNS] = {1, 2}, runs = 2;
    if (argc > 4) {
        runs = 0;
        for (int a = 4; a < argc && runs < MAX_RUNS; a++)
            threads[runs++] = atoi(argv[a]);
    }
    int bad = epochs < 1 || epochs > MAX_EPOCHS || n < 1;
    for (int r = 0; r < runs; r++)
        bad |= threads[r] < 1 || threads[r] > 256;
    if (bad) {
        fprintf(stderr, "usage: bench_dpsgd [MODEL] [WORKERS >= 1] [EPOCHS 1..%d] "
                        "[THREADS 1..256 ...]\n",
                MAX_EPOCHS);
        return 2;
    }
    const int batch = 32;
    openblas_set_num_threads(1);
    sim_err_install_library_handlers();

    char ini[2048];
    snprintf(ini, sizeof ini,
             "[experiment]\nmax_epochs = %d\n[workers]\ncount = %d\ncompute = model\n"
             "[network]\ntopology = star\nbandwidth = 10Gbps\nlatency = 5us\n"
             "[topology]\ngraph = ring\n"
             "[algorithm]\nname = dpsgd\nlr = 0.05\nbatch = %d\n"
             "[workload]\nmodel = %s\ndataset = fashion_mnist\npartition = iid\n",
             epochs, n, batch, model_spec);
    sim_err err = {0};
    cfg_config cfg;
    if (cfg_load_string(xp_experiment_schema(), "bench_dpsgd", ini, NULL, 0, &cfg,
                               &err) < 0)
        return fail("config", &err);

    double t_load = now(), cpu_load = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    wl_dataset *ds = xp_env_dataset_create(&cfg, &err);
    if (!ds)
        return fail("dataset", &err);
    t_load = now() - t_load;
    cpu_load = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu_load;
    printf("data set load     %.3f s wall, %.3f s CPU\n", t_load, cpu_load);
    outcome o[MAX_RUNS];
    for (int r = 0; r < runs; r++)
        if (run_once(&cfg, ds, model_spec, n, batch, epochs, threads[r], t_load, &o[r]))
            return 1;
    if (runs > 1) {
        /* On a shared machine the wall times depend on the other load; the
         * engine thread's CPU time is the critical path when the helpers
         * keep up (it runs its share of every join), so the first count's
         * CPU time over it bounds the speed-up of an idle machine. */
        printf("\nthreads  best epoch  speed-up | CPU engine thread  CPU all  bound | "
               "final models\n");
        for (int r = 0; r < runs; r++)
            printf("%7d  %8.3f s  %7.2fx | %15.3f s  %6.3f s  %4.2fx | %s\n", threads[r],
                   o[r].best_wall, o[0].best_wall / o[r].best_wall, o[r].cpu_main,
                   o[r].cpu_all, o[0].cpu_all / o[r].cpu_main,
                   o[r].hash == o[0].hash ? "identical" : "DIFFERENT");
    }
    wl_dataset_destroy(ds);
    cfg_release(&cfg);
    return whole_runs(ini, threads, runs);
}
