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

#endif
