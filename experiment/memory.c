/* Memory estimates (memory.h). Only the part that grows with the
 * configuration's sizes is counted: a lower bound of what the run needs,
 * so a refusal is certain to be right. */
#include "experiment/memory.h"

#include "sim/memory.h"

double xp_memory_workers(const cfg_config *cfg, int64_t n_params)
{
    return (double)cfg->n_workers * (double)n_params * XP_MODEL_COPIES * sizeof(float);
}

int xp_memory_check(const cfg_config *cfg, int64_t n_params, sim_err *err)
{
    int64_t limit = sim_memory_limit();
    double need = xp_memory_workers(cfg, n_params);
    if (limit < 0 || need <= (double)limit)
        return 0;
    char a[32], b[32];
    return cfg_error(cfg, "workload", "model", SIM_ECONFIG, err,
                            "%d workers (workers.count) of %lld parameters need about %s (%d"
                            " copies of each model), more than the %s this machine gives"
                            " (DTSIM_MAX_MEMORY lowers the limit)",
                            cfg->n_workers, (long long)n_params,
                            sim_memory_format(need, a, sizeof a), XP_MODEL_COPIES,
                            sim_memory_format((double)limit, b, sizeof b));
}
