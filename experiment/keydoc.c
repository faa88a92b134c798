/* Key documentation with the choice lists of the plug-in registries (see
 * keydoc.h). One row per registry-backed key; each registry is read through
 * a function giving its i-th entry's name and arguments. */
#include "experiment/keydoc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/compress/compress.h"
#include "algorithms/optim/optim.h"
#include "topology/graph.h"
#include "workloads/dataset.h"
#include "workloads/model.h"
#include "workloads/partition.h"

/* The i-th entry's name and arguments ("" or "(x, y)"); 0 past the end. */
typedef int (*entry_fn)(int i, const char **name, const char **args);

static int optim_entry(int i, const char **name, const char **args)
{
    *name = algo_optim_name_at(i);
    *args = "";
    return *name != NULL;
}

#define REGISTRY_ENTRY(fn, registry)                                                          \
    static int fn(int i, const char **name, const char **args)                                \
    {                                                                                         \
        for (int k = 0; registry[k]; k++)                                                     \
            if (k == i) {                                                                     \
                *name = registry[k]->name;                                                    \
                *args = registry[k]->args;                                                    \
                return 1;                                                                     \
            }                                                                                 \
        return 0;                                                                             \
    }
REGISTRY_ENTRY(compress_entry, algo_compress_registry)
REGISTRY_ENTRY(graph_entry, topo_graph_registry)
REGISTRY_ENTRY(model_entry, wl_model_registry)
REGISTRY_ENTRY(dataset_entry, wl_dataset_registry)
REGISTRY_ENTRY(partition_entry, wl_partition_registry)

static const struct {
    const char *section, *key, *list; /* list: the `dtsim list` kind */
    entry_fn entry;
} choice_keys[] = {
    {"algorithm", "optimizer", "optimizers", optim_entry},
    {"algorithm", "compressor", "compressors", compress_entry},
    {"topology", "graph", "graphs", graph_entry},
    {"workload", "model", "models", model_entry},
    {"workload", "dataset", "datasets", dataset_entry},
    {"workload", "partition", "partitions", partition_entry},
};

const char *xp_key_doc(const cfg_key *k, char *buf, size_t len)
{
    if (!buf || len == 0)
        return "";
    size_t used = (size_t)snprintf(buf, len, "%s", k->doc ? k->doc : "");
    if (k->bounds && used < len) { /* the range a reader checks (config.h) */
        int upper = !isinf(k->hi);
        used += (size_t)(upper ? snprintf(buf + used, len - used, " (in %c%.15g, %.15g%c)",
                                          k->bounds[0], k->lo, k->hi, k->bounds[1])
                               : snprintf(buf + used, len - used, " (%s %.15g)",
                                          k->bounds[0] == '(' ? ">" : ">=", k->lo));
    }
    for (size_t c = 0; c < sizeof choice_keys / sizeof choice_keys[0]; c++) {
        if (strcmp(k->section, choice_keys[c].section) || strcmp(k->key, choice_keys[c].key))
            continue;
        const char *name, *args;
        for (int i = 0; used < len && choice_keys[c].entry(i, &name, &args); i++)
            used += (size_t)snprintf(buf + used, len - used, "%s%s%s", i ? " | " : ": ", name,
                                     args);
        if (used < len)
            snprintf(buf + used, len - used, " (dtsim list %s)", choice_keys[c].list);
    }
    return buf;
}
