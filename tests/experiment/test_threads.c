/* Gradients on a thread pool (xp_run_opts.threads) change no result: the
 * same experiment run with 1, 2 and 4 threads gives the same rows in every
 * result table, every column compared bit for bit (REAL values by their
 * IEEE-754 bits), for synchronous, local, decentralized and asynchronous
 * methods, with equal compute times (every worker starts its steps at the
 * same instants), with stragglers and random slow steps, with compute
 * steps of zero simulated time (a step ends in the instant it starts),
 * with injected noise, clipping and coupled weight decay. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment/experiment.h"
#include "tests/common.h"

#define DUMP_CAP (1 << 22)

/* Appends every row of `table` of run_id (columns in schema order, rows in
 * insertion order) to out; columns named in skip are left out. */
static void dump_table(sqlite3 *c, const char *table, int64_t run_id, const char *const *skip,
                       char *out, size_t *len)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE %s = %lld ORDER BY rowid", table,
             strcmp(table, "runs") == 0 ? "id" : "run_id", (long long)run_id);
    sqlite3_stmt *s = NULL;
    cr_assert_eq(sqlite3_prepare_v2(c, sql, -1, &s, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(c));
    *len += (size_t)snprintf(out + *len, DUMP_CAP - *len, "[%s]\n", table);
    while (sqlite3_step(s) == SQLITE_ROW) {
        for (int k = 0; k < sqlite3_column_count(s); k++) {
            const char *name = sqlite3_column_name(s, k);
            int skipped = strcmp(name, "run_id") == 0;
            for (int q = 0; skip && skip[q]; q++)
                skipped |= strcmp(name, skip[q]) == 0;
            if (skipped)
                continue;
            char v[128];
            switch (sqlite3_column_type(s, k)) {
            case SQLITE_INTEGER:
                snprintf(v, sizeof v, "%lld", (long long)sqlite3_column_int64(s, k));
                break;
            case SQLITE_FLOAT: {
                double x = sqlite3_column_double(s, k);
                unsigned long long bits;
                memcpy(&bits, &x, sizeof bits);
                snprintf(v, sizeof v, "%.17g/%016llx", x, bits);
                break;
            }
            case SQLITE_NULL:
                snprintf(v, sizeof v, "NULL");
                break;
            default:
                snprintf(v, sizeof v, "%.100s", (const char *)sqlite3_column_text(s, k));
            }
            *len += (size_t)snprintf(out + *len, DUMP_CAP - *len, "%s=%s ", name, v);
        }
        *len += (size_t)snprintf(out + *len, DUMP_CAP - *len, "\n");
        cr_assert_lt(*len, DUMP_CAP - 256, "dump too large");
    }
    sqlite3_finalize(s);
}

static const char *const runs_skip[] = {"id", "started_at", "finished_at", "wall_seconds",
                                        "version", "pid", "host", "commit_id", "blas",
                                        "cpu", "threads", NULL};

/* Runs ini (with sets) on `threads` threads into db; returns the dump of
 * every result table of the run (malloc'ed). */
static char *run_dump(const char *ini, const char *const *sets, int nsets, int threads,
                      const char *db_path)
{
    cfg_config cfg;
    sim_err err = {0};
    cr_assert_eq(cfg_load_string(xp_experiment_schema(), "t.ini", ini, sets, nsets, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    an_db *db = an_db_open(db_path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    xp_run_opts o = {.db = db, .threads = threads};
    xp_run_result r;
    int rc = xp_experiment_run(&cfg, &o, &r, &err);
    cr_assert_eq(rc, 0, "threads %d: %s", threads, err.msg);
    cr_assert(strcmp(r.status, "done") == 0 || strcmp(r.status, "diverged") == 0, "%s",
              r.status);
    cr_assert_gt(r.iterations, 0);
    an_db_close(db);
    cfg_release(&cfg);

    sqlite3 *c = NULL;
    cr_assert_eq(sqlite3_open_v2(db_path, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *out = malloc(DUMP_CAP);
    cr_assert_not_null(out);
    size_t len = 0;
    out[0] = 0;
    dump_table(c, "runs", r.run_id, runs_skip, out, &len);
    static const char *const tables[] = {"params", "metrics", "workers", "staleness",
                                         "labels", "links", "series"};
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        dump_table(c, tables[t], r.run_id, NULL, out, &len);
    sqlite3_close(c);
    return out;
}

/* The first differing line of a and b, for the failure message. */
static void first_diff(const char *a, const char *b, char *msg, size_t n)
{
    int line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++;
        b++;
    }
    snprintf(msg, n, "line %d:\n  1 thread: %.300s\n  N threads: %.300s", line, la, lb);
}

/* The rows with 2 and 4 threads equal those with 1. */
static void check_identical(const char *ini, const char *const *sets, int nsets)
{
    const char *dir = test_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/t.db", dir);
    char *base = run_dump(ini, sets, nsets, 1, path);
    cr_assert_gt(strlen(base), 100);
    cr_assert_not_null(strstr(base, "[metrics]\nsim_time="), "no metrics row");
    static const int threads[] = {2, 4};
    for (int t = 0; t < 2; t++) {
        char *got = run_dump(ini, sets, nsets, threads[t], path);
        if (strcmp(base, got) != 0) {
            char msg[1024];
            first_diff(base, got, msg, sizeof msg);
            cr_assert_fail("%d threads differ from 1 at %s", threads[t], msg);
        }
        free(got);
    }
    free(base);
}

/* 8 workers, an MLP on blobs, every evaluation recorded. */
static const char *const base_ini = "[experiment]\n"
                                    "seed = 7\n"
                                    "max_epochs = 0\n"
                                    "max_iterations = 24\n"
                                    "eval_every = 4\n"
                                    "[workers]\n"
                                    "count = 8\n"
                                    "compute = constant(10ms)\n"
                                    "[network]\n"
                                    "topology = star\n"
                                    "latency = 5us\n"
                                    "bandwidth = 1Gbps\n"
                                    "[topology]\n"
                                    "graph = ring\n"
                                    "[algorithm]\n"
                                    "name = dpsgd\n"
                                    "batch = 16\n"
                                    "lr = 0.05\n"
                                    "momentum = 0.9\n"
                                    "[workload]\n"
                                    "model = mlp(32)\n"
                                    "dataset = blobs(4, 24, 4000)\n";

static const char *const methods[] = {"allreduce_sgd", "dpsgd",     "ad_psgd",
                                      "asgd",          "local_sgd", "adaptive_local_sgd",
                                      "swarm_sgd",     NULL};

/* Every method with the extra sets. */
static void check_methods(const char *const *extra, int nextra)
{
    for (int m = 0; methods[m]; m++) {
        const char *sets[16];
        char name[64];
        snprintf(name, sizeof name, "algorithm.name=%s", methods[m]);
        sets[0] = name;
        for (int k = 0; k < nextra; k++)
            sets[1 + k] = extra[k];
        check_identical(base_ini, sets, 1 + nextra);
    }
}

Test(threads, equal_compute_times, .timeout = 300)
{
    check_methods(NULL, 0);
}

Test(threads, stragglers_and_slow_steps, .timeout = 300)
{
    static const char *const extra[] = {"workers.compute=lognormal(10ms, 0.3)",
                                        "workers.stragglers=2",
                                        "workers.straggler_slowdown=3",
                                        "workers.transient_prob=0.2"};
    check_methods(extra, 4);
}

/* sim_flops = 1 at the default device speed: every compute step lasts
 * 0 ns after rounding, so a step's end is in the instant it starts. */
Test(threads, zero_compute_time, .timeout = 300)
{
    static const char *const extra[] = {"workers.compute=model", "workload.sim_flops=1"};
    check_methods(extra, 2);
}

/* The per-worker noise stream, the clip counter and the weight decay taken
 * at the step's snapshot (pairwise methods) are part of the deferred job. */
Test(threads, noise_clip_weight_decay, .timeout = 300)
{
    static const char *const extra[] = {"workload.grad_noise=gaussian(0.5)",
                                        "algorithm.clip=0.5", "algorithm.weight_decay=0.001"};
    check_methods(extra, 3);
}

/* A run that diverges stops at the same iteration with any thread count. */
Test(threads, divergence_stops_at_the_same_point, .timeout = 120)
{
    static const char *const extra[] = {"algorithm.lr=1e4", "algorithm.momentum=0.99",
                                        "experiment.eval_every=1000"};
    check_methods(extra, 3);
}

/* Gossip under random crashes and rejoins ([faults] mtbf, downtime): the
 * timeouts, dropped messages and rejoins land at the same instants and the
 * rows are the same with any thread count (momentum 0.9: the rejoins
 * reset the momentum methods' extra state). */
Test(threads, gossip_with_random_crashes, .timeout = 300)
{
    static const char *const gossip[] = {"algorithm.name=dpsgd", "algorithm.name=dsgd_atc",
                                         "algorithm.name=dmsgd", "algorithm.name=decentlam",
                                         "algorithm.name=momentum_consensus"};
    for (int m = 0; m < 5; m++) {
        const char *sets[] = {gossip[m], "faults.mtbf=exponential(60ms)",
                              "faults.downtime=constant(25ms)", "faults.sync_timeout=5ms",
                              "experiment.max_iterations=40"};
        check_identical(base_ini, sets, 5);
    }
}

/* CHOCO compressed gossip under random crashes and rejoins: the dense
 * resynchronizations of the rejoiners' links land at the same instants and
 * the rows are the same with any thread count. */
Test(threads, choco_gossip_with_random_crashes, .timeout = 300)
{
    static const char *const gossip[] = {"algorithm.name=dpsgd", "algorithm.name=dsgd_atc"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {gossip[m], "algorithm.compressor=topk(0.1)",
                              "faults.mtbf=exponential(60ms)", "faults.downtime=constant(25ms)",
                              "faults.sync_timeout=5ms", "experiment.max_iterations=40"};
        check_identical(base_ini, sets, 6);
    }
}

/* The Local SGD family under random crashes and rejoins: timeouts, aborted
 * averages and joins land at the same instants and the rows are the same
 * with any thread count. */
Test(threads, local_sgd_with_random_crashes, .timeout = 300)
{
    static const char *const local[] = {"algorithm.name=local_sgd",
                                        "algorithm.name=adaptive_local_sgd"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {local[m], "algorithm.local_steps=3",
                              "faults.mtbf=exponential(60ms)", "faults.downtime=constant(25ms)",
                              "faults.sync_timeout=5ms", "experiment.max_iterations=60"};
        check_identical(base_ini, sets, 6);
    }
}

/* gravac under random crashes and rejoins (short window, so the gains
 * decide and the search runs while the membership changes): the rows are
 * the same with any thread count. */
Test(threads, gravac_with_random_crashes, .timeout = 300)
{
    const char *sets[] = {"algorithm.name=gravac", "algorithm.window=5",
                          "algorithm.momentum=0.9", "faults.mtbf=exponential(60ms)",
                          "faults.downtime=constant(25ms)", "faults.sync_timeout=5ms",
                          "experiment.max_iterations=60"};
    check_identical(base_ini, sets, 7);
}

/* onebit_adam and onebit_lamb under random crashes and rejoins, through
 * the warm-up and the 1-bit stage (its errors zeroed at each membership
 * change): the rows are the same with any thread count. */
Test(threads, onebit_with_random_crashes, .timeout = 300)
{
    static const char *const names[] = {"algorithm.name=onebit_adam",
                                        "algorithm.name=onebit_lamb"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {names[m], "algorithm.freeze_step=10", "algorithm.lr=0.01",
                              "faults.mtbf=exponential(60ms)", "faults.downtime=constant(25ms)",
                              "faults.sync_timeout=5ms", "experiment.max_iterations=60"};
        check_identical(base_ini, sets, 7);
    }
}

/* Gossip on a time-varying graph (one_peer_exponential) under random
 * crashes and rejoins: the bypasses along P_t's cycles, the re-sent
 * messages and the rejoins land at the same instants and the rows are the
 * same with any thread count. */
Test(threads, time_varying_gossip_with_random_crashes, .timeout = 300)
{
    static const char *const gossip[] = {"algorithm.name=dpsgd", "algorithm.name=dsgd_atc"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {gossip[m], "topology.graph=one_peer_exponential",
                              "faults.mtbf=exponential(60ms)", "faults.downtime=constant(25ms)",
                              "faults.sync_timeout=5ms", "experiment.max_iterations=40"};
        check_identical(base_ini, sets, 6);
    }
}

/* allreduce_sgd and local_sgd with the hierarchical collective under
 * random crashes and rejoins: the groups' collectives over the live
 * workers' servers (some of them partial) give the same rows with any
 * thread count. */
Test(threads, hierarchical_collective_with_random_crashes, .timeout = 300)
{
    static const char *const methods[] = {"algorithm.name=allreduce_sgd",
                                          "algorithm.name=local_sgd"};
    static const char *const extra[] = {"algorithm.lr=0.05", "algorithm.local_steps=3"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {methods[m], extra[m], "network.topology=hierarchical(2, 4)",
                              "network.collective=hierarchical",
                              "faults.mtbf=exponential(60ms)", "faults.downtime=constant(25ms)",
                              "faults.sync_timeout=5ms", "experiment.max_iterations=60"};
        check_identical(base_ini, sets, 8);
    }
}

/* overlap_local_sgd under random crashes and rejoins (plain and with the
 * anchor momentum): aborted all-reduces, their re-entries after the
 * timeout and the joins land at the same instants with any thread count. */
Test(threads, overlap_local_sgd_with_random_crashes, .timeout = 300)
{
    static const char *const gmf[] = {"algorithm.anchor_momentum=0",
                                      "algorithm.anchor_momentum=0.5"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {"algorithm.name=overlap_local_sgd", gmf[m], "algorithm.local_steps=3",
                              "faults.mtbf=exponential(60ms)", "faults.downtime=constant(25ms)",
                              "faults.sync_timeout=5ms", "experiment.max_iterations=60"};
        check_identical(base_ini, sets, 7);
    }
}

/* Every gossip method (no crashes, CHOCO and SlowMo over D-PSGD
 * included) with its combines deferred to the instant's join: plain, with
 * two gossip steps, on a time-varying graph (the combines of successive
 * steps alternate parities) and with compute steps of zero time (a
 * worker's next gradient reads its combine in the same instant);
 * evaluation (test loss, consensus distance) at every iteration reads the
 * snapshots the deferred combines write. */
Test(threads, gossip_methods_deferred_combines, .timeout = 600)
{
    static const char *const gossip[][2] = {
        {"algorithm.name=dpsgd", "algorithm.momentum=0.9"},
        {"algorithm.name=dsgd_atc", "algorithm.momentum=0.9"},
        {"algorithm.name=dmsgd", "algorithm.momentum=0.9"},
        {"algorithm.name=decentlam", "algorithm.momentum=0.9"},
        {"algorithm.name=momentum_consensus", "algorithm.momentum=0.9"},
        {"algorithm.name=dpsgd", "algorithm.compressor=topk(0.1)"},
        {"algorithm.name=consensus_control", "algorithm.momentum=0.9"},
        {"algorithm.name=slowmo", "algorithm.base=dpsgd"}};
    static const char *const variant[][2] = {
        {"experiment.eval_every=1", "experiment.eval_every=1"},
        {"algorithm.gossip_steps=2", "experiment.eval_every=3"},
        {"topology.graph=one_peer_exponential", "experiment.eval_every=1"},
        {"workers.compute=model", "workload.sim_flops=1"}};
    for (int m = 0; m < 8; m++)
        for (int v = 0; v < 4; v++) {
            if (m >= 5 && v == 1) /* one step, or their own plans */
                continue;
            const char *sets[] = {gossip[m][0], gossip[m][1], variant[v][0], variant[v][1],
                                  "experiment.max_iterations=16"};
            check_identical(base_ini, sets, 5);
        }
}
