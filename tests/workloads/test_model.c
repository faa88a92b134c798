/* models: linreg and softmax against a float64 reference written here
 * (finite-difference gradients, losses), hand-computed evaluations, and the
 * registry's error paths; logreg, mlp, cnn and charlm against float64
 * references; per-sample gradient statistics against brute force; a
 * LIBSVM least-squares fit against GSL's normal equations (workloads/model.c
 * and the model files it registers; the presets are in test_presets.c). */
#include <criterion/criterion.h>
#include <gnu/libc-version.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_linalg.h>

#include "tests/common.h"
#include "workloads/dense_impl.h"
#include "workloads/model.h"
#include "workloads/presets.h"
#include "workloads/vmath_impl.h"

/* A dataset shell: the model only looks at dim, classes and name. */
static wl_dataset shape(int dim, int classes, const char *name)
{
    wl_dataset ds;
    memset(&ds, 0, sizeof ds);
    ds.dim = dim;
    ds.classes = classes;
    strcpy(ds.name, name);
    return ds;
}

static gsl_rng *rng_new(unsigned long seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    return r;
}

/* float64 reference losses (same definitions as docs/models-and-data.md). */
static double ref_linreg(const double *p, const float *x, const float *y, int b, int d)
{
    double l = 0;
    for (int i = 0; i < b; i++) {
        double t = p[d];
        for (int j = 0; j < d; j++)
            t += p[j] * x[i * d + j];
        t -= y[i];
        l += 0.5 * t * t;
    }
    return l / b;
}

static double ref_softmax(const double *p, const float *x, const float *y, int b, int d,
                          int c)
{
    double l = 0, z[64];
    for (int i = 0; i < b; i++) {
        double mx = -INFINITY;
        for (int k = 0; k < c; k++) {
            z[k] = p[c * d + k];
            for (int j = 0; j < d; j++)
                z[k] += p[k * d + j] * x[i * d + j];
            if (z[k] > mx)
                mx = z[k];
        }
        double s = 0;
        for (int k = 0; k < c; k++)
            s += exp(z[k] - mx);
        l += log(s) + mx - z[(int)y[i]];
    }
    return l / b;
}

static double ref_loss(const wl_model *m, const double *p, const float *x, const float *y,
                       int b)
{
    if (strcmp(m->vt->name, "linreg") == 0)
        return ref_linreg(p, x, y, b, m->dim);
    return ref_softmax(p, x, y, b, m->dim, m->classes);
}

/* Central differences in double with h = 1e-3: the truncation error is
 * h^2/6 * |third derivative| (0 for linreg, < 1e-6 for softmax at these
 * scales); the float32 analytic gradient carries ~1e-6 relative rounding
 * from sums over d <= 30 terms. Tolerance 1e-3 relative + 1e-5 absolute
 * covers both with a wide margin while catching any real error (a wrong
 * sign, a missing 1/b or a transposed index is off by O(|g|)). */
static void check_model(const char *spec, int d, int c, int b, unsigned long seed)
{
    gsl_rng *r = rng_new(seed);
    wl_dataset ds = shape(d, c, "shape");
    sim_err err = {0};
    wl_model *m = wl_model_create(spec, &ds, &err);
    cr_assert_not_null(m, "%s", err.msg);
    int64_t np = m->n_params;
    float *x = malloc(sizeof(float) * b * d), *y = malloc(sizeof(float) * b);
    float *p = malloc(sizeof(float) * np), *g = malloc(sizeof(float) * np);
    float *ws = malloc(sizeof(float) * wl_model_workspace_floats(m, b));
    double *pd = malloc(sizeof(double) * np);
    for (int i = 0; i < b * d; i++)
        x[i] = (float)(gsl_rng_uniform(r) * 2 - 1);
    for (int i = 0; i < b; i++)
        y[i] = c ? (float)gsl_rng_uniform_int(r, c) : (float)(gsl_rng_uniform(r) * 4 - 2);
    for (int64_t j = 0; j < np; j++) {
        p[j] = (float)(gsl_rng_uniform(r) - 0.5);
        pd[j] = p[j];
    }
    double loss = m->vt->loss_grad(m, p, x, y, b, g, ws);
    double lref = ref_loss(m, pd, x, y, b);
    cr_assert(fabs(loss - lref) <= 1e-5 * fabs(lref), "%s loss %.9g vs reference %.9g", spec,
              loss, lref);
    const double h = 1e-3;
    for (int t = 0; t < 40; t++) {
        /* the last coordinates are the biases: test all of them */
        int64_t j = t < m->classes ? np - 1 - t : (int64_t)gsl_rng_uniform_int(r, np);
        double save = pd[j];
        pd[j] = save + h;
        double lp = ref_loss(m, pd, x, y, b);
        pd[j] = save - h;
        double lm = ref_loss(m, pd, x, y, b);
        pd[j] = save;
        double fd = (lp - lm) / (2 * h);
        cr_assert(fabs(g[j] - fd) <= 1e-3 * fabs(fd) + 1e-5,
                  "%s grad[%lld] = %.9g, finite difference %.9g", spec, (long long)j, g[j], fd);
    }
    free(x);
    free(y);
    free(p);
    free(g);
    free(ws);
    free(pd);
    wl_model_destroy(m);
    gsl_rng_free(r);
}

Test(model, linreg_gradient_matches_finite_differences)
{
    check_model("linreg", 30, 0, 17, 1);
    check_model("linreg", 1, 0, 1, 2);
}

Test(model, softmax_gradient_matches_finite_differences)
{
    check_model("softmax", 12, 5, 23, 3);
    check_model("softmax", 7, 2, 1, 4);
    /* more rows than one sgemm block (64): the block accumulation */
    check_model("softmax", 9, 3, 150, 5);
}

Test(model, shapes_and_flops)
{
    sim_err err = {0};
    wl_dataset reg = shape(784, 0, "r"), cls = shape(784, 10, "c");
    wl_model *a = wl_model_create("linreg", &reg, &err);
    wl_model *s = wl_model_create("softmax", &cls, &err);
    cr_assert_not_null(a);
    cr_assert_not_null(s);
    cr_assert_eq(a->n_params, 785);
    cr_assert_eq(a->classes, 1);
    cr_assert_eq(s->n_params, 7850);
    cr_assert_eq(s->classes, 10);
    cr_assert_eq(a->flops_per_sample, 6.0 * 784);
    cr_assert_eq(s->flops_per_sample, 6.0 * 784 * 10);
    cr_assert_eq(s->layers[s->n_layers - 1].offset + s->layers[s->n_layers - 1].size, 7850);
    cr_assert_eq(wl_model_workspace_floats(s, 32), 320);
    wl_model_destroy(a);
    wl_model_destroy(s);
    wl_model_destroy(NULL);
}

/* x = 0, 1, 2; y = 1, 4, 4; w = 2, b = 1: pred 1, 3, 5, residuals 0, -1, 1,
 * loss (0 + 0.5 + 0.5) / 3 = 1/3. Chunks of 2 exercise the chunking. */
Test(model, linreg_evaluate_known_answer)
{
    sim_err err = {0};
    wl_dataset ds = shape(1, 0, "r");
    wl_model *m = wl_model_create("linreg", &ds, &err);
    float p[2] = {2, 1}, x[3] = {0, 1, 2}, y[3] = {1, 4, 4}, ws[2];
    wl_eval e = m->vt->evaluate(m, p, x, y, 3, ws, 2);
    cr_assert(fabs(e.loss - 1.0 / 3) < 1e-7, "loss %.9g", e.loss);
    cr_assert(isnan(e.accuracy));
    wl_model_destroy(m);
}

/* W rows (1,0), (0,1), (0,0), bias 0. Samples: (0,0) label 0: logits equal,
 * loss ln 3, argmax ties to class 0 (correct); (ln2,0) label 1: logits
 * (ln2,0,0), loss ln 4, predicts 0 (wrong); (0,ln2) label 1: loss ln 2,
 * predicts 1 (correct). Mean loss ln(24)/3, accuracy 2/3. */
Test(model, softmax_evaluate_known_answer)
{
    sim_err err = {0};
    wl_dataset ds = shape(2, 3, "c");
    wl_model *m = wl_model_create("softmax", &ds, &err);
    cr_assert_not_null(m, "%s", err.msg);
    const float l2 = (float)M_LN2;
    float p[9] = {1, 0, 0, 1, 0, 0, 0, 0, 0};
    float x[6] = {0, 0, l2, 0, 0, l2}, y[3] = {0, 1, 1}, ws[6];
    wl_eval e = m->vt->evaluate(m, p, x, y, 3, ws, 2);
    cr_assert(fabs(e.loss - log(24.0) / 3) < 1e-6, "loss %.9g", e.loss);
    cr_assert(fabs(e.accuracy - 2.0 / 3) < 1e-12, "accuracy %.9g", e.accuracy);
    wl_model_destroy(m);
}

/* All-zero parameters: every logit is 0, so the loss is ln(classes) and
 * the bias gradient is 1/classes - (fraction of samples with that label). */
Test(model, softmax_zero_params_loss_is_ln_classes)
{
    sim_err err = {0};
    wl_dataset ds = shape(4, 10, "c");
    wl_model *m = wl_model_create("softmax", &ds, &err);
    float p[50] = {0}, g[50], x[5 * 4], y[5] = {0, 1, 1, 9, 3}, ws[50];
    for (int i = 0; i < 20; i++)
        x[i] = (float)i / 7.0f;
    double loss = m->vt->loss_grad(m, p, x, y, 5, g, ws);
    cr_assert(fabs(loss - log(10.0)) < 1e-12, "loss %.17g vs ln 10", loss);
    cr_assert(fabs(g[40 + 1] - (0.1 - 0.4)) < 1e-6);
    cr_assert(fabs(g[40 + 2] - 0.1) < 1e-6);
    wl_model_destroy(m);
}

/* w = (1, -2), b = 0.5 fits (1,0) -> 1.5, (0,1) -> -1.5, (1,1) -> -0.5
 * exactly (3 equations, 3 unknowns, all values exact in float). */
Test(model, linreg_gradient_zero_at_least_squares_solution)
{
    sim_err err = {0};
    wl_dataset ds = shape(2, 0, "r");
    wl_model *m = wl_model_create("linreg", &ds, &err);
    float p[3] = {1, -2, 0.5f}, g[3], ws[3];
    float x[6] = {1, 0, 0, 1, 1, 1}, y[3] = {1.5f, -1.5f, -0.5f};
    double loss = m->vt->loss_grad(m, p, x, y, 3, g, ws);
    cr_assert(fabs(loss) < 1e-12);
    for (int j = 0; j < 3; j++)
        cr_assert(fabs(g[j]) < 1e-7, "grad[%d] = %g", j, g[j]);
    /* moving b by 1 gives residual 1 everywhere: grad_b = 1, grad_w = column means */
    p[2] = 1.5f;
    loss = m->vt->loss_grad(m, p, x, y, 3, g, ws);
    cr_assert(fabs(loss - 0.5) < 1e-7);
    cr_assert(fabs(g[0] - 2.0 / 3) < 1e-6 && fabs(g[1] - 2.0 / 3) < 1e-6 &&
              fabs(g[2] - 1.0) < 1e-6);
    wl_model_destroy(m);
}

/* evaluate() in chunks equals one loss_grad over the whole set (150 rows:
 * more than one internal block of 64). */
Test(model, evaluate_chunking_matches_full_batch)
{
    gsl_rng *r = rng_new(9);
    sim_err err = {0};
    wl_dataset ds = shape(6, 4, "c");
    wl_model *m = wl_model_create("softmax", &ds, &err);
    enum { N = 150 };
    float x[N * 6], y[N], p[28], g[28], ws[N * 4];
    for (int i = 0; i < N * 6; i++)
        x[i] = (float)gsl_rng_uniform(r);
    for (int i = 0; i < N; i++)
        y[i] = (float)gsl_rng_uniform_int(r, 4);
    m->vt->init(m, p, r);
    for (int k = 24; k < 28; k++)
        cr_assert_eq(p[k], 0.0f);
    double full = m->vt->loss_grad(m, p, x, y, N, g, ws);
    wl_eval e7 = m->vt->evaluate(m, p, x, y, N, ws, 7);
    wl_eval e50 = m->vt->evaluate(m, p, x, y, N, ws, N);
    cr_assert(fabs(e7.loss - full) < 1e-6 * full);
    cr_assert(fabs(e50.loss - full) < 1e-6 * full);
    cr_assert_eq(e7.accuracy, e50.accuracy);
    wl_model_destroy(m);
    gsl_rng_free(r);
}

Test(model, init_is_deterministic_and_small)
{
    sim_err err = {0};
    wl_dataset ds = shape(100, 10, "c");
    wl_model *m = wl_model_create("softmax", &ds, &err);
    float *a = malloc(sizeof(float) * 1010), *b = malloc(sizeof(float) * 1010);
    gsl_rng *r1 = rng_new(5), *r2 = rng_new(5);
    m->vt->init(m, a, r1);
    m->vt->init(m, b, r2);
    cr_assert_eq(memcmp(a, b, sizeof(float) * 1010), 0);
    double ss = 0;
    for (int i = 0; i < 1000; i++)
        ss += (double)a[i] * a[i];
    /* sample sd of 1000 N(0, 0.01^2) draws: within 10% of 0.01 */
    cr_assert(fabs(sqrt(ss / 1000) - 0.01) < 0.001, "sd %g", sqrt(ss / 1000));
    free(a);
    free(b);
    gsl_rng_free(r1);
    gsl_rng_free(r2);
    wl_model_destroy(m);
}

Test(model, registry_and_errors)
{
    sim_err err = {0};
    cr_assert_not_null(wl_model_find("linreg"));
    cr_assert_not_null(wl_model_find("softmax"));
    cr_assert_null(wl_model_find("nope"));

    wl_dataset reg = shape(20, 0, "synthetic_linear(20, 1000)");
    wl_dataset cls = shape(784, 10, "fashion_mnist");
    cr_assert_null(wl_model_create("softmax", &reg, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_str_eq(err.msg, "model 'softmax' needs a classification dataset; "
                              "'synthetic_linear(20, 1000)' is a regression dataset");
    cr_assert_null(wl_model_create("linreg", &cls, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "model 'linreg' needs a regression dataset"), "%s", err.msg);
    cr_assert(strstr(err.msg, "10-class"), "%s", err.msg);
    cr_assert_null(wl_model_create("resnet9000", &cls, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "resnet9000") && strstr(err.msg, "linreg") &&
                  strstr(err.msg, "softmax"),
              "%s", err.msg);
    cr_assert_null(wl_model_create("softmax(3)", &cls, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_null(wl_model_create("softmax(", &cls, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
}

/* ---- logreg, mlp, cnn, charlm: float64 references ---------------------- */

static double ce_row(const double *z, int c, int y)
{
    double mx = z[0], s = 0;
    for (int k = 1; k < c; k++)
        mx = z[k] > mx ? z[k] : mx;
    for (int k = 0; k < c; k++)
        s += exp(z[k] - mx);
    return log(s) + mx - z[y];
}

static double ref_logreg(const double *p, const float *x, const float *y, int b, int d)
{
    double l = 0;
    for (int i = 0; i < b; i++) {
        double z = p[d];
        for (int j = 0; j < d; j++)
            z += p[j] * x[i * d + j];
        l += log(1 + exp(z)) - y[i] * z;
    }
    return l / b;
}

/* dense layer: out = W in + bias (W: nout x nin then bias), ReLU if relu */
static void ref_dense(const double *w, int nin, int nout, const double *in, double *out,
                      int relu)
{
    for (int o = 0; o < nout; o++) {
        double t = w[nout * nin + o];
        for (int j = 0; j < nin; j++)
            t += w[o * nin + j] * in[j];
        out[o] = relu && t < 0 ? 0 : t;
    }
}

static double ref_mlp(const wl_model *m, const double *p, const float *x, const float *y,
                      int b)
{
    double a[2][512], l = 0;
    for (int i = 0; i < b; i++) {
        int w = m->dim, cur = 0;
        for (int j = 0; j < w; j++)
            a[0][j] = x[i * m->dim + j];
        for (int k = 0; k < m->n_layers; k++) {
            int out = (int)(m->layers[k].size / (w + 1));
            ref_dense(p + m->layers[k].offset, w, out, a[cur], a[1 - cur],
                      k < m->n_layers - 1);
            cur = 1 - cur;
            w = out;
        }
        l += ce_row(a[cur], m->classes, (int)y[i]);
    }
    return l / b;
}

/* Direct convolutions in the documented weight layouts. */
static double ref_cnn(const wl_model *m, const wl_dataset *ds, const double *p,
                      const float *x, const float *y, int b)
{
    const int C0 = ds->channels, H0 = ds->height, W0 = ds->width;
    const int c1 = (int)(m->layers[0].size / (C0 * 25 + 1));
    const int c2 = (int)(m->layers[1].size / (25 * c1 + 1));
    const int H1 = H0 - 4, W1 = W0 - 4, P1h = H1 / 2, P1w = W1 / 2;
    const int H2 = P1h - 4, W2 = P1w - 4, P2h = H2 / 2, P2w = W2 / 2;
    const double *w1 = p, *w2 = p + m->layers[1].offset, *wf = p + m->layers[2].offset;
    double *a1 = malloc(sizeof(double) * H1 * W1 * c1), *p1 = malloc(sizeof(double) * P1h * P1w * c1);
    double *a2 = malloc(sizeof(double) * H2 * W2 * c2), *f = malloc(sizeof(double) * P2h * P2w * c2);
    double z[16], l = 0;
    for (int s = 0; s < b; s++) {
        const float *xs = x + s * m->dim;
        for (int o = 0; o < c1; o++)
            for (int oy = 0; oy < H1; oy++)
                for (int ox = 0; ox < W1; ox++) {
                    double t = w1[c1 * C0 * 25 + o];
                    for (int c = 0; c < C0; c++)
                        for (int ky = 0; ky < 5; ky++)
                            for (int kx = 0; kx < 5; kx++)
                                t += w1[((o * C0 + c) * 5 + ky) * 5 + kx] *
                                     xs[(c * H0 + oy + ky) * W0 + ox + kx];
                    a1[(oy * W1 + ox) * c1 + o] = t > 0 ? t : 0;
                }
        for (int py = 0; py < P1h; py++)
            for (int px = 0; px < P1w; px++)
                for (int c = 0; c < c1; c++) {
                    double v = -INFINITY;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) {
                            double u = a1[((2 * py + dy) * W1 + 2 * px + dx) * c1 + c];
                            v = u > v ? u : v;
                        }
                    p1[(py * P1w + px) * c1 + c] = v;
                }
        for (int o = 0; o < c2; o++)
            for (int oy = 0; oy < H2; oy++)
                for (int ox = 0; ox < W2; ox++) {
                    double t = w2[c2 * 25 * c1 + o];
                    for (int ky = 0; ky < 5; ky++)
                        for (int kx = 0; kx < 5; kx++)
                            for (int c = 0; c < c1; c++)
                                t += w2[((o * 5 + ky) * 5 + kx) * c1 + c] *
                                     p1[((oy + ky) * P1w + ox + kx) * c1 + c];
                    a2[(oy * W2 + ox) * c2 + o] = t > 0 ? t : 0;
                }
        for (int py = 0; py < P2h; py++)
            for (int px = 0; px < P2w; px++)
                for (int c = 0; c < c2; c++) {
                    double v = -INFINITY;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) {
                            double u = a2[((2 * py + dy) * W2 + 2 * px + dx) * c2 + c];
                            v = u > v ? u : v;
                        }
                    f[(py * P2w + px) * c2 + c] = v;
                }
        ref_dense(wf, P2h * P2w * c2, m->classes, f, z, 0);
        l += ce_row(z, m->classes, (int)y[s]);
    }
    free(a1);
    free(p1);
    free(a2);
    free(f);
    return l / b;
}

static double ref_charlm(const wl_model *m, const double *p, const float *x, const float *y,
                         int b)
{
    const int k = m->dim, v = m->classes;
    const int e = (int)(m->layers[0].size / v);
    const int hd = (int)(m->layers[1].size / (k * e + 1));
    double u[256], h[256], z[64], l = 0;
    for (int s = 0; s < b; s++) {
        for (int j = 0; j < k; j++)
            for (int t = 0; t < e; t++)
                u[j * e + t] = p[(int)x[s * k + j] * e + t];
        ref_dense(p + m->layers[1].offset, k * e, hd, u, h, 0);
        for (int t = 0; t < hd; t++)
            h[t] = tanh(h[t]);
        ref_dense(p + m->layers[2].offset, hd, v, h, z, 0);
        l += ce_row(z, v, (int)y[s]);
    }
    return l / b;
}

static double ref_any(const wl_model *m, const wl_dataset *ds, const double *p, const float *x,
                      const float *y, int b)
{
    const char *n = m->vt->name;
    if (strcmp(n, "logreg") == 0)
        return ref_logreg(p, x, y, b, m->dim);
    if (strcmp(n, "mlp") == 0)
        return ref_mlp(m, p, x, y, b);
    if (strcmp(n, "cnn") == 0)
        return ref_cnn(m, ds, p, x, y, b);
    if (strcmp(n, "charlm") == 0)
        return ref_charlm(m, p, x, y, b);
    return ref_loss(m, p, x, y, b);
}

/* Inputs for a model on ds: ids for text datasets, labels in range. */
static void random_batch(const wl_dataset *ds, int b, float *x, float *y, gsl_rng *r)
{
    for (int i = 0; i < b * ds->dim; i++)
        x[i] = ds->context ? (float)gsl_rng_uniform_int(r, (unsigned long)ds->classes)
                           : (float)(gsl_rng_uniform(r) * 2 - 1);
    for (int i = 0; i < b; i++)
        y[i] = ds->classes ? (float)gsl_rng_uniform_int(r, (unsigned long)ds->classes)
                           : (float)(gsl_rng_uniform(r) * 4 - 2);
}

/* Loss against the float64 reference, then finite differences on every
 * bias of the last layer and 60 random coordinates. h = 1e-6 in double:
 * truncation ~1e-13 and rounding ~1e-10. With ~10^4 ReLU/max-pool inputs a
 * step can still cross a kink (seen: one at 3e-7 from the point), which
 * shows as one one-sided difference disagreeing with the other; so a
 * coordinate passes when the central difference or either one-sided
 * difference (truncation ~1e-6 relative) matches, at h or at h/10. A wrong
 * gradient matches none. Tolerance 2e-3 relative + 2e-5 absolute: the
 * float32 gradient carries ~1e-5 relative rounding from sums over a few
 * thousand terms. */
static int fd_matches(const wl_model *m, const wl_dataset *ds, double *pd, int64_t j,
                      const float *x, const float *y, int b, double l0, double g, double *fd)
{
    const double hs[2] = {1e-6, 1e-7};
    const double save = pd[j];
    for (int u = 0; u < 2; u++) {
        double h = hs[u];
        pd[j] = save + h;
        double lp = ref_any(m, ds, pd, x, y, b);
        pd[j] = save - h;
        double lm = ref_any(m, ds, pd, x, y, b);
        pd[j] = save;
        double cand[3] = {(lp - lm) / (2 * h), (lp - l0) / h, (l0 - lm) / h};
        if (u == 0)
            *fd = cand[0];
        for (int k = 0; k < 3; k++)
            if (fabs(g - cand[k]) <= 2e-3 * fabs(cand[k]) + 2e-5)
                return 1;
    }
    return 0;
}

static void check_grad(const wl_dataset *ds, const char *spec, int b, unsigned long seed,
                       double pscale)
{
    gsl_rng *r = rng_new(seed);
    sim_err err = {0};
    wl_model *m = wl_model_create(spec, ds, &err);
    cr_assert_not_null(m, "%s: %s", spec, err.msg);
    const int64_t np = m->n_params;
    float *x = malloc(sizeof(float) * b * ds->dim), *y = malloc(sizeof(float) * b);
    float *p = malloc(sizeof(float) * np), *g = malloc(sizeof(float) * np);
    float *ws = malloc(sizeof(float) * wl_model_workspace_floats(m, b));
    double *pd = malloc(sizeof(double) * np);
    random_batch(ds, b, x, y, r);
    for (int64_t j = 0; j < np; j++) {
        p[j] = (float)(pscale * (gsl_rng_uniform(r) - 0.5));
        pd[j] = p[j];
    }
    double loss = m->vt->loss_grad(m, p, x, y, b, g, ws);
    double lref = ref_any(m, ds, pd, x, y, b);
    cr_assert(fabs(loss - lref) <= 1e-5 * fabs(lref) + 1e-7, "%s loss %.9g vs reference %.9g",
              spec, loss, lref);
    const int nb = m->classes > 1 ? m->classes : 1;
    for (int t = 0; t < 60 + nb; t++) {
        int64_t j = t < nb ? np - 1 - t : (int64_t)gsl_rng_uniform_int(r, (unsigned long)np);
        double fd;
        cr_assert(fd_matches(m, ds, pd, j, x, y, b, lref, g[j], &fd),
                  "%s grad[%lld] = %.9g, finite difference %.9g", spec, (long long)j, g[j], fd);
    }
    free(x);
    free(y);
    free(p);
    free(g);
    free(ws);
    free(pd);
    wl_model_destroy(m);
    gsl_rng_free(r);
}

/* ---- sparse kernels ------------------------------------------------------ */

/* A random CSR matrix of n rows x d features (density about 0.15, row 0
 * empty), its dense copy into dense (n x d). */
static void random_csr(int n, int d, gsl_rng *r, wl_csr *X, float *dense)
{
    X->row = malloc(sizeof(int64_t) * (size_t)(n + 1));
    X->col = malloc(sizeof(int32_t) * (size_t)n * (size_t)d);
    X->val = malloc(sizeof(float) * (size_t)n * (size_t)d);
    memset(dense, 0, sizeof(float) * (size_t)n * (size_t)d);
    int64_t k = 0;
    X->row[0] = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < d && i > 0; j++)
            if (gsl_rng_uniform(r) < 0.15) {
                float v = (float)(gsl_rng_uniform(r) * 4 - 2);
                X->col[k] = j;
                X->val[k++] = v;
                dense[(size_t)i * d + j] = v;
            }
        X->row[i + 1] = k;
    }
}

/* Sparse vs dense on the same rows (a batch with repeated and empty rows):
 * loss and every gradient entry within 1e-5 (relative above 1); the
 * sparse gradient against finite differences of the float64 reference on
 * the biases, every coordinate some sample touches (up to 200) and random
 * ones; evaluate_sparse vs evaluate with and without a row list, chunked. */
static void check_sparse(const char *spec, int classes, int d, int b, unsigned long seed)
{
    gsl_rng *r = rng_new(seed);
    wl_dataset ds = shape(d, classes, "sparse");
    sim_err err = {0};
    wl_model *m = wl_model_create(spec, &ds, &err);
    cr_assert_not_null(m, "%s: %s", spec, err.msg);
    cr_assert(wl_model_sparse(m), "%s has sparse kernels", spec);
    const int n = 2 * b + 1;
    const int64_t np = m->n_params;
    float *dense = malloc(sizeof(float) * (size_t)n * d), *x = malloc(sizeof(float) * (size_t)b * d);
    float *yall = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * b);
    float *p = malloc(sizeof(float) * np), *gd = malloc(sizeof(float) * np);
    float *gs = malloc(sizeof(float) * np);
    float *ws = malloc(sizeof(float) * wl_model_workspace_floats(m, n));
    double *pd = malloc(sizeof(double) * np);
    int64_t *rows = malloc(sizeof(int64_t) * b);
    wl_csr X;
    random_csr(n, d, r, &X, dense);
    for (int i = 0; i < n; i++)
        yall[i] = classes ? (float)gsl_rng_uniform_int(r, (unsigned long)classes)
                          : (float)(gsl_rng_uniform(r) * 4 - 2);
    for (int i = 0; i < b; i++) {
        rows[i] = i == 0 ? 0 : i == 1 ? 1 : (int64_t)gsl_rng_uniform_int(r, (unsigned long)n);
        if (i == 2)
            rows[i] = rows[1]; /* a repeated row */
        memcpy(x + (size_t)i * d, dense + rows[i] * d, sizeof(float) * d);
        y[i] = yall[rows[i]];
    }
    for (int64_t j = 0; j < np; j++) {
        p[j] = (float)(gsl_rng_uniform(r) - 0.5);
        pd[j] = p[j];
    }
    double ld = m->vt->loss_grad(m, p, x, y, b, gd, ws);
    memset(gs, 0x7f, sizeof(float) * np); /* the kernel must overwrite every entry */
    double ls = m->vt->loss_grad_sparse(m, p, &X, rows, y, b, gs, ws);
    cr_assert(fabs(ls - ld) <= 1e-5 * fmax(1, fabs(ld)), "%s loss %.9g vs dense %.9g", spec, ls,
              ld);
    int64_t touched = 0;
    for (int64_t j = 0; j < np; j++) {
        cr_assert(fabs(gs[j] - gd[j]) <= 1e-5 * fmax(1, fabs(gd[j])),
                  "%s grad[%lld] sparse %.9g dense %.9g", spec, (long long)j, gs[j], gd[j]);
        touched += gs[j] != 0;
    }
    cr_assert(touched > 0 && touched < np, "%s: some coordinates untouched (%lld)", spec,
              (long long)touched);
    double lref = ref_any(m, &ds, pd, x, y, b);
    cr_assert(fabs(ls - lref) <= 1e-5 * fabs(lref) + 1e-7, "%s loss %.9g vs reference %.9g",
              spec, ls, lref);
    int checked = 0;
    for (int64_t j = 0; j < np && checked < 200; j++) {
        int bias = j >= np - (m->classes > 1 ? m->classes : 1);
        if (gs[j] == 0 && !bias && gsl_rng_uniform(r) > 0.05)
            continue;
        double fd;
        cr_assert(fd_matches(m, &ds, pd, j, x, y, b, lref, gs[j], &fd),
                  "%s sparse grad[%lld] = %.9g, finite difference %.9g", spec, (long long)j,
                  gs[j], fd);
        checked++;
    }
    /* evaluation: all rows (rows NULL), chunks of 3, and the batch's rows */
    wl_eval ed = m->vt->evaluate(m, p, dense, yall, n, ws, 3);
    wl_eval es = m->vt->evaluate_sparse(m, p, &X, NULL, yall, n, ws, 3);
    cr_assert(fabs(es.loss - ed.loss) <= 1e-5 * fmax(1, fabs(ed.loss)), "%s eval %.9g vs %.9g",
              spec, es.loss, ed.loss);
    cr_assert(classes == 0 ? isnan(es.accuracy) : es.accuracy == ed.accuracy);
    ed = m->vt->evaluate(m, p, x, y, b, ws, 4);
    es = m->vt->evaluate_sparse(m, p, &X, rows, y, b, ws, 4);
    cr_assert(fabs(es.loss - ed.loss) <= 1e-5 * fmax(1, fabs(ed.loss)));
    cr_assert(classes == 0 || es.accuracy == ed.accuracy);
    free(X.row);
    free(X.col);
    free(X.val);
    free(dense);
    free(x);
    free(yall);
    free(y);
    free(p);
    free(gd);
    free(gs);
    free(ws);
    free(pd);
    free(rows);
    wl_model_destroy(m);
    gsl_rng_free(r);
}

Test(model, sparse_kernels_match_dense_and_finite_differences)
{
    check_sparse("linreg", 0, 40, 9, 31);
    check_sparse("logreg", 2, 40, 9, 32);
    check_sparse("softmax", 5, 40, 9, 33);
    check_sparse("softmax", 3, 300, 40, 34);
    check_sparse("logreg", 2, 300, 1 + 2, 35);
    /* models without sparse kernels say so */
    wl_dataset ds = shape(8, 3, "s");
    sim_err err = {0};
    wl_model *m = wl_model_create("mlp(4)", &ds, &err);
    cr_assert_not_null(m);
    cr_assert_not(wl_model_sparse(m));
    wl_model_destroy(m);
}

static wl_dataset image_shape(int c, int h, int w, int classes)
{
    wl_dataset ds = shape(c * h * w, classes, "images");
    ds.channels = c;
    ds.height = h;
    ds.width = w;
    return ds;
}

static wl_dataset text_shape(int k, int vocab)
{
    wl_dataset ds = shape(k, vocab, "text");
    ds.context = k;
    return ds;
}

Test(model, logreg_gradient_matches_finite_differences)
{
    wl_dataset ds = shape(13, 2, "bin");
    check_grad(&ds, "logreg", 21, 11, 1.0);
    check_grad(&ds, "logreg", 1, 12, 4.0);
}

Test(model, mlp_gradient_matches_finite_differences)
{
    wl_dataset ds = shape(9, 4, "c");
    check_grad(&ds, "mlp(7)", 19, 21, 1.0);
    check_grad(&ds, "mlp(6, 5, 3)", 13, 22, 1.5);
    check_grad(&ds, "mlp(5)", 1, 23, 1.0);
}

Test(model, cnn_gradient_matches_finite_differences)
{
    /* 2 channels of 17x17: conv1 13x13 (odd: pool1 drops a row and a
     * column), pool 6x6, conv2 2x2, pool 1x1; 70 samples = two chunks */
    wl_dataset ds = image_shape(2, 17, 17, 3);
    check_grad(&ds, "cnn(3, 4)", 70, 31, 0.6);
    wl_dataset fm = image_shape(1, 28, 28, 10);
    check_grad(&fm, "cnn(6, 16)", 3, 32, 0.4);
}

Test(model, charlm_gradient_matches_finite_differences)
{
    /* vocabulary 4 with context 5: ids repeat inside windows */
    wl_dataset ds = text_shape(5, 4);
    check_grad(&ds, "charlm(5, 3, 6)", 17, 41, 1.5);
    wl_dataset big = text_shape(8, 30);
    check_grad(&big, "charlm", 9, 42, 0.5);
}

/* Distance in floats between a and b (adjacent floats: 1), across zero. */
static int64_t floats_apart(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, sizeof ia);
    memcpy(&ib, &b, sizeof ib);
    int64_t oa = ia < 0 ? -(int64_t)(ia & 0x7fffffff) : ia;
    int64_t ob = ib < 0 ? -(int64_t)(ib & 0x7fffffff) : ib;
    return oa > ob ? oa - ob : ob - oa;
}

/* charlm's tanh: the correctly rounded float (libm's double tanh rounded)
 * or a neighbour, on a step-2^-16 grid of [-12, 12] and a ratio-(1 +
 * 2^-10) grid of |x| from 1e-40 (subnormals) to 12, in batches of 1021 (a
 * tail that is not a multiple of the vector width); neighbours on under
 * 3% of the points (1.7% when written; 0.17% of all floats, most of which
 * are tiny or saturate); exact at the special values. */
Test(model, vmath_tanh_within_one_float_of_the_rounded_value)
{
    enum { N = 1021 };
    float v[N], x[N];
    int64_t worst = 0;
    double worst_x = 0;
    int n = 0;
    long checked = 0, off = 0;
    for (int pass = 0; pass < 2; pass++) {
        double t = pass == 0 ? -12.0 : 1e-40;
        while (t <= 12.0) {
            for (int s = 0; s < (pass == 0 ? 1 : 2); s++)
                x[n] = v[n] = (float)(s ? -t : t), n++;
            t = pass == 0 ? t + 0x1p-16 : t * (1 + 0x1p-10);
            if (n >= N - 1 || t > 12.0) {
                wl_vmath_tanh(v, n);
                for (int i = 0; i < n; i++) {
                    int64_t d = floats_apart(v[i], (float)tanh((double)x[i]));
                    off += d > 0;
                    if (d > worst)
                        worst = d, worst_x = x[i];
                }
                checked += n;
                n = 0;
            }
        }
    }
    cr_expect(checked > 1500000, "%ld points", checked);
    cr_expect(worst <= 1, "worst %lld floats off at %.9g", (long long)worst, worst_x);
    cr_expect(off < 3 * checked / 100, "%ld of %ld points one float off", off, checked);
    float sp[6] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f};
    wl_vmath_tanh(sp, 6);
    cr_expect(sp[0] == 0 && !signbit(sp[0]) && sp[1] == 0 && signbit(sp[1]));
    cr_expect(sp[2] == 1.0f && sp[3] == -1.0f && isnan(sp[4]) && sp[5] == 0x1p-149f);
}

Test(model, new_models_shapes_layers_flops)
{
    sim_err err = {0};
    wl_dataset fm = image_shape(1, 28, 28, 10);
    wl_model *mlp = wl_model_create("mlp(256)", &fm, &err);
    cr_assert_not_null(mlp, "%s", err.msg);
    cr_assert_eq(mlp->n_params, 256 * 785 + 10 * 257);
    cr_assert_eq(mlp->n_layers, 2);
    cr_assert_str_eq(mlp->layers[0].name, "fc1");
    cr_assert_str_eq(mlp->layers[1].name, "out");
    cr_assert_eq(mlp->layers[1].offset, 256 * 785);
    cr_assert_eq(mlp->flops_per_sample, 6.0 * (784 * 256 + 256 * 10));
    wl_model *cnn = wl_model_create("cnn", &fm, &err);
    cr_assert_not_null(cnn, "%s", err.msg);
    /* defaults 16 and 32 maps: conv1 16 x 26, conv2 32 x (400 + 1), fc 10 x (512 + 1) */
    cr_assert_eq(cnn->n_params, 16 * 26 + 32 * 401 + 10 * 513);
    wl_model_destroy(cnn);
    cnn = wl_model_create("cnn(6, 16)", &fm, &err);
    cr_assert_not_null(cnn, "%s", err.msg);
    /* conv1 6 x (25 + 1), conv2 16 x (150 + 1), fc 10 x (4*4*16 + 1) */
    cr_assert_eq(cnn->n_params, 156 + 2416 + 2570);
    cr_assert_eq(cnn->n_layers, 3);
    cr_assert_eq(cnn->layers[2].offset, 156 + 2416);
    cr_assert_eq(cnn->flops_per_sample, 6.0 * (576 * 25 * 6 + 64 * 150 * 16 + 256 * 10));
    wl_dataset txt = text_shape(8, 90);
    wl_model *lm = wl_model_create("charlm", &txt, &err);
    cr_assert_not_null(lm, "%s", err.msg);
    cr_assert_eq(lm->n_params, 90 * 16 + 256 * (128 + 1) + 90 * 257);
    cr_assert_str_eq(lm->layers[0].name, "embed");
    cr_assert_eq(lm->flops_per_sample, 6.0 * (128 * 256 + 256 * 90));
    wl_dataset bin = shape(5, 2, "b");
    wl_model *lr = wl_model_create("logreg", &bin, &err);
    cr_assert_not_null(lr, "%s", err.msg);
    cr_assert_eq(lr->n_params, 6);
    cr_assert_eq(lr->classes, 1);
    wl_model *models[4] = {mlp, cnn, lm, lr};
    for (int i = 0; i < 4; i++) {
        const wl_model *m = models[i];
        int64_t off = 0;
        for (int l = 0; l < m->n_layers; l++) {
            cr_assert_eq(m->layers[l].offset, off);
            off += m->layers[l].size;
        }
        cr_assert_eq(off, m->n_params);
    }
    for (int i = 0; i < 4; i++)
        wl_model_destroy(models[i]);
}

Test(model, new_models_reject_unfit_datasets_and_args)
{
    sim_err err = {0};
    wl_dataset c10 = shape(784, 10, "fashion_mnist"), reg = shape(5, 0, "reg");
    wl_dataset tiny = image_shape(1, 15, 15, 3), txt = text_shape(8, 20);
    struct { const char *spec; const wl_dataset *ds; const char *want; } cases[] = {
        {"logreg", &c10, "needs a binary classification dataset"},
        {"logreg(1)", &c10, "takes no arguments"},
        {"mlp", &c10, "expected mlp(h1, h2, ...)"},
        {"mlp(0)", &c10, "hidden width '0'"},
        {"mlp(12x)", &c10, "hidden width '12x'"},
        {"mlp(4)", &reg, "needs a classification dataset"},
        {"cnn", &c10, "needs an image dataset"},
        {"cnn", &tiny, "too small"},
        {"cnn(0, 3)", &tiny, "channel count '0'"},
        {"cnn(1, 2, 3)", &tiny, "expected cnn or cnn(c1, c2)"},
        {"charlm", &c10, "needs a text dataset"},
        {"charlm(4)", &txt, "context k = 4"},
        {"charlm(8, 0)", &txt, "embedding size '0'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_err_clear(&err);
        cr_assert_null(wl_model_create(cases[i].spec, cases[i].ds, &err), "%s", cases[i].spec);
        cr_assert_eq(err.code, SIM_ECONFIG, "%s", cases[i].spec);
        cr_assert(strstr(err.msg, cases[i].want), "%s: '%s'", cases[i].spec, err.msg);
    }
}

/* w = (2), b = -1: x = 0 -> z = -1, x = 1 -> z = 1, x = 0.5 -> z = 0
 * (predicted 1). Labels 0, 0, 1: correct, wrong, correct. Loss = mean of
 * softplus(-1), softplus(1), softplus(0) - 0 = (ln(1+e^-1) + ln(1+e) + ln 2)/3. */
Test(model, logreg_evaluate_known_answer)
{
    sim_err err = {0};
    wl_dataset ds = shape(1, 2, "b");
    wl_model *m = wl_model_create("logreg", &ds, &err);
    float p[2] = {2, -1}, x[3] = {0, 1, 0.5f}, y[3] = {0, 0, 1}, ws[2];
    wl_eval e = m->vt->evaluate(m, p, x, y, 3, ws, 2);
    double want = (log1p(exp(-1.0)) + log1p(exp(1.0)) + log(2.0)) / 3;
    cr_assert(fabs(e.loss - want) < 1e-6, "loss %.9g vs %.9g", e.loss, want);
    cr_assert(fabs(e.accuracy - 2.0 / 3) < 1e-12);
    /* extreme logits stay finite */
    float pb[2] = {1000, 0}, xb[2] = {1, -1}, yb[2] = {0, 1}, g[2];
    double l = m->vt->loss_grad(m, pb, xb, yb, 2, g, ws);
    cr_assert(fabs(l - 1000) < 1e-3, "loss %.9g", l);
    cr_assert(isfinite(g[0]) && isfinite(g[1]));
    wl_model_destroy(m);
}

/* evaluate() over any chunking equals the loss of one loss_grad call, and
 * its accuracy does not depend on the chunking. */
static void check_eval_chunks(const wl_dataset *ds, const char *spec, int n, unsigned long seed)
{
    gsl_rng *r = rng_new(seed);
    sim_err err = {0};
    wl_model *m = wl_model_create(spec, ds, &err);
    cr_assert_not_null(m, "%s", err.msg);
    float *x = malloc(sizeof(float) * n * ds->dim), *y = malloc(sizeof(float) * n);
    float *p = malloc(sizeof(float) * m->n_params), *g = malloc(sizeof(float) * m->n_params);
    float *ws = malloc(sizeof(float) * wl_model_workspace_floats(m, n));
    random_batch(ds, n, x, y, r);
    m->vt->init(m, p, r);
    double full = m->vt->loss_grad(m, p, x, y, n, g, ws);
    wl_eval e7 = m->vt->evaluate(m, p, x, y, n, ws, 7);
    wl_eval en = m->vt->evaluate(m, p, x, y, n, ws, n);
    cr_assert(fabs(e7.loss - full) < 1e-5 * full, "%s: %.9g vs %.9g", spec, e7.loss, full);
    cr_assert(fabs(en.loss - full) < 1e-5 * full, "%s: %.9g vs %.9g", spec, en.loss, full);
    cr_assert_eq(e7.accuracy, en.accuracy);
    cr_assert(e7.accuracy >= 0 && e7.accuracy <= 1);
    free(x);
    free(y);
    free(p);
    free(g);
    free(ws);
    wl_model_destroy(m);
    gsl_rng_free(r);
}

Test(model, evaluate_chunking_new_models)
{
    wl_dataset c = shape(10, 3, "c"), img = image_shape(1, 16, 16, 4), txt = text_shape(4, 9);
    wl_dataset bin = shape(6, 2, "b");
    check_eval_chunks(&c, "mlp(8, 8)", 150, 51);
    check_eval_chunks(&img, "cnn(4, 5)", 150, 52);
    check_eval_chunks(&txt, "charlm(4, 5, 7)", 150, 53);
    check_eval_chunks(&bin, "logreg", 150, 54);
}

/* He initialisation: sd of each weight matrix within 5% of sqrt(2/fan_in)
 * (>= 2000 draws each), biases zero, same seed same draw. */
Test(model, he_init_scales)
{
    sim_err err = {0};
    wl_dataset fm = image_shape(1, 28, 28, 10);
    const char *specs[2] = {"mlp(300, 100)", "cnn(20, 50)"};
    for (int s = 0; s < 2; s++) {
        wl_model *m = wl_model_create(specs[s], &fm, &err);
        cr_assert_not_null(m, "%s", err.msg);
        float *p = malloc(sizeof(float) * m->n_params), *q = malloc(sizeof(float) * m->n_params);
        gsl_rng *r1 = rng_new(3), *r2 = rng_new(3);
        m->vt->init(m, p, r1);
        m->vt->init(m, q, r2);
        cr_assert_eq(memcmp(p, q, sizeof(float) * m->n_params), 0);
        int in = m->dim;
        for (int l = 0; l < m->n_layers; l++) {
            const wl_layer *ly = &m->layers[l];
            /* fan-in: mlp widths chain; cnn 25 per input map */
            int out, fan;
            if (s == 0) {
                out = (int)(ly->size / (in + 1));
                fan = in;
                in = out;
            } else {
                static const int outs[3] = {20, 50, 10}, fans[3] = {25, 500, 800};
                out = outs[l];
                fan = fans[l];
            }
            int64_t nw = (int64_t)out * fan;
            cr_assert_eq(nw + out, ly->size, "%s layer %d", specs[s], l);
            double ss = 0;
            for (int64_t j = 0; j < nw; j++)
                ss += (double)p[ly->offset + j] * p[ly->offset + j];
            double sd = sqrt(ss / (double)nw), want = sqrt(2.0 / fan);
            if (nw >= 2000)
                cr_assert(fabs(sd - want) < 0.05 * want, "%s layer %d sd %g vs %g", specs[s],
                          l, sd, want);
            for (int j = 0; j < out; j++)
                cr_assert_eq(p[ly->offset + nw + j], 0.0f);
        }
        free(p);
        free(q);
        gsl_rng_free(r1);
        gsl_rng_free(r2);
        wl_model_destroy(m);
    }
}

/* ---- per-sample gradient statistics ------------------------------------ */

/* Brute force: all b per-sample gradients (single-sample loss_grad calls,
 * whose correctness the finite-difference tests establish) held in double,
 * then the definitions of docs/algorithms.md section 2 literally. */
static void brute_stats(const wl_model *m, const float *p, const float *x, const float *y,
                        int b, wl_batch_stats *out, double *gbar)
{
    const int64_t d = m->n_params;
    double *a = malloc(sizeof(double) * b * d), *q = malloc(sizeof(double) * b);
    float *g = malloc(sizeof(float) * d);
    float *ws = malloc(sizeof(float) * wl_model_workspace_floats(m, 1));
    memset(out, 0, sizeof *out);
    for (int s = 0; s < b; s++) {
        out->loss += m->vt->loss_grad(m, p, x + s * m->dim, y + s, 1, g, ws) / b;
        for (int64_t j = 0; j < d; j++)
            a[s * d + j] = g[j];
    }
    double G = 0, v = 0, qbar = 0, vip = 0, vo = 0;
    for (int64_t j = 0; j < d; j++) {
        gbar[j] = 0;
        for (int s = 0; s < b; s++)
            gbar[j] += a[s * d + j] / b;
        G += gbar[j] * gbar[j];
        for (int s = 0; s < b; s++)
            v += (a[s * d + j] - gbar[j]) * (a[s * d + j] - gbar[j]) / (b - 1);
    }
    for (int s = 0; s < b; s++) {
        q[s] = 0;
        for (int64_t j = 0; j < d; j++)
            q[s] += a[s * d + j] * gbar[j];
        qbar += q[s] / b;
    }
    for (int s = 0; s < b; s++)
        vip += (q[s] - qbar) * (q[s] - qbar) / (b - 1);
    /* o_s = a_s - (q_s / G) gbar, per-coordinate variance */
    for (int64_t j = 0; j < d; j++) {
        double mean = 0, ss = 0;
        for (int s = 0; s < b; s++)
            mean += (a[s * d + j] - q[s] / G * gbar[j]) / b;
        for (int s = 0; s < b; s++) {
            double o = a[s * d + j] - q[s] / G * gbar[j] - mean;
            ss += o * o;
        }
        vo += ss / (b - 1);
    }
    out->b = b;
    out->gnorm2 = G;
    out->v_norm = v;
    out->v_ip = vip;
    out->v_orth = vo;
    free(a);
    free(q);
    free(g);
    free(ws);
}

static int close_rel(double a, double b, double rel)
{
    return fabs(a - b) <= rel * fabs(b) + 1e-12;
}

/* wl_model_batch_stats through the model's own batch_stats and through the
 * generic per-sample loop (the same model with that slot cleared), both
 * against brute force. Tolerance 1e-4 relative (float32 gradients; V_o =
 * V - V_ip/G loses at most a few digits when the terms are close). */
static void check_stats(const wl_dataset *ds, const char *spec, int b, unsigned long seed)
{
    gsl_rng *r = rng_new(seed);
    sim_err err = {0};
    wl_model *m = wl_model_create(spec, ds, &err);
    cr_assert_not_null(m, "%s", err.msg);
    const int64_t d = m->n_params;
    float *x = malloc(sizeof(float) * b * ds->dim), *y = malloc(sizeof(float) * b);
    float *p = malloc(sizeof(float) * d);
    float *ws = malloc(sizeof(float) * wl_model_stats_workspace_floats(m, b));
    double *gref = malloc(sizeof(double) * d);
    random_batch(ds, b, x, y, r);
    m->vt->init(m, p, r);
    for (int64_t j = 0; j < d; j++) /* off the initial point (zeros for linear models) */
        p[j] += (float)(0.1 * (gsl_rng_uniform(r) - 0.5));
    wl_batch_stats want, got;
    brute_stats(m, p, x, y, b, &want, gref);
    const wl_model_vt *own = m->vt;
    wl_model_vt generic = *own;
    generic.batch_stats = NULL;
    for (int pass = 0; pass < 2; pass++) {
        m->vt = pass == 0 ? own : &generic;
        const char *path = pass == 0 && own->batch_stats ? "own" : "generic";
        cr_assert_eq(wl_model_batch_stats(m, p, x, y, b, &got, ws), 0);
        cr_assert_eq(got.b, b);
        cr_assert(close_rel(got.loss, want.loss, 1e-5), "%s %s loss %.9g vs %.9g", spec, path,
                  got.loss, want.loss);
        cr_assert(close_rel(got.gnorm2, want.gnorm2, 1e-4), "%s %s |g|^2 %.9g vs %.9g", spec,
                  path, got.gnorm2, want.gnorm2);
        cr_assert(close_rel(got.v_norm, want.v_norm, 1e-4), "%s %s V %.9g vs %.9g", spec, path,
                  got.v_norm, want.v_norm);
        cr_assert(close_rel(got.v_ip, want.v_ip, 1e-4), "%s %s V_ip %.9g vs %.9g", spec, path,
                  got.v_ip, want.v_ip);
        cr_assert(close_rel(got.v_orth, want.v_orth, 1e-4), "%s %s V_o %.9g vs %.9g", spec,
                  path, got.v_orth, want.v_orth);
        double gmax = 0, emax = 0;
        for (int64_t j = 0; j < d; j++) {
            gmax = fmax(gmax, fabs(gref[j]));
            emax = fmax(emax, fabs(ws[j] - gref[j]));
        }
        cr_assert(emax <= 1e-5 * gmax, "%s %s: gbar in ws off by %g (max %g)", spec, path,
                  emax, gmax);
    }
    m->vt = own;
    free(x);
    free(y);
    free(p);
    free(ws);
    free(gref);
    wl_model_destroy(m);
    gsl_rng_free(r);
}

Test(model, batch_stats_match_brute_force_every_model)
{
    wl_dataset reg = shape(7, 0, "r"), bin = shape(6, 2, "b"), cls = shape(8, 4, "c");
    wl_dataset img = image_shape(1, 16, 16, 3), txt = text_shape(5, 4);
    check_stats(&reg, "linreg", 9, 61);
    check_stats(&bin, "logreg", 12, 62);
    check_stats(&cls, "softmax", 70, 63); /* more rows than one softmax block */
    check_stats(&cls, "mlp(6, 5)", 10, 64);
    check_stats(&img, "cnn(2, 3)", 6, 65);
    check_stats(&txt, "charlm(5, 3, 4)", 11, 66);
    check_stats(&txt, "charlm(5, 3, 4)", 2, 67);
}

/* b identical samples: every per-sample gradient equals gbar, so the three
 * variances vanish (up to float rounding against ||gbar||^2); b = 1 is
 * refused with SIM_ECONFIG but still reports the loss and gradient. */
Test(model, batch_stats_identical_samples_and_b1)
{
    sim_err err = {0};
    wl_dataset cls = shape(5, 3, "c");
    wl_model *m = wl_model_create("mlp(4)", &cls, &err);
    gsl_rng *r = rng_new(71);
    enum { B = 6 };
    float x[B * 5], y[B], *p = malloc(sizeof(float) * m->n_params);
    float *ws = malloc(sizeof(float) * wl_model_stats_workspace_floats(m, B));
    m->vt->init(m, p, r);
    for (int s = 0; s < B; s++) {
        for (int j = 0; j < 5; j++)
            x[s * 5 + j] = 0.3f * (float)j - 0.5f;
        y[s] = 2;
    }
    wl_batch_stats st;
    cr_assert_eq(wl_model_batch_stats(m, p, x, y, B, &st, ws), 0);
    cr_assert(st.gnorm2 > 1e-3, "|g|^2 %g", st.gnorm2);
    cr_assert(st.v_norm <= 1e-5 * st.gnorm2, "V %g", st.v_norm);
    cr_assert(st.v_ip <= 1e-5 * st.gnorm2 * st.gnorm2, "V_ip %g", st.v_ip);
    cr_assert(st.v_orth <= 1e-5 * st.gnorm2, "V_o %g", st.v_orth);
    cr_assert_eq(wl_model_batch_stats(m, p, x, y, 1, &st, ws), SIM_ECONFIG);
    cr_assert(st.loss > 0 && st.gnorm2 > 0);
    cr_assert_eq(st.v_norm, 0.0);
    free(p);
    free(ws);
    gsl_rng_free(r);
    wl_model_destroy(m);
}

/* ---- LIBSVM least squares ---------------------------------------------- */

/* 14 samples of 3 sparse features in [-1, 1] (zeros omitted in the file)
 * with real targets: full-batch gradient descent on linreg (lr 0.5, stable
 * while the Hessian [X 1]^T [X 1] / n has eigenvalues below 4, which
 * features in [-1, 1] guarantee; 4000 steps) must land on the least-squares
 * solution of [X 1] w = y solved independently by GSL in double (Cholesky
 * of the normal equations). Tolerance 1e-4: float32 gradients near the
 * optimum. */
Test(model, libsvm_least_squares_reaches_normal_equations_solution)
{
    const char *dir = test_tmpdir();
    cr_assert_not_null(dir);
    gsl_rng *r = rng_new(81);
    enum { N = 14, D = 3 };
    double X[N][D], Y[N];
    char text[4096] = "";
    for (int i = 0; i < N; i++) {
        Y[i] = 0;
        for (int j = 0; j < D; j++) {
            /* a third of the entries are absent from the file (zero) */
            X[i][j] = gsl_rng_uniform(r) < 0.33 ? 0 : round((gsl_rng_uniform(r) * 2 - 1) * 1e4) / 1e4;
            Y[i] += (j + 1) * X[i][j];
        }
        Y[i] = round((Y[i] + 0.3 + 0.2 * (gsl_rng_uniform(r) - 0.5)) * 1e4) / 1e4 + 0.00005;
        char line[256];
        int k = snprintf(line, sizeof line, "%.5f", Y[i]);
        for (int j = 0; j < D; j++)
            if (X[i][j] != 0)
                k += snprintf(line + k, sizeof line - (size_t)k, " %d:%.4f", j + 1, X[i][j]);
        strcat(line, "\n");
        strcat(text, line);
        Y[i] = strtod(line, NULL);
    }
    char spec[4200];
    snprintf(spec, sizeof spec, "libsvm(%s)", test_write_file(dir, "ls.svm", text));
    sim_err err = {0};
    wl_dataset_opts o = {.spec = spec, .test_fraction = 0};
    wl_dataset *ds = wl_dataset_create(&o, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert_eq(ds->classes, 0);
    cr_assert_eq(ds->dim, D);
    cr_assert_eq(ds->train.n, N);
    cr_assert_eq(wl_dataset_densify(ds, "test", &err), 0, "%s", err.msg);
    wl_model *m = wl_model_create("linreg", ds, &err);
    cr_assert_not_null(m, "%s", err.msg);
    float p[D + 1] = {0}, g[D + 1], ws[N];
    for (int it = 0; it < 4000; it++) {
        m->vt->loss_grad(m, p, ds->train.x, ds->train.y, N, g, ws);
        for (int j = 0; j <= D; j++)
            p[j] -= 0.5f * g[j];
    }
    gsl_matrix *A = gsl_matrix_calloc(D + 1, D + 1);
    gsl_vector *rhs = gsl_vector_calloc(D + 1), *w = gsl_vector_alloc(D + 1);
    for (int i = 0; i < N; i++) {
        double row[D + 1] = {X[i][0], X[i][1], X[i][2], 1};
        for (int a = 0; a <= D; a++) {
            *gsl_vector_ptr(rhs, a) += row[a] * Y[i];
            for (int b2 = 0; b2 <= D; b2++)
                *gsl_matrix_ptr(A, a, b2) += row[a] * row[b2];
        }
    }
    cr_assert_eq(gsl_linalg_cholesky_decomp1(A), 0);
    cr_assert_eq(gsl_linalg_cholesky_solve(A, rhs, w), 0);
    for (int j = 0; j <= D; j++)
        cr_assert(fabs(p[j] - gsl_vector_get(w, j)) < 1e-4, "w[%d] = %.7f, normal equations %.7f",
                  j, p[j], gsl_vector_get(w, j));
    gsl_matrix_free(A);
    gsl_vector_free(rhs);
    gsl_vector_free(w);
    wl_model_destroy(m);
    wl_dataset_destroy(ds);
    gsl_rng_free(r);
}

/* dtsim's expf (workloads/vmath.c): glibc 2.36's special cases, each a
 * known answer, in both paths (the vector one and wl_vmath_expf1), at
 * every position of a vector (a tail is padded). */
Test(model, vmath_expf_special_values)
{
    const float hi = 0x1.62e42ep6f, lo = -0x1.9fe368p6f;
    const float x[] = {0.0f,  -0.0f,    INFINITY, -INFINITY, NAN,  -NAN,  hi,
                       nextafterf(hi, INFINITY), lo, nextafterf(lo, -INFINITY), 0x1p-149f,
                       -0x1p-149f, 1.0f, -1.0f, 88.0f, -88.0f, -103.5f, 0x1.62e43p-1f};
    enum { K = sizeof x / sizeof *x };
    /* exp correctly rounded to float (from 200-bit exp) */
    const float want[K] = {1.0f, 1.0f, INFINITY, 0.0f, NAN, NAN, 0x1.ffff08p127f, INFINITY,
                           0x1p-149f, 0.0f, 1.0f, 1.0f, 0x1.5bf0a8p+1f, 0x1.78b564p-2f,
                           0x1.f1056ep126f, 0x1.07b71p-127f, 0x1p-149f, 2.0f};
    for (int shift = 0; shift < 4; shift++) {
        float v[K + 3];
        memcpy(v + shift, x, sizeof x);
        wl_vmath_expf(v + shift, K);
        for (int i = 0; i < K; i++) {
            const float one = wl_vmath_expf1(x[i]), got = v[shift + i];
            if (isnan(want[i])) {
                cr_expect(isnan(got) && isnan(one), "expf(%a) = %a / %a", x[i], got, one);
                cr_expect_eq(signbit(got) != 0, signbit(x[i]) != 0, "the NaN keeps its sign");
                continue;
            }
            cr_expect(memcmp(&got, &want[i], sizeof got) == 0, "expf(%a) = %a, want %a", x[i],
                      got, want[i]);
            cr_expect(memcmp(&one, &want[i], sizeof one) == 0, "expf1(%a) = %a, want %a", x[i],
                      one, want[i]);
        }
    }
}

/* A sweep of float bit patterns of both signs (every 251st: 17 M points,
 * NaNs, infinities, subnormals and the underflow and overflow edges among
 * them), in arrays of odd length: the vector path gives wl_vmath_expf1's
 * bits on every point; both are within one float of libm's expf, and its
 * bits on glibc 2.36 with FMA, where glibc runs the same algorithm (on
 * all 2^32 floats when written). */
Test(model, vmath_expf_paths_agree_and_match_libm)
{
    enum { N = 1021 };
    float v[N], x[N];
    int n = 0;
    long checked = 0, paths = 0, libm_bits = 0, libm_far = 0;
    __builtin_cpu_init();
    const int same_libm = strcmp(gnu_get_libc_version(), "2.36") == 0 &&
                          __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    for (uint64_t u = 0; u <= 0xffffffffu; u += 251) {
        const uint32_t b = (uint32_t)u;
        memcpy(&x[n], &b, sizeof b);
        v[n] = x[n];
        if (++n < N && u + 251 <= 0xffffffffu)
            continue;
        wl_vmath_expf(v, n);
        for (int i = 0; i < n; i++) {
            const float one = wl_vmath_expf1(x[i]), e = expf(x[i]);
            paths += memcmp(&one, &v[i], sizeof one) != 0;
            if (isnan(e) && isnan(v[i]))
                continue;
            libm_bits += memcmp(&e, &v[i], sizeof e) != 0;
            libm_far += floats_apart(e, v[i]) > 1;
        }
        checked += n;
        n = 0;
    }
    cr_expect(checked > 17000000, "%ld points", checked);
    cr_expect_eq(paths, 0, "%ld of %ld points differ between the paths", paths, checked);
    cr_expect_eq(libm_far, 0, "%ld of %ld points more than one float from expf", libm_far,
                 checked);
    if (same_libm)
        cr_expect_eq(libm_bits, 0, "%ld of %ld points differ from glibc 2.36's expf", libm_bits,
                     checked);
    else
        cr_log_info("glibc %s: %ld of %ld points one float from its expf",
                    gnu_get_libc_version(), libm_bits, checked);
}

/* The bias gradient (dense.c's column sums in double, 16 columns at a time
 * in registers where the CPU has AVX2) against a column-at-a-time double
 * loop, bit for bit: widths around the 16-column blocks, with and without
 * accumulation, rows of signed zeros, huge and tiny values. */
Test(model, bias_sums_match_a_column_loop_bit_for_bit)
{
    static const int widths[] = {1, 7, 15, 16, 17, 31, 32, 33, 96, 256, 300};
    const int64_t rows = 1031;
    float *d = malloc((size_t)rows * 300 * sizeof *d);
    float got[300], want[300];
    cr_assert(d);
    gsl_rng *r = rng_new(99);
    for (int64_t i = 0; i < rows * 300; i++) {
        const double u = gsl_rng_uniform(r);
        d[i] = u < 0.3 ? 0.0f : u < 0.35 ? -0.0f : u < 0.4 ? (float)(1e30 * (u - 0.37)) :
               (float)(gsl_rng_uniform(r) - 0.5) * (u < 0.7 ? 1e-3f : 1.0f);
    }
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
        const int n = widths[w];
        for (int add = 0; add <= 1; add++) {
            for (int k = 0; k < n; k++) {
                double acc = 0;
                for (int64_t i = 0; i < rows; i++)
                    acc += d[i * n + k];
                const float start = (float)k - 3.5f;
                want[k] = add ? start + (float)acc : (float)acc;
                got[k] = start;
            }
            if (add)
                wl_dense_bias_grad_add(d, rows, n, got);
            else
                wl_dense_bias_grad(d, rows, n, got);
            cr_expect_eq(memcmp(got, want, (size_t)n * sizeof *got), 0, "n %d add %d", n, add);
        }
    }
    gsl_rng_free(r);
    free(d);
}
