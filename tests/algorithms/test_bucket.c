/* Gradient bucket plans (algorithms/drivers/bucket.c): DDP's grouping rule on a toy
 * two-layer profile with known answers, and on ResNet-50 at 25 MiB. */
#include <criterion/criterion.h>
#include <math.h>

#include "algorithms/drivers/bucket.h"
#include "workloads/presets.h"

/* backward order: the output layer (100 params, 10 + 20 FLOPs) first, the
 * input layer (300 params, 30 + 60 FLOPs) last; 4 bytes per parameter */
static const wl_proxy_layer toy[2] = {
    {"out", 100, 10, 20},
    {"in", 300, 30, 60},
};

Test(bucket, toy_profile)
{
    algo_bucket_plan pl;
    sim_err err = {0};
    /* a small cap: one bucket per layer; the first is ready after the
     * forward pass (40 of 120 FLOPs) and the first layer's backward (20) */
    cr_assert_eq(algo_bucket_plan_init(&pl, toy, 2, 1600, 100, &err), 0, "%s", err.msg);
    cr_assert_eq(pl.n, 2);
    cr_assert_float_eq(pl.forward, 1.0 / 3, 1e-15);
    cr_assert_eq(pl.buckets[0].params, 100);
    cr_assert_float_eq(pl.buckets[0].bytes, 400, 1e-9);
    cr_assert_float_eq(pl.buckets[0].ready, 0.5, 1e-15);
    cr_assert_eq(pl.buckets[1].first_layer, 1);
    cr_assert_float_eq(pl.buckets[1].bytes, 1200, 1e-9);
    cr_assert_eq(pl.buckets[1].ready, 1.0);
    algo_bucket_plan_release(&pl);
    /* a cap above the first layer: both in one bucket, ready at the end */
    for (int k = 0; k < 2; k++) {
        double cap = k ? 2000 : 500;
        cr_assert_eq(algo_bucket_plan_init(&pl, toy, 2, 1600, cap, &err), 0, "%s", err.msg);
        cr_assert_eq(pl.n, 1);
        cr_assert_eq(pl.buckets[0].n_layers, 2);
        cr_assert_eq(pl.buckets[0].bytes, 1600);
        cr_assert_eq(pl.buckets[0].ready, 1.0);
        algo_bucket_plan_release(&pl);
    }
    /* exactly the cap closes the bucket */
    cr_assert_eq(algo_bucket_plan_init(&pl, toy, 2, 1600, 400, &err), 0, "%s", err.msg);
    cr_assert_eq(pl.n, 2);
    algo_bucket_plan_release(&pl);
    algo_bucket_plan_release(NULL);
    cr_assert_eq(algo_bucket_plan_init(&pl, toy, 0, 1600, 400, &err), SIM_EINPUT);
    cr_assert_eq(algo_bucket_plan_init(&pl, toy, 2, 1600, 0, &err), SIM_EINPUT);
    cr_assert_null(pl.buckets);
}

Test(bucket, resnet50_at_25mib)
{
    wl_proxy_layer l[WL_PROXY_LAYERS_MAX];
    const wl_proxy *p = wl_proxy_find("resnet50");
    int n = wl_proxy_layers(p, l, WL_PROXY_LAYERS_MAX);
    const double S = 4.0 * (double)p->params, cap = 25.0 * 1024 * 1024;
    algo_bucket_plan pl;
    sim_err err = {0};
    cr_assert_eq(algo_bucket_plan_init(&pl, l, n, S, cap, &err), 0, "%s", err.msg);
    /* 102.2 MB of gradients in buckets of at least 26.2 MB: 3 full ones and
     * the rest */
    cr_assert_eq(pl.n, 4);
    double sum = 0, prev_ready = pl.forward;
    int layers = 0;
    for (int b = 0; b < pl.n; b++) {
        const algo_bucket *k = &pl.buckets[b];
        cr_assert_eq(k->first_layer, layers);
        layers += k->n_layers;
        sum += k->bytes;
        cr_assert_gt(k->ready, prev_ready);
        prev_ready = k->ready;
        if (b < pl.n - 1) {
            /* closed on reaching the cap, not before */
            cr_assert_geq(k->bytes, cap * (1 - 1e-12));
            double last = 4.0 * (double)l[k->first_layer + k->n_layers - 1].params;
            cr_assert_lt(k->bytes - last, cap);
        }
    }
    cr_assert_eq(layers, n);
    cr_assert_float_eq(sum, S, 1e-6 * S);
    cr_assert_eq(pl.buckets[pl.n - 1].ready, 1.0);
    algo_bucket_plan_release(&pl);
}
