/* The PyTorch helper process of a torch(FILE) model (python/torch_helper.py
 * holds the protocol): started with the model, stopped with it. One
 * command at a time over a socket, the numbers in shared memory (K slots of
 * parameters, gradients and B samples each, grown on demand). Every
 * failure (no interpreter, a Python exception, the helper killed) becomes
 * a sim_err naming the module's file and carrying the last lines of
 * Python's error; no call waits on a helper that has died. Private to the
 * workloads layer (torch.c). */
#ifndef DTSIM_WL_TORCH_HELPER_H
#define DTSIM_WL_TORCH_HELPER_H

#include <stddef.h>
#include <stdint.h>

#include "sim/err.h"

typedef struct wl_torch_helper wl_torch_helper;

typedef struct wl_torch_start {
    const char *file;        /* the module's file, resolved */
    int channels, height, width; /* image geometry, or 0 */
    int dim, classes, context;   /* features per sample, classes, text context (0: none) */
    const char *device;      /* "cpu" or "cuda" */
    const char *batched;     /* "auto", "on" or "off" */
    uint64_t seed;           /* torch's seed in the helper */
} wl_torch_start;

typedef struct wl_torch_layer {
    char name[32];
    int64_t size;
} wl_torch_layer;

typedef struct wl_torch_hello {
    int64_t d;               /* parameters */
    double flops;            /* training FLOPs per sample (6 x multiply-adds) */
    int batched;             /* 1: the helper batches workers with vmap */
    int n_layers;
    wl_torch_layer layers[16];
} wl_torch_hello;

/* The shared areas of slot i (valid until the next wl_torch_helper_reserve). */
typedef struct wl_torch_slots {
    float *params, *grads;   /* K x d */
    float *x, *y;            /* K x B x dim, K x B */
    double *loss;            /* K */
    int k;                   /* slots */
    int64_t b;               /* samples per slot */
} wl_torch_slots;

/* Starts the helper and reads its greeting (the module is built and
 * probed by then). NULL with err on any failure. */
wl_torch_helper *wl_torch_helper_start(const wl_torch_start *s, wl_torch_hello *hello,
                                       sim_err *err);
/* Asks the helper to quit, waits for it; stop(NULL) is a no-op. */
void wl_torch_helper_stop(wl_torch_helper *h);
/* At least k slots of b samples (grown, never shrunk); the areas in *out. */
int wl_torch_helper_reserve(wl_torch_helper *h, int k, int64_t b, wl_torch_slots *out,
                            sim_err *err);
/* Sends one command line (no newline) and reads the reply "ok ..." into
 * reply (the part after "ok", len bytes). */
int wl_torch_helper_call(wl_torch_helper *h, const char *cmd, char *reply, size_t len,
                         sim_err *err);
/* FILE's dataset() run by the helper (--dataset): its output, the line
 * "dtsim-data N_TRAIN N_TEST DIM CLASSES C H W" and then x_train, y_train,
 * x_test, y_test as float32, into *data (malloc'd, *len bytes, NUL after
 * them). A failure names FILE with Python's last error lines. */
int wl_torch_helper_dataset(const char *file, char **data, size_t *len, sim_err *err);
/* The interpreter and the helper's file that would be used (for messages). */
const char *wl_torch_python(void);

#endif
