/* The model registry: invariants every entry must keep, never counts or
 * full lists, so that a new model (its file, its meson line, its line in
 * workloads/models.def) needs no edit here. The dataset and partition
 * registries are checked the same way in test_dataset.c and
 * test_partition.c. */
#include <criterion/criterion.h>
#include <string.h>

#include "workloads/model.h"

Test(registry, every_model_has_a_name_arguments_summary_and_kernels)
{
    for (int i = 0; wl_model_registry[i]; i++) {
        const wl_model_vt *vt = wl_model_registry[i];
        cr_assert(vt->name && vt->name[0], "model %d has no name", i);
        /* "", "(h1, h2, ...)", or "[(c1, c2)]" for optional arguments */
        cr_assert(vt->args && (vt->args[0] == '\0' || strchr("([", vt->args[0])),
                  "%s: args '%s'", vt->name, vt->args);
        cr_assert(vt->summary && vt->summary[0], "%s has no summary", vt->name);
        cr_assert(vt->create && vt->workspace_floats && vt->init && vt->loss_grad &&
                      vt->evaluate,
                  "%s", vt->name);
        cr_assert_eq(wl_model_find(vt->name), vt, "%s", vt->name);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(wl_model_registry[j]->name, vt->name);
    }
    cr_assert_null(wl_model_find("no_such_model"));
}
