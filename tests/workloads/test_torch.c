/* torch(FILE) (workloads/torch.c, torch_helper.c, python/torch_helper.py):
 * the same loss and gradient as the built-in mlp(256) at the same vector
 * and batch, batched and looped; every bad input ending with a message that
 * names the file and carries Python's error (at create time: no run; a
 * helper killed or raising mid-run: the run failed); identical rows twice
 * and at two threads. Every test is skipped, with the reason printed, when
 * the interpreter (DTSIM_PYTHON, else /usr/bin/python3) cannot import
 * torch and functorch. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"
#include "workloads/model.h"

static void need_torch(void)
{
    const char *py = getenv("DTSIM_PYTHON");
    if (!py || !*py)
        py = "/usr/bin/python3";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch, functorch' >/dev/null 2>&1", py);
    if (system(cmd) != 0) {
        printf("# skipped: %s cannot import torch and functorch (python3-torch)\n", py);
        cr_skip_test("%s cannot import torch and functorch (python3-torch)", py);
    }
}

static wl_dataset shape(int dim, int classes)
{
    wl_dataset ds;
    memset(&ds, 0, sizeof ds);
    ds.dim = dim;
    ds.classes = classes;
    strcpy(ds.name, "blobs");
    return ds;
}

static wl_model *torch_model(const char *file, const wl_dataset *ds, const char *batched,
                             sim_err *err)
{
    char spec[4400];
    snprintf(spec, sizeof spec, "torch(%.4300s)", file);
    wl_model_opts o = {.torch_batched = batched, .seed = 1};
    return wl_model_create_opts(spec, ds, &o, err);
}

/* max |a - b| / max |a| */
static double rel_diff(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)a[i] - (double)b[i]));
        den = fmax(den, fabs((double)a[i]));
    }
    return num / den;
}

Test(torch, mlp_equal)
{
    need_torch();
    enum { DIM = 20, C = 4, B = 16 };
    wl_dataset ds = shape(DIM, C);
    sim_err err = {0};
    wl_model *mlp = wl_model_create("mlp(256)", &ds, &err);
    cr_assert_not_null(mlp, "%s", err.msg);
    const char *file = test_source_path("experiments/torch/mlp_equal.py");
    const char *modes[] = {"on", "off"};
    for (int mode = 0; mode < 2; mode++) {
        wl_model *tm = torch_model(file, &ds, modes[mode], &err);
        cr_assert_not_null(tm, "%s", err.msg);
        const int64_t d = mlp->n_params;
        cr_assert_eq(tm->n_params, d, "torch %lld parameters, mlp %lld",
                     (long long)tm->n_params, (long long)d);
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(r, 37);
        float *p = malloc(2 * (size_t)d * sizeof *p), *g0 = malloc((size_t)d * sizeof *g0);
        float *g1 = malloc(2 * (size_t)d * sizeof *g1), x[2 * B * DIM], y[2 * B];
        float *ws = malloc(wl_model_workspace_floats(mlp, B) * sizeof *ws);
        mlp->vt->init(mlp, p, r);
        mlp->vt->init(mlp, p + d, r);
        for (int i = 0; i < 2 * B * DIM; i++)
            x[i] = (float)gsl_ran_gaussian(r, 1.0);
        for (int i = 0; i < 2 * B; i++)
            y[i] = (float)gsl_rng_uniform_int(r, C);
        /* two workers in one request, each against the built-in model */
        wl_grad_req rq[2] = {
            {.worker = 0, .params = p, .x = x, .y = y, .b = B, .grad = g1},
            {.worker = 1, .params = p + d, .x = x + B * DIM, .y = y + B, .b = B, .grad = g1 + d},
        };
        cr_assert_eq(tm->vt->loss_grad_many(tm, rq, 2, &err), 0, "%s", err.msg);
        for (int k = 0; k < 2; k++) {
            double l0 = mlp->vt->loss_grad(mlp, p + k * d, x + k * B * DIM, y + k * B, B, g0, ws);
            cr_assert(fabs(rq[k].loss - l0) <= 1e-5 * fabs(l0), "%s worker %d: loss %.9g vs %.9g",
                      modes[mode], k, rq[k].loss, l0);
            double rd = rel_diff(g0, g1 + k * d, d);
            cr_assert(rd <= 1e-5, "%s worker %d: gradient differs by %.3g relative", modes[mode],
                      k, rd);
        }
        /* the single path and evaluation */
        double l1 = tm->vt->loss_grad(tm, p, x, y, B, g1, NULL);
        double l0 = mlp->vt->loss_grad(mlp, p, x, y, B, g0, ws);
        cr_assert(fabs(l1 - l0) <= 1e-5 * fabs(l0));
        wl_eval e0 = mlp->vt->evaluate(mlp, p, x, y, 2 * B, ws, B);
        wl_eval e1 = tm->vt->evaluate(tm, p, x, y, 2 * B, NULL, B);
        cr_assert(fabs(e1.loss - e0.loss) <= 1e-5 * fabs(e0.loss), "eval %.9g vs %.9g", e1.loss,
                  e0.loss);
        cr_assert_float_eq(e1.accuracy, e0.accuracy, 1e-12);
        cr_assert_eq(wl_model_failed(tm, &err), 0);
        free(p);
        free(g0);
        free(g1);
        free(ws);
        gsl_rng_free(r);
        wl_model_destroy(tm);
    }
    wl_model_destroy(mlp);
}

typedef struct bad_module {
    const char *text;     /* NULL: no file at all */
    const char *batched;
    const char *needle;   /* in the message, beside the file's name */
} bad_module;

#define PRELUDE "import torch, torch.nn as nn\n"

Test(torch, create_errors)
{
    need_torch();
    static const bad_module cases[] = {
        {NULL, "auto", "cannot read the module's file"},
        {PRELUDE "def modle(shape, classes):\n    return nn.Linear(8, classes)\n", "auto",
         "defines no function model(shape, classes)"},
        {PRELUDE "def model(shape, classes):\n    raise ValueError('boom 37')\n", "auto",
         "ValueError: boom 37"},
        {PRELUDE "def model(shape, classes)\n    return 1\n", "auto", "SyntaxError"},
        {PRELUDE "def model(shape, classes):\n    return 3\n", "auto", "not a torch.nn.Module"},
        {PRELUDE "def model(shape, classes):\n    return nn.Linear(shape[0], classes + 1)\n",
         "auto", "output has shape (2, 4) for a batch of 2; expected (2, 3)"},
        {PRELUDE "class M(nn.Module):\n    def __init__(s, c):\n        super().__init__()\n"
                 "        s.l = nn.Linear(8, c)\n"
                 "    def forward(s, x):\n        return s.l(x) * float('nan')\n"
                 "def model(shape, classes):\n    return M(classes)\n",
         "auto", "the loss is not finite (nan) at the initial parameters"},
        {PRELUDE "def model(shape, classes):\n"
                 "    return nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), "
                 "nn.Linear(8, classes))\n",
         "on", "the module has buffers"},
    };
    wl_dataset ds = shape(8, 3);
    const char *dir = test_tmpdir();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32], path[4200];
        snprintf(name, sizeof name, "bad%zu.py", i);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (cases[i].text)
            test_write_file(dir, name, cases[i].text);
        sim_err err = {0};
        wl_model *m = torch_model(path, &ds, cases[i].batched, &err);
        cr_assert_null(m, "case %zu: created", i);
        cr_assert_eq(err.code, SIM_ECONFIG, "case %zu: code %d: %s", i, err.code, err.msg);
        cr_assert(strstr(err.msg, path), "case %zu: no file name in: %s", i, err.msg);
        cr_assert(strstr(err.msg, cases[i].needle), "case %zu: '%s' not in: %s", i,
                  cases[i].needle, err.msg);
    }
    /* an interpreter that does not exist */
    char *old = getenv("DTSIM_PYTHON") ? strdup(getenv("DTSIM_PYTHON")) : NULL;
    setenv("DTSIM_PYTHON", "/nonexistent/python3", 1);
    const char *ok = test_write_file(dir, "ok.py", PRELUDE "def model(shape, classes):\n"
                                                           "    return nn.Linear(8, classes)\n");
    sim_err err = {0};
    wl_model *m = torch_model(ok, &ds, "auto", &err);
    if (old) {
        setenv("DTSIM_PYTHON", old, 1);
        free(old);
    } else {
        unsetenv("DTSIM_PYTHON");
    }
    cr_assert_null(m);
    cr_assert(strstr(err.msg, "cannot start the Python interpreter '/nonexistent/python3'"),
              "%s", err.msg);
}

/* A module that dies (signal 9) or raises on a batch of 7 or 5. */
#define DYING                                                                          \
    PRELUDE "import os, sys\n"                                                        \
            "class M(nn.Module):\n    def __init__(s, f, c):\n        super().__init__()\n" \
            "        s.l = nn.Linear(f, c)\n"                                             \
            "    def forward(s, x):\n"                                                    \
            "        if x.shape[-2] == 7:\n"                                              \
            "            sys.stderr.write('last words 37\\n'); sys.stderr.flush()\n"      \
            "            os.kill(os.getpid(), 9)\n"                                       \
            "        if x.shape[-2] == 5:\n"                                              \
            "            raise RuntimeError('mid-run 37')\n"                              \
            "        return s.l(x)\n"                                                     \
            "def model(shape, classes):\n    return M(shape[0], classes)\n"

Test(torch, mid_run_failures)
{
    need_torch();
    wl_dataset ds = shape(8, 3);
    const char *file = test_write_file(test_tmpdir(), "dying.py", DYING);
    const int bs[] = {7, 5};
    const char *needle[] = {"the PyTorch helper was killed by signal 9", "RuntimeError: mid-run 37"};
    for (int k = 0; k < 2; k++) {
        sim_err err = {0};
        wl_model *m = torch_model(file, &ds, "off", &err);
        cr_assert_not_null(m, "%s", err.msg);
        float p[27] = {0}, g[27], x[7 * 8] = {0}, y[7] = {0};
        wl_grad_req rq = {.worker = 0, .params = p, .x = x, .y = y, .b = 3, .grad = g};
        cr_assert_eq(m->vt->loss_grad_many(m, &rq, 1, &err), 0, "%s", err.msg);
        rq.b = bs[k];
        cr_assert_lt(m->vt->loss_grad_many(m, &rq, 1, &err), 0);
        cr_assert(strstr(err.msg, file), "%s", err.msg);
        cr_assert(strstr(err.msg, needle[k]), "'%s' not in: %s", needle[k], err.msg);
        if (k == 0)
            cr_assert(strstr(err.msg, "last words 37"), "no stderr tail in: %s", err.msg);
        /* sticky: every later call and the model's status give the same error */
        sim_err again = {0};
        rq.b = 3;
        cr_assert_lt(m->vt->loss_grad_many(m, &rq, 1, &again), 0);
        cr_assert_str_eq(again.msg, err.msg);
        cr_assert(isnan(m->vt->loss_grad(m, p, x, y, 3, g, NULL)));
        cr_assert_lt(wl_model_failed(m, &again), 0);
        wl_model_destroy(m);
    }
}

static const char *const run_ini = "[experiment]\n"
                                   "seed = 3\n"
                                   "max_epochs = 0\n"
                                   "max_iterations = 40\n"
                                   "eval_every = 10\n"
                                   "[workers]\n"
                                   "count = 4\n"
                                   "compute = lognormal(10ms, 0.3)\n"
                                   "[workload]\n"
                                   "model = torch(mlp_equal.py)\n"
                                   "dataset = blobs(4, 10, 400)\n"
                                   "[algorithm]\n"
                                   "name = ad_psgd\n"
                                   "batch = 8\n"
                                   "lr = 0.05\n";

/* Identical rows twice, at two threads, batched or not (asynchronous
 * gossip: gradients come one, two or four to an instant); the run records
 * how the helper computed. */
Test(torch, run_deterministic)
{
    need_torch();
    const char *dir = test_experiment_dir(run_ini);
    char exp[4200], ini[4300];
    snprintf(exp, sizeof exp, "%s/exp", dir);
    snprintf(ini, sizeof ini, "%s/e.ini", exp);
    FILE *src = fopen(test_source_path("experiments/torch/mlp_equal.py"), "r");
    cr_assert_not_null(src);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, src);
    fclose(src);
    text[n] = '\0';
    test_write_file(exp, "mlp_equal.py", text);
    char out[8192], args[8400];
    const char *db = test_db_path("torch.db");
    const char *sets[] = {"", " --threads 2", " --set workload.torch_batched=off"};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "run %s --db %s --quiet%s", ini, db, sets[i]);
        int rc = test_dtsim(dir, args, out, sizeof out);
        cr_assert_eq(rc, 0, "dtsim %s: %s", args, out);
    }
    cr_assert_str_eq(test_run_statuses(db), "done,done,done");
    cr_assert_eq(test_sql_int(db, "SELECT count(*) FROM metrics WHERE run_id = 1"), 5);
    for (int r = 2; r <= 3; r++) {
        char q[512];
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM metrics a JOIN metrics b ON a.iteration = b.iteration "
                 "WHERE a.run_id = 1 AND b.run_id = %d AND a.train_loss = b.train_loss AND "
                 "a.test_loss = b.test_loss AND a.sim_time = b.sim_time",
                 r);
        cr_assert_eq(test_sql_int(db, q), 5, "run %d differs from run 1", r);
    }
    char blas[256];
    test_sql_text(db, "SELECT blas FROM runs WHERE id = 1", blas, sizeof blas);
    cr_assert(strstr(blas, "torch on cpu, batched across workers (vmap)"), "%s", blas);
    test_sql_text(db, "SELECT blas FROM runs WHERE id = 3", blas, sizeof blas);
    cr_assert(strstr(blas, "torch on cpu, looped over workers"), "%s", blas);
}

/* A configuration error is exit 2 and no row; a helper dying mid-run marks
 * the run failed with its message. */
Test(torch, run_errors)
{
    need_torch();
    char ini[1024];
    snprintf(ini, sizeof ini, "%s", run_ini);
    char *m = strstr(ini, "mlp_equal.py");
    memcpy(m, "dying.py    ", 12);
    char *b = strstr(ini, "batch = 8");
    b[8] = '7';
    const char *dir = test_experiment_dir(ini);
    char exp[4200], out[8192], args[8400];
    snprintf(exp, sizeof exp, "%s/exp", dir);
    test_write_file(exp, "dying.py", DYING);
    const char *db = test_db_path("fail.db");
    snprintf(args, sizeof args, "run exp/e.ini --db %s --quiet", db);
    int rc = test_dtsim(dir, args, out, sizeof out);
    cr_assert_neq(rc, 0, "%s", out);
    cr_assert(strstr(out, "dying.py") && strstr(out, "killed by signal 9"), "%s", out);
    cr_assert_str_eq(test_run_statuses(db), "failed");
    /* no model(): exit 2, no row */
    test_write_file(exp, "dying.py", PRELUDE "x = 1\n");
    const char *db2 = test_db_path("cfg.db");
    snprintf(args, sizeof args, "run exp/e.ini --db %s --quiet", db2);
    rc = test_dtsim(dir, args, out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "defines no function model"), "%s", out);
    cr_assert_str_eq(test_run_statuses(db2), "");
}

/* BatchNorm's running statistics stay per worker: evaluation (worker 0's
 * buffers) sees what worker 0's steps did to them and nothing of worker
 * 1's. */
Test(torch, buffers_per_worker)
{
    need_torch();
    wl_dataset ds = shape(8, 3);
    const char *file = test_write_file(test_tmpdir(), "bn.py",
                                       PRELUDE "def model(shape, classes):\n"
                                               "    return nn.Sequential(nn.Linear(8, 8), "
                                               "nn.BatchNorm1d(8), nn.Linear(8, classes))\n");
    enum { B = 6 };
    float x[2 * B * 8], y[2 * B], g[2][8 * 9 + 16 + 3 * 9];
    for (int i = 0; i < 2 * B * 8; i++)
        x[i] = (float)((i * 37 % 23) - 11) / 3.0f + (i >= B * 8 ? 5.0f : 0.0f);
    for (int i = 0; i < 2 * B; i++)
        y[i] = (float)(i % 3);
    double loss[3];
    /* 0: worker 0 steps on A; 1: worker 1 steps on A; 2: worker 0 on A, worker 1 on B */
    for (int k = 0; k < 3; k++) {
        sim_err err = {0};
        wl_model *m = torch_model(file, &ds, "auto", &err);
        cr_assert_not_null(m, "%s", err.msg);
        cr_assert_eq(m->n_params, 8 * 9 + 16 + 3 * 9);
        float p[8 * 9 + 16 + 3 * 9];
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
        m->vt->init(m, p, r);
        gsl_rng_free(r);
        wl_grad_req rq[2] = {
            {.worker = k == 1 ? 1 : 0, .params = p, .x = x, .y = y, .b = B, .grad = g[0]},
            {.worker = 1, .params = p, .x = x + B * 8, .y = y + B, .b = B, .grad = g[1]},
        };
        cr_assert_eq(m->vt->loss_grad_many(m, rq, k == 2 ? 2 : 1, &err), 0, "%s", err.msg);
        loss[k] = m->vt->evaluate(m, p, x, y, 2 * B, NULL, 2 * B).loss;
        wl_model_destroy(m);
    }
    cr_assert(loss[0] != loss[1], "worker 0's statistics did not move: %g", loss[0]);
    cr_assert_eq(loss[0], loss[2], "worker 1's step reached worker 0's statistics: %.9g %.9g",
                 loss[0], loss[2]);
}

/* dataset = torch(FILE): FILE's dataset() tensors, with their image
 * geometry; a dataset() that raises names the file and the error. */
Test(torch, dataset_from_file)
{
    need_torch();
    const char *dir = test_tmpdir();
    test_write_file(dir, "data.py",
                    PRELUDE "def dataset():\n"
                            "    x = torch.arange(5 * 2 * 3 * 4, dtype=torch.float32)"
                            ".view(5, 2, 3, 4)\n"
                            "    y = torch.tensor([0, 1, 2, 1, 0])\n"
                            "    return x[:3], y[:3], x[3:], y[3:]\n");
    test_write_file(dir, "bad.py", PRELUDE "def dataset():\n    return 1 / 0\n");
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    wl_dataset_opts o = {.spec = "torch(data.py)", .rng = r, .dir = dir};
    sim_err err = {0};
    wl_dataset *ds = wl_dataset_create(&o, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    cr_assert_eq(ds->train.n, 3);
    cr_assert_eq(ds->test.n, 2);
    cr_assert_eq(ds->dim, 24);
    cr_assert_eq(ds->classes, 3);
    cr_assert(ds->channels == 2 && ds->height == 3 && ds->width == 4);
    cr_assert_float_eq(ds->train.x[24 + 5], 29.0f, 0);
    cr_assert_float_eq(ds->test.x[24 + 23], 4 * 24 + 23, 0);
    cr_assert_float_eq(ds->train.y[1], 1.0f, 0);
    cr_assert_float_eq(ds->test.y[0], 1.0f, 0);
    wl_dataset_destroy(ds);
    o.spec = "torch(bad.py)";
    cr_assert_null(wl_dataset_create(&o, &err));
    cr_assert_eq(err.code, SIM_ECONFIG, "%s", err.msg);
    cr_assert(strstr(err.msg, "bad.py") && strstr(err.msg, "ZeroDivisionError"), "%s", err.msg);
    gsl_rng_free(r);
}
