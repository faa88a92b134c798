/* Partitioning a training set across workers and drawing batches.
 * iid: shuffle (partition stream), split evenly; contiguous: worker i gets
 * the i-th contiguous block of the file order; dirichlet(alpha) and
 * shards(k) skew the labels (the kinds are in partition_kinds.c). Each
 * worker samples its batches from its own stream: it walks a private
 * permutation of its shard and reshuffles the shard every local epoch;
 * batch = full shard when batch <= 0. Batches are gathered into caller-owned contiguous buffers so
 * models run one sgemm per layer. */
#ifndef DTSIM_WL_PARTITION_H
#define DTSIM_WL_PARTITION_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

#include "sim/err.h"
#include "workloads/dataset.h"

typedef struct wl_partition {
    int n_workers;
    int64_t *offset;  /* n_workers + 1 offsets into index */
    int64_t *index;   /* permutation of 0..train.n-1 grouped by worker */
    int draws;        /* dirichlet(alpha, min): draws taken (1 for every other kind) */
} wl_partition;

struct sim_spec; /* sim/units.h: a spec split into name and arguments */
typedef struct wl_partition_vt wl_partition_vt;

/* What a partition kind builds from; filled by wl_partition_create. */
typedef struct wl_partition_req {
    const wl_partition_vt *vt;   /* the kind */
    const char *spec;            /* the whole spec, for messages */
    const struct sim_spec *sp;   /* the spec parsed: name and arguments */
    const wl_dataset *ds;        /* borrowed: partitioned on its training split */
    int n_workers;
    gsl_rng *rng;                /* the partition stream (NULL allowed if !needs_rng) */
} wl_partition_req;

/* A partition kind: one const vtable, one line in partitions.def (from
 * which wl_partition_registry is generated). */
struct wl_partition_vt {
    const char *name;     /* spec name, e.g. "dirichlet" */
    const char *args;     /* e.g. "" or "(alpha)" */
    const char *summary;
    int needs_rng;        /* 1: build draws from rq->rng, which must be set */
    /* Checks rq->sp's arguments against rq->ds (SIM_ECONFIG naming
     * rq->spec), gets the partition from wl_partition_start (the checks
     * common to every kind, then allocation) and fills index and offset. */
    wl_partition *(*build)(const wl_partition_req *rq, sim_err *err);
};

extern const wl_partition_vt *const wl_partition_registry[]; /* NULL-terminated */

/* The registered kind called name, or NULL. */
const wl_partition_vt *wl_partition_find(const char *name);

/* spec: "iid" | "contiguous" | "dirichlet(alpha[, min])" | "shards(k)". Every worker
 * gets at least one sample or SIM_ECONFIG. */
wl_partition *wl_partition_create(const wl_dataset *ds, int n_workers, const char *spec,
                                  gsl_rng *rng, sim_err *err);
void wl_partition_destroy(wl_partition *p);
static inline int64_t wl_partition_size(const wl_partition *p, int w)
{
    return p->offset[w + 1] - p->offset[w];
}

/* Label histogram of worker's shard: counts_out[c] = its samples of class
 * c, for c = 0..ds->classes-1 (labels outside that range are not counted).
 * Returns 0, or SIM_ECONFIG for a regression dataset or a bad worker. */
int wl_partition_label_histogram(const wl_partition *p, const wl_dataset *ds, int worker,
                                 int64_t *counts_out);

/* A worker's batch sampler: owns its permutation of the shard. */
typedef struct wl_sampler {
    const wl_dataset *ds;
    const int64_t *shard;  /* borrowed: the worker's indices */
    int64_t shard_n;
    int64_t *perm;         /* shard_n positions */
    int64_t pos;           /* next position in perm */
    int64_t epochs;        /* completed local passes */
    gsl_rng *rng;          /* borrowed: the worker's sampling stream */
} wl_sampler;

int wl_sampler_init(wl_sampler *s, const wl_dataset *ds, const wl_partition *p, int worker,
                    gsl_rng *rng, sim_err *err);
void wl_sampler_release(wl_sampler *s);
/* Copies the next b samples (b <= 0: the whole shard) into x (b x dim) and
 * y (b), reshuffling at the end of each pass. Returns the number copied. */
int64_t wl_sampler_next(wl_sampler *s, int64_t b, float *x, float *y);
/* The same draw for a sparse data set: the training-row indices of the b
 * samples into rows, their labels into y (nothing is copied). */
int64_t wl_sampler_next_rows(wl_sampler *s, int64_t b, int64_t *rows, float *y);

#endif
