/* The environment builder (experiment/env.h) and the env services built on
 * it: sizes taken from the config (proxy, wire type, server host,
 * collective, batch), check-only builds, borrowed datasets, errors naming
 * their key, growing batch buffers, algo_env_fail keeping the first error
 * and stopping the engine, series stamped with time and iteration, and
 * the file names of an experiment resolved against its folder. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/core/algo.h"
#include "algorithms/core/runner.h"
#include "experiment/env.h"
#include "experiment/experiment.h"
#include "sim/compute.h"
#include "sim/network.h"
#include "tests/common.h"
#include "workloads/presets.h"

#define MS (SIM_NS_PER_S / 1000)

static const char *const env_ini = "[experiment]\n"
                                   "seed = 11\n"
                                   "[workers]\n"
                                   "count = 4\n"
                                   "compute = constant(10ms)\n"
                                   "[algorithm]\n"
                                   "name = dpsgd\n"
                                   "batch = 8\n"
                                   "[workload]\n"
                                   "model = softmax\n"
                                   "dataset = blobs(3, 5, 600)\n";

static void load(cfg_config *cfg, const char *const *sets, int nsets)
{
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "e.ini", env_ini, sets, nsets,
                                        cfg, &err), 0, "%s",
                 err.msg);
}

static xp_env *build_ok(const cfg_config *cfg, const xp_env_opts *o)
{
    sim_err err = {0};
    xp_env *x = xp_env_create(cfg, o, &err);
    cr_assert_not_null(x, "%s", err.msg);
    return x;
}

Test(env, sizes_follow_the_config)
{
    const wl_proxy *p = wl_proxy_find("resnet50");
    cr_assert_not_null(p);
    cfg_config cfg;
    const char *sets[] = {"algorithm.name=asgd", "workload.proxy=resnet50",
                          "workload.wire_dtype=fp16", "network.collective=tree"};
    load(&cfg, sets, 4);
    xp_env *x = build_ok(&cfg, NULL);
    algo_env *env = xp_env_algo_env(x);
    cr_assert_str_eq(xp_env_vt(x)->name, "asgd");
    cr_assert_eq(env->n, 4);
    cr_assert_eq(env->d, 3 * 5 + 3);
    cr_assert_eq(env->msg_bytes, 2.0 * (double)p->params);
    cr_assert_eq(env->flops_per_sample, p->flops_per_sample);
    cr_assert_eq(env->server_host, 4, "asgd needs a parameter server, host n");
    cr_assert_geq(sim_net_n_hosts(xp_env_net(x)), 5);
    cr_assert_eq(env->allreduce_kind, SIM_COLL_TREE);
    cr_assert_null(env->graph, "asgd uses no logical graph");
    cr_assert_eq(xp_env_dataset(x)->train.n, 600);
    for (int i = 0; i < env->n; i++) {
        cr_assert_eq(env->w[i].batch, 8);
        cr_assert_eq(env->w[i].batch_cap, 8);
        cr_assert_eq(algo_env_step_samples(env, i), 8);
        /* init = same: every worker starts from worker 0's draw */
        cr_assert_eq(memcmp(env->w[i].x, env->w[0].x, (size_t)env->d * sizeof(float)), 0);
    }
    cr_assert_null(xp_env_state(x));
    xp_env_destroy(x);
    cfg_release(&cfg);

    /* dpsgd: no server, the logical graph and its mixing matrices */
    const char *sets2[] = {"workload.init=independent", "algorithm.batch=full"};
    load(&cfg, sets2, 2);
    x = build_ok(&cfg, NULL);
    env = xp_env_algo_env(x);
    cr_assert_eq(env->server_host, -1);
    cr_assert_eq(env->msg_bytes, 4.0 * (double)env->d);
    cr_assert_not_null(env->graph);
    cr_assert_not_null(env->mix);
    cr_assert_eq(env->allreduce_kind, SIM_COLL_RING);
    cr_assert_neq(memcmp(env->w[1].x, env->w[0].x, (size_t)env->d * sizeof(float)), 0,
                  "init = independent draws a model per worker");
    for (int i = 0; i < env->n; i++) {
        cr_assert_eq(env->w[i].batch, 0);
        cr_assert_eq(algo_env_step_samples(env, i), env->w[i].sampler.shard_n);
        cr_assert_geq(env->w[i].batch_cap, env->w[i].sampler.shard_n);
    }
    sim_err err = {0};
    cr_assert_eq(xp_env_algo_create(x, &err), 0, "%s", err.msg);
    cr_assert_not_null(xp_env_state(x));
    xp_env_destroy(x); /* the method's state too */
    cfg_release(&cfg);
}

Test(env, check_only_builds_no_workers_and_datasets_can_be_borrowed)
{
    cfg_config cfg;
    load(&cfg, NULL, 0);
    sim_err err = {0};
    wl_dataset *ds = xp_env_dataset_create(&cfg, &err);
    cr_assert_not_null(ds, "%s", err.msg);
    xp_env_opts o = {.dataset = ds, .check_only = 1};
    xp_env *x = build_ok(&cfg, &o);
    cr_assert_eq(xp_env_dataset(x), ds);
    cr_assert_null(xp_env_algo_env(x)->w);
    cr_assert_eq(xp_env_algo_create(x, &err), SIM_EINTERNAL);
    xp_env_destroy(x);
    /* the borrowed dataset outlives the environment, and serves another */
    o.check_only = 0;
    x = build_ok(&cfg, &o);
    cr_assert_eq(xp_env_dataset(x), ds);
    cr_assert_eq(xp_env_algo_env(x)->ds, ds);
    cr_assert_not_null(xp_env_algo_env(x)->w);
    xp_env_destroy(x);
    cr_assert_eq(ds->train.n, 600);
    wl_dataset_destroy(ds);
    cfg_release(&cfg);
}

static void build_fails(const char *const *sets, int nsets, int code, const char *want)
{
    cfg_config cfg;
    load(&cfg, sets, nsets);
    sim_err err = {0};
    cr_assert_null(xp_env_create(&cfg, NULL, &err));
    cr_assert_eq(err.code, code, "%s", err.msg);
    cr_assert(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
    cfg_release(&cfg);
}

Test(env, errors_name_their_key)
{
    const char *proxy[] = {"workload.proxy=resnet51"};
    build_fails(proxy, 1, SIM_ECONFIG, "--set workload.proxy: unknown proxy 'resnet51'");
    const char *torus[] = {"network.topology=torus(1, 3)"};
    build_fails(torus, 1, SIM_ECONFIG, "fewer than the 4 needed");
    const char *dir = test_tmpdir();
    char net[4200];
    snprintf(net, sizeof net, "network.topology=file(%s)",
             test_write_file(dir, "net.txt", "0 1\n2 3\n"));
    const char *islands[] = {net};
    build_fails(islands, 1, SIM_EINPUT, "net.txt: host 0 and host 2 are not connected");
    const char *part[] = {"workload.partition=dirichlet(-1)"};
    build_fails(part, 1, SIM_ECONFIG, "workload.partition");
    /* blobs(3, 5, 600): 600 training samples, 150 per worker */
    const char *big[] = {"algorithm.batch=151"};
    build_fails(big, 1, SIM_ECONFIG,
                "--set algorithm.batch: 151 is larger than worker 0's shard of 150 samples "
                "(600 training samples over 4 workers, partition iid); use at most 150, or "
                "full");
    const char *graph[] = {"algorithm.name=allreduce_sgd", "topology.graph=rnig"};
    build_fails(graph, 2, SIM_ECONFIG, "--set topology.graph: unknown graph 'rnig' (did you "
                                       "mean 'ring'?");
    const char *weights[] = {"algorithm.name=allreduce_sgd", "topology.graph=torus(3, 3)"};
    build_fails(weights, 2, SIM_ECONFIG, "--set topology.graph:");
    const char *fits[] = {"algorithm.batch=150"};
    cfg_config cfg;
    load(&cfg, fits, 1);
    xp_env_destroy(build_ok(&cfg, NULL));
    cfg_release(&cfg);
}

Test(env, batch_buffers_grow_only_past_their_capacity)
{
    cfg_config cfg;
    load(&cfg, NULL, 0);
    xp_env *x = build_ok(&cfg, NULL);
    algo_env *env = xp_env_algo_env(x);
    algo_worker *w = &env->w[1];
    float *bx = w->bx;
    cr_assert_eq(algo_env_set_batch(env, 1, 4), 0);
    cr_assert_eq(algo_env_set_batch(env, 1, 4), 0);
    cr_assert_eq(env->batch_changes, 1, "setting the same batch again changes nothing");
    cr_assert_eq(w->bx, bx, "a smaller batch keeps the buffers");
    cr_assert_eq(w->batch_cap, 8);
    cr_assert_eq(algo_env_step_samples(env, 1), 4);
    algo_env_grad(env, 1, w->x, w->grad);
    cr_assert_eq(w->samples, 4);
    cr_assert_eq(w->grad_samples, 4);
    cr_assert_eq(algo_env_set_batch(env, 1, 32), 0);
    cr_assert_eq(w->batch_cap, 32);
    algo_env_grad(env, 1, w->x, w->grad);
    cr_assert_eq(w->samples, 36);
    cr_assert_eq(w->grad_samples, 32);
    cr_assert_eq(algo_env_set_batch(env, 1, 0), 0); /* the whole shard */
    cr_assert_geq(w->batch_cap, w->sampler.shard_n);
    algo_env_grad(env, 1, w->x, w->grad);
    cr_assert_eq(w->grad_samples, w->sampler.shard_n);
    cr_assert_eq(env->batch_changes, 3);
    cr_assert_eq(env->w[0].batch, 8, "other workers keep theirs");
    cr_assert_eq(env->error.code, 0);
    cr_assert_eq(algo_env_set_batch(env, 1, -2), SIM_EINTERNAL);
    cr_assert(strstr(env->error.msg, "worker 1: invalid batch -2"), "%s", env->error.msg);
    xp_env_destroy(x);
    cfg_release(&cfg);
}

typedef struct probe {
    algo_env *env;
    int late_ran;
    int n_series;
    double t[4];
    int64_t it[4];
    int worker[4];
    char name[4][16];
    double value[4];
} probe;

static void on_fail_first(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)arg;
    (void)payload;
    probe *p = ctx;
    cr_assert_eq(algo_env_fail(p->env, SIM_EINPUT, "first failure: %d", 1), SIM_EINPUT);
    cr_assert_eq(algo_env_fail(p->env, 0, "second"), SIM_EINTERNAL);
}

static void on_late(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)arg;
    (void)payload;
    ((probe *)ctx)->late_ran = 1;
}

Test(env, fail_keeps_the_first_error_and_stops_the_engine)
{
    cfg_config cfg;
    load(&cfg, NULL, 0);
    xp_env *x = build_ok(&cfg, NULL);
    algo_env *env = xp_env_algo_env(x);
    sim_engine *eng = xp_env_engine(x);
    probe p = {.env = env};
    sim_engine_schedule(eng, MS, on_fail_first, &p, 0, NULL, NULL);
    sim_engine_schedule(eng, MS, on_late, &p, 0, NULL, NULL);
    sim_engine_run_until(eng, SIM_TIME_MAX);
    cr_assert_eq(env->error.code, SIM_EINPUT);
    cr_assert_str_eq(env->error.msg, "first failure: 1");
    cr_assert_eq(p.late_ran, 0, "the engine stops after the failing event");
    cr_assert_eq(sim_engine_pending(eng), 1);
    /* a send to a host that does not exist fails through the same path */
    sim_err_clear(&env->error);
    int rc = algo_env_send(env, 0, 99, 100.0, NULL, NULL, 0);
    cr_assert_lt(rc, 0);
    cr_assert_eq(env->error.code, rc);
    cr_assert(strstr(env->error.msg, "from host 0 to host 99"), "%s", env->error.msg);
    xp_env_destroy(x);
    cfg_release(&cfg);
}

static void on_series(void *exp, double t, int64_t it, int worker, const char *name,
                      double value)
{
    probe *p = exp;
    int k = p->n_series++;
    cr_assert_lt(k, 4);
    p->t[k] = t;
    p->it[k] = it;
    p->worker[k] = worker;
    snprintf(p->name[k], sizeof p->name[k], "%s", name);
    p->value[k] = value;
}

static void on_record(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)arg;
    (void)payload;
    probe *p = ctx;
    p->env->iterations = 7;
    algo_env_series(p->env, 2, "loss", 1.5);
    algo_env_series(p->env, -5, "dropped", 3.0);
}

Test(env, series_are_stamped_with_time_and_iteration)
{
    cfg_config cfg;
    load(&cfg, NULL, 0);
    xp_env *x = build_ok(&cfg, NULL);
    algo_env *env = xp_env_algo_env(x);
    probe p = {.env = env};
    algo_env_series(env, 0, "dropped", 1.0); /* no hook: nothing happens */
    env->run->hooks.series = on_series;
    env->run->hooks.exp = &p;
    sim_engine_schedule(xp_env_engine(x), 3 * MS, on_record, &p, 0, NULL, NULL);
    sim_engine_run_until(xp_env_engine(x), SIM_TIME_MAX);
    cr_assert_eq(p.n_series, 2);
    cr_assert_eq(p.t[0], 0.003);
    cr_assert_eq(p.it[0], 7);
    cr_assert_eq(p.worker[0], 2);
    cr_assert_str_eq(p.name[0], "loss");
    cr_assert_eq(p.value[0], 1.5);
    cr_assert_eq(p.worker[1], -1, "any negative worker is a global value");
    cr_assert_str_eq(p.name[1], "dropped");
    xp_env_destroy(x);
    cfg_release(&cfg);
}

/* A LIBSVM data set stays sparse for softmax (CSR rows, no dense batch
 * buffer) and its gradients match those of the dense copy that
 * [workload] sparse = off makes (same rows drawn, within 1e-5); a model
 * without sparse kernels gets the dense copy, and one too big for it is
 * refused naming [workload] dataset. */
Test(env, sparse_rows_match_their_dense_copy)
{
    const char *dir = test_tmpdir();
    char *text = malloc(64 * 1024);
    text[0] = '\0';
    for (int i = 0; i < 300; i++) {
        sprintf(text + strlen(text), "%d", i % 3);
        for (int j = 1; j <= 20; j++)
            if ((i * 7 + j * 13) % 5 == 0)
                sprintf(text + strlen(text), " %d:%.2f", j, (double)((i + j) % 9) / 4 - 1);
        strcat(text, "\n");
    }
    char spec[4200], dense_spec[4200], off[] = "workload.sparse=off";
    snprintf(spec, sizeof spec, "workload.dataset=libsvm(%s)",
             test_write_file(dir, "s.svm", text));
    free(text);
    snprintf(dense_spec, sizeof dense_spec, "%s", spec);
    const char *sets_sparse[] = {spec}, *sets_dense[] = {dense_spec, off};
    cfg_config cs, cd;
    load(&cs, sets_sparse, 1);
    load(&cd, sets_dense, 2);
    xp_env *xs = build_ok(&cs, NULL), *xd = build_ok(&cd, NULL);
    algo_env *es = xp_env_algo_env(xs), *ed = xp_env_algo_env(xd);
    cr_assert(es->ds->sparse == 1 && ed->ds->sparse == 0);
    cr_assert(es->w[2].bx == NULL && es->w[2].brows != NULL);
    cr_assert_eq(es->d, ed->d);
    for (int step = 0; step < 3; step++) {
        algo_env_grad(es, 2, es->w[2].x, es->w[2].grad);
        algo_env_grad(ed, 2, ed->w[2].x, ed->w[2].grad);
        for (int64_t j = 0; j < es->d; j++)
            cr_assert(fabsf(es->w[2].grad[j] - ed->w[2].grad[j]) <= 1e-5f,
                      "step %d grad[%lld] %.9g vs %.9g", step, (long long)j,
                      es->w[2].grad[j], ed->w[2].grad[j]);
    }
    cr_assert_eq(algo_env_set_batch(es, 2, 40), 0, "the row buffer grows");
    algo_env_grad(es, 2, es->w[2].x, es->w[2].grad);
    cr_assert_eq(es->w[2].grad_samples, 40);
    xp_env_destroy(xs);
    xp_env_destroy(xd);
    cfg_release(&cs);
    cfg_release(&cd);
    /* mlp has no sparse kernel: a dense copy */
    const char *sets_mlp[] = {spec, "workload.model=mlp(4)"};
    load(&cs, sets_mlp, 2);
    xs = build_ok(&cs, NULL);
    cr_assert_eq(xp_env_algo_env(xs)->ds->sparse, 0);
    xp_env_destroy(xs);
    cfg_release(&cs);
    /* 30 samples x 10^7 features is too big for a dense copy */
    char wide[64 * 30 + 1] = "";
    for (int i = 0; i < 30; i++)
        strcat(wide, i % 2 ? "1 10000000:1\n" : "0 1:2\n");
    snprintf(spec, sizeof spec, "workload.dataset=libsvm(%s)",
             test_write_file(dir, "wide.svm", wide));
    build_fails(sets_mlp, 2, SIM_EINPUT,
                "--set workload.dataset: dataset 'libsvm(");
    build_fails(sets_mlp, 2, SIM_EINPUT,
                "model mlp(4) (no sparse kernel) needs dense rows, and 30 samples x 10000000 "
                "features");
    const char *sets_wide[] = {spec, "workload.model=logreg", "workers.count=2"};
    load(&cs, sets_wide, 3);
    xs = build_ok(&cs, NULL); /* sparse: fits */
    algo_env *e = xp_env_algo_env(xs);
    cr_assert_eq(e->d, 10000001);
    algo_env_grad(e, 0, e->w[0].x, e->w[0].grad);
    cr_assert(isfinite(e->last_batch_loss));
    xp_env_destroy(xs);
    cfg_release(&cs);
}

/* ---- file names resolve against the experiment file's folder ---- */

/* dir/exp/e.ini naming its sibling files by relative names (a libsvm data
 * set, an edge-list network and logical graph, a compute trace), and an
 * empty folder dir/elsewhere to run from. */
static const char *paths_setup(void)
{
    const char *dir = test_experiment_dir("[workers]\n"
                                          "count = 4\n"
                                          "compute = trace(steps.csv)\n"
                                          "[network]\n"
                                          "topology = file(net.txt)\n"
                                          "[topology]\n"
                                          "graph = file(ring.txt)\n"
                                          "[algorithm]\n"
                                          "name = dpsgd\n"
                                          "batch = 8\n"
                                          "[workload]\n"
                                          "model = logreg\n"
                                          "dataset = libsvm(train.svm)\n");
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/exp", dir);
    char rows[64 * 80 + 1] = "";
    for (int i = 0; i < 80; i++)
        strcat(rows, i % 2 ? "1 1:0.5 2:1\n" : "0 1:-1 3:0.25\n");
    test_write_file(sub, "train.svm", rows);
    test_write_file(sub, "ring.txt", "0 1\n1 2\n2 3\n3 0\n");
    test_write_file(sub, "net.txt", "0 1\n1 2\n2 3\n3 0\n");
    test_write_file(sub, "steps.csv", "w0,w1,w2,w3\n10ms,20ms,30ms,40ms\n");
    return dir;
}

/* Loads and builds ini from the current directory; 0 or the error. */
static int paths_build(const char *ini, const char *const *sets, int nsets, xp_env **x,
                       sim_err *err)
{
    cfg_config *cfg = calloc(1, sizeof *cfg);
    cr_assert_not_null(cfg);
    cr_assert_eq(cfg_load(xp_experiment_schema(), ini, sets, nsets, cfg, err), 0, "%s",
                 err->msg);
    *x = xp_env_create(cfg, NULL, err);
    if (!*x) {
        cfg_release(cfg);
        free(cfg);
        return err->code;
    }
    return 0;
}

static void paths_destroy(xp_env *x)
{
    cfg_config *cfg = (cfg_config *)xp_env_config(x);
    xp_env_destroy(x);
    cfg_release(cfg);
    free(cfg);
}

Test(env, file_names_resolve_against_the_experiment_files_folder)
{
    const char *dir = paths_setup();
    char cwd[4200], ini[4200];
    /* from the folder above the experiment's, and from a sibling folder */
    const char *const froms[] = {"", "/elsewhere"};
    const char *const inis[] = {"exp/e.ini", "../exp/e.ini"};
    for (int k = 0; k < 2; k++) {
        snprintf(cwd, sizeof cwd, "%s%s", dir, froms[k]);
        cr_assert_eq(chdir(cwd), 0);
        snprintf(ini, sizeof ini, "%s", inis[k]);
        xp_env *x;
        sim_err err = {0};
        cr_assert_eq(paths_build(ini, NULL, 0, &x, &err), 0, "%s: %s", ini, err.msg);
        algo_env *env = xp_env_algo_env(x);
        cr_assert_eq(xp_env_dataset(x)->train.n + xp_env_dataset(x)->test.n, 80);
        cr_assert_eq(env->graph->n, 4);
        cr_assert_eq(env->graph->n_edges, 4);
        cr_assert_eq(sim_net_n_hosts(xp_env_net(x)), 4);
        /* worker 2 runs its trace column: 30 ms a step */
        cr_assert_float_eq(sim_compute_step_time(env->compute, 2, 0, 1, 0, NULL), 0.030, 1e-12);
        paths_destroy(x);
    }
}

Test(env, absolute_file_names_stay_and_errors_name_the_resolved_file)
{
    const char *dir = paths_setup();
    char other[4200], set[4300];
    snprintf(other, sizeof other, "%s/elsewhere", dir);
    cr_assert_eq(chdir(other), 0);
    /* an absolute name, here from --set, is used as it is */
    snprintf(set, sizeof set, "workload.dataset=libsvm(%s/exp/train.svm)", dir);
    const char *sets[] = {set};
    xp_env *x;
    sim_err err = {0};
    cr_assert_eq(paths_build("../exp/e.ini", sets, 1, &x, &err), 0, "%s", err.msg);
    paths_destroy(x);
    /* a relative --set value resolves against the experiment file's folder
     * too, and the error names the file it tried */
    const struct {
        const char *set, *want;
    } cases[] = {
        {"workload.dataset=libsvm(missing.svm)",
         "--set workload.dataset: ../exp/missing.svm: cannot open"},
        {"topology.graph=file(missing.txt)",
         "--set topology.graph: ../exp/missing.txt: cannot open"},
        {"network.topology=file(missing.txt)",
         "--set network.topology: ../exp/missing.txt: cannot open"},
        {"workers.compute=trace(missing.csv)",
         "--set workers.compute: ../exp/missing.csv: cannot open"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *s[] = {cases[i].set};
        cr_assert_eq(paths_build("../exp/e.ini", s, 1, &x, &err), SIM_EINPUT, "%s: %s",
                     cases[i].set, err.msg);
        cr_assert(strncmp(err.msg, cases[i].want, strlen(cases[i].want)) == 0, "%s", err.msg);
    }
}

/* Devices per worker: each worker's step takes batch x FLOPs per sample /
 * (its device's peak at [workers] precision x efficiency); with efficiency
 * = published, each device's efficiency is its published throughput of
 * the proxy (wl_device_efficiency). */
Test(env, devices_per_worker_set_each_workers_compute_time)
{
    const wl_proxy *p = wl_proxy_find("resnet50");
    const char *sets[] = {"workers.compute=model", "workers.device=v100*1, a100*2, p100*1",
                          "workers.efficiency=0.4", "workload.proxy=resnet50"};
    cfg_config cfg;
    load(&cfg, sets, 4);
    xp_env *x = build_ok(&cfg, NULL);
    algo_env *env = xp_env_algo_env(x);
    static const double peak[4] = {15.7e12, 19.5e12, 19.5e12, 10.6e12};
    for (int w = 0; w < 4; w++)
        cr_assert_eq(sim_compute_step_time(env->compute, w, 0, 8, p->flops_per_sample, NULL),
                     8 * p->flops_per_sample / (peak[w] * 0.4), "worker %d", w);
    xp_env_destroy(x);
    cfg_release(&cfg);

    /* published: V100 fp16 1200 images/s, A100 fp16 2470 images/s */
    const char *pub[] = {"workers.compute=model", "workers.device=v100*2, a100*2",
                         "workers.precision=fp16", "workers.efficiency=published",
                         "workload.proxy=resnet50"};
    load(&cfg, pub, 5);
    x = build_ok(&cfg, NULL);
    env = xp_env_algo_env(x);
    static const double rate[4] = {1200, 1200, 2470, 2470};
    for (int w = 0; w < 4; w++) {
        double t = sim_compute_step_time(env->compute, w, 0, 8, p->flops_per_sample, NULL);
        cr_assert_float_eq(t, 8 / rate[w], 1e-15, "worker %d: %.17g", w, t);
    }
    xp_env_destroy(x);
    cfg_release(&cfg);

    /* one device, published: the scalar path, V100 fp32 367 images/s */
    const char *one[] = {"workers.compute=model", "workers.device=v100",
                         "workers.efficiency=published", "workload.proxy=resnet50"};
    load(&cfg, one, 4);
    x = build_ok(&cfg, NULL);
    env = xp_env_algo_env(x);
    cr_assert_float_eq(sim_compute_step_time(env->compute, 3, 0, 367, p->flops_per_sample, NULL),
                       1.0, 1e-12);
    xp_env_destroy(x);
    cfg_release(&cfg);
}

Test(env, published_efficiency_errors_name_the_key)
{
    const char *none[] = {"workers.compute=model", "workers.device=h100",
                          "workers.efficiency=published", "workload.proxy=resnet50"};
    build_fails(none, 4, SIM_ECONFIG,
                "--set workers.efficiency: published: no published throughput of resnet50 on "
                "h100 in fp32");
    const char *speed[] = {"workers.compute=model", "workers.device=10TFLOPS",
                           "workers.efficiency=published", "workload.proxy=resnet50"};
    build_fails(speed, 4, SIM_ECONFIG, "published needs [workers] device by name");
    const char *noproxy[] = {"workers.compute=model", "workers.device=v100",
                             "workers.efficiency=published"};
    build_fails(noproxy, 3, SIM_ECONFIG, "published needs [workload] proxy");
}

/* A synchronous run on an ideal network with devices per worker: every
 * round waits for the slowest device, so an iteration takes the P100's
 * batch x FLOPs / (10.6 TFLOPS x efficiency), the closed form. */
Test(env, a_round_waits_for_the_slowest_device)
{
    const wl_proxy *p = wl_proxy_find("resnet50");
    const char *sets[] = {"algorithm.name=allreduce_sgd", "workers.compute=model",
                          "workers.device=a100*2, p100*1, v100*1", "workers.efficiency=0.5",
                          "workload.proxy=resnet50", "network.topology=ideal",
                          "experiment.max_iterations=3"};
    xp_run_result r = test_run_ini(env_ini, sets, 7, NULL);
    double per_iter = 8 * p->flops_per_sample / (10.6e12 * 0.5);
    cr_assert(fabs(r.sim_time / 3 - per_iter) < 2e-9, "per iteration %.9g, expected %.9g",
              r.sim_time / 3, per_iter);
}
