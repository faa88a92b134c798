/* Memory estimates (memory.h). Only the part that grows with the
 * configuration's sizes is counted: a lower bound of what the run needs,
 * so a refusal is certain to be right. */
#include "experiment/memory.h"

#include <stdio.h>

#include "sim/memory.h"
#include "sim/units.h"
#include "workloads/dataset.h"

/* The generated data sets, whose size their spec's last two arguments
 * give (d, n); defined in workloads/synthetic.c (datasets.def). */
extern const wl_dataset_vt wl_dataset_blobs_vt, wl_dataset_synthetic_linear_vt;

double xp_memory_workers(const cfg_config *cfg, int64_t n_params)
{
    return (double)cfg->n_workers * (double)n_params * XP_MODEL_COPIES * sizeof(float);
}

double xp_memory_dataset(const cfg_config *cfg, double *samples, double *dim)
{
    sim_spec sp;
    *samples = *dim = 0;
    if (sim_spec_parse(cfg->dataset, &sp, NULL) != 0 || sp.nargs < 2)
        return 0;
    const wl_dataset_vt *vt = wl_dataset_find(sp.name);
    if (vt != &wl_dataset_blobs_vt && vt != &wl_dataset_synthetic_linear_vt)
        return 0;
    int64_t d = 0, n = 0;
    if (sim_parse_int(sp.args[sp.nargs - 2], &d, NULL) != 0 ||
        sim_parse_int(sp.args[sp.nargs - 1], &n, NULL) != 0 || d < 1 || n < 1)
        return 0; /* the data set's own check names the bad argument */
    *samples = (double)n;
    *dim = (double)d;
    return (double)n * ((double)d + 1) * sizeof(float); /* features and a label each */
}

static int refuse(const cfg_config *cfg, const char *section, const char *key, double need,
                  int64_t limit, const char *what, sim_err *err)
{
    char a[32], b[32];
    return cfg_error(cfg, section, key, SIM_ECONFIG, err,
                     "%s need about %s, more than the %s this machine gives"
                     " (DTSIM_MAX_MEMORY lowers the limit)",
                     what, sim_memory_format(need, a, sizeof a),
                     sim_memory_format((double)limit, b, sizeof b));
}

int xp_memory_check_dataset(const cfg_config *cfg, sim_err *err)
{
    int64_t limit;
    if (sim_memory_limit_get(&limit, err))
        return err->code;
    double samples, dim, need = xp_memory_dataset(cfg, &samples, &dim);
    if (limit < 0 || need <= (double)limit)
        return 0;
    char what[160];
    snprintf(what, sizeof what, "%.0f samples of %.0f features", samples, dim);
    return refuse(cfg, "workload", "dataset", need, limit, what, err);
}

/* The address space the rest of the run reserves (the data set and the
 * model's definition are already in VmSize): the workers' models, and per
 * gradient thread OpenBLAS's buffer and the thread's stack. Under
 * RLIMIT_AS a buffer OpenBLAS cannot map is retried for ever inside the
 * first sgemm, so this refusal is the only way out. */
static int check_address_space(const cfg_config *cfg, int64_t n_params, int threads,
                               sim_err *err)
{
    int64_t limit;
    int64_t room = sim_memory_as_room(&limit);
    double need = xp_memory_workers(cfg, n_params) +
                  (threads > 1 ? threads : 1) * (double)XP_MEMORY_BLAS_BUFFER +
                  (threads > 1 ? threads - 1 : 0) * (double)XP_MEMORY_THREAD_STACK +
                  XP_MEMORY_AS_MARGIN;
    if (room < 0 || need <= (double)room)
        return 0;
    char a[32], b[32], c[32];
    return cfg_error(cfg, "workload", "model", SIM_ECONFIG, err,
                     "%d workers (workers.count) of %lld parameters on %d gradient thread%s"
                     " need about %s more address space (the models, and per thread"
                     " OpenBLAS's %d MiB buffer), more than the %s left under"
                     " the address-space limit of %s (ulimit -v, prlimit --as)",
                     cfg->n_workers, (long long)n_params, threads > 1 ? threads : 1,
                     threads > 1 ? "s" : "", sim_memory_format(need, a, sizeof a),
                     (int)(XP_MEMORY_BLAS_BUFFER >> 20), sim_memory_format((double)room, b, sizeof b),
                     sim_memory_format((double)limit, c, sizeof c));
}

int xp_memory_check(const cfg_config *cfg, int64_t n_params, int threads, sim_err *err)
{
    int64_t limit;
    if (sim_memory_limit_get(&limit, err))
        return err->code;
    if (check_address_space(cfg, n_params, threads, err))
        return err->code;
    double samples, dim, data = xp_memory_dataset(cfg, &samples, &dim);
    double models = xp_memory_workers(cfg, n_params);
    if (limit < 0 || models + data <= (double)limit)
        return 0;
    char a[32], b[32], d[32];
    if (data < (models + data) / 10) /* the models alone are the cause */
        return cfg_error(cfg, "workload", "model", SIM_ECONFIG, err,
                         "%d workers (workers.count) of %lld parameters need about %s (%d"
                         " copies of each model), more than the %s this machine gives"
                         " (DTSIM_MAX_MEMORY lowers the limit)",
                         cfg->n_workers, (long long)n_params,
                         sim_memory_format(models + data, a, sizeof a), XP_MODEL_COPIES,
                         sim_memory_format((double)limit, b, sizeof b));
    char what[320];
    snprintf(what, sizeof what, "%d workers (workers.count) of %lld parameters (%d copies of"
                                " each model) and the data set (workload.dataset, %s)",
             cfg->n_workers, (long long)n_params, XP_MODEL_COPIES,
             sim_memory_format(data, d, sizeof d));
    return refuse(cfg, "workload", "model", models + data, limit, what, err);
}
