/* Models with real gradients. Parameters are one flat float32 vector per
 * worker with per-layer offsets. Every kernel works on row-major batches
 * through CBLAS and uses a caller-supplied workspace sized for a maximum
 * batch, allocated once per worker: nothing is allocated per step.
 *
 * Definitions (docs/models-and-data.md; every weight matrix is out x in, row-major,
 * followed by its bias; a layer = its weights then its bias):
 *  linreg   prediction w.a + b; loss 0.5 (pred - y)^2 averaged; params w then b.
 *  logreg   binary labels 0/1; p = sigmoid(w.a + b); logistic loss averaged;
 *           w then b; predicts 1 when p >= 0.5.
 *  softmax  multinomial logistic regression: logits = W a + b with W
 *           classes x dim (row-major) followed by b; cross-entropy averaged.
 *  mlp(h1, ...) dense layers with ReLU, then a dense layer to the classes;
 *           softmax cross-entropy; He initialisation.
 *  cnn(c1, c2) LeNet-style for images (dataset channels x height x width,
 *           planar): conv5x5(c1)+ReLU+maxpool2, conv5x5(c2)+ReLU+maxpool2,
 *           dense to the classes; defaults c1 = 16, c2 = 32.
 *  charlm(k, emb, hidden) character model on a text(FILE, k) dataset:
 *           embeddings of the k previous characters, tanh hidden layer,
 *           softmax over the vocabulary; loss in nats (perplexity =
 *           exp(loss)), accuracy = next-character accuracy.
 * flops_per_sample counts a multiply-add as 2 FLOPs and is 3x the forward
 * pass (forward + input gradient + weight gradient). */
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

/* Per-sample gradient statistics over a batch of b samples with per-sample
 * gradients a_s and mean gbar (docs/algorithms.md section 2; b >= 2). */
typedef struct wl_batch_stats {
    int64_t b;        /* samples */
    double loss;      /* mean loss over the batch */
    double gnorm2;    /* ||gbar||^2 */
    double v_norm;    /* norm test: sum over coordinates of Var_s(a_s), unbiased */
    double v_ip;      /* inner-product test: Var_s(a_s . gbar), unbiased */
    double v_orth;    /* orthogonality test: sum over coordinates of Var_s(o_s),
                         o_s = a_s - (a_s.gbar / ||gbar||^2) gbar; = v_norm if gbar = 0 */
} wl_batch_stats;

/* One gradient of a batched request (wl_model_vt.loss_grad_many). */
typedef struct wl_grad_req {
    int worker;           /* whose per-worker state (e.g. BatchNorm statistics); -1 none */
    const float *params;  /* d floats */
    const float *x, *y;   /* b x dim samples, b labels */
    int64_t b;
    float *grad;          /* d floats, written */
    double loss;          /* written: the mean loss over the batch */
} wl_grad_req;

/* What a model file may need beyond the dataset (wl_model_create_opts). */
typedef struct wl_model_opts {
    const char *dir;           /* folder the spec's file names resolve against (the
                                  experiment file's); NULL = the current one */
    const char *torch_batched; /* torch(FILE): "auto", "on" or "off"; NULL = auto */
    const char *torch_device;  /* torch(FILE): "cpu" or "cuda"; NULL = cpu */
    uint64_t seed;             /* the experiment's seed (a helper's own RNG) */
} wl_model_opts;

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
    /* Optional (NULL = generic per-sample loop): the statistics above, with
     * gbar left in ws[0..d-1]. ws has wl_model_stats_workspace_floats(m, b)
     * floats. Returns 0. */
    int (*batch_stats)(const wl_model *m, const float *params, const float *x,
                       const float *y, int64_t b, wl_batch_stats *out, float *ws);
    /* Optional sparse kernels (NULL: the model trains on dense rows only;
     * a sparse data set is then densified). The samples are rows rows[0..b)
     * of X (rows NULL: rows 0..b-1), y[i] the label of the i-th; the same
     * results as loss_grad / evaluate on the dense rows up to float
     * rounding, through loops over the stored values only (the gradient is
     * still d floats, zeroed first). Same workspace as the dense kernels. */
    double (*loss_grad_sparse)(const wl_model *m, const float *params, const wl_csr *X,
                               const int64_t *rows, const float *y, int64_t b, float *grad,
                               float *ws);
    wl_eval (*evaluate_sparse)(const wl_model *m, const float *params, const wl_csr *X,
                               const int64_t *rows, const float *y, int64_t n, float *ws,
                               int64_t ws_batch);
    /* Optional (NULL: loss_grad per gradient): the gradients of n requests
     * (n >= 1, distinct workers) in one call, for models behind another
     * process (torch). 0, or a negative code with err when the model
     * failed (the run then fails). */
    int (*loss_grad_many)(const wl_model *m, wl_grad_req *reqs, int n, sim_err *err);
    /* Optional (NULL: never fails): the first failure of a model whose
     * kernels cannot return one (loss_grad, evaluate and init then gave
     * NAN or zeros): 0, or its code with err filled. */
    int (*failed)(const wl_model *m, sim_err *err);
    /* Optional (NULL: nothing to say): how the model's own kernels chose
     * to compute, for the run's record beside the BLAS kernel (runs.blas),
     * e.g. cnn's "sparse replay on" or "sparse replay off (why)", a torch
     * model's "torch on cpu, batched across workers (vmap)". */
    void (*kernels)(const wl_model *m, char *buf, size_t len);
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
/* The same with options (NULL = wl_model_create's defaults). */
wl_model *wl_model_create_opts(const char *spec, const wl_dataset *ds, const wl_model_opts *o,
                               sim_err *err);
void wl_model_destroy(wl_model *m);
const wl_model_vt *wl_model_find(const char *name);

/* The model's failure (vt->failed), or 0. */
static inline int wl_model_failed(const wl_model *m, sim_err *err)
{
    return m->vt->failed ? m->vt->failed(m, err) : 0;
}

/* 1 when the model has sparse kernels (trains on CSR rows directly). */
static inline int wl_model_sparse(const wl_model *m)
{
    return m->vt->loss_grad_sparse != NULL && m->vt->evaluate_sparse != NULL;
}

/* What vt->kernels writes, or "" (buf has len >= 1 bytes). */
static inline void wl_model_kernels(const wl_model *m, char *buf, size_t len)
{
    buf[0] = '\0';
    if (m->vt->kernels)
        m->vt->kernels(m, buf, len);
}

static inline size_t wl_model_workspace_floats(const wl_model *m, int64_t max_batch)
{
    return m->vt->workspace_floats(m, max_batch);
}

/* Floats of workspace for wl_model_batch_stats with batches up to max_batch:
 * the gradient workspace plus 2 d + 4 max_batch + 2. */
size_t wl_model_stats_workspace_floats(const wl_model *m, int64_t max_batch);

/* Per-sample gradient statistics of a batch (x: b x dim, y: b) at params,
 * through the model's own batch_stats or, without one, b single-sample
 * loss_grad calls (O(d) memory). ws: wl_model_stats_workspace_floats(m, b)
 * floats from malloc (aligned for double); on return ws[0..d-1] holds the
 * mean gradient gbar. Returns 0, or SIM_ECONFIG when b < 2 (the variances
 * are then 0; loss, gnorm2 and gbar are still filled in). Allocates nothing. */
int wl_model_batch_stats(const wl_model *m, const float *params, const float *x,
                         const float *y, int64_t b, wl_batch_stats *out, float *ws);

#endif
