/* Size check of a dense graph before it is built: its edges grow as n^2,
 * so a large n is refused up front with the estimate instead of running
 * out of memory (igraph's edge list, the neighbour lists, the mixing
 * matrix's entries). */
#ifndef DTSIM_TOPO_GRAPH_SIZE_H
#define DTSIM_TOPO_GRAPH_SIZE_H

#include "sim/err.h"

#define TOPO_BYTES_PER_EDGE 48 /* a lower bound over the structures above */

/* 0, or SIM_EINPUT "graph 'SPEC' on N nodes: ... edges need about X, more
 * than the Y this machine gives" when n(n-1)/2 edges cannot fit. */
int topo_graph_size_check(const char *spec, int n, sim_err *err);

#endif
