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
