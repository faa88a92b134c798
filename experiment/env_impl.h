/* Private to the environment builder: the environment's fields, shared by
 * env.c (building, teardown, accessors) and env_faults.c (the [faults]
 * section: the schedule, random crashes, the fault log). */
#ifndef DTSIM_EXPERIMENT_ENV_IMPL_H
#define DTSIM_EXPERIMENT_ENV_IMPL_H

#include "experiment/env.h"
#include "algorithms/core/runner.h"
#include "sim/compute.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "sim/path.h"
#include "sim/pool.h"
#include "topology/graph.h"
#include "topology/mixing.h"
#include "topology/physnet.h"

struct xp_env {
    const cfg_config *cfg;
    char dir[SIM_PATH_MAX]; /* the experiment file's folder: the file names
                               it writes resolve against it (sim/path.h) */
    const algo_vt *vt;
    void *alg;              /* the method's state */
    int check_only, check_method;
    gsl_rng *rng_data, *rng_part, *rng_init, *rng_topo;
    wl_dataset *ds;
    int ds_borrowed;
    wl_model *model;
    wl_partition *part;
    topo_physnet pn;
    int pn_built;
    sim_engine *eng;
    sim_net *net;
    topo_graph graph;
    int graph_built;
    topo_mixing *mix;
    sim_compute *compute;
    algo_fault *faults;     /* [faults] schedule, sorted by time */
    double *fault_rate0;    /* per event: a link's configured rate (for up) */
    int n_faults;
    int faults_loaded;      /* xp_env_faults_load done (a check and the run share it) */
    int rejoins_pending;    /* rejoin events scheduled and not yet run */
    sim_dist mtbf, downtime; /* [faults] mtbf, downtime (random crashes) */
    int has_mtbf, has_downtime;
    gsl_rng **rng_fault;    /* per worker when mtbf is set (SIM_STREAM_FAULT) */
    algo_fault *log;        /* faults that happened, in time order (faults table) */
    int n_log, cap_log;
    int threads;            /* xp_env_opts.threads */
    sim_pool *pool;         /* threads > 1 */
    struct xp_trace *trace; /* the timeline recorder (borrowed), or NULL */
    algo_runner run;        /* the runner's bookkeeping; env.run points here */
    algo_env env;
};

/* Prefixes err's message with the config key it came from; returns its code. */
int xp_env_key_error(const cfg_config *c, const char *section, const char *key, sim_err *err);

/* The network's loss hook: a message lost on a down link, into the fault log. */
void xp_env_on_net_loss(void *ctx, int src, int dst, double bytes, int resent);

/* Loads [faults] schedule, mtbf and downtime, before the method is created
 * (which may refuse crashes). SIM_ECONFIG or SIM_EINPUT naming the key. */
int xp_env_faults_load(xp_env *x, sim_err *err);

/* Check mode (a sweep's points, before any runs): [faults] read and
 * checked against the method as a run reads them, nothing scheduled. */
int xp_env_faults_check(xp_env *x, sim_err *err);

/* Once the method exists: checks that it supports the faults, then
 * schedules the schedule's events and the first random crashes. */
int xp_env_faults_start(xp_env *x, sim_err *err);

#endif
