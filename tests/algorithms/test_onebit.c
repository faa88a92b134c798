/* The 1-bit compressed all-reduce and onebit_adam / onebit_lamb
 * (docs/algorithms.md section 7): padding and message sizes; the two-stage
 * error-feedback identity sum_t r_t = sum_t mean_i m_i - mean_i e_i,T -
 * e^s_T; exactness on sign vectors of one magnitude; with freeze_step past
 * the end the methods are allreduce_sgd with adamw / lamb without bias
 * correction; the bytes the network carries in warm-up and compression. */
#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/compress/onebit.h"
#include "tests/algorithms/harness.h"

Test(onebit, padding_and_sizes)
{
    cr_assert_eq(algo_onebit_padded(4, 1000), 1024);
    cr_assert_eq(algo_onebit_padded(4, 1024), 1024);
    cr_assert_eq(algo_onebit_padded(8, 44), 64);
    cr_assert_eq(algo_onebit_phase_bytes(4, 1000), 32.0 + 4.0);
    /* 2(n-1)(d_pad/(8n) + 4): about d/4 bytes for large d */
    cr_assert_eq(algo_onebit_step_bytes(4, 1000), 6.0 * 36.0);
    double big = algo_onebit_step_bytes(16, 25600000);
    cr_assert_eq(big, 30.0 * (200000.0 + 4.0));
}

/* Summed over steps, the outputs equal the summed mean inputs minus the
 * final worker errors (averaged) and server errors, up to rounding. */
Test(onebit, two_stage_error_feedback_telescopes)
{
    const int n = 4, T = 30;
    const int64_t d = 37; /* padded to 64: chunks of 16 */
    algo_onebit ob;
    sim_err err;
    cr_assert_eq(algo_onebit_init(&ob, n, d, 1, &err), 0);
    cr_assert_eq(ob.d_pad, 64);
    cr_assert_eq(ob.chunk, 16);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    float in[4][37], out[37];
    const float *ptr[4] = {in[0], in[1], in[2], in[3]};
    double sum_r[37] = {0}, sum_m[37] = {0};
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < n; i++)
            for (int64_t j = 0; j < d; j++) {
                in[i][j] = (float)gsl_ran_gaussian(r, 1.0 + 0.1 * (double)j);
                sum_m[j] += in[i][j] / (double)n;
            }
        algo_onebit_allreduce(&ob, ptr, out);
        for (int64_t j = 0; j < d; j++)
            sum_r[j] += out[j];
    }
    double worst = 0, scale = 0;
    for (int64_t j = 0; j < d; j++) {
        double e = 0;
        for (int i = 0; i < n; i++)
            e += ob.we[(size_t)i * 64 + (size_t)j] / (double)n;
        double want = sum_m[j] - e - ob.se[j];
        worst = fmax(worst, fabs(sum_r[j] - want));
        scale = fmax(scale, fabs(sum_m[j]));
    }
    cr_assert_leq(worst, 1e-4 * fmax(1.0, scale), "gap %g", worst);
    /* the errors are not trivially 0: compression really happened */
    cr_assert_gt(fabs(ob.we[0]) + fabs(ob.se[0]) + fabs(ob.se[5]), 0.0);
    gsl_rng_free(r);
    algo_onebit_release(&ob);
}

/* Inputs of one magnitude and one sign pattern per chunk shared by all
 * workers compress without loss: the output is the input, errors stay 0. */
Test(onebit, sign_vectors_pass_exactly)
{
    const int n = 2;
    const int64_t d = 16; /* d_pad = 16, chunks of 8 */
    algo_onebit ob;
    cr_assert_eq(algo_onebit_init(&ob, n, d, 1, NULL), 0);
    float a[16], out[16];
    for (int j = 0; j < 16; j++)
        a[j] = (j % 3 == 0) ? -0.5f : 0.5f;
    const float *ptr[2] = {a, a};
    for (int t = 0; t < 3; t++) {
        algo_onebit_allreduce(&ob, ptr, out);
        for (int j = 0; j < 16; j++) {
            cr_assert_float_eq(out[j], a[j], 1e-7f, "j = %d", j);
            cr_assert_float_eq(ob.we[j], 0.0f, 1e-7f);
            cr_assert_float_eq(ob.se[j], 0.0f, 1e-7f);
        }
    }
    /* opposite workers cancel: the mean is 0, sgn(0) = +1 with scale 0 */
    float b[16];
    for (int j = 0; j < 16; j++)
        b[j] = -a[j];
    const float *ptr2[2] = {a, b};
    algo_onebit_release(&ob);
    cr_assert_eq(algo_onebit_init(&ob, n, d, 0, NULL), 0);
    algo_onebit_allreduce(&ob, ptr2, out);
    for (int j = 0; j < 16; j++)
        cr_assert_eq(out[j], 0.0f);
    algo_onebit_release(&ob);
}

static void run_model(const char *const *sets, int nsets, int64_t iters, float *x)
{
    harness h;
    h_build(&h, test_base_ini, sets, nsets);
    h_run(&h, iters);
    float *scratch = malloc((size_t)h.env->d * sizeof *scratch);
    memcpy(x, h.vt->model(h.alg, scratch), (size_t)h.env->d * sizeof *x);
    free(scratch);
    h_free(&h);
}

/* freeze_step >= the rounds run: dense Adam (decoupled decay, no bias
 * correction) and dense LAMB, bit for bit up to 1e-5. */
Test(onebit, warmup_only_equals_adamw_and_lamb)
{
    const int64_t d = 44, iters = 60;
    float ref[44], got[44];
    const char *a_ref[] = {"algorithm.name=allreduce_sgd", "algorithm.optimizer=adamw",
                           "algorithm.bias_correction=false", "algorithm.lr=0.01",
                           "algorithm.weight_decay=1e-3"};
    const char *a_got[] = {"algorithm.name=onebit_adam", "algorithm.freeze_step=1000",
                           "algorithm.lr=0.01", "algorithm.weight_decay=1e-3"};
    run_model(a_ref, 5, iters, ref);
    run_model(a_got, 4, iters, got);
    double gap = max_rel_gap(ref, got, d);
    cr_assert_leq(gap, 1e-5, "adam: gap %g", gap);

    const char *l_ref[] = {"algorithm.name=allreduce_sgd", "algorithm.optimizer=lamb",
                           "algorithm.bias_correction=false", "algorithm.lr=0.01",
                           "algorithm.weight_decay=1e-3"};
    const char *l_got[] = {"algorithm.name=onebit_lamb", "algorithm.freeze_step=1000",
                           "algorithm.lr=0.01", "algorithm.weight_decay=1e-3"};
    run_model(l_ref, 5, iters, ref);
    run_model(l_got, 4, iters, got);
    gap = max_rel_gap(ref, got, d);
    cr_assert_leq(gap, 1e-5, "lamb: gap %g", gap);

    /* an early freeze changes the trajectory but stays close and finite */
    const char *a_c[] = {"algorithm.name=onebit_adam", "algorithm.freeze_step=20",
                         "algorithm.lr=0.01", "algorithm.weight_decay=1e-3"};
    run_model(a_ref, 5, iters, ref);
    run_model(a_c, 4, iters, got);
    gap = max_rel_gap(ref, got, d);
    cr_assert_gt(gap, 1e-6, "adam compressed: gap %g", gap);
    cr_assert_lt(gap, 0.5, "adam compressed: gap %g", gap);
    const char *l_c[] = {"algorithm.name=onebit_lamb", "algorithm.freeze_step=20",
                         "algorithm.lr=0.01", "algorithm.weight_decay=1e-3"};
    run_model(l_ref, 5, iters, ref);
    run_model(l_c, 4, iters, got);
    gap = max_rel_gap(ref, got, d);
    cr_assert_gt(gap, 1e-6, "lamb compressed: gap %g", gap);
    cr_assert_lt(gap, 0.5, "lamb compressed: gap %g", gap);
}

static const char *const star_ini = "[experiment]\n"
                                    "seed = 5\n"
                                    "max_epochs = 0\n"
                                    "max_iterations = 50\n"
                                    "eval_every = 25\n"
                                    "eval_train_samples = 200\n"
                                    "[workers]\n"
                                    "count = 4\n"
                                    "compute = constant(10ms)\n"
                                    "[network]\n"
                                    "topology = star\n"
                                    "[algorithm]\n"
                                    "name = onebit_adam\n"
                                    "lr = 0.01\n"
                                    "batch = 16\n"
                                    "[workload]\n"
                                    "model = softmax\n"
                                    "dataset = blobs(4, 10, 2000)\n"
                                    "sim_params = 10000\n";

/* Warm-up rounds: the ring all-reduce, 2(n-1)/n x S per worker (S = 4d or
 * 2d with fp16); compressed rounds: 2(n-1)(d_pad/(8n) + 4) per worker,
 * d_pad = 10016 for n = 4, d_wire = 10000. */
Test(onebit, network_carries_exact_message_sizes)
{
    const double n = 4, T = 50, W = 10, dw = 10000;
    const char *s1[] = {"algorithm.freeze_step=10"};
    sim_run_result r = test_run_ini(star_ini, s1, 1, NULL);
    cr_assert_eq(r.iterations, 50);
    double comp = n * 2 * (n - 1) * (10016.0 / 32 + 4);
    cr_assert_eq(r.bytes_sent, W * 2 * (n - 1) * 4 * dw + (T - W) * comp, "%g", r.bytes_sent);

    const char *s2[] = {"algorithm.freeze_step=10", "workload.wire_dtype=fp16"};
    r = test_run_ini(star_ini, s2, 2, NULL);
    cr_assert_eq(r.bytes_sent, W * 2 * (n - 1) * 2 * dw + (T - W) * comp, "%g", r.bytes_sent);

    const char *s3[] = {"algorithm.freeze_step=0", "algorithm.name=onebit_lamb"};
    r = test_run_ini(star_ini, s3, 2, NULL);
    cr_assert_eq(r.bytes_sent, T * comp, "%g", r.bytes_sent);
}

Test(onebit, bad_keys_are_config_errors)
{
    sim_experiment_init();
    sim_config cfg;
    sim_err err = {0};
    const char *sets[] = {"algorithm.freeze_step=-1"};
    cr_assert_eq(sim_config_load_string("c.ini", star_ini, sets, 1, &cfg, &err), 0, "%s",
                 err.msg);
    sim_run_opts opts = {0};
    sim_run_result res;
    cr_assert_neq(sim_experiment_run(&cfg, &opts, &res, &err), 0);
    cr_assert_not_null(strstr(err.msg, "freeze_step"), "%s", err.msg);
    sim_config_release(&cfg);
}

/* ---- onebit_lamb against a hand-written reference ----
 *
 * The update rules of docs/algorithms.md 7.1 and 7.3 written out plainly
 * (float values, double norms), driven by the gradients the method's
 * workers computed in each round (read at the round's iteration hook,
 * before any worker starts the next step). 4 workers, mlp(3) on blobs
 * (d = 49 in two layers, padded to 64), freeze_step 3 and 9 rounds: 3 dense LAMB rounds,
 * the freeze, 6 rounds of 1-bit compressed momentum with both error
 * buffers. Weight decay 0.3 (so rho matters) and factor_threshold 0.02 (so
 * the bound around f_last is reached). The model must agree after every
 * round to 1e-5. */

#define RN 4
#define RD 49   /* mlp(3) on blobs(4, 10): fc1 10 x 3 + 3, out 3 x 4 + 4 */
#define RDP 64  /* 49 padded to a multiple of 8 n = 32 */

typedef struct lamb_ref {
    int freeze, k, nl;
    int64_t off[4], len[4];
    double lr, b1, b2, eps, wd, min_tr, max_tr, cb, fmax_, fmin_, phi;
    float x[RD], m[RD], v[RD], vf[RD];
    double c[4], kappa[4], f_last[4];
    float we[RN][RDP], se[RDP];
    double worst;
} lamb_ref;

static lamb_ref R;

/* v <- s sgn(v), s = ||v|| / sqrt(len); e <- v - s sgn(v) */
static void ref_sign(float *v, float *e, int64_t len)
{
    double q = 0;
    for (int64_t j = 0; j < len; j++)
        q += (double)v[j] * v[j];
    float s = (float)(sqrt(q) / sqrt((double)len));
    for (int64_t j = 0; j < len; j++) {
        float out = v[j] >= 0 ? s : -s;
        e[j] = v[j] - out;
        v[j] = out;
    }
}

static void ref_round(lamb_ref *r, const float *const *g)
{
    const float b1 = (float)r->b1, b2 = (float)r->b2, eps = (float)r->eps, wd = (float)r->wd;
    const float lr = (float)r->lr;
    r->k++;
    if (r->k <= r->freeze) {
        /* dense LAMB, no bias correction; c_l tracks the trust ratio */
        float gb[RD];
        for (int j = 0; j < RD; j++) {
            float s = 0;
            for (int i = 0; i < RN; i++)
                s += g[i][j];
            gb[j] = s * (1.0f / RN);
        }
        for (int l = 0; l < r->nl; l++) {
            float u[RD];
            double xn = 0, un = 0;
            for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++) {
                r->v[j] = b2 * r->v[j] + (1 - b2) * gb[j] * gb[j];
                r->m[j] = b1 * r->m[j] + (1 - b1) * gb[j];
                u[j] = r->m[j] / (sqrtf(r->v[j]) + eps) + wd * r->x[j];
                xn += (double)r->x[j] * r->x[j];
                un += (double)u[j] * u[j];
            }
            double coeff = 1;
            if (xn > 0 && un > 0)
                coeff = fmin(fmax(sqrt(xn) / sqrt(un), r->min_tr), r->max_tr);
            if (coeff != 1)
                r->c[l] = r->cb * r->c[l] + (1 - r->cb) * coeff;
            for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++)
                r->x[j] -= lr * ((float)coeff * u[j]);
        }
        return;
    }
    if (r->k == r->freeze + 1) {
        /* the freeze: v_fresh = v; kappa_l = mean r / r_l, r_l = ||m_l|| / sqrt(d_l) */
        memcpy(r->vf, r->v, sizeof r->v);
        double rl[4], rbar = 0;
        for (int l = 0; l < r->nl; l++) {
            double q = 0;
            for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++)
                q += (double)r->m[j] * r->m[j];
            rl[l] = sqrt(q / (double)r->len[l]);
            rbar += rl[l] / r->nl;
        }
        for (int l = 0; l < r->nl; l++) {
            r->kappa[l] = rbar / rl[l];
            r->f_last[l] = 0; /* none yet */
        }
    }
    /* workers: c_i = kappa (b1 m + (1 - b1) g_i) + e_i, 1-bit with error */
    float q[RN][RDP];
    for (int i = 0; i < RN; i++) {
        for (int j = 0; j < RDP; j++)
            q[i][j] = 0;
        for (int l = 0; l < r->nl; l++)
            for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++)
                q[i][j] = (float)r->kappa[l] * (b1 * r->m[j] + (1 - b1) * g[i][j]);
        for (int j = 0; j < RDP; j++)
            q[i][j] += r->we[i][j];
        ref_sign(q[i], r->we[i], RDP);
    }
    /* servers: chunk c of RDP / RN values, a = mean_i q_i + e^s, 1-bit with error */
    float a[RDP];
    for (int j = 0; j < RDP; j++) {
        float s = 0;
        for (int i = 0; i < RN; i++)
            s += q[i][j];
        a[j] = s * (1.0f / RN) + r->se[j];
    }
    for (int c = 0; c < RN; c++)
        ref_sign(a + c * (RDP / RN), r->se + c * (RDP / RN), RDP / RN);
    /* the update: m unscaled, gradient recovered, fresh variance, factor */
    for (int l = 0; l < r->nl; l++) {
        double f = 0, pn = 0, un = 0;
        for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++) {
            float mn = a[j] / (float)r->kappa[l];
            float gh = (mn - b1 * r->m[j]) / (1 - b1);
            r->vf[j] = b2 * r->vf[j] + (1 - b2) * gh * gh;
            r->m[j] = mn;
            double ratio = ((double)sqrtf(r->v[j]) + r->eps) / ((double)sqrtf(r->vf[j]) + r->eps);
            f = fmax(f, ratio);
            double p = mn / (sqrtf(r->v[j]) + eps);
            pn += p * p;
            un += (p + r->wd * r->x[j]) * (p + r->wd * r->x[j]);
        }
        if (r->wd > 0) {
            double rho = fmin(1.0, sqrt(pn / un));
            f = rho * f + (1 - rho);
        }
        f = fmin(fmax(f, r->fmin_), r->fmax_);
        if (r->f_last[l] > 0)
            f = fmin(fmax(f, (1 - r->phi) * r->f_last[l]), (1 + r->phi) * r->f_last[l]);
        r->f_last[l] = f;
        for (int64_t j = r->off[l]; j < r->off[l] + r->len[l]; j++) {
            float u = r->m[j] / (sqrtf(r->v[j]) + eps) + wd * r->x[j];
            r->x[j] -= lr * (float)(r->c[l] * f) * u;
        }
    }
}

static void lamb_probe(harness *h)
{
    const float *g[RN];
    for (int i = 0; i < RN; i++)
        g[i] = h->env->w[i].grad;
    ref_round(&R, g);
    float scratch[RD];
    const float *x = h->vt->model(h->alg, scratch);
    double gap = 0, scale = 0;
    for (int j = 0; j < RD; j++) {
        gap = fmax(gap, fabs((double)x[j] - R.x[j]));
        scale = fmax(scale, fabs((double)R.x[j]));
    }
    cr_assert_leq(gap / scale, 1e-5, "round %d: gap %g", R.k, gap / scale);
    R.worst = fmax(R.worst, gap / scale);
}

Test(onebit, lamb_matches_a_hand_written_reference)
{
    const char *sets[] = {"algorithm.name=onebit_lamb", "algorithm.freeze_step=3",
                          "algorithm.lr=0.02", "algorithm.weight_decay=0.3",
                          "workers.count=4", "workload.model=mlp(3)",
                          "algorithm.factor_threshold=0.02"};
    harness h;
    h_build(&h, test_base_ini, sets, 7);
    cr_assert_eq(h.env->d, RD);
    cr_assert_eq(h.env->n, RN);
    memset(&R, 0, sizeof R);
    R.freeze = 3;
    R.nl = h.env->model->n_layers;
    cr_assert(R.nl >= 2 && R.nl <= 4, "%d layers", R.nl);
    for (int l = 0; l < R.nl; l++) {
        R.off[l] = h.env->model->layers[l].offset;
        R.len[l] = h.env->model->layers[l].size;
    }
    R.lr = 0.02;
    R.wd = 0.3;
    R.b1 = h.cfg.beta1;
    R.b2 = h.cfg.beta2;
    R.eps = h.cfg.eps;
    R.min_tr = h.cfg.lamb_min_trust;
    R.max_tr = h.cfg.lamb_max_trust;
    R.cb = 0.9;     /* the documented defaults of coeff_beta, factor_max */
    R.fmax_ = 4.0;  /* and factor_min; a small factor_threshold, so that */
    R.fmin_ = 0.5;  /* the bound around f_last is reached */
    R.phi = 0.02;
    float scratch[RD];
    memcpy(R.x, h.vt->model(h.alg, scratch), sizeof R.x);
    h.probe = lamb_probe;
    h_run(&h, 9);
    cr_assert_eq(R.k, 9);
    /* the compressed rounds moved the model (the check is not vacuous) */
    cr_assert_gt(R.kappa[0], 0);
    h_free(&h);
}
