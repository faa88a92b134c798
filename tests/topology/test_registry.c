/* The logical-graph registry: invariants every entry must keep, never
 * counts or full lists, so that a new graph (its file, its meson line, its
 * line in topology/graphs.def) needs no edit here. */
#include <criterion/criterion.h>
#include <string.h>

#include "topology/graph.h"

Test(registry, every_graph_has_a_name_arguments_summary_and_builder)
{
    for (int i = 0; topo_graph_registry[i]; i++) {
        const topo_graph_vt *vt = topo_graph_registry[i];
        cr_assert(vt->name && vt->name[0], "graph %d has no name", i);
        /* "", "(k)", or "[(r, c)]" for optional arguments */
        cr_assert(vt->args && (vt->args[0] == '\0' || strchr("([", vt->args[0])),
                  "%s: args '%s'", vt->name, vt->args);
        cr_assert(vt->summary && vt->summary[0], "%s has no summary", vt->name);
        cr_assert_not_null(vt->build, "%s", vt->name);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(topo_graph_registry[j]->name, vt->name);
    }
}
