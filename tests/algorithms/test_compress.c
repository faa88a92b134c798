/* Compressors and error feedback (docs/algorithms.md section 1.7): top-k
 * with ratio 1 is the identity and its residual stays exactly 0, and
 * allreduce_sgd with topk(1.0) matches the dense method; the telescoping
 * identity sum_t Delta_t = sum_t u_t - e_T; the top-k contraction bound and
 * selection; the k rule and message sizes, and the bytes the network
 * carries in a run; bad specs and methods without compression are config
 * errors naming the key. */
#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/compress/compress.h"
#include "tests/algorithms/harness.h"

static algo_compressor *make(const char *spec)
{
    sim_err err = {0};
    algo_compressor *c = NULL;
    cr_assert_eq(algo_compress_create(spec, &c, &err), 0, "%s: %s", spec, err.msg);
    cr_assert_not_null(c, "%s: %s", spec, err.msg);
    return c;
}

static void fill_gauss(float *v, int64_t d, gsl_rng *r)
{
    for (int64_t j = 0; j < d; j++)
        v[j] = (float)gsl_ran_gaussian(r, 1.0);
}

Test(compress, k_rule_and_wire_sizes)
{
    algo_compressor *t = make("TopK( 0.05 )"), *none = make("none");
    cr_assert_str_eq(t->spec, "topk(0.05)");
    cr_assert_eq(t->vt->agg, ALGO_COMPRESS_ALLGATHER);
    cr_assert_eq(none->vt->agg, ALGO_COMPRESS_ALLREDUCE);
    /* k = min(d, max(1, llround(ratio d))) */
    const int64_t d[6] = {1, 10, 50, 70, 1000, 25557032};
    const int64_t k[6] = {1, 1, 3, 4, 50, 1277852};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(algo_compress_entries(t, d[i]), k[i], "d = %lld", (long long)d[i]);
        cr_assert_eq(t->vt->wire_bytes(t, d[i], 2), 8.0 * (double)k[i]);
        cr_assert_eq(none->vt->wire_bytes(none, d[i], 4), 4.0 * (double)d[i]);
        cr_assert_eq(none->vt->wire_bytes(none, d[i], 2), 2.0 * (double)d[i]);
    }
    algo_compressor *one = make("topk(1)"), *q = make("qsgd(4)");
    cr_assert_eq(algo_compress_entries(one, 44), 44);
    cr_assert_eq(algo_compress_entries(q, 44), 44); /* a NULL entries slot: dense */
    algo_compress_destroy(q);
    algo_compress_destroy(t);
    algo_compress_destroy(none);
    algo_compress_destroy(one);
    algo_compress_destroy(NULL);
}

/* Ratio 1 keeps everything: each message equals p bit for bit and the
 * residual is exactly 0 after every step. */
Test(compress, topk_ratio_one_keeps_residual_zero)
{
    const int64_t d = 37;
    algo_compressor *c = make("topk(1.0)");
    algo_compress_worker *w;
    sim_err err;
    cr_assert_eq(algo_compress_workers_create(c, 1, d, 1000, 4, 1, 5, &w, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(w->msg.bytes, 8000.0); /* the wire size is for d_wire = 1000 */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    float u[37];
    for (int t = 0; t < 20; t++) {
        fill_gauss(u, d, r);
        const algo_compress_msg *m = algo_compress_worker_encode(w, u);
        cr_assert_eq(m->nnz, d);
        for (int64_t j = 0; j < d; j++) {
            cr_assert_eq(m->indices[j], j);
            cr_assert_eq(m->values[j], u[j]);
            cr_assert_eq(w->residual[j], 0.0f);
        }
    }
    gsl_rng_free(r);
    algo_compress_workers_destroy(w, 1);
    algo_compress_destroy(c);
}

/* Error feedback: Delta_t = u_t + e_{t-1} - e_t, so sum_t Delta_t =
 * sum_t u_t - e_T (e_0 = 0). The inputs are multiples of 1/64 below 1 in
 * magnitude, so every float sum here is exact and the identity holds to
 * double precision. Without error feedback each message is C(u_t). */
Test(compress, error_feedback_telescopes)
{
    const int64_t d = 200;
    const int T = 40;
    algo_compressor *c = make("topk(0.1)");
    algo_compress_worker *w, *plain;
    sim_err err;
    cr_assert_eq(algo_compress_workers_create(c, 1, d, d, 4, 1, 5, &w, &err), 0, "%s", err.msg);
    cr_assert_eq(algo_compress_workers_create(c, 1, d, d, 4, 0, 5, &plain, &err), 0, "%s",
                 err.msg);
    cr_assert_null(plain->residual);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    float *u = malloc((size_t)d * sizeof *u), *dense = malloc((size_t)d * sizeof *dense);
    double *sum_delta = calloc((size_t)d, sizeof *sum_delta);
    double *sum_u = calloc((size_t)d, sizeof *sum_u);
    for (int t = 0; t < T; t++) {
        for (int64_t j = 0; j < d; j++) {
            u[j] = (float)((long)gsl_rng_uniform_int(r, 129) - 64) / 64.0f;
            sum_u[j] += u[j];
        }
        const algo_compress_msg *m = algo_compress_worker_encode(w, u);
        cr_assert_eq(m->nnz, 20);
        for (int64_t i = 0; i < m->nnz; i++)
            sum_delta[m->indices[i]] += m->values[i];
        /* without error feedback: the message is top-k of u itself */
        const algo_compress_msg *pm = algo_compress_worker_encode(plain, u);
        memset(dense, 0, (size_t)d * sizeof *dense);
        algo_compress_decode_add(c, pm, 1.0f, dense);
        for (int64_t i = 0; i < pm->nnz; i++)
            cr_assert_eq(pm->values[i], u[pm->indices[i]]);
    }
    double worst = 0, norm_e = 0;
    for (int64_t j = 0; j < d; j++) {
        double gap = fabs(sum_delta[j] - (sum_u[j] - (double)w->residual[j]));
        worst = gap > worst ? gap : worst;
        norm_e += (double)w->residual[j] * w->residual[j];
    }
    cr_assert_leq(worst, 1e-10, "telescoping gap %g", worst);
    cr_assert_gt(norm_e, 0.0); /* the residual is not trivially zero */
    gsl_rng_free(r);
    free(u);
    free(dense);
    free(sum_delta);
    free(sum_u);
    algo_compress_workers_destroy(w, 1);
    algo_compress_workers_destroy(plain, 1);
    algo_compress_destroy(c);
}

/* |C(v) - v|^2 <= (1 - k/d) |v|^2; exactly k entries, increasing indices,
 * the values of v, and no dropped entry larger than a kept one. */
Test(compress, topk_contracts_and_keeps_the_largest)
{
    const int64_t ds[5] = {1, 7, 100, 1000, 4099};
    const char *specs[6] = {"topk(0.001)", "topk(0.01)", "topk(0.1)", "topk(0.37)",
                            "topk(0.5)",   "topk(1)"};
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    for (int s = 0; s < 6; s++) {
        algo_compressor *c = make(specs[s]);
        for (int a = 0; a < 5; a++) {
            int64_t d = ds[a];
            algo_compress_worker *w;
            sim_err err;
            cr_assert_eq(algo_compress_workers_create(c, 1, d, d, 4, 0, 1, &w, &err), 0, "%s",
                         err.msg);
            algo_compress_msg m = w->msg; /* its buffers */
            float *v = malloc((size_t)d * sizeof *v), *out = malloc((size_t)d * sizeof *out);
            char *kept = malloc((size_t)d);
            for (int rep = 0; rep < 5; rep++) {
                fill_gauss(v, d, r);
                if (rep == 4) /* ties: magnitudes +-1 only */
                    for (int64_t j = 0; j < d; j++)
                        v[j] = v[j] < 0 ? -1.0f : 1.0f;
                c->vt->encode(c, v, d, NULL, &m);
                int64_t k = algo_compress_entries(c, d);
                cr_assert_eq(m.nnz, k);
                memset(kept, 0, (size_t)d);
                float min_kept = INFINITY, max_dropped = 0;
                for (int64_t i = 0; i < k; i++) {
                    int32_t j = m.indices[i];
                    cr_assert(j >= 0 && j < d);
                    cr_assert(i == 0 || j > m.indices[i - 1]);
                    cr_assert_eq(m.values[i], v[j]);
                    kept[j] = 1;
                    min_kept = fminf(min_kept, fabsf(v[j]));
                }
                for (int64_t j = 0; j < d; j++)
                    if (!kept[j])
                        max_dropped = fmaxf(max_dropped, fabsf(v[j]));
                cr_assert_geq(min_kept, max_dropped, "%s d=%lld", specs[s], (long long)d);
                if (rep == 4) /* equal magnitudes: the first k indices */
                    cr_assert_eq(m.indices[k - 1], k - 1);
                memcpy(out, v, (size_t)d * sizeof *out);
                algo_compress_decode_add(c, &m, -1.0f, out);
                double err2 = 0, norm2 = 0;
                for (int64_t j = 0; j < d; j++) {
                    err2 += (double)out[j] * out[j];
                    norm2 += (double)v[j] * v[j];
                    if (kept[j])
                        cr_assert_eq(out[j], 0.0f);
                }
                double bound = (1.0 - (double)k / (double)d) * norm2;
                cr_assert_leq(err2, bound * (1 + 1e-12) + 1e-30, "%s d=%lld: %g > %g",
                              specs[s], (long long)d, err2, bound);
            }
            free(v);
            free(out);
            free(kept);
            algo_compress_workers_destroy(w, 1);
        }
        algo_compress_destroy(c);
    }
    gsl_rng_free(r);
}

/* ---- allreduce_sgd with a compressor ---- */

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

/* topk(1.0) with error feedback sends every coordinate: the method is the
 * dense one up to rounding (x -= (1/n) sum lr g_i against x -= lr mean g),
 * also with momentum, because the workers' momenta average to the momentum
 * of the mean gradient. */
Test(compress, allreduce_topk_ratio_one_matches_dense)
{
    const int64_t d = 44, iters = 120;
    float dense[44], topk[44];
    const char *base[] = {"algorithm.name=allreduce_sgd", "algorithm.compressor=none"};
    const char *comp[] = {"algorithm.name=allreduce_sgd", "algorithm.compressor=topk(1.0)"};
    run_model(base, 2, iters, dense);
    run_model(comp, 2, iters, topk);
    double gap = max_rel_gap(dense, topk, d);
    cr_assert_leq(gap, 1e-5, "momentum 0: gap %g", gap);

    const char *base_m[] = {"algorithm.name=allreduce_sgd", "algorithm.compressor=none",
                            "algorithm.momentum=0.9", "algorithm.weight_decay=1e-3",
                            "algorithm.lr=0.02"};
    const char *comp_m[] = {"algorithm.name=allreduce_sgd", "algorithm.compressor=topk(1)",
                            "algorithm.momentum=0.9", "algorithm.weight_decay=1e-3",
                            "algorithm.lr=0.02"};
    run_model(base_m, 5, iters, dense);
    run_model(comp_m, 5, iters, topk);
    gap = max_rel_gap(dense, topk, d);
    cr_assert_leq(gap, 1e-5, "momentum 0.9: gap %g", gap);

    /* a real compression changes the trajectory */
    const char *comp_s[] = {"algorithm.name=allreduce_sgd", "algorithm.compressor=topk(0.1)"};
    run_model(base, 2, iters, dense);
    run_model(comp_s, 2, iters, topk);
    cr_assert_gt(max_rel_gap(dense, topk, d), 1e-3);
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
                                    "name = allreduce_sgd\n"
                                    "batch = 16\n"
                                    "[workload]\n"
                                    "model = softmax\n"
                                    "dataset = blobs(4, 10, 2000)\n";

/* The ring all-gather sends n(n-1) messages of 8k bytes per step: d = 44,
 * topk(0.1) -> k = 4; with sim_params = 10000 and topk(0.01), k = 100 (the
 * wire size follows d_wire while 1 of the 44 real entries is encoded). */
Test(compress, network_carries_exact_message_sizes)
{
    const int n = 4, T = 50;
    const char *s1[] = {"algorithm.compressor=topk(0.1)"};
    xp_run_result r = test_run_ini(star_ini, s1, 1, NULL);
    cr_assert_eq(r.iterations, T);
    cr_assert_eq(r.bytes_sent, (double)T * n * (n - 1) * 8 * 4);

    const char *s2[] = {"algorithm.compressor=topk(0.01)", "workload.sim_params=10000"};
    r = test_run_ini(star_ini, s2, 2, NULL);
    cr_assert_eq(r.bytes_sent, (double)T * n * (n - 1) * 8 * 100);

    /* none: the ring all-reduce of S = 4 d_wire bytes, 2(n-1) S per step */
    const char *s3[] = {"algorithm.compressor=none", "workload.sim_params=10000"};
    r = test_run_ini(star_ini, s3, 2, NULL);
    cr_assert_eq(r.bytes_sent, (double)T * 2 * (n - 1) * 4 * 10000);
}

/* ---- configuration ---- */

static void check_fails(const char *const *sets, int nsets, const char *want)
{
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "c.ini", star_ini, sets, nsets,
                                        &cfg, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(xp_experiment_check(&cfg, NULL, &err), SIM_ECONFIG, "%s", sets[0]);
    cr_assert(strstr(err.msg, want), "%s: got '%s', want '%s'", sets[0], err.msg, want);
    cfg_release(&cfg);
}

/* star_ini with method `name` and lines added to its [algorithm] section
 * (from line 15). */
static void file_fails(const char *name, const char *lines, const char *want)
{
    char ini[1024];
    const char *nm = strstr(star_ini, "name = allreduce_sgd\n");
    const char *at = strstr(star_ini, "batch = 16\n") + strlen("batch = 16\n");
    snprintf(ini, sizeof ini, "%.*sname = %s\nbatch = 16\n%s%s", (int)(nm - star_ini),
             star_ini, name, lines, at);
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "c.ini", ini, NULL, 0, &cfg,
                                        &err), 0, "%s", err.msg);
    cr_assert_eq(xp_experiment_check(&cfg, NULL, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, want), "got '%s', want '%s'", err.msg, want);
    cfg_release(&cfg);
}

Test(compress, bad_specs_and_methods_are_config_errors)
{
    const char *cases[][2] = {
        {"algorithm.compressor=topk(0)", "--set algorithm.compressor: topk: ratio must be in (0, 1], got 0"},
        {"algorithm.compressor=topk(2)", "--set algorithm.compressor: topk: ratio must be in (0, 1], got 2"},
        {"algorithm.compressor=topk(-0.5)", "topk: ratio must be in (0, 1], got -0.5"},
        {"algorithm.compressor=topk(x)", "topk: expected a ratio such as 0.01, got 'x'"},
        {"algorithm.compressor=topk", "--set algorithm.compressor: topk takes one argument"},
        {"algorithm.compressor=topk(0.1, 2)", "topk takes one argument"},
        {"algorithm.compressor=none(1)", "none takes no arguments"},
        {"algorithm.compressor=sign(1, 2)", "sign takes no arguments, got 2"},
        {"algorithm.compressor=randomk(0)", "randomk: ratio must be in (0, 1], got 0"},
        {"algorithm.compressor=randomk", "randomk takes one argument, the kept fraction, such as "
                                         "randomk(0.01); got 0"},
        {"algorithm.compressor=foo(1)", "--set algorithm.compressor: unknown compressor 'foo' "
                                        "(known: "},
        {"algorithm.compressor=topk((0.1)", "--set algorithm.compressor: compressor 'topk((0.1)'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_fails(&cases[i][0], 1, cases[i][1]);

    /* from the file: path:line */
    cfg_config cfg;
    sim_err err = {0};
    file_fails("allreduce_sgd", "compressor = topk(0)\n",
               "c.ini:15: [algorithm] compressor: topk: ratio");
    /* the lists in the messages are the registries' (no test pins them: a
     * new compressor or method is its three places and nothing else) */
    char want[1024], known[512];
    size_t at = 0;
    for (int i = 0; algo_compress_registry[i]; i++)
        at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", i ? ", " : "",
                               algo_compress_registry[i]->name);
    snprintf(want, sizeof want, "(known: %s)", known);
    const char *foo[] = {"algorithm.compressor=foo(1)"};
    check_fails(foo, 1, want);
    at = 0;
    for (int i = 0; algo_registry[i]; i++)
        if (algo_registry[i]->supports_compression)
            at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", at ? ", " : "",
                                   algo_registry[i]->name);
    cr_assert(strstr(known, "allreduce_sgd") && strstr(known, "dpsgd"), "%s", known);
    snprintf(want, sizeof want, "c.ini:17: [algorithm] compressor: dmsgd does not support "
             "compression (methods that do: %s; docs/compressors.md says why)", known);
    file_fails("dmsgd", "\n\ncompressor = topk(0.1)\n", want);

    /* methods without compression take only none */
    const char *dp[] = {"algorithm.compressor=topk(0.1)", "algorithm.name=decentlam"};
    check_fails(dp, 2, "--set algorithm.compressor: decentlam does not support compression");
    const char *as[] = {"algorithm.compressor=TopK(1)", "algorithm.name=asgd"};
    check_fails(as, 2, "asgd does not support compression");
    const char *ok[] = {"algorithm.compressor=None", "algorithm.name=dmsgd"};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "c.ini", star_ini, ok, 2, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(cfg.compressor, "none");
    cr_assert_eq(cfg.error_feedback, 1);
    cr_assert_eq(xp_experiment_check(&cfg, NULL, &err), 0, "%s", err.msg);
    cfg_release(&cfg);

    /* error feedback compresses a linear update: sgd only (refused at create) */
    const char *adam[] = {"algorithm.compressor=topk(0.1)", "algorithm.optimizer=adam"};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "c.ini", star_ini, adam, 2, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    xp_run_opts opts = {0};
    cr_assert_eq(xp_experiment_run(&cfg, &opts, NULL, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "--set algorithm.optimizer: allreduce_sgd takes only sgd (with a "
                              "compressor"),
              "%s", err.msg);
    cfg_release(&cfg);

    const char *canon[] = {"algorithm.compressor= TopK( 0.5 )", "algorithm.error_feedback=no"};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "c.ini", star_ini, canon, 2, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(cfg.compressor, "topk(0.5)");
    cr_assert_eq(cfg.error_feedback, 0);
    cfg_release(&cfg);
}

/* ---- randomk, qsgd, sign ---- */

Test(compress, randomk_qsgd_sign_sizes)
{
    algo_compressor *r = make("randomk(0.01)"), *q = make("qsgd(4, 512)"), *q1 = make("qsgd(1)");
    algo_compressor *s = make("sign");
    cr_assert_eq(r->vt->agg, ALGO_COMPRESS_ALLREDUCE);
    cr_assert_eq(r->vt->wire_bytes(r, 10000, 4), 400.0);
    /* 2 buckets x 4 bytes + 1000 x (1 + ceil(log2 5) = 4) bits */
    cr_assert_eq(q->vt->wire_bytes(q, 1000, 4), 8.0 + 500.0);
    /* qsgd(1): 2 bits a value, default bucket 512 -> 2 buckets */
    cr_assert_eq(q1->vt->wire_bytes(q1, 1000, 4), 8.0 + 250.0);
    cr_assert_eq(s->vt->wire_bytes(s, 1001, 2), 126.0 + 4.0);
    algo_compress_destroy(r);
    algo_compress_destroy(q);
    algo_compress_destroy(q1);
    algo_compress_destroy(s);
}

/* All workers draw the same index set (shared seed); ratio 1 keeps all. */
Test(compress, randomk_shares_the_support)
{
    algo_compressor *c = make("randomk(0.2)");
    algo_compress_worker *ws; /* workers 0 and 3 */
    cr_assert_eq(algo_compress_workers_create(c, 4, 50, 50, 4, 1, 9, &ws, NULL), 0);
    algo_compress_worker *a = &ws[0], *b = &ws[3];
    float u[50];
    for (int j = 0; j < 50; j++)
        u[j] = (float)j;
    for (int t = 0; t < 5; t++) {
        algo_compress_worker_encode(a, u);
        algo_compress_worker_encode(b, u);
        cr_assert_eq(a->msg.nnz, 10);
        cr_assert_eq(b->msg.nnz, 10);
        for (int i = 0; i < 10; i++)
            cr_assert_eq(a->msg.indices[i], b->msg.indices[i]);
    }
    algo_compress_workers_destroy(ws, 4);
    algo_compress_destroy(c);
}

/* Monte Carlo: mean within 4 standard errors of v (per coordinate) and
 * E|C(v) - v|^2 within 4 standard errors of the formula. */
static void check_unbiased(algo_compressor *c, const float *v, int64_t d, double want_var)
{
    enum { N = 20000 };
    algo_compress_worker *w;
    cr_assert_eq(algo_compress_workers_create(c, 1, d, d, 4, 0, 11, &w, NULL), 0);
    double sum[64] = {0}, sum2[64] = {0}, err = 0, err2 = 0;
    float out[64];
    for (int t = 0; t < N; t++) {
        memset(out, 0, sizeof out);
        algo_compress_decode_add(c, algo_compress_worker_encode(w, v), 1.0f, out);
        double e = 0;
        for (int64_t j = 0; j < d; j++) {
            sum[j] += out[j];
            sum2[j] += (double)out[j] * out[j];
            e += ((double)out[j] - v[j]) * ((double)out[j] - v[j]);
        }
        err += e;
        err2 += e * e;
    }
    for (int64_t j = 0; j < d; j++) {
        double m = sum[j] / N, var = sum2[j] / N - m * m;
        double se = sqrt(var / N);
        cr_assert_leq(fabs(m - v[j]), 4 * se + 1e-6, "%s: coordinate %lld mean %g, want %g",
                      c->spec, (long long)j, m, (double)v[j]);
    }
    double me = err / N, se = sqrt((err2 / N - me * me) / N);
    cr_assert_leq(fabs(me - want_var), 4 * se + 1e-9, "%s: variance %g, want %g (se %g)",
                  c->spec, me, want_var, se);
    algo_compress_workers_destroy(w, 1);
}

Test(compress, randomk_and_qsgd_unbiased_with_known_variance)
{
    /* randomk without error feedback: scaled d/k, variance (d/k - 1)|v|^2 */
    algo_compressor *r = make("randomk(0.25)");
    r->error_feedback = 0;
    float v[20];
    double n2 = 0;
    for (int j = 0; j < 20; j++) {
        v[j] = (float)(j - 7) * 0.5f;
        n2 += (double)v[j] * v[j];
    }
    check_unbiased(r, v, 20, (20.0 / 5.0 - 1.0) * n2);
    algo_compress_destroy(r);
    /* qsgd's worked case: v = (3, 4), N = 5, s = 2: s|v|/N = 1.2, 1.6, so
     * p = 0.2, 0.6 and E|Q(v) - v|^2 = (25/4)(0.16 + 0.24) = 2.5 */
    algo_compressor *q = make("qsgd(2)");
    const float w2[2] = {3.0f, -4.0f};
    check_unbiased(q, w2, 2, 2.5);
    algo_compress_destroy(q);
    /* buckets quantize separately: two buckets of 2 */
    algo_compressor *qb = make("qsgd(2, 2)");
    const float w4[4] = {3.0f, -4.0f, 0.0f, 1.0f};
    check_unbiased(qb, w4, 4, 2.5 + 0.0);
    algo_compress_destroy(qb);
}

Test(compress, sign_is_scaled_sign)
{
    algo_compressor *s = make("sign");
    algo_compress_worker *w;
    cr_assert_eq(algo_compress_workers_create(s, 1, 4, 4, 4, 0, 1, &w, NULL), 0);
    const float v[4] = {1.0f, -3.0f, 0.0f, 4.0f}; /* |v|_1 / d = 2 */
    const algo_compress_msg *m = algo_compress_worker_encode(w, v);
    const float want[4] = {2.0f, -2.0f, 2.0f, 2.0f};
    for (int j = 0; j < 4; j++)
        cr_assert_eq(m->values[j], want[j]);
    algo_compress_workers_destroy(w, 1);
    algo_compress_destroy(s);
}

/* randomk(1) sends everything: the dense method up to rounding; the ring
 * all-reduce of randomk carries 2(n-1) x 4k bytes per step. */
Test(compress, randomk_ratio_one_matches_dense_and_sizes)
{
    const int64_t d = 44, iters = 120;
    float dense[44], rk[44];
    const char *base[] = {"algorithm.name=allreduce_sgd", "algorithm.compressor=none",
                          "algorithm.momentum=0.9"};
    const char *comp[] = {"algorithm.name=allreduce_sgd", "algorithm.compressor=randomk(1)",
                          "algorithm.momentum=0.9"};
    run_model(base, 3, iters, dense);
    run_model(comp, 3, iters, rk);
    double gap = max_rel_gap(dense, rk, d);
    cr_assert_leq(gap, 1e-5, "gap %g", gap);
    const char *comp_n[] = {"algorithm.name=allreduce_sgd", "algorithm.compressor=randomk(1)",
                            "algorithm.momentum=0.9", "algorithm.error_feedback=false"};
    run_model(comp_n, 4, iters, rk);
    gap = max_rel_gap(dense, rk, d);
    cr_assert_leq(gap, 1e-5, "no error feedback: gap %g", gap);

    const int n = 4, T = 50;
    const char *s1[] = {"algorithm.compressor=randomk(0.01)", "workload.sim_params=10000"};
    xp_run_result r = test_run_ini(star_ini, s1, 2, NULL);
    cr_assert_eq(r.bytes_sent, (double)T * 2 * (n - 1) * 400);
    const char *s2[] = {"algorithm.compressor=qsgd(4)", "workload.sim_params=10000"};
    r = test_run_ini(star_ini, s2, 2, NULL);
    /* 20 buckets x 4 + 10000 x 4 bits */
    cr_assert_eq(r.bytes_sent, (double)T * n * (n - 1) * (80 + 5000));
    const char *s3[] = {"algorithm.compressor=sign", "workload.sim_params=10000"};
    r = test_run_ini(star_ini, s3, 2, NULL);
    cr_assert_eq(r.bytes_sent, (double)T * n * (n - 1) * (1250 + 4));
}

/* Compression time (docs/compressors.md): a step costs compute + encode
 * (c d_wire) + the collective + decode (c x the values decoded). topk(0.01)
 * of d_wire = 100000: k = 1000, 8000-byte messages; on a star at 8e6 B/s
 * and 1 ms a link, a ring all-gather step takes 8000/8e6 + 2 x 1 ms = 3 ms,
 * n - 1 = 3 steps. c = 1e-7 s: encode 10 ms, decode n k c = 0.4 ms. */
Test(compress, compression_time_is_charged_in_closed_form)
{
    const int n = 4, T = 50;
    const double c = 1e-7, d_wire = 100000, k = 1000, B = 8e6, a = 1e-3, compute = 0.010;
    const char *s1[] = {"algorithm.compressor=topk(0.01)", "workload.sim_params=100000",
                        "network.bandwidth=64Mbps", "network.latency=1ms",
                        "algorithm.compress_time_per_value=1e-7"};
    xp_run_result r = test_run_ini(star_ini, s1, 5, NULL);
    cr_assert_eq(r.iterations, T);
    double step = compute + c * d_wire + (n - 1) * (8 * k / B + 2 * a) + c * n * k;
    cr_assert_float_eq(r.sim_time, T * step, 1e-9, "%.9f vs %.9f", r.sim_time, T * step);

    /* without the charge: compute + all-gather only */
    s1[4] = "algorithm.compress_time_per_value=0";
    r = test_run_ini(star_ini, s1, 5, NULL);
    step = compute + (n - 1) * (8 * k / B + 2 * a);
    cr_assert_float_eq(r.sim_time, T * step, 1e-9, "%.9f vs %.9f", r.sim_time, T * step);

    /* randomk(0.01) is all-reduced: decoding reads one message of k values,
     * so the charge is c (d_wire + k) per step over the uncharged run */
    const char *s2[] = {"algorithm.compressor=randomk(0.01)", "workload.sim_params=100000",
                        "algorithm.compress_time_per_value=0"};
    xp_run_result r0 = test_run_ini(star_ini, s2, 3, NULL);
    s2[2] = "algorithm.compress_time_per_value=1e-7";
    xp_run_result r1 = test_run_ini(star_ini, s2, 3, NULL);
    cr_assert_float_eq(r1.sim_time - r0.sim_time, T * c * (d_wire + k), 1e-9, "%.9f",
                       r1.sim_time - r0.sim_time);

    /* a negative cost is a configuration error naming the key */
    const char *bad[] = {"algorithm.compressor=topk(0.01)",
                         "algorithm.compress_time_per_value=-1"};
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "c.ini", star_ini, bad, 2, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    xp_run_opts opts = {0};
    cr_assert_eq(xp_experiment_run(&cfg, &opts, NULL, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "--set algorithm.compress_time_per_value: must be >= 0"), "%s",
              err.msg);
    cfg_release(&cfg);
}
