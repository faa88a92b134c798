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
