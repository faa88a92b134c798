/* analysis/scaling_plot.c: `dtsim plot --scaling`: lines per value of the
 * --by key, points selected by --where, and the refusals. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "analysis/db.h"
#include "analysis/plot.h"
#include "analysis/scaling.h"
#include "tests/analysis/fixtures.h"
#include "tests/common.h"

/* `dtsim plot --scaling`: one line per value of the --by key, the points
 * selected by --where, an image written; bad y and empty selections refused. */
Test(scaling_plot, plot_lines_and_points)
{
    an_db *db = fx_scaling_db();
    an_db_close(db);
    char png[4096];
    snprintf(png, sizeof png, "%s/s.png", test_tmpdir());
    an_plot_opts o = {.y = "scaling", .x = "n_workers", .by = "algorithm.lr",
                      .where = "r.id <= 5", .output = png};
    sim_err err = {0};
    int lines = 0, points = 0;
    cr_assert_eq(an_scaling_plot_write(fx_path(), &o, &lines, &points, &err), 0, "%s", err.msg);
    cr_assert_eq(lines, 2);  /* lr 0.1 and 0.3 */
    cr_assert_eq(points, 5); /* runs 1..5 */
    FILE *f = fopen(png, "rb");
    cr_assert_not_null(f);
    fclose(f);
    o.y = "step_time";
    o.x = "network.bandwidth";
    o.where = NULL;
    cr_assert_eq(an_scaling_plot_write(fx_path(), &o, &lines, &points, &err), 0, "%s", err.msg);
    cr_assert_eq(lines, 3);
    cr_assert_eq(points, 8);
    o.y = "speed";
    cr_assert_eq(an_scaling_plot_write(fx_path(), &o, &lines, &points, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "speed"), "%s", err.msg);
    o.y = "throughput";
    o.where = "r.id > 100";
    cr_assert_eq(an_scaling_plot_write(fx_path(), &o, &lines, &points, &err), SIM_EINPUT);
}
