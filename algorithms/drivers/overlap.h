/* Bucketed all-reduce overlapping the backward pass, as PyTorch DDP runs it
 * (docs/algorithms.md section 1.1): a worker's compute step is split into
 * the forward pass and the backward pass layer by layer in the proportions
 * of the workload's layer profile (the proxy's, else the model's layers
 * with FLOPs in proportion to their parameters); the gradients are grouped
 * into buckets (algorithms/bucket.h); a bucket's all-reduce is entered as
 * soon as its last gradient is computed AND the worker's all-reduce of the
 * previous bucket is done (one stream of collectives per worker, as NCCL
 * queues them). The worker's step is over when its last bucket is reduced.
 *
 * With compute time T, ready fractions r_b and all-reduce times A_b, a
 * worker alone on its links finishes at f_B with f_0 = 0 and
 * f_b = max(r_b T, f_{b-1}) + A_b (tested). */
#ifndef DTSIM_ALGO_OVERLAP_H
#define DTSIM_ALGO_OVERLAP_H

#include "algorithms/core/algo.h"
#include "algorithms/drivers/bucket.h"

typedef struct algo_overlap algo_overlap;

typedef struct algo_overlap_desc {
    double cap;           /* bytes per bucket at least (> 0), over env->msg_bytes */
    sim_coll_kind kind;   /* one collective of this kind per bucket */
    const int *members;   /* the workers taking part, ascending (rank r =
                             members[r]); NULL: all env->n */
    int n_members;
    sim_coll_done done;   /* done(eng, ctx, w): worker w's last bucket is reduced */
    /* Optional: at the end of w's compute step, before its buckets are all
     * ready; returning 0 stops w's step there (algo_overlap_stop). */
    int (*computed)(void *ctx, int w);
    void *ctx;
    int alltoall;         /* 1: each bucket is an all-to-all of the members
                             (kind ignored; at least 2 members) */
} algo_overlap_desc;

/* Into *out; 0 or the code (err). */
int algo_overlap_create(algo_env *env, const algo_overlap_desc *d, algo_overlap **out,
                        sim_err *err);
void algo_overlap_destroy(algo_overlap *ov);
/* Starts worker w's compute step of `samples` samples (its gradient must be
 * computed already) whose message has `bytes` bytes (env->msg_bytes, or a
 * compressed size: each bucket carries its share of it). The worker is
 * idle (algo_env_idle_begin) from the end of its backward pass. Returns 0
 * or the code of algo_env_fail. */
int algo_overlap_step(algo_overlap *ov, int w, int samples, double bytes);
/* Enters worker w's buckets of a `bytes`-byte message now, all ready (no
 * compute step: a background all-reduce of parameters), one after another
 * on its stream; done(w) when the last is reduced. */
void algo_overlap_enter(algo_overlap *ov, int w, double bytes);
/* Abandons worker w's current step: its pending bucket events and the
 * completions of the buckets it entered are ignored from now on (the bytes
 * already sent stay sent). The next algo_overlap_step starts afresh. */
void algo_overlap_stop(algo_overlap *ov, int w);
/* 1 while one of its events or its collectives' messages has not yet
 * arrived (destroying it is unsafe only then); 0 for NULL. */
int algo_overlap_busy(const algo_overlap *ov);

#endif
