/* dtsim calibrate, the measurements (see calibrate.h): ping-pong,
 * concurrent messages, MPI_Allreduce and a hand-written ring all-reduce
 * over MPI_COMM_WORLD. Every rank takes every step in the same order, so
 * no rank waits forever; failures (no memory) are agreed on by an
 * all-reduce before anything is sent. MPI is initialised here only when
 * the process was started by mpirun. */
#include "analysis/calibrate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/sweep.h"

void an_calib_opts_default(an_calib_opts *o)
{
    memset(o, 0, sizeof *o);
    o->min_size = 8;
    o->max_size = 16.0 * 1024 * 1024;
    o->factor = 4;
    o->reps = 5;
    o->hops = 2;
    o->bandwidth = 0;
    o->latency = -1;
}

const char *an_calib_pattern_name(an_calib_pattern p)
{
    static const char *const names[] = {"pingpong", "pairs", "allreduce", "ring"};
    return p >= 0 && p < AN_CALIB_N_PATTERNS ? names[p] : "?";
}

int an_calib_sizes(const an_calib_opts *o, double *sizes, sim_err *err)
{
    if (!(o->min_size >= 1 && o->max_size >= o->min_size && o->max_size <= 1073741824.0))
        return sim_err_set(err, SIM_EUSAGE,
                           "sizes: expected 1B <= --min-size <= --max-size <= 1GiB, got %.0f and"
                           " %.0f bytes", o->min_size, o->max_size);
    if (!(o->factor > 1))
        return sim_err_set(err, SIM_EUSAGE, "--factor must be > 1, got %g", o->factor);
    int n = 0;
    for (double s = o->min_size; s < o->max_size; s = ceil(s * o->factor)) {
        if (n == AN_CALIB_MAX_SIZES - 1)
            return sim_err_set(err, SIM_EUSAGE,
                               "sizes: more than %d from %.0f to %.0f bytes; raise --factor",
                               AN_CALIB_MAX_SIZES, o->min_size, o->max_size);
        sizes[n++] = floor(s);
    }
    sizes[n++] = floor(o->max_size);
    return n;
}

#ifdef DTSIM_HAVE_MPI
#include <mpi.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of t[0..n-1] (sorted in place). */
static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}


#define TAG_PP 21
#define TAG_PAIR 22
#define TAG_ACK 23
#define TAG_RING 24

typedef struct bench {
    int rank, size;
    unsigned char *sbuf, *rbuf; /* max bytes, and 2 x max */
    double *t;                  /* reps */
} bench;

/* One round trip of S bytes between ranks 0 and 1: half its time. */
static double pingpong_once(bench *b, int s)
{
    double t0 = MPI_Wtime();
    if (b->rank == 0) {
        MPI_Send(b->sbuf, s, MPI_BYTE, 1, TAG_PP, MPI_COMM_WORLD);
        MPI_Recv(b->rbuf, s, MPI_BYTE, 1, TAG_PP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (b->rank == 1) {
        MPI_Recv(b->rbuf, s, MPI_BYTE, 0, TAG_PP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(b->sbuf, s, MPI_BYTE, 0, TAG_PP, MPI_COMM_WORLD);
    }
    return 0.5 * (MPI_Wtime() - t0);
}

/* k messages of S bytes started at once by rank 0 (two to rank 1 when
 * there are two ranks, else one to each other rank); each receiver acks
 * with 0 bytes; rank 0's time until the last ack. */
static double pairs_once(bench *b, int s, int k)
{
    MPI_Request req[AN_CALIB_MAX_SIZES + 64];
    double t0 = MPI_Wtime();
    if (b->rank == 0) {
        int n = 0;
        for (int j = 0; j < k; j++)
            MPI_Isend(b->sbuf, s, MPI_BYTE, b->size == 2 ? 1 : 1 + j, TAG_PAIR, MPI_COMM_WORLD,
                      &req[n++]);
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        for (int j = 0; j < (b->size == 2 ? 1 : k); j++)
            MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, TAG_ACK, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    } else if (b->size == 2 || b->rank <= k) {
        int n = b->size == 2 ? k : 1;
        for (int j = 0; j < n; j++)
            MPI_Irecv(b->rbuf + (size_t)j * (size_t)s, s, MPI_BYTE, 0, TAG_PAIR, MPI_COMM_WORLD,
                      &req[j]);
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
    }
    return MPI_Wtime() - t0;
}

static double allreduce_once(bench *b, int s)
{
    double t0 = MPI_Wtime();
    MPI_Allreduce(b->sbuf, b->rbuf, s, MPI_UNSIGNED_CHAR, MPI_SUM, MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

/* Reduce-scatter then all-gather on a ring: 2(n-1) steps, each rank sends
 * ceil(S/n) bytes to rank + 1 and receives as much from rank - 1. */
static double ring_once(bench *b, int s)
{
    int n = b->size, chunk = (s + n - 1) / n;
    int to = (b->rank + 1) % n, from = (b->rank + n - 1) % n;
    double t0 = MPI_Wtime();
    for (int step = 0; step < 2 * (n - 1); step++)
        MPI_Sendrecv(b->sbuf, chunk, MPI_BYTE, to, TAG_RING, b->rbuf, chunk, MPI_BYTE, from,
                     TAG_RING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return MPI_Wtime() - t0;
}

/* One point: a warm-up, then reps timed runs, each after a barrier; the
 * slowest rank's time of each run; its median into *out on rank 0. */
static void point(bench *b, an_calib_pattern p, int s, int reps, int k, double *out)
{
    for (int r = -1; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = p == AN_CALIB_PINGPONG ? pingpong_once(b, s)
                   : p == AN_CALIB_PAIRS  ? pairs_once(b, s, k)
                   : p == AN_CALIB_ALLREDUCE ? allreduce_once(b, s)
                                             : ring_once(b, s);
        if (p == AN_CALIB_PINGPONG || p == AN_CALIB_PAIRS) {
            if (r >= 0)
                b->t[r] = t; /* rank 0's clock */
            continue;
        }
        double worst = 0;
        MPI_Reduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (r >= 0)
            b->t[r] = worst;
    }
    if (b->rank == 0)
        *out = median(b->t, reps);
}

int an_calib_measure(const an_calib_opts *o, an_calib_result *r, sim_err *err)
{
    double sizes[AN_CALIB_MAX_SIZES];
    int n_sizes = an_calib_sizes(o, sizes, err);
    if (n_sizes < 0)
        return n_sizes;
    if (!an_sweep_under_mpirun())
        return sim_err_set(err, SIM_EUSAGE,
                           "calibrate: start it under mpirun with 2 or more ranks, e.g. "
                           "mpirun -np 2 dtsim calibrate");
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return sim_err_set(err, SIM_EINTERNAL, "calibrate: MPI_Init failed");
    memset(r, 0, sizeof *r);
    bench b = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.size);
    r->rank = b.rank;
    r->ranks = b.size;
    r->n_sizes = n_sizes;
    int rc = 0;
    if (b.size < 2 || b.size > 64) {
        rc = sim_err_set(err, SIM_EUSAGE, "calibrate: needs 2 to 64 ranks, got %d", b.size);
        goto done;
    }
    r->pairs_k = b.size == 2 ? 2 : b.size - 1;
    size_t max = (size_t)o->max_size;
    b.sbuf = calloc(max, 1);
    b.rbuf = calloc(max * (b.size == 2 ? 2 : 1), 1);
    b.t = calloc((size_t)o->reps, sizeof *b.t);
    int ok = b.sbuf && b.rbuf && b.t, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        rc = sim_err_set(err, SIM_ENOMEM, "calibrate: out of memory for buffers of %.0f bytes",
                         o->max_size);
        goto done;
    }
    for (int p = 0; p < AN_CALIB_N_PATTERNS; p++)
        for (int i = 0; i < n_sizes; i++) {
            an_calib_point *q = &r->pt[p][i];
            q->bytes = sizes[i];
            point(&b, (an_calib_pattern)p, (int)sizes[i], o->reps, r->pairs_k, &q->measured);
            r->n_pt[p] = i + 1;
        }
done:
    free(b.sbuf);
    free(b.rbuf);
    free(b.t);
    MPI_Finalize();
    return rc;
}

#else

int an_calib_measure(const an_calib_opts *o, an_calib_result *r, sim_err *err)
{
    (void)o;
    (void)r;
    return sim_err_set(err, SIM_EUSAGE,
                       "calibrate: this dtsim was built without MPI (meson found no OpenMPI)");
}

#endif
