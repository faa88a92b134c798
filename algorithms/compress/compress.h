/* Compressors as plug-ins (docs/algorithms.md section 1.7): a const
 * algo_compress_vt per compressor in the NULL-terminated
 * algo_compress_registry, an instance (algo_compressor) built from a spec
 * such as "topk(0.01)", messages held in caller-owned buffers sized once,
 * and a per-worker object (algo_compress_worker) that keeps the error
 * feedback residual:
 *
 *     p = u + e          (e = 0 without error feedback)
 *     Delta = C(p)       (the message)
 *     e <- p - Delta     (only with error feedback)
 *
 * Sizes: encoding works on the d parameters the model really has; the wire
 * size of a message is computed for d_wire (sim_params or a proxy preset,
 * else d) at the same compression rule, so message sizes stand for the
 * larger network while the gradients stay real.
 *
 * Aggregation: ALLREDUCE when every worker's message has the same shape
 * and support, so messages can be summed on the way (dense values);
 * ALLGATHER when supports differ (top-k): every worker receives every
 * message and decodes them itself. Nothing on the encode/decode path
 * allocates. */
#ifndef DTSIM_ALGO_COMPRESS_H
#define DTSIM_ALGO_COMPRESS_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

#include "config/config.h"
#include "sim/err.h"

typedef enum algo_compress_agg {
    ALGO_COMPRESS_ALLREDUCE = 0, /* same support: sum the messages (all-reduce) */
    ALGO_COMPRESS_ALLGATHER      /* supports differ: gather every message */
} algo_compress_agg;

/* One encoded message, its buffers (capacity algo_compress_entries) owned
 * by the worker state that holds it; encode fills them, never reallocates. */
typedef struct algo_compress_msg {
    int64_t d;         /* length of the dense vector it encodes */
    int64_t nnz;       /* entries used in values (and indices) */
    int64_t cap;       /* capacity of values and indices */
    float *values;     /* nnz values */
    int32_t *indices;  /* nnz coordinates, increasing; NULL for dense messages */
    double bytes;      /* size on the wire, bytes (for d_wire parameters) */
} algo_compress_msg;

typedef struct algo_compressor algo_compressor;

typedef struct algo_compress_vt {
    const char *name;
    const char *args;      /* "" or "(ratio)" */
    const char *summary;
    const char *size_rule; /* message size, for `dtsim list compressors` */
    algo_compress_agg agg;
    int identity;          /* 1: C(v) = v, messages are the dense vector */
    int random;            /* 1: encode draws from the worker's compressor stream */
    /* A NULL slot below means the default named with it. */
    /* Reads and checks the spec's arguments into c->param (NULL: takes none). */
    int (*parse)(algo_compressor *c, const char *const *args, int nargs, sim_err *err);
    /* Entries (values, and indices when sparse) of a message for d
     * parameters (NULL: d, a dense message). */
    int64_t (*entries)(const algo_compressor *c, int64_t d);
    /* Exact wire size in bytes of a message for d parameters; value_bytes is
     * the dense value size of [workload] wire_dtype (4 fp32, 2 fp16/bf16). */
    double (*wire_bytes)(const algo_compressor *c, int64_t d, int value_bytes);
    /* msg = C(v) for v of d floats, msg initialised for d parameters; rng:
     * the worker's compressor stream (NULL unless vt->random). */
    void (*encode)(const algo_compressor *c, const float *v, int64_t d, gsl_rng *rng,
                   algo_compress_msg *msg);
    /* out += scale * decode(msg) (out has msg->d floats; NULL: the values
     * are dense, out[j] += scale * values[j] for j < nnz). */
    void (*decode_add)(const algo_compressor *c, const algo_compress_msg *msg, float scale,
                       float *out);
    int shared_random;     /* 1: every worker draws from the same stream (randomk) */
} algo_compress_vt;

#define ALGO_COMPRESS_MAX_PARAMS 4
/* An instance: the vtable and its parsed arguments. */
struct algo_compressor {
    const algo_compress_vt *vt;
    char spec[128];                         /* canonical spec, e.g. "topk(0.01)" */
    double param[ALGO_COMPRESS_MAX_PARAMS]; /* parsed by vt->parse */
    int error_feedback;                     /* [algorithm] error_feedback (1 from create) */
};

extern const algo_compress_vt *const algo_compress_registry[]; /* NULL-terminated */
const algo_compress_vt *algo_compress_find(const char *name);

/* Parses spec ("none", "topk(0.01)") into *out: 0, or SIM_ECONFIG naming
 * the compressor for an unknown name (listing the known ones) or bad
 * arguments (*out untouched). */
int algo_compress_create(const char *spec, algo_compressor **out, sim_err *err);
void algo_compress_destroy(algo_compressor *c);
/* The same from [algorithm] compressor, errors as "file:line: [algorithm]
 * compressor: ...". */
int algo_compress_from_config(const cfg_config *cfg, algo_compressor **out, sim_err *err);

/* Entries of a message for d parameters (vt->entries or its default). */
int64_t algo_compress_entries(const algo_compressor *c, int64_t d);
/* The pieces the sparsifiers share (topk, randomk): one argument, the kept
 * fraction r in (0, 1], into c->param[0]; k = min(d, max(1, round(r d)))
 * with round-half-away (llround), 0 for d <= 0; and the sparse decode
 * out[indices[i]] += scale * values[i]. */
int algo_compress_parse_ratio(algo_compressor *c, const char *const *args, int nargs,
                              sim_err *err);
int64_t algo_compress_ratio_entries(const algo_compressor *c, int64_t d);
void algo_compress_add_sparse(const algo_compressor *c, const algo_compress_msg *msg,
                              float scale, float *out);

/* out += scale * decode(msg). */
void algo_compress_decode_add(const algo_compressor *c, const algo_compress_msg *msg,
                              float scale, float *out);

/* One worker's compression state: residual (error feedback), its message
 * and its compressor stream. */
typedef struct algo_compress_worker {
    const algo_compressor *comp; /* borrowed */
    int64_t d;                   /* parameters encoded */
    int64_t d_wire;              /* parameters the wire size stands for */
    int value_bytes;             /* dense value size on the wire */
    int error_feedback;
    float *residual;             /* e, d floats (NULL without error feedback) */
    algo_compress_msg msg;       /* the last message encoded */
    gsl_rng *rng;                /* SIM_STREAM_COMPRESSOR stream (vt->random only) */
} algo_compress_worker;

/* *out = the states of n workers: residuals (zero) and message buffers,
 * allocated once; seed and worker i pick worker i's compressor stream. 0,
 * SIM_ENOMEM, or SIM_EINPUT when a sparse message's indices cannot hold d
 * (int32); nothing to release then. */
int algo_compress_workers_create(const algo_compressor *c, int n, int64_t d, int64_t d_wire,
                                 int value_bytes, int error_feedback, uint64_t seed,
                                 algo_compress_worker **out, sim_err *err);
/* Releases n workers and frees the array (NULL: nothing). */
void algo_compress_workers_destroy(algo_compress_worker *w, int n);
/* Zeroes w's residual (a fresh error feedback); no-op without one. */
void algo_compress_worker_reset(algo_compress_worker *w);
/* Encodes input (d floats) into w->msg with error feedback (see the top of
 * this file); w->msg.bytes is its wire size. Returns &w->msg. */
const algo_compress_msg *algo_compress_worker_encode(algo_compress_worker *w,
                                                     const float *input);

#endif
