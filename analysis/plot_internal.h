/* What the PLplot figures share (plot_render.c; used by trace_plot.c): the
 * output checks that must come before PLplot (which would exit the
 * process on an unknown device or an unwritable file), one page's start
 * and end, and text escaping. Not a public header. */
#ifndef DTSIM_AN_PLOT_INTERNAL_H
#define DTSIM_AN_PLOT_INTERNAL_H

#include <stddef.h>

#include "sim/err.h"

/* The cairo device of output's extension, available and the file
 * writable: 0 (*dev set), SIM_EUSAGE, SIM_EINPUT (no cairo driver). */
int plot_output_check(const char *output, const char **dev, sim_err *err);
/* Device, file, page size in pixels and the abort handler; the caller
 * then sets its colours and calls plinit. */
void plot_page_start(const char *dev, const char *output, int w, int h);
/* plend, then PLplot's error or an empty file as SIM_EINTERNAL, SIM_EIO. */
int plot_page_finish(const char *output, sim_err *err);
/* Copies text with PLplot's escape character '#' doubled. */
void plot_text(const char *in, char *out, size_t size);

#endif
