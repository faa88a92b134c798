/* xp_experiment_warnings: a key the user wrote that the configuration
 * does not read gets one warning. The facts come from vtable data (the
 * method's optimizer, the optimizers' key tables, the compressor's
 * identity flag), never from method names. */
#include <criterion/criterion.h>
#include <string.h>

#include "config/config.h"
#include "experiment/experiment.h"

/* The warnings of a one-section file with the given [algorithm] lines. */
static int warnings_of(const char *algorithm_lines, char *buf, size_t len)
{
    char text[1024];
    snprintf(text, sizeof text, "[algorithm]\n%s", algorithm_lines);
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "w.ini", text, NULL, 0, &cfg,
                                        &err), 0, "%s", err.msg);
    int n = xp_experiment_warnings(&cfg, buf, len);
    cfg_release(&cfg);
    return n;
}

Test(warnings, optimizer_keys_follow_the_optimizers_key_tables)
{
    char buf[2048];
    cr_assert_eq(warnings_of("name = allreduce_sgd\nbeta1 = 0.8\nlamb_max_trust = 5\n", buf,
                             sizeof buf),
                 2, "%s", buf);
    cr_assert(strstr(buf, "[algorithm] beta1: ignored: optimizer = sgd (adam, adamw and lamb "
                          "use it)"),
              "%s", buf);
    cr_assert(strstr(buf, "[algorithm] lamb_max_trust: ignored: lamb only"), "%s", buf);
    cr_assert_eq(warnings_of("name = allreduce_sgd\noptimizer = adamw\nbeta1 = 0.8\n", buf,
                             sizeof buf),
                 0, "%s", buf);
    /* the method's own optimizer (vt->optimizer) reads them whatever
     * [algorithm] optimizer says */
    cr_assert_eq(warnings_of("name = onebit_adam\nbeta2 = 0.99\nlamb_min_trust = 0\n", buf,
                             sizeof buf),
                 1, "%s", buf);
    cr_assert(strstr(buf, "lamb_min_trust: ignored: lamb only"), "%s", buf);
    cr_assert_eq(warnings_of("name = onebit_lamb\nbeta2 = 0.99\nlamb_min_trust = 0\n", buf,
                             sizeof buf),
                 0, "%s", buf);
}

Test(warnings, error_feedback_without_a_compressor)
{
    char buf[2048];
    cr_assert_eq(warnings_of("name = allreduce_sgd\nerror_feedback = false\n", buf, sizeof buf),
                 1, "%s", buf);
    cr_assert(strstr(buf, "[algorithm] error_feedback: ignored: no compressor "
                          "(compressor = none)"),
              "%s", buf);
    cr_assert_eq(warnings_of("name = allreduce_sgd\ncompressor = topk(0.1)\n"
                             "error_feedback = false\n",
                             buf, sizeof buf),
                 0, "%s", buf);
}

/* The warnings of a whole file's text (sections and all). */
static int warnings_of_file(const char *text, char *buf, size_t len)
{
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "w.ini", text, NULL, 0, &cfg, &err), 0,
                 "%s", err.msg);
    int n = xp_experiment_warnings(&cfg, buf, len);
    cfg_release(&cfg);
    return n;
}

Test(warnings, an_empty_file_runs_every_default_and_says_so)
{
    char buf[2048];
    cr_assert_eq(warnings_of_file("", buf, sizeof buf), 1, "%s", buf);
    cr_assert(strstr(buf, "w.ini: the file sets no key: every key not given with --set takes its"
                          " default"),
              "%s", buf);
    /* comments and section headers alone set nothing either */
    cr_assert_eq(warnings_of_file("; nothing\n[experiment]\n[workers]\n", buf, sizeof buf), 1,
                 "%s", buf);
    cr_assert_eq(warnings_of_file("[experiment]\nseed = 2\n", buf, sizeof buf), 0, "%s", buf);
}

Test(warnings, a_network_with_more_hosts_than_the_run_names_the_idle_ones)
{
    char buf[2048];
    cr_assert_eq(warnings_of_file("[workers]\ncount = 16\n[network]\n"
                                  "topology = hierarchical(4, 8)\n",
                                  buf, sizeof buf),
                 1, "%s", buf);
    cr_assert(strstr(buf, "w.ini:4: [network] topology: hierarchical(4, 8) has 32 hosts, the run"
                          " uses 16 (workers.count = 16): hosts 16-31 (servers 2-3) stay idle"),
              "%s", buf);
    /* a server half used is no idle server; one host left is named alone */
    cr_assert_eq(warnings_of_file("[workers]\ncount = 12\n[network]\n"
                                  "topology = hierarchical(2, 8)\n",
                                  buf, sizeof buf),
                 1, "%s", buf);
    cr_assert(strstr(buf, "hosts 12-15 stay idle"), "%s", buf);
    cr_assert_eq(warnings_of_file("[workers]\ncount = 15\n[network]\ntopology = torus(4, 4)\n",
                                  buf, sizeof buf),
                 1, "%s", buf);
    cr_assert(strstr(buf, "has 16 hosts, the run uses 15 (workers.count = 15): host 15 stay"),
              "%s", buf);
    /* every host used: nothing; a parameter server counts as a host */
    cr_assert_eq(warnings_of_file("[workers]\ncount = 32\n[network]\n"
                                  "topology = hierarchical(4, 8)\n",
                                  buf, sizeof buf),
                 0, "%s", buf);
    cr_assert_eq(warnings_of_file("[workers]\ncount = 15\n[network]\ntopology = torus(4, 4)\n"
                                  "[algorithm]\nname = asgd\n",
                                  buf, sizeof buf),
                 0, "%s", buf);
    cr_assert_eq(warnings_of_file("[workers]\ncount = 16\n[network]\ntopology = star\n", buf,
                                  sizeof buf),
                 0, "%s", buf);
}

Test(warnings, compression_with_error_feedback_under_momentum)
{
    char buf[2048];
    cr_assert_eq(warnings_of("name = allreduce_sgd\ncompressor = topk(0.01)\nmomentum = 0.9\n"
                             "lr = 0.1\n",
                             buf, sizeof buf),
                 1, "%s", buf);
    cr_assert(strstr(buf, "w.ini:3: [algorithm] compressor: topk(0.01) with error_feedback = true"
                          " and momentum = 0.9 can oscillate at the dense method's lr = 0.1"),
              "%s", buf);
    cr_assert(strstr(buf, "docs/compressors.md"), "%s", buf);
    /* without error feedback, without momentum, without a compressor: none */
    cr_assert_eq(warnings_of("name = allreduce_sgd\ncompressor = topk(0.01)\nmomentum = 0.9\n"
                             "error_feedback = false\n",
                             buf, sizeof buf),
                 0, "%s", buf);
    cr_assert_eq(warnings_of("name = allreduce_sgd\ncompressor = topk(0.01)\n", buf, sizeof buf),
                 0, "%s", buf);
    cr_assert_eq(warnings_of("name = allreduce_sgd\nmomentum = 0.9\n", buf, sizeof buf), 0, "%s",
                 buf);
}

/* [workers] precision picks a named device's peak: ignored for a speed
 * and for a distribution of step times. */
Test(warnings, precision_needs_a_named_device)
{
    static const struct {
        const char *workers;
        int n;
        const char *why;
    } cases[] = {
        {"device = 10TFLOPS\nprecision = fp16\n", 1, "device is a speed, not a preset name"},
        {"compute = constant(1ms)\nprecision = fp16\n", 1,
         "compute is a distribution, not model"},
        {"device = v100*4, a100*4\nprecision = fp16\n", 0, NULL},
        {"device = a100\nprecision = tf32\n", 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512], buf[2048];
        snprintf(text, sizeof text, "[workers]\ncount = 8\n%s", cases[i].workers);
        cfg_config cfg;
        sim_err err = {0};
        cr_assert_eq(cfg_load_string(xp_experiment_schema(), "w.ini", text, NULL, 0, &cfg, &err),
                     0, "%s", err.msg);
        cr_assert_eq(xp_experiment_warnings(&cfg, buf, sizeof buf), cases[i].n, "%s: %s",
                     cases[i].workers, buf);
        if (cases[i].why)
            cr_assert(strstr(buf, "[workers] precision: ignored: ") && strstr(buf, cases[i].why),
                      "%s", buf);
        cfg_release(&cfg);
    }
}

/* trace_max_events bounds a recorded timeline: written without trace = on
 * it is ignored, and said so; with it, or left at its default, nothing. */
Test(warnings, a_timeline_bound_without_a_timeline)
{
    const char *texts[][2] = {
        {"[experiment]\ntrace_max_events = 100\n", "w.ini:2: [experiment] trace_max_events: "
                                                   "ignored: trace = off (the bound is of a "
                                                   "recorded timeline)\n"},
        {"[experiment]\ntrace = off\ntrace_max_events = 100\n", "w.ini:3: [experiment] "
                                                                "trace_max_events: ignored"},
        {"[experiment]\ntrace = on\ntrace_max_events = 100\n", NULL},
        {"[experiment]\ntrace = off\n", NULL},
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        cfg_config cfg;
        sim_err err = {0};
        char buf[2048];
        cr_assert_eq(cfg_load_string(xp_experiment_schema(), "w.ini", texts[i][0], NULL, 0,
                                     &cfg, &err), 0, "%s", err.msg);
        int n = xp_experiment_warnings(&cfg, buf, sizeof buf);
        cfg_release(&cfg);
        const char *at = strstr(buf, "trace_max_events");
        if (texts[i][1])
            cr_assert(at && strstr(buf, texts[i][1]), "%s: %s", texts[i][0], buf);
        else
            cr_assert_null(at, "%s: %s", texts[i][0], buf);
        (void)n;
    }
    /* --set says where too */
    cfg_config cfg;
    sim_err err = {0};
    char buf[2048];
    const char *sets[] = {"experiment.trace_max_events=10"};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "w.ini", "[experiment]\nseed = 1\n",
                                 sets, 1, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(xp_experiment_warnings(&cfg, buf, sizeof buf), 1, "%s", buf);
    cfg_release(&cfg);
    cr_assert(strstr(buf, "--set experiment.trace_max_events: ignored: trace = off"), "%s", buf);
}
