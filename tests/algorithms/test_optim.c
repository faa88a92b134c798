/* Optimizer plug-ins and the clip transform against known answers: adam,
 * adamw and lamb against the update written out in double (bias
 * correction on and off, coupled and decoupled weight decay, lamb's trust
 * ratio at each bound and with a zero norm), sgd against the old
 * algo_sgd_step code bit for bit, every local-step method with one worker
 * equal to allreduce_sgd bit for bit whatever the optimizer, an Adam run
 * that trains, the methods that refuse optimizers other than sgd, config
 * errors, and clipping (an infinite bound changes nothing; a small one
 * bounds every gradient the methods see). */
#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "algorithms/core/algo.h"
#include "algorithms/drivers/gossip.h"
#include "algorithms/optim/optim.h"
#include "algorithms/optim/optim_impl.h" /* the state's d, t and n_layers */
#include "config/config.h"
#include "experiment/experiment.h"
#include "tests/algorithms/harness.h"

/* algo_optim_state_create's state, or NULL with its code in err->code. */
static algo_optim_state *state_create(const algo_optim *o, const algo_optim_hp *hp, int64_t d,
                                      const wl_layer *layers, int n_layers, sim_err *err)
{
    algo_optim_state *s = NULL;
    int rc = algo_optim_state_create(o, hp, d, layers, n_layers, &s, err);
    cr_assert_eq(rc < 0, s == NULL, "a code (%d) and a state", rc);
    cr_assert(rc == 0 || rc == err->code);
    return s;
}

/* ---- the update written out in double ----------------------------------- */

#define D_MAX 8

typedef struct ref {
    double m[D_MAX], v[D_MAX];
    int t;
} ref;

typedef enum ref_kind { REF_ADAM, REF_ADAMW, REF_LAMB } ref_kind;

/* One step of adam / adamw / lamb on x (d doubles) from gradient g0.
 * Layers for lamb: [off[l], off[l] + len[l]). trust (may be NULL) gets
 * each layer's ratio. */
static void ref_step(ref *r, ref_kind kind, const algo_optim_hp *hp, double *x, const double *g0,
                     int d, double lr, const int *off, const int *len, int n_layers,
                     double *trust)
{
    double u[D_MAX];
    r->t++;
    const double b1 = hp->beta1, b2 = hp->beta2, wd = hp->weight_decay;
    for (int j = 0; j < d; j++) {
        double g = g0[j] + (kind == REF_ADAM ? wd * x[j] : 0.0);
        r->m[j] = b1 * r->m[j] + (1 - b1) * g;
        r->v[j] = b2 * r->v[j] + (1 - b2) * g * g;
        double mh = r->m[j], vh = r->v[j];
        if (hp->bias_correction) {
            mh /= 1 - pow(b1, r->t);
            vh /= 1 - pow(b2, r->t);
        }
        u[j] = mh / (sqrt(vh) + hp->eps) + (kind == REF_ADAM ? 0.0 : wd * x[j]);
    }
    if (kind == REF_LAMB) {
        for (int l = 0; l < n_layers; l++) {
            double xn = 0, un = 0;
            for (int j = off[l]; j < off[l] + len[l]; j++) {
                xn += x[j] * x[j];
                un += u[j] * u[j];
            }
            xn = sqrt(xn);
            un = sqrt(un);
            double c = 1;
            if (xn > 0 && un > 0)
                c = fmin(fmax(xn / un, hp->min_trust), hp->max_trust);
            if (trust)
                trust[l] = c;
            for (int j = off[l]; j < off[l] + len[l]; j++)
                u[j] *= c;
        }
    }
    for (int j = 0; j < d; j++)
        x[j] -= lr * u[j];
}

static algo_optim_hp hp_default(void)
{
    return (algo_optim_hp){.momentum = 0, .nesterov = 0, .weight_decay = 0, .beta1 = 0.9,
                           .beta2 = 0.999, .eps = 1e-8, .bias_correction = 1,
                           .min_trust = 0.01, .max_trust = 10};
}

static const double grads[3][5] = {
    {0.3, -0.2, 0.05, 0.0, 1.1},
    {-0.1, -0.4, 0.2, 0.7, 0.9},
    {0.25, 0.1, -0.3, -0.2, 1.0},
};

/* Runs three steps of optimizer `name` from x0 (5 values) in float and in
 * double and compares; layers as for ref_step (NULL = none). */
static void check_three_steps(const char *name, ref_kind kind, const algo_optim_hp *hp,
                              const double *x0, const int *off, const int *len, int n_layers,
                              double lr, double tol)
{
    const int d = 5;
    const algo_optim *o = algo_optim_find(name);
    cr_assert_not_null(o, "%s", name);
    wl_layer layers[4];
    for (int l = 0; l < n_layers; l++)
        layers[l] = (wl_layer){.name = "l", .offset = off[l], .size = len[l]};
    sim_err err = {0};
    algo_optim_state *s = state_create(o, hp, d, layers, n_layers, &err);
    cr_assert_not_null(s, "%s", err.msg);
    float x[5], g[5];
    double xr[5], tr[4];
    ref r = {0};
    for (int j = 0; j < d; j++) {
        x[j] = (float)x0[j];
        xr[j] = x0[j];
    }
    int one[1] = {0}, all[1] = {d};
    for (int t = 0; t < 3; t++) {
        for (int j = 0; j < d; j++)
            g[j] = (float)grads[t][j];
        algo_optim_step(s, x, g, lr);
        ref_step(&r, kind, hp, xr, grads[t], d, lr, n_layers ? off : one, n_layers ? len : all,
                 n_layers ? n_layers : 1, tr);
        for (int j = 0; j < d; j++)
            cr_assert(fabs((double)x[j] - xr[j]) <= tol * (1 + fabs(xr[j])),
                      "%s step %d x[%d] = %.9g, expected %.9g", name, t + 1, j, x[j], xr[j]);
    }
    cr_assert_eq(s->t, 3);
    const float *m = algo_optim_m(s), *v = algo_optim_v(s);
    cr_assert(m && v);
    for (int j = 0; j < d; j++) {
        cr_assert(fabs(m[j] - r.m[j]) <= 1e-6 * (1 + fabs(r.m[j])), "m[%d]", j);
        cr_assert(fabs(v[j] - r.v[j]) <= 1e-6 * (1 + fabs(r.v[j])), "v[%d]", j);
    }
    if (kind == REF_LAMB) {
        const double *trust = algo_optim_trust(s);
        cr_assert_not_null(trust);
        for (int l = 0; l < n_layers; l++)
            cr_assert(fabs(trust[l] - tr[l]) <= 1e-5 * tr[l], "trust[%d] %.9g vs %.9g", l,
                      trust[l], tr[l]);
    } else {
        cr_assert_null(algo_optim_trust(s));
    }
    algo_optim_state_destroy(s);
}

static const double x_mid[5] = {0.5, -1.0, 2.0, 0.0, 1.5};

/* Invariants of the registry (a new optimizer needs no edit here), then
 * the facts of the four this file tests by formula. */
Test(optim, registry_finds_every_optimizer_by_name)
{
    int n = 0;
    for (; algo_optim_registry[n]; n++) {
        const algo_optim *o = algo_optim_registry[n];
        cr_assert(o->name && o->name[0], "entry %d has no name", n);
        cr_assert(o->summary && o->summary[0], "%s has no summary", o->name);
        cr_assert(o->direction, "%s", o->name);
        cr_assert_eq(algo_optim_find(o->name), o, "%s", o->name);
        cr_assert_str_eq(algo_optim_name_at(n), o->name);
        for (int j = 0; j < n; j++)
            cr_assert(strcasecmp(algo_optim_registry[j]->name, o->name) != 0, "%s", o->name);
    }
    cr_assert_null(algo_optim_name_at(n));
    cr_assert_eq(algo_optim_find("ADAMW"), algo_optim_find("adamw"));
    cr_assert_null(algo_optim_find("rmsprop"));
    cr_assert_eq(algo_optim_find("sgd")->decoupled_wd, 0);
    cr_assert_eq(algo_optim_find("adam")->decoupled_wd, 0);
    cr_assert_eq(algo_optim_find("adamw")->decoupled_wd, 1);
    cr_assert_eq(algo_optim_find("lamb")->decoupled_wd, 1);
}

Test(optim, adam_with_bias_correction_and_coupled_decay_matches_the_double_formula)
{
    algo_optim_hp hp = hp_default();
    hp.weight_decay = 0.05;
    check_three_steps("adam", REF_ADAM, &hp, x_mid, NULL, NULL, 0, 0.1, 2e-6);
    hp.eps = 1e-2; /* eps large enough to matter */
    check_three_steps("adam", REF_ADAM, &hp, x_mid, NULL, NULL, 0, 0.1, 2e-6);
}

Test(optim, adam_without_bias_correction_matches_the_double_formula)
{
    algo_optim_hp hp = hp_default();
    hp.bias_correction = 0;
    hp.weight_decay = 0.01;
    check_three_steps("adam", REF_ADAM, &hp, x_mid, NULL, NULL, 0, 0.05, 2e-6);
}

/* Without bias correction adamw is the 1-bit Adam warm-up update of
 * docs/algorithms.md section 7.2: x <- x - lr (m / (sqrt(v) + eps) + wd x). */
Test(optim, adamw_decouples_weight_decay)
{
    algo_optim_hp hp = hp_default();
    hp.weight_decay = 0.1;
    check_three_steps("adamw", REF_ADAMW, &hp, x_mid, NULL, NULL, 0, 0.1, 2e-6);
    hp.bias_correction = 0;
    check_three_steps("adamw", REF_ADAMW, &hp, x_mid, NULL, NULL, 0, 0.1, 2e-6);

    /* adam and adamw: the same floats without weight decay, not with it */
    for (int with_wd = 0; with_wd < 2; with_wd++) {
        hp = hp_default();
        hp.weight_decay = with_wd ? 0.1 : 0.0;
        sim_err err = {0};
        algo_optim_state *a = state_create(algo_optim_find("adam"), &hp, 5, NULL, 0,
                                                      &err);
        algo_optim_state *w = state_create(algo_optim_find("adamw"), &hp, 5, NULL,
                                                      0, &err);
        cr_assert(a && w);
        float xa[5], xw[5], ga[5], gw[5];
        for (int j = 0; j < 5; j++)
            xa[j] = xw[j] = (float)x_mid[j];
        for (int t = 0; t < 3; t++) {
            for (int j = 0; j < 5; j++)
                ga[j] = gw[j] = (float)grads[t][j];
            algo_optim_step(a, xa, ga, 0.1);
            algo_optim_step(w, xw, gw, 0.1);
        }
        int same = memcmp(xa, xw, sizeof xa) == 0;
        cr_assert_eq(same, !with_wd, "weight decay %d: adam and adamw %s", with_wd,
                     same ? "agree" : "differ");
        algo_optim_state_destroy(a);
        algo_optim_state_destroy(w);
    }
}

/* Two layers: [0, 3) far from the origin (||x|| / ||u|| ~ 100 > max) and
 * [3, 5) close to it (ratio ~ 1e-4 < min). */
Test(optim, lamb_trust_ratio_hits_each_bound)
{
    const double x0[5] = {100.0, -120.0, 90.0, 1e-4, -2e-4};
    const int off[2] = {0, 3}, len[2] = {3, 2};
    algo_optim_hp hp = hp_default();
    hp.weight_decay = 0.01;
    check_three_steps("lamb", REF_LAMB, &hp, x0, off, len, 2, 0.01, 2e-6);

    /* the ratios are exactly the bounds */
    wl_layer layers[2] = {{"a", 0, 3}, {"b", 3, 2}};
    sim_err err = {0};
    algo_optim_state *s = state_create(algo_optim_find("lamb"), &hp, 5, layers, 2,
                                                  &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(s->n_layers, 2);
    float x[5], g[5];
    for (int j = 0; j < 5; j++) {
        x[j] = (float)x0[j];
        g[j] = (float)grads[0][j];
    }
    algo_optim_step(s, x, g, 0.01);
    const double *trust = algo_optim_trust(s);
    cr_assert_eq(trust[0], 10.0, "%.17g", trust[0]);
    cr_assert_eq(trust[1], 0.01, "%.17g", trust[1]);
    algo_optim_state_destroy(s);
}

/* Layer [0, 2) at the origin (||x|| = 0) and [2, 5) inside the bounds;
 * then a layer whose update is zero (g = 0, wd = 0: ||u|| = 0). */
Test(optim, lamb_zero_norms_give_trust_one)
{
    const double x0[5] = {0.0, 0.0, 0.3, -0.2, 0.25};
    const int off[2] = {0, 2}, len[2] = {2, 3};
    algo_optim_hp hp = hp_default();
    hp.weight_decay = 0.05;
    check_three_steps("lamb", REF_LAMB, &hp, x0, off, len, 2, 0.1, 2e-6);

    wl_layer layers[2] = {{"a", 0, 2}, {"b", 2, 3}};
    sim_err err = {0};
    algo_optim_state *s = state_create(algo_optim_find("lamb"), &hp, 5, layers, 2,
                                                  &err);
    cr_assert_not_null(s, "%s", err.msg);
    float x[5], g[5];
    for (int j = 0; j < 5; j++) {
        x[j] = (float)x0[j];
        g[j] = (float)grads[0][j];
    }
    algo_optim_step(s, x, g, 0.1);
    const double *trust = algo_optim_trust(s);
    cr_assert_eq(trust[0], 1.0, "||x|| = 0 gives 1, got %.17g", trust[0]);
    cr_assert(trust[1] > 0.01 && trust[1] < 10 && trust[1] != 1.0, "%.17g", trust[1]);
    algo_optim_state_destroy(s);

    hp.weight_decay = 0;
    s = state_create(algo_optim_find("lamb"), &hp, 5, layers, 2, &err);
    float x1[5] = {1, 2, 0.3f, -0.2f, 0.25f}, g1[5] = {0, 0, 0.5f, 0.1f, -0.2f};
    algo_optim_step(s, x1, g1, 0.1);
    trust = algo_optim_trust(s);
    cr_assert_eq(trust[0], 1.0, "||u|| = 0 gives 1, got %.17g", trust[0]);
    cr_assert_eq(x1[0], 1.0f);
    cr_assert_eq(x1[1], 2.0f);
    algo_optim_state_destroy(s);
}

Test(optim, layer_table_is_closed_or_rejected)
{
    algo_optim_hp hp = hp_default();
    sim_err err = {0};
    wl_layer part[1] = {{"a", 0, 3}};
    algo_optim_state *s = state_create(algo_optim_find("lamb"), &hp, 5, part, 1,
                                                  &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(s->n_layers, 2, "the parameters past the table form a layer");
    algo_optim_state_destroy(s);
    s = state_create(algo_optim_find("lamb"), &hp, 5, NULL, 0, &err);
    cr_assert_eq(s->n_layers, 1);
    algo_optim_state_destroy(s);
    wl_layer gap[2] = {{"a", 0, 2}, {"b", 3, 2}};
    s = state_create(algo_optim_find("lamb"), &hp, 5, gap, 2, &err);
    cr_assert_null(s);
    cr_assert_eq(err.code, SIM_EINTERNAL);
    cr_assert(strstr(err.msg, "layer 1"), "%s", err.msg);
}

/* ---- sgd is the old code ------------------------------------------------- */

/* algo_sgd_step as it was before optimizers became plug-ins. */
static void old_sgd_step(float *x, float *m, float *g, int64_t d, double lr, double beta,
                         int nesterov, double wd)
{
    const float flr = (float)lr, fb = (float)beta, fwd = (float)wd;
    if (wd != 0)
        for (int64_t j = 0; j < d; j++)
            g[j] += fwd * x[j];
    if (beta == 0 || !m) {
        for (int64_t j = 0; j < d; j++)
            x[j] -= flr * g[j];
        return;
    }
    if (nesterov) {
        for (int64_t j = 0; j < d; j++) {
            m[j] = fb * m[j] + g[j];
            x[j] -= flr * (g[j] + fb * m[j]);
        }
    } else {
        for (int64_t j = 0; j < d; j++) {
            m[j] = fb * m[j] + g[j];
            x[j] -= flr * m[j];
        }
    }
}

#define DS 37 /* two blocks of 16 and a tail */

Test(optim, sgd_plugin_is_the_old_sgd_step_bit_for_bit)
{
    const struct {
        double beta, wd;
        int nesterov;
    } cases[] = {{0, 0, 0}, {0, 1e-3, 0}, {0.9, 0, 0}, {0.9, 5e-4, 0}, {0.9, 5e-4, 1},
                 {0.5, 0, 1}};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        algo_optim_hp hp = hp_default();
        hp.momentum = cases[c].beta;
        hp.nesterov = cases[c].nesterov;
        hp.weight_decay = cases[c].wd;
        sim_err err = {0};
        const algo_optim *o = algo_optim_find("sgd");
        /* four states driven through the four entry points */
        algo_optim_state *s[4];
        for (int k = 0; k < 4; k++) {
            s[k] = state_create(o, &hp, DS, NULL, 0, &err);
            cr_assert_not_null(s[k], "%s", err.msg);
        }
        cr_assert_eq(algo_optim_m(s[0]) != NULL, cases[c].beta != 0);
        cr_assert_null(algo_optim_v(s[0]));
        float xo[DS], mo[DS] = {0}, xs[4][DS], mixed[DS], out[DS], xl[DS], ml[DS] = {0};
        for (int j = 0; j < DS; j++) {
            xo[j] = (float)gsl_ran_gaussian(rng, 1.0);
            mixed[j] = (float)gsl_ran_gaussian(rng, 1.0);
            for (int k = 0; k < 4; k++)
                xs[k][j] = xo[j];
            xl[j] = xo[j];
        }
        for (int t = 0; t < 4; t++) {
            float g[DS], gk[4][DS], gl[DS];
            for (int j = 0; j < DS; j++) {
                g[j] = (float)gsl_ran_gaussian(rng, 1.0);
                for (int k = 0; k < 4; k++)
                    gk[k][j] = g[j];
                gl[j] = g[j];
            }
            double lr = 0.05 * (t + 1);
            old_sgd_step(xo, cases[c].beta != 0 ? mo : NULL, g, DS, lr, hp.momentum,
                         hp.nesterov, hp.weight_decay);
            /* 0: algo_optim_step */
            algo_optim_step(s[0], xs[0], gk[0], lr);
            /* 1: direction, then the subtraction (the fused gossip rows) */
            algo_optim_direction(s[1], xs[1], gk[1]);
            for (int j = 0; j < DS; j++)
                xs[1][j] -= (float)lr * gk[1][j];
            /* 2: ATC message: out = x - lr d, then x = out */
            algo_optim_step_from(s[2], out, xs[2], xs[2], gk[2], lr);
            memcpy(xs[2], out, sizeof out);
            /* 3: AWC: x = mixed - lr d(x), against algo_local_step */
            algo_optim_step_from(s[3], xs[3], mixed, xs[3], gk[3], lr);
            algo_local_step(xl, mixed, xl, gl, cases[c].beta != 0 ? ml : NULL, DS, lr,
                            hp.momentum, hp.nesterov, hp.weight_decay);
            for (int k = 0; k < 3; k++)
                cr_assert_eq(memcmp(xs[k], xo, sizeof xo), 0, "case %zu form %d step %d", c,
                             k, t);
            if (cases[c].beta != 0)
                for (int k = 0; k < 3; k++)
                    cr_assert_eq(memcmp(algo_optim_m(s[k]), mo, sizeof mo), 0,
                                 "case %zu form %d m", c, k);
            cr_assert_eq(memcmp(xs[3], xl, sizeof xl), 0, "case %zu AWC step %d", c, t);
        }
        for (int k = 0; k < 4; k++)
            algo_optim_state_destroy(s[k]);
    }
    gsl_rng_free(rng);
}

Test(optim, reset_freeze_and_steps)
{
    algo_optim_hp hp = hp_default();
    sim_err err = {0};
    algo_optim_state *s = state_create(algo_optim_find("adam"), &hp, 5, NULL, 0,
                                                  &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(s->d, 5);
    cr_assert_eq(algo_optim_params(s)->beta2, 0.999);
    float x[5] = {1, 2, 3, 4, 5}, g[5] = {1, 1, 1, 1, 1};
    algo_optim_step(s, x, g, 0.1);
    float v1[5];
    memcpy(v1, algo_optim_v(s), sizeof v1);
    cr_assert_gt(v1[0], 0);
    /* frozen v: the second step leaves it, the first moment moves */
    algo_optim_freeze_v(s, 1);
    float m1 = algo_optim_m(s)[0];
    for (int j = 0; j < 5; j++)
        g[j] = 3;
    algo_optim_step(s, x, g, 0.1);
    cr_assert_eq(memcmp(algo_optim_v(s), v1, sizeof v1), 0);
    cr_assert_neq(algo_optim_m(s)[0], m1);
    cr_assert_eq(s->t, 2);
    algo_optim_reset(s);
    cr_assert_eq(s->t, 0);
    for (int j = 0; j < 5; j++)
        cr_assert(algo_optim_m(s)[j] == 0 && algo_optim_v(s)[j] == 0);
    algo_optim_state_destroy(s);
    algo_optim_state_destroy(NULL);
}

/* ---- runs through the experiment runner --------------------------------- */

static const char *optim_ini = "[experiment]\n"
                             "seed = 7\n"
                             "max_epochs = 0\n"
                             "max_iterations = 200\n"
                             "eval_every = 25\n"
                             "eval_train_samples = 500\n"
                             "[workers]\n"
                             "count = 8\n"
                             "compute = constant(10ms)\n"
                             "[network]\n"
                             "topology = ideal\n"
                             "[topology]\n"
                             "graph = ring\n"
                             "[algorithm]\n"
                             "name = allreduce_sgd\n"
                             "lr = 0.01\n"
                             "batch = 16\n"
                             "[workload]\n"
                             "model = softmax\n"
                             "dataset = blobs(4, 10, 4000)\n";

/* Runs; returns 0 or the error code (message in err). */
static int try_run(const char *const *sets, int nsets, test_rows *rs, xp_run_result *res,
                   sim_err *err)
{
    if (rs)
        rs->n = 0;
    xp_run_opts opts = {.on_metric = rs ? test_rows_collect : NULL, .ctx = rs};
    return test_run_loaded(optim_ini, sets, nsets, &opts, res, err);
}

static xp_run_result run(const char *const *sets, int nsets, test_rows *rs)
{
    xp_run_result res;
    sim_err err = {0};
    int rc = try_run(sets, nsets, rs, &res, &err);
    cr_assert_eq(rc, 0, "run: %s", err.msg);
    return res;
}

static test_rows ra, rb;

Test(optim, allreduce_adam_trains_a_softmax_model)
{
    const char *adam[] = {"algorithm.optimizer=adam"};
    const char *sgd[] = {"algorithm.optimizer=sgd"};
    xp_run_result a = run(adam, 1, &ra);
    xp_run_result s = run(sgd, 1, &rb);
    cr_assert_gt(ra.r[0].train_loss, 1.2, "starts near ln 4, got %g", ra.r[0].train_loss);
    cr_assert_lt(a.final_train_loss, 0.03, "adam final loss %g", a.final_train_loss);
    /* at this small lr plain sgd is far behind: the optimizer is used */
    cr_assert_gt(s.final_train_loss, 2 * a.final_train_loss, "sgd %g vs adam %g",
                 s.final_train_loss, a.final_train_loss);
}

/* With one worker every local-step method is sequential training on the
 * same batches, so it must give allreduce_sgd's rows bit for bit, whatever
 * the optimizer: this runs every form of the update (server step, ATC
 * message, AWC fused in place and AWC after two gossip steps, pairwise
 * snapshot decay) through each optimizer. */
Test(optim, one_worker_methods_equal_allreduce_for_every_optimizer)
{
    const char *opts[][3] = {
        {"algorithm.optimizer=sgd", "algorithm.momentum=0.9", "algorithm.nesterov=true"},
        {"algorithm.optimizer=adam", "algorithm.bias_correction=false", "algorithm.lr=0.01"},
        {"algorithm.optimizer=adamw", "algorithm.beta1=0.8", "algorithm.lr=0.01"},
        {"algorithm.optimizer=lamb", "workload.model=mlp(16)", "algorithm.lamb_max_trust=2"},
    };
    const char *methods[][2] = {
        {"algorithm.name=asgd", NULL},
        {"algorithm.name=dpsgd", NULL},
        {"algorithm.name=dpsgd", "algorithm.gossip_steps=2"},
        {"algorithm.name=dsgd_atc", NULL},
        {"algorithm.name=consensus_control", NULL},
        {"algorithm.name=ad_psgd", NULL},
        {"algorithm.name=swarm_sgd", NULL},
    };
    for (size_t o = 0; o < sizeof opts / sizeof opts[0]; o++) {
        const char *base[] = {"workers.count=1", "topology.graph=complete",
                              "algorithm.weight_decay=0.01", opts[o][0], opts[o][1],
                              opts[o][2], "algorithm.name=allreduce_sgd"};
        run(base, 7, &rb);
        for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
            const char *sets[8];
            memcpy(sets, base, 6 * sizeof *sets);
            sets[6] = methods[m][0];
            int n = 7;
            if (methods[m][1])
                sets[n++] = methods[m][1];
            run(sets, n, &ra);
            char what[160];
            snprintf(what, sizeof what, "%s %s %s", opts[o][0], methods[m][0],
                     methods[m][1] ? methods[m][1] : "");
            test_rows_assert_identical(&ra, &rb, what);
        }
    }
}

Test(optim, momentum_methods_refuse_other_optimizers)
{
    const char *names[] = {"dmsgd", "decentlam", "momentum_consensus"};
    for (int i = 0; i < 3; i++) {
        char a[64];
        snprintf(a, sizeof a, "algorithm.name=%s", names[i]);
        const char *sets[] = {a, "algorithm.optimizer=adam"};
        xp_run_result res;
        sim_err err = {0};
        cr_assert_eq(try_run(sets, 2, NULL, &res, &err), SIM_ECONFIG, "%s", names[i]);
        cr_assert(strstr(err.msg, "algorithm.optimizer") &&
                      strstr(err.msg, names[i]) && strstr(err.msg, "takes only sgd"),
                  "%s", err.msg);
        const char *ok[] = {a, "algorithm.optimizer=sgd", "experiment.max_iterations=5"};
        run(ok, 3, NULL);
    }
}

/* ---- configuration ------------------------------------------------------- */

static void load_fails(const char *text, const char *expect)
{
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "exp.ini", text, NULL, 0, &cfg,
                                        &err), SIM_ECONFIG,
                 "%s", text);
    /* "...": the registry's own entries follow (a new one needs no edit here) */
    size_t want = strlen(expect);
    if (want > 3 && strcmp(expect + want - 3, "...") == 0)
        cr_assert(strncmp(err.msg, expect, want - 3) == 0, "%s", err.msg);
    else
        cr_assert_str_eq(err.msg, expect);
}

Test(optim, bad_optimizer_keys_are_config_errors_naming_the_key)
{
    load_fails("[algorithm]\noptimizer = rmsprop\n",
               "exp.ini:2: [algorithm] optimizer: unknown optimizer 'rmsprop' (known: sgd, "
               "adam, adamw, lamb...");
    load_fails("[algorithm]\nbeta1 = 1.5\n",
               "exp.ini:2: [algorithm] beta1: must be in [0, 1), got 1.5");
    load_fails("[algorithm]\nbeta2 = 1\n", "exp.ini:2: [algorithm] beta2: must be in [0, 1), got 1");
    load_fails("[algorithm]\neps = 0\n", "exp.ini:2: [algorithm] eps: must be > 0, got 0");
    load_fails("[algorithm]\neps = -1e-8\n", "exp.ini:2: [algorithm] eps: must be > 0, got -1e-8");
    load_fails("[algorithm]\nlamb_min_trust = 2\nlamb_max_trust = 1\n",
               "exp.ini:3: [algorithm] lamb_max_trust: must be >= lamb_min_trust (2), got 1");
    load_fails("[algorithm]\nlamb_min_trust = -0.1\n",
               "exp.ini:2: [algorithm] lamb_min_trust: must be >= 0, got -0.1");
    load_fails("[algorithm]\nclip = -1\n", "exp.ini:2: [algorithm] clip: must be >= 0, got -1");
    load_fails("[algorithm]\nbias_correction = sometimes\n",
               "exp.ini:2: [algorithm] bias_correction: expected a boolean such as true, got "
               "'sometimes'");

    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "exp.ini",
                                        "[algorithm]\noptimizer = AdamW\n", NULL, 0,
                                        &cfg, &err),
                 0, "%s", err.msg);
    cr_assert_str_eq(cfg.optimizer, "adamw");
    char *canon = cfg_canonical(&cfg);
    cr_assert(strstr(canon, "optimizer = adamw\nbeta1 = 0.9\nbeta2 = 0.999\neps = 1e-08\n"
                            "bias_correction = true\nlamb_min_trust = 0.01\n"
                            "lamb_max_trust = 10\nclip = 0\n"),
              "%s", canon);
    free(canon);
    cfg_release(&cfg);
}

/* ---- clipping ------------------------------------------------------------ */

static double norm(const float *g, int64_t d)
{
    double s = 0;
    for (int64_t j = 0; j < d; j++)
        s += (double)g[j] * g[j];
    return sqrt(s);
}

Test(optim, clip_transform_scales_only_long_gradients)
{
    float g[DS], h[DS];
    for (int j = 0; j < DS; j++)
        g[j] = h[j] = (float)(j % 5) - 2.0f;
    double n0 = norm(g, DS);
    cr_assert_eq(algo_grad_clip(g, DS, n0 * 1.01), 0);
    cr_assert_eq(memcmp(g, h, sizeof g), 0, "a short gradient is left bit for bit");
    cr_assert_eq(algo_grad_clip(g, DS, 1.0), 1);
    cr_assert(fabs(norm(g, DS) - 1.0) <= 1e-6, "norm %.9g", norm(g, DS));
    for (int j = 0; j < DS; j++)
        cr_assert(fabs(g[j] - h[j] / n0) <= 1e-6, "the direction is kept");
    float z[4] = {0, 0, 0, 0};
    cr_assert_eq(algo_grad_clip(z, 4, 0.5), 0);
}

Test(optim, huge_clip_changes_no_row)
{
    const char *names[] = {"allreduce_sgd", "asgd", "dpsgd", "swarm_sgd"};
    for (int i = 0; i < 4; i++) {
        char a[64];
        snprintf(a, sizeof a, "algorithm.name=%s", names[i]);
        const char *off[] = {a, "algorithm.momentum=0.9", "algorithm.lr=0.1"};
        const char *on[] = {a, "algorithm.momentum=0.9", "algorithm.lr=0.1",
                            "algorithm.clip=1e30"};
        run(off, 3, &ra);
        run(on, 4, &rb);
        cr_assert_eq(ra.n, rb.n);
        cr_assert_eq(memcmp(ra.r, rb.r, (size_t)ra.n * sizeof ra.r[0]), 0, "%s", names[i]);
    }
}

/* Two environments on the same batches, one clipping at C: every gradient
 * the methods get has norm <= C, equals C/||g|| g when clipped and g bit
 * for bit otherwise, and the counter counts the clipped ones. */
Test(optim, small_clip_bounds_every_gradient_of_the_env)
{
    const double C = 2.9;
    const char *clip_on[] = {"algorithm.clip=2.9"};
    harness a, b;
    h_build(&a, test_base_ini, clip_on, 1);
    h_build(&b, test_base_ini, NULL, 0);
    int64_t d = a.env->d, expect = 0;
    float *ga = malloc((size_t)d * sizeof *ga), *gb = malloc((size_t)d * sizeof *gb);
    for (int k = 0; k < 200; k++) {
        int i = k % a.env->n;
        double la = algo_env_grad(a.env, i, a.env->w[i].x, ga);
        double lb = algo_env_grad(b.env, i, b.env->w[i].x, gb);
        cr_assert_eq(la, lb);
        double nb = norm(gb, d), na = norm(ga, d);
        cr_assert(na <= C * (1 + 1e-6), "gradient %d has norm %.9g > %g", k, na, C);
        if (nb > C) {
            expect++;
            for (int64_t j = 0; j < d; j++)
                cr_assert(fabs(ga[j] - gb[j] * C / nb) <= 1e-6 * (1 + fabs(gb[j])));
        } else {
            cr_assert_eq(memcmp(ga, gb, (size_t)d * sizeof *ga), 0);
        }
    }
    cr_assert_gt(expect, 10, "the bound must bind for some gradients");
    cr_assert_lt(expect, 190, "and not for others (%lld clipped)", (long long)expect);
    cr_assert_eq(a.env->clipped, expect);
    cr_assert_eq(b.env->clipped, 0);
    free(ga);
    free(gb);
    h_free(&a);
    h_free(&b);
}
