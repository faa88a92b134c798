/* The [faults] section of the environment (see env.h): the fault
 * schedule's events applied at their times, random crashes and rejoins
 * drawn from each worker's fault stream, and the log of every fault that
 * happened (the faults table), messages lost on down links included. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "experiment/env_impl.h"
#include "experiment/trace.h"
#include "sim/rng.h"

/* Appends an applied fault to the log (the faults table). Grows by
 * doubling: faults are rare events, not a hot loop. */
static void fault_log(xp_env *x, const algo_fault *ev)
{
    if (x->n_log == x->cap_log) {
        int cap = x->cap_log ? 2 * x->cap_log : 16;
        algo_fault *log = realloc(x->log, (size_t)cap * sizeof *log);
        if (!log) {
            algo_env_fail(&x->env, SIM_ENOMEM, "out of memory for the fault log");
            return;
        }
        x->log = log;
        x->cap_log = cap;
    }
    algo_fault *l = &x->log[x->n_log++];
    *l = *ev;
    l->time = sim_engine_now(x->eng);
}

/* A message attempt lost on a link that went down, or its re-send: a
 * `lost` row of the faults table (target SRC-DST hosts, value = bytes sent
 * before the loss) or a `resent` row (value = the message's bytes). */
void xp_env_on_net_loss(void *ctx, int src, int dst, double bytes, int resent)
{
    xp_env *x = ctx;
    algo_fault ev = {.kind = resent ? ALGO_FAULT_RESENT : ALGO_FAULT_LOST,
                     .target = src,
                     .target2 = dst,
                     .value = bytes};
    fault_log(x, &ev);
}

/* 1 when every worker is down and no rejoin is scheduled: nothing can
 * happen any more (without this check a run with time-based evaluations
 * would evaluate the same model forever). */
static int all_down_for_good(const xp_env *x)
{
    if (x->rejoins_pending > 0)
        return 0;
    for (int i = 0; i < x->env.n; i++)
        if (!x->env.w[i].down)
            return 0;
    return 1;
}

/* Applies a fault now: the environment's part (down, slowdown, link rate),
 * the method's hook, and a log row. rate0: a link's configured rate (for
 * up). Returns 1 when it was applied (a crash of a crashed worker and a
 * rejoin of a live one are not). */
static int fault_apply(xp_env *x, const algo_fault *ev, double rate0)
{
    if (ev->kind == ALGO_FAULT_LINK) {
        /* value 0: down (its row logged before the `lost` rows it causes);
         * a rate or up (the configured rate) also brings a down link up */
        double rate = ev->value > 0 ? ev->value : ev->value == 0 ? 0 : rate0;
        algo_fault logged = *ev;
        logged.value = rate;
        fault_log(x, &logged);
        sim_err e = {0};
        int rc = rate == 0 ? sim_net_link_set_down(x->net, ev->target, ev->target2, 1, &e)
                           : sim_net_link_set_rate(x->net, ev->target, ev->target2, rate, &e);
        if (rc < 0) {
            algo_env_fail(&x->env, e.code, "[faults] link %d-%d: %s", ev->target, ev->target2,
                          e.msg);
            return 0;
        }
        return 1;
    }
    algo_worker *w = &x->env.w[ev->target];
    switch (ev->kind) {
    case ALGO_FAULT_CRASH:
        if (w->down)
            return 0;
        w->down = 1;
        algo_env_step_cut(&x->env, ev->target, 1); /* its step in progress is lost */
        if (x->trace)
            xp_trace_down(x->trace, ev->target, 1);
        if (all_down_for_good(x)) {
            fault_log(x, ev);
            algo_env_fail(&x->env, SIM_EINPUT,
                          "[faults]: every worker is down at %.9g s and none rejoins "
                          "(downtime = none and no later rejoin row): the run cannot go on",
                          sim_time_to_s(sim_engine_now(x->eng)));
            return 0;
        }
        break;
    case ALGO_FAULT_REJOIN:
        if (!w->down)
            return 0;
        w->down = 0;
        if (x->trace)
            xp_trace_down(x->trace, ev->target, 0);
        break;
    case ALGO_FAULT_SLOWDOWN:
        w->slowdown = ev->value;
        break;
    case ALGO_FAULT_LINK:
    case ALGO_FAULT_LOST:
    case ALGO_FAULT_RESENT:
        return 0;
    }
    fault_log(x, ev);
    if (x->vt->fault && ev->kind != ALGO_FAULT_SLOWDOWN)
        x->vt->fault(x->alg, ev);
    return 1;
}

/* A scheduled fault event at its time (arg: its index in x->faults). */
static void on_fault(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    xp_env *x = ctx;
    algo_fault ev = x->faults[arg];
    if (ev.kind == ALGO_FAULT_REJOIN)
        x->rejoins_pending--;
    if (ev.kind == ALGO_FAULT_CRASH || ev.kind == ALGO_FAULT_REJOIN)
        ev.value = NAN;
    fault_apply(x, &ev, x->fault_rate0[arg]);
}

/* ---- random faults ([faults] mtbf, downtime) ---------------------------- */

static void on_random_crash(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

/* Schedules worker w's next random crash after an up-time drawn from mtbf. */
static int random_next_crash(xp_env *x, int w)
{
    double up = sim_dist_sample(&x->mtbf, x->rng_fault[w]);
    if (!(up >= 0))
        up = 0;
    if (sim_engine_schedule(x->eng, sim_time_from_s(up), on_random_crash, x, (uint64_t)w, NULL,
                            NULL) == 0)
        return algo_env_fail(&x->env, SIM_ENOMEM, "out of memory for a random fault");
    return 0;
}

static void on_random_rejoin(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    xp_env *x = ctx;
    int w = (int)arg;
    x->rejoins_pending--;
    algo_fault ev = {.kind = ALGO_FAULT_REJOIN, .target = w, .target2 = -1, .value = NAN};
    fault_apply(x, &ev, 0);
    random_next_crash(x, w);
}

/* A random crash; the worker rejoins after a downtime draw (none when
 * downtime = none: then its process ends). The crash row's value is the
 * downtime drawn (NULL without one). A worker already down (a scheduled
 * crash) is left alone but its process goes on. */
static void on_random_crash(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)payload;
    xp_env *x = ctx;
    int w = (int)arg;
    double down = x->has_downtime ? sim_dist_sample(&x->downtime, x->rng_fault[w]) : NAN;
    if (x->has_downtime && !(down >= 0))
        down = 0;
    algo_fault ev = {.kind = ALGO_FAULT_CRASH, .target = w, .target2 = -1, .value = down};
    /* counted before the crash applies, so it knows a rejoin is coming;
     * scheduled after it, as always (event order on equal times) */
    if (x->has_downtime)
        x->rejoins_pending++;
    fault_apply(x, &ev, 0);
    if (x->has_downtime &&
        sim_engine_schedule(x->eng, sim_time_from_s(down), on_random_rejoin, x, (uint64_t)w,
                            NULL, NULL) == 0)
        algo_env_fail(&x->env, SIM_ENOMEM, "out of memory for a random fault");
}

/* Parses a [faults] distribution key; *set = 0 for none. */
static int fault_dist(xp_env *x, const char *key, sim_dist *d, int *set, sim_err *err)
{
    const cfg_config *c = x->cfg;
    const char *spec = cfg_get_string(c, "faults", key);
    *set = 0;
    if (!spec || !spec[0] || strcmp(spec, "none") == 0)
        return 0;
    if (sim_dist_parse(spec, d, err) < 0)
        return xp_env_key_error(c, "faults", key, err);
    if (d->kind == SIM_DIST_MODEL || d->kind == SIM_DIST_TRACE)
        return cfg_error(c, "faults", key, SIM_ECONFIG, err,
                                "expected none or a distribution of times such as "
                                "exponential(300s), got '%s'", spec);
    if (!(sim_dist_mean(d) > 0))
        return cfg_error(c, "faults", key, SIM_ECONFIG, err,
                                "the mean must be positive, got '%s'", spec);
    *set = 1;
    return 0;
}

/* A mean up-time far below sync_timeout (under a tenth) makes no
 * progress: workers crash many times while the survivors of one step wait
 * for them, and the fault events pile up. Refused with both values. */
static int mtbf_check(xp_env *x, sim_err *err)
{
    const cfg_config *c = x->cfg;
    sim_time timeout = 0;
    int rc = cfg_get_time(c, "faults", "sync_timeout", &timeout, err);
    if (rc < 0)
        return rc;
    double mean = sim_dist_mean(&x->mtbf), limit = sim_time_to_s(timeout) / 10;
    if (mean < limit)
        return cfg_error(c, "faults", "mtbf", SIM_ECONFIG, err,
                                "mean up-time %g s is far below faults.sync_timeout (%g s):"
                                " the workers would crash faster than a step gives up on"
                                " them (at least %g s)", mean, sim_time_to_s(timeout), limit);
    return 0;
}

/* [faults] mtbf and downtime: parsed before the method is created (it may
 * refuse crashes); streams made when mtbf is set. downtime alone does
 * nothing (so that a sweep can switch mtbf off). */
static int faults_random_load(xp_env *x, sim_err *err)
{
    int rc = fault_dist(x, "mtbf", &x->mtbf, &x->has_mtbf, err);
    if (rc == 0)
        rc = fault_dist(x, "downtime", &x->downtime, &x->has_downtime, err);
    if (rc < 0)
        return rc;
    if (!x->has_mtbf)
        return 0;
    rc = mtbf_check(x, err);
    if (rc < 0)
        return rc;
    int n = x->cfg->n_workers;
    x->rng_fault = calloc((size_t)n, sizeof *x->rng_fault);
    if (!x->rng_fault)
        return sim_err_set(err, SIM_ENOMEM, "out of memory for random faults");
    for (int i = 0; i < n; i++) {
        x->rng_fault[i] = sim_rng_create(x->cfg->seed, SIM_STREAM_FAULT, (uint64_t)i);
        if (!x->rng_fault[i])
            return sim_err_set(err, SIM_ENOMEM, "out of memory for random faults");
    }
    x->run.crashes = 1;
    return 0;
}

/* The file of [faults] schedule, resolved against the experiment file's
 * folder, into path (SIM_PATH_MAX bytes): 1, or 0 for none, or a negative
 * code naming the key. */
static int schedule_path(const xp_env *x, char *path, sim_err *err)
{
    const char *name = cfg_get_string(x->cfg, "faults", "schedule");
    if (!name || !name[0] || strcmp(name, "none") == 0)
        return 0;
    if (sim_path_resolve(x->dir, name, path, SIM_PATH_MAX, err))
        return xp_env_key_error(x->cfg, "faults", "schedule", err);
    return 1;
}

/* Loads [faults] schedule (before the method is created, which may refuse
 * crashes: run.crashes says whether any can happen). */
static int faults_schedule_load(xp_env *x, sim_err *err)
{
    const cfg_config *c = x->cfg;
    char path[SIM_PATH_MAX];
    int has = schedule_path(x, path, err);
    if (has <= 0)
        return has;
    int n_vertices = sim_net_n_hosts(x->net);
    for (int l = 0; l < sim_net_n_links(x->net); l++) {
        int from, to;
        if (sim_net_link_ends(x->net, l, &from, &to) == 0 && from + 1 > n_vertices)
            n_vertices = from + 1;
    }
    int rc = cfg_schedule_load(path, c->n_workers, n_vertices, &x->faults, &x->n_faults, err);
    if (rc < 0)
        return xp_env_key_error(c, "faults", "schedule", err);
    x->fault_rate0 = calloc((size_t)x->n_faults + 1, sizeof *x->fault_rate0);
    if (!x->fault_rate0)
        return sim_err_set(err, SIM_ENOMEM, "out of memory for the fault schedule");
    for (int i = 0; i < x->n_faults; i++) {
        const algo_fault *ev = &x->faults[i];
        if (ev->kind == ALGO_FAULT_LINK) {
            x->fault_rate0[i] = sim_net_link_rate(x->net, ev->target, ev->target2);
            if (x->fault_rate0[i] <= 0)
                return cfg_error(c, "faults", "schedule", SIM_ECONFIG, err,
                                        "%s: no link %d-%d in the physical network", path,
                                        ev->target, ev->target2);
        } else if (ev->kind == ALGO_FAULT_CRASH || ev->kind == ALGO_FAULT_REJOIN) {
            x->run.crashes = 1;
        }
    }
    return 0;
}

/* Whether the method supports the faults loaded. */
static int faults_supported(xp_env *x, sim_err *err)
{
    const cfg_config *c = x->cfg;
    char path[SIM_PATH_MAX];
    if (x->n_faults > 0 && schedule_path(x, path, err) < 0)
        return err->code;
    for (int i = 0; i < x->n_faults; i++) {
        const algo_fault *ev = &x->faults[i];
        if (!x->vt->fault && (ev->kind == ALGO_FAULT_CRASH || ev->kind == ALGO_FAULT_REJOIN))
            return cfg_error(c, "faults", "schedule", SIM_ECONFIG, err,
                                    "%s: %s does not support %s events", path, x->vt->name,
                                    algo_fault_kind_name(ev->kind));
    }
    if (x->has_mtbf && !x->vt->fault)
        return cfg_error(c, "faults", "mtbf", SIM_ECONFIG, err,
                                "%s does not support worker crashes", x->vt->name);
    return 0;
}

int xp_env_faults_check(xp_env *x, sim_err *err)
{
    int rc = xp_env_faults_load(x, err);
    if (rc == 0)
        rc = faults_supported(x, err);
    return rc;
}

/* Checks that the method supports the faults, then schedules the schedule's
 * events and each worker's first random crash (engine at time 0). */
int xp_env_faults_start(xp_env *x, sim_err *err)
{
    int rc = faults_supported(x, err);
    if (rc < 0)
        return rc;
    sim_time now = sim_engine_now(x->eng);
    for (int i = 0; i < x->n_faults; i++) {
        sim_time dt = x->faults[i].time > now ? x->faults[i].time - now : 0;
        if (sim_engine_schedule(x->eng, dt, on_fault, x, (uint64_t)i, NULL, NULL) == 0)
            return sim_err_set(err, SIM_ENOMEM, "out of memory for the fault schedule");
        if (x->faults[i].kind == ALGO_FAULT_REJOIN)
            x->rejoins_pending++;
    }
    for (int w = 0; x->has_mtbf && w < x->cfg->n_workers; w++)
        if (random_next_crash(x, w) < 0)
            return sim_err_set(err, SIM_ENOMEM, "out of memory for random faults");
    return 0;
}

const algo_fault *xp_env_fault_log(const xp_env *x, int *n)
{
    *n = x->n_log;
    return x->log;
}

void xp_env_fault_log_clear(xp_env *x) { x->n_log = 0; }

/* Loads once: a grid check that creates the method (check_method) loads
 * the faults before xp_env_algo_create asks again. */
int xp_env_faults_load(xp_env *x, sim_err *err)
{
    if (x->faults_loaded)
        return 0;
    int rc = faults_schedule_load(x, err);
    if (rc == 0)
        rc = faults_random_load(x, err);
    if (rc == 0)
        x->faults_loaded = 1;
    return rc;
}

