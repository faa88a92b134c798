/* Models with real gradients. Parameters are one flat float32 vector per
 * worker with per-layer offsets. Every kernel works on row-major batches
 * through CBLAS and uses a caller-supplied workspace sized for a maximum
 * batch, allocated once per worker: nothing is allocated per step.
 *
 * Definitions (INTERFACE.md):
 *  linreg   prediction w.a + b; loss 0.5 (pred - y)^2 averaged; params w then b.
 *  softmax  multinomial logistic regression: logits = W a + b with W
 *           classes x dim (row-major) followed by b; cross-entropy averaged. */
#ifndef DTSIM_WL_MODEL_H
#define DTSIM_WL_MODEL_H

#include <gsl/gsl_rng.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/err.h"
#include "workloads/dataset.h"

typedef struct wl_model wl_model;

typedef struct wl_layer {
    char name[32];
    int64_t offset;  /* first parameter of the layer */
    int64_t size;    /* parameters in the layer */
} wl_layer;

typedef struct wl_eval {
    double loss;      /* mean loss */
    double accuracy;  /* classification: fraction correct; regression: NAN */
} wl_eval;

typedef struct wl_model_vt {
    const char *name;
    const char *args;     /* e.g. "" or "(h1, h2, ...)" */
    const char *summary;
    /* Builds the model for a dataset shape; args parsed from the spec. */
    int (*create)(wl_model *m, const char *const *args, int nargs, sim_err *err);
    void (*destroy)(wl_model *m);
    /* Workspace floats needed for batches up to max_batch. */
    size_t (*workspace_floats)(const wl_model *m, int64_t max_batch);
    /* Initial parameters (drawn from rng). */
    void (*init)(const wl_model *m, float *params, gsl_rng *rng);
    /* Mean loss over the batch; writes the mean gradient (d floats). */
    double (*loss_grad)(const wl_model *m, const float *params, const float *x,
                        const float *y, int64_t b, float *grad, float *ws);
    /* Loss and accuracy over n samples (processed in chunks of the
     * workspace's batch). */
    wl_eval (*evaluate)(const wl_model *m, const float *params, const float *x,
                        const float *y, int64_t n, float *ws, int64_t ws_batch);
} wl_model_vt;

struct wl_model {
    const wl_model_vt *vt;
    int dim;              /* input features */
    int classes;          /* outputs (1 for linreg / logreg) */
    int64_t n_params;     /* d */
    double flops_per_sample; /* training FLOPs per sample (fwd + bwd ~ 3x fwd) */
    int n_layers;
    wl_layer layers[16];
    void *priv;           /* model-specific data */
};

extern const wl_model_vt *const wl_model_registry[]; /* NULL-terminated */

/* spec "softmax", "mlp(256, 128)"; checks the model fits the dataset (e.g.
 * softmax needs classes >= 2, linreg a regression target). */
wl_model *wl_model_create(const char *spec, const wl_dataset *ds, sim_err *err);
void wl_model_destroy(wl_model *m);
const wl_model_vt *wl_model_find(const char *name);

static inline size_t wl_model_workspace_floats(const wl_model *m, int64_t max_batch)
{
    return m->vt->workspace_floats(m, max_batch);
}

#endif
