/* analysis/plot_render.c: the figure files (valid PNG of the asked size,
 * SVG, PDF) and the labels of a log axis inside a decade. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/plot.h"
#include "tests/analysis/fixtures.h"
#include "tests/common.h"

static size_t slurp(const char *path, unsigned char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s missing", path);
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n;
}

static unsigned char file_buf[4 << 20];

static void write_figure(const char *dir, const char *name, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", dir, name);
    an_plot_opts o = {.y = "test_accuracy", .by = "algorithm", .output = path,
                      .width = 800, .height = 500};
    sim_err err = {0};
    int n_series = 0, n_runs = 0;
    cr_assert_eq(an_plot_write(fx_path(), &o, &n_series, &n_runs, &err), 0, "%s", err.msg);
    cr_assert_eq(n_series, 3);
    cr_assert_eq(n_runs, 4);
}

Test(plot_render, png_is_valid)
{
    const char *dir = fx_plot_db();
    char path[4200];
    write_figure(dir, "fig.png", path, sizeof path);
    size_t n = slurp(path, file_buf, sizeof file_buf);
    cr_assert_gt(n, 1000);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    cr_assert_eq(memcmp(file_buf, sig, 8), 0);
    cr_assert_eq(memcmp(file_buf + 12, "IHDR", 4), 0);
    unsigned w = (unsigned)file_buf[16] << 24 | (unsigned)file_buf[17] << 16 |
                 (unsigned)file_buf[18] << 8 | file_buf[19];
    unsigned h = (unsigned)file_buf[20] << 24 | (unsigned)file_buf[21] << 16 |
                 (unsigned)file_buf[22] << 8 | file_buf[23];
    cr_assert_eq(w, 800);
    cr_assert_eq(h, 500);
    cr_assert_eq(memcmp(file_buf + n - 8, "IEND", 4), 0);
}

Test(plot_render, svg_is_valid)
{
    const char *dir = fx_plot_db();
    char path[4200];
    write_figure(dir, "fig.svg", path, sizeof path);
    size_t n = slurp(path, file_buf, sizeof file_buf);
    cr_assert_gt(n, 1000);
    cr_assert(strncmp((char *)file_buf, "<?xml", 5) == 0 ||
              strncmp((char *)file_buf, "<svg", 4) == 0);
    cr_assert(strstr((char *)file_buf, "<svg") != NULL);
    cr_assert(strstr((char *)file_buf, "</svg>") != NULL);
}

Test(plot_render, pdf_is_valid)
{
    const char *dir = fx_plot_db();
    char path[4200];
    write_figure(dir, "fig.pdf", path, sizeof path);
    size_t n = slurp(path, file_buf, sizeof file_buf);
    cr_assert_gt(n, 1000);
    cr_assert_eq(memcmp(file_buf, "%PDF-", 5), 0);
    size_t end = n;
    while (end > 0 && (file_buf[end - 1] == '\n' || file_buf[end - 1] == '\r'))
        end--;
    cr_assert_geq(end, 5);
    cr_assert_eq(memcmp(file_buf + end - 5, "%%EOF", 5), 0);
}

/* A log axis inside fewer than two decades gets labels between the powers
 * of ten; a wider one keeps PLplot's (the powers alone). */
Test(plot_render, log_axis_labels_inside_a_decade)
{
    double v[32];
    int n = an_plot_log_labels(log10(0.3), log10(0.9), v, 32);
    cr_assert_eq(n, 7);
    for (int i = 0; i < n; i++)
        cr_assert_float_eq(v[i], 0.1 * (i + 3), 1e-12, "%d: %g", i, v[i]);
    n = an_plot_log_labels(log10(2), log10(30), v, 32);
    cr_assert_eq(n, 4); /* 2, 5, 10, 20 */
    cr_assert(fabs(v[0] - 2) < 1e-12 && fabs(v[1] - 5) < 1e-12 && fabs(v[2] - 10) < 1e-12 &&
              fabs(v[3] - 20) < 1e-12);
    n = an_plot_log_labels(log10(2.1), log10(2.4), v, 32);
    cr_assert_eq(n, 4); /* 2.1 .. 2.4 */
    cr_assert_float_eq(v[0], 2.1, 1e-12);
    cr_assert_float_eq(v[3], 2.4, 1e-12);
    cr_assert_eq(an_plot_log_labels(0, 3, v, 32), 0);
    cr_assert_eq(an_plot_log_labels(-1, 1, v, 32), 0);
    cr_assert_eq(an_plot_log_labels(log10(0.3), log10(0.9), v, 1), 1);

    /* the figure with such an axis renders (the labels are cairo glyphs in
     * the SVG, so they are checked by eye: docs/usage.md) */
    const char *dir = fx_plot_db();
    char path[4200];
    snprintf(path, sizeof path, "%s/log.svg", dir);
    an_plot_opts o = {.y = "test_accuracy", .by = "algorithm", .output = path, .logy = 1,
                      .width = 800, .height = 500};
    sim_err err = {0};
    int n_series = 0, n_runs = 0;
    cr_assert_eq(an_plot_write(fx_path(), &o, &n_series, &n_runs, &err), 0, "%s", err.msg);
    size_t len = slurp(path, file_buf, sizeof file_buf - 1);
    file_buf[len] = '\0';
    cr_assert(strstr((char *)file_buf, "</svg>") != NULL);
}

/* --xlim, --ylim: "A,B" with A < B, finite, each a plain number (axis
 * units) or a time or size with its unit; every other text is a usage
 * error naming the option and the text. */
Test(plot_render, axis_limits_parse_and_errors)
{
    double r[2];
    char u[2];
    sim_err err = {0};
    cr_assert_eq(an_plot_range_parse("--ylim", "0.7,0.85", r, u, &err), 0, "%s", err.msg);
    cr_assert_float_eq(r[0], 0.7, 1e-15);
    cr_assert_float_eq(r[1], 0.85, 1e-15);
    cr_assert(u[0] == 0 && u[1] == 0);
    cr_assert_eq(an_plot_range_parse("--xlim", "-1e3, 2.5", r, u, &err), 0, "%s", err.msg);
    cr_assert_float_eq(r[0], -1000, 1e-12);
    cr_assert_float_eq(r[1], 2.5, 1e-15);
    /* units: times in seconds, sizes in bytes, a plain end stays plain */
    cr_assert_eq(an_plot_range_parse("--xlim", "0s,0.12s", r, u, &err), 0, "%s", err.msg);
    cr_assert(r[0] == 0 && fabs(r[1] - 0.12) < 1e-15 && u[0] == 't' && u[1] == 't');
    cr_assert_eq(an_plot_range_parse("--xlim", "20ms, 2min", r, u, &err), 0, "%s", err.msg);
    cr_assert(fabs(r[0] - 0.02) < 1e-15 && fabs(r[1] - 120) < 1e-12 && u[0] == 't' && u[1] == 't');
    cr_assert_eq(an_plot_range_parse("--xlim", "0,1h", r, u, &err), 0, "%s", err.msg);
    cr_assert(r[0] == 0 && fabs(r[1] - 3600) < 1e-9 && u[0] == 0 && u[1] == 't');
    cr_assert_eq(an_plot_range_parse("--xlim", "1MB,2GiB", r, u, &err), 0, "%s", err.msg);
    cr_assert(r[0] == 1e6 && r[1] == 2147483648.0 && u[0] == 'B' && u[1] == 'B');
    const char *shape = "--xlim: expected A,B such as 0.7,0.85 (axis units) or 0s,0.12s (a "
                        "time or a size with its unit), got '%s'";
    static const char *const bad[] = {"abc", "0.7", "0.7,", ",1", "1,2,3", "0,inf", "nan,1",
                                      "0s,5parsecs", "1s,2s,3s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = (sim_err){0};
        char want[256];
        snprintf(want, sizeof want, shape, bad[i]);
        cr_assert_eq(an_plot_range_parse("--xlim", bad[i], r, u, &err), SIM_EUSAGE, "%s", bad[i]);
        cr_assert_str_eq(err.msg, want);
    }
    static const char *const reversed[] = {"2,1", "1,1", "2s,1500ms"};
    for (size_t i = 0; i < sizeof reversed / sizeof reversed[0]; i++) {
        err = (sim_err){0};
        char want[128];
        snprintf(want, sizeof want, "--xlim: expected A < B, got '%s'", reversed[i]);
        cr_assert_eq(an_plot_range_parse("--xlim", reversed[i], r, u, &err), SIM_EUSAGE);
        cr_assert_str_eq(err.msg, want);
    }
}

/* Limits with a unit are converted into the axis's (the fixture's time
 * axis is in seconds, data from 0 to 4 s; the allreduce_sgd line has
 * points at 0, 1, 2 and 2.5 s, asgd's at 0, 0.5, 1.5 and 0, 4); a window
 * in which no line has two points (as a window in the wrong unit, 0,0.12
 * meant as seconds on an axis in ms, holds only the point at 0) is an
 * error naming the data's range; a unit the axis has not is an error. */
Test(plot_render, limits_with_units_and_empty_windows)
{
    const char *dir = fx_plot_db();
    char path[4200];
    snprintf(path, sizeof path, "%s/units.png", dir);
    an_plot_opts o = {.y = "test_accuracy", .by = "algorithm", .output = path, .has_xlim = 1};
    sim_err err = {0};
    double ok[][2] = {{0, 1}, {1.5, 2.5}, {0.4, 1.6}};
    for (size_t i = 0; i < 3; i++) {
        o.xlim[0] = ok[i][0], o.xlim[1] = ok[i][1]; /* plain: seconds, as the axis */
        cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), 0, "%g,%g: %s", ok[i][0],
                     ok[i][1], err.msg);
    }
    double empty[][2] = {{0, 0.12}, {3.5, 4.5}, {2.6, 3.9}};
    for (size_t i = 0; i < 3; i++) {
        o.xlim[0] = empty[i][0], o.xlim[1] = empty[i][1];
        cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), SIM_EUSAGE, "%g,%g",
                     empty[i][0], empty[i][1]);
    }
    /* 1500ms,2.5s holds allreduce_sgd's 2 and 2.5 s; 2501ms,5s no two points */
    o.xlim[0] = 1.5, o.xlim[1] = 2.5, o.xlim_unit[0] = o.xlim_unit[1] = 't';
    cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), 0, "%s", err.msg);
    o.xlim[0] = 2.501, o.xlim[1] = 5;
    cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), SIM_EUSAGE);
    cr_assert_str_eq(err.msg, "--xlim 2.501,5: no data in the window; the data run from 0 to 4 "
                              "on this axis, simulated time (s) (a plain number is in the "
                              "axis's unit; a time or size may carry its own: 0s,0.12s, "
                              "0MB,5MB)");
    /* plain numbers past the data: the same error, exit 2, nothing drawn */
    remove(path);
    o.xlim[0] = 120, o.xlim[1] = 240, o.xlim_unit[0] = o.xlim_unit[1] = 0;
    cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "no data in the window; the data run from 0 to 4") != NULL);
    FILE *f = fopen(path, "rb");
    cr_assert_null(f, "an empty window writes no figure");
    /* the y window: accuracy runs from 0.1 to 0.95 */
    o.has_xlim = 0;
    o.has_ylim = 1, o.ylim[0] = 2, o.ylim[1] = 3;
    cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--ylim 2,3: no data in the window; the data run from 0.1 to "
                              "0.95") != NULL, "%s", err.msg);
    /* a time on the accuracy axis, a size on the time axis */
    o.ylim[0] = 0, o.ylim[1] = 1, o.ylim_unit[1] = 't';
    cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), SIM_EUSAGE);
    cr_assert_str_eq(err.msg, "--ylim: a time given, but the y axis is a plain number (give A,B)");
    o.has_ylim = 0, o.has_xlim = 1, o.xlim[0] = 0, o.xlim[1] = 1e6;
    o.xlim_unit[0] = 0, o.xlim_unit[1] = 'B';
    cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), SIM_EUSAGE);
    cr_assert_str_eq(err.msg,
                     "--xlim: a size given, but the x axis is a time (give seconds or 0s,0.12s)");
}

/* Six lines (and up to twelve) are told apart by more than colour: no
 * two share both dash pattern and marker, and neighbours differ in both. */
Test(plot_render, lines_differ_in_style_and_marker)
{
    int style[12], marker[12];
    for (int i = 0; i < 12; i++) {
        an_plot_line_style(i, &style[i], &marker[i]);
        cr_assert(style[i] >= 1 && style[i] <= 8);
        cr_assert(marker[i] >= 0 && marker[i] < AN_PLOT_MARKERS);
    }
    for (int i = 0; i < 12; i++)
        for (int j = i + 1; j < 12; j++)
            cr_assert(style[i] != style[j] || marker[i] != marker[j], "lines %d and %d", i, j);
    for (int i = 0; i + 1 < 6; i++)
        cr_assert(style[i] != style[i + 1] && marker[i] != marker[i + 1]);
    for (int i = 0; i < 6; i++)
        for (int j = i + 1; j < 6; j++)
            cr_assert_neq(marker[i], marker[j], "six lines, six markers");
}

/* Limits draw a figure; on a log axis they must be positive. */
Test(plot_render, limits_render_and_log_axes_need_positive_limits)
{
    const char *dir = fx_plot_db();
    char path[4200];
    snprintf(path, sizeof path, "%s/lim.png", dir);
    an_plot_opts o = {.y = "test_accuracy", .by = "algorithm", .output = path,
                      .has_xlim = 1, .xlim = {0.5, 1.5}, .has_ylim = 1, .ylim = {0.7, 0.85}};
    sim_err err = {0};
    cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), 0, "%s", err.msg);
    cr_assert_gt(slurp(path, file_buf, sizeof file_buf), 1000);
    o.logy = 1;
    o.ylim[0] = 0;
    cr_assert_eq(an_plot_write(fx_path(), &o, NULL, NULL, &err), SIM_EUSAGE);
    cr_assert_str_eq(err.msg, "--ylim 0,0.85: a logarithmic axis needs limits > 0");
}
