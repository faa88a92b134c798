/* `dtsim estimate` (experiment.h, xp_experiment_estimate): a few iterations
 * with the time model only (no gradient, no evaluation), then a summary of
 * one iteration and of the configured run. Per worker, communication is the
 * time its messages drain from its host (the timeline's send spans) and
 * idle the rest of the iteration that is neither that nor compute. */
#include "experiment/estimate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/trace.h"
#include "sim/network.h"

void xp_time_stats_release(xp_time_stats *s)
{
    if (!s)
        return;
    free(s->compute);
    free(s->send);
    free(s->idle);
    memset(s, 0, sizeof *s);
}

int xp_time_stats_fill(xp_time_stats *s, const algo_env *env, sim_net *net,
                       const double *totals, double sim_time, sim_err *err)
{
    memset(s, 0, sizeof *s);
    int n = env->n;
    s->n_workers = n;
    s->sim_time = sim_time;
    s->iterations = env->iterations;
    s->samples = env->samples;
    s->train_n = env->ds->train.n;
    s->compute = calloc((size_t)n, sizeof *s->compute);
    s->send = calloc((size_t)n, sizeof *s->send);
    s->idle = calloc((size_t)n, sizeof *s->idle);
    if (!s->compute || !s->send || !s->idle) {
        xp_time_stats_release(s);
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    }
    for (int w = 0; w < n; w++) {
        s->compute[w] = totals[(size_t)w * AN_SPAN_N + AN_SPAN_COMPUTE];
        s->send[w] = totals[(size_t)w * AN_SPAN_N + AN_SPAN_SEND];
        s->idle[w] = totals[(size_t)w * AN_SPAN_N + AN_SPAN_IDLE];
    }
    s->bytes = sim_net_bytes_sent_total(net) - sim_net_bytes_unsent(net, -1);
    s->busiest_link = -1;
    double best = -1;
    for (int l = 0; l < sim_net_n_links(net); l++) {
        int a = 0, b = 0;
        double bytes = sim_net_bytes_link(net, l);
        if (bytes <= 0 || sim_net_link_ends(net, l, &a, &b) != 0)
            continue;
        double rate = sim_net_link_rate(net, a, b);
        double load = rate > 0 ? bytes / rate : 0; /* seconds busy at full rate */
        if (load > best) {
            best = load;
            s->busiest_link = l;
            s->link_from = a;
            s->link_to = b;
            s->link_bytes = bytes;
            s->link_rate = rate;
        }
    }
    return 0;
}

/* Worker ids ranked by compute time (ties: the lower id first). */
static int by_compute(const void *a, const void *b, void *ctx)
{
    const double *c = ctx;
    int i = *(const int *)a, j = *(const int *)b;
    if (c[i] != c[j])
        return c[i] < c[j] ? -1 : 1;
    return (i > j) - (i < j);
}

static void rank_workers(const xp_time_stats *s, int *order)
{
    int n = s->n_workers;
    for (int i = 0; i < n; i++)
        order[i] = i;
    /* insertion sort: deterministic, n is small */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && by_compute(&order[j - 1], &order[j], s->compute) > 0; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

/* The configured run's iterations (INFINITY when only a target bounds it). */
static double run_iterations(const cfg_config *cfg, const xp_time_stats *s, double iter_time)
{
    double it = INFINITY;
    if (cfg->max_iterations > 0)
        it = (double)cfg->max_iterations;
    else if (cfg->max_epochs > 0 && s->samples > 0)
        it = ceil(cfg->max_epochs * (double)s->train_n /
                  ((double)s->samples / (double)s->iterations));
    if (cfg->max_time > 0 && iter_time > 0)
        it = fmin(it, ceil(sim_time_to_s(cfg->max_time) / iter_time));
    return it;
}

int xp_experiment_estimate(const cfg_config *cfg, int64_t iterations, int threads,
                           xp_estimate *out, sim_err *err)
{
    memset(out, 0, sizeof *out);
    if (iterations < 1)
        return sim_err_set(err, SIM_EUSAGE, "estimate: iterations must be >= 1, got %lld",
                           (long long)iterations);
    cfg_config c = *cfg; /* a shallow copy with the stop rules replaced */
    c.max_iterations = iterations;
    c.max_epochs = 0;
    c.max_time = 0;
    c.target_accuracy = 0;
    xp_time_stats s = {0};
    xp_run_opts o = {.time_only = 1, .time_stats = &s, .threads = threads};
    xp_run_result r;
    int rc = xp_experiment_run(&c, &o, &r, err);
    if (rc < 0)
        return rc;
    if (s.iterations < 1) {
        xp_time_stats_release(&s);
        return sim_err_set(err, SIM_EINPUT, "%s: no iteration completed", cfg->path);
    }
    int *order = malloc((size_t)s.n_workers * sizeof *order);
    if (!order) {
        xp_time_stats_release(&s);
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    }
    rank_workers(&s, order);
    double it = (double)s.iterations;
    snprintf(out->algorithm, sizeof out->algorithm, "%s", r.algorithm);
    out->n_workers = s.n_workers;
    out->iterations = s.iterations;
    out->iter_time = s.sim_time / it;
    out->worker[0] = order[(s.n_workers - 1) / 2];
    out->worker[1] = order[s.n_workers - 1];
    for (int k = 0; k < 2; k++) {
        int w = out->worker[k];
        out->compute[k] = s.compute[w] / it;
        out->comm[k] = s.send[w] / it;
        out->idle[k] = fmax(0, out->iter_time - out->compute[k] - out->comm[k]);
    }
    out->bytes_per_iter = s.bytes / it;
    out->busiest_link = s.busiest_link;
    out->link_from = s.link_from;
    out->link_to = s.link_to;
    out->link_rate = s.link_rate;
    out->link_bytes_per_iter = s.link_bytes / it;
    out->link_util = s.busiest_link >= 0 && s.sim_time > 0 && s.link_rate > 0
                         ? s.link_bytes / (s.link_rate * s.sim_time)
                         : 0;
    out->run_iterations = run_iterations(cfg, &s, out->iter_time);
    out->run_time = out->run_iterations * out->iter_time;
    out->gpu_hours = s.n_workers * out->run_time / 3600.0;
    const algo_vt *vt = algo_find(r.algorithm);
    const char *why = vt && vt->data_time ? vt->data_time(cfg) : NULL;
    if (why)
        snprintf(out->data_time, sizeof out->data_time, "%s", why);
    free(order);
    xp_time_stats_release(&s);
    return 0;
}
