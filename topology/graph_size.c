/* See graph_size.h. */
#include "topology/graph_size.h"

#include "sim/memory.h"

int topo_graph_size_check(const char *spec, int n, sim_err *err)
{
    double edges = (double)n * (double)(n - 1) / 2;
    double need = edges * TOPO_BYTES_PER_EDGE;
    int64_t limit = sim_memory_limit();
    if (limit < 0 || need <= (double)limit)
        return 0;
    char a[32], b[32];
    return sim_err_set(err, SIM_EINPUT,
                       "graph '%s' on %d nodes: %.0f edges need about %s, more than the %s"
                       " this machine gives (DTSIM_MAX_MEMORY lowers the limit)",
                       spec, n, edges, sim_memory_format(need, a, sizeof a),
                       sim_memory_format((double)limit, b, sizeof b));
}
