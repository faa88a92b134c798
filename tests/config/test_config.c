/* Experiment configuration: defaults, units into typed fields, the canonical
 * text (equal for equivalent spellings, different for a changed value),
 * --set overrides, method keys, optimizers and devices through a schema
 * handed to the load (a stand-in for the registries), and every error path
 * with its exact file:line and key. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "tests/common.h"

/* Loads text with schema sc (NULL: no registries). */
static void load_ok_in(const sim_config_schema *sc, const char *text, const char *const *set,
                       int n_set, sim_config *cfg)
{
    sim_err err;
    sim_err_clear(&err);
    int rc = sim_config_load_string(sc, "exp.ini", text, set, n_set, cfg, &err);
    cr_assert_eq(rc, 0, "load failed: %s", err.msg);
}

static void load_ok(const char *text, const char *const *set, int n_set, sim_config *cfg)
{
    load_ok_in(NULL, text, set, n_set, cfg);
}

/* Loads text with schema sc expecting code and exactly the message want. */
static void load_fails_in(const sim_config_schema *sc, const char *text,
                          const char *const *set, int n_set, int code, const char *want)
{
    sim_config cfg;
    sim_err err;
    sim_err_clear(&err);
    int rc = sim_config_load_string(sc, "exp.ini", text, set, n_set, &cfg, &err);
    cr_assert_eq(rc, code, "rc %d (%s), want %d", rc, err.msg, code);
    cr_assert_eq(err.code, code);
    cr_assert_str_eq(err.msg, want);
    /* a failed load leaves the config released */
    cr_assert_null(cfg.entries);
    cr_assert_eq(cfg.n_entries, 0);
}

static void load_fails(const char *text, const char *const *set, int n_set, int code,
                       const char *want)
{
    load_fails_in(NULL, text, set, n_set, code, want);
}

/* ---- a stand-in for the registries the experiment layer hands in ---- */

static const sim_key local_keys[] = {
    {"algorithm", "local_steps", "4", SIM_KEY_INT, NULL, "steps between averages"},
    {"algorithm", "sync", "1ms", SIM_KEY_TIME, NULL, "barrier time"},
    {"algorithm", "mode", "avg", SIM_KEY_CHOICE, "avg|sum", "how to merge"},
    {"algorithm", "codec", "none", SIM_KEY_STRING, NULL, "codec spec"},
    {NULL, NULL, NULL, SIM_KEY_STRING, NULL, NULL},
};
static const sim_key no_keys[] = {{NULL, NULL, NULL, SIM_KEY_STRING, NULL, NULL}};

static const sim_key *test_algo_keys(const char *name)
{
    if (strcmp(name, "local_sgd") == 0)
        return local_keys;
    if (strcmp(name, "allreduce_sgd") == 0)
        return no_keys;
    return NULL;
}

static const char *test_optim_at(int i)
{
    static const char *const names[] = {"sgd", "adam", "adamw", "lamb", NULL};
    return i >= 0 && i < 4 ? names[i] : NULL;
}

static double test_device(const char *name)
{
    return strcasecmp(name, "v100") == 0 ? 15.7e12 : 0.0;
}

static const sim_config_schema registries = {
    .algo_keys = test_algo_keys,
    .optim_name = test_optim_at,
    .device_flops = test_device,
};

static int schema_count(void)
{
    int n = 0;
    while (sim_config_keys[n].key)
        n++;
    return n;
}

Test(config, defaults_are_all_filled)
{
    sim_config cfg;
    load_ok("", NULL, 0, &cfg);
    cr_assert_str_eq(cfg.name, "exp");
    cr_assert_eq(cfg.seed, 1);
    cr_assert_eq(cfg.max_iterations, 0);
    cr_assert_eq(cfg.max_time, 0);
    cr_assert_eq(cfg.max_epochs, 1.0);
    cr_assert_eq(cfg.target_accuracy, 0.0);
    cr_assert_eq(cfg.eval_every_iters, 50);
    cr_assert_eq(cfg.eval_every_time, 0);
    cr_assert_eq(cfg.eval_train_samples, 10000);
    cr_assert_eq(cfg.n_workers, 8);
    cr_assert_eq(cfg.compute.dist.kind, SIM_DIST_MODEL);
    cr_assert_float_eq(cfg.compute.device_flops, 15.7e12, 1e-3);
    cr_assert_eq(cfg.compute.efficiency, 0.5);
    cr_assert_eq(cfg.compute.stragglers, 0);
    cr_assert_eq(cfg.compute.straggler_slowdown, 5.0);
    cr_assert_eq(cfg.compute.transient_prob, 0.0);
    cr_assert_eq(cfg.compute.transient_slowdown, 10.0);
    cr_assert_str_eq(cfg.net_topology, "star");
    cr_assert_float_eq(cfg.latency, 5e-6, 1e-18);
    cr_assert_eq(cfg.bandwidth, 1.25e9);
    cr_assert_eq(cfg.sharing, SIM_SHARE_FAIR);
    cr_assert_eq(cfg.routing, SIM_ROUTE_SHORTEST);
    cr_assert_eq(cfg.collective, SIM_COLL_RING);
    cr_assert_str_eq(cfg.graph, "ring");
    cr_assert_eq(cfg.weights, SIM_WEIGHTS_METROPOLIS);
    cr_assert_str_eq(cfg.algorithm, "allreduce_sgd");
    cr_assert_eq(cfg.lr, 0.1);
    cr_assert_eq(cfg.momentum, 0.0);
    cr_assert_eq(cfg.nesterov, 0);
    cr_assert_eq(cfg.weight_decay, 0.0);
    cr_assert_str_eq(cfg.optimizer, "sgd");
    cr_assert_eq(cfg.beta1, 0.9);
    cr_assert_eq(cfg.beta2, 0.999);
    cr_assert_eq(cfg.eps, 1e-8);
    cr_assert_eq(cfg.bias_correction, 1);
    cr_assert_eq(cfg.lamb_min_trust, 0.01);
    cr_assert_eq(cfg.lamb_max_trust, 10.0);
    cr_assert_eq(cfg.clip, 0.0);
    cr_assert_eq(cfg.bucket, 0.0);
    cr_assert_eq(cfg.intra_latency, 1e-6);
    cr_assert_eq(cfg.intra_bandwidth, 150e9);
    cr_assert_eq(cfg.batch, 32);
    cr_assert_str_eq(cfg.compressor, "none");
    cr_assert_eq(cfg.error_feedback, 1);
    cr_assert_str_eq(cfg.model, "softmax");
    cr_assert_str_eq(cfg.dataset, "fashion_mnist");
    cr_assert_eq(cfg.test_fraction, 0.1);
    cr_assert_eq(cfg.normalize, SIM_NORMALIZE_NONE);
    cr_assert_eq(cfg.sparse, SIM_SPARSE_AUTO);
    cr_assert_str_eq(cfg.partition, "iid");
    cr_assert_eq(cfg.init, SIM_INIT_SAME);
    cr_assert_str_eq(cfg.proxy, "none");
    cr_assert_eq(cfg.sim_params, 0);
    cr_assert_eq(cfg.sim_flops, 0.0);
    cr_assert_eq(cfg.wire_dtype, SIM_WIRE_FP32);
    cr_assert_eq(cfg.wire_bytes, 4);

    /* one entry per schema key, in schema order, all defaults */
    int n = schema_count();
    cr_assert_eq(n, 63); /* 9 + 8 + 8 + 2 + 20 + 12 + 4 */
    cr_assert_eq(cfg.n_entries, n);
    for (int i = 0; i < n; i++) {
        const sim_key *k = &sim_config_keys[i];
        const sim_entry *e = &cfg.entries[i];
        cr_assert_str_eq(e->section, k->section);
        cr_assert_str_eq(e->key, k->key);
        cr_assert_eq(e->line, 0, "%s", k->key);
        cr_assert_str_eq(e->raw, k->def);
        cr_assert_eq(sim_config_find(&cfg, k->section, k->key), e);
    }
    cr_assert_str_eq(sim_config_get_string(&cfg, "network", "latency"), "5000ns");
    cr_assert_str_eq(sim_config_get_string(&cfg, "network", "bandwidth"), "1250000000B/s");
    cr_assert_str_eq(sim_config_get_string(&cfg, "workers", "device"), "15700000000000FLOPS");
    cr_assert_str_eq(sim_config_get_string(&cfg, "algorithm", "nesterov"), "false");
    cr_assert_str_eq(sim_config_get_string(&cfg, "experiment", "max_time"), "0ns");
    cr_assert_null(sim_config_find(&cfg, "network", "nope"));
    sim_config_release(&cfg);
    cr_assert_null(cfg.entries);
    cr_assert_eq(cfg.n_entries, 0);
}

Test(config, units_parsed_into_typed_fields)
{
    sim_config cfg;
    load_ok("[experiment]\n"
            "max_time = 3min\n"
            "eval_every = 2s\n"
            "eval_train_samples = all\n"
            "seed = 42\n"
            "[workers]\n"
            "count = 16\n"
            "compute = lognormal(10ms, 0.5)\n"
            "device = 50GFLOPS\n"
            "stragglers = 2\n"
            "[network]\n"
            "latency = 1.5ms\n"
            "bandwidth = 100Mbps\n"
            "sharing = none\n"
            "collective = ps\n"
            "topology = torus( 4,4 )\n"
            "[topology]\n"
            "weights = uniform\n"
            "[algorithm]\n"
            "batch = full\n"
            "nesterov = yes\n"
            "momentum = 0.9\n"
            "[workload]\n"
            "wire_dtype = bf16\n"
            "normalize = standard\n"
            "init = independent\n"
            "sim_flops = 12.3e9\n"
            "sim_params = 25557032\n",
            NULL, 0, &cfg);
    cr_assert_eq(cfg.max_time, 180 * SIM_NS_PER_S);
    cr_assert_eq(cfg.eval_every_time, 2 * SIM_NS_PER_S);
    cr_assert_eq(cfg.eval_every_iters, 0);
    cr_assert_eq(cfg.eval_train_samples, SIM_CFG_EVAL_ALL);
    cr_assert_eq(cfg.seed, 42);
    cr_assert_eq(cfg.n_workers, 16);
    cr_assert_eq(cfg.compute.dist.kind, SIM_DIST_LOGNORMAL);
    cr_assert_eq(cfg.compute.dist.a, 0.01);
    cr_assert_eq(cfg.compute.dist.b, 0.5);
    cr_assert_eq(cfg.compute.device_flops, 50e9);
    cr_assert_eq(cfg.compute.stragglers, 2);
    cr_assert_float_eq(cfg.latency, 1.5e-3, 1e-18);
    cr_assert_eq(cfg.bandwidth, 12.5e6);
    cr_assert_eq(cfg.sharing, SIM_SHARE_NONE);
    cr_assert_eq(cfg.collective, SIM_COLL_PS);
    cr_assert_str_eq(cfg.net_topology, "torus(4, 4)");
    cr_assert_eq(cfg.weights, SIM_WEIGHTS_UNIFORM);
    cr_assert_eq(cfg.batch, 0);
    cr_assert_eq(cfg.nesterov, 1);
    cr_assert_eq(cfg.momentum, 0.9);
    cr_assert_eq(cfg.wire_dtype, SIM_WIRE_BF16);
    cr_assert_eq(cfg.wire_bytes, 2);
    cr_assert_eq(cfg.normalize, SIM_NORMALIZE_STANDARD);
    cr_assert_eq(cfg.init, SIM_INIT_INDEPENDENT);
    cr_assert_eq(cfg.sim_flops, 12.3e9);
    cr_assert_eq(cfg.sim_params, 25557032);

    cr_assert_str_eq(sim_config_get_string(&cfg, "experiment", "eval_every"), "2000000000ns");
    cr_assert_str_eq(sim_config_get_string(&cfg, "experiment", "eval_train_samples"), "all");
    cr_assert_str_eq(sim_config_get_string(&cfg, "workers", "compute"),
                     "lognormal(10000000ns, 0.5)");
    cr_assert_str_eq(sim_config_get_string(&cfg, "algorithm", "batch"), "full");
    cr_assert_str_eq(sim_config_get_string(&cfg, "algorithm", "nesterov"), "true");
    cr_assert_str_eq(sim_config_get_string(&cfg, "workload", "wire_dtype"), "bf16");
    cr_assert_str_eq(sim_config_get_string(&cfg, "workload", "sim_flops"), "12300000000");
    const sim_entry *e = sim_config_find(&cfg, "network", "latency");
    cr_assert_eq(e->line, 12);
    cr_assert_str_eq(e->raw, "1.5ms");
    cr_assert_str_eq(e->value, "1500000ns");

    /* typed getters read the canonical text back */
    sim_err err;
    sim_time t;
    double d;
    int64_t i;
    int b;
    cr_assert_eq(sim_config_get_time(&cfg, "network", "latency", &t, &err), 0);
    cr_assert_eq(t, 1500000);
    cr_assert_eq(sim_config_get_double(&cfg, "algorithm", "momentum", &d, &err), 0);
    cr_assert_eq(d, 0.9);
    cr_assert_eq(sim_config_get_int(&cfg, "workers", "count", &i, &err), 0);
    cr_assert_eq(i, 16);
    cr_assert_eq(sim_config_get_bool(&cfg, "algorithm", "nesterov", &b, &err), 0);
    cr_assert_eq(b, 1);
    cr_assert_eq(sim_config_get_int(&cfg, "workers", "compute", &i, &err), SIM_ECONFIG);
    cr_assert_str_eq(err.msg, "exp.ini:8: [workers] compute: expected an integer such as 16, "
                              "got 'lognormal(10000000ns, 0.5)'");
    cr_assert_eq(sim_config_get_double(&cfg, "algorithm", "nope", &d, &err), SIM_ECONFIG);
    cr_assert_str_eq(err.msg, "exp.ini: [algorithm] nope: no such key");
    sim_config_release(&cfg);
}

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
    sim_config a, b;
    load_ok(text_a, NULL, 0, &a);
    load_ok(text_b, NULL, 0, &b);
    char *ca = sim_config_canonical(&a), *cb = sim_config_canonical(&b);
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
    sim_config c;
    load_ok(text_a, &set, 1, &c);
    char *cc = sim_config_canonical(&c);
    cr_assert_str_neq(ca, cc);
    cr_assert(strstr(cc, "bandwidth = 3125000000B/s\n"), "%s", cc);
    free(ca);
    free(cb);
    free(cc);
    sim_config_release(&a);
    sim_config_release(&b);
    sim_config_release(&c);
}

Test(config, interface_example_with_inline_comments_loads)
{
    /* the example of docs/configuration.md, comments and continuation lines included */
    sim_config cfg;
    load_ok("[experiment]\n"
            "name = quickstart\n"
            "seed = 1                ; master seed; every random stream derives from it\n"
            "max_iterations = 1000   ; synchronous rounds, or applied updates for async methods\n"
            "max_time = 120s         ; simulated time limit\n"
            "target_accuracy = 0.85  ; stop when the evaluated model reaches it\n"
            "eval_every = 50         ; iterations, or a simulated time such as 2s\n"
            "eval_train_samples = 10000  ; or all\n"
            "\n"
            "[workers]\n"
            "count = 16\n"
            "compute = model         ; time = FLOPs of the step / device speed\n"
            "; or seconds per step drawn from a distribution:\n"
            "; constant(10ms) | exponential(10ms) | shifted_exponential(5ms, 5ms)\n"
            "[network]               ; the physical network messages travel on\n"
            "topology = star         ; star (one switch) | ring | torus(4, 4) | complete\n"
            "                        ; | fat_tree(4) | ideal | file(NET.graphml)\n"
            "latency = 5us           ; per link\n"
            "# hash comments too\n"
            "sharing = fair          ; fair: flows on a link share it max-min fairly;\n"
            "                        ; none: each flow sees the full link (alpha-beta)\n"
            "[workload]\n"
            "dataset = libsvm(data/a9a, data/a9a.t)\n"
            "sim_flops = 0           ; if > 0: training FLOPs per sample used for compute time\n",
            NULL, 0, &cfg);
    cr_assert_str_eq(cfg.name, "quickstart");
    cr_assert_eq(cfg.max_iterations, 1000);
    cr_assert_eq(cfg.max_time, 120 * SIM_NS_PER_S);
    cr_assert_eq(cfg.target_accuracy, 0.85);
    cr_assert_eq(cfg.n_workers, 16);
    cr_assert_str_eq(cfg.net_topology, "star");
    cr_assert_str_eq(cfg.dataset, "libsvm(data/a9a, data/a9a.t)");
    cr_assert_eq(sim_config_find(&cfg, "network", "sharing")->line, 20);
    cr_assert_eq(sim_config_find(&cfg, "workload", "sim_flops")->line, 24);
    sim_config_release(&cfg);
}

Test(config, device_presets_through_the_schema)
{
    sim_config cfg;
    load_ok_in(&registries, "[workers]\ndevice = v100\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.compute.device_flops, 15.7e12);
    cr_assert_str_eq(sim_config_find(&cfg, "workers", "device")->value, "15700000000000FLOPS");
    sim_config_release(&cfg);
    load_fails_in(&registries, "[workers]\ndevice = p100\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [workers] device: expected a speed such as 15.7TFLOPS or a device "
               "preset (dtsim list presets), got 'p100'");
}

Test(config, load_from_file_names_run_after_file)
{
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir);
    char path[1024];
    snprintf(path, sizeof path, "%s",
             test_write_file(dir, "my_run.ini", "[workers]\ncount = 4\n"));
    sim_config cfg;
    sim_err err;
    cr_assert_eq(sim_config_load(NULL, path, NULL, 0, &cfg, &err), 0, "%s", err.msg);
    cr_assert_str_eq(cfg.name, "my_run");
    cr_assert_str_eq(cfg.path, path);
    cr_assert_eq(cfg.n_workers, 4);
    sim_config_release(&cfg);

    /* the repository's quick-start experiment loads (it names a device
     * preset, resolved by the experiment layer; a stand-in here) */
    cr_assert_eq(sim_config_load(&registries, test_source_path("experiments/quickstart.ini"), NULL,
                                 0,
                                 &cfg, &err),
                 0, "%s", err.msg);
    cr_assert_eq(cfg.n_workers, 16);
    sim_config_release(&cfg);
}

Test(config, overrides_replace_file_values)
{
    const char *set[] = {"network.bandwidth = 1Gbps", "workers.count=3",
                         "experiment.eval_every=10", "network.bandwidth=25GB/s"};
    sim_config cfg;
    load_ok("[workers]\ncount = 16\n[network]\nbandwidth = 10Gbps\n", set, 4, &cfg);
    cr_assert_eq(cfg.bandwidth, 25e9);
    cr_assert_eq(cfg.n_workers, 3);
    cr_assert_eq(cfg.eval_every_iters, 10);
    const sim_entry *e = sim_config_find(&cfg, "network", "bandwidth");
    cr_assert_eq(e->line, -1);
    cr_assert_str_eq(e->raw, "25GB/s");
    cr_assert_eq(sim_config_find(&cfg, "workers", "count")->line, -1);
    cr_assert_eq(sim_config_find(&cfg, "experiment", "seed")->line, 0);
    cr_assert_eq(cfg.n_entries, schema_count());

    /* an override gives the same canonical text as writing it in the file */
    sim_config f;
    load_ok("[workers]\ncount = 3\n[network]\nbandwidth = 200Gbps\n[experiment]\n"
            "eval_every = 10\n",
            NULL, 0, &f);
    char *c1 = sim_config_canonical(&cfg), *c2 = sim_config_canonical(&f);
    cr_assert_str_eq(c1, c2);
    free(c1);
    free(c2);

    sim_err err;
    cr_assert_eq(sim_config_error(&cfg, "network", "bandwidth", SIM_ECONFIG, &err, "too %s",
                                  "fast"),
                 SIM_ECONFIG);
    cr_assert_str_eq(err.msg, "--set network.bandwidth: too fast");
    cr_assert_eq(sim_config_error(&f, "workers", "count", SIM_EINPUT, &err, "bad"),
                 SIM_EINPUT);
    cr_assert_eq(err.code, SIM_EINPUT);
    cr_assert_str_eq(err.msg, "exp.ini:2: [workers] count: bad");
    sim_config_error(&f, "network", "latency", SIM_ECONFIG, &err, "no route");
    cr_assert_str_eq(err.msg, "exp.ini: [network] latency (default): no route");
    sim_config_release(&cfg);
    sim_config_release(&f);
}

Test(config, override_errors)
{
    const char *bad_value = "network.bandwidth=fast";
    load_fails("", &bad_value, 1, SIM_ECONFIG,
               "--set network.bandwidth=fast: expected a rate such as 10Gbps, got 'fast'");
    const char *no_dot = "bandwidth=1Gbps";
    load_fails("", &no_dot, 1, SIM_EUSAGE, "--set bandwidth=1Gbps: expected SECTION.KEY=VALUE");
    const char *no_eq = "network.bandwidth";
    load_fails("", &no_eq, 1, SIM_EUSAGE,
               "--set network.bandwidth: expected SECTION.KEY=VALUE");
    const char *empty_key = "network.=3";
    load_fails("", &empty_key, 1, SIM_EUSAGE, "--set network.=3: expected SECTION.KEY=VALUE");
    const char *bad_section = "netwrk.bandwidth=1Gbps";
    load_fails("", &bad_section, 1, SIM_ECONFIG,
               "--set netwrk.bandwidth=1Gbps: unknown section 'netwrk' (known: experiment, "
               "workers, network, topology, algorithm, workload, faults)");
    const char *bad_key = "network.bandwith=1Gbps";
    load_fails("", &bad_key, 1, SIM_ECONFIG,
               "--set network.bandwith=1Gbps: unknown key (did you mean 'bandwidth'?)");
    const char *range = "workers.efficiency=2";
    load_fails("", &range, 1, SIM_ECONFIG,
               "--set workers.efficiency=2: must be in (0, 1], got 2");
}

Test(config, file_errors_name_file_line_and_key)
{
    load_fails("[experiment]\nseed = 1\n[netwrk]\nbandwidth = 1Gbps\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:3: [netwrk]: unknown section (known: experiment, workers, network, "
               "topology, algorithm, workload, faults)");
    load_fails("[network]\nlatency = 5us\n\n; comment\nbandwith = 1Gbps\n", NULL, 0,
               SIM_ECONFIG, "exp.ini:5: [network] bandwith: unknown key (did you mean "
                            "'bandwidth'?)");
    load_fails("[network]\nspeed = 1Gbps\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [network] speed: unknown key (known: topology, latency, "
               "bandwidth, sharing, routing, collective, intra_latency, intra_bandwidth)");
    load_fails("[experiment]\nseed = 3\n[network]\nlatency = 5us\nbandwidth = fast\n", NULL,
               0, SIM_ECONFIG,
               "exp.ini:5: [network] bandwidth: expected a rate such as 10Gbps, got 'fast'");
    load_fails("[network]\nlatency = 5 parsecs\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [network] latency: expected a time such as 5us, got '5 parsecs'");
    load_fails("\n[workers]\ncount = 4\n\ncompute = gaussian(1ms)\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:5: [workers] compute: unknown distribution 'gaussian' (known: model, "
               "constant, exponential, shifted_exponential, lognormal, pareto, trace)");
    load_fails("[workers]\ncompute = pareto(10ms, 1)\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [workers] compute: pareto: alpha must be > 1 (finite mean), got "
               "'1'");
    load_fails("[workers]\ncount = 4\n\n\n\n\nefficiency = 1.5\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:7: [workers] efficiency: must be in (0, 1], got 1.5");
    load_fails("[workers]\ncount = 4\nstragglers = 5\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:3: [workers] stragglers: must be in [0, 4] (the worker count), got 5");
    load_fails("[workers]\ncount = 0\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [workers] count: must be in [1, 65536], got 0");
    load_fails("[algorithm]\nmomentum = 1\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [algorithm] momentum: must be in [0, 1), got 1");
    load_fails("[algorithm]\nlr = -0.1\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [algorithm] lr: must be >= 0, got -0.1");
    load_fails("[algorithm]\nbatch = -3\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [algorithm] batch: must be a positive integer or full, got -3");
    load_fails("[experiment]\neval_every = 0s\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [experiment] eval_every: must be > 0, got 0s");
    load_fails("[experiment]\neval_train_samples = some\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [experiment] eval_train_samples: expected a sample count such as "
               "10000 or all, got 'some'");
    load_fails("[network]\nsharing = half\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [network] sharing: expected one of fair|none, got 'half'");
    load_fails("[algorithm]\nnesterov = maybe\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [algorithm] nesterov: expected a boolean such as true, got 'maybe'");
    load_fails("[topology]\ngraph =\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [topology] graph: must not be empty");
    load_fails("[workers]\ncount = 4\nefficiency = 0.5\n\n[workers]\ncount = 8\n", NULL, 0,
               SIM_ECONFIG, "exp.ini:6: [workers] count: duplicate key (first set on line 2)");
    load_fails("seed = 3\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:1: key 'seed' outside any section (known sections: experiment, "
               "workers, network, topology, algorithm, workload, faults)");
    load_fails("[workers]\ncount 4\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: expected 'key = value', '[section]' or a comment, got 'count 4'");
    load_fails("[workers\ncount = 4\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:1: expected ']' after the section name");
    load_fails("[experiment]\nmax_epochs = 0\n", NULL, 0, SIM_ECONFIG,
               "exp.ini: [experiment]: no stopping condition (set max_iterations, max_time, "
               "max_epochs or target_accuracy)");
    load_fails("[experiment]\nmax_epochs = inf\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [experiment] max_epochs: expected a number such as 0.5, got 'inf'");

    /* a line too long for inih's buffer is an error, not a silent split */
    char text[600];
    snprintf(text, sizeof text, "[workload]\ndataset = text(%0300d)\n", 0);
    sim_config cfg;
    sim_err err;
    cr_assert_eq(sim_config_load_string(NULL, "exp.ini", text, NULL, 0, &cfg, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "exp.ini:2: line too long"), "%s", err.msg);

    cr_assert_eq(sim_config_load(NULL, "/nonexistent/exp.ini", NULL, 0, &cfg, &err), SIM_EINPUT);
    cr_assert_str_eq(err.msg, "/nonexistent/exp.ini: cannot open: No such file or directory");
    cr_assert_null(cfg.entries);
}

Test(config, method_keys_from_the_schema)
{
    sim_config cfg;
    load_ok_in(&registries, "[algorithm]\nname = local_sgd\nlr = 0.2\n", NULL, 0, &cfg);
    int n = schema_count();
    cr_assert_eq(cfg.n_entries, n + 4);
    /* method keys come right after the common [algorithm] keys */
    int batch = -1; /* the last common [algorithm] key */
    for (int i = 0; i < cfg.n_entries; i++)
        if (!strcmp(cfg.entries[i].key, "warmup_epochs"))
            batch = i;
    cr_assert_str_eq(cfg.entries[batch + 1].key, "local_steps");
    cr_assert_str_eq(cfg.entries[batch + 1].section, "algorithm");
    cr_assert_str_eq(cfg.entries[batch + 1].value, "4");
    cr_assert_eq(cfg.entries[batch + 1].line, 0);
    cr_assert_str_eq(cfg.entries[batch + 2].value, "1000000ns");
    cr_assert_str_eq(cfg.entries[batch + 3].value, "avg");
    cr_assert_str_eq(cfg.entries[batch + 4].value, "none");
    cr_assert_str_eq(cfg.entries[batch + 5].section, "workload");
    int64_t steps;
    sim_err err;
    cr_assert_eq(sim_config_get_int(&cfg, "algorithm", "local_steps", &steps, &err), 0);
    cr_assert_eq(steps, 4);
    char *canon = sim_config_canonical(&cfg);
    cr_assert(strstr(canon, "warmup_epochs = 0\nlocal_steps = 4\nsync = 1000000ns\nmode = avg\n"
                            "codec = none\n[workload]\n"),
              "%s", canon);
    free(canon);
    sim_config_release(&cfg);

    /* file and --set values of method keys, parsed by type */
    const char *set = "algorithm.local_steps=16";
    load_ok_in(&registries, "[algorithm]\nsync = 2ms\nname = local_sgd\ncodec = TopK( 0.01 )\n"
            "mode = SUM\nlocal_steps = 8\n",
            &set, 1, &cfg);
    cr_assert_eq(sim_config_get_int(&cfg, "algorithm", "local_steps", &steps, &err), 0);
    cr_assert_eq(steps, 16);
    cr_assert_eq(sim_config_find(&cfg, "algorithm", "local_steps")->line, -1);
    sim_time t;
    cr_assert_eq(sim_config_get_time(&cfg, "algorithm", "sync", &t, &err), 0);
    cr_assert_eq(t, 2000000);
    cr_assert_eq(sim_config_find(&cfg, "algorithm", "sync")->line, 2);
    cr_assert_str_eq(sim_config_get_string(&cfg, "algorithm", "mode"), "sum");
    cr_assert_str_eq(sim_config_get_string(&cfg, "algorithm", "codec"), "topk(0.01)");
    sim_config_release(&cfg);

    /* a method with no keys of its own adds no entries */
    load_ok_in(&registries, "[algorithm]\nname = allreduce_sgd\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.n_entries, n);
    sim_config_release(&cfg);
}

Test(config, method_key_errors)
{
    load_fails_in(&registries, "[experiment]\nseed = 2\n[algorithm]\nname = foo\n", NULL, 0,
                  SIM_ECONFIG,
               "exp.ini:4: [algorithm] name: unknown algorithm 'foo' (dtsim list algorithms)");
    const char *set = "algorithm.name=bar";
    load_fails_in(&registries, "", &set, 1, SIM_ECONFIG,
                  "--set algorithm.name: unknown algorithm 'bar' (dtsim list "
                                      "algorithms)");
    load_fails_in(&registries, "[algorithm]\nname = local_sgd\nlr = 0.1\n\n\nlocal_step = 3\n",
                  NULL, 0,
               SIM_ECONFIG,
               "exp.ini:6: [algorithm] local_step: unknown key for algorithm 'local_sgd' "
               "(did you mean 'local_steps'?)");
    load_fails_in(&registries, "[algorithm]\nname = local_sgd\nlr = 0.1\nperiod = 3\n", NULL, 0,
                  SIM_ECONFIG,
               "exp.ini:4: [algorithm] period: unknown key for algorithm 'local_sgd' "
               "(known: name, lr, momentum, nesterov, weight_decay, optimizer, beta1, beta2, "
               "eps, bias_correction, lamb_min_trust, lamb_max_trust, clip, bucket, batch, "
               "compressor, error_feedback, lr_milestones, lr_decay, warmup_epochs, "
               "local_steps, sync, mode, codec)");
    load_fails_in(&registries, "[algorithm]\nlearning_rate = 0.1\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [algorithm] learning_rate: unknown key for algorithm "
               "'allreduce_sgd' (did you mean 'lr'?)");
    load_fails("[workers]\nlr = 0.1\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [workers] lr: unknown key (did you mean [algorithm] lr?)");
    load_fails_in(&registries, "[algorithm]\nname = allreduce_sgd\nlocal_steps = 3\n", NULL, 0,
                  SIM_ECONFIG,
               "exp.ini:3: [algorithm] local_steps: unknown key for algorithm "
               "'allreduce_sgd' (known: name, lr, momentum, nesterov, weight_decay, "
               "optimizer, beta1, beta2, eps, bias_correction, lamb_min_trust, "
               "lamb_max_trust, clip, bucket, batch, compressor, error_feedback, "
               "lr_milestones, lr_decay, warmup_epochs)");
    load_fails_in(&registries, "[algorithm]\nname = local_sgd\nlocal_steps = many\n", NULL, 0,
                  SIM_ECONFIG,
               "exp.ini:3: [algorithm] local_steps: expected an integer such as 16, got "
               "'many'");
    load_fails_in(&registries, "[algorithm]\nname = local_sgd\nmode = max\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:3: [algorithm] mode: expected one of avg|sum, got 'max'");
    load_fails_in(&registries, "[algorithm]\nname = local_sgd\nlocal_steps = 3\nlocal_steps = 4\n",
                  NULL, 0,
               SIM_ECONFIG,
               "exp.ini:4: [algorithm] local_steps: duplicate key (first set on line 3)");
}

Test(config, without_registries_any_algorithm_and_keys_are_strings)
{
    sim_config a, b;
    load_ok("[algorithm]\nname = my_method\nzeta = 1\nalpha = topk( 3 )\n", NULL, 0, &a);
    load_ok("[algorithm]\nalpha = topk(3)\nzeta = 1\nname = my_method\n", NULL, 0, &b);
    cr_assert_str_eq(a.algorithm, "my_method");
    cr_assert_eq(a.n_entries, schema_count() + 2);
    cr_assert_str_eq(sim_config_get_string(&a, "algorithm", "alpha"), "topk(3)");
    cr_assert_str_eq(sim_config_get_string(&a, "algorithm", "zeta"), "1");
    char *ca = sim_config_canonical(&a), *cb = sim_config_canonical(&b);
    cr_assert_str_eq(ca, cb);
    cr_assert(strstr(ca, "warmup_epochs = 0\nalpha = topk(3)\nzeta = 1\n[workload]\n"), "%s", ca);
    free(ca);
    free(cb);
    sim_config_release(&a);
    sim_config_release(&b);
}

Test(config, release_is_safe_on_zeroed_and_twice)
{
    sim_config cfg;
    memset(&cfg, 0, sizeof cfg);
    sim_config_release(&cfg);
    load_ok("", NULL, 0, &cfg);
    sim_config_release(&cfg);
    sim_config_release(&cfg);
    cr_assert_null(cfg.entries);
    cr_assert_eq(cfg.n_workers, 0);
}

Test(config, lr_schedule_keys)
{
    sim_config cfg;
    load_ok("[algorithm]\nlr_milestones = 5,  8.5\nlr_decay = 0.2\nwarmup_epochs = 1\n", NULL, 0,
            &cfg);
    cr_assert_eq(cfg.n_lr_milestones, 2);
    cr_assert_float_eq(cfg.lr_milestones[0], 5.0, 1e-15);
    cr_assert_float_eq(cfg.lr_milestones[1], 8.5, 1e-15);
    cr_assert_float_eq(cfg.lr_decay, 0.2, 1e-15);
    cr_assert_float_eq(cfg.warmup_epochs, 1.0, 1e-15);
    cr_assert_str_eq(sim_config_find(&cfg, "algorithm", "lr_milestones")->value, "5, 8.5");
    sim_config_release(&cfg);
    load_ok("", NULL, 0, &cfg);
    cr_assert_eq(cfg.n_lr_milestones, 0);
    cr_assert_str_eq(sim_config_find(&cfg, "algorithm", "lr_milestones")->value, "none");
    sim_config_release(&cfg);
    load_fails("[algorithm]\nlr_milestones = 8, 5\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [algorithm] lr_milestones: expected at most 16 increasing positive "
               "epochs, got '8, 5'");
    load_fails("[algorithm]\nlr_milestones = soon\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [algorithm] lr_milestones: expected increasing positive epochs such "
               "as 5, 8, got 'soon'");
    load_fails("[algorithm]\nlr_decay = 2\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [algorithm] lr_decay: must be in (0, 1], got 2");
}

/* Choice keys map each word to its enum by name: every word of the schema's
 * choices has exactly one value, the values differ, and loading a word
 * stores that value. */
Test(config, choice_words_map_to_enums_by_name)
{
    int n_choice = 0;
    for (const sim_key *k = sim_config_keys; k->section; k++) {
        if (k->type != SIM_KEY_CHOICE)
            continue;
        n_choice++;
        const sim_choice *v = sim_config_choice_values(k->section, k->key);
        cr_assert_not_null(v, "[%s] %s has no value table", k->section, k->key);
        int n_words = 1;
        for (const char *c = k->choices; *c; c++)
            n_words += *c == '|';
        int n_values = 0;
        for (const sim_choice *a = v; a->name; a++, n_values++) {
            size_t len = strlen(a->name);
            const char *at = strstr(k->choices, a->name);
            cr_assert(at && (at == k->choices || at[-1] == '|') &&
                          (at[len] == '|' || at[len] == '\0'),
                      "[%s] %s: '%s' is not a word of %s", k->section, k->key, a->name,
                      k->choices);
            for (const sim_choice *b = v; b != a; b++)
                cr_assert_neq(a->value, b->value, "[%s] %s", k->section, k->key);
        }
        cr_assert_eq(n_values, n_words, "[%s] %s", k->section, k->key);
    }
    cr_assert_eq(n_choice, 9);
    cr_assert_null(sim_config_choice_values("workload", "model"));

    sim_config cfg;
    load_ok("[network]\ncollective = tree\n[experiment]\neval_model = worker0\n"
            "[workload]\nwire_dtype = fp16\nsparse = off\n",
            NULL, 0, &cfg);
    cr_assert_eq(cfg.sparse, SIM_SPARSE_OFF);
    cr_assert_eq(cfg.collective, SIM_COLL_TREE);
    cr_assert_eq(cfg.eval_model, SIM_EVAL_WORKER0);
    cr_assert_eq(cfg.wire_dtype, SIM_WIRE_FP16);
    cr_assert_eq(cfg.wire_bytes, 2);
    cr_assert_eq(cfg.sharing, SIM_SHARE_FAIR);
    sim_config_release(&cfg);
}

Test(config, network_routing)
{
    sim_config cfg;
    load_ok("[network]\ntopology = fat_tree(4)\nrouting = ecmp\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.routing, SIM_ROUTE_ECMP);
    sim_config_release(&cfg);
    load_ok("[network]\nrouting = shortest\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.routing, SIM_ROUTE_SHORTEST);
    sim_config_release(&cfg);
    load_fails("[network]\nrouting = spray\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [network] routing: expected one of shortest|ecmp, got 'spray'");
}
Test(config, bare_numbers_for_times_rates_and_sizes_name_the_key)
{
    load_fails("[network]\nbandwidth = 10\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [network] bandwidth: a rate needs a unit (such as 10Gbps, "
               "100Mbps or 1GB/s), got '10'");
    load_fails("[network]\nlatency = 5\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [network] latency: a time needs a unit (such as 5us, 1.5ms or "
               "2s), got '5'");
    sim_config cfg;
    load_ok("[network]\nlatency = 0\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.latency, 0);
    sim_config_release(&cfg);
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
        sim_config a, b;
        load_ok("[experiment]\nmax_iterations = 3\n", sets, 1, &a);
        cr_assert_str_eq(a.name, nasty[i]);
        char *text = sim_config_canonical(&a);
        cr_assert_not_null(text);
        load_ok(text, NULL, 0, &b);
        cr_assert_str_eq(b.name, nasty[i], "value %zu from:\n%s", i, text);
        char *again = sim_config_canonical(&b);
        cr_assert_str_eq(again, text);
        free(again);
        free(text);
        sim_config_release(&a);
        sim_config_release(&b);
    }
    /* a plain value keeps its unquoted canonical form */
    sim_config c;
    load_ok("[experiment]\nname = run one\nmax_iterations = 3\n", NULL, 0, &c);
    char *text = sim_config_canonical(&c);
    cr_assert(strstr(text, "\nname = run one\n"), "%s", text);
    free(text);
    sim_config_release(&c);
    /* quoted values in a file: a comment may follow; errors name the line */
    load_ok("[experiment]\nname = \"a ;b\" ; note\nmax_iterations = 3\n", NULL, 0, &c);
    cr_assert_str_eq(c.name, "a ;b");
    sim_config_release(&c);
    load_fails("[experiment]\nname = \"open\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: bad quoted value (a closing '\"' is missing, an escape is not one"
               " of \\\" \\\\ \\n \\r \\t, or it is too long)");
    load_fails("[experiment]\nname = \"a\" b\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: unexpected text after the quoted value");
}

/* max_epochs' default of 1 applies only to a file that sets no limit of
 * its own. */
Test(config, default_epoch_limit_only_without_a_limit_of_its_own)
{
    sim_config cfg;
    load_ok("[workers]\ncount = 4\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.max_epochs, 1);
    sim_config_release(&cfg);
    load_ok("[experiment]\nmax_iterations = 300\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.max_epochs, 0);
    cr_assert_eq(cfg.max_iterations, 300);
    cr_assert_str_eq(sim_config_find(&cfg, "experiment", "max_epochs")->value, "0");
    char *canon = sim_config_canonical(&cfg);
    cr_assert(strstr(canon, "max_epochs = 0\n"), "%s", canon);
    free(canon);
    sim_config_release(&cfg);
    const char *set = "experiment.max_time=10s";
    load_ok("", &set, 1, &cfg);
    cr_assert_eq(cfg.max_epochs, 0);
    cr_assert_eq(cfg.max_time, 10 * SIM_NS_PER_S);
    sim_config_release(&cfg);
    load_ok("[experiment]\ntarget_accuracy = 0.8\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.max_epochs, 0);
    sim_config_release(&cfg);
    /* a limit of its own and max_epochs: both stay */
    load_ok("[experiment]\nmax_iterations = 300\nmax_epochs = 2\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.max_epochs, 2);
    sim_config_release(&cfg);
    /* a limit written as 0 is no limit: the default applies */
    load_ok("[experiment]\nmax_iterations = 0\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.max_epochs, 1);
    sim_config_release(&cfg);
    /* max_epochs = 0 alone is still no stopping condition */
    load_fails("[experiment]\nmax_epochs = 0\n", NULL, 0, SIM_ECONFIG,
               "exp.ini: [experiment]: no stopping condition (set max_iterations, max_time, "
               "max_epochs or target_accuracy)");
}

Test(config, zero_learning_rate_and_zero_compute_are_accepted)
{
    sim_config cfg;
    load_ok("[algorithm]\nlr = 0\n[workers]\ncompute = constant(0)\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.lr, 0);
    cr_assert_eq(cfg.compute.dist.kind, SIM_DIST_CONSTANT);
    cr_assert_eq(cfg.compute.dist.a, 0);
    cr_assert_str_eq(sim_config_find(&cfg, "workers", "compute")->value, "constant(0ns)");
    sim_config_release(&cfg);
}

Test(config, close_names_are_suggested)
{
    load_fails_in(&registries, "[experiment]\nseeed = 3\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [experiment] seeed: unknown key (did you mean 'seed'?)");
    load_fails_in(&registries, "[algorithm]\nbatch_size = 3\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [algorithm] batch_size: unknown key for algorithm "
               "'allreduce_sgd' (did you mean 'batch'?)");
    load_fails_in(&registries, "[algorithm]\noptimizer = adma\n", NULL, 0, SIM_ECONFIG,
               "exp.ini:2: [algorithm] optimizer: unknown optimizer 'adma' (did you mean "
               "'adam'? known: sgd, adam, adamw, lamb)");
}

/* What the params table stores: the value as written, normalized only in
 * spacing, and its SI number. */
Test(config, written_values_and_their_numbers)
{
    sim_config cfg;
    load_ok_in(&registries,
               "[network]\nbandwidth = 10 Gbps\nlatency = 5us\ntopology = Torus( 4,4 )\n"
            "[algorithm]\nlr = 0.05\nlr_milestones = 5,8\nbucket = 25 MiB\nbatch = full\n"
            "[workers]\ncount = 16\ncompute = lognormal( 10 ms , 0.5 )\ndevice = V100\n",
            NULL, 0, &cfg);
    static const struct {
        const char *section, *key, *written;
        double num; /* NAN: no number */
    } want[] = {
        {"network", "bandwidth", "10Gbps", 1.25e9},
        {"network", "latency", "5us", 5e-6},
        {"network", "topology", "Torus(4, 4)", NAN},
        {"network", "intra_bandwidth", "150GB/s", 150e9}, /* a default as the schema writes it */
        {"algorithm", "lr", "0.05", 0.05},
        {"algorithm", "lr_milestones", "5, 8", NAN},
        {"algorithm", "bucket", "25MiB", 25.0 * 1048576},
        {"algorithm", "batch", "full", NAN},
        {"algorithm", "nesterov", "false", NAN},
        {"workers", "count", "16", 16},
        {"workers", "compute", "lognormal(10ms, 0.5)", NAN},
        {"workers", "device", "V100", 15.7e12},
        {"experiment", "name", "exp", NAN},   /* empty default: the canonical value */
        {"experiment", "max_epochs", "1", 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const sim_entry *e = sim_config_find(&cfg, want[i].section, want[i].key);
        cr_assert_not_null(e, "%s", want[i].key);
        char text[600];
        sim_config_entry_written(e, text, sizeof text);
        cr_assert_str_eq(text, want[i].written, "[%s] %s", want[i].section, want[i].key);
        double x = 0;
        int has = sim_config_entry_number(e, &x);
        cr_assert_eq(has, !isnan(want[i].num), "[%s] %s", want[i].section, want[i].key);
        if (has)
            cr_assert_float_eq(x, want[i].num, 1e-12 * fabs(want[i].num), "[%s] %s: %.17g",
                               want[i].section, want[i].key, x);
    }
    sim_config_release(&cfg);
}
