/* The key tables (config/config_keys.c): the enum value of every word of
 * the common choice keys, looked up by name, and the "did you mean" of an
 * unknown key, section or optimizer. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "tests/common.h"

/* Choice keys map each word to its enum by name: every word of the schema's
 * choices has exactly one value, the values differ, and loading a word
 * stores that value. */

Test(config_keys, choice_words_map_to_enums_by_name)
{
    int n_choice = 0;
    for (const cfg_key *k = cfg_keys; k->section; k++) {
        if (k->type != CFG_KEY_CHOICE)
            continue;
        n_choice++;
        const cfg_choice *v = cfg_choice_values(k->section, k->key);
        cr_assert_not_null(v, "[%s] %s has no value table", k->section, k->key);
        int n_words = 1;
        for (const char *c = k->choices; *c; c++)
            n_words += *c == '|';
        int n_values = 0;
        for (const cfg_choice *a = v; a->name; a++, n_values++) {
            size_t len = strlen(a->name);
            const char *at = strstr(k->choices, a->name);
            cr_assert(at && (at == k->choices || at[-1] == '|') &&
                          (at[len] == '|' || at[len] == '\0'),
                      "[%s] %s: '%s' is not a word of %s", k->section, k->key, a->name,
                      k->choices);
            for (const cfg_choice *b = v; b != a; b++)
                cr_assert_neq(a->value, b->value, "[%s] %s", k->section, k->key);
        }
        cr_assert_eq(n_values, n_words, "[%s] %s", k->section, k->key);
    }
    cr_assert_eq(n_choice, 12);
    cr_assert_null(cfg_choice_values("workload", "model"));

    cfg_config cfg;
    test_config_load_ok(NULL, "[network]\ncollective = tree\n[experiment]\neval_model = worker0\n"
                        "[workload]\nwire_dtype = fp16\nsparse = off\n",
                        NULL, 0, &cfg);
    cr_assert_eq(cfg.sparse, CFG_SPARSE_OFF);
    cr_assert_eq(cfg.collective, SIM_COLL_TREE);
    cr_assert_eq(cfg.eval_model, CFG_EVAL_WORKER0);
    cr_assert_eq(cfg.wire_dtype, CFG_WIRE_FP16);
    cr_assert_eq(cfg.wire_bytes, 2);
    cr_assert_eq(cfg.sharing, SIM_SHARE_FAIR);
    cfg_release(&cfg);
}

Test(config_keys, close_names_are_suggested)
{
    test_config_load_fails(&test_config_registries, "[experiment]\nseeed = 3\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:2: [experiment] seeed: unknown key (did you mean 'seed'?)");
    test_config_load_fails(&test_config_registries, "[algorithm]\nbatch_size = 3\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:2: [algorithm] batch_size: unknown key for algorithm "
                           "'allreduce_sgd' (did you mean 'batch'?)");
    test_config_load_fails(&test_config_registries, "[algorithm]\noptimizer = adma\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:2: [algorithm] optimizer: unknown optimizer 'adma' (did you mean "
                           "'adam'? known: sgd, adam, adamw, lamb)");
}
