/* Fuzz target: logical graph files, [topology] graph = file(PATH): an edge
 * list, or GraphML when the input starts with '<'. The file is read at its
 * natural size (ids up to TOPO_FILE_MAX_NODES), then built as a run builds
 * it (CSR lists, degrees, connectivity) for that many workers (16 when it
 * has more than 4096 nodes or did not read), then for 2 workers (ids
 * checked against 2 while reading). */
#include <stdio.h>

#include "tests/fuzz/fuzz_util.h"
#include "topology/graph.h"

static void build(const char *spec, int n)
{
    sim_err err = {0};
    topo_graph g;
    int rc = topo_graph_build(&g, spec, n, NULL, &err);
    fuzz_report("topo_graph_build", rc, &err);
    if (rc == 0) {
        if (g.n != n || igraph_vcount(&g.graph) != n)
            __builtin_trap();
        topo_graph_release(&g);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    const char *path = fuzz_write_temp("graph", "", data, size);
    char spec[4200];
    snprintf(spec, sizeof spec, "file(%s)", path);
    sim_err err = {0};
    igraph_t t;
    int n = 16;
    int rc = topo_graph_read_file(path, 0, &t, &err);
    fuzz_report("topo_graph_read_file", rc, &err);
    if (rc == 0) {
        igraph_integer_t nv = igraph_vcount(&t);
        if (nv > TOPO_FILE_MAX_NODES)
            __builtin_trap();
        if (nv >= 1 && nv <= 4096)
            n = (int)nv;
        igraph_destroy(&t);
    }
    build(spec, n);
    build(spec, 2);
    return 0;
}
