/* Loading an experiment (config/config_load.c): defaults, files and --set
 * overrides, method keys through the schema handed to the load (a
 * stand-in for the registries) and without one, the default epoch limit,
 * and every error path with its exact file:line and key. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>

#include "config/config.h"
#include "tests/common.h"

Test(config_load, defaults_are_all_filled)
{
    cfg_config cfg;
    test_config_load_ok(NULL, "", NULL, 0, &cfg);
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
    cr_assert_eq(cfg.weights, CFG_WEIGHTS_METROPOLIS);
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
    cr_assert_eq(cfg.normalize, CFG_NORMALIZE_NONE);
    cr_assert_eq(cfg.sparse, CFG_SPARSE_AUTO);
    cr_assert_str_eq(cfg.partition, "iid");
    cr_assert_eq(cfg.init, CFG_INIT_SAME);
    cr_assert_str_eq(cfg.proxy, "none");
    cr_assert_eq(cfg.sim_params, 0);
    cr_assert_eq(cfg.sim_flops, 0.0);
    cr_assert_eq(cfg.wire_dtype, CFG_WIRE_FP32);
    cr_assert_eq(cfg.wire_bytes, 4);

    /* one entry per schema key, in schema order, all defaults */
    int n = test_config_key_count();
    cr_assert_gt(n, 0);
    cr_assert_eq(cfg.n_entries, n);
    for (int i = 0; i < n; i++) {
        const cfg_key *k = &cfg_keys[i];
        const cfg_entry *e = &cfg.entries[i];
        cr_assert_str_eq(e->section, k->section);
        cr_assert_str_eq(e->key, k->key);
        cr_assert_eq(e->line, 0, "%s", k->key);
        cr_assert_str_eq(e->raw, k->def);
        cr_assert_eq(cfg_find(&cfg, k->section, k->key), e);
    }
    cr_assert_str_eq(cfg_get_string(&cfg, "network", "latency"), "5000ns");
    cr_assert_str_eq(cfg_get_string(&cfg, "network", "bandwidth"), "1250000000B/s");
    cr_assert_str_eq(cfg_get_string(&cfg, "workers", "device"), "15700000000000FLOPS");
    cr_assert_str_eq(cfg_get_string(&cfg, "algorithm", "nesterov"), "false");
    cr_assert_str_eq(cfg_get_string(&cfg, "experiment", "max_time"), "0ns");
    cr_assert_null(cfg_find(&cfg, "network", "nope"));
    cfg_release(&cfg);
    cr_assert_null(cfg.entries);
    cr_assert_eq(cfg.n_entries, 0);
}

Test(config_load, interface_example_with_inline_comments_loads)
{
    /* the example of docs/configuration.md, comments and continuation lines included */
    cfg_config cfg;
    test_config_load_ok(NULL, "[experiment]\n"
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
    cr_assert_eq(cfg_find(&cfg, "network", "sharing")->line, 20);
    cr_assert_eq(cfg_find(&cfg, "workload", "sim_flops")->line, 24);
    cfg_release(&cfg);
}

Test(config_load, load_from_file_names_run_after_file)
{
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir);
    char path[1024];
    snprintf(path, sizeof path, "%s",
             test_write_file(dir, "my_run.ini", "[workers]\ncount = 4\n"));
    cfg_config cfg;
    sim_err err;
    cr_assert_eq(cfg_load(NULL, path, NULL, 0, &cfg, &err), 0, "%s", err.msg);
    cr_assert_str_eq(cfg.name, "my_run");
    cr_assert_str_eq(cfg.path, path);
    cr_assert_eq(cfg.n_workers, 4);
    cfg_release(&cfg);

    /* the repository's quick-start experiment loads (it names a device
     * preset, resolved by the experiment layer; a stand-in here) */
    cr_assert_eq(cfg_load(&test_config_registries,
                                 test_source_path("experiments/quickstart.ini"), NULL,
                                 0,
                                 &cfg, &err),
                 0, "%s", err.msg);
    cr_assert_eq(cfg.n_workers, 16);
    cfg_release(&cfg);
}

Test(config_load, overrides_replace_file_values)
{
    const char *set[] = {"network.bandwidth = 1Gbps", "workers.count=3",
                         "experiment.eval_every=10", "network.bandwidth=25GB/s"};
    cfg_config cfg;
    test_config_load_ok(NULL, "[workers]\ncount = 16\n[network]\nbandwidth = 10Gbps\n", set, 4,
                        &cfg);
    cr_assert_eq(cfg.bandwidth, 25e9);
    cr_assert_eq(cfg.n_workers, 3);
    cr_assert_eq(cfg.eval_every_iters, 10);
    const cfg_entry *e = cfg_find(&cfg, "network", "bandwidth");
    cr_assert_eq(e->line, -1);
    cr_assert_str_eq(e->raw, "25GB/s");
    cr_assert_eq(cfg_find(&cfg, "workers", "count")->line, -1);
    cr_assert_eq(cfg_find(&cfg, "experiment", "seed")->line, 0);
    cr_assert_eq(cfg.n_entries, test_config_key_count());

    /* an override gives the same canonical text as writing it in the file */
    cfg_config f;
    test_config_load_ok(NULL, "[workers]\ncount = 3\n[network]\nbandwidth = 200Gbps\n[experiment]\n"
                        "eval_every = 10\n",
                        NULL, 0, &f);
    char *c1 = cfg_canonical(&cfg), *c2 = cfg_canonical(&f);
    cr_assert_str_eq(c1, c2);
    free(c1);
    free(c2);

    sim_err err;
    cr_assert_eq(cfg_error(&cfg, "network", "bandwidth", SIM_ECONFIG, &err, "too %s",
                                  "fast"),
                 SIM_ECONFIG);
    cr_assert_str_eq(err.msg, "--set network.bandwidth: too fast");
    cr_assert_eq(cfg_error(&f, "workers", "count", SIM_EINPUT, &err, "bad"),
                 SIM_EINPUT);
    cr_assert_eq(err.code, SIM_EINPUT);
    cr_assert_str_eq(err.msg, "exp.ini:2: [workers] count: bad");
    cfg_error(&f, "network", "latency", SIM_ECONFIG, &err, "no route");
    cr_assert_str_eq(err.msg, "exp.ini: [network] latency (default): no route");
    cfg_release(&cfg);
    cfg_release(&f);
}

Test(config_load, override_errors)
{
    const char *bad_value = "network.bandwidth=fast";
    test_config_load_fails(NULL, "", &bad_value, 1, SIM_ECONFIG,
                           "--set network.bandwidth=fast: expected a rate such as 10Gbps, got 'fast'");
    const char *no_dot = "bandwidth=1Gbps";
    test_config_load_fails(NULL, "", &no_dot, 1, SIM_EUSAGE,
                           "--set bandwidth=1Gbps: expected SECTION.KEY=VALUE");
    const char *no_eq = "network.bandwidth";
    test_config_load_fails(NULL, "", &no_eq, 1, SIM_EUSAGE,
                           "--set network.bandwidth: expected SECTION.KEY=VALUE");
    const char *empty_key = "network.=3";
    test_config_load_fails(NULL, "", &empty_key, 1, SIM_EUSAGE,
                           "--set network.=3: expected SECTION.KEY=VALUE");
    const char *bad_section = "netwrk.bandwidth=1Gbps";
    test_config_load_fails(NULL, "", &bad_section, 1, SIM_ECONFIG,
                           "--set netwrk.bandwidth=1Gbps: unknown section 'netwrk' (known: experiment, "
                           "workers, network, topology, algorithm, workload, faults)");
    const char *bad_key = "network.bandwith=1Gbps";
    test_config_load_fails(NULL, "", &bad_key, 1, SIM_ECONFIG,
                           "--set network.bandwith=1Gbps: unknown key (did you mean 'bandwidth'?)");
    const char *range = "workers.efficiency=2";
    test_config_load_fails(NULL, "", &range, 1, SIM_ECONFIG,
                           "--set workers.efficiency=2: must be in (0, 1], got 2");
}

Test(config_load, file_errors_name_file_line_and_key)
{
    test_config_load_fails(NULL, "[experiment]\nseed = 1\n[netwrk]\nbandwidth = 1Gbps\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:3: [netwrk]: unknown section (known: experiment, workers, network, "
                           "topology, algorithm, workload, faults)");
    test_config_load_fails(NULL, "[network]\nlatency = 5us\n\n; comment\nbandwith = 1Gbps\n", NULL,
                           0,
                           SIM_ECONFIG, "exp.ini:5: [network] bandwith: unknown key (did you mean "
                            "'bandwidth'?)");
    test_config_load_fails(NULL, "[network]\nspeed = 1Gbps\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [network] speed: unknown key (known: topology, latency, "
                           "bandwidth, sharing, routing, collective, intra_latency, intra_bandwidth, "
                           "efficiency, message_overhead, collective_overhead, "
                           "efficiency_by_size, overhead_by_size, calibration)");
    test_config_load_fails(NULL,
                           "[experiment]\nseed = 3\n[network]\nlatency = 5us\nbandwidth = fast\n", NULL,
                           0, SIM_ECONFIG,
                           "exp.ini:5: [network] bandwidth: expected a rate such as 10Gbps, got 'fast'");
    test_config_load_fails(NULL, "[network]\nlatency = 5 parsecs\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [network] latency: expected a time such as 5us, got '5 parsecs'");
    test_config_load_fails(NULL, "\n[workers]\ncount = 4\n\ncompute = gaussian(1ms)\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:5: [workers] compute: unknown distribution 'gaussian' (known: model, "
                           "constant, exponential, shifted_exponential, lognormal, pareto, trace)");
    test_config_load_fails(NULL, "[workers]\ncompute = pareto(10ms, 1)\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [workers] compute: pareto: alpha must be > 1 (finite mean), got "
                           "'1'");
    test_config_load_fails(NULL, "[workers]\ncount = 4\n\n\n\n\nefficiency = 1.5\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:7: [workers] efficiency: must be in (0, 1], got 1.5");
    test_config_load_fails(NULL, "[workers]\ncount = 4\nstragglers = 5\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:3: [workers] stragglers: must be in [0, 4] (the worker count), got 5");
    test_config_load_fails(NULL, "[workers]\ncount = 0\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [workers] count: must be in [1, 65536], got 0");
    test_config_load_fails(NULL, "[algorithm]\nmomentum = 1\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [algorithm] momentum: must be in [0, 1), got 1");
    test_config_load_fails(NULL, "[algorithm]\nlr = -0.1\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [algorithm] lr: must be >= 0, got -0.1");
    test_config_load_fails(NULL, "[algorithm]\nbatch = -3\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [algorithm] batch: must be a positive integer or full, got -3");
    test_config_load_fails(NULL, "[experiment]\neval_every = 0s\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [experiment] eval_every: must be > 0, got 0s");
    test_config_load_fails(NULL, "[experiment]\neval_train_samples = some\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [experiment] eval_train_samples: expected a sample count such as "
                           "10000 or all, got 'some'");
    test_config_load_fails(NULL, "[network]\nsharing = half\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [network] sharing: expected one of fair|none, got 'half'");
    test_config_load_fails(NULL, "[algorithm]\nnesterov = maybe\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [algorithm] nesterov: expected a boolean such as true, got 'maybe'");
    test_config_load_fails(NULL, "[topology]\ngraph =\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [topology] graph: must not be empty");
    test_config_load_fails(NULL,
                           "[workers]\ncount = 4\nefficiency = 0.5\n\n[workers]\ncount = 8\n", NULL, 0,
                           SIM_ECONFIG, "exp.ini:6: [workers] count: duplicate key (first set on line 2)");
    test_config_load_fails(NULL, "seed = 3\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:1: key 'seed' outside any section (known sections: experiment, "
                           "workers, network, topology, algorithm, workload, faults)");
    test_config_load_fails(NULL, "[workers]\ncount 4\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: expected 'key = value', '[section]' or a comment, got 'count 4'");
    test_config_load_fails(NULL, "[workers\ncount = 4\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:1: expected ']' after the section name");
    test_config_load_fails(NULL, "[experiment]\nmax_epochs = 0\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini: [experiment]: no stopping condition (set max_iterations, max_time, "
                           "max_epochs or target_accuracy)");
    test_config_load_fails(NULL, "[experiment]\nmax_epochs = inf\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [experiment] max_epochs: expected a number such as 0.5, got 'inf'");

    /* a line longer than inih's buffer is read whole (no silent split);
     * a value past the value limit is an error naming the key */
    char text[900];
    snprintf(text, sizeof text, "[workload]\ndataset = text(%0300d)\n", 0);
    cfg_config cfg;
    sim_err err;
    cr_assert_eq(cfg_load_string(NULL, "exp.ini", text, NULL, 0, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(strlen(cfg_find(&cfg, "workload", "dataset")->raw), 306);
    cfg_release(&cfg);
    snprintf(text, sizeof text, "[workload]\ndataset = text(%0550d)\n", 0);
    cr_assert_eq(cfg_load_string(NULL, "exp.ini", text, NULL, 0, &cfg, &err), SIM_ECONFIG);
    cr_assert_str_eq(err.msg, "exp.ini:2: [workload] dataset: value too long (max 511 "
                              "characters)");

    cr_assert_eq(cfg_load(NULL, "/nonexistent/exp.ini", NULL, 0, &cfg, &err), SIM_EINPUT);
    cr_assert_str_eq(err.msg, "/nonexistent/exp.ini: cannot open: No such file or directory");
    cr_assert_null(cfg.entries);
}

Test(config_load, method_keys_from_the_schema)
{
    cfg_config cfg;
    test_config_load_ok(&test_config_registries, "[algorithm]\nname = local_sgd\nlr = 0.2\n", NULL,
                        0, &cfg);
    int n = test_config_key_count();
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
    cr_assert_eq(cfg_get_int(&cfg, "algorithm", "local_steps", &steps, &err), 0);
    cr_assert_eq(steps, 4);
    char *canon = cfg_canonical(&cfg);
    cr_assert(strstr(canon, "warmup_epochs = 0\nlocal_steps = 4\nsync = 1000000ns\nmode = avg\n"
                            "codec = none\n[workload]\n"),
              "%s", canon);
    free(canon);
    cfg_release(&cfg);

    /* file and --set values of method keys, parsed by type */
    const char *set = "algorithm.local_steps=16";
    test_config_load_ok(&test_config_registries,
                        "[algorithm]\nsync = 2ms\nname = local_sgd\ncodec = TopK( 0.01 )\n"
                        "mode = SUM\nlocal_steps = 8\n",
                        &set, 1, &cfg);
    cr_assert_eq(cfg_get_int(&cfg, "algorithm", "local_steps", &steps, &err), 0);
    cr_assert_eq(steps, 16);
    cr_assert_eq(cfg_find(&cfg, "algorithm", "local_steps")->line, -1);
    sim_time t;
    cr_assert_eq(cfg_get_time(&cfg, "algorithm", "sync", &t, &err), 0);
    cr_assert_eq(t, 2000000);
    cr_assert_eq(cfg_find(&cfg, "algorithm", "sync")->line, 2);
    cr_assert_str_eq(cfg_get_string(&cfg, "algorithm", "mode"), "sum");
    cr_assert_str_eq(cfg_get_string(&cfg, "algorithm", "codec"), "topk(0.01)");
    cfg_release(&cfg);

    /* a method with no keys of its own adds no entries */
    test_config_load_ok(&test_config_registries, "[algorithm]\nname = allreduce_sgd\n", NULL, 0,
                        &cfg);
    cr_assert_eq(cfg.n_entries, n);
    cfg_release(&cfg);
}

Test(config_load, method_key_errors)
{
    test_config_load_fails(&test_config_registries,
                           "[experiment]\nseed = 2\n[algorithm]\nname = foo\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:4: [algorithm] name: unknown algorithm 'foo' (dtsim list algorithms)");
    const char *set = "algorithm.name=bar";
    test_config_load_fails(&test_config_registries, "", &set, 1, SIM_ECONFIG,
                           "--set algorithm.name: unknown algorithm 'bar' (dtsim list "
                                      "algorithms)");
    test_config_load_fails(&test_config_registries,
                           "[algorithm]\nname = local_sgd\nlr = 0.1\n\n\nlocal_step = 3\n",
                           NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:6: [algorithm] local_step: unknown key for algorithm 'local_sgd' "
                           "(did you mean 'local_steps'?)");
    test_config_load_fails(&test_config_registries,
                           "[algorithm]\nname = local_sgd\nlr = 0.1\nperiod = 3\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:4: [algorithm] period: unknown key for algorithm 'local_sgd' "
                           "(known: name, lr, momentum, nesterov, weight_decay, optimizer, beta1, beta2, "
                           "eps, bias_correction, lamb_min_trust, lamb_max_trust, clip, bucket, batch, "
                           "compressor, error_feedback, lr_milestones, lr_decay, warmup_epochs, "
                           "local_steps, sync, mode, codec)");
    test_config_load_fails(&test_config_registries, "[algorithm]\nlearning_rate = 0.1\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:2: [algorithm] learning_rate: unknown key for algorithm "
                           "'allreduce_sgd' (did you mean 'lr'?)");
    test_config_load_fails(NULL, "[workers]\nlr = 0.1\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [workers] lr: unknown key (did you mean [algorithm] lr?)");
    test_config_load_fails(&test_config_registries,
                           "[algorithm]\nname = allreduce_sgd\nlocal_steps = 3\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:3: [algorithm] local_steps: unknown key for algorithm "
                           "'allreduce_sgd' (known: name, lr, momentum, nesterov, weight_decay, "
                           "optimizer, beta1, beta2, eps, bias_correction, lamb_min_trust, "
                           "lamb_max_trust, clip, bucket, batch, compressor, error_feedback, "
                           "lr_milestones, lr_decay, warmup_epochs)");
    test_config_load_fails(&test_config_registries,
                           "[algorithm]\nname = local_sgd\nlocal_steps = many\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:3: [algorithm] local_steps: expected an integer such as 16, got "
                           "'many'");
    test_config_load_fails(&test_config_registries, "[algorithm]\nname = local_sgd\nmode = max\n",
                           NULL, 0, SIM_ECONFIG,
                           "exp.ini:3: [algorithm] mode: expected one of avg|sum, got 'max'");
    test_config_load_fails(&test_config_registries,
                           "[algorithm]\nname = local_sgd\nlocal_steps = 3\nlocal_steps = 4\n",
                           NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:4: [algorithm] local_steps: duplicate key (first set on line 3)");
}

Test(config_load, without_registries_any_algorithm_and_keys_are_strings)
{
    cfg_config a, b;
    test_config_load_ok(NULL, "[algorithm]\nname = my_method\nzeta = 1\nalpha = topk( 3 )\n", NULL,
                        0, &a);
    test_config_load_ok(NULL, "[algorithm]\nalpha = topk(3)\nzeta = 1\nname = my_method\n", NULL,
                        0, &b);
    cr_assert_str_eq(a.algorithm, "my_method");
    cr_assert_eq(a.n_entries, test_config_key_count() + 2);
    cr_assert_str_eq(cfg_get_string(&a, "algorithm", "alpha"), "topk(3)");
    cr_assert_str_eq(cfg_get_string(&a, "algorithm", "zeta"), "1");
    char *ca = cfg_canonical(&a), *cb = cfg_canonical(&b);
    cr_assert_str_eq(ca, cb);
    cr_assert(strstr(ca, "warmup_epochs = 0\nalpha = topk(3)\nzeta = 1\n[workload]\n"), "%s", ca);
    free(ca);
    free(cb);
    cfg_release(&a);
    cfg_release(&b);
}

/* max_epochs' default of 1 applies only to a file that sets no limit of
 * its own. */

Test(config_load, default_epoch_limit_only_without_a_limit_of_its_own)
{
    cfg_config cfg;
    test_config_load_ok(NULL, "[workers]\ncount = 4\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.max_epochs, 1);
    cfg_release(&cfg);
    test_config_load_ok(NULL, "[experiment]\nmax_iterations = 300\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.max_epochs, 0);
    cr_assert_eq(cfg.max_iterations, 300);
    cr_assert_str_eq(cfg_find(&cfg, "experiment", "max_epochs")->value, "0");
    char *canon = cfg_canonical(&cfg);
    cr_assert(strstr(canon, "max_epochs = 0\n"), "%s", canon);
    free(canon);
    cfg_release(&cfg);
    const char *set = "experiment.max_time=10s";
    test_config_load_ok(NULL, "", &set, 1, &cfg);
    cr_assert_eq(cfg.max_epochs, 0);
    cr_assert_eq(cfg.max_time, 10 * SIM_NS_PER_S);
    cfg_release(&cfg);
    test_config_load_ok(NULL, "[experiment]\ntarget_accuracy = 0.8\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.max_epochs, 0);
    cfg_release(&cfg);
    /* a limit of its own and max_epochs: both stay */
    test_config_load_ok(NULL, "[experiment]\nmax_iterations = 300\nmax_epochs = 2\n", NULL, 0,
                        &cfg);
    cr_assert_eq(cfg.max_epochs, 2);
    cfg_release(&cfg);
    /* a limit written as 0 is no limit: the default applies */
    test_config_load_ok(NULL, "[experiment]\nmax_iterations = 0\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.max_epochs, 1);
    cfg_release(&cfg);
    /* max_epochs = 0 alone is still no stopping condition */
    test_config_load_fails(NULL, "[experiment]\nmax_epochs = 0\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini: [experiment]: no stopping condition (set max_iterations, max_time, "
                           "max_epochs or target_accuracy)");
}

/* [workers] precision picks each named device's peak; device lists give
 * each group of workers its own, in worker order (the stand-in v100 of
 * tests/common.c: fp32 15.7, fp16 125 TFLOPS). */
Test(config_load, precision_and_devices_per_worker)
{
    cfg_config cfg;
    test_config_load_ok(&test_config_registries, "[workers]\ncount = 4\ndevice = v100\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.precision, CFG_PRECISION_FP32);
    cr_assert_eq(cfg.compute.device_flops, 15.7e12);
    cr_assert_eq(cfg.n_device_groups, 1);
    cr_assert_str_eq(cfg.device_groups[0].name, "v100");
    cr_assert_eq(cfg.device_groups[0].count, 4);
    cr_assert_str_eq(cfg_find(&cfg, "workers", "device")->value, "15700000000000FLOPS");
    cr_assert_eq(cfg.efficiency_published, 0);
    cfg_release(&cfg);
    test_config_load_ok(&test_config_registries, "[workers]\ncount = 4\nprecision = FP16\ndevice = V100\n", NULL, 0,
                        &cfg);
    cr_assert_eq(cfg.precision, CFG_PRECISION_FP16);
    cr_assert_eq(cfg.compute.device_flops, 125e12);
    cr_assert_str_eq(cfg_find(&cfg, "workers", "precision")->value, "fp16");
    cfg_release(&cfg);
    /* a speed stays a speed, whatever the precision */
    test_config_load_ok(&test_config_registries, "[workers]\nprecision = fp16\ndevice = 10TFLOPS\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.compute.device_flops, 10e12);
    cr_assert_eq(cfg.n_device_groups, 0);
    cfg_release(&cfg);
    test_config_load_ok(&test_config_registries,
                        "[workers]\ncount = 5\ndevice = v100 * 2, V100*3\nefficiency = published\n",
                        NULL, 0, &cfg);
    cr_assert_eq(cfg.n_device_groups, 2);
    cr_assert_eq(cfg.device_groups[0].count, 2);
    cr_assert_eq(cfg.device_groups[1].count, 3);
    cr_assert_eq(cfg.device_groups[1].flops, 15.7e12);
    cr_assert_str_eq(cfg_find(&cfg, "workers", "device")->value, "v100*2, v100*3");
    cr_assert_str_eq(cfg_find(&cfg, "workers", "efficiency")->value, "published");
    cr_assert_eq(cfg.efficiency_published, 1);
    cfg_release(&cfg);
}

Test(config_load, device_errors_name_the_key)
{
    test_config_load_fails(&test_config_registries, "[workers]\ncount = 16\ndevice = v100*8, v100*4\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:3: [workers] device: the device counts add up to 12 "
                           "workers, but [workers] count is 16");
    test_config_load_fails(&test_config_registries, "[workers]\ncount = 8\nprecision = tf32\ndevice = v100\n",
                           NULL, 0, SIM_ECONFIG,
                           "exp.ini:4: [workers] device: v100 has no tf32 peak ([workers] "
                           "precision = tf32); it has fp32, fp16");
    test_config_load_fails(&test_config_registries, "[workers]\ncount = 8\ndevice = v100*4, tpu*4\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:3: [workers] device: expected a speed such as 15.7TFLOPS or "
                           "a device preset (dtsim list presets), got 'tpu'");
    test_config_load_fails(&test_config_registries, "[workers]\ncount = 8\ndevice = v100*4, v100\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:3: [workers] device: every device of a list needs its "
                           "count (NAME*COUNT), got 'v100*4, v100'");
    test_config_load_fails(&test_config_registries, "[workers]\ncount = 8\ndevice = v100*0, v100*8\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:3: [workers] device: expected NAME*COUNT with a count >= 1 "
                           "such as v100*8, got 'v100*0'");
    test_config_load_fails(&test_config_registries, "[workers]\nprecision = fp8\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [workers] precision: expected one of "
                           "fp32|tf32|fp16|bf16, got 'fp8'");
    test_config_load_fails(&test_config_registries, "[workers]\nefficiency = publish\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [workers] efficiency: expected a fraction such as 0.5 "
                           "or published, got 'publish'");
}

/* [network] calibration = FILE: the fragment's keys load (the path
 * relative to the experiment file), keys of the experiment and --set
 * override them; the tables by size get their canonical text. */
Test(config_load, calibration_fragment_and_overrides)
{
    const char *dir = test_tmpdir();
    char sub[1024], path[1024];
    snprintf(sub, sizeof sub, "%s/cal", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    test_write_file(sub, "net.ini",
                    "# written by dtsim calibrate\n[network]\nlatency = 484ns\n"
                    "bandwidth = 2930447272.25B/s\nefficiency = 0.9\n"
                    "message_overhead = 3us\ncollective_overhead = 12us\n"
                    "efficiency_by_size = 0:0.5, 64KiB:0.9\n");
    snprintf(path, sizeof path, "%s",
             test_write_file(dir, "e.ini", "[network]\ncalibration = cal/net.ini\n"
                                            "latency = 9us\n"));
    cfg_config cfg;
    sim_err err;
    const char *set[] = {"network.message_overhead=1us"};
    cr_assert_eq(cfg_load(NULL, path, set, 1, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(cfg.latency, 9e-6);                 /* the experiment's own */
    cr_assert_eq(cfg.bandwidth, 2930447272.25);      /* the fragment's, exactly */
    cr_assert_eq(cfg.net_efficiency, 0.9);
    cr_assert_eq(cfg.message_overhead, 1e-6);        /* --set */
    cr_assert_eq(cfg.collective_overhead, 12e-6);
    cr_assert_eq(cfg.efficiency_by_size.n, 2);
    cr_assert_eq(cfg.efficiency_by_size.from[1], 65536.0);
    cr_assert_eq(cfg.efficiency_by_size.value[1], 0.9);
    cr_assert_str_eq(cfg_find(&cfg, "network", "efficiency_by_size")->value,
                     "0B:0.5, 64KiB:0.9");
    cr_assert_str_eq(cfg_find(&cfg, "network", "calibration")->value, "cal/net.ini");
    cfg_release(&cfg);

    /* defaults: the pure model */
    test_config_load_ok(NULL, "[network]\nlatency = 1us\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.net_efficiency, 1.0);
    cr_assert_eq(cfg.message_overhead, 0.0);
    cr_assert_eq(cfg.collective_overhead, 0.0);
    cr_assert_eq(cfg.efficiency_by_size.n, 0);
    cr_assert_eq(cfg.overhead_by_size.n, 0);
    cr_assert_str_eq(cfg_find(&cfg, "network", "overhead_by_size")->value, "none");
    cfg_release(&cfg);
}

/* A missing or malformed fragment, and bad values of the new keys: each
 * message names the file, line and key. */
Test(config_load, calibration_and_transport_key_errors)
{
    const char *dir = test_tmpdir();
    char path[1024], want[2048];
    cfg_config cfg;
    sim_err err;
    snprintf(path, sizeof path, "%s",
             test_write_file(dir, "e.ini", "[network]\ncalibration = nope.ini\n"));
    cr_assert_eq(cfg_load(NULL, path, NULL, 0, &cfg, &err), SIM_EINPUT);
    snprintf(want, sizeof want,
             "%s:2: [network] calibration: %s/nope.ini: cannot open: No such file or directory",
             path, dir);
    cr_assert_str_eq(err.msg, want);
    /* a folder is refused before it is read */
    test_write_file(dir, "e.ini", "[network]\ncalibration = .\n");
    cr_assert_eq(cfg_load(NULL, path, NULL, 0, &cfg, &err), SIM_EINPUT);
    snprintf(want, sizeof want, "%s:2: [network] calibration: %s/.: not a regular file", path,
             dir);
    cr_assert_str_eq(err.msg, want);

    const struct {
        const char *frag, *msg;
    } bad[] = {
        {"[network]\nlatency = 1us\n[workers]\ncount = 3\n",
         "f.ini:4: [workers] count: a calibration file holds [network] keys only (and no "
         "calibration)"},
        {"[network]\nefficiency = 2\n", "f.ini:2: [network] efficiency: must be in (0, 1], got 2"},
        {"[network]\nlatency = 1us\nlatency = 2us\n",
         "f.ini:3: [network] latency: duplicate key (first set on line 2)"},
        {"[network]\nspeed = 1\n", "f.ini:2: [network] speed: unknown key"},
        {"latency = 1us\n", "f.ini:1: key 'latency' outside any section"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char fpath[1024];
        snprintf(fpath, sizeof fpath, "%s", test_write_file(dir, "f.ini", bad[i].frag));
        snprintf(path, sizeof path, "%s",
                 test_write_file(dir, "e.ini", "[network]\ncalibration = f.ini\n"));
        cr_assert_eq(cfg_load(NULL, path, NULL, 0, &cfg, &err), SIM_ECONFIG, "%s", bad[i].frag);
        char *at = strstr(err.msg, bad[i].msg);
        cr_assert_not_null(at, "%s", err.msg);
        /* the fragment's full path; a fault of the file's form after the
         * experiment's line, a bad value by itself */
        if (i == 1)
            snprintf(want, sizeof want, "%s/f.ini:2: ", dir);
        else
            snprintf(want, sizeof want, "%s:2: [network] calibration: %s/f.ini:", path, dir);
        cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
    }

    test_config_load_fails(NULL, "[network]\nefficiency = 0\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [network] efficiency: must be in (0, 1], got 0");
    test_config_load_fails(NULL, "[network]\nmessage_overhead = 5\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [network] message_overhead: a time needs a unit (such "
                           "as 5us, 1.5ms or 2s), got '5'");
    test_config_load_fails(NULL, "[network]\nefficiency_by_size = 1KiB:0.5\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:2: [network] efficiency_by_size: the first size must be 0 "
                           "in '1KiB:0.5' (expected SIZE:VALUE pieces such as '0:0.5, 64KiB:0.8,"
                           " 1MiB:0.94': sizes from 0 and increasing, values in (0, 1])");
    test_config_load_fails(NULL, "[network]\noverhead_by_size = 0:1us, 0:2us\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:2: [network] overhead_by_size: sizes must increase in "
                           "'0:2us' (expected SIZE:VALUE pieces such as '0:20us, 64KiB:30us': "
                           "sizes from 0 and increasing, values times >= 0)");
}

/* Method-scoped values: --set METHOD:section.key=value and [METHOD:section]
 * apply to runs of that method only; the command line beats the file, a
 * scoped value beats an unscoped one from the same place. */
Test(config_load, method_scoped_values)
{
    const cfg_schema *sc = &test_config_registries;
    const char *set[] = {"local_sgd:algorithm.local_steps=8", "local_sgd:algorithm.lr=0.2"};
    cfg_config cfg;
    test_config_load_ok(sc, "[algorithm]\nname = local_sgd\n", set, 2, &cfg);
    cr_assert_str_eq(cfg_find(&cfg, "algorithm", "local_steps")->value, "8");
    cr_assert_eq(cfg_find(&cfg, "algorithm", "local_steps")->line, -1);
    cr_assert_eq(cfg.lr, 0.2);
    cfg_release(&cfg);

    /* another method: the scoped values do not apply, the canonical text is
     * that of no values at all */
    cfg_config plain, none;
    test_config_load_ok(sc, "[algorithm]\nname = allreduce_sgd\n", set, 2, &plain);
    test_config_load_ok(sc, "[algorithm]\nname = allreduce_sgd\n", NULL, 0, &none);
    char *c1 = cfg_canonical(&plain), *c2 = cfg_canonical(&none);
    cr_assert_str_eq(c1, c2);
    free(c1);
    free(c2);
    cr_assert_null(cfg_find(&plain, "algorithm", "local_steps"));
    cfg_release(&plain);
    cfg_release(&none);

    /* the method chosen by --set (a grid value) picks the scope */
    const char *grid[] = {"local_sgd:algorithm.local_steps=8", "algorithm.name=local_sgd"};
    test_config_load_ok(sc, "", grid, 2, &cfg);
    cr_assert_str_eq(cfg_find(&cfg, "algorithm", "local_steps")->value, "8");
    cfg_release(&cfg);

    /* in the file: [local_sgd:algorithm] beats [algorithm], --set beats both */
    const char *file = "[algorithm]\nname = local_sgd\nlr = 0.1\n"
                       "[local_sgd:algorithm]\nlocal_steps = 16\nlr = 0.3\n"
                       "[allreduce_sgd:algorithm]\nlr = 0.5\n";
    test_config_load_ok(sc, file, NULL, 0, &cfg);
    cr_assert_str_eq(cfg_find(&cfg, "algorithm", "local_steps")->value, "16");
    cr_assert_eq(cfg_find(&cfg, "algorithm", "local_steps")->line, 5);
    cr_assert_eq(cfg.lr, 0.3);
    cfg_release(&cfg);
    const char *lr = "algorithm.lr=0.7";
    test_config_load_ok(sc, file, &lr, 1, &cfg);
    cr_assert_eq(cfg.lr, 0.7);
    cfg_release(&cfg);
    const char *name = "algorithm.name=allreduce_sgd";
    test_config_load_ok(sc, file, &name, 1, &cfg);
    cr_assert_eq(cfg.lr, 0.5);
    cfg_release(&cfg);
}

Test(config_load, method_scoped_errors)
{
    const cfg_schema *sc = &test_config_registries;
    const char *unknown = "local_sdg:algorithm.local_steps=8";
    test_config_load_fails(sc, "", &unknown, 1, SIM_ECONFIG,
                           "--set local_sdg:algorithm.local_steps=8: unknown method 'local_sdg'"
                           " in the scope 'local_sdg:' (dtsim list algorithms)");
    const char *no_key = "allreduce_sgd:algorithm.local_steps=8";
    test_config_load_fails(sc, "", &no_key, 1, SIM_ECONFIG,
                           "--set allreduce_sgd:algorithm.local_steps=8: method 'allreduce_sgd'"
                           " has no key [algorithm] local_steps (known: name, lr, momentum,"
                           " nesterov, weight_decay, optimizer, beta1, beta2, eps,"
                           " bias_correction, lamb_min_trust, lamb_max_trust, clip, bucket,"
                           " batch, compressor, error_feedback, lr_milestones, lr_decay,"
                           " warmup_epochs)");
    const char *name = "local_sgd:algorithm.name=asgd";
    test_config_load_fails(sc, "", &name, 1, SIM_ECONFIG,
                           "--set local_sgd:algorithm.name=asgd: a method scope cannot set the"
                           " method itself");
    /* the value is checked where it applies */
    const char *bad = "local_sgd:algorithm.local_steps=many";
    const char *pick = "algorithm.name=local_sgd";
    const char *both[] = {bad, pick};
    cfg_config cfg;
    test_config_load_ok(sc, "", &bad, 1, &cfg);
    cfg_release(&cfg);
    sim_err err = {0};
    cr_assert_lt(cfg_load_string(sc, "exp.ini", "", both, 2, &cfg, &err), 0);
    cr_assert(strncmp(err.msg, "--set local_sgd:algorithm.local_steps=many: ", 43) == 0, "%s",
              err.msg);
    test_config_load_fails(sc, "[local_sgd:algorithm]\nlocal_step = 8\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:2: [local_sgd:algorithm] local_step: method 'local_sgd' has"
                           " no key [algorithm] local_step (did you mean 'local_steps'?)");
    test_config_load_fails(sc, "[dpsgd:algorithm]\nlr = 1\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [dpsgd:algorithm] lr: unknown method 'dpsgd' in the"
                           " scope 'dpsgd:' (dtsim list algorithms)");
    test_config_load_fails(sc, "[:algorithm]\nlr = 1\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:1: [:algorithm]: expected [METHOD:algorithm]");
}

/* Issue 35 items 8 and 13: an empty fragment, a fragment's bad value that
 * the experiment overrides, a trailing comma in a device list, and a
 * 32-piece table on one line (longer than inih's 200-character line). */
Test(config_load, calibration_fragments_are_checked_whole)
{
    const char *dir = test_tmpdir();
    char path[1024], want[2048];
    cfg_config cfg;
    sim_err err;
    snprintf(path, sizeof path, "%s",
             test_write_file(dir, "e.ini", "[network]\ncalibration = f.ini\nefficiency = 0.5\n"));
    test_write_file(dir, "f.ini", "; nothing measured\n\n");
    cr_assert_eq(cfg_load(NULL, path, NULL, 0, &cfg, &err), SIM_ECONFIG);
    snprintf(want, sizeof want, "%s:2: [network] calibration: %s/f.ini: an empty calibration "
             "fragment (expected [network] keys, as dtsim calibrate writes them)", path, dir);
    cr_assert_str_eq(err.msg, want);
    /* the experiment sets efficiency itself: the fragment's 2 is still wrong */
    test_write_file(dir, "f.ini", "[network]\nlatency = 2us\nefficiency = 2\n");
    cr_assert_eq(cfg_load(NULL, path, NULL, 0, &cfg, &err), SIM_ECONFIG);
    snprintf(want, sizeof want, "%s:2: [network] calibration: %s/f.ini:3: [network] "
             "efficiency: must be in (0, 1], got 2", path, dir);
    cr_assert_str_eq(err.msg, want);
    test_write_file(dir, "f.ini", "[network]\nlatency = 2us\nefficiency = 0.9\n");
    cr_assert_eq(cfg_load(NULL, path, NULL, 0, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(cfg.net_efficiency, 0.5);
    cr_assert_eq(cfg.latency, 2e-6);
    cfg_release(&cfg);
}

Test(config_load, a_device_list_with_an_empty_item_is_refused)
{
    test_config_load_fails(&test_config_registries, "[workers]\ncount = 4\ndevice = v100*4,\n",
                           NULL, 0, SIM_ECONFIG,
                           "exp.ini:3: [workers] device: an empty item in the device list "
                           "'v100*4,' (expected NAME*COUNT items separated by commas)");
    test_config_load_fails(&test_config_registries,
                           "[workers]\ncount = 4\ndevice = v100*2,,v100*2\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:3: [workers] device: an empty item in the device list "
                           "'v100*2,,v100*2' (expected NAME*COUNT items separated by commas)");
}

Test(config_load, a_32_piece_table_fits_on_one_line)
{
    char text[2048] = "[network]\nefficiency_by_size = 0:0.5";
    size_t n = strlen(text);
    for (int i = 1; i < 32; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, ", %dKiB:0.%d", 64 * i, 500 + 10 * i);
    n += (size_t)snprintf(text + n, sizeof text - n, "\n");
    cr_assert_gt(n, 300);
    cfg_config cfg;
    test_config_load_ok(NULL, text, NULL, 0, &cfg);
    cr_assert_eq(cfg.efficiency_by_size.n, 32);
    cr_assert_eq(cfg.efficiency_by_size.from[31], 64.0 * 31 * 1024);
    /* the canonical text (quoted where long) loads back to the same table */
    char *canon = cfg_canonical(&cfg);
    cfg_config back;
    test_config_load_ok(NULL, canon, NULL, 0, &back);
    cr_assert_str_eq(cfg_find(&back, "network", "efficiency_by_size")->value,
                     cfg_find(&cfg, "network", "efficiency_by_size")->value);
    free(canon);
    cfg_release(&back);
    cfg_release(&cfg);
    /* a value past the item limit names its key */
    char big[1200] = "[network]\nefficiency_by_size = 0:0.5";
    n = strlen(big);
    for (int i = 1; n < 1000; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, ", %dKiB:0.%d", 64 * i, 500 + i);
    snprintf(big + n, sizeof big - n, "\n");
    cfg_config bad;
    sim_err err;
    cr_assert_lt(cfg_load_string(NULL, "exp.ini", big, NULL, 0, &bad, &err), 0);
    cr_assert(strstr(err.msg, "exp.ini:2: efficiency_by_size: value too long"), "%s", err.msg);
}
