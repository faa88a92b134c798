/* The gossip driver's crash rules for compressed gossip (CHOCO, dpsgd and
 * dsgd_atc with a compressor; algorithms/drivers/gossip_crash.c,
 * docs/faults.md): a rejoin resynchronizes the public copies x_hat with one
 * dense message (S bytes) each way on each of the rejoiner's links, so a
 * crash and rejoin of a worker of degree 2 costs exactly 4 (S - b) bytes
 * more than the compressed messages (b bytes each) would; a crash alone
 * costs no dense message; a crash after the end changes no bit; the live
 * workers' mean stays put while a worker is down and the models reach
 * consensus after its rejoin. (The refusal on a time-varying graph is in
 * faults::random_fault_keys_are_checked.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/algorithms/harness.h"
#include "sim/network.h"

static const char *const methods[] = {"algorithm.name=dpsgd", "algorithm.name=dsgd_atc"};

/* topk(0.1) of d = 44 keeps k = 4 values: b = 8k = 32 bytes a message,
 * S = 4d = 176 bytes dense. */
#define B_COMP 32.0

/* Dense messages of a run: (total bytes - messages x b) / (S - b). */
static double dense_messages(harness *h)
{
    double bytes = sim_net_bytes_sent_total(h->net);
    double msgs = (double)sim_net_messages(h->net);
    return (bytes - msgs * B_COMP) / (h->env->msg_bytes - B_COMP);
}

static void run_choco(const char *method, const char *schedule_set, int64_t iters, harness *h)
{
    const char *sets[] = {method, "algorithm.compressor=topk(0.1)", "faults.sync_timeout=20ms",
                          schedule_set};
    h_build(h, test_base_ini, sets, schedule_set ? 4 : 3);
    cr_assert_float_eq(h->env->msg_bytes, 176.0, 1e-9);
    h_run(h, iters);
}

/* Worker 3 of a ring of 8 down from 0.1 s to 0.3 s: the network carries
 * compressed messages of b bytes and exactly 4 dense ones (3 -> 2, 3 -> 4,
 * 2 -> 3, 4 -> 3), each S bytes; with the crash alone, none. */
Test(gossip_crash, choco_rejoin_sends_one_dense_message_each_way_per_link)
{
    for (int m = 0; m < 2; m++) {
        char path[64], set[96];
        h_write_schedule(path, set, sizeof set, "0.1s,crash,3,\n0.3s,rejoin,3,\n");
        harness h;
        run_choco(methods[m], set, 60, &h);
        cr_assert_gt(h.env->w[3].steps, 0);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_float_eq(dense_messages(&h), 4.0, 1e-9, "%s: %g dense messages", methods[m],
                           dense_messages(&h));
        h_free(&h);
        unlink(path);

        h_write_schedule(path, set, sizeof set, "0.1s,crash,3,\n");
        run_choco(methods[m], set, 60, &h);
        cr_assert_float_eq(dense_messages(&h), 0.0, 1e-9, "%s", methods[m]);
        h_free(&h);
        unlink(path);
    }
}

/* Neighbours 3 and 4 down together, back at different times: each rejoin
 * marks its links, and a link marked twice (3-4, with 4 still down at 3's
 * rejoin) carries one dense message each way once both ends take part:
 * 3 <-> 2, 3 <-> 4 and 4 <-> 5, 6 dense messages. */
Test(gossip_crash, choco_each_rejoin_resynchronizes_its_links)
{
    char path[64], set[96];
    h_write_schedule(path, set, sizeof set,
                   "0.1s,crash,3,\n0.1s,crash,4,\n0.25s,rejoin,3,\n0.35s,rejoin,4,\n");
    harness h;
    run_choco("algorithm.name=dsgd_atc", set, 60, &h);
    cr_assert_float_eq(dense_messages(&h), 6.0, 1e-9, "%g", dense_messages(&h));
    h_free(&h);
    unlink(path);
}

/* Crash mode without a crash in the run (the crash comes after the end):
 * every model, the iteration times and the bytes equal the plain run's. */
Test(gossip_crash, choco_without_a_crash_equals_the_plain_run)
{
    for (int m = 0; m < 2; m++) {
        char path[64], set[96];
        h_write_schedule(path, set, sizeof set, "100s,crash,3,\n");
        harness a, b;
        run_choco(methods[m], NULL, 40, &a);
        run_choco(methods[m], set, 40, &b);
        const float **xa = malloc(8 * sizeof *xa), **xb = malloc(8 * sizeof *xb);
        a.vt->worker_models(a.alg, xa);
        b.vt->worker_models(b.alg, xb);
        for (int i = 0; i < 8; i++)
            cr_assert_eq(memcmp(xa[i], xb[i], (size_t)a.env->d * sizeof(float)), 0,
                         "%s: worker %d", methods[m], i);
        cr_assert_eq(sim_engine_now(a.eng), sim_engine_now(b.eng));
        cr_assert_eq(sim_net_bytes_sent_total(a.net), sim_net_bytes_sent_total(b.net));
        free(xa);
        free(xb);
        h_free(&a);
        h_free(&b);
        unlink(path);
    }
}

/* The evaluated model at every iteration while worker 3 is down, as the
 * largest distance from the first one (the live workers' x^{k+1}). */
typedef struct drift {
    float first[64];
    int seen;
    double worst;
} drift;

static void probe_drift(harness *h)
{
    drift *dr = h->probe_ctx;
    float buf[64];
    if (!h->env->w[3].down)
        return;
    const float *cur = h->vt->model(h->alg, buf);
    if (dr->seen++ == 0)
        memcpy(dr->first, cur, (size_t)h->env->d * sizeof *cur);
    for (int64_t e = 0; e < h->env->d; e++)
        dr->worst = fmax(dr->worst, fabs((double)cur[e] - (double)dr->first[e]));
}

/* lr = 1e-30, independent initial models: only the consensus steps move
 * the models. While worker 3 is down its neighbours move its weight to
 * their diagonal (their x_hat in place of its copy), so the live mean
 * stays put; after the rejoin the copies agree again and the models reach
 * consensus. */
Test(gossip_crash, choco_keeps_the_live_mean_and_reaches_consensus_after_a_rejoin)
{
    for (int m = 0; m < 2; m++) {
        char path[64], set[96];
        h_write_schedule(path, set, sizeof set, "0.1s,crash,3,\n0.3s,rejoin,3,\n");
        const char *sets[] = {set, methods[m], "algorithm.compressor=topk(0.25)",
                              "algorithm.consensus_step=0.5", "algorithm.lr=1e-30",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              "network.topology=star", "network.latency=100us",
                              "experiment.eval_every=1"};
        drift dr = {.seen = 0};
        harness h;
        h_build(&h, test_base_ini, sets, 10);
        cr_assert_leq(h.env->d, 64);
        double c0 = h_consensus(&h);
        h.probe = probe_drift;
        h.probe_ctx = &dr;
        h_run(&h, 400);
        cr_assert_gt(dr.seen, 5, "%s", methods[m]);
        cr_assert_lt(dr.worst, 1e-5, "%s: the live mean moved by %g", methods[m], dr.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        double c1 = h_consensus(&h);
        cr_assert_lt(c1, 1e-3 * c0, "%s: consensus distance %g from %g", methods[m], c1, c0);
        h_free(&h);
        unlink(path);
    }
}
