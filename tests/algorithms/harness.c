#include "tests/algorithms/harness.h"

#include "sim/engine.h"

static void h_on_iteration(void *p)
{
    harness *h = p;
    if (h->probe)
        h->probe(h);
    if (h->env->iterations >= h->stop_at)
        sim_engine_stop(h->eng);
}

void h_build(harness *h, const char *ini, const char *const *sets, int nsets)
{
    memset(h, 0, sizeof *h);
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "h.ini", ini, sets, nsets,
                                        &h->cfg, &err),
                 0, "%s", err.msg);
    h->x = xp_env_create(&h->cfg, NULL, &err);
    cr_assert_not_null(h->x, "%s", err.msg);
    h->env = xp_env_algo_env(h->x);
    h->ds = xp_env_dataset(h->x);
    h->part = xp_env_partition(h->x);
    h->eng = xp_env_engine(h->x);
    h->net = xp_env_net(h->x);
    h->mix = h->env->mix;
    h->vt = xp_env_vt(h->x);
    h->env->run->hooks.iteration = h_on_iteration;
    h->env->run->hooks.exp = h;
    cr_assert_eq(xp_env_algo_create(h->x, &err), 0, "%s", err.msg);
    h->alg = xp_env_state(h->x);
}

void h_run(harness *h, int64_t iterations)
{
    sim_err err = {0};
    h->stop_at = iterations;
    if (h->env->iterations == 0)
        cr_assert_eq(h->vt->start(h->alg, &err), 0, "%s", err.msg);
    sim_engine_run_until(h->eng, SIM_TIME_MAX);
    cr_assert_eq(h->env->error.code, 0, "run failed: %s", h->env->error.msg);
    cr_assert_eq(h->env->diverged, 0, "run diverged");
    cr_assert_eq(h->env->iterations, iterations);
}

void h_free(harness *h)
{
    xp_env_destroy(h->x);
    cfg_release(&h->cfg);
}

void h_sum(harness *h, double *out)
{
    const float **xs = malloc((size_t)h->env->n * sizeof *xs);
    h->vt->worker_models(h->alg, xs);
    memset(out, 0, (size_t)h->env->d * sizeof *out);
    for (int i = 0; i < h->env->n; i++)
        for (int64_t j = 0; j < h->env->d; j++)
            out[j] += xs[i][j];
    free(xs);
}

double h_consensus(harness *h)
{
    const float **xs = malloc((size_t)h->env->n * sizeof *xs);
    double *scratch = malloc((size_t)h->env->d * sizeof *scratch);
    h->vt->worker_models(h->alg, xs);
    double c = topo_consensus_distance(xs, h->env->n, h->env->d, scratch);
    free(xs);
    free(scratch);
    return c;
}

double max_rel_gap(const float *a, const float *b, int64_t len)
{
    double worst = 0, scale = 0;
    for (int64_t j = 0; j < len; j++) {
        worst = fmax(worst, fabs((double)a[j] - b[j]));
        scale = fmax(scale, fabs((double)a[j]));
    }
    return worst / scale;
}

/* ---- iteration times (the crash tests) --------------------------------- */

void record_time(harness *h)
{
    times *ts = h->probe_ctx;
    if (ts->n < 8192)
        ts->t[ts->n++] = sim_time_to_s(sim_engine_now(h->eng));
}

int count_in(const times *ts, double a, double b)
{
    int c = 0;
    for (int i = 0; i < ts->n; i++)
        c += ts->t[i] >= a && ts->t[i] < b;
    return c;
}

int check_crash_rounds(const times *ts, double crash, double rejoin, double before,
                       double aborted, double down, double after)
{
    int ab = -1;
    for (int i = 1; i < ts->n; i++)
        if (ts->t[i - 1] < crash && ts->t[i] > crash)
            ab = i;
    cr_assert_gt(ab, 3, "the crash falls in round %d", ab);
    for (int i = 1; i < ab; i++)
        cr_assert(fabs(ts->t[i] - ts->t[i - 1] - before) < 1e-7, "round %d: %.9f vs %.9f", i,
                  ts->t[i] - ts->t[i - 1], before);
    cr_assert(fabs(ts->t[ab] - ts->t[ab - 1] - aborted) < 1e-7, "aborted round: %.9f vs %.9f",
              ts->t[ab] - ts->t[ab - 1], aborted);
    int checked = 0;
    for (int i = ab + 1; i < ts->n && ts->t[i] < rejoin; i++, checked++)
        cr_assert(fabs(ts->t[i] - ts->t[i - 1] - down) < 1e-7, "round %d: %.9f vs %.9f", i,
                  ts->t[i] - ts->t[i - 1], down);
    cr_assert_gt(checked, 10);
    for (int i = ts->n - 10; i < ts->n; i++)
        cr_assert(fabs(ts->t[i] - ts->t[i - 1] - after) < 1e-7, "round %d after the rejoin: %.9f",
                  i, ts->t[i] - ts->t[i - 1]);
    return ab;
}

/* ---- the live workers' mean (the crash tests) --------------------------- */

void mean_of_live(harness *h, double *out)
{
    int64_t d = h->env->d;
    int up = 0;
    for (int64_t e = 0; e < d; e++)
        out[e] = 0;
    for (int i = 0; i < h->env->n; i++) {
        if (h->env->w[i].down)
            continue;
        up++;
        for (int64_t e = 0; e < d; e++)
            out[e] += h->env->w[i].x[e];
    }
    for (int64_t e = 0; e < d; e++)
        out[e] /= up;
}

void live_mean_track(live_mean *lm, const double *m, int64_t d)
{
    if (!lm->have_ref) {
        memcpy(lm->ref, m, (size_t)d * sizeof *m);
        lm->have_ref = 1;
        return;
    }
    for (int64_t e = 0; e < d; e++)
        if (fabs(m[e] - lm->ref[e]) > lm->worst)
            lm->worst = fabs(m[e] - lm->ref[e]);
    lm->checked++;
}

void live_mean_track_model(harness *h, live_mean *lm)
{
    float x[64];
    double m[64];
    const float *xm = h->vt->model(h->alg, x);
    for (int64_t e = 0; e < h->env->d; e++)
        m[e] = xm[e];
    live_mean_track(lm, m, h->env->d);
}

void probe_live_mean(harness *h)
{
    live_mean *lm = h->probe_ctx;
    if (!h->env->w[3].down)
        return;
    double m[64];
    mean_of_live(h, m);
    live_mean_track(lm, m, h->env->d);
}

void h_write_schedule(char *path, char *set, size_t cap, const char *rows)
{
    char text[4096];
    snprintf(text, sizeof text, "time,event,target,value\n%s", rows);
    test_write_temp(path, text);
    snprintf(set, cap, "faults.schedule=%s", path);
}
