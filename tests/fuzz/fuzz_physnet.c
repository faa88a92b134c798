/* Fuzz target: physical network files, [network] topology = file(NET): a
 * GraphML file with host marks and per-link latency and bandwidth (input
 * starting with '<', written as .graphml), else an edge list. The network
 * is built for one host and its link description filled as a run does. */
#include <stdio.h>

#include "tests/fuzz/fuzz_util.h"
#include "topology/physnet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    const char *ext = fuzz_looks_like_xml(data, size) ? ".graphml" : ".txt";
    const char *path = fuzz_write_temp("net", ext, data, size);
    char spec[4200];
    snprintf(spec, sizeof spec, "file(%s)", path);
    sim_err err = {0};
    topo_physnet pn;
    int rc = topo_physnet_build(&pn, spec, 1, &err);
    fuzz_report("topo_physnet_build", rc, &err);
    if (rc == 0) {
        sim_net_desc desc;
        topo_physnet_desc(&pn, 1e-6, 1.25e9, SIM_SHARE_FAIR, &desc);
        topo_physnet_release(&pn);
    }
    return 0;
}
