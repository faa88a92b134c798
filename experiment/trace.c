/* The timeline recorder (see trace.h). Invariants: a worker's compute step
 * is held back (pending) until its next step, a cut or the finish, since a
 * crash or the stop may still shorten it; sends are the union of the
 * intervals during which a worker's messages drain from its host (one span
 * per busy period); a link's load row is written at every change. The
 * first database error stops the run through algo_env_fail. */
#include "experiment/trace.h"

#include <stdlib.h>

#include "algorithms/core/runner.h"
#include "analysis/trace.h"
#include "config/config.h"
#include "sim/network.h"

enum { TRACE_BATCH = 1024 };

struct xp_trace {
    an_db *db;
    int64_t run_id;
    algo_env *env;
    sim_net *net;
    int n, n_links;
    int64_t max_events, events, dropped;
    an_span_row spans[TRACE_BATCH];
    int n_spans;
    an_load_row loads[TRACE_BATCH];
    int n_loads;
    sim_time *c0, *c1;     /* pending compute span per worker; c0 < 0: none */
    int *c_state;          /* its state: AN_SPAN_COMPUTE or AN_SPAN_LOST */
    sim_time *down_since;  /* < 0: up */
    int *sending;          /* messages of the worker draining now */
    sim_time *send_since;
    double *inflight;      /* bytes per directed link */
    double *totals;        /* summary mode (no database): seconds per worker and state */
};

static sim_time now_of(const xp_trace *t) { return sim_engine_now(t->env->eng); }

/* Writes the buffered rows (two transactions). */
static int write_rows(xp_trace *t, sim_err *e)
{
    if (!t->db)
        return 0;
    int rc = an_db_spans(t->db, t->run_id, t->spans, t->n_spans, e);
    if (rc == 0)
        rc = an_db_loads(t->db, t->run_id, t->loads, t->n_loads, e);
    t->n_spans = t->n_loads = 0;
    return rc;
}

static void flush(xp_trace *t)
{
    sim_err e = {0};
    int rc = write_rows(t, &e);
    if (rc < 0)
        algo_env_fail(t->env, rc, "timeline: %s", e.msg);
}

/* 1 when one more row may be written (counts the ones that may not). */
static int room(xp_trace *t)
{
    if (t->events >= t->max_events) {
        t->dropped++;
        return 0;
    }
    t->events++;
    return 1;
}

static void span_put(xp_trace *t, int worker, int state, sim_time t0, sim_time t1)
{
    if (t1 <= t0)
        return;
    if (!t->db) {
        t->totals[(size_t)worker * AN_SPAN_N + (size_t)state] += sim_time_to_s(t1 - t0);
        return;
    }
    if (!room(t))
        return;
    t->spans[t->n_spans++] = (an_span_row){.worker = worker, .state = (an_span_state)state,
                                           .start = sim_time_to_s(t0), .end = sim_time_to_s(t1)};
    if (t->n_spans == TRACE_BATCH)
        flush(t);
}

static void pending_put(xp_trace *t, int w)
{
    if (t->c0[w] >= 0)
        span_put(t, w, t->c_state[w], t->c0[w], t->c1[w]);
    t->c0[w] = -1;
}

void xp_trace_span(xp_trace *t, int w, int kind, sim_time t0, sim_time t1)
{
    switch (kind) {
    case ALGO_SPAN_COMPUTE:
        pending_put(t, w);
        t->c0[w] = t0;
        t->c1[w] = t1;
        t->c_state[w] = AN_SPAN_COMPUTE;
        break;
    case ALGO_SPAN_CUT:
    case ALGO_SPAN_LOST:
        if (t->c0[w] == t0) {
            t->c1[w] = t1;
            if (kind == ALGO_SPAN_LOST)
                t->c_state[w] = AN_SPAN_LOST;
        }
        break;
    case ALGO_SPAN_IDLE:
        span_put(t, w, AN_SPAN_IDLE, t0, t1);
        break;
    default:
        break;
    }
}

void xp_trace_down(xp_trace *t, int w, int down)
{
    sim_time now = now_of(t);
    if (down && t->down_since[w] < 0) {
        t->down_since[w] = now;
    } else if (!down && t->down_since[w] >= 0) {
        span_put(t, w, AN_SPAN_DOWN, t->down_since[w], now);
        t->down_since[w] = -1;
    }
}

static void load_put(xp_trace *t, int link, sim_time now)
{
    if (!t->db || !room(t))
        return;
    t->loads[t->n_loads++] = (an_load_row){.link = link, .sim_time = sim_time_to_s(now),
                                           .bytes = t->inflight[link]};
    if (t->n_loads == TRACE_BATCH)
        flush(t);
}

/* The network's trace hook: sends of workers, loads of links. */
static void on_net(void *ctx, int src, int dst, double bytes, const int *links, int hops,
                   int start)
{
    (void)dst;
    xp_trace *t = ctx;
    sim_time now = now_of(t);
    if (src < t->n) {
        if (start && t->sending[src]++ == 0)
            t->send_since[src] = now;
        else if (!start && t->sending[src] > 0 && --t->sending[src] == 0)
            span_put(t, src, AN_SPAN_SEND, t->send_since[src], now);
    }
    for (int h = 0; h < hops; h++) {
        int l = links[h];
        if (l < 0 || l >= t->n_links)
            continue;
        t->inflight[l] += start ? bytes : -bytes;
        if (!start && t->inflight[l] < 1e-9 * bytes)
            t->inflight[l] = 0; /* no drift below zero */
        load_put(t, l, now);
    }
}

int xp_trace_create(xp_env *x, an_db *db, int summary, xp_trace **out, sim_err *err)
{
    *out = NULL;
    const cfg_config *c = xp_env_config(x);
    int on = 0;
    int64_t max = 0;
    int rc = cfg_get_bool(c, "experiment", "trace", &on, err);
    if (rc == 0)
        rc = cfg_get_int(c, "experiment", "trace_max_events", &max, err);
    if (rc < 0)
        return rc;
    if (max < 1)
        return cfg_error(c, "experiment", "trace_max_events", SIM_ECONFIG, err,
                         "expected a number of rows >= 1, got %lld", (long long)max);
    if (summary)
        db = NULL;
    else if (!on || !db)
        return 0;
    xp_trace *t = calloc(1, sizeof *t);
    if (!t)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    t->db = db;
    t->env = xp_env_algo_env(x);
    t->net = xp_env_net(x);
    t->n = t->env->n;
    t->n_links = sim_net_n_links(t->net);
    t->max_events = max;
    size_t n = (size_t)t->n;
    t->c0 = malloc(n * sizeof *t->c0);
    t->c1 = calloc(n, sizeof *t->c1);
    t->c_state = calloc(n, sizeof *t->c_state);
    t->down_since = malloc(n * sizeof *t->down_since);
    t->sending = calloc(n, sizeof *t->sending);
    t->send_since = calloc(n, sizeof *t->send_since);
    t->inflight = calloc((size_t)t->n_links + 1, sizeof *t->inflight);
    t->totals = calloc(n * AN_SPAN_N, sizeof *t->totals);
    if (!t->c0 || !t->c1 || !t->c_state || !t->down_since || !t->sending || !t->send_since ||
        !t->inflight || !t->totals) {
        xp_trace_destroy(t);
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    }
    for (int w = 0; w < t->n; w++)
        t->c0[w] = t->down_since[w] = -1;
    sim_net_set_trace_hook(t->net, on_net, t);
    *out = t;
    return 0;
}

void xp_trace_run(xp_trace *t, int64_t run_id) { t->run_id = run_id; }

int xp_trace_finish(xp_trace *t, int64_t *dropped, sim_err *err)
{
    sim_time now = now_of(t);
    for (int w = 0; w < t->n; w++) {
        pending_put(t, w);
        xp_trace_down(t, w, 0);
        if (t->sending[w] > 0)
            span_put(t, w, AN_SPAN_SEND, t->send_since[w], now);
        t->sending[w] = 0;
    }
    sim_err e = {0};
    int rc = write_rows(t, &e);
    if (dropped)
        *dropped = t->dropped;
    if (rc < 0)
        return sim_err_set(err, rc, "timeline: %s", e.msg);
    return 0;
}

const double *xp_trace_totals(const xp_trace *t) { return t->totals; }

void xp_trace_destroy(xp_trace *t)
{
    if (!t)
        return;
    if (t->net)
        sim_net_set_trace_hook(t->net, NULL, NULL);
    free(t->c0);
    free(t->c1);
    free(t->c_state);
    free(t->down_since);
    free(t->sending);
    free(t->send_since);
    free(t->inflight);
    free(t->totals);
    free(t);
}
