/* The resolved configuration (config/config.c): the canonical text (equal
 * for equivalent spellings, different for a changed value, quoting values
 * that would not read back) and release. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "tests/common.h"

static const char *text_a = "[experiment]\n"
                            "name = same\n"
                            "max_iterations = 100\n"
                            "eval_every = 2000ms\n"
                            "[network]\n"
                            "bandwidth = 10Gbps\n"
                            "latency = 5us\n"
                            "sharing = fair\n"
                            "topology = torus(4, 4)\n"
                            "[workers]\n"
                            "compute = exponential(10ms)\n"
                            "device = 15.7TFLOPS\n"
                            "[algorithm]\n"
                            "lr = 0.05\n"
                            "nesterov = false\n";

static const char *text_b = "; the same experiment, spelled differently\n"
                            "[workers]\n"
                            "  device=15700GFLOPS   ; V100\n"
                            "compute = Exponential( 0.01s )\n"
                            "\n"
                            "[algorithm]   ; common keys only\n"
                            "nesterov = no\n"
                            "lr = 5e-2\n"
                            "[network]\n"
                            "topology=torus(4,4)\n"
                            "sharing = FAIR\n"
                            "latency = 0.005ms\n"
                            "bandwidth = 1.25GB/s ; same rate in bytes\n"
                            "[experiment]\n"
                            "eval_every = 2s\n"
                            "max_iterations = 100\n"
                            "name = same\n";

Test(config, canonical_is_equal_for_equivalent_spellings)
{
    cfg_config a, b;
    test_config_load_ok(NULL, text_a, NULL, 0, &a);
    test_config_load_ok(NULL, text_b, NULL, 0, &b);
    char *ca = cfg_canonical(&a), *cb = cfg_canonical(&b);
    cr_assert_str_eq(ca, cb);
    const char *head = "[experiment]\nname = same\nseed = 1\n";
    cr_assert(strncmp(ca, head, strlen(head)) == 0, "%s", ca);
    cr_assert(strstr(ca, "\n[network]\ntopology = torus(4, 4)\nlatency = 5000ns\n"
                         "bandwidth = 1250000000B/s\nsharing = fair\n"),
              "%s", ca);
    cr_assert(strstr(ca, "compute = exponential(10000000ns)\n"), "%s", ca);
    cr_assert(strstr(ca, "eval_every = 2000000000ns\n"), "%s", ca);
    cr_assert(strstr(ca, "lr = 0.05\n"), "%s", ca);
    /* every entry has one line, each section one header */
    int lines = 0, headers = 0;
    for (const char *p = ca; *p; p++)
        lines += *p == '\n';
    for (const char *p = strchr(ca, '['); p; p = strchr(p + 1, '['))
        headers++;
    cr_assert_eq(headers, 7);
    cr_assert_eq(lines, a.n_entries + 7);

    /* a changed value changes the canonical text */
    const char *set = "network.bandwidth=25Gbps";
    cfg_config c;
    test_config_load_ok(NULL, text_a, &set, 1, &c);
    char *cc = cfg_canonical(&c);
    cr_assert_str_neq(ca, cc);
    cr_assert(strstr(cc, "bandwidth = 3125000000B/s\n"), "%s", cc);
    free(ca);
    free(cb);
    free(cc);
    cfg_release(&a);
    cfg_release(&b);
    cfg_release(&c);
}

Test(config, release_is_safe_on_zeroed_and_twice)
{
    cfg_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg_release(&cfg);
    test_config_load_ok(NULL, "", NULL, 0, &cfg);
    cfg_release(&cfg);
    cfg_release(&cfg);
    cr_assert_null(cfg.entries);
    cr_assert_eq(cfg.n_workers, 0);
}

/* Every value's canonical text loads back to the same value and the same
 * canonical text: values that start like a comment or a quote, hold an
 * inline comment, quotes, backslashes or control characters are written in
 * double quotes with escapes. */

Test(config, canonical_text_round_trips_nasty_values)
{
    static const char *const nasty[] = {
        ";x", "a ;b", "a\t;b", "#x", "\"q\"", "say \"hi\"", "back\\slash",
        "\\\" ;", "a\nb", "tab\there", "x;y", "a = b", "[s]", "\"", "\\", "plain",
    };
    for (size_t i = 0; i < sizeof nasty / sizeof nasty[0]; i++) {
        char set[256];
        snprintf(set, sizeof set, "experiment.name=%s", nasty[i]);
        const char *sets[] = {set};
        cfg_config a, b;
        test_config_load_ok(NULL, "[experiment]\nmax_iterations = 3\n", sets, 1, &a);
        cr_assert_str_eq(a.name, nasty[i]);
        char *text = cfg_canonical(&a);
        cr_assert_not_null(text);
        test_config_load_ok(NULL, text, NULL, 0, &b);
        cr_assert_str_eq(b.name, nasty[i], "value %zu from:\n%s", i, text);
        char *again = cfg_canonical(&b);
        cr_assert_str_eq(again, text);
        free(again);
        free(text);
        cfg_release(&a);
        cfg_release(&b);
    }
    /* a plain value keeps its unquoted canonical form */
    cfg_config c;
    test_config_load_ok(NULL, "[experiment]\nname = run one\nmax_iterations = 3\n", NULL, 0, &c);
    char *text = cfg_canonical(&c);
    cr_assert(strstr(text, "\nname = run one\n"), "%s", text);
    free(text);
    cfg_release(&c);
    /* quoted values in a file: a comment may follow; errors name the line */
    test_config_load_ok(NULL, "[experiment]\nname = \"a ;b\" ; note\nmax_iterations = 3\n", NULL,
                        0, &c);
    cr_assert_str_eq(c.name, "a ;b");
    cfg_release(&c);
    test_config_load_fails(NULL, "[experiment]\nname = \"open\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: bad quoted value (a closing '\"' is missing, an escape is not one"
                           " of \\\" \\\\ \\n \\r \\t, or it is too long)");
    test_config_load_fails(NULL, "[experiment]\nname = \"a\" b\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: unexpected text after the quoted value");
}
