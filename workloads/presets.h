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

/* The arithmetic a device computes in ([workers] precision). */
typedef enum wl_precision {
    WL_FP32 = 0,
    WL_TF32 = 1,
    WL_FP16 = 2,
    WL_BF16 = 3,
    WL_PRECISIONS = 4
} wl_precision;

typedef struct wl_device {
    const char *name;
    double peak_flops;       /* FLOP/s in fp32 (= peak[WL_FP32]) */
    const char *precision;   /* the arithmetic peak_flops is for: "fp32" */
    const char *source;      /* the datasheet figure of every peak */
    double peak[WL_PRECISIONS]; /* FLOP/s per precision (dense, tensor cores where the
                                 * device has them); 0 = the device has no such unit */
} wl_device;

/* A published single-device training throughput: the samples per second
 * that one device of that kind reached on that proxy at that precision,
 * from which the compute efficiency follows (wl_device_efficiency). */
typedef struct wl_throughput {
    const char *device, *proxy;
    wl_precision precision;
    double samples_per_s;    /* samples (images) per second on one device */
    int batch;               /* per-device batch of the measurement */
    int confirmed;           /* 1: read in the source; 0: derived, see source */
    const char *source;
} wl_throughput;

extern const wl_proxy wl_proxy_table[];   /* terminated by name == NULL */
extern const wl_device wl_device_table[]; /* terminated by name == NULL */
extern const wl_throughput wl_throughput_table[]; /* terminated by device == NULL */

/* The entry with that name, or NULL (also for NULL or "none"). */
const wl_proxy *wl_proxy_find(const char *name);
const wl_device *wl_device_find(const char *name);

/* The precision named "fp32", "tf32", "fp16" or "bf16" (any case), or -1;
 * its name (NULL out of range). */
int wl_precision_find(const char *name);
const char *wl_precision_name(int precision);
/* d's peak FLOP/s in that precision; 0 when d has none (or d is NULL). */
double wl_device_peak(const wl_device *d, int precision);
/* The published throughput of proxy on device at precision, or NULL. */
const wl_throughput *wl_throughput_find(const char *device, const char *proxy, int precision);
/* Compute efficiency from a published throughput: samples/s x training
 * FLOPs per sample / peak at that precision (may exceed 1: cuDNN's Winograd
 * and FFT convolutions do fewer FLOPs than the direct count); 0 when there
 * is no entry or no peak. */
double wl_device_efficiency(const char *device, const wl_proxy *proxy, int precision);

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
