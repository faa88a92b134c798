/* See graph_size.h. */
#include "topology/graph_size.h"

#include "sim/memory.h"

int topo_graph_size_check(const char *spec, int n, sim_err *err)
{
    double edges = (double)n * (double)(n - 1) / 2;
    return sim_memory_check(edges * TOPO_BYTES_PER_EDGE, SIM_EINPUT, err,
                            "graph '%s' on %d nodes: %.0f edges", spec, n, edges);
}
