/* Timelines of traced runs ([experiment] trace = on): the rows the
 * recorder writes (spans: a worker computing, waiting, sending, down, or
 * a step lost to a crash; link_load: the bytes in flight on a directed
 * link from a time on), their export in the Chrome trace event format
 * (`dtsim trace`: Perfetto, chrome://tracing) and their Gantt chart
 * (`dtsim plot --timeline`, analysis/trace_plot.c). Times are simulated
 * seconds. */
#ifndef DTSIM_AN_TRACE_H
#define DTSIM_AN_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/db.h"
#include "sim/err.h"

typedef enum an_span_state {
    AN_SPAN_COMPUTE, /* a compute step (or a message's encoding, decoding) */
    AN_SPAN_IDLE,    /* blocked on communication or peers */
    AN_SPAN_SEND,    /* its messages draining from its host (overlaps the others) */
    AN_SPAN_DOWN,    /* crashed ([faults]) */
    AN_SPAN_LOST,    /* the part of a step computed before a crash lost it */
    AN_SPAN_N
} an_span_state;

/* "compute", "idle", "send", "down", "lost": the spans.state text. */
extern const char *const an_span_state_names[AN_SPAN_N];

typedef struct an_span_row {
    int worker;
    an_span_state state;
    double start, end;      /* simulated seconds */
} an_span_row;

typedef struct an_load_row {
    int link;               /* directed link id (the links table's) */
    double sim_time;        /* simulated seconds */
    double bytes;           /* in flight on the link from sim_time on */
} an_load_row;

/* Appends rows in one transaction each call (the recorder batches). */
int an_db_spans(an_db *db, int64_t run_id, const an_span_row *rows, int n, sim_err *err);
int an_db_loads(an_db *db, int64_t run_id, const an_load_row *rows, int n, sim_err *err);

/* 1 when the run has trace rows, 0 when not (or the database predates the
 * tables), SIM_EDB on error. */
int an_trace_exists(an_db *db, int64_t run_id, sim_err *err);

/* The run exists and has trace rows: 0 with *n_workers its worker count;
 * SIM_EINPUT naming path and the run otherwise, SIM_EDB on error. */
int an_trace_run_check(an_db *db, const char *path, int64_t run_id, int *n_workers,
                       sim_err *err);

/* What a reader of run_id's timeline must be told, in note ("" when
 * nothing): that it reached [experiment] trace_max_events (nothing after
 * the last recorded time, which it names, was recorded), or that the run
 * did not finish (failed, interrupted: the timeline is partial).
 * *recorded_end (may be NULL) receives the last recorded time in
 * simulated seconds. SIM_EDB on error. */
int an_trace_note(an_db *db, const char *path, int64_t run_id, char *note, size_t size,
                  double *recorded_end, sim_err *err);

/* `dtsim trace`: writes run_id's timeline from the database at path to
 * out as a Chrome trace (JSON object format, microseconds): a process
 * "workers" with a thread per worker (complete events compute, idle, down,
 * lost), a process "sends" with a thread per worker, and a process
 * "links" with a counter per link that carried bytes; an_trace_note's
 * note, if any, in otherData.note and in note (note_size bytes; may be
 * NULL). *n_events (may be NULL) receives the events written. Errors: out
 * not ending in .json, or not writable (a missing folder, a folder):
 * SIM_EUSAGE naming it; no such run or no trace rows SIM_EINPUT; a
 * failed write SIM_EIO; database SIM_EDB. */
int an_trace_export(const char *path, int64_t run_id, const char *out, int64_t *n_events,
                    char *note, size_t note_size, sim_err *err);

typedef struct an_timeline_opts {
    int64_t run_id;
    const char *output;     /* FILE.png | .svg | .pdf */
    double from, to;        /* window in simulated seconds; NAN: the run's start, end */
    const char *title;      /* NULL: names the run */
    int width, height;      /* 0: 960 x (rows scaled) */
} an_timeline_opts;

/* `dtsim plot --timeline`: a Gantt chart of the run's spans, a row per
 * worker, a colour per state with a legend, simulated time on x. Errors
 * as an_trace_export's, an empty or reversed window SIM_EUSAGE, and a
 * window after the last recorded time of a timeline that an_trace_note
 * says is cut or partial SIM_EUSAGE naming that time. *n_spans (may be
 * NULL) receives the spans drawn, note (note_size bytes, may be NULL) the
 * note. */
int an_timeline_plot(const char *path, const an_timeline_opts *o, int64_t *n_spans,
                     char *note, size_t note_size, sim_err *err);

#endif
