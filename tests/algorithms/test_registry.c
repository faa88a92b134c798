/* The registries of the algorithm layer's plug-ins (methods, optimizers,
 * compressors): invariants every entry must keep, never counts or full
 * lists, so that a new plug-in (its file, its meson line, its .def line)
 * needs no edit here. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "algorithms/compress/compress.h"
#include "algorithms/core/algo.h"
#include "algorithms/optim/optim.h"
#include "config/config.h"
#include "experiment/experiment.h"
#include "tests/common.h"

/* The args text of a spec kind: "" or "(...)". */
static int args_ok(const char *args)
{
    return args && (args[0] == '\0' || (args[0] == '(' && args[strlen(args) - 1] == ')'));
}

/* Every key of a plug-in's table is documented: a section, a name, a
 * default, a one-line doc, choices for a choice key; and it does not
 * shadow a common key of the same section. */
static void check_keys(const char *owner, const cfg_key *keys, const char *section)
{
    for (int k = 0; keys && keys[k].key; k++) {
        const cfg_key *key = &keys[k];
        cr_assert_str_eq(key->section, section, "%s.%s", owner, key->key);
        cr_assert(key->key[0], "%s: key %d has no name", owner, k);
        cr_assert_not_null(key->def, "%s.%s has no default", owner, key->key);
        cr_assert(key->doc && key->doc[0] && !strchr(key->doc, '\n'),
                  "%s.%s has no one-line doc", owner, key->key);
        if (key->type == CFG_KEY_CHOICE)
            cr_assert(key->choices && key->choices[0], "%s.%s: no choices", owner, key->key);
        if (key->bounds) { /* a checked range: on a number, holding the default */
            double v = strtod(key->def, NULL), lo = key->lo, hi = key->hi;
            const char *b = key->bounds;
            cr_assert(key->type == CFG_KEY_INT || key->type == CFG_KEY_DOUBLE, "%s", key->key);
            cr_assert(strlen(b) == 2 && strchr("[(", b[0]) && strchr("])", b[1]) && lo <= hi,
                      "%s.%s: range", owner, key->key);
            cr_assert((b[0] == '(' ? v > lo : v >= lo) && (b[1] == ')' ? v < hi : v <= hi),
                      "%s.%s: the default is out of its range", owner, key->key);
        }
        cr_assert(key->size == 0 || key->type == CFG_KEY_INT || key->type == CFG_KEY_DOUBLE ||
                      key->type == CFG_KEY_BOOL,
                  "%s.%s: a read row is a number or a bool", owner, key->key);
        for (int j = 0; j < k; j++)
            cr_assert_str_neq(keys[j].key, key->key, "%s: key twice", owner);
        for (int c = 0; cfg_keys[c].key; c++)
            cr_assert(strcmp(cfg_keys[c].section, section) != 0 ||
                          strcmp(cfg_keys[c].key, key->key) != 0,
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
        cr_assert(vt->create && vt->start && vt->model, "%s", vt->name);
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
        cr_assert(o->direction, "%s", o->name);
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
        cr_assert(vt->wire_bytes && vt->encode, "%s", vt->name);
        cr_assert_eq(algo_compress_find(vt->name), vt, "%s", vt->name);
        for (int j = 0; j < i; j++)
            cr_assert(strcasecmp(algo_compress_registry[j]->name, vt->name) != 0, "%s twice",
                      vt->name);
    }
    cr_assert_null(algo_compress_find("no_such_compressor"));
}

/* An optimizer's keys are documented like a method's, and (while the
 * common schema still lists them) agree with the schema's row: the same
 * default, type and doc. */
Test(registry, every_optimizer_key_is_documented_and_agrees_with_the_schema)
{
    for (int i = 0; algo_optim_registry[i]; i++) {
        const algo_optim *o = algo_optim_registry[i];
        for (const cfg_key *k = o->keys; k && k->key; k++) {
            cr_assert_str_eq(k->section, "algorithm", "%s.%s", o->name, k->key);
            cr_assert(k->def && k->doc && k->doc[0], "%s.%s", o->name, k->key);
            cr_assert(algo_optim_reads_key(o, k->key), "%s.%s", o->name, k->key);
            for (int j = 0; algo_optim_registry[j]; j++)
                for (const cfg_key *q = algo_optim_registry[j]->keys; j != i && q && q->key; q++)
                    cr_assert_str_neq(q->key, k->key, "%s declared twice", k->key);
            for (int c = 0; cfg_keys[c].key; c++) {
                const cfg_key *s = &cfg_keys[c];
                if (strcmp(s->section, "algorithm") || strcmp(s->key, k->key))
                    continue;
                cr_assert_str_eq(s->def, k->def, "%s", k->key);
                cr_assert_eq(s->type, k->type, "%s", k->key);
                cr_assert_str_eq(s->doc, k->doc, "%s", k->key);
            }
        }
    }
}

/* The facts the experiment layer reads from a method are vtable data: the
 * server rule, bucket support, the optimizer whose keys it reads. */
Test(registry, method_facts_are_vtable_data)
{
    cfg_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.optimizer, sizeof cfg.optimizer, "sgd");
    for (int i = 0; algo_registry[i]; i++) {
        const algo_vt *vt = algo_registry[i];
        cfg.collective = SIM_COLL_RING;
        cr_assert_eq(algo_needs_server(vt, &cfg), vt->server == ALGO_SERVER_ALWAYS, "%s",
                     vt->name);
        cfg.collective = SIM_COLL_PS;
        cr_assert_eq(algo_needs_server(vt, &cfg), vt->server != ALGO_SERVER_NONE, "%s",
                     vt->name);
        if (vt->optimizer)
            cr_assert_not_null(algo_optim_find(vt->optimizer), "%s: optimizer '%s'", vt->name,
                               vt->optimizer);
        cfg.bucket = 0;
        cr_assert_eq(algo_bucket_check(vt, &cfg, NULL), 0, "%s", vt->name);
        cfg.bucket = 1024;
        sim_err err = {0};
        int rc = algo_bucket_check(vt, &cfg, &err);
        if (vt->supports_bucket) {
            cr_assert_eq(rc, 0, "%s", vt->name);
        } else {
            cr_assert_eq(rc, SIM_ECONFIG, "%s", vt->name);
            cr_assert(strstr(err.msg, "[algorithm] bucket") && strstr(err.msg, vt->name),
                      "%s", err.msg);
        }
    }
}

/* Which optimizer keys a configuration reads: the configured optimizer's
 * (with its base's), and those of the method's own optimizer. */
Test(registry, optimizer_keys_read_by_the_optimizer_or_the_method)
{
    cfg_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.optimizer, sizeof cfg.optimizer, "sgd");
    const algo_vt plain = {.name = "plain"}, own = {.name = "own", .optimizer = "lamb"};
    cr_assert_not(algo_reads_optimizer_key(&plain, &cfg, "beta1"));
    cr_assert(algo_reads_optimizer_key(&own, &cfg, "beta1"));
    cr_assert(algo_reads_optimizer_key(&own, &cfg, "lamb_max_trust"));
    snprintf(cfg.optimizer, sizeof cfg.optimizer, "adamw");
    cr_assert(algo_reads_optimizer_key(&plain, &cfg, "eps"));
    cr_assert_not(algo_reads_optimizer_key(&plain, &cfg, "lamb_min_trust"));
    cr_assert_not(algo_reads_optimizer_key(&plain, &cfg, "no_such_key"));
}

/* algo_keys_read gives a row's range check and message: a double's
 * interval, a double above a bound (a row of a state's extension), an
 * integer's lower bound. */
Test(registry, key_rows_are_read_with_their_range)
{
    static const char *const cases[][3] = {
        {"algorithm.name=gravac", "algorithm.ewma_alpha=0",
         "--set algorithm.ewma_alpha: must be in (0, 1], got 0"},
        {"algorithm.name=slowmo", "algorithm.slow_lr=0",
         "--set algorithm.slow_lr: must be > 0, got 0"},
        {"algorithm.name=asgd", "algorithm.max_staleness=-1",
         "--set algorithm.max_staleness: must be >= 0, got -1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cfg_config cfg;
        sim_err err = {0};
        cr_assert_eq(cfg_load_string(xp_experiment_schema(), "c.ini", test_base_ini, cases[i], 2,
                                     &cfg, &err), 0, "%s", err.msg);
        xp_run_opts opts = {0};
        cr_assert_eq(xp_experiment_run(&cfg, &opts, NULL, &err), SIM_ECONFIG, "%s", cases[i][1]);
        cr_assert(strstr(err.msg, cases[i][2]), "got '%s', want '%s'", err.msg, cases[i][2]);
        cfg_release(&cfg);
    }
}
