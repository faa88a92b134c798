/* Warnings about a configuration that runs but likely not as meant
 * (xp_experiment_warnings, experiment.h): keys the user wrote that the
 * configuration does not read, an experiment file that sets no key, a
 * physical network with hosts the run leaves idle, a timeline bound
 * without a timeline, and Top-k-like
 * compression with error feedback under heavy-ball momentum. The facts
 * come from vtable data (the method's optimizer, the optimizers' key
 * tables, the compressor's identity flag), never from method names. The
 * library never prints: the lines go into the caller's buffer. */
#include "experiment/experiment.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/compress/compress.h"
#include "algorithms/core/algo.h"
#include "algorithms/optim/optim.h"
#include "sim/path.h"
#include "topology/physnet.h"

/* Appends one formatted line to buf (truncated when full). */
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = (size_t)n < len - *used ? *used + (size_t)n : len - 1;
}

/* "exp.ini:12: [section] key" or "--set section.key" for a key the user
 * wrote, else the file name (the key at its default). */
static void where(const cfg_config *cfg, const char *section, const char *key, char *out,
                  size_t len)
{
    const cfg_entry *e = cfg_find(cfg, section, key);
    if (e && e->line > 0)
        snprintf(out, len, "%s:%d: [%s] %s", cfg->path, e->line, section, key);
    else if (e && e->line < 0)
        snprintf(out, len, "--set %s.%s", section, key);
    else
        snprintf(out, len, "%s: [%s] %s (default)", cfg->path, section, key);
}

/* Appends one warning about [section] key if the user wrote it. */
static int warn_key(const cfg_config *cfg, const char *section, const char *key, char *buf,
                    size_t len, size_t *used, const char *why)
{
    const cfg_entry *e = cfg_find(cfg, section, key);
    if (!e || e->line == 0)
        return 0;
    char at[700];
    where(cfg, section, key, at, sizeof at);
    append(buf, len, used, "%s: ignored: %s\n", at, why);
    return 1;
}

/* The optimizers' own keys (algo_optim.keys) that neither the configured
 * optimizer nor the method's own (vt->optimizer) reads: "lamb only" when
 * one optimizer reads it, else "optimizer = sgd (adam, adamw and lamb use
 * it)". */
static int warn_optimizer_keys(const cfg_config *cfg, const algo_vt *vt, char *buf, size_t len,
                               size_t *used)
{
    int n = 0;
    for (int i = 0; algo_optim_registry[i]; i++) {
        for (const cfg_key *k = algo_optim_registry[i]->keys; k && k->key; k++) {
            if (algo_reads_optimizer_key(vt, cfg, k->key))
                continue;
            const char *who[16];
            int m = 0;
            for (int j = 0; algo_optim_registry[j] && m < 16; j++)
                if (algo_optim_reads_key(algo_optim_registry[j], k->key))
                    who[m++] = algo_optim_registry[j]->name;
            char list[160] = "", why[256];
            size_t at = 0;
            for (int j = 0; j < m && at < sizeof list; j++)
                at += (size_t)snprintf(list + at, sizeof list - at, "%s%s",
                                       j == 0 ? "" : j == m - 1 ? " and " : ", ", who[j]);
            if (m == 1)
                snprintf(why, sizeof why, "%s only", list);
            else
                snprintf(why, sizeof why, "optimizer = %s (%s use it)", cfg->optimizer, list);
            n += warn_key(cfg, "algorithm", k->key, buf, len, used, why);
        }
    }
    return n;
}

/* An experiment file that sets no key (empty, or comments and section
 * headers only) runs every default: likely the wrong file. */
static int warn_empty_file(const cfg_config *cfg, char *buf, size_t len, size_t *used)
{
    for (int i = 0; i < cfg->n_entries; i++)
        if (cfg->entries[i].line > 0)
            return 0;
    append(buf, len, used, "%s: the file sets no key: every key not given with --set takes its"
                           " default (dtsim list keys)\n", cfg->path);
    return 1;
}

/* A fixed-size physical network (hierarchical(4, 8), torus(r, c),
 * fat_tree(k), a file) with more hosts than the run uses (worker i on host
 * i, then a parameter server): the extra hosts and their servers stay
 * idle. A network that cannot be built warns nothing (the check reports
 * it). */
static int warn_idle_hosts(const cfg_config *cfg, const algo_vt *vt, char *buf, size_t len,
                           size_t *used)
{
    int hosts = cfg->n_workers + (vt && algo_needs_server(vt, cfg) ? 1 : 0);
    char dir[sizeof cfg->path];
    sim_path_dir(cfg->path, dir, sizeof dir);
    topo_physnet pn;
    memset(&pn, 0, sizeof pn);
    sim_err err = {0};
    if (topo_physnet_build_in(&pn, cfg->net_topology, dir, hosts, &err) < 0)
        return 0;
    int total = pn.n_hosts, per = pn.per_node;
    topo_physnet_release(&pn);
    if (total <= hosts)
        return 0;
    char at[700], idle[64] = "";
    where(cfg, "network", "topology", at, sizeof at);
    int first = (hosts + per - 1) / (per > 0 ? per : 1), last = per > 0 ? total / per - 1 : -1;
    if (per > 0 && first <= last)
        snprintf(idle, sizeof idle, first == last ? " (server %d)" : " (servers %d-%d)", first,
                 last);
    char range[48];
    if (total - hosts > 1)
        snprintf(range, sizeof range, "hosts %d-%d", hosts, total - 1);
    else
        snprintf(range, sizeof range, "host %d", hosts);
    append(buf, len, used, "%s: %s has %d hosts, the run uses %d (workers.count = %d%s): %s%s"
                           " stay idle\n",
           at, cfg->net_topology, total, hosts, cfg->n_workers,
           hosts > cfg->n_workers ? ", and a parameter server" : "", range, idle);
    return 1;
}

/* Compression with error feedback under heavy-ball momentum: the residual
 * accumulates lr x momentum updates and, at a learning rate that suits the
 * dense method, the run oscillates (docs/compressors.md, "Top-k, error
 * feedback and momentum"). */
static int warn_ef_momentum(const cfg_config *cfg, const algo_vt *vt,
                            const algo_compressor *comp, char *buf, size_t len, size_t *used)
{
    if (!vt || !vt->supports_compression || !comp || comp->vt->identity ||
        !cfg->error_feedback || !(cfg->momentum > 0))
        return 0;
    char at[700];
    where(cfg, "algorithm", "compressor", at, sizeof at);
    append(buf, len, used, "%s: %s with error_feedback = true and momentum = %g can oscillate at"
                           " the dense method's lr = %g (docs/compressors.md, \"Top-k, error"
                           " feedback and momentum\"); at the quick start's settings lr = 0.01"
                           " or momentum = 0 did not\n",
           at, comp->spec, cfg->momentum, cfg->lr);
    return 1;
}

int xp_experiment_warnings(const cfg_config *cfg, char *buf, size_t len)
{
    if (!buf || len == 0)
        return 0;
    buf[0] = '\0';
    size_t used = 0;
    int n = warn_empty_file(cfg, buf, len, &used);
    char why[256];
    const algo_vt *vt = algo_find(cfg->algorithm);
    if (vt && !vt->uses_graph) {
        snprintf(why, sizeof why, "%s uses no logical graph", vt->name);
        n += warn_key(cfg, "topology", "graph", buf, len, &used, why);
        n += warn_key(cfg, "topology", "weights", buf, len, &used, why);
    }
    sim_err cerr = {0};
    algo_compressor *comp = NULL;
    algo_compress_create(cfg->compressor, &comp, &cerr);
    if (comp && comp->vt->identity) {
        snprintf(why, sizeof why, "no compressor (compressor = %s)", comp->vt->name);
        n += warn_key(cfg, "algorithm", "error_feedback", buf, len, &used, why);
    }
    n += warn_ef_momentum(cfg, vt, comp, buf, len, &used);
    algo_compress_destroy(comp);
    n += warn_optimizer_keys(cfg, vt, buf, len, &used);
    if (cfg->n_lr_milestones == 0)
        n += warn_key(cfg, "algorithm", "lr_decay", buf, len, &used,
                      "no lr_milestones");
    if (cfg->compute.dist.kind != SIM_DIST_MODEL) {
        n += warn_key(cfg, "workers", "device", buf, len, &used,
                      "compute is a distribution, not model");
        n += warn_key(cfg, "workers", "efficiency", buf, len, &used,
                      "compute is a distribution, not model");
        n += warn_key(cfg, "workers", "precision", buf, len, &used,
                      "compute is a distribution, not model");
    } else if (cfg->n_device_groups == 0) {
        n += warn_key(cfg, "workers", "precision", buf, len, &used,
                      "device is a speed, not a preset name");
    }
    if (cfg->compute.stragglers == 0)
        n += warn_key(cfg, "workers", "straggler_slowdown", buf, len, &used,
                      "stragglers = 0");
    if (cfg->compute.transient_prob == 0)
        n += warn_key(cfg, "workers", "transient_slowdown", buf, len, &used,
                      "transient_prob = 0");
    sim_spec spec;
    if (sim_spec_parse(cfg->net_topology, &spec, NULL) == 0 &&
        strcmp(spec.name, "hierarchical") != 0 && strcmp(spec.name, "file") != 0 &&
        !topo_server_find(spec.name)) {
        n += warn_key(cfg, "network", "intra_latency", buf, len, &used,
                      "the network has no servers of GPUs");
        n += warn_key(cfg, "network", "intra_bandwidth", buf, len, &used,
                      "the network has no servers of GPUs");
    }
    int trace = 0;
    if (cfg_get_bool(cfg, "experiment", "trace", &trace, NULL) == 0 && !trace)
        n += warn_key(cfg, "experiment", "trace_max_events", buf, len, &used,
                      "trace = off (the bound is of a recorded timeline)");
    n += warn_idle_hosts(cfg, vt, buf, len, &used);
    return n;
}

