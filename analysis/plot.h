/* `dtsim plot`: figures of a results database with PLplot (cairo driver:
 * PNG, SVG or PDF chosen by the output file's extension; headless).
 *
 * One line per group of runs: with `by`, runs sharing the value of that
 * runs column or params key ("algorithm", "n_workers", "network.topology");
 * within a group, runs whose params differ only in experiment.seed (and
 * experiment.name) are one curve: the mean over the seeds, interpolated
 * linearly onto the union of their x values where all of them have data,
 * with a translucent min-max band. Groups whose runs differ in other
 * params are split into one curve each, labelled by the params that vary.
 * Only runs with status done or diverged are plotted; `where` is an SQL
 * condition on the runs table (alias r, e.g. "r.n_workers = 8"). */
#ifndef DTSIM_AN_PLOT_H
#define DTSIM_AN_PLOT_H

#include "analysis/db.h"
#include "sim/err.h"

typedef struct an_plot_opts {
    const char *y;          /* metrics column (required): train_loss, test_accuracy, ... */
    const char *x;          /* sim_time (default) | iteration | epoch | samples | bytes_sent */
    const char *by;         /* runs column or params key; NULL = one curve per config */
    const char *where;      /* SQL condition on runs r; NULL = all */
    int logx, logy;         /* logarithmic axes (non-positive values are left out) */
    const char *title;      /* NULL = says what was plotted */
    const char *output;     /* FILE.png | FILE.svg | FILE.pdf */
    int width, height;      /* pixels (PNG) or points (SVG, PDF); 0 = 960 x 640 */
    int has_xlim, has_ylim; /* 1: the axis shows exactly xlim / ylim (curves clipped) */
    double xlim[2], ylim[2]; /* axis units (as an_plot_data's x and mean), or base units
                                where the kind below says so */
    char xlim_unit[2], ylim_unit[2]; /* per limit: 0 = axis units; 't' = seconds, 'B' =
                                        bytes (given with a unit: 0.12s, 20ms, 5MB) */
} an_plot_opts;

typedef struct an_plot_series {
    char label[256];        /* legend text */
    int n_runs;             /* runs averaged (seeds) */
    int n;                  /* points */
    double *x;              /* axis units (already scaled, see an_plot_data) */
    double *mean, *lo, *hi; /* mean and min-max over the runs at x */
} an_plot_series;

typedef struct an_plot_data {
    an_plot_series *series;
    int n_series;
    int n_runs;             /* runs plotted in total */
    char xlabel[128];       /* with units, e.g. "simulated time (s)", "data sent (MB)" */
    char ylabel[128];
    char title[512];
    double x_scale, y_scale; /* axis value = database value / scale */
    char x_unit, y_unit;     /* the columns' base unit: 't' seconds, 'B' bytes, 0 other */
} an_plot_data;

/* Reads and groups the runs and computes the curves. Unknown x or y
 * column, unknown `by`, a bad `where`: SIM_EUSAGE naming the option; no
 * matching runs: SIM_EINPUT; database errors: SIM_EDB. d is caller storage. */
int an_plot_build(an_db *db, const an_plot_opts *opts, an_plot_data *d, sim_err *err);
void an_plot_release(an_plot_data *d);

/* Draws d into opts->output. Unknown extension: SIM_EUSAGE; limits with a
 * unit the axis does not have, or a window with no data (the message names
 * the data's range): SIM_EUSAGE; PLplot's cairo driver missing: SIM_EINPUT;
 * file not writable: SIM_EIO. */
int an_plot_render(const an_plot_data *d, const an_plot_opts *opts, sim_err *err);

/* Labels of a logarithmic axis from 10^lo10 to 10^hi10 that spans fewer
 * than two decades (PLplot labels only the powers of ten, so such an axis
 * would have one label or none): the values m x 10^e inside the range, with
 * the mantissas m of the first of {1}, {1, 2, 5}, {1, 2, ..., 9}, {1, 1.5,
 * ..., 9.5}, {1, 1.1, ..., 9.9} that gives at least three (at most max).
 * Returns how many were written, ascending; 0 when the axis spans two
 * decades or more (the powers of ten are enough). */
int an_plot_log_labels(double lo10, double hi10, double *vals, int max);

/* Parses an axis range "A,B" (--xlim, --ylim; opt names it in the error):
 * each a finite number in the axis's units (unit[i] = 0), or a time (0s,
 * 120ms, 2min, 1h: seconds, unit[i] = 't') or a size (5MB, 1GiB: bytes,
 * unit[i] = 'B'); A < B where both are of one kind. SIM_EUSAGE otherwise. */
int an_plot_range_parse(const char *opt, const char *text, double range[2], char unit[2],
                        sim_err *err);

/* Line style (1-4, PLplot's pllsty) and marker (an index into the marker
 * glyphs, AN_PLOT_MARKERS of them) of line i: lines differ in colour,
 * style and marker, and no two of the first twelve share all three. */
#define AN_PLOT_MARKERS 6
void an_plot_line_style(int i, int *style, int *marker);

/* The whole of `dtsim plot`: opens path read-only, builds and renders.
 * n_series and n_runs (may be NULL) receive what was drawn. */
int an_plot_write(const char *path, const an_plot_opts *opts, int *n_series, int *n_runs,
                  sim_err *err);

#endif
