/* Fuzz target: the values of the report and plot options that are parsed
 * beyond a number: an axis range (--xlim, --ylim: numbers, times, sizes),
 * --compare KEY=BASE,V1,... over a fixed set of groups (its checks and, when
 * they pass, its table, plain and adjusted) and --adjust. The input is the
 * option's text, cut at the first NUL. A parsed range must be finite, and
 * ordered where both ends are of one kind; anything else aborts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/plot.h"
#include "analysis/report.h"
#include "tests/fuzz/fuzz_util.h"

/* Three groups of two seeds that differ in algorithm.name and lr. */
static void groups(an_report_groups *agg, an_report_group *g, char **fps)
{
    static const char *const fp[] = {
        "algorithm.name\x1f" "a\x1e" "algorithm.lr\x1f" "0.1\x1e",
        "algorithm.name\x1f" "b\x1e" "algorithm.lr\x1f" "0.1\x1e",
        "algorithm.name\x1f" "a\x1e" "algorithm.lr\x1f" "0.2\x1e",
    };
    static int64_t ids[3][2] = {{1, 2}, {3, 4}, {5, 6}};
    memset(agg, 0, sizeof *agg);
    for (int i = 0; i < 3; i++) {
        memset(&g[i], 0, sizeof g[i]);
        g[i].run_ids = ids[i];
        g[i].n_runs = 2;
        double acc[2] = {0.5 + 0.1 * i, 0.55 + 0.05 * i}, t[2] = {1, 1};
        an_report_stat_of(acc, 2, &g[i].final_test_accuracy);
        an_report_stat_of(t, 2, &g[i].sim_time);
        fps[i] = (char *)fp[i];
    }
    agg->groups = g;
    agg->n_groups = 3;
    agg->fingerprints = fps;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    double r[2];
    char unit[2];
    sim_err err = {0};
    int rc = an_plot_range_parse("--xlim", text, r, unit, &err);
    fuzz_report("an_plot_range_parse", rc, &err);
    if (rc == 0 && (!isfinite(r[0]) || !isfinite(r[1]) ||
                    (unit[0] == unit[1] && !(r[0] < r[1])))) {
        fprintf(stderr, "range '%s' parsed as %g,%g\n", text, r[0], r[1]);
        abort();
    }
    int adjust = 0;
    rc = an_report_parse_adjust(text, &adjust, &err);
    fuzz_report("an_report_parse_adjust", rc, &err);
    an_report_groups agg;
    an_report_group g[3];
    char *fps[3];
    groups(&agg, g, fps);
    for (int a = AN_ADJUST_NONE; a <= AN_ADJUST_HOLM; a++) {
        FILE *out = fopen("/dev/null", "w");
        err = (sim_err){0};
        rc = an_report_compare_write(&agg, text, a, a == AN_ADJUST_BONFERRONI, out, &err);
        fuzz_report("an_report_compare_write", rc, &err);
        if (out)
            fclose(out);
    }
    free(text);
    return 0;
}
