/* One value (config/config_values.c): units into typed fields, ranges,
 * the special forms of the common keys (batch, eval_every, milestones,
 * device presets from the schema), and the value as written and its SI
 * number for the params table. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "tests/common.h"

Test(config_values, units_parsed_into_typed_fields)
{
    cfg_config cfg;
    test_config_load_ok(NULL, "[experiment]\n"
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
    cr_assert_eq(cfg.eval_train_samples, CFG_EVAL_ALL);
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
    cr_assert_eq(cfg.weights, CFG_WEIGHTS_UNIFORM);
    cr_assert_eq(cfg.batch, 0);
    cr_assert_eq(cfg.nesterov, 1);
    cr_assert_eq(cfg.momentum, 0.9);
    cr_assert_eq(cfg.wire_dtype, CFG_WIRE_BF16);
    cr_assert_eq(cfg.wire_bytes, 2);
    cr_assert_eq(cfg.normalize, CFG_NORMALIZE_STANDARD);
    cr_assert_eq(cfg.init, CFG_INIT_INDEPENDENT);
    cr_assert_eq(cfg.sim_flops, 12.3e9);
    cr_assert_eq(cfg.sim_params, 25557032);

    cr_assert_str_eq(cfg_get_string(&cfg, "experiment", "eval_every"), "2000000000ns");
    cr_assert_str_eq(cfg_get_string(&cfg, "experiment", "eval_train_samples"), "all");
    cr_assert_str_eq(cfg_get_string(&cfg, "workers", "compute"),
                     "lognormal(10000000ns, 0.5)");
    cr_assert_str_eq(cfg_get_string(&cfg, "algorithm", "batch"), "full");
    cr_assert_str_eq(cfg_get_string(&cfg, "algorithm", "nesterov"), "true");
    cr_assert_str_eq(cfg_get_string(&cfg, "workload", "wire_dtype"), "bf16");
    cr_assert_str_eq(cfg_get_string(&cfg, "workload", "sim_flops"), "12300000000");
    const cfg_entry *e = cfg_find(&cfg, "network", "latency");
    cr_assert_eq(e->line, 12);
    cr_assert_str_eq(e->raw, "1.5ms");
    cr_assert_str_eq(e->value, "1500000ns");

    /* typed getters read the canonical text back */
    sim_err err;
    sim_time t;
    double d;
    int64_t i;
    int b;
    cr_assert_eq(cfg_get_time(&cfg, "network", "latency", &t, &err), 0);
    cr_assert_eq(t, 1500000);
    cr_assert_eq(cfg_get_double(&cfg, "algorithm", "momentum", &d, &err), 0);
    cr_assert_eq(d, 0.9);
    cr_assert_eq(cfg_get_int(&cfg, "workers", "count", &i, &err), 0);
    cr_assert_eq(i, 16);
    cr_assert_eq(cfg_get_bool(&cfg, "algorithm", "nesterov", &b, &err), 0);
    cr_assert_eq(b, 1);
    cr_assert_eq(cfg_get_int(&cfg, "workers", "compute", &i, &err), SIM_ECONFIG);
    cr_assert_str_eq(err.msg, "exp.ini:8: [workers] compute: expected an integer such as 16, "
                              "got 'lognormal(10000000ns, 0.5)'");
    cr_assert_eq(cfg_get_double(&cfg, "algorithm", "nope", &d, &err), SIM_ECONFIG);
    cr_assert_str_eq(err.msg, "exp.ini: [algorithm] nope: no such key");
    cfg_release(&cfg);
}

Test(config_values, device_presets_through_the_schema)
{
    cfg_config cfg;
    test_config_load_ok(&test_config_registries, "[workers]\ndevice = v100\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.compute.device_flops, 15.7e12);
    cr_assert_str_eq(cfg_find(&cfg, "workers", "device")->value, "15700000000000FLOPS");
    cfg_release(&cfg);
    test_config_load_fails(&test_config_registries, "[workers]\ndevice = p100\n", NULL, 0,
                           SIM_ECONFIG,
                           "exp.ini:2: [workers] device: expected a speed such as 15.7TFLOPS or a device "
                           "preset (dtsim list presets), got 'p100'");
}

Test(config_values, lr_schedule_keys)
{
    cfg_config cfg;
    test_config_load_ok(NULL,
                        "[algorithm]\nlr_milestones = 5,  8.5\nlr_decay = 0.2\nwarmup_epochs = 1\n", NULL, 0,
                        &cfg);
    cr_assert_eq(cfg.n_lr_milestones, 2);
    cr_assert_float_eq(cfg.lr_milestones[0], 5.0, 1e-15);
    cr_assert_float_eq(cfg.lr_milestones[1], 8.5, 1e-15);
    cr_assert_float_eq(cfg.lr_decay, 0.2, 1e-15);
    cr_assert_float_eq(cfg.warmup_epochs, 1.0, 1e-15);
    cr_assert_str_eq(cfg_find(&cfg, "algorithm", "lr_milestones")->value, "5, 8.5");
    cfg_release(&cfg);
    test_config_load_ok(NULL, "", NULL, 0, &cfg);
    cr_assert_eq(cfg.n_lr_milestones, 0);
    cr_assert_str_eq(cfg_find(&cfg, "algorithm", "lr_milestones")->value, "none");
    cfg_release(&cfg);
    test_config_load_fails(NULL, "[algorithm]\nlr_milestones = 8, 5\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [algorithm] lr_milestones: expected at most 16 increasing positive "
                           "epochs, got '8, 5'");
    test_config_load_fails(NULL, "[algorithm]\nlr_milestones = soon\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [algorithm] lr_milestones: expected increasing positive epochs such "
                           "as 5, 8, got 'soon'");
    test_config_load_fails(NULL, "[algorithm]\nlr_decay = 2\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [algorithm] lr_decay: must be in (0, 1], got 2");
}

Test(config_values, network_routing)
{
    cfg_config cfg;
    test_config_load_ok(NULL, "[network]\ntopology = fat_tree(4)\nrouting = ecmp\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.routing, SIM_ROUTE_ECMP);
    cfg_release(&cfg);
    test_config_load_ok(NULL, "[network]\nrouting = shortest\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.routing, SIM_ROUTE_SHORTEST);
    cfg_release(&cfg);
    test_config_load_fails(NULL, "[network]\nrouting = spray\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [network] routing: expected one of shortest|ecmp, got 'spray'");
}

Test(config_values, bare_numbers_for_times_rates_and_sizes_name_the_key)
{
    test_config_load_fails(NULL, "[network]\nbandwidth = 10\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [network] bandwidth: a rate needs a unit (such as 10Gbps, "
                           "100Mbps or 1GB/s), got '10'");
    test_config_load_fails(NULL, "[network]\nlatency = 5\n", NULL, 0, SIM_ECONFIG,
                           "exp.ini:2: [network] latency: a time needs a unit (such as 5us, 1.5ms or "
                           "2s), got '5'");
    cfg_config cfg;
    test_config_load_ok(NULL, "[network]\nlatency = 0\n", NULL, 0, &cfg);
    cr_assert_eq(cfg.latency, 0);
    cfg_release(&cfg);
}

Test(config_values, zero_learning_rate_and_zero_compute_are_accepted)
{
    cfg_config cfg;
    test_config_load_ok(NULL, "[algorithm]\nlr = 0\n[workers]\ncompute = constant(0)\n", NULL, 0,
                        &cfg);
    cr_assert_eq(cfg.lr, 0);
    cr_assert_eq(cfg.compute.dist.kind, SIM_DIST_CONSTANT);
    cr_assert_eq(cfg.compute.dist.a, 0);
    cr_assert_str_eq(cfg_find(&cfg, "workers", "compute")->value, "constant(0ns)");
    cfg_release(&cfg);
}

/* What the params table stores: the value as written, normalized only in
 * spacing, and its SI number. */

Test(config_values, written_values_and_their_numbers)
{
    cfg_config cfg;
    test_config_load_ok(&test_config_registries,
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
        const cfg_entry *e = cfg_find(&cfg, want[i].section, want[i].key);
        cr_assert_not_null(e, "%s", want[i].key);
        char text[600];
        cfg_entry_written(e, text, sizeof text);
        cr_assert_str_eq(text, want[i].written, "[%s] %s", want[i].section, want[i].key);
        double x = 0;
        int has = cfg_entry_number(e, &x);
        cr_assert_eq(has, !isnan(want[i].num), "[%s] %s", want[i].section, want[i].key);
        if (has)
            cr_assert_float_eq(x, want[i].num, 1e-12 * fabs(want[i].num), "[%s] %s: %.17g",
                               want[i].section, want[i].key, x);
    }
    cfg_release(&cfg);
}
