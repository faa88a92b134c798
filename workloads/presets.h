/* What-if presets: named model proxies (parameter count and training FLOPs
 * per sample of a well-known network, so that message sizes and compute
 * times are those of that network while the gradients come from the small
 * model) and named devices (peak FLOP/s). Plain constant tables; every
 * entry names where its numbers come from.
 *
 * FLOP convention, the same as wl_model.flops_per_sample: a multiply-add
 * is 2 FLOPs and training = 3 x forward (forward, input gradient, weight
 * gradient). The torchvision model cards list multiply-accumulates under
 * "GFLOPS" (ResNet-50: 4.09), which is half the FLOPs counted here. */
#ifndef DTSIM_WL_PRESETS_H
#define DTSIM_WL_PRESETS_H

#include <stdint.h>

typedef struct wl_proxy {
    const char *name;
    int64_t params;          /* parameters (message size = params x wire bytes) */
    double forward_flops;    /* FLOPs of one forward pass over one sample */
    double flops_per_sample; /* training FLOPs per sample = 3 x forward_flops */
    const char *sample;      /* what one sample is (the standard input) */
    const char *source;      /* where the numbers come from */
} wl_proxy;

typedef struct wl_device {
    const char *name;
    double peak_flops;       /* FLOP/s */
    const char *precision;   /* the arithmetic the peak is for */
    const char *source;
} wl_device;

extern const wl_proxy wl_proxy_table[];   /* terminated by name == NULL */
extern const wl_device wl_device_table[]; /* terminated by name == NULL */

/* The entry with that name, or NULL (also for NULL or "none"). */
const wl_proxy *wl_proxy_find(const char *name);
const wl_device *wl_device_find(const char *name);

/* One layer of a proxy's layer profile: the parameters whose gradient it
 * produces and its FLOPs per sample. */
typedef struct wl_proxy_layer {
    char name[32];           /* e.g. "layer4.2.conv3" (torchvision module names) */
    int64_t params;          /* parameters (with the layer's batch-norm scale and shift) */
    double forward_flops;    /* FLOPs of the forward pass over one sample */
    double backward_flops;   /* FLOPs of the backward pass (input + weight gradients) */
} wl_proxy_layer;

#define WL_PROXY_LAYERS_MAX 128 /* no proxy has more layers */

/* Writes p's layers in backward order (out[0] is the output layer, whose
 * gradient is computed first) to out[0 .. min(n, cap)) and returns n, the
 * proxy's layer count (out may be NULL when cap = 0). Each layer's share
 * comes from the architecture (proxy_layers.c); the shares are apportioned
 * so that the sums equal the proxy's totals exactly: params, forward_flops
 * and flops_per_sample - forward_flops (integers, held exactly). */
int wl_proxy_layers(const wl_proxy *p, wl_proxy_layer *out, int cap);

#endif
