/* The environment builder: one cfg_config -> the random streams, dataset,
 * model, partition, physical network, engine, network model, logical graph
 * and mixing matrices, compute model and workers, gathered in the algo_env
 * a method runs in. The runner, the tests and the benchmarks all build
 * through it, so they get the same environment: the same streams created
 * in the same order, the same sizes (collective, server host, proxy
 * message and FLOP sizes) and the same initial models.
 *
 * Build order: streams (data, partition, init, topology, the method's
 * global stream), dataset, model, partition, physical network (with a
 * server host when the method needs one), engine, network, logical graph
 * and mixing matrices (methods with uses_graph), compute model; then,
 * unless check_only, the algo_env and the workers (model, gradient and
 * batch buffers, compute, algorithm and sampling streams, initial model).
 * The method's state is created by xp_env_algo_create. xp_env_destroy
 * frees everything in the reverse order. The env's hooks are left empty
 * for the caller (the runner sets its own). */
#ifndef DTSIM_EXPERIMENT_ENV_H
#define DTSIM_EXPERIMENT_ENV_H

#include "algorithms/core/algo.h"
#include "config/config.h"
#include "sim/err.h"
#include "workloads/dataset.h"
#include "workloads/model.h"
#include "workloads/partition.h"

typedef struct xp_env xp_env;

typedef struct xp_env_opts {
    /* A dataset to use instead of loading cfg's (borrowed, never freed);
     * it must be the one cfg's dataset, test_fraction and normalize give
     * (xp_env_dataset_create makes it). NULL: loaded from cfg. */
    wl_dataset *dataset;
    /* The method; NULL: cfg's [algorithm] name from algo_registry. Tests
     * pass a vtable of their own here (or through xp_run_opts). */
    const algo_vt *vt;
    /* 1: build only up to the compute model (no workers, no algo_env), to
     * check that the experiment can be built. */
    int check_only;
    /* With check_only: then also build the workers and create the method
     * (xp_env_algo_create), for the refusals only its create finds (a
     * method key out of range, keys that disagree); nothing runs. A
     * borrowed sparse data set is still only checked, not densified. */
    int check_method;
    /* Threads computing the workers' gradients (algorithms/algo.h): <= 1
     * computes them serially in the engine's thread, exactly as without a
     * pool; more starts a pool of that many threads (with the caller's),
     * whose results are identical to the serial path's. */
    int threads;
} xp_env_opts;

/* Builds the environment (opts may be NULL). Errors name the config key
 * they come from (path:line: [section] key: ...): SIM_ECONFIG, SIM_EINPUT
 * (a data or network file, e.g. a network whose hosts are not all
 * connected), SIM_ENOMEM. On error nothing is left to free. */
xp_env *xp_env_create(const cfg_config *cfg, const xp_env_opts *opts, sim_err *err);
/* Destroys the method's state (if created; a NULL destroy slot: nothing),
 * then what the run owns (algo_env_alloc, algo_env_own), then the rest in
 * reverse build order. destroy(NULL) is a no-op. */
void xp_env_destroy(xp_env *x);
/* Creates the method's state on the environment (vt->create). */
int xp_env_algo_create(xp_env *x, sim_err *err);

/* The dataset cfg names, loaded as xp_env_create would (its own data
 * stream); errors name [workload] dataset. */
wl_dataset *xp_env_dataset_create(const cfg_config *cfg, sim_err *err);

/* Accessors (borrowed pointers, valid until xp_env_destroy). */
algo_env *xp_env_algo_env(xp_env *x);
const algo_vt *xp_env_vt(const xp_env *x);
/* The gradient threads of the run (xp_env_opts.threads, at least 1). */
int xp_env_threads(const xp_env *x);
void *xp_env_state(const xp_env *x);    /* the method's state, NULL before algo_create */
const cfg_config *xp_env_config(const xp_env *x);
sim_engine *xp_env_engine(const xp_env *x);
sim_net *xp_env_net(const xp_env *x);
/* The timeline recorder that crashes and rejoins report to (borrowed; NULL: none). */
struct xp_trace;
void xp_env_set_trace(xp_env *x, struct xp_trace *t);
wl_model *xp_env_model(const xp_env *x); /* mutable: a benchmark may wrap its vtable */
const wl_dataset *xp_env_dataset(const xp_env *x);
const wl_partition *xp_env_partition(const xp_env *x);
/* The faults applied so far ([faults] schedule and random ones), in time
 * order; time is when each happened, value as the faults table stores it
 * (link: the rate set; crash: the downtime drawn, NAN when none). */
const algo_fault *xp_env_fault_log(const xp_env *x, int *n);
/* Empties the log once its rows are written (xp_record_faults), so that
 * its memory does not grow with simulated time. */
void xp_env_fault_log_clear(xp_env *x);

#endif
