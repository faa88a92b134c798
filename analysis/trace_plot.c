/* `dtsim plot --timeline` (analysis/trace.h): a Gantt chart of a traced
 * run with PLplot. A row per worker (worker 0 on top); its compute, idle,
 * down and lost spans fill the row, its sends a thin band along the row's
 * foot (they overlap the rest); spans are clipped to the window. Time is
 * shown in the unit that suits the window (us, ms or s). */
#include "analysis/plot_internal.h"
#include "analysis/trace.h"

#include <math.h>
#include <plplot/plplot.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

/* Colours per state (an_span_state order), then background, foreground. */
static const int state_rgb[AN_SPAN_N][3] = {
    {0, 114, 178},   /* compute: blue */
    {230, 159, 0},   /* idle: orange */
    {0, 158, 115},   /* send: green */
    {150, 150, 150}, /* down: grey */
    {213, 94, 0},    /* lost: vermilion */
};
enum { COL_BG = 0, COL_FG = 1, COL_STATE0 = 2, N_COL = COL_STATE0 + AN_SPAN_N };

static int state_of(const char *text)
{
    for (int i = 0; text && i < AN_SPAN_N; i++)
        if (strcmp(text, an_span_state_names[i]) == 0)
            return i;
    return -1;
}

/* The run's simulated end: runs.sim_time, else the last span's end. */
static double run_end(an_db *db, int64_t run_id)
{
    sqlite3_stmt *s = NULL;
    double end = 0;
    if (sqlite3_prepare_v2(an_db_sqlite(db),
                           "SELECT max(coalesce((SELECT sim_time FROM runs WHERE id = ?1), 0),"
                           " coalesce((SELECT max(end) FROM spans WHERE run_id = ?1), 0))",
                           -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, run_id);
        if (sqlite3_step(s) == SQLITE_ROW)
            end = sqlite3_column_double(s, 0);
    }
    sqlite3_finalize(s);
    return end;
}

static void rect(double x0, double x1, double y0, double y1)
{
    double px[4] = {x0, x1, x1, x0}, py[4] = {y0, y0, y1, y1};
    plfill(4, px, py);
}

/* Draws the spans inside [from, to] (x in the axis unit: seconds * scale). */
static int spans_draw(an_db *db, const char *path, int64_t run_id, int n, double from,
                      double to, double scale, int64_t *drawn, sim_err *err)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(an_db_sqlite(db),
                           "SELECT worker, state, start, end FROM spans WHERE run_id = ?1"
                           " AND end > ?2 AND start < ?3 ORDER BY rowid",
                           -1, &s, NULL) != SQLITE_OK)
        return sim_err_set(err, SIM_EDB, "%s: %s", path, sqlite3_errmsg(an_db_sqlite(db)));
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_double(s, 2, from);
    sqlite3_bind_double(s, 3, to);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int w = sqlite3_column_int(s, 0);
        int st = state_of((const char *)sqlite3_column_text(s, 1));
        if (st < 0 || w < 0 || w >= n)
            continue;
        double t0 = fmax(sqlite3_column_double(s, 2), from) * scale;
        double t1 = fmin(sqlite3_column_double(s, 3), to) * scale;
        double y = n - 1 - w; /* worker 0 on top */
        plcol0(COL_STATE0 + st);
        if (st == AN_SPAN_SEND)
            rect(t0, t1, y - 0.4, y - 0.22);
        else
            rect(t0, t1, y - 0.2, y + 0.4);
        (*drawn)++;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : sim_err_set(err, SIM_EDB, "%s: %s", path,
                                               sqlite3_errmsg(an_db_sqlite(db)));
}

static void legend_draw(void)
{
    int opt[AN_SPAN_N], tcol[AN_SPAN_N], bcol[AN_SPAN_N], bpat[AN_SPAN_N];
    double bscale[AN_SPAN_N], bwidth[AN_SPAN_N];
    const char *text[AN_SPAN_N];
    for (int i = 0; i < AN_SPAN_N; i++) {
        opt[i] = PL_LEGEND_COLOR_BOX;
        tcol[i] = COL_FG;
        bcol[i] = COL_STATE0 + i;
        bpat[i] = 0;
        bscale[i] = 0.8;
        bwidth[i] = 1.0;
        text[i] = an_span_state_names[i];
    }
    double w = 0, h = 0;
    pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             PL_POSITION_OUTSIDE | PL_POSITION_RIGHT, 0.015, 0.0, 0.05, COL_BG,
             COL_FG, 1, 5, 1, AN_SPAN_N, opt, 0.5, 0.8, 1.5, 0.0, tcol, text, bcol, bpat,
             bscale, bwidth, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
}

int an_timeline_plot(const char *path, const an_timeline_opts *o, int64_t *n_spans,
                     char *note, size_t note_size, sim_err *err)
{
    const char *dev = NULL;
    char own[512];
    if (!note || note_size == 0)
        note = own, note_size = sizeof own;
    note[0] = '\0';
    an_db *db = an_db_open_readonly(path, err);
    if (!db)
        return err && err->code ? err->code : SIM_EDB;
    int n = 0;
    double recorded = NAN;
    int ret = an_trace_run_check(db, path, o->run_id, &n, err);
    if (ret == 0)
        ret = an_trace_note(db, path, o->run_id, note, note_size, &recorded, err);
    double from = isnan(o->from) ? 0 : o->from;
    double to = isnan(o->to) ? (ret == 0 ? run_end(db, o->run_id) : 0) : o->to;
    if (ret == 0 && (!(to > from) || n < 1))
        ret = sim_err_set(err, SIM_EUSAGE,
                          "--from %g --to %g: the window is empty (run %lld ends at %g s)", from,
                          to, (long long)o->run_id, run_end(db, o->run_id));
    if (ret == 0 && note[0] && from >= recorded)
        ret = sim_err_set(err, SIM_EUSAGE, "--from %g: run %lld's timeline stops at %g s, so "
                          "the window shows nothing: %s", from, (long long)o->run_id, recorded,
                          note);
    if (ret == 0)
        ret = plot_output_check(o->output, &dev, err);
    if (ret < 0) {
        an_db_close(db);
        return ret;
    }
    double span = to - from, scale = span < 1e-3 ? 1e6 : span < 1 ? 1e3 : 1;
    const char *unit = scale == 1e6 ? "us" : scale == 1e3 ? "ms" : "s";
    int w = o->width > 0 ? o->width : 960;
    int h = o->height > 0 ? o->height : (int)fmin(2000, fmax(360, 140 + 26.0 * n));
    plot_page_start(dev, o->output, w, h);
    plscmap0n(N_COL);
    plscol0(COL_BG, 255, 255, 255);
    plscol0(COL_FG, 0, 0, 0);
    for (int i = 0; i < AN_SPAN_N; i++)
        plscol0(COL_STATE0 + i, state_rgb[i][0], state_rgb[i][1], state_rgb[i][2]);
    plsfont(PL_FCI_SANS, PL_FCI_UPRIGHT, PL_FCI_MEDIUM);
    plinit();
    pladv(0);
    plschr(0, 1.0);
    plvpor(0.12, 0.83, 80.0 / h, 1 - 50.0 / h);
    plwind(from * scale, to * scale, -0.6, n - 0.4);
    int64_t drawn = 0;
    ret = spans_draw(db, path, o->run_id, n, from, to, scale, &drawn, err);
    plcol0(COL_FG);
    plwidth(1.0);
    plbox("bcnst", 0, 0, "bc", 1, 0);
    int step = n <= 40 ? 1 : (n + 39) / 40;
    for (int i = 0; i < n; i += step) {
        char label[32];
        snprintf(label, sizeof label, "worker %d", i);
        plmtex("lv", 0.8, (n - 1 - i + 0.6) / (double)n, 1.0, label);
    }
    char t[600], raw[600];
    snprintf(raw, sizeof raw, "simulated time (%s)", unit);
    plmtex("b", 2.8, 0.5, 0.5, raw);
    if (o->title)
        snprintf(raw, sizeof raw, "%s", o->title);
    else
        snprintf(raw, sizeof raw, "Timeline of run %lld (%d workers)", (long long)o->run_id, n);
    plot_text(raw, t, sizeof t);
    plschr(0, 1.2);
    plmtex("t", 1.2, 0.5, 0.5, t);
    plschr(0, 1.0);
    legend_draw();
    an_db_close(db);
    int fin = plot_page_finish(o->output, ret == 0 ? err : &(sim_err){0});
    if (ret == 0)
        ret = fin;
    if (n_spans)
        *n_spans = drawn;
    return ret;
}
