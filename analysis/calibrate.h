/* dtsim calibrate: measures the network that MPI ranks run on and fits
 * dtsim's network model to it (docs/network.md, "Calibration").
 *
 * Measurements (an_calib_measure, under mpirun, every rank calls it):
 *  - pingpong: rank 0 and rank 1 exchange S bytes (MPI_Send/MPI_Recv) back
 *    and forth; the one-way time is half a round trip;
 *  - pairs: rank 0 starts k = ranks - 1 (at least 2) messages of S bytes at
 *    once (MPI_Isend), k to rank 1 when there are 2 ranks, else one to each
 *    other rank; the time until the last has arrived (sharing at a sender);
 *  - allreduce: MPI_Allreduce of S bytes (MPI_BYTE reduced as MPI_CHAR
 *    sums) over all ranks;
 *  - ring: a hand-written ring all-reduce of S bytes, 2(n-1) steps of
 *    MPI_Sendrecv of S/n bytes to rank + 1.
 * Each size is repeated reps times after one warm-up; a point is the
 * median over the repetitions (of the slowest rank's time for the
 * collectives).
 *
 * The fit (an_calib_fit, no MPI) is weighted least squares on relative
 * error (gsl_fit_wlinear, weights 1/t^2): pingpong t(S) = a + S / R gives
 * the intercept a (= message_overhead + hops x latency) and the payload
 * rate R = e B; allreduce T(S) = c0 + c1 S gives the collective overhead
 * c = c0 - 2(n-1) a (not below 0). Each point's residual is
 * (measured - model) / measured. The library never prints: the command
 * (cli/calibrate.c) prints the table and writes the fragment with
 * an_calib_write. */
#ifndef DTSIM_ANALYSIS_CALIBRATE_H
#define DTSIM_ANALYSIS_CALIBRATE_H

#include <stdio.h>

#include "sim/err.h"

#define AN_CALIB_MAX_SIZES 64

typedef enum an_calib_pattern {
    AN_CALIB_PINGPONG = 0,
    AN_CALIB_PAIRS,
    AN_CALIB_ALLREDUCE,
    AN_CALIB_RING,
    AN_CALIB_N_PATTERNS
} an_calib_pattern;

typedef struct an_calib_opts {
    double min_size;   /* bytes, >= 1; default 8 */
    double max_size;   /* bytes, >= min_size; default 16 MiB */
    double factor;     /* sizes min, min x factor, ..., max; > 1; default 4 */
    int reps;          /* repetitions per size after one warm-up; default 5 */
    int hops;          /* links on a path between two ranks in the model; default 2 (star) */
    double bandwidth;  /* the links' nominal rate, bytes/s; 0: the fitted rate (e = 1) */
    double latency;    /* the links' known latency, s; < 0: intercept / hops (overhead 0) */
    int by_size;       /* 1: also write efficiency_by_size from the pingpong points */
} an_calib_opts;

/* The defaults above. */
void an_calib_opts_default(an_calib_opts *o);

typedef struct an_calib_point {
    double bytes;     /* message or vector size */
    double measured;  /* seconds, median over the repetitions */
    double model;     /* seconds, the fitted model's time */
    double residual;  /* (measured - model) / measured */
} an_calib_point;

typedef struct an_calib_result {
    int ranks;        /* MPI ranks measured */
    int rank;         /* this process's rank (only rank 0 holds the points) */
    int n_sizes;
    an_calib_point pt[AN_CALIB_N_PATTERNS][AN_CALIB_MAX_SIZES];
    int n_pt[AN_CALIB_N_PATTERNS];
    int pairs_k;      /* concurrent messages of the pairs pattern */
    /* the fit */
    double intercept;           /* s, pingpong a */
    double rate;                /* bytes/s, payload rate R = e B */
    double latency;             /* s per link */
    double bandwidth;           /* bytes/s per link */
    double efficiency;          /* R / bandwidth */
    double message_overhead;    /* s */
    double collective_overhead; /* s */
    double max_residual;        /* max |residual| over the pingpong points */
    double eff_size[AN_CALIB_MAX_SIZES]; /* by_size: sizes (first 0) and efficiencies */
    double eff_value[AN_CALIB_MAX_SIZES];
    int n_eff;
} an_calib_result;

/* The sizes of o into sizes[] (at most AN_CALIB_MAX_SIZES); returns the
 * count, or SIM_EUSAGE with err filled for a bad range. */
int an_calib_sizes(const an_calib_opts *o, double *sizes, sim_err *err);

/* Runs the measurements over MPI_COMM_WORLD (MPI_Init here, MPI_Finalize
 * at the end); needs at least 2 ranks. On rank 0 fills r's points (model
 * and residual still 0). SIM_EUSAGE when not built with MPI or fewer
 * than 2 ranks. Every rank returns the same status. */
int an_calib_measure(const an_calib_opts *o, an_calib_result *r, sim_err *err);

/* Fits the model to r's points and fills the fit, every point's model and
 * residual. SIM_EINPUT when the pingpong points cannot be fitted (fewer
 * than 2 sizes, or a rate that is not positive). */
int an_calib_fit(const an_calib_opts *o, an_calib_result *r, sim_err *err);

/* Writes the [network] fragment (docs/network.md): the fit as keys, the
 * points and max_residual as comments. */
int an_calib_write(const an_calib_opts *o, const an_calib_result *r, const char *path,
                   sim_err *err);

/* "pingpong", "pairs", "allreduce", "ring". */
const char *an_calib_pattern_name(an_calib_pattern p);

#endif
