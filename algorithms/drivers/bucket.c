/* Gradient bucket plans (see bucket.h). Bytes per bucket telescope: bucket
 * b carries S x (P_b / P) - S x (P_{b-1} / P) with P_b the parameters up to
 * its end, so the buckets add up to S exactly. Ready fractions are
 * cumulative FLOPs over the step's FLOPs, summed in backward order. */
#include "algorithms/drivers/bucket.h"

#include <stdlib.h>

int algo_bucket_plan_init(algo_bucket_plan *plan, const wl_proxy_layer *layers,
                          int n_layers, double msg_bytes, double cap, sim_err *err)
{
    plan->buckets = NULL;
    plan->n = 0;
    plan->forward = 0;
    int64_t total = 0;
    double fwd = 0, bwd = 0;
    for (int i = 0; i < n_layers; i++) {
        total += layers[i].params;
        fwd += layers[i].forward_flops;
        bwd += layers[i].backward_flops;
    }
    if (n_layers < 1 || total <= 0 || !(fwd + bwd > 0))
        return sim_err_set(err, SIM_EINPUT,
                           "bucket: the layer profile has no parameters or no FLOPs");
    if (!(cap > 0))
        return sim_err_set(err, SIM_EINPUT, "bucket: the bucket size must be > 0 bytes");
    plan->buckets = malloc((size_t)n_layers * sizeof *plan->buckets);
    if (!plan->buckets)
        return sim_err_set(err, SIM_ENOMEM, "bucket: out of memory");
    const double step = fwd + bwd;
    const double per_param = msg_bytes / (double)total;
    plan->forward = fwd / step;
    double done_flops = fwd, prev_bytes = 0;
    int64_t cum = 0, in_bucket = 0;
    int first = 0;
    for (int i = 0; i < n_layers; i++) {
        cum += layers[i].params;
        in_bucket += layers[i].params;
        done_flops += layers[i].backward_flops;
        if ((double)in_bucket * per_param < cap && i < n_layers - 1)
            continue;
        algo_bucket *b = &plan->buckets[plan->n++];
        double upto = cum == total ? msg_bytes : msg_bytes * ((double)cum / (double)total);
        b->first_layer = first;
        b->n_layers = i - first + 1;
        b->params = in_bucket;
        b->bytes = upto - prev_bytes;
        b->ready = i == n_layers - 1 ? 1.0 : done_flops / step;
        prev_bytes = upto;
        in_bucket = 0;
        first = i + 1;
    }
    return 0;
}

void algo_bucket_plan_release(algo_bucket_plan *plan)
{
    if (!plan)
        return;
    free(plan->buckets);
    plan->buckets = NULL;
    plan->n = 0;
}
