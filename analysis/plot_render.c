/* `dtsim plot`, the drawing half: an_plot_data -> PLplot -> PNG, SVG or
 * PDF. The only code that touches PLplot, whose state is global: one
 * plinit ... plend sequence per figure, after checking everything that
 * would make PLplot exit the process (unknown device, unwritable file).
 * Text given to PLplot has its escape character '#' doubled. The legend
 * goes in the corner the curves leave free, growing the y range when no
 * corner is free. */
#include "analysis/plot.h"
#include "analysis/plot_internal.h"
#include "sim/units.h"

#include <errno.h>
#include <math.h>
#include <plplot/plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static int nomem(sim_err *err)
{
    return sim_err_set(err, SIM_ENOMEM, "plot: out of memory");
}

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer (sanitizer builds only): fontconfig's caches and libltdl's
 * driver handles, which PLplot's cairo driver allocates once per process
 * and never frees, are not leaks of ours. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig.so\nleak:libltdl.so\n";
}
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}
#endif


/* Colour-blind-safe palette (Okabe-Ito, then Tableau), black axes. */
static const int palette[][3] = {
    {0, 114, 178}, {213, 94, 0}, {0, 158, 115}, {204, 121, 167}, {230, 159, 0},
    {86, 180, 233}, {0, 0, 0}, {148, 103, 189}, {140, 86, 75}, {188, 189, 34},
};
#define N_PALETTE ((int)(sizeof palette / sizeof palette[0]))
enum { COL_BG = 0, COL_FG = 1, COL_GRID = 2, COL_LINE0 = 3,
       COL_BAND0 = COL_LINE0 + N_PALETTE, N_COL0 = COL_BAND0 + N_PALETTE };

static char plot_error[512];

static void on_plabort(PLCHAR_VECTOR msg)
{
    if (!plot_error[0])
        snprintf(plot_error, sizeof plot_error, "%s", msg ? msg : "PLplot error");
}

void plot_text(const char *in, char *out, size_t size)
{
    size_t j = 0;
    for (const char *p = in; *p && j + 2 < size; p++) {
        if (*p == '#')
            out[j++] = '#';
        out[j++] = *p;
    }
    out[j] = '\0';
}

static const char *device_for(const char *path)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (!dot)
        return NULL;
    if (strcasecmp(dot, ".png") == 0)
        return "pngcairo";
    if (strcasecmp(dot, ".svg") == 0)
        return "svgcairo";
    if (strcasecmp(dot, ".pdf") == 0)
        return "pdfcairo";
    return NULL;
}

static int device_available(const char *dev)
{
    int n = 128, found = 0;
    const char **menu = calloc((size_t)n, sizeof *menu);
    const char **names = calloc((size_t)n, sizeof *names);
    if (menu && names) {
        plgDevs(&menu, &names, &n);
        for (int i = 0; i < n; i++)
            if (names[i] && strcmp(names[i], dev) == 0)
                found = 1;
    }
    free(menu);
    free(names);
    return found;
}

static void axis_range(double lo, double hi, int logscale, double *a, double *b)
{
    if (logscale) {
        lo = log10(lo);
        hi = log10(hi);
    }
    if (!(hi > lo)) {
        double pad = lo != 0 ? fabs(lo) * 0.05 : 0.5;
        lo -= pad;
        hi += pad;
    }
    double pad = (hi - lo) * 0.04;
    *a = lo - pad;
    *b = hi + pad;
}

int an_plot_log_labels(double lo10, double hi10, double *vals, int max)
{
    if (!(hi10 > lo10) || hi10 - lo10 >= 2 || !isfinite(lo10) || !isfinite(hi10) || max < 1)
        return 0;
    double m[90];
    int n = 0;
    for (int set = 0; set < 5; set++) {
        int nm = 0;
        if (set == 0) {
            m[nm++] = 1;
        } else if (set == 1) {
            m[nm++] = 1, m[nm++] = 2, m[nm++] = 5;
        } else {
            int per = set == 2 ? 1 : set == 3 ? 2 : 10; /* steps per unit of mantissa */
            for (int k = per; k < 10 * per; k++)
                m[nm++] = (double)k / per;
        }
        n = 0;
        for (int e = (int)floor(lo10) - 1; e <= (int)ceil(hi10) && n < max; e++)
            for (int k = 0; k < nm && n < max; k++) {
                double v = m[k] * pow(10, e), l = log10(v);
                if (l >= lo10 - 1e-12 && l <= hi10 + 1e-12)
                    vals[n++] = v;
            }
        if (n >= 3 || n == max)
            break;
    }
    return n;
}

/* Marker glyphs (UTF-8, drawn with plstring in the line's colour). */
static const char *const marker_glyphs[AN_PLOT_MARKERS] = {"●", "■", "▲", "◆", "▼", "○"};

void an_plot_line_style(int i, int *style, int *marker)
{
    if (i < 0)
        i = 0;
    *style = 1 + i % 4;
    *marker = i % AN_PLOT_MARKERS;
}

/* One end of a range: a plain number (axis units), a time or a size. */
static int limit_parse(const char *text, size_t len, double *v, char *unit)
{
    char buf[64];
    while (len > 0 && (*text == ' ' || *text == '\t'))
        text++, len--;
    while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
        len--;
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *end = NULL;
    *v = strtod(buf, &end);
    *unit = 0;
    if (*end == '\0')
        return isfinite(*v) ? 0 : -1;
    sim_time t = 0;
    if (sim_parse_time(buf, &t, NULL) == 0) {
        *v = sim_time_to_s(t);
        *unit = 't';
        return 0;
    }
    if (sim_parse_size(buf, v, NULL) == 0 && isfinite(*v)) {
        *unit = 'B';
        return 0;
    }
    return -1;
}

int an_plot_range_parse(const char *opt, const char *text, double range[2], char unit[2],
                        sim_err *err)
{
    const char *comma = text ? strchr(text, ',') : NULL;
    if (!comma || strchr(comma + 1, ',') ||
        limit_parse(text, (size_t)(comma - text), &range[0], &unit[0]) < 0 ||
        limit_parse(comma + 1, strlen(comma + 1), &range[1], &unit[1]) < 0)
        return sim_err_set(err, SIM_EUSAGE,
                           "%s: expected A,B such as 0.7,0.85 (axis units) or 0s,0.12s (a time "
                           "or a size with its unit), got '%s'", opt, text ? text : "");
    if (unit[0] == unit[1] && !(range[0] < range[1]))
        return sim_err_set(err, SIM_EUSAGE, "%s: expected A < B, got '%s'", opt, text);
    return 0;
}

/* Up to 10 markers spread along a curve of n points (px, py drawn). */
static void markers_draw(int n, int i, const double *px, const double *py)
{
    int style, marker;
    an_plot_line_style(i, &style, &marker);
    int m = n < 10 ? n : 10;
    plschr(0, 0.8);
    for (int k = 0; k < m; k++) {
        /* offset by line so that markers of overlapping lines alternate */
        double at = m > 1 ? (k + 0.5 * (i % 2)) * (double)(n - 1) / (double)m : 0;
        int j = (int)lround(at);
        if (j > n - 1)
            j = n - 1;
        plstring(1, &px[j], &py[j], marker_glyphs[marker]);
    }
    plschr(0, 1.05);
}

static void series_draw(const an_plot_series *s, int i, const an_plot_opts *o, double *px,
                        double *py)
{
    int n = s->n;
    for (int j = 0; j < n; j++) {
        px[j] = o->logx ? log10(s->x[j]) : s->x[j];
        px[2 * n - 1 - j] = px[j];
        py[j] = o->logy ? log10(s->hi[j]) : s->hi[j];
        py[2 * n - 1 - j] = o->logy ? log10(s->lo[j]) : s->lo[j];
    }
    if (s->n_runs > 1 && n > 1) {
        plcol0(COL_BAND0 + i % N_PALETTE);
        plfill(2 * n, px, py);
    }
    for (int j = 0; j < n; j++)
        py[j] = o->logy ? log10(s->mean[j]) : s->mean[j];
    plcol0(COL_LINE0 + i % N_PALETTE);
    plwidth(2.2);
    int style, marker;
    an_plot_line_style(i, &style, &marker);
    pllsty(style);
    plline(n, px, py);
    pllsty(1);
    markers_draw(n, i, px, py);
}

/* Figure geometry: the viewport in normalised page coordinates and the
 * text sizes measured on the cairo devices (pixels at scale 1). */
#define VP_X0 0.10
#define VP_X1 0.97
#define VP_Y0 0.11
#define VP_Y1 0.91
#define CHAR_W_PX 11.2
#define LEGEND_SCALE 0.85
#define LEGEND_ROW_PX 29.0

typedef struct frame {
    double x0, x1, y0, y1;  /* world window (log10 on log axes) */
    int w, h;               /* page in pixels */
} frame;

/* Labels and ticks inside a log axis of fewer than two decades (x: 1, y: 0). */
static void log_labels_draw(const frame *f, int x_axis)
{
    double vals[32];
    double lo = x_axis ? f->x0 : f->y0, hi = x_axis ? f->x1 : f->y1;
    int n = an_plot_log_labels(lo, hi, vals, 32);
    for (int i = 0; i < n; i++) {
        double at = log10(vals[i]), pos = (at - lo) / (hi - lo);
        char text[32];
        snprintf(text, sizeof text, "%g", vals[i]);
        if (x_axis) {
            double len = 0.015 * (f->y1 - f->y0);
            pljoin(at, f->y0, at, f->y0 + len);
            plmtex("b", 1.5, pos, 0.5, text);
        } else {
            double len = 0.015 * (f->x1 - f->x0);
            pljoin(f->x0, at, f->x0 + len, at);
            plmtex("lv", 0.7, pos, 1.0, text);
        }
    }
}


static double axis_value(double v, int logscale)
{
    return logscale ? log10(v) : v;
}

/* How much of the curves lies in a world box (samples along the lines and
 * band edges). */
static int box_hits(const an_plot_data *d, const an_plot_opts *o, double bx0, double bx1,
                    double by0, double by1)
{
    int hits = 0;
    for (int i = 0; i < d->n_series; i++) {
        const an_plot_series *s = &d->series[i];
        for (int j = 0; j < s->n; j++) {
            const double *ys[] = {s->mean, s->lo, s->hi};
            for (int k = 0; k < 3; k++) {
                int steps = j + 1 < s->n ? 8 : 1;
                for (int t = 0; t < steps; t++) {
                    double f = (double)t / steps;
                    double x = axis_value(s->x[j], o->logx), y = axis_value(ys[k][j], o->logy);
                    if (t > 0) {
                        x += f * (axis_value(s->x[j + 1], o->logx) - x);
                        y += f * (axis_value(ys[k][j + 1], o->logy) - y);
                    }
                    hits += x >= bx0 && x <= bx1 && y >= by0 && y <= by1;
                }
            }
        }
    }
    return hits;
}

/* The longest legend entry, in characters. */
static int legend_chars(const an_plot_data *d)
{
    int m = 0;
    for (int i = 0; i < d->n_series; i++) {
        int len = (int)strlen(d->series[i].label) + (d->series[i].n_runs > 1 ? 10 : 0);
        m = len > m ? len : m;
    }
    return m;
}

/* The legend's corner: the one whose box covers the fewest curve samples
 * (ties: top right, bottom right, top left, bottom left). When even that
 * one covers some, the y range grows on that side to make room: the
 * caller sets the window again (f is updated). */
static int legend_position(const an_plot_data *d, const an_plot_opts *o, frame *f,
                           int max_chars)
{
    static const int corners[4] = {
        PL_POSITION_TOP | PL_POSITION_RIGHT, PL_POSITION_BOTTOM | PL_POSITION_RIGHT,
        PL_POSITION_TOP | PL_POSITION_LEFT, PL_POSITION_BOTTOM | PL_POSITION_LEFT};
    double vw = (VP_X1 - VP_X0) * f->w, vh = (VP_Y1 - VP_Y0) * f->h;
    double lw = (0.07 * vw + max_chars * CHAR_W_PX * LEGEND_SCALE + 40) / vw;
    double lh = (d->n_series * LEGEND_ROW_PX * LEGEND_SCALE / 0.85 + 16) / vh;
    lw = fmin(lw + 0.025, 1);
    lh = fmin(lh + 0.03, 1);
    int best = 0, best_hits = -1;
    for (int k = 0; k < 4; k++) {
        int right = corners[k] & PL_POSITION_RIGHT, top = corners[k] & PL_POSITION_TOP;
        double fx0 = right ? 1 - lw : 0, fx1 = right ? 1 : lw;
        double fy0 = top ? 1 - lh : 0, fy1 = top ? 1 : lh;
        int hits = box_hits(d, o, f->x0 + fx0 * (f->x1 - f->x0), f->x0 + fx1 * (f->x1 - f->x0),
                            f->y0 + fy0 * (f->y1 - f->y0), f->y0 + fy1 * (f->y1 - f->y0));
        if (best_hits < 0 || hits < best_hits) {
            best = k;
            best_hits = hits;
        }
    }
    if (best_hits > 0 && lh < 0.6) {
        double grow = (f->y1 - f->y0) * lh / (1 - lh);
        if (corners[best] & PL_POSITION_TOP)
            f->y1 += grow;
        else
            f->y0 -= grow;
    }
    return PL_POSITION_INSIDE | corners[best];
}

static void legend_draw(const an_plot_data *d, int position)
{
    int n = d->n_series;
    int *opt = calloc((size_t)n, sizeof *opt), *tcol = calloc((size_t)n, sizeof *tcol);
    int *lcol = calloc((size_t)n, sizeof *lcol), *lsty = calloc((size_t)n, sizeof *lsty);
    double *lw = calloc((size_t)n, sizeof *lw);
    double *ssc = calloc((size_t)n, sizeof *ssc);
    int *snum = calloc((size_t)n, sizeof *snum);
    const char **sym = calloc((size_t)n, sizeof *sym);
    char **text = calloc((size_t)n, sizeof *text);
    char(*buf)[300] = calloc((size_t)n, sizeof *buf);
    if (opt && tcol && lcol && lsty && lw && ssc && snum && sym && text && buf) {
        for (int i = 0; i < n; i++) {
            const an_plot_series *s = &d->series[i];
            opt[i] = PL_LEGEND_LINE | PL_LEGEND_SYMBOL;
            tcol[i] = COL_FG;
            lcol[i] = COL_LINE0 + i % N_PALETTE;
            int marker;
            an_plot_line_style(i, &lsty[i], &marker);
            sym[i] = marker_glyphs[marker];
            ssc[i] = 0.8;
            snum[i] = 2;
            lw[i] = 2.2;
            char raw[300];
            if (s->n_runs > 1)
                snprintf(raw, sizeof raw, "%.250s (%d seeds)", s->label, s->n_runs);
            else
                snprintf(raw, sizeof raw, "%s", s->label);
            plot_text(raw, buf[i], sizeof buf[i]);
            text[i] = buf[i];
        }
        double w = 0, h = 0;
        plwidth(1.0);
        pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
                 position, 0.025, 0.03, 0.07, COL_BG, COL_FG, 1,
                 0, 0, n, opt, 0.8, LEGEND_SCALE, 1.8, 0.0, tcol, (const char *const *)text,
                 NULL, NULL, NULL, NULL, lcol, lsty, lw, lcol, ssc, snum,
                 (const char *const *)sym);
    }
    free(ssc);
    free(snum);
    free(sym);
    free(opt);
    free(tcol);
    free(lcol);
    free(lsty);
    free(lw);
    free(text);
    free(buf);
}

static void figure_draw(const an_plot_data *d, const an_plot_opts *o, int w, int h,
                        double *px, double *py)
{
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    int max_runs = 0;
    for (int i = 0; i < d->n_series; i++) {
        for (int j = 0; j < d->series[i].n; j++) {
            xlo = fmin(xlo, d->series[i].x[j]);
            xhi = fmax(xhi, d->series[i].x[j]);
            ylo = fmin(ylo, d->series[i].lo[j]);
            yhi = fmax(yhi, d->series[i].hi[j]);
        }
        if (d->series[i].n_runs > max_runs)
            max_runs = d->series[i].n_runs;
    }
    frame f = {.w = w, .h = h};
    axis_range(xlo, xhi, o->logx, &f.x0, &f.x1);
    axis_range(ylo, yhi, o->logy, &f.y0, &f.y1);
    if (o->has_xlim) {
        f.x0 = axis_value(o->xlim[0], o->logx);
        f.x1 = axis_value(o->xlim[1], o->logx);
    }
    if (o->has_ylim) {
        f.y0 = axis_value(o->ylim[0], o->logy);
        f.y1 = axis_value(o->ylim[1], o->logy);
    }
    frame auto_f = f;
    int position = legend_position(d, o, &f, legend_chars(d));
    if (o->has_ylim) /* the y range is the user's: the legend may cover curves */
        f.y0 = auto_f.y0, f.y1 = auto_f.y1;
    pladv(0);
    plschr(0, 1.05);
    plsxax(7, 0);
    plsyax(7, 0);
    plvpor(VP_X0, VP_X1, VP_Y0, VP_Y1);
    plwind(f.x0, f.x1, f.y0, f.y1);
    /* light grid under everything, then the data, then black axes */
    plcol0(COL_GRID);
    plwidth(0.6);
    plbox(o->logx ? "gl" : "g", 0, 0, o->logy ? "gl" : "g", 0, 0);
    for (int i = 0; i < d->n_series; i++)
        series_draw(&d->series[i], i, o, px, py);
    plcol0(COL_FG);
    plwidth(1.0);
    /* a log axis of fewer than two decades gets labels between the powers
     * of ten, drawn here instead of PLplot's (which would be one or none) */
    int xfew = o->logx && an_plot_log_labels(f.x0, f.x1, px, 1) > 0;
    int yfew = o->logy && an_plot_log_labels(f.y0, f.y1, px, 1) > 0;
    plbox(o->logx ? (xfew ? "bcstl" : "bcnstl") : "bcnst", 0, 0,
          o->logy ? (yfew ? "bcstvl" : "bcnstvl") : "bcnstv", 0, 0);
    if (xfew)
        log_labels_draw(&f, 1);
    if (yfew)
        log_labels_draw(&f, 0);
    char t[600];
    plot_text(d->xlabel, t, sizeof t);
    plmtex("b", 2.8, 0.5, 0.5, t);
    plot_text(d->ylabel, t, sizeof t);
    plmtex("l", 4.2, 0.5, 0.5, t);
    /* the title, shrunk to fit the page */
    double scale = 1.2, need = CHAR_W_PX * scale * (double)strlen(d->title);
    if (need > 0.95 * w)
        scale *= 0.95 * w / need;
    plschr(0, scale);
    plot_text(d->title, t, sizeof t);
    plmtex("t", max_runs > 1 ? 2.2 : 1.6, 0.5, 0.5, t);
    if (max_runs > 1) {
        plschr(0, 0.75);
        plmtex("t", 0.6, 1.0, 1.0, "lines: mean over seeds; bands: min to max");
    }
    plschr(0, 1.0);
    legend_draw(d, position);
}

int plot_output_check(const char *output, const char **dev, sim_err *err)
{
    *dev = device_for(output);
    if (!*dev)
        return sim_err_set(err, SIM_EUSAGE, "-o '%s': expected a file name ending in .png, "
                                            ".svg or .pdf", output ? output : "");
    FILE *f = fopen(output, "wb");
    if (!f)
        return sim_err_set(err, SIM_EUSAGE, "%s: cannot write: %s", output, strerror(errno));
    fclose(f);
    if (!device_available(*dev)) {
        remove(output);
        return sim_err_set(err, SIM_EINPUT, "%s: PLplot has no %s device (install the "
                                            "Debian package plplot-driver-cairo)",
                           output, *dev);
    }
    return 0;
}

void plot_page_start(const char *dev, const char *output, int w, int h)
{
    plot_error[0] = '\0';
    plsabort(on_plabort);
    plsdev(dev);
    plsfnam(output);
    plspage(0, 0, w, h, 0, 0);
}

int plot_page_finish(const char *output, sim_err *err)
{
    plend();
    struct stat st;
    if (plot_error[0])
        return sim_err_set(err, SIM_EINTERNAL, "%s: PLplot: %s", output, plot_error);
    if (stat(output, &st) != 0 || st.st_size == 0)
        return sim_err_set(err, SIM_EIO, "%s: PLplot wrote nothing", output);
    return 0;
}

/* The limits of one axis in axis units: a limit given with a unit (a time,
 * a size) is divided by the axis's scale; the axis must be of that unit. */
static int limits_to_axis(const char *opt, const char *name, char axis_unit, double scale,
                          const double *in, const char *unit, double *out, sim_err *err)
{
    for (int i = 0; i < 2; i++) {
        out[i] = in[i];
        if (!unit[i])
            continue;
        if (unit[i] != axis_unit)
            return sim_err_set(err, SIM_EUSAGE, "%s: %s given, but the %s axis is %s", opt,
                               unit[i] == 't' ? "a time" : "a size", name,
                               axis_unit == 't'   ? "a time (give seconds or 0s,0.12s)"
                               : axis_unit == 'B' ? "a size (give MB or 0MB,5MB)"
                                                  : "a plain number (give A,B)");
        out[i] = in[i] / scale;
    }
    if (!(out[0] < out[1]))
        return sim_err_set(err, SIM_EUSAGE, "%s %g,%g: expected A < B on the %s axis", opt, out[0],
                           out[1], name);
    return 0;
}

/* A window that shows no data is an error naming where the data are. */
static int window_fail(const char *opt, const char *label, const double *lim, double lo,
                       double hi, sim_err *err)
{
    return sim_err_set(err, SIM_EUSAGE,
                       "%s %g,%g: no data in the window; the data run from %g to %g on this "
                       "axis, %s (a plain number is in the axis's unit; a time or size may "
                       "carry its own: 0s,0.12s, 0MB,5MB)",
                       opt, lim[0], lim[1], lo, hi, label);
}

/* The x window shows data when some line has two of its points in it (or
 * its only point): one point at the window's edge, joined to the next far
 * outside, is a line of no data (as a window in the wrong unit gives). */
static int x_window_shows_data(const an_plot_data *d, const double *lim)
{
    for (int i = 0; i < d->n_series; i++) {
        int in = 0;
        for (int j = 0; j < d->series[i].n; j++)
            in += d->series[i].x[j] >= lim[0] && d->series[i].x[j] <= lim[1];
        if (in >= (d->series[i].n < 2 ? d->series[i].n : 2) && in > 0)
            return 1;
    }
    return 0;
}

/* Axis limits in axis units, showing data, and positive on a log axis. */
static int limits_resolve(const an_plot_data *d, an_plot_opts *o, sim_err *err)
{
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    int rc = 0;
    if (o->has_xlim)
        rc = limits_to_axis("--xlim", "x", d->x_unit, d->x_scale, o->xlim, o->xlim_unit,
                            o->xlim, err);
    if (rc == 0 && o->has_ylim)
        rc = limits_to_axis("--ylim", "y", d->y_unit, d->y_scale, o->ylim, o->ylim_unit,
                            o->ylim, err);
    if (rc < 0)
        return rc;
    memset(o->xlim_unit, 0, sizeof o->xlim_unit);
    memset(o->ylim_unit, 0, sizeof o->ylim_unit);
    if (o->logx && o->has_xlim && !(o->xlim[0] > 0))
        return sim_err_set(err, SIM_EUSAGE, "--xlim %g,%g: a logarithmic axis needs limits > 0",
                           o->xlim[0], o->xlim[1]);
    if (o->logy && o->has_ylim && !(o->ylim[0] > 0))
        return sim_err_set(err, SIM_EUSAGE, "--ylim %g,%g: a logarithmic axis needs limits > 0",
                           o->ylim[0], o->ylim[1]);
    for (int i = 0; i < d->n_series; i++)
        for (int j = 0; j < d->series[i].n; j++) {
            xlo = fmin(xlo, d->series[i].x[j]);
            xhi = fmax(xhi, d->series[i].x[j]);
        }
    if (o->has_xlim && !x_window_shows_data(d, o->xlim))
        return window_fail("--xlim", d->xlabel, o->xlim, xlo, xhi, err);
    /* the y values of the points inside the x window (or all) */
    for (int i = 0; i < d->n_series; i++)
        for (int j = 0; j < d->series[i].n; j++) {
            double x = d->series[i].x[j];
            if (o->has_xlim && (x < o->xlim[0] || x > o->xlim[1]))
                continue;
            ylo = fmin(ylo, d->series[i].lo[j]);
            yhi = fmax(yhi, d->series[i].hi[j]);
        }
    if (o->has_ylim && ylo <= yhi && !(yhi >= o->ylim[0] && ylo <= o->ylim[1]))
        return window_fail("--ylim", d->ylabel, o->ylim, ylo, yhi, err);
    return 0;
}

int an_plot_render(const an_plot_data *d, const an_plot_opts *opts, sim_err *err)
{
    an_plot_opts lim = *opts, *o = &lim;
    int rc = limits_resolve(d, o, err);
    if (rc < 0)
        return rc;
    const char *dev = NULL;
    rc = plot_output_check(o->output, &dev, err);
    if (rc < 0)
        return rc;
    int maxn = 1;
    for (int i = 0; i < d->n_series; i++)
        if (d->series[i].n > maxn)
            maxn = d->series[i].n;
    double *px = malloc(2 * (size_t)maxn * sizeof *px);
    double *py = malloc(2 * (size_t)maxn * sizeof *py);
    if (!px || !py) {
        free(px);
        free(py);
        return nomem(err);
    }
    int w = o->width > 0 ? o->width : 960, h = o->height > 0 ? o->height : 640;
    plot_page_start(dev, o->output, w, h);
    plscmap0n(N_COL0);
    plscol0(COL_BG, 255, 255, 255);
    plscol0(COL_FG, 0, 0, 0);
    plscol0a(COL_GRID, 0, 0, 0, 0.14);
    for (int i = 0; i < N_PALETTE; i++) {
        plscol0(COL_LINE0 + i, palette[i][0], palette[i][1], palette[i][2]);
        plscol0a(COL_BAND0 + i, palette[i][0], palette[i][1], palette[i][2], 0.22);
    }
    plsfont(PL_FCI_SANS, PL_FCI_UPRIGHT, PL_FCI_MEDIUM);
    plinit();
    figure_draw(d, o, w, h, px, py);
    free(px);
    free(py);
    return plot_page_finish(o->output, err);
}

int an_plot_write(const char *path, const an_plot_opts *o, int *n_series, int *n_runs,
                  sim_err *err)
{
    if (!device_for(o->output))
        return sim_err_set(err, SIM_EUSAGE, "-o '%s': expected a file name ending in .png, "
                                            ".svg or .pdf", o->output ? o->output : "");
    an_db *db = an_db_open_readonly(path, err);
    if (!db)
        return err && err->code ? err->code : SIM_EDB;
    an_plot_data d;
    int ret = an_plot_build(db, o, &d, err);
    an_db_close(db);
    if (ret != 0)
        return ret;
    ret = an_plot_render(&d, o, err);
    if (n_series)
        *n_series = d.n_series;
    if (n_runs)
        *n_runs = d.n_runs;
    an_plot_release(&d);
    return ret;
}
