/* Gradient buckets overlapping the backward pass, as PyTorch DDP builds
 * them (Li et al., VLDB 2020; docs/algorithms.md section 1.1): the layers
 * of the workload's profile, in backward order, are grouped into buckets of
 * at least `cap` bytes (a bucket is closed as soon as it reaches the cap,
 * so one layer larger than the cap is a bucket of its own; the last bucket
 * takes what is left). A bucket is ready when the backward pass has
 * computed its last layer's gradient.
 *
 * Times are fractions of one compute step (forward + backward), so the
 * compute model's draw for the step (distribution, stragglers, transient
 * slowdowns) is split in the proportions of the layer profile's FLOPs. */
#ifndef DTSIM_ALGO_BUCKET_H
#define DTSIM_ALGO_BUCKET_H

#include <stdint.h>

#include "sim/err.h"
#include "workloads/presets.h"

typedef struct algo_bucket {
    int first_layer;     /* in backward order */
    int n_layers;
    int64_t params;      /* profile parameters in the bucket */
    double bytes;        /* its share of the message: S x params / total params */
    double ready;        /* fraction of the step at which its last gradient exists */
} algo_bucket;

typedef struct algo_bucket_plan {
    algo_bucket *buckets; /* in the order their all-reduces are started */
    int n;
    double forward;       /* fraction of the step spent in the forward pass */
} algo_bucket_plan;

/* Plans buckets of at least cap bytes (cap > 0) over layers[0..n_layers)
 * (backward order) for a message of msg_bytes bytes. Caller storage;
 * release with algo_bucket_plan_release. SIM_EINPUT when the profile is
 * empty or has no parameters or FLOPs; SIM_ENOMEM. */
int algo_bucket_plan_init(algo_bucket_plan *plan, const wl_proxy_layer *layers,
                          int n_layers, double msg_bytes, double cap, sim_err *err);
void algo_bucket_plan_release(algo_bucket_plan *plan);

#endif
