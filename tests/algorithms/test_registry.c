/* The registries of the algorithm layer's plug-ins (methods, optimizers,
 * compressors): invariants every entry must keep, never counts or full
 * lists, so that a new plug-in (its file, its meson line, its .def line)
 * needs no edit here. */
#include <criterion/criterion.h>
#include <string.h>
#include <strings.h>

#include "algorithms/compress/compress.h"
#include "algorithms/core/algo.h"
#include "algorithms/optim/optim.h"
#include "config/config.h"

/* The args text of a spec kind: "" or "(...)". */
static int args_ok(const char *args)
{
    return args && (args[0] == '\0' || (args[0] == '(' && args[strlen(args) - 1] == ')'));
}

/* Every key of a plug-in's table is documented: a section, a name, a
 * default, a one-line doc, choices for a choice key; and it does not
 * shadow a common key of the same section. */
static void check_keys(const char *owner, const sim_key *keys, const char *section)
{
    for (int k = 0; keys && keys[k].key; k++) {
        const sim_key *key = &keys[k];
        cr_assert_str_eq(key->section, section, "%s.%s", owner, key->key);
        cr_assert(key->key[0], "%s: key %d has no name", owner, k);
        cr_assert_not_null(key->def, "%s.%s has no default", owner, key->key);
        cr_assert(key->doc && key->doc[0] && !strchr(key->doc, '\n'),
                  "%s.%s has no one-line doc", owner, key->key);
        if (key->type == SIM_KEY_CHOICE)
            cr_assert(key->choices && key->choices[0], "%s.%s: no choices", owner, key->key);
        for (int j = 0; j < k; j++)
            cr_assert_str_neq(keys[j].key, key->key, "%s: key twice", owner);
        for (int c = 0; sim_config_keys[c].key; c++)
            cr_assert(strcmp(sim_config_keys[c].section, section) != 0 ||
                          strcmp(sim_config_keys[c].key, key->key) != 0,
                      "%s.%s shadows a common key", owner, key->key);
    }
}

Test(registry, every_method_has_a_name_summary_reference_and_documented_keys)
{
    for (int i = 0; algo_registry[i]; i++) {
        const algo_vt *vt = algo_registry[i];
        cr_assert(vt->name && vt->name[0], "method %d has no name", i);
        cr_assert(vt->summary && vt->summary[0], "%s has no summary", vt->name);
        cr_assert(vt->reference && vt->reference[0], "%s has no reference", vt->name);
        cr_assert(vt->create && vt->destroy && vt->start && vt->model, "%s", vt->name);
        cr_assert_eq(algo_find(vt->name), vt, "%s", vt->name);
        cr_assert_not_null(algo_keys(vt->name), "%s", vt->name);
        for (int j = 0; j < i; j++)
            cr_assert(strcasecmp(algo_registry[j]->name, vt->name) != 0, "%s twice", vt->name);
        check_keys(vt->name, vt->keys, "algorithm");
    }
    cr_assert_null(algo_find("no_such_method"));
    cr_assert_null(algo_keys("no_such_method"));
}

Test(registry, every_optimizer_has_a_name_summary_and_documented_keys)
{
    for (int i = 0; algo_optim_registry[i]; i++) {
        const algo_optim *o = algo_optim_registry[i];
        cr_assert(o->name && o->name[0], "optimizer %d has no name", i);
        cr_assert(o->summary && o->summary[0], "%s has no summary", o->name);
        cr_assert(o->vectors && o->direction, "%s", o->name);
        cr_assert_eq(algo_optim_find(o->name), o, "%s", o->name);
        for (int j = 0; j < i; j++)
            cr_assert(strcasecmp(algo_optim_registry[j]->name, o->name) != 0, "%s twice",
                      o->name);
    }
    cr_assert_null(algo_optim_find("no_such_optimizer"));
}

Test(registry, every_compressor_has_a_name_arguments_summary_and_size_rule)
{
    for (int i = 0; algo_compress_registry[i]; i++) {
        const algo_compress_vt *vt = algo_compress_registry[i];
        cr_assert(vt->name && vt->name[0], "compressor %d has no name", i);
        cr_assert(args_ok(vt->args), "%s: args '%s'", vt->name, vt->args);
        cr_assert(vt->summary && vt->summary[0], "%s has no summary", vt->name);
        cr_assert(vt->size_rule && vt->size_rule[0], "%s has no size rule", vt->name);
        cr_assert(vt->entries && vt->wire_bytes && vt->encode && vt->decode_add, "%s",
                  vt->name);
        cr_assert_eq(algo_compress_find(vt->name), vt, "%s", vt->name);
        for (int j = 0; j < i; j++)
            cr_assert(strcasecmp(algo_compress_registry[j]->name, vt->name) != 0, "%s twice",
                      vt->name);
    }
    cr_assert_null(algo_compress_find("no_such_compressor"));
}
