/* Fault schedules ([faults] schedule): the parser against known rows and
 * its errors (file:line:column), and PS-ASGD under faults: a crash removes
 * exactly the crashed worker's update rate, a rejoin restores it, a
 * slowdown divides the worker's rate by its factor (docs/algorithms.md
 * sections 1.6 and 12). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "algorithms/fault.h"
#include "analysis/db.h"
#include "dec_harness.h"

static void write_file(char *path, const char *text)
{
    strcpy(path, "/tmp/dtsim_faults_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
}

Test(faults, parser_reads_rows_sorted_by_time)
{
    const char *text = "time,event,target,value\n"
                       "# comment\n"
                       "2s, rejoin, 3,\n"
                       "0.5s,crash,3,\n"
                       "\n"
                       "1s,slowdown,2,10\r\n"
                       "1s,link,0-8,1Gbps\n"
                       "1s,link,8-0,down\n"
                       "3s,LINK,1-2,up\n";
    algo_fault *ev;
    int n;
    sim_err err = {0};
    cr_assert_eq(algo_fault_parse("f.csv", text, 4, 9, &ev, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, 6);
    cr_assert_eq(ev[0].time, 500000000);
    cr_assert_eq(ev[0].kind, ALGO_FAULT_CRASH);
    cr_assert_eq(ev[0].target, 3);
    cr_assert_eq(ev[1].kind, ALGO_FAULT_SLOWDOWN);
    cr_assert_eq(ev[1].value, 10.0);
    cr_assert_eq(ev[2].kind, ALGO_FAULT_LINK);
    cr_assert_eq(ev[2].target, 0);
    cr_assert_eq(ev[2].target2, 8);
    cr_assert_eq(ev[2].value, 1.25e8);
    cr_assert_eq(ev[3].value, 0.0);
    cr_assert_eq(ev[3].target, 8);
    cr_assert_eq(ev[4].kind, ALGO_FAULT_REJOIN);
    cr_assert_eq(ev[4].time, 2000000000);
    cr_assert_eq(ev[4].target2, -1);
    cr_assert_eq(ev[5].value, -1.0);
    free(ev);
}

static void parse_fails(const char *text, const char *expect)
{
    algo_fault *ev = (algo_fault *)1;
    int n = 7;
    sim_err err = {0};
    cr_assert_eq(algo_fault_parse("f.csv", text, 4, 9, &ev, &n, &err), SIM_ECONFIG);
    cr_assert_null(ev);
    cr_assert_eq(n, 0);
    cr_assert_str_eq(err.msg, expect);
}

Test(faults, parser_errors_name_file_line_and_column)
{
    parse_fails("", "f.csv:1:1: expected the header time,event,target,value");
    parse_fails("t,e,x,v\n", "f.csv:1:1: expected the header time,event,target,value");
    parse_fails("time,event,target,value\n1s,crash,1\n",
                "f.csv:2:1: expected 4 fields time,event,target,value, got 3");
    parse_fails("time,event,target,value\n1s,crash,1,,\n",
                "f.csv:2:1: expected 4 fields time,event,target,value, got more");
    parse_fails("time,event,target,value\n\nsoon,crash,1,\n",
                "f.csv:3:1: expected a time such as 0.5s, got 'soon'");
    parse_fails("time,event,target,value\n1s, explode,1,\n",
                "f.csv:2:5: unknown event 'explode' (crash, rejoin, slowdown or link)");
    parse_fails("time,event,target,value\n1s,crash,4,\n",
                "f.csv:2:10: expected a worker id below the worker count, got '4'");
    parse_fails("time,event,target,value\n1s,crash,1,3\n",
                "f.csv:2:12: crash and rejoin take no value, got '3'");
    parse_fails("time,event,target,value\n1s,slowdown,1,0\n",
                "f.csv:2:15: expected a slowdown factor > 0, got '0'");
    parse_fails("time,event,target,value\n1s,link,1,down\n",
                "f.csv:2:9: expected a link A-B of two hosts, got '1'");
    parse_fails("time,event,target,value\n1s,link,1-9,down\n",
                "f.csv:2:9: expected a link A-B of two different vertices below the vertex "
                "count, got '1-9'");
    parse_fails("time,event,target,value\n1s,link,1-2,fast\n",
                "f.csv:2:13: expected a rate such as 1Gbps, down or up, got 'fast'");
}

Test(faults, missing_file_and_unsupported_method_are_config_errors)
{
    sim_experiment_init();
    sim_config cfg;
    sim_err err = {0};
    const char *sets[] = {"faults.schedule=/nonexistent/f.csv", "algorithm.name=asgd"};
    cr_assert_eq(sim_config_load_string("h.ini", base_ini, sets, 2, &cfg, &err), 0);
    xp_env *x = xp_env_create(&cfg, NULL, &err);
    cr_assert_not_null(x);
    cr_assert_lt(xp_env_algo_create(x, &err), 0);
    cr_assert_str_eq(err.msg, "--set faults.schedule: /nonexistent/f.csv: "
                              "cannot open the fault schedule");
    xp_env_destroy(x);
    sim_config_release(&cfg);

    char path[64], set[96];
    write_file(path, "time,event,target,value\n1s,crash,1,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets2[] = {set, "algorithm.name=local_sgd"};
    cr_assert_eq(sim_config_load_string("h.ini", base_ini, sets2, 2, &cfg, &err), 0);
    x = xp_env_create(&cfg, NULL, &err);
    cr_assert_not_null(x);
    cr_assert_lt(xp_env_algo_create(x, &err), 0);
    char expect[256];
    snprintf(expect, sizeof expect,
             "--set faults.schedule: %s: local_sgd does not support crash events", path);
    cr_assert_str_eq(err.msg, expect);
    xp_env_destroy(x);
    sim_config_release(&cfg);
    unlink(path);
}

/* ---- PS-ASGD under faults ---------------------------------------------- */

typedef struct times {
    double t[8192];
    int n;
} times;

static void record_time(harness *h)
{
    times *ts = h->probe_ctx;
    if (ts->n < 8192)
        ts->t[ts->n++] = sim_time_to_s(sim_engine_now(h->eng));
}

static int count_in(const times *ts, double a, double b)
{
    int c = 0;
    for (int i = 0; i < ts->n; i++)
        c += ts->t[i] >= a && ts->t[i] < b;
    return c;
}

/* 4 workers with 10 ms steps on an ideal network apply 400 updates a
 * second; worker 1 crashes at 1.005 s (its step in flight is lost) and
 * rejoins at 2.005 s; worker 2 is 2x slower from 3.005 s. */
Test(faults, asgd_crash_removes_one_workers_rate_and_rejoin_restores_it)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "1.005s,crash,1,\n"
                     "2.005s,rejoin,1,\n"
                     "3.005s,slowdown,2,2\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    for (int clip = 0; clip < 2; clip++) {
        const char *sets[] = {set, "algorithm.name=asgd", "workers.count=4", "algorithm.lr=0.01",
                              clip ? "algorithm.clip=0.05" : "algorithm.clip=0"};
        static times ts;
        ts.n = 0;
        harness h;
        h_build(&h, base_ini, sets, 5);
        h.probe = record_time;
        h.probe_ctx = &ts;
        h_run(&h, 1700);
        cr_assert_eq(count_in(&ts, 0.105, 1.005), 360);
        cr_assert_eq(count_in(&ts, 1.105, 2.005), 270);
        cr_assert_eq(count_in(&ts, 2.105, 3.005), 360);
        cr_assert_eq(count_in(&ts, 3.105, 4.005), 315, "3 x 90 + 45");
        cr_assert_eq(h.env->w[1].down, 0);
        /* the lost step: worker 1 computed one gradient the server never applied */
        cr_assert_eq(h.env->w[1].steps - h.env->w[1].staleness_n, 1 + 1);
        h_free(&h);
    }
    unlink(path);
}

/* Ring all-reduce on a physical ring of 4, constant 10 ms steps: from 0.5 s
 * the link 1-2 runs at B' = B/4, and every round takes
 * T + 2(n-1)(alpha + S/(nB')) (every chunk step waits for the slow link);
 * "up" at 1 s restores T + 2(n-1)(alpha + S/(nB)). */
Test(faults, one_slowed_link_paces_the_ring_allreduce)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.5s,link,1-2,250MB/s\n"
                     "1s,link,2-1,up\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=allreduce_sgd", "workers.count=4",
                          "network.topology=ring", "network.latency=20us",
                          "network.bandwidth=1GB/s", "workload.sim_params=1000000"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 7);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 120);
    const double S = 4e6, a = 20e-6, T = 0.01;
    const double fast = T + 2 * 3 * (a + S / (4 * 1e9)), slow = T + 2 * 3 * (a + S / (4 * 2.5e8));
    int checked_fast = 0, checked_slow = 0;
    for (int i = 1; i < ts.n; i++) {
        double dt = ts.t[i] - ts.t[i - 1];
        if (ts.t[i - 1] > 0.5 + slow && ts.t[i] < 1.0) {
            cr_assert(fabs(dt - slow) < 1e-6, "round at %.6f: %.9f vs %.9f", ts.t[i], dt, slow);
            checked_slow++;
        } else if (ts.t[i] < 0.5 || ts.t[i - 1] > 1.0 + slow) {
            cr_assert(fabs(dt - fast) < 1e-6, "round at %.6f: %.9f vs %.9f", ts.t[i], dt, fast);
            checked_fast++;
        }
    }
    cr_assert_gt(checked_slow, 10);
    cr_assert_gt(checked_fast, 20);
    h_free(&h);
    unlink(path);
}

/* ---- synchronous all-reduce under crashes ------------------------------ */

/* allreduce_sgd on a complete network of 8 (ring all-reduce), constant
 * 10 ms steps. Worker 5 crashes at 0.175 s, inside round 10's compute
 * step: the 7 survivors finish their step, enter, wait sync_timeout = 50 ms
 * and re-form over 7 ranks. Round times: T + c(8) before, T + timeout + c(7)
 * for the aborted round, T + c(7) after, with c(m) = 2(m-1)(alpha + S/(mB)).
 * Each round after the crash applies 7 batches (the mean renormalized over
 * the 7 that took part). Worker 5 rejoins at 0.6 s: it is sent the model
 * at the next applied update and the group is 8 again. */
Test(faults, allreduce_crash_costs_the_timeout_then_runs_over_the_survivors)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.175s,crash,5,\n"
                     "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=allreduce_sgd", "network.topology=complete",
                          "network.latency=20us", "network.bandwidth=1GB/s",
                          "workload.sim_params=1000000", "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 7);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 60);
    const double S = 4e6, a = 20e-6, B = 1e9, T = 0.01, to = 0.05;
    const double c8 = 2 * 7 * (a + S / (8 * B)), c7 = 2 * 6 * (a + S / (7 * B));
    cr_assert_gt(ts.n, 40);
    int aborted = -1;
    for (int i = 1; i < ts.n; i++)
        if (ts.t[i - 1] < 0.175 && ts.t[i] > 0.175)
            aborted = i;
    cr_assert_eq(aborted, 10, "round 10 holds the crash (%d)", aborted);
    for (int i = 1; i < aborted; i++)
        cr_assert(fabs(ts.t[i] - ts.t[i - 1] - (T + c8)) < 1e-7, "round %d", i);
    cr_assert(fabs(ts.t[aborted] - ts.t[aborted - 1] - (T + to + c7)) < 1e-7, "%.9f vs %.9f",
              ts.t[aborted] - ts.t[aborted - 1], T + to + c7);
    int checked = 0;
    for (int i = aborted + 1; i < ts.n && ts.t[i] < 0.6; i++, checked++)
        cr_assert(fabs(ts.t[i] - ts.t[i - 1] - (T + c7)) < 1e-7, "round %d: %.9f vs %.9f", i,
                  ts.t[i] - ts.t[i - 1], T + c7);
    cr_assert_gt(checked, 15);
    /* back to 8 ranks after the join round */
    for (int i = ts.n - 10; i < ts.n; i++)
        cr_assert(fabs(ts.t[i] - ts.t[i - 1] - (T + c8)) < 1e-7, "round %d after the rejoin", i);
    /* 16 samples per worker and round; every live worker has begun the next
     * round's step; worker 5 also lost the step of round 10 */
    cr_assert_eq(h.env->iterations, 60);
    cr_assert_eq(h.env->w[0].steps, 61);
    int64_t with5 = h.env->w[5].steps - 2;
    cr_assert(with5 > 20 && with5 < 40, "worker 5 took part in %lld rounds", (long long)with5);
    cr_assert_eq(h.env->samples, 16 * (7 * 60 + with5));
    cr_assert_eq(h.env->w[5].down, 0);
    h_free(&h);
    unlink(path);
}

/* ---- pairwise averaging under crashes ---------------------------------- */

typedef struct live_mean {
    double ref[64];      /* the live workers' mean at the crash */
    int have_ref;
    double worst;        /* largest deviation seen while worker 3 is down */
    int checked;
} live_mean;

static void mean_of_live(harness *h, double *out)
{
    int64_t d = h->env->d;
    int up = 0;
    for (int64_t e = 0; e < d; e++)
        out[e] = 0;
    for (int i = 0; i < h->env->n; i++) {
        if (h->env->w[i].down)
            continue;
        up++;
        for (int64_t e = 0; e < d; e++)
            out[e] += h->env->w[i].x[e];
    }
    for (int64_t e = 0; e < d; e++)
        out[e] /= up;
}

static void probe_live_mean(harness *h)
{
    live_mean *lm = h->probe_ctx;
    if (!h->env->w[3].down)
        return;
    double m[64];
    mean_of_live(h, m);
    if (!lm->have_ref) {
        memcpy(lm->ref, m, sizeof m);
        lm->have_ref = 1;
        return;
    }
    for (int64_t e = 0; e < h->env->d; e++)
        if (fabs(m[e] - lm->ref[e]) > lm->worst)
            lm->worst = fabs(m[e] - lm->ref[e]);
    lm->checked++;
}

/* ad_psgd and swarm_sgd (symmetric, H = 1) on a ring of 8 with lr = 1e-30
 * (below float rounding) and independent initial models: only
 * averagings change the models. While worker 3 is down (0.1 s to 0.3 s) its
 * neighbours draw their partners among the live ones, requests to it are
 * dropped (the sender times out after 20 ms), and every averaging is
 * between two live workers, so the live workers' mean stays what it was
 * (float rounding: 1e-5). The run goes on after the rejoin. */
Test(faults, pairwise_methods_keep_the_live_mean_while_a_worker_is_down)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.1s,crash,3,\n"
                     "0.3s,rejoin,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *methods[] = {"algorithm.name=ad_psgd", "algorithm.name=swarm_sgd"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {set, methods[m], "algorithm.lr=1e-30",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              "network.topology=star", "network.latency=100us"};
        static live_mean lm;
        memset(&lm, 0, sizeof lm);
        harness h;
        h_build(&h, base_ini, sets, 7);
        cr_assert_leq(h.env->d, 64);
        h.probe = probe_live_mean;
        h.probe_ctx = &lm;
        h_run(&h, 400);
        cr_assert(lm.have_ref, "%s", methods[m]);
        cr_assert_gt(lm.checked, 50, "%s", methods[m]);
        cr_assert_lt(lm.worst, 1e-5, "%s: the live mean moved by %g", methods[m], lm.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_gt(h.env->w[3].steps, 0);
        /* worker 3 computed nothing while down: 10 ms steps over 0.2 s less */
        cr_assert_lt(h.env->w[3].steps, h.env->w[2].steps - 15, "%s", methods[m]);
        h_free(&h);
    }
    unlink(path);
}

/* ---- synchronous gossip under crashes ---------------------------------- */

/* The evaluated model (every iteration: the live workers' x^{k+1}, a
 * consistent cut) while worker 3 is down. */
static void probe_model_mean(harness *h)
{
    live_mean *lm = h->probe_ctx;
    if (!h->env->w[3].down)
        return;
    float x[64];
    const float *m = h->vt->model(h->alg, x);
    if (!lm->have_ref) {
        for (int64_t e = 0; e < h->env->d; e++)
            lm->ref[e] = m[e];
        lm->have_ref = 1;
        return;
    }
    for (int64_t e = 0; e < h->env->d; e++)
        if (fabs(m[e] - lm->ref[e]) > lm->worst)
            lm->worst = fabs(m[e] - lm->ref[e]);
    lm->checked++;
}

/* dpsgd (AWC) and dsgd_atc on a ring of 8 with lr = 1e-30 and independent
 * initial models: only the mixing moves the models. While worker 3 is down
 * (0.1 s to 0.3 s) workers 2 and 4 skip it after the timeout and move its
 * weight to their own (W stays doubly stochastic over the live path), so
 * the live workers' mean stays what it was (float rounding: 1e-5). Worker 3
 * computes nothing while down and the run goes on after its rejoin. */
Test(faults, gossip_keeps_the_live_mean_while_a_worker_is_down)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.1s,crash,3,\n"
                     "0.3s,rejoin,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *methods[] = {"algorithm.name=dpsgd", "algorithm.name=dsgd_atc"};
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {set, methods[m], "algorithm.lr=1e-30",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              "network.topology=star", "network.latency=100us",
                              "experiment.eval_every=1"};
        static live_mean lm;
        memset(&lm, 0, sizeof lm);
        harness h;
        h_build(&h, base_ini, sets, 8);
        cr_assert_leq(h.env->d, 64);
        h.probe = probe_model_mean;
        h.probe_ctx = &lm;
        h_run(&h, 60);
        cr_assert(lm.have_ref, "%s", methods[m]);
        cr_assert_gt(lm.checked, 5, "%s", methods[m]);
        cr_assert_lt(lm.worst, 1e-5, "%s: the live mean moved by %g", methods[m], lm.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_gt(h.env->w[3].steps, 0);
        /* 10 ms steps: about 0.2 s of them missing */
        cr_assert_lt(h.env->w[3].steps, h.env->w[2].steps - 8, "%s", methods[m]);
        cr_assert_eq(h.env->iterations, 60);
        h_free(&h);
    }
    unlink(path);
}

/* A gossip method on a ring of 8 over an ideal network (messages take no
 * time), constant T = 10 ms, worker 5 crashing at 0.105 s (inside
 * iteration 10's compute), sync_timeout = 50 ms: iteration `slow` takes
 * `cost` after the one before it, every other iteration T. */
static void check_crash_cost(const char *const *method, int nmethod, int slow, double cost)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n0.105s,crash,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[8] = {set, "faults.sync_timeout=50ms"};
    for (int a = 0; a < nmethod && a < 6; a++)
        sets[2 + a] = method[a];
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 2 + nmethod);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 30);
    const double T = 0.01;
    cr_assert_eq(ts.n, 30);
    for (int i = 0; i < slow; i++)
        cr_assert(fabs(ts.t[i] - T * (i + 1)) < 1e-9, "%s: iteration %d at %.9f", method[0], i,
                  ts.t[i]);
    cr_assert(fabs(ts.t[slow] - ts.t[slow - 1] - cost) < 1e-9, "%s: %.9f vs %.9f", method[0],
              ts.t[slow] - ts.t[slow - 1], cost);
    for (int i = slow + 1; i < 30; i++)
        cr_assert(fabs(ts.t[i] - ts.t[i - 1] - T) < 1e-9, "%s: iteration %d: %.9f", method[0],
                  i, ts.t[i] - ts.t[i - 1]);
    cr_assert_eq(h.env->w[5].steps, 11, "%s", method[0]);
    h_free(&h);
    unlink(path);
}

/* dsgd_atc: worker 5's neighbours 4 and 6 finish their step at 0.11 s,
 * publish and wait sync_timeout = 50 ms for it, so iteration 10 ends at
 * 0.11 + 0.05 = 0.16 s (T + timeout after iteration 9). From then on they
 * know it is dead and every iteration takes T again. */
Test(faults, gossip_crash_costs_the_timeout_once)
{
    const char *m[] = {"algorithm.name=dsgd_atc"};
    check_crash_cost(m, 1, 10, 0.01 + 0.05);
}

/* The same for the momentum methods. ATC forms (dmsgd, decentlam,
 * momentum_consensus with overlap = false): iteration 10 takes T + timeout.
 * AWC forms (dmsgd form = awc, momentum_consensus overlap = true): worker 5
 * sent its step-10 message at 0.10 s, before it crashed, so iteration 10
 * completes on time; the neighbours' wait for its step-11 message starts
 * when they send theirs (0.11 s) and overlaps their gradient, so
 * iteration 11 takes the timeout (50 ms > T). */
Test(faults, momentum_gossip_crash_costs_the_timeout_once)
{
    const double T = 0.01, to = 0.05;
    const char *atc[][3] = {{"algorithm.name=dmsgd", "algorithm.momentum=0.9"},
                            {"algorithm.name=decentlam", "algorithm.momentum=0.9"},
                            {"algorithm.name=momentum_consensus", "algorithm.momentum=0.9",
                             "algorithm.overlap=false"}};
    for (int m = 0; m < 3; m++)
        check_crash_cost(atc[m], m == 2 ? 3 : 2, 10, T + to);
    const char *awc[][3] = {{"algorithm.name=dmsgd", "algorithm.momentum=0.9",
                             "algorithm.form=awc"},
                            {"algorithm.name=momentum_consensus", "algorithm.momentum=0.9",
                             "algorithm.overlap=true"}};
    for (int m = 0; m < 2; m++)
        check_crash_cost(awc[m], 3, 11, to);
}

/* A ring of 8 cut in two by the crashes of workers 2 and 6 for 1 s, one
 * part paced by worker 0 slowed 5x: the parts drift about 80 iterations
 * apart (more than the iteration window of n (period + 1) + 4 = 20, which
 * then grows), the run completes after the rejoins, and the iteration
 * count is that of the slow part: global iteration k waits for every live
 * worker; after the rejoins the fast part waits for the slow one to catch
 * up (the rejoined workers join at the fast part's iteration). */
Test(faults, gossip_parts_of_a_cut_ring_drift_apart_and_rejoin)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.1s,crash,2,\n"
                     "0.1s,crash,6,\n"
                     "0.1s,slowdown,0,5\n"
                     "1.1s,rejoin,2,\n"
                     "1.1s,rejoin,6,\n"
                     "1.1s,slowdown,0,1\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=dpsgd", "faults.sync_timeout=20ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 3);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 26); /* about 1 s */
    /* the fast part ({3, 4, 5}) has run ahead of the slow one ({7, 0, 1}) */
    cr_assert_lt(sim_time_to_s(sim_engine_now(h.eng)), 1.1);
    cr_assert_gt(h.env->w[4].steps, h.env->w[0].steps + 40, "%lld vs %lld",
                 (long long)h.env->w[4].steps, (long long)h.env->w[0].steps);
    h_run(&h, 150);
    /* while cut, the slow part sets the pace: 50 ms a step */
    int slow = count_in(&ts, 0.3, 1.1);
    cr_assert(slow >= 14 && slow <= 17, "%d iterations in 0.8 s", slow);
    /* after the rejoins the parts are joined again: nobody is far ahead */
    cr_assert_lt(h.env->w[4].steps, h.env->w[0].steps + 10);
    cr_assert_eq(h.env->w[2].down, 0);
    cr_assert_gt(h.env->w[2].steps, 20);
    h_free(&h);
    unlink(path);
}

/* ---- random faults and the faults table -------------------------------- */

static int64_t q_int(const char *path, const char *sql)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* asgd with random crashes: mtbf = exponential(0.5s) per worker, downtime
 * constant(0.1s), 8 workers, 4 s. Every crash is followed by the same
 * worker's rejoin exactly 0.1 s later (unless the run ended first), the
 * crash row's value is the downtime, the scheduled slowdown is there too,
 * and a second run writes the same rows (own streams: deterministic). The
 * number of crashes is a Poisson-like count with mean about
 * 8 x 4 / (0.5 + 0.1) = 53: asserted within [25, 90]. */
Test(faults, random_crashes_are_recorded_deterministically_in_the_faults_table)
{
    char csv[64], set[96], dbpath[64];
    write_file(csv, "time,event,target,value\n1s,slowdown,2,3\n");
    write_file(dbpath, "");
    unlink(dbpath);
    snprintf(set, sizeof set, "faults.schedule=%s", csv);
    const char *sets[] = {set, "algorithm.name=asgd", "faults.mtbf=exponential(0.5s)",
                          "faults.downtime=constant(0.1s)", "experiment.max_iterations=0",
                          "experiment.max_time=4s", "experiment.eval_every=1s"};
    sim_experiment_init();
    sim_err err = {0};
    an_db *db = an_db_open(dbpath, &err);
    cr_assert_not_null(db, "%s", err.msg);
    for (int run = 0; run < 2; run++) {
        sim_config cfg;
        cr_assert_eq(sim_config_load_string("h.ini", base_ini, sets, 7, &cfg, &err), 0, "%s",
                     err.msg);
        sim_run_opts o = {.db = db};
        sim_run_result res;
        cr_assert_eq(sim_experiment_run(&cfg, &o, &res, &err), 0, "%s", err.msg);
        sim_config_release(&cfg);
    }
    an_db_close(db);
    int64_t crashes = q_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1"
                                    " AND event = 'crash'");
    cr_assert(crashes >= 25 && crashes <= 90, "%lld crashes", (long long)crashes);
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1 AND event = 'crash'"
                               " AND value = 0.1"), crashes);
    /* each crash's rejoin 0.1 s later, same worker */
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM faults c WHERE c.run_id = 1 AND"
                               " c.event = 'crash' AND c.sim_time < 3.9 AND NOT EXISTS"
                               " (SELECT 1 FROM faults r WHERE r.run_id = 1 AND"
                               " r.event = 'rejoin' AND r.target = c.target AND"
                               " abs(r.sim_time - c.sim_time - 0.1) < 1e-9)"), 0);
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1 AND"
                               " event = 'rejoin' AND value IS NULL"),
                 q_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1 AND"
                               " event = 'rejoin'"));
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1 AND"
                               " event = 'slowdown' AND target = '2' AND value = 3"
                               " AND sim_time = 1"), 1);
    /* both runs wrote the same rows */
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 2"),
                 q_int(dbpath, "SELECT count(*) FROM faults WHERE run_id = 1"));
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM (SELECT sim_time, event, target, value"
                               " FROM faults WHERE run_id = 1 EXCEPT SELECT sim_time, event,"
                               " target, value FROM faults WHERE run_id = 2)"), 0);
    unlink(dbpath);
    unlink(csv);
}

Test(faults, random_fault_keys_are_checked)
{
    sim_experiment_init();
    struct {
        const char *sets[2];
        const char *want;
        const char *sets3;
    } cases[] = {
        {{"algorithm.name=asgd", "faults.mtbf=model"},
         "--set faults.mtbf: expected none or a distribution of times such as "
         "exponential(300s), got 'model'", NULL},
        {{"algorithm.name=asgd", "faults.downtime=exponential(-1s)"},
         "--set faults.downtime: exponential: mean: expected a time such as 5us, got '-1s'",
         NULL},
        {{"algorithm.name=local_sgd", "faults.mtbf=exponential(1s)"},
         "--set faults.mtbf: local_sgd does not support worker crashes", NULL},
        {{"algorithm.name=consensus_control", "faults.mtbf=exponential(1s)"},
         "--set faults.mtbf: consensus_control: exact averaging or adaptive gossip does not "
         "support worker crashes ([faults])", NULL},
        {{"algorithm.name=dpsgd", "faults.mtbf=exponential(1s)"},
         "--set algorithm.compressor: dpsgd: compressed gossip does not support worker "
         "crashes ([faults])",
         "algorithm.compressor=topk(0.5)"},
        {{"algorithm.name=asgd", "faults.mtbf=exponential(1s)"},
         "--set algorithm.next_job: random does not support worker crashes ([faults]); use same",
         "algorithm.next_job=random"},
        {{"algorithm.name=allreduce_sgd", "faults.mtbf=exponential(1s)"},
         "--set algorithm.bucket: gradient buckets do not support worker crashes ([faults]); "
         "use bucket = 0",
         "algorithm.bucket=1MB"},
        {{"algorithm.name=allreduce_sgd", "faults.mtbf=exponential(1s)"},
         "h.ini: [algorithm] compress_time_per_value (default): compression time is not "
         "charged under worker crashes ([faults]); set compress_time_per_value = 0",
         "algorithm.compressor=topk(0.5)"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sim_config cfg;
        sim_err err = {0};
        const char *sets[3] = {cases[k].sets[0], cases[k].sets[1], cases[k].sets3};
        cr_assert_eq(sim_config_load_string("h.ini", base_ini, sets, cases[k].sets3 ? 3 : 2, &cfg,
                                            &err), 0, "%s", err.msg);
        xp_env *x = xp_env_create(&cfg, NULL, &err);
        cr_assert_not_null(x, "%s", err.msg);
        cr_assert_eq(xp_env_algo_create(x, &err), SIM_ECONFIG);
        cr_assert_str_eq(err.msg, cases[k].want);
        xp_env_destroy(x);
        sim_config_release(&cfg);
    }
}

/* ---- the momentum gossip methods under crashes ------------------------- */

/* dmsgd (ATC and AWC) with lr = 1e-30: its momentum is driven by the
 * gradients and vanishes, so the live workers' mean is kept as with
 * dpsgd (the probe and set-up of gossip_keeps_the_live_mean_while_a_worker_is_down). */
Test(faults, dmsgd_keeps_the_live_mean_while_a_worker_is_down)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.1s,crash,3,\n"
                     "0.3s,rejoin,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *forms[] = {"algorithm.form=atc", "algorithm.form=awc"};
    for (int f = 0; f < 2; f++) {
        const char *sets[] = {set, "algorithm.name=dmsgd", forms[f], "algorithm.momentum=0.9",
                              "algorithm.lr=1e-30", "workload.init=independent",
                              "faults.sync_timeout=20ms", "network.topology=star",
                              "network.latency=100us", "experiment.eval_every=1"};
        static live_mean lm;
        memset(&lm, 0, sizeof lm);
        harness h;
        h_build(&h, base_ini, sets, 10);
        h.probe = probe_model_mean;
        h.probe_ctx = &lm;
        h_run(&h, 60);
        cr_assert(lm.have_ref, "%s", forms[f]);
        cr_assert_gt(lm.checked, 5, "%s", forms[f]);
        cr_assert_lt(lm.worst, 1e-5, "%s: the live mean moved by %g", forms[f], lm.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_lt(h.env->w[3].steps, h.env->w[2].steps - 8, "%s", forms[f]);
        h_free(&h);
    }
    unlink(path);
}

/* The live workers' Q = mean_i (x_i^K + beta/(1-beta) (x_i^K - x_i^{K-1}))
 * at every evaluation snapshot K (worker 3 excluded) while worker 3 is
 * down. */
typedef struct live_q {
    float prev[8][64];
    int have_prev;       /* prev holds the snapshot of the previous iteration, 3 down */
    double beta;
    live_mean lm;
} live_q;

static void probe_live_q(harness *h)
{
    live_q *q = h->probe_ctx;
    const float *xs[8];
    int64_t d = h->env->d;
    h->vt->worker_models(h->alg, xs);
    if (!h->env->w[3].down) {
        q->have_prev = 0;
        return;
    }
    if (q->have_prev) {
        double m[64] = {0}, c = q->beta / (1 - q->beta);
        for (int i = 0; i < 8; i++)
            for (int64_t e = 0; e < d && i != 3; e++)
                m[e] += (xs[i][e] + c * ((double)xs[i][e] - q->prev[i][e])) / 7;
        if (!q->lm.have_ref) {
            memcpy(q->lm.ref, m, sizeof m);
            q->lm.have_ref = 1;
        } else {
            for (int64_t e = 0; e < d; e++)
                q->lm.worst = fmax(q->lm.worst, fabs(m[e] - q->lm.ref[e]));
            q->lm.checked++;
        }
    }
    for (int i = 0; i < 8; i++)
        memcpy(q->prev[i], xs[i], (size_t)d * sizeof(float));
    q->have_prev = 1;
}

/* decentlam and momentum_consensus (both forms) on a ring of 8 with
 * lr = 1e-30 and independent initial models. Their momentum carries the
 * consensus moves (decentlam: lr m_i^{k+1} = x_i^k - x_i^{k+1};
 * momentum_consensus: v_i^{k+1} = x_i^{k+1} - x_i^k), so what W (doubly
 * stochastic over the live graph, the missing neighbours' x and v replaced
 * by the worker's own) keeps is not the live mean of x but
 * Q = mean_live (x + beta/(1-beta) v): sum x' = sum x + beta sum v and
 * sum v' = beta sum v. A crashed worker takes its v with it, so the plain
 * live mean moves by up to beta/(1-beta) |v_3| / 7, while Q stays within
 * float rounding (1e-5) as long as worker 3 is down. */
Test(faults, momentum_gossip_keeps_the_live_invariant_while_a_worker_is_down)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.1s,crash,3,\n"
                     "0.3s,rejoin,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *methods[][2] = {{"algorithm.name=decentlam", "algorithm.nesterov=false"},
                                {"algorithm.name=momentum_consensus", "algorithm.overlap=true"},
                                {"algorithm.name=momentum_consensus", "algorithm.overlap=false"}};
    for (int m = 0; m < 3; m++) {
        const char *sets[] = {set, methods[m][0], methods[m][1], "algorithm.momentum=0.8",
                              "algorithm.lr=1e-30", "workload.init=independent",
                              "faults.sync_timeout=20ms", "network.topology=star",
                              "network.latency=100us", "experiment.eval_every=1"};
        static live_q q;
        memset(&q, 0, sizeof q);
        q.beta = 0.8;
        harness h;
        h_build(&h, base_ini, sets, 10);
        cr_assert_leq(h.env->d, 64);
        h.probe = probe_live_q;
        h.probe_ctx = &q;
        h_run(&h, 60);
        cr_assert(q.lm.have_ref, "%s", methods[m][1]);
        cr_assert_gt(q.lm.checked, 5, "%s", methods[m][1]);
        cr_assert_lt(q.lm.worst, 1e-5, "%s %s: Q moved by %g", methods[m][0], methods[m][1],
                     q.lm.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_lt(h.env->w[3].steps, h.env->w[2].steps - 8, "%s", methods[m][0]);
        h_free(&h);
    }
    unlink(path);
}

/* A rejoin's fresh state, through the rejoining worker's first update.
 * Worker 3 crashes at 0.105 s and rejoins at 0.305 s, when every live
 * worker is inside a compute step of iteration k (ideal network, T =
 * 10 ms). An event of the test at that instant (after the rejoin) reads
 * the models, worker 3's rejoin model and the gradient it has just
 * computed there. Worker 3 starts at iteration k0 = k (ATC: its
 * neighbours have not published step k yet) or k + 1 (AWC: they have).
 * Its x_3^{k0 + 1}, read at the next snapshot, must be the update from
 * zero momentum:
 *   dmsgd (awc):             sum_j W_3j x_j^{k0} - lr g_3         (m_3 = 0)
 *   decentlam (lr ~ 0):      sum_j W_3j x_j^{k0}                  (m_3 = 0)
 *   momentum_consensus:      sum_j W_3j x_j^{k0}
 *       + beta (1 - omega) sum_{j != 3} W_3j (x_j^{k0} - x_j^{k0-1})  (v_3 = 0)
 * With the momentum left from before the crash each is off by beta m_3
 * (lr beta m_3 for decentlam, beta omega v_3 for momentum_consensus). */
typedef struct rejoin_probe {
    float hist[48][8][64];   /* worker models at the snapshot of iteration K */
    float x[8][64];          /* current models at the rejoin instant */
    float g3[64];
    int64_t k_at;            /* completed iterations at the rejoin instant */
    int seen;
} rejoin_probe;

static void probe_hist(harness *h)
{
    rejoin_probe *r = h->probe_ctx;
    const float *xs[8];
    h->vt->worker_models(h->alg, xs);
    int64_t K = h->env->iterations;
    for (int i = 0; i < 8 && K < 48; i++)
        memcpy(r->hist[K][i], xs[i], (size_t)h->env->d * sizeof(float));
}

static void on_rejoin_probe(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)eng;
    (void)arg;
    (void)payload;
    harness *h = ctx;
    rejoin_probe *r = h->probe_ctx;
    r->k_at = h->env->iterations;
    for (int i = 0; i < 8; i++)
        memcpy(r->x[i], h->env->w[i].x, (size_t)h->env->d * sizeof(float));
    memcpy(r->g3, h->env->w[3].grad, (size_t)h->env->d * sizeof(float));
    r->seen = 1;
}

Test(faults, momentum_gossip_rejoin_starts_from_zero_momentum)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.105s,crash,3,\n"
                     "0.305s,rejoin,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    struct {
        const char *name, *opt, *lr;
        int awc, mc;     /* form; momentum_consensus */
        double lr_v;
    } cases[] = {
        {"algorithm.name=dmsgd", "algorithm.form=awc", "algorithm.lr=0.1", 1, 0, 0.1},
        {"algorithm.name=decentlam", "algorithm.nesterov=false", "algorithm.lr=1e-30", 0, 0, 0},
        {"algorithm.name=momentum_consensus", "algorithm.overlap=false", "algorithm.lr=1e-30", 0,
         1, 0},
        {"algorithm.name=momentum_consensus", "algorithm.overlap=true", "algorithm.lr=1e-30", 1,
         1, 0},
    };
    const double beta = 0.9, omega = 0.5;
    for (int c = 0; c < 4; c++) {
        const char *sets[] = {set, cases[c].name, cases[c].opt, cases[c].lr,
                              "algorithm.momentum=0.9", "workload.init=independent",
                              "faults.sync_timeout=50ms", "experiment.eval_every=1"};
        static rejoin_probe r;
        memset(&r, 0, sizeof r);
        harness h;
        h_build(&h, base_ini, sets, 8);
        int64_t d = h.env->d;
        cr_assert_leq(d, 64);
        h.probe = probe_hist;
        h.probe_ctx = &r;
        cr_assert(sim_engine_schedule(h.eng, 305 * (SIM_NS_PER_S / 1000), on_rejoin_probe, &h, 0, NULL, NULL));
        h_run(&h, 40);
        cr_assert(r.seen);
        int64_t k0 = r.k_at + cases[c].awc;
        cr_assert(k0 > 10 && k0 + 1 < 40, "%s: k0 = %lld", cases[c].name, (long long)k0);
        const topo_wmat *W = topo_mixing_at(h.mix, 0);
        double worst = 0, scale = 0, moved = 0;
        for (int64_t e = 0; e < d; e++) {
            /* the model rule: the mean of the live neighbours' current models */
            double mean = ((double)r.x[2][e] + r.x[4][e]) / 2;
            cr_assert(fabs(r.x[3][e] - mean) < 1e-6, "%s: rejoin model %g vs %g", cases[c].name,
                      r.x[3][e], mean);
            double want = topo_wmat_get(W, 3, 3) * r.x[3][e];
            for (int j = 2; j <= 4; j += 2) {
                double xj = r.hist[k0][j][e], w = topo_wmat_get(W, 3, j);
                if (!cases[c].awc) /* ATC: the neighbours are still at x^{k0} */
                    cr_assert_eq(r.x[j][e], r.hist[k0][j][e]);
                want += w * xj;
                if (cases[c].mc)
                    want += beta * (1 - omega) * w * (xj - r.hist[k0 - 1][j][e]);
            }
            want -= cases[c].lr_v * r.g3[e];
            double got = r.hist[k0 + 1][3][e];
            worst = fmax(worst, fabs(got - want));
            scale = fmax(scale, fabs(want));
            moved = fmax(moved, fabs((double)r.hist[10][3][e] - r.hist[9][3][e]));
        }
        cr_assert_lt(worst, 1e-5 * scale, "%s %s: off by %g", cases[c].name, cases[c].opt,
                     worst);
        /* worker 3 was moving before its crash (x_3^10 - x_3^9, its v or
         * lr m there for the lr ~ 0 methods): its old momentum is not small */
        cr_assert_gt(moved, 1e-3 * scale, "%s: worker 3's last move %g", cases[c].name, moved);
        h_free(&h);
    }
    unlink(path);
}

/* ---- the consensus distance under crashes ------------------------------ */

/* A method through the real runner, wrapped: at every evaluation (the
 * runner takes the evaluated model, then the consensus distance) the
 * wrapper computes Xi of the workers that are up, and of all n, from the
 * workers' models; a crashed worker's model is set far away (every entry
 * 1000). */
static const algo_vt *cd_base;
static algo_env *cd_env;
static double cd_live[64], cd_all[64];
static int cd_n; /* evaluations so far */
static int cd_create(algo_env *env, void **out, sim_err *err)
{
    cd_env = env;
    return cd_base->create(env, out, err);
}

static double xi_of(const float *const *xs, const int *use, int n, int64_t d)
{
    double mean[64] = {0}, s = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        m += use[i];
    for (int i = 0; i < n; i++)
        for (int64_t e = 0; e < d && use[i]; e++)
            mean[e] += xs[i][e];
    for (int64_t e = 0; e < d; e++)
        mean[e] /= m;
    for (int i = 0; i < n; i++)
        for (int64_t e = 0; e < d && use[i]; e++)
            s += ((double)xs[i][e] - mean[e]) * ((double)xs[i][e] - mean[e]);
    return sqrt(s / m);
}

static const float *cd_model(void *s, float *scratch)
{
    const float *xs[8];
    int up[8], all[8];
    cd_base->worker_models(s, xs);
    for (int i = 0; i < 8; i++) {
        up[i] = !cd_env->w[i].down;
        all[i] = 1;
    }
    if (cd_n < 64) {
        cd_live[cd_n] = xi_of(xs, up, 8, cd_env->d);
        cd_all[cd_n++] = xi_of(xs, all, 8, cd_env->d);
    }
    return cd_base->model(s, scratch);
}

static void cd_fault(void *s, const algo_fault *ev)
{
    cd_base->fault(s, ev);
    if (ev->kind == ALGO_FAULT_CRASH)
        for (int64_t e = 0; e < cd_env->d; e++)
            cd_env->w[ev->target].x[e] = 1000.0f;
}

typedef struct cd_rows {
    an_metric_row r[64];
    int n;
} cd_rows;

static void cd_collect(void *ctx, const an_metric_row *row)
{
    cd_rows *rs = ctx;
    if (rs->n < 64)
        rs->r[rs->n++] = *row;
}

/* Worker 3 crashes at 0.105 s and stays down; its model is set to 1000
 * everywhere. The recorded consensus distance is that of the 7 live
 * workers (computed here from their models) after the crash, while the
 * distance over all 8 would be above 100; before the crash the rows equal
 * those of the same run without faults, whose distance is the one over all
 * 8 workers. dmsgd (the gossip driver's live set: the snapshot of the
 * workers that completed the iteration, here those up) and ad_psgd (the
 * runner's rule: the workers that are up). */
Test(faults, consensus_distance_covers_the_live_workers)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n0.105s,crash,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static cd_rows plain, crash;
    sim_experiment_init();
    const char *methods[][3] = {
        {"algorithm.name=dmsgd", "experiment.eval_every=1", "experiment.max_iterations=30"},
        {"algorithm.name=ad_psgd", "experiment.eval_every=10", "experiment.max_iterations=300"}};
    for (int m = 0; m < 2; m++) {
        cd_base = algo_find(methods[m][0] + strlen("algorithm.name="));
        cr_assert_not_null(cd_base);
        algo_vt vt = *cd_base;
        vt.create = cd_create;
        vt.model = cd_model;
        vt.fault = cd_fault;
        memset(&plain, 0, sizeof plain);
        memset(&crash, 0, sizeof crash);
        for (int run = 0; run < 2; run++) {
            const char *sets[] = {methods[m][0], methods[m][1], methods[m][2],
                                  "algorithm.momentum=0.9", "workload.init=independent", set};
            sim_config cfg;
            sim_err err = {0};
            cr_assert_eq(sim_config_load_string("h.ini", base_ini, sets, run ? 6 : 5, &cfg,
                                                &err), 0, "%s", err.msg);
            cd_n = 0;
            cd_rows *rs = run ? &crash : &plain;
            sim_run_opts o = {.algorithm = &vt, .on_metric = cd_collect, .ctx = rs};
            sim_run_result res;
            cr_assert_eq(sim_experiment_run(&cfg, &o, &res, &err), 0, "%s", err.msg);
            cr_assert_str_eq(res.status, "done");
            cr_assert_eq(rs->n, 31, "%s: %d rows", methods[m][0], rs->n);
            cr_assert_eq(cd_n, rs->n);
            int before = 0, after = 0;
            for (int k = 0; k < rs->n; k++) {
                const an_metric_row *r = &rs->r[k];
                double want = run ? cd_live[k] : cd_all[k];
                cr_assert(fabs(r->consensus_distance - want) <= 1e-12 * want,
                          "%s run %d, row %d: %.17g vs %.17g", methods[m][0], run, k,
                          r->consensus_distance, want);
                if (run && r->sim_time < 0.105) {
                    cr_assert_eq(r->consensus_distance, plain.r[k].consensus_distance,
                                 "%s: row %d before the crash", methods[m][0], k);
                    cr_assert_eq(r->train_loss, plain.r[k].train_loss);
                    before++;
                } else if (run) {
                    cr_assert_gt(cd_all[k], 100.0);
                    cr_assert_lt(r->consensus_distance, 10.0);
                    after++;
                }
            }
            if (run)
                cr_assert(before >= 5 && after >= 10, "%s: %d rows before the crash, %d after",
                          methods[m][0], before, after);
            sim_config_release(&cfg);
        }
    }
    unlink(path);
}
