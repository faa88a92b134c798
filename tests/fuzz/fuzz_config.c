/* Fuzz target: experiment files. The input is the text of an experiment
 * file. It is loaded with cfg_load_string; when it loads, its
 * canonical text must load again and give the same canonical text (the
 * round trip that makes equal canonical texts the same experiment). Every
 * "key = value" line's value is also fed to the unit parsers, the spec
 * splitter, the compute-distribution parser and the parser of tables by
 * message size, whose canonical forms must parse back to themselves. A broken round trip aborts (a finding). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "experiment/experiment.h"
#include "sim/compute.h"
#include "sim/network.h"
#include "sim/units.h"
#include "tests/fuzz/fuzz_util.h"

#define NAME "fuzz.ini"
static void round_trip(const char *text)
{
    cfg_config cfg, again;
    sim_err err = {0};
    int rc = cfg_load_string(xp_experiment_schema(), NAME, text, NULL, 0, &cfg, &err);
    fuzz_report("cfg_load_string", rc, &err);
    if (rc != 0)
        return;
    char *canon = cfg_canonical(&cfg);
    cfg_release(&cfg);
    if (!canon)
        return; /* out of memory */
    if (cfg_load_string(xp_experiment_schema(), NAME, canon, NULL, 0, &again, &err) != 0) {
        fprintf(stderr, "canonical text does not load: %s\n--- canonical text:\n%s", err.msg,
                canon);
        abort();
    }
    char *canon2 = cfg_canonical(&again);
    cfg_release(&again);
    if (canon2 && strcmp(canon, canon2) != 0) {
        fprintf(stderr, "canonical text changed on reload\n--- first:\n%s--- second:\n%s", canon,
                canon2);
        abort();
    }
    free(canon2);
    free(canon);
}

/* A table by size (efficiency_by_size, overhead_by_size): its canonical
 * text must parse back to the same table. */
static void by_size(const char *v, sim_net_by_size_kind kind)
{
    sim_net_by_size t, back;
    char canon[1100], canon2[1100];
    if (sim_net_by_size_parse(v, kind, &t, NULL) != 0 ||
        sim_net_by_size_format(&t, kind, canon, sizeof canon) != 0)
        return;
    if (sim_net_by_size_parse(canon, kind, &back, NULL) != 0 ||
        sim_net_by_size_format(&back, kind, canon2, sizeof canon2) != 0 ||
        strcmp(canon, canon2) != 0) {
        fprintf(stderr, "table by size '%s' formats as '%s', which does not read back\n", v,
                canon);
        abort();
    }
}

/* One value as every kind of value the schema has. */
static void values(const char *v)
{
    sim_time t;
    double d;
    int64_t i;
    int b;
    (void)sim_parse_time(v, &t, NULL);
    (void)sim_parse_rate(v, &d, NULL);
    (void)sim_parse_size(v, &d, NULL);
    (void)sim_parse_flops(v, &d, NULL);
    (void)sim_parse_double(v, &d, NULL);
    (void)sim_parse_int(v, &i, NULL);
    (void)sim_parse_bool(v, &b, NULL);
    sim_spec *sp = malloc(sizeof *sp);
    if (sp) {
        (void)sim_spec_parse(v, sp, NULL);
        free(sp);
    }
    by_size(v, SIM_BY_SIZE_EFFICIENCY);
    by_size(v, SIM_BY_SIZE_TIME);
    sim_dist dist, back;
    if (sim_dist_parse(v, &dist, NULL) == 0) {
        char canon[600], canon2[600];
        sim_dist_format(&dist, canon, sizeof canon);
        if (sim_dist_parse(canon, &back, NULL) != 0) {
            fprintf(stderr, "distribution '%s' formats as '%s', which does not parse\n", v, canon);
            abort();
        }
        sim_dist_format(&back, canon2, sizeof canon2);
        if (strcmp(canon, canon2) != 0) {
            fprintf(stderr, "distribution '%s': '%s' reads back as '%s'\n", v, canon, canon2);
            abort();
        }
    }
}

static void each_value(char *text)
{
    for (char *save = NULL, *line = strtok_r(text, "\r\n", &save); line;
         line = strtok_r(NULL, "\r\n", &save)) {
        char *eq = strchr(line, '=');
        if (eq)
            values(sim_str_trim(eq + 1));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    round_trip(text);
    each_value(text);
    free(text);
    return 0;
}
