/* Clipped asynchronous SGD and injected gradient noise (docs/algorithms.md
 * sections 1.6, 11 and 12): an infinite clip level equals asgd exactly, one
 * worker equals sequential SGD with the clip at the server, the per-worker
 * staleness identity E[tau_i] = T_i sum_{j != i} 1/T_j with constant step
 * times (clip on or off), the random-worker job assignment keeps n jobs in
 * flight (mean staleness n - 1), the clipped fraction, and the sub-Weibull
 * norm tail by Monte Carlo. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/core/noise.h"
#include "tests/algorithms/harness.h"
#include "algorithms/core/fault.h"
#include "experiment/experiment.h"
#include "sim/rng.h"

typedef struct rows {
    an_metric_row r[512];
    int n;
    double last_fraction;
    int n_fraction;
} rows;

static void collect(void *ctx, const an_metric_row *row)
{
    rows *rs = ctx;
    if (rs->n < 512)
        rs->r[rs->n++] = *row;
}

static void collect_series(void *ctx, const an_series_row *row)
{
    rows *rs = ctx;
    if (strcmp(row->name, "clipped_fraction") == 0) {
        rs->last_fraction = row->value;
        rs->n_fraction++;
    }
}

static xp_run_result run_sets(const char *const *sets, int nsets, rows *rs)
{
    cfg_config cfg;
    sim_err err = {0};
    int rc = cfg_load_string(xp_experiment_schema(), "t.ini", test_base_ini, sets, nsets,
                                    &cfg, &err);
    cr_assert_eq(rc, 0, "config: %s", err.msg);
    memset(rs, 0, sizeof *rs);
    xp_run_opts opts = {.on_metric = collect, .on_series = collect_series, .ctx = rs};
    xp_run_result res;
    rc = xp_experiment_run(&cfg, &opts, &res, &err);
    cr_assert_eq(rc, 0, "run: %s", err.msg);
    cfg_release(&cfg);
    return res;
}

static void same_rows(const rows *a, const rows *b)
{
    cr_assert_eq(a->n, b->n);
    cr_assert_gt(a->n, 2);
    for (int i = 0; i < a->n; i++) {
        cr_assert_eq(a->r[i].iteration, b->r[i].iteration);
        cr_assert_eq(a->r[i].sim_time, b->r[i].sim_time);
        cr_assert_eq(a->r[i].train_loss, b->r[i].train_loss, "row %d: %.9g vs %.9g", i,
                     a->r[i].train_loss, b->r[i].train_loss);
        cr_assert_eq(a->r[i].test_accuracy, b->r[i].test_accuracy);
    }
}

Test(asgd, infinite_clip_equals_asgd_exactly_under_noise)
{
    static rows a, b;
    const char *sa[] = {"algorithm.name=asgd", "workload.grad_noise=subweibull(1, 2)",
                        "workers.compute=exponential(10ms)"};
    const char *sb[] = {"algorithm.name=asgd", "workload.grad_noise=subweibull(1, 2)",
                        "workers.compute=exponential(10ms)", "algorithm.clip=1e300"};
    xp_run_result ra = run_sets(sa, 3, &a);
    xp_run_result rb = run_sets(sb, 4, &b);
    same_rows(&a, &b);
    cr_assert_eq(ra.mean_staleness, rb.mean_staleness);
    cr_assert_eq(b.n_fraction, 150, "one clipped_fraction per applied update");
    cr_assert_eq(b.last_fraction, 0.0);
    cr_assert_eq(a.n_fraction, 0, "no series without a clip");
}

Test(asgd, noise_changes_the_run_and_repeats_exactly)
{
    static rows a, b, c;
    const char *s0[] = {"algorithm.name=asgd"};
    const char *s1[] = {"algorithm.name=asgd", "workload.grad_noise=gaussian(1)"};
    run_sets(s0, 1, &a);
    run_sets(s1, 2, &b);
    run_sets(s1, 2, &c);
    same_rows(&b, &c);
    cr_assert_neq(a.r[a.n - 1].train_loss, b.r[b.n - 1].train_loss);
}

/* n = 1: the server clip is the same transform as the synchronous method's
 * clip where the gradient is computed, and tau = 0. */
Test(asgd, one_worker_clipped_is_sequential_clipped_sgd)
{
    static rows a, b;
    const char *sa[] = {"algorithm.name=asgd", "workers.count=1", "algorithm.clip=0.3",
                        "workload.grad_noise=subweibull(2, 0.5)"};
    const char *sb[] = {"algorithm.name=allreduce_sgd", "workers.count=1",
                        "algorithm.clip=0.3", "workload.grad_noise=subweibull(2, 0.5)"};
    xp_run_result ra = run_sets(sa, 4, &a);
    xp_run_result rb = run_sets(sb, 4, &b);
    cr_assert_eq(ra.mean_staleness, 0.0);
    cr_assert_eq(ra.iterations, rb.iterations);
    cr_assert_eq(a.n, b.n);
    for (int i = 0; i < a.n; i++) {
        cr_assert_eq(a.r[i].iteration, b.r[i].iteration);
        cr_assert_eq(a.r[i].train_loss, b.r[i].train_loss, "row %d: %.9g vs %.9g", i,
                     a.r[i].train_loss, b.r[i].train_loss);
    }
    cr_assert(a.last_fraction > 0.5 && a.last_fraction <= 1.0, "clipped fraction %g",
              a.last_fraction);
}

Test(asgd, tiny_clip_clips_every_gradient)
{
    static rows a;
    const char *sa[] = {"algorithm.name=asgd", "algorithm.clip=1e-6"};
    run_sets(sa, 2, &a);
    cr_assert_eq(a.last_fraction, 1.0);
}

/* Constant step times T_0 = 3T, T_i = T: worker i's mean staleness is
 * T_i sum_{j != i} 1/T_j (9 and 7/3 for n = 4), the mean over updates n - 1. */
Test(asgd, per_worker_staleness_with_constant_times)
{
    for (int clip = 0; clip < 2; clip++) {
        harness h;
        const char *sets[] = {"algorithm.name=asgd", "workers.count=4", "workers.stragglers=1",
                              "workers.straggler_slowdown=3", "algorithm.lr=0.01",
                              clip ? "algorithm.clip=0.05" : "algorithm.clip=0"};
        h_build(&h, test_base_ini, sets, 6);
        h_run(&h, 6000);
        const double T[4] = {3, 1, 1, 1};
        double tot = 0, cnt = 0;
        for (int i = 0; i < 4; i++) {
            double s = 0;
            for (int j = 0; j < 4; j++)
                if (j != i)
                    s += 1.0 / T[j];
            double expect = T[i] * s;
            const algo_worker *w = &h.env->w[i];
            double got = w->staleness_sum / (double)w->staleness_n;
            cr_assert(fabs(got - expect) < 0.02 * expect, "clip %d worker %d: %.4f vs %.4f",
                      clip, i, got, expect);
            tot += w->staleness_sum;
            cnt += (double)w->staleness_n;
        }
        cr_assert(fabs(tot / cnt - 3.0) < 0.01, "mean %.5f", tot / cnt);
        if (clip)
            cr_assert_gt(h.env->clipped, 0);
        else
            cr_assert_eq(h.env->clipped, 0);
        h_free(&h);
    }
}

/* Random worker: n jobs always in flight, so each update is seen stale by
 * the n - 1 others (mean n - 1 up to the end effect); a slow worker gets
 * the same share of jobs but queues them. */
Test(asgd, random_next_job_keeps_n_jobs_in_flight)
{
    static rows a, b;
    const char *sa[] = {"algorithm.name=asgd", "workers.count=4", "algorithm.next_job=random",
                        "workers.compute=exponential(10ms)", "experiment.max_iterations=4000",
                        "experiment.eval_every=1000", "algorithm.lr=0.01"};
    xp_run_result r = run_sets(sa, 7, &a);
    cr_assert_eq(r.iterations, 4000);
    double bound = 3 * 16.0 * 4 / 4000.0;
    cr_assert(r.mean_staleness <= 3 + 1e-12 && r.mean_staleness >= 3 - bound,
              "mean staleness %.5f", r.mean_staleness);
    xp_run_result r2 = run_sets(sa, 7, &b);
    same_rows(&a, &b);
    cr_assert_eq(r.mean_staleness, r2.mean_staleness);
}

Test(asgd, subweibull_radius_tail_by_monte_carlo)
{
    const double thetas[] = {0.5, 1, 2};
    const double ts[] = {0.3, 1, 2, 4};
    const int N = 200000;
    for (int k = 0; k < 3; k++) {
        gsl_rng *r = sim_rng_create(11, SIM_STREAM_NOISE, (uint64_t)k);
        int hits[4] = {0};
        for (int s = 0; s < N; s++) {
            double R = algo_noise_subweibull_radius(thetas[k], r);
            for (int q = 0; q < 4; q++)
                hits[q] += R >= ts[q];
        }
        for (int q = 0; q < 4; q++) {
            double p = exp(-pow(ts[q], 1.0 / thetas[k]));
            double se = sqrt(p * (1 - p) / N);
            double ph = (double)hits[q] / N;
            cr_assert(fabs(ph - p) <= 4 * se + 1e-12, "theta %g t %g: %.5f vs %.5f (se %.5f)",
                      thetas[k], ts[q], ph, p, se);
        }
        gsl_rng_free(r);
    }
}

/* The added vector has norm sigma R (returned) and a direction whose mean
 * is near 0; gaussian noise has E||eps||^2 = sigma^2. */
Test(asgd, noise_vector_norm_and_direction)
{
    const int64_t d = 50;
    float g[50];
    double mean[50] = {0};
    gsl_rng *r = sim_rng_create(5, SIM_STREAM_NOISE, 0);
    gsl_rng *tmp = sim_rng_create(5, SIM_STREAM_NOISE, 1);
    algo_noise nz;
    char why[128];
    cr_assert_eq(algo_noise_parse("SubWeibull( 1.5 , 0.25 )", &nz, why, sizeof why), 0, "%s",
                 why);
    cr_assert_eq(nz.kind, ALGO_NOISE_SUBWEIBULL);
    const int N = 4000;
    for (int s = 0; s < N; s++) {
        memset(g, 0, sizeof g);
        double norm = algo_noise_add(&nz, g, d, r, tmp);
        double ss = 0;
        for (int j = 0; j < d; j++) {
            ss += (double)g[j] * g[j];
            mean[j] += g[j] / norm;
        }
        cr_assert(fabs(sqrt(ss) - norm) < 1e-5 * (1 + norm));
    }
    for (int j = 0; j < d; j++)
        cr_assert(fabs(mean[j] / N) < 4 * sqrt(1.0 / d / N), "coordinate %d mean %g", j,
                  mean[j] / N);
    cr_assert_eq(algo_noise_parse("gaussian(2)", &nz, why, sizeof why), 0);
    double s2 = 0;
    for (int s = 0; s < N; s++) {
        memset(g, 0, sizeof g);
        double norm = algo_noise_add(&nz, g, d, r, tmp);
        s2 += norm * norm;
    }
    cr_assert(fabs(s2 / N - 4.0) < 4 * 4.0 * sqrt(2.0 / d / N), "E||eps||^2 %.4f", s2 / N);
    gsl_rng_free(r);
    gsl_rng_free(tmp);
}

static void build_fails(const char *ini, const char *expect)
{
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "exp.ini", ini, NULL, 0, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    xp_env *x = xp_env_create(&cfg, NULL, &err);
    cr_assert_null(x);
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_str_eq(err.msg, expect);
    cfg_release(&cfg);
}

Test(asgd, bad_noise_specs_name_file_line_and_key)
{
    build_fails("[workload]\ngrad_noise = cauchy(1)\n",
                "exp.ini:2: [workload] grad_noise: expected none, gaussian(SIGMA) or "
                "subweibull(THETA, SIGMA), got 'cauchy(1)'");
    build_fails("[workload]\ngrad_noise = subweibull(0, 1)\n",
                "exp.ini:2: [workload] grad_noise: subweibull: THETA must be > 0 and SIGMA >= "
                "0 (both finite), got 0, 1");
    build_fails("[workload]\ngrad_noise = gaussian(-1)\n",
                "exp.ini:2: [workload] grad_noise: gaussian: SIGMA must be finite and >= 0, got "
                "-1");
    build_fails("[workload]\ngrad_noise = gaussian(1\n",
                "exp.ini:2: [workload] grad_noise: expected none, gaussian(SIGMA) or "
                "subweibull(THETA, SIGMA), got 'gaussian(1'");
}

/* ---- PS-ASGD under faults ---------------------------------------------- */

/* 4 workers with 10 ms steps on an ideal network apply 400 updates a
 * second; worker 1 crashes at 1.005 s (its step in flight is lost) and
 * rejoins at 2.005 s; worker 2 is 2x slower from 3.005 s. */
Test(asgd, asgd_crash_removes_one_workers_rate_and_rejoin_restores_it)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "1.005s,crash,1,\n"
                          "2.005s,rejoin,1,\n"
                          "3.005s,slowdown,2,2\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    for (int clip = 0; clip < 2; clip++) {
        const char *sets[] = {set, "algorithm.name=asgd", "workers.count=4", "algorithm.lr=0.01",
                              clip ? "algorithm.clip=0.05" : "algorithm.clip=0"};
        static times ts;
        ts.n = 0;
        harness h;
        h_build(&h, test_base_ini, sets, 5);
        h.probe = record_time;
        h.probe_ctx = &ts;
        h_run(&h, 1700);
        cr_assert_eq(count_in(&ts, 0.105, 1.005), 360);
        cr_assert_eq(count_in(&ts, 1.105, 2.005), 270);
        cr_assert_eq(count_in(&ts, 2.105, 3.005), 360);
        cr_assert_eq(count_in(&ts, 3.105, 4.005), 315, "3 x 90 + 45");
        cr_assert_eq(h.env->w[1].down, 0);
        /* the step the crash cut is not counted as computed: only the step
         * running at the end was counted and never applied */
        cr_assert_eq(h.env->w[1].steps - h.env->w[1].staleness_n, 1);
        h_free(&h);
    }
    unlink(path);
}

/* next_job = random: worker 1's jobs (computing, queued, on their way, its
 * push in flight) are lost at its crash at 1.005 s and re-issued to live
 * workers when the server learns of it (sync_timeout = 50 ms later); it
 * rejoins at 2.005 s. While it is down the update rate falls (3 workers
 * serve the 4 jobs) and worker 1 computes nothing; after the rejoin the
 * rate is back to its level before the crash, which it could not be if a
 * lost job had not been re-issued (4 jobs keep 4 workers busy only
 * partly; with 2 or 3 jobs left the rate would fall by a quarter or more). */
typedef struct rj_probe {
    times ts;
    int64_t steps_at_1_1, steps_at_2;
} rj_probe;

static void record_random_job(harness *h)
{
    rj_probe *p = h->probe_ctx;
    double t = sim_time_to_s(sim_engine_now(h->eng));
    if (p->ts.n < 8192)
        p->ts.t[p->ts.n++] = t;
    if (t < 1.1)
        p->steps_at_1_1 = h->env->w[1].steps;
    if (t < 2.0)
        p->steps_at_2 = h->env->w[1].steps;
}

Test(asgd, asgd_random_jobs_are_reissued_after_a_crash)
{
    char path[64], set[96];
    test_write_temp(path, "time,event,target,value\n"
                          "1.005s,crash,1,\n"
                          "2.005s,rejoin,1,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=asgd", "workers.count=4", "algorithm.lr=0.01",
                          "algorithm.next_job=random", "faults.sync_timeout=50ms"};
    static rj_probe p, q;
    harness h;
    memset(&p, 0, sizeof p);
    h_build(&h, test_base_ini, sets, 6);
    h.probe = record_random_job;
    h.probe_ctx = &p;
    h_run(&h, 1600);
    int c0 = count_in(&p.ts, 0.105, 1.005), c1 = count_in(&p.ts, 1.105, 2.005),
        c2 = count_in(&p.ts, 2.105, 3.005);
    cr_assert_leq(c0, 360);
    cr_assert_leq(c1, 270, "3 live workers serve at most 300 updates a second");
    cr_assert_lt(c1, c0, "%d vs %d", c1, c0);
    cr_assert_gt(c1, c0 / 2, "%d vs %d", c1, c0);
    cr_assert(c2 > 0.9 * c0 && c2 < 1.1 * c0, "rate after the rejoin %d vs before %d", c2, c0);
    cr_assert_eq(p.steps_at_1_1, p.steps_at_2, "worker 1 computes nothing while down");
    cr_assert_gt(h.env->w[1].steps, p.steps_at_2, "worker 1 works again after its rejoin");
    h_free(&h);

    /* the same schedule twice: the same update times */
    memset(&q, 0, sizeof q);
    h_build(&h, test_base_ini, sets, 6);
    h.probe = record_random_job;
    h.probe_ctx = &q;
    h_run(&h, 1600);
    cr_assert_eq(q.ts.n, p.ts.n);
    cr_assert_eq(memcmp(q.ts.t, p.ts.t, sizeof(double) * (size_t)p.ts.n), 0);
    h_free(&h);
    unlink(path);

    /* a crash after the end changes nothing: the draws over the workers
     * not known to be down are those of a run without faults */
    test_write_temp(path, "time,event,target,value\n100s,crash,1,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    memset(&q, 0, sizeof q);
    h_build(&h, test_base_ini, sets, 6);
    h.probe = record_random_job;
    h.probe_ctx = &q;
    h_run(&h, 300);
    float xf[64];
    const float *m = h.vt->model(h.alg, NULL);
    cr_assert_leq(h.env->d, 64);
    memcpy(xf, m, sizeof(float) * (size_t)h.env->d);
    h_free(&h);
    memset(&p, 0, sizeof p);
    h_build(&h, test_base_ini, sets + 1, 5);
    h.probe = record_random_job;
    h.probe_ctx = &p;
    h_run(&h, 300);
    cr_assert_eq(q.ts.n, p.ts.n);
    cr_assert_eq(memcmp(q.ts.t, p.ts.t, sizeof(double) * (size_t)p.ts.n), 0);
    cr_assert_eq(memcmp(xf, h.vt->model(h.alg, NULL), sizeof(float) * (size_t)h.env->d), 0);
    h_free(&h);
    unlink(path);
}
