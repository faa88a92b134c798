/* dtsim list: what can be named in an experiment file, from the registries
 * (methods, graphs, networks, models, datasets, ...). Takes one optional
 * category and no options. `dtsim list keys` is the source of
 * docs/configuration.md (tools/gen_config_doc.sh parses it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/algo.h"
#include "algorithms/compress/compress.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "experiment/keydoc.h"
#include "sim/compute.h"
#include "topology/graph.h"
#include "topology/physnet.h"
#include "workloads/dataset.h"
#include "workloads/model.h"
#include "workloads/partition.h"
#include "workloads/presets.h"

static const char help[] =
    "Usage: dtsim list [algorithms|graphs|networks|models|datasets|partitions|distributions|"
    "presets|compressors|optimizers|keys]\n\n"
    "Describes what can be named in an experiment file. Without an argument, lists everything.\n"
    "`dtsim list keys` prints every key with its default, kind of value and meaning,\n"
    "then every method's own [algorithm] keys (docs/configuration.md is generated\n"
    "from it).\n";

/* One "  NAME(ARGS)  summary" line, the name padded to width. */
static void list_entry(int width, const char *name, const char *args, const char *summary)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s%s", name, args);
    printf("  %-*s %s\n", width, nm, summary);
}

static void list_algorithms(void)
{
    printf("algorithms ([algorithm] name):\n");
    for (int i = 0; algo_registry[i]; i++) {
        const algo_vt *vt = algo_registry[i];
        printf("  %-16s %s (docs/algorithms.md %s)\n", vt->name, vt->summary, vt->reference);
        char doc[1024];
        for (const cfg_key *k = vt->keys; k && k->key; k++)
            printf("      %-14s = %-10s %s\n", k->key, k->def, xp_key_doc(k, doc, sizeof doc));
    }
}

static void list_networks(void)
{
    printf("networks ([network] topology):\n");
    for (int i = 0; topo_physnet_registry[i]; i++) {
        const topo_physnet_vt *vt = topo_physnet_registry[i];
        list_entry(22, vt->name, vt->args, vt->summary);
    }
    printf("server presets (NAME(NODES); the [network] latency and bandwidth are each "
           "server's interface):\n");
    for (int i = 0; topo_server_at(i); i++) {
        const topo_server *sv = topo_server_at(i);
        printf("  %-10s %d GPUs, %g GB/s and %g us per GPU link; %s\n", sv->name, sv->per_node,
               sv->intra_bandwidth / 1e9, sv->intra_latency * 1e6, sv->source);
    }
}

static void list_graphs(void)
{
    printf("graphs ([topology] graph; see `dtsim topo GRAPH`):\n");
    for (int i = 0; topo_graph_registry[i]; i++) {
        const topo_graph_vt *vt = topo_graph_registry[i];
        list_entry(22, vt->name, vt->args, vt->summary);
    }
    printf("  weights ([topology] weights): metropolis (any graph) | uniform (regular graphs) |\n"
           "    metropolis_lazy ((I + W) / 2 of metropolis: eigenvalues in [0, 1])\n");
}

static void list_models(void)
{
    printf("models ([workload] model):\n");
    for (int i = 0; wl_model_registry[i]; i++)
        list_entry(16, wl_model_registry[i]->name, wl_model_registry[i]->args,
                   wl_model_registry[i]->summary);
}

static void list_info(const char *title, const char *const *names, const char *const *args,
                      const char *const *sums, int n)
{
    printf("%s:\n", title);
    for (int i = 0; i < n; i++)
        list_entry(28, names[i], args[i], sums[i]);
}

#define LIST_TABLE(title, table)                                                      \
    do {                                                                              \
        int n_ = 0;                                                                   \
        while (table[n_].name)                                                        \
            n_++;                                                                     \
        const char **a_ = calloc((size_t)n_ * 3 + 1, sizeof *a_);                     \
        if (!a_)                                                                      \
            break;                                                                    \
        for (int i_ = 0; i_ < n_; i_++) {                                             \
            a_[i_] = table[i_].name;                                                  \
            a_[n_ + i_] = table[i_].args;                                             \
            a_[2 * n_ + i_] = table[i_].summary;                                      \
        }                                                                             \
        list_info(title, a_, a_ + n_, a_ + 2 * n_, n_);                               \
        free(a_);                                                                     \
    } while (0)

/* `dtsim list keys`: one line per key, "key = default  (kind) meaning", where
 * kind is the value's type (time, rate, ... take units) or its choices
 * "a|b|c"; the default is followed by at least two spaces.
 * tools/gen_config_doc.sh parses this output into docs/configuration.md. */
static const char *key_kind(const cfg_key *k)
{
    static const char *const kinds[] = {"integer", "number", "time", "rate", "size",
                                        "FLOP/s",  "bool",   "text"};
    if (k->type == CFG_KEY_CHOICE && k->choices)
        return k->choices;
    return (unsigned)k->type < sizeof kinds / sizeof kinds[0] ? kinds[k->type] : "text";
}

static void list_key(const cfg_key *k)
{
    char doc[1024];
    printf("    %-20s = %-14s  (%s) %s\n", k->key, k->def[0] ? k->def : "\"\"", key_kind(k),
           xp_key_doc(k, doc, sizeof doc));
}

static void list_keys(void)
{
    printf("experiment-file keys ([section] key = default  (kind or choices) meaning):\n");
    const char *sec = "";
    for (const cfg_key *k = cfg_keys; k->key; k++) {
        if (strcmp(sec, k->section) != 0) {
            printf("  [%s]\n", k->section);
            sec = k->section;
        }
        list_key(k);
    }
    printf("method-specific keys (only with that [algorithm] name):\n");
    for (int i = 0; algo_registry[i]; i++) {
        const algo_vt *vt = algo_registry[i];
        int has = vt->keys && vt->keys->key;
        printf("  [algorithm] name = %s (docs/algorithms.md %s)%s\n", vt->name, vt->reference,
               has ? ":" : ": no keys of its own");
        for (const cfg_key *k = vt->keys; k && k->key; k++)
            list_key(k);
    }
}

static void list_presets(void)
{
    printf("model proxies ([workload] proxy: message sizes and compute times of a larger "
           "network;\n  training FLOPs = 3 x forward, a multiply-add = 2 FLOPs):\n");
    printf("  %-12s %14s %16s %6s  %s\n", "name", "parameters", "train FLOP/sample", "layers",
           "sample; source");
    for (int i = 0; wl_proxy_table[i].name; i++) {
        const wl_proxy *p = &wl_proxy_table[i];
        printf("  %-12s %14lld %16.4g %6d  %s; %s\n", p->name, (long long)p->params,
               p->flops_per_sample, wl_proxy_layers(p, NULL, 0), p->sample, p->source);
    }
    printf("devices ([workers] device = NAME or NAME*COUNT, ..., or a speed such as "
           "15.7TFLOPS;\n  peak FLOP/s at [workers] precision, - = no such unit):\n");
    printf("  %-12s %10s %10s %10s %10s  %s\n", "name", "fp32", "tf32", "fp16", "bf16",
           "source");
    for (int i = 0; wl_device_table[i].name; i++) {
        const wl_device *d = &wl_device_table[i];
        printf("  %-12s", d->name);
        for (int p = 0; p < WL_PRECISIONS; p++)
            if (d->peak[p] > 0)
                printf(" %10.4g", d->peak[p]);
            else
                printf(" %10s", "-");
        printf("  %s\n", d->source);
    }
    printf("published throughputs ([workers] efficiency = published: images/s x training "
           "FLOPs / peak):\n");
    for (const wl_throughput *t = wl_throughput_table; t->device; t++)
        printf("  %-6s %-12s %s %7.1f/s  efficiency %.3f%s; %s\n", t->device, t->proxy,
               wl_precision_name((int)t->precision), t->samples_per_s,
               wl_device_efficiency(t->device, wl_proxy_find(t->proxy), (int)t->precision),
               t->confirmed ? "" : " (not confirmed)", t->source);
}

static void list_compressors(void)
{
    printf("compressors ([algorithm] compressor = SPEC; error_feedback = true keeps each "
           "worker's\n  residual e and sends C(u + e); d = parameters on the wire: "
           "sim_params, proxy, else the model's):\n");
    for (int i = 0; algo_compress_registry[i]; i++) {
        const algo_compress_vt *vt = algo_compress_registry[i];
        list_entry(16, vt->name, vt->args, vt->summary);
        printf("  %-16s message: %s\n", "", vt->size_rule);
        printf("  %-16s aggregated by %s\n", "",
               vt->agg == ALGO_COMPRESS_ALLGATHER
                   ? "all-gather (supports differ; ring, whatever [network] collective says)"
                   : "all-reduce (same support; [network] collective)");
    }
    printf("  methods that accept a compressor other than none:");
    for (int i = 0, first = 1; algo_registry[i]; i++)
        if (algo_registry[i]->supports_compression) {
            printf("%s%s", first ? " " : ", ", algo_registry[i]->name);
            first = 0;
        }
    printf("\n");
}

static void list_optimizers(void)
{
    printf("optimizers ([algorithm] optimizer; sgd uses momentum and nesterov; the keys\n"
           "  each reads are listed under it):\n");
    for (int i = 0; algo_optim_registry[i]; i++) {
        const algo_optim *o = algo_optim_registry[i];
        printf("  %-8s %s; %s weight decay\n", o->name, o->summary,
               o->decoupled_wd ? "decoupled" : "coupled");
        for (const algo_optim *b = o; b; b = b->base)
            for (const cfg_key *k = b->keys; k && k->key; k++)
                list_key(k);
    }
}

static void list_datasets(void)
{
    printf("datasets ([workload] dataset):\n");
    for (int i = 0; wl_dataset_registry[i]; i++) {
        const wl_dataset_vt *vt = wl_dataset_registry[i];
        list_entry(28, vt->name, vt->args, vt->summary);
    }
}
static void list_partitions(void)
{
    printf("partitions ([workload] partition):\n");
    for (int i = 0; wl_partition_registry[i]; i++) {
        const wl_partition_vt *vt = wl_partition_registry[i];
        list_entry(28, vt->name, vt->args, vt->summary);
    }
}
static void list_distributions(void)
{
    LIST_TABLE("distributions ([workers] compute)", sim_dist_table);
}

static const struct {
    const char *name;
    void (*fn)(void);
} list_kinds[] = {
    {"algorithms", list_algorithms}, {"graphs", list_graphs},
    {"networks", list_networks},     {"models", list_models},
    {"datasets", list_datasets},     {"partitions", list_partitions},
    {"distributions", list_distributions}, {"presets", list_presets},
    {"compressors", list_compressors}, {"optimizers", list_optimizers},
    {"keys", list_keys},
};

/* Not through cli_options_parse: an argument other than a category,
 * "--bogus" included, is an unknown category, and any after the first is
 * ignored, as before the parser existed. */
int cli_list_main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    if (strcmp(what, "--help") == 0 || strcmp(what, "-h") == 0) {
        fputs(help, stdout);
        return 0;
    }
    int all = strcmp(what, "all") == 0, any = 0;
    for (size_t i = 0; i < sizeof list_kinds / sizeof list_kinds[0]; i++) {
        if (all || strcmp(what, list_kinds[i].name) == 0) {
            list_kinds[i].fn();
            any = 1;
        }
    }
    if (!any)
        return cli_usage_error("list",
                               "unknown category '%s' (known: algorithms, graphs, networks, "
                               "models, datasets, partitions, distributions, presets, "
                               "compressors, optimizers, keys)",
                               what);
    return 0;
}

