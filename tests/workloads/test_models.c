/* models: linreg and softmax against a float64 reference written here
 * (finite-difference gradients, losses), hand-computed evaluations, and the
 * registry's error paths. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/model.h"

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

/* float64 reference losses (same definitions as INTERFACE.md). */
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

Test(models, linreg_gradient_matches_finite_differences)
{
    check_model("linreg", 30, 0, 17, 1);
    check_model("linreg", 1, 0, 1, 2);
}

Test(models, softmax_gradient_matches_finite_differences)
{
    check_model("softmax", 12, 5, 23, 3);
    check_model("softmax", 7, 2, 1, 4);
    /* more rows than one sgemm block (64): the block accumulation */
    check_model("softmax", 9, 3, 150, 5);
}

Test(models, shapes_and_flops)
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
Test(models, linreg_evaluate_known_answer)
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
Test(models, softmax_evaluate_known_answer)
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
Test(models, softmax_zero_params_loss_is_ln_classes)
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
Test(models, linreg_gradient_zero_at_least_squares_solution)
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
Test(models, evaluate_chunking_matches_full_batch)
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

Test(models, init_is_deterministic_and_small)
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

Test(models, registry_and_errors)
{
    sim_err err = {0};
    cr_assert_not_null(wl_model_find("linreg"));
    cr_assert_not_null(wl_model_find("softmax"));
    cr_assert_null(wl_model_find("nope"));
    int n = 0;
    while (wl_model_registry[n])
        n++;
    cr_assert_geq(n, 2);

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
