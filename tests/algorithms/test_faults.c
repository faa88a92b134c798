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

#include "algorithms/core/fault.h"
#include "algorithms/compress/onebit.h"
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
                "f.csv:2:15: expected a slowdown factor in (0, 1e6], got '0'");
    parse_fails("time,event,target,value\n1s,slowdown,1,1e300\n",
                "f.csv:2:15: expected a slowdown factor in (0, 1e6], got '1e300'");
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
    sim_config cfg;
    sim_err err = {0};
    const char *sets[] = {"faults.schedule=/nonexistent/f.csv", "algorithm.name=asgd"};
    cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, sets, 2, &cfg,
                                        &err), 0);
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
    const char *sets2[] = {set, "algorithm.name=dpsgd", "algorithm.compressor=topk(0.5)",
                           "topology.graph=one_peer_exponential"};
    cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, sets2, 4, &cfg,
                                        &err), 0);
    x = xp_env_create(&cfg, NULL, &err);
    cr_assert_not_null(x);
    cr_assert_lt(xp_env_algo_create(x, &err), 0);
    cr_assert_str_eq(err.msg, "--set algorithm.compressor: dpsgd: compressed gossip on a "
                              "time-varying graph does not support worker crashes ([faults])");
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

/* next_job = random: worker 1's jobs (computing, queued, on their way, its
 * push in flight) are lost at its crash at 1.005 s and re-issued to live
 * workers when the server learns of it (sync_timeout = 50 ms later); it
 * rejoins at 2.005 s. While it is down the update rate falls (3 workers
 * serve the 4 jobs) and worker 1 computes nothing; after the rejoin the
 * rate is back to its level before the crash, which it could not be if a
 * lost job had not been re-issued (4 jobs keep 4 workers busy only
 * partly; with 2 or 3 jobs left the rate would fall by a quarter or more). */
typedef struct rj_probe {
    times ts;
    int64_t steps_at_1_1, steps_at_2;
} rj_probe;

static void record_random_job(harness *h)
{
    rj_probe *p = h->probe_ctx;
    double t = sim_time_to_s(sim_engine_now(h->eng));
    if (p->ts.n < 8192)
        p->ts.t[p->ts.n++] = t;
    if (t < 1.1)
        p->steps_at_1_1 = h->env->w[1].steps;
    if (t < 2.0)
        p->steps_at_2 = h->env->w[1].steps;
}

Test(faults, asgd_random_jobs_are_reissued_after_a_crash)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "1.005s,crash,1,\n"
                     "2.005s,rejoin,1,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=asgd", "workers.count=4", "algorithm.lr=0.01",
                          "algorithm.next_job=random", "faults.sync_timeout=50ms"};
    static rj_probe p, q;
    harness h;
    memset(&p, 0, sizeof p);
    h_build(&h, base_ini, sets, 6);
    h.probe = record_random_job;
    h.probe_ctx = &p;
    h_run(&h, 1600);
    int c0 = count_in(&p.ts, 0.105, 1.005), c1 = count_in(&p.ts, 1.105, 2.005),
        c2 = count_in(&p.ts, 2.105, 3.005);
    cr_assert_leq(c0, 360);
    cr_assert_leq(c1, 270, "3 live workers serve at most 300 updates a second");
    cr_assert_lt(c1, c0, "%d vs %d", c1, c0);
    cr_assert_gt(c1, c0 / 2, "%d vs %d", c1, c0);
    cr_assert(c2 > 0.9 * c0 && c2 < 1.1 * c0, "rate after the rejoin %d vs before %d", c2, c0);
    cr_assert_eq(p.steps_at_1_1, p.steps_at_2, "worker 1 computes nothing while down");
    cr_assert_gt(h.env->w[1].steps, p.steps_at_2, "worker 1 works again after its rejoin");
    h_free(&h);

    /* the same schedule twice: the same update times */
    memset(&q, 0, sizeof q);
    h_build(&h, base_ini, sets, 6);
    h.probe = record_random_job;
    h.probe_ctx = &q;
    h_run(&h, 1600);
    cr_assert_eq(q.ts.n, p.ts.n);
    cr_assert_eq(memcmp(q.ts.t, p.ts.t, sizeof(double) * (size_t)p.ts.n), 0);
    h_free(&h);
    unlink(path);

    /* a crash after the end changes nothing: the draws over the workers
     * not known to be down are those of a run without faults */
    write_file(path, "time,event,target,value\n100s,crash,1,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    memset(&q, 0, sizeof q);
    h_build(&h, base_ini, sets, 6);
    h.probe = record_random_job;
    h.probe_ctx = &q;
    h_run(&h, 300);
    float xf[64];
    const float *m = h.vt->model(h.alg, NULL);
    cr_assert_leq(h.env->d, 64);
    memcpy(xf, m, sizeof(float) * (size_t)h.env->d);
    h_free(&h);
    memset(&p, 0, sizeof p);
    h_build(&h, base_ini, sets + 1, 5);
    h.probe = record_random_job;
    h.probe_ctx = &p;
    h_run(&h, 300);
    cr_assert_eq(q.ts.n, p.ts.n);
    cr_assert_eq(memcmp(q.ts.t, p.ts.t, sizeof(double) * (size_t)p.ts.n), 0);
    cr_assert_eq(memcmp(xf, h.vt->model(h.alg, NULL), sizeof(float) * (size_t)h.env->d), 0);
    h_free(&h);
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

/* Checks the iteration times of a synchronous run with one crash and its
 * rejoin: rounds take `before` until the round holding the crash, which
 * takes `aborted`, then `down` until the rejoin, and `after` for the last
 * 10 rounds. Returns the aborted round's index. */
static int check_crash_rounds(const times *ts, double crash, double rejoin, double before,
                              double aborted, double down, double after)
{
    int ab = -1;
    for (int i = 1; i < ts->n; i++)
        if (ts->t[i - 1] < crash && ts->t[i] > crash)
            ab = i;
    cr_assert_gt(ab, 3, "the crash falls in round %d", ab);
    for (int i = 1; i < ab; i++)
        cr_assert(fabs(ts->t[i] - ts->t[i - 1] - before) < 1e-7, "round %d: %.9f vs %.9f", i,
                  ts->t[i] - ts->t[i - 1], before);
    cr_assert(fabs(ts->t[ab] - ts->t[ab - 1] - aborted) < 1e-7, "aborted round: %.9f vs %.9f",
              ts->t[ab] - ts->t[ab - 1], aborted);
    int checked = 0;
    for (int i = ab + 1; i < ts->n && ts->t[i] < rejoin; i++, checked++)
        cr_assert(fabs(ts->t[i] - ts->t[i - 1] - down) < 1e-7, "round %d: %.9f vs %.9f", i,
                  ts->t[i] - ts->t[i - 1], down);
    cr_assert_gt(checked, 10);
    for (int i = ts->n - 10; i < ts->n; i++)
        cr_assert(fabs(ts->t[i] - ts->t[i - 1] - after) < 1e-7, "round %d after the rejoin: %.9f",
                  i, ts->t[i] - ts->t[i - 1]);
    return ab;
}

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
    /* back to 8 ranks after the join round */
    int aborted = check_crash_rounds(&ts, 0.175, 0.6, T + c8, T + to + c7, T + c7, T + c8);
    cr_assert_eq(aborted, 10, "round 10 holds the crash (%d)", aborted);
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

/* The same crash with Top-k and compression time c per value
 * (docs/compressors.md): topk(0.01) of d_wire = 100000 sends k = 1000
 * values (8000 bytes) in a ring all-gather, c(m) = (m-1)(alpha + 8000/B).
 * Encoding costs c d_wire, decoding c m k over m members. Rounds take
 * T + enc + c(8) + dec(8) before the crash, T + enc + timeout + c(7) +
 * dec(7) for the aborted one, T + enc + c(7) + dec(7) while worker 5 is
 * down and T + enc + c(8) + dec(8) again after its rejoin. */
Test(faults, allreduce_crash_charges_compression_time_over_the_survivors)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.175s,crash,5,\n"
                     "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=allreduce_sgd", "network.topology=complete",
                          "network.latency=20us", "network.bandwidth=1GB/s",
                          "workload.sim_params=100000", "faults.sync_timeout=50ms",
                          "algorithm.compressor=topk(0.01)", "algorithm.momentum=0",
                          "algorithm.compress_time_per_value=1e-7"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 10);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 50);
    const double a = 20e-6, B = 1e9, T = 0.01, to = 0.05, c = 1e-7, k = 1000, enc = c * 1e5;
    const double r8 = T + enc + 7 * (a + 8 * k / B) + c * 8 * k;
    const double r7 = T + enc + 6 * (a + 8 * k / B) + c * 7 * k;
    cr_assert(fabs(ts.t[0] - r8) < 1e-7, "%.9f vs %.9f", ts.t[0], r8);
    check_crash_rounds(&ts, 0.175, 0.6, r8, r7 + to, r7, r8);
    /* compute time = steps x (T + enc) + decodes: a survivor decoded every
     * round it took part in */
    cr_assert_eq(h.env->iterations, 50);
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
    sim_err err = {0};
    an_db *db = an_db_open(dbpath, &err);
    cr_assert_not_null(db, "%s", err.msg);
    for (int run = 0; run < 2; run++) {
        sim_config cfg;
        cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, sets, 7,
                                            &cfg, &err), 0, "%s",
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
    struct {
        const char *sets[2];
        const char *want;
        const char *sets3, *sets4;
    } cases[] = {
        {{"algorithm.name=asgd", "faults.mtbf=model"},
         "--set faults.mtbf: expected none or a distribution of times such as "
         "exponential(300s), got 'model'", NULL, NULL},
        {{"algorithm.name=asgd", "faults.downtime=exponential(-1s)"},
         "--set faults.downtime: exponential: mean: expected a time such as 5us, got '-1s'",
         NULL, NULL},
        {{"algorithm.name=dpsgd", "faults.mtbf=exponential(1s)"},
         "--set algorithm.compressor: dpsgd: compressed gossip on a time-varying graph does "
         "not support worker crashes ([faults])",
         "algorithm.compressor=topk(0.5)", "topology.graph=one_peer_exponential"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sim_config cfg;
        sim_err err = {0};
        const char *sets[4] = {cases[k].sets[0], cases[k].sets[1], cases[k].sets3,
                               cases[k].sets4};
        int nsets = 2 + (cases[k].sets3 != NULL) + (cases[k].sets4 != NULL);
        cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, sets,
                                            nsets, &cfg, &err), 0, "%s", err.msg);
        xp_env *x = xp_env_create(&cfg, NULL, &err);
        cr_assert_not_null(x, "%s", err.msg);
        cr_assert_eq(xp_env_algo_create(x, &err), SIM_ECONFIG);
        cr_assert_str_eq(err.msg, cases[k].want);
        xp_env_destroy(x);
        sim_config_release(&cfg);
    }
}

/* ---- links that go down ------------------------------------------------ */

/* allreduce_sgd on a physical ring of 4 (the ring all-reduce's messages
 * r -> r+1 each on their own link), constant T = 10 ms, S = 4 MB: every
 * round takes R = T + 2(n-1)c with c = alpha + S/(nB). The link 1-2 goes
 * down at t_d, delta into step 1 of a round's all-reduce while rank 1's
 * message of that step drains: it is lost, and rank 1 re-sends it
 * sync_timeout = tau later (the link is up again by then), so it arrives
 * tau + delta late; the ring waits for it (each rank's next step needs its
 * predecessor's message), every rank finishes tau + delta late, and that
 * round takes R + tau + delta; every other round R. */
Test(faults, ring_allreduce_waits_for_a_message_lost_on_a_down_link)
{
    const double S = 4e6, a = 20e-6, B = 1e9, T = 0.01, tau = 0.05;
    const int n = 4;
    const double c = a + S / (n * B), R = T + 2 * (n - 1) * c;
    const double td = 10 * R + T + c + 0.0005; /* round 11, step 1, 0.5 ms in */
    char path[64], set[96], sched[256];
    snprintf(sched, sizeof sched,
             "time,event,target,value\n%.9fs,link,1-2,down\n%.9fs,link,2-1,up\n", td,
             td + 0.02);
    write_file(path, sched);
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=allreduce_sgd", "workers.count=4",
                          "network.topology=ring", "network.latency=20us",
                          "network.bandwidth=1GB/s", "workload.sim_params=1000000",
                          "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 8);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 40);
    cr_assert_geq(ts.n, 40);
    int late = 0;
    for (int i = 1; i < ts.n; i++) {
        double dt = ts.t[i] - ts.t[i - 1];
        if (ts.t[i - 1] < td && ts.t[i] > td) {
            double delta = td - (ts.t[i - 1] + T + c);
            cr_assert(delta > 0 && delta < S / (n * B), "delta %.9f", delta);
            cr_assert(fabs(dt - (R + tau + delta)) < 1e-6, "round at %.6f: %.9f vs %.9f",
                      ts.t[i], dt, R + tau + delta);
            late++;
        } else {
            cr_assert(fabs(dt - R) < 1e-6, "round at %.6f: %.9f vs %.9f", ts.t[i], dt, R);
        }
    }
    cr_assert_eq(late, 1);
    cr_assert_eq(sim_net_lost_messages(h.net), 1);
    cr_assert(fabs(sim_net_resent_bytes(h.net) - S / n) < 1e-6);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += sim_net_bytes_sent_host(h.net, i);
    cr_assert(fabs(sum - sim_net_bytes_sent_total(h.net)) < 1e-3);
    /* the lost attempt sent 0.5 ms x B; its re-send S/n again */
    cr_assert(fabs(sim_net_bytes_sent_total(h.net) - (ts.n * 2.0 * (n - 1) * S + 0.0005 * B)) <
                  1.0,
              "total %.3f", sim_net_bytes_sent_total(h.net));
    h_free(&h);
    unlink(path);
}

/* The evaluated model at every iteration, against the first one. */
static void probe_mean_kept(harness *h)
{
    live_mean *lm = h->probe_ctx;
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

/* dpsgd on a physical ring of 8 (the gossip ring on it), lr = 1e-30 and
 * independent initial models: only the mixing moves the models. The link
 * 2-3 is down from 0.05 s to 0.25 s: messages 2 -> 3 and 3 -> 2 go the
 * long way round (7 hops), the ones lost in flight are re-sent after the
 * timeout and the receivers wait for them; no message is missing, so W is
 * applied whole and the workers' mean stays what it was (1e-5). */
Test(faults, gossip_keeps_its_mean_over_a_down_link)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.05s,link,2-3,down\n"
                     "0.25s,link,2-3,up\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=dpsgd", "algorithm.lr=1e-30",
                          "workload.init=independent", "faults.sync_timeout=20ms",
                          "network.topology=ring", "network.latency=100us",
                          "network.bandwidth=10kB/s", "experiment.eval_every=1"};
    static live_mean lm;
    memset(&lm, 0, sizeof lm);
    harness h;
    h_build(&h, base_ini, sets, 9);
    cr_assert_leq(h.env->d, 64);
    h.probe = probe_mean_kept;
    h.probe_ctx = &lm;
    h_run(&h, 60);
    cr_assert_eq(h.env->iterations, 60);
    cr_assert_gt(lm.checked, 50);
    cr_assert_lt(lm.worst, 1e-5, "the mean moved by %g", lm.worst);
    cr_assert_gt(sim_net_lost_messages(h.net), 0);
    cr_assert_gt(sim_net_resent_bytes(h.net), 0.0);
    h_free(&h);
    unlink(path);
}

/* A link row naming no link of the physical network is a config error
 * naming the file (down and up alike). */
Test(faults, link_rows_must_name_a_link)
{
    const char *rows[] = {"0.1s,link,0-2,down\n", "0.1s,link,0-2,up\n"};
    for (int k = 0; k < 2; k++) {
        char path[64], set[96], text[128], expect[256];
        snprintf(text, sizeof text, "time,event,target,value\n%s", rows[k]);
        write_file(path, text);
        snprintf(set, sizeof set, "faults.schedule=%s", path);
        const char *sets[] = {set, "algorithm.name=dpsgd", "network.topology=ring"};
        sim_config cfg;
        sim_err err = {0};
        cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, sets, 3,
                                            &cfg, &err), 0, "%s",
                     err.msg);
        xp_env *x = xp_env_create(&cfg, NULL, &err);
        cr_assert_not_null(x, "%s", err.msg);
        cr_assert_lt(xp_env_algo_create(x, &err), 0);
        snprintf(expect, sizeof expect,
                 "--set faults.schedule: %s: no link 0-2 in the physical network", path);
        cr_assert_str_eq(err.msg, expect);
        xp_env_destroy(x);
        sim_config_release(&cfg);
        unlink(path);
    }
}

static double q_real(const char *path, const char *sql)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* The same dpsgd run through the runner: the faults table has the down
 * row (value 0), the up row (the configured rate), one `lost` row per lost
 * attempt (the bytes sent before the loss, 0 to S = 176) and one `resent`
 * row per re-send (S each; at most one per loss). The byte counters count
 * what was sent: the run's bytes are the workers' sum, and minus the lost
 * rows' bytes they are whole messages. */
Test(faults, lost_and_resent_messages_are_recorded_in_the_faults_table)
{
    char csv[64], set[96], dbpath[64];
    write_file(csv, "time,event,target,value\n0.05s,link,2-3,down\n0.25s,link,2-3,up\n");
    write_file(dbpath, "");
    unlink(dbpath);
    snprintf(set, sizeof set, "faults.schedule=%s", csv);
    const char *sets[] = {set, "algorithm.name=dpsgd", "faults.sync_timeout=20ms",
                          "network.topology=ring", "network.latency=100us",
                          "network.bandwidth=10kB/s", "experiment.max_iterations=40"};
    sim_err err = {0};
    an_db *db = an_db_open(dbpath, &err);
    cr_assert_not_null(db, "%s", err.msg);
    sim_config cfg;
    cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, sets, 7, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    sim_run_opts o = {.db = db};
    sim_run_result res;
    cr_assert_eq(sim_experiment_run(&cfg, &o, &res, &err), 0, "%s", err.msg);
    sim_config_release(&cfg);
    an_db_close(db);
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'link' AND"
                               " target = '2-3' AND value = 0 AND sim_time = 0.05"), 1);
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'link' AND"
                               " target = '2-3' AND value = 10000 AND sim_time = 0.25"), 1);
    int64_t lost = q_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'lost'");
    int64_t resent = q_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'resent'");
    cr_assert_gt(lost, 0);
    cr_assert_gt(resent, 0);
    cr_assert_leq(resent, lost);
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'lost' AND"
                               " (value < 0 OR value > 176 OR sim_time < 0.05)"), 0);
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM faults WHERE event = 'resent' AND"
                               " value <> 176"), 0);
    /* the lost messages were between 2 and 3 (both directions) */
    cr_assert_eq(q_int(dbpath, "SELECT count(*) FROM faults WHERE event IN ('lost', 'resent')"
                               " AND target NOT IN ('2-3', '3-2')"), 0);
    int64_t bytes = q_int(dbpath, "SELECT bytes_sent FROM runs");
    cr_assert_eq(q_int(dbpath, "SELECT sum(bytes_sent) FROM workers"), bytes);
    double whole = (double)bytes - q_real(dbpath, "SELECT sum(value) FROM faults"
                                                  " WHERE event = 'lost'");
    cr_assert(fabs(whole - 176.0 * round(whole / 176.0)) <= 1.0, "%.3f bytes", whole);
    unlink(dbpath);
    unlink(csv);
}


/* ---- the Local SGD family under crashes -------------------------------- */

/* local_sgd with H = 4 local steps on a complete network of 8 (ring
 * all-reduce), constant T = 10 ms, c(m) = 2(m-1)(alpha + S/(mB)). Rounds
 * take H T + c(8); worker 5 crashes at 0.175 s, inside round 3's local
 * steps: the survivors finish theirs, enter, wait sync_timeout = 50 ms and
 * re-form over 7 ranks (H T + timeout + c(7)); then H T + c(7) while it is
 * down. It rejoins at 0.6 s: the next average is sent to it (alpha + S/B on
 * its own link) and it starts the following round that much after the
 * others, which wait for it in the collective: H T + alpha + S/B + c(8);
 * then H T + c(8) again. An iteration is one local step of every live
 * worker, the round's last one counted when the average is held: the
 * rounds end at iterations 4, 8, ... */
Test(faults, local_sgd_crash_costs_the_timeout_then_runs_over_the_survivors)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.175s,crash,5,\n"
                     "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=local_sgd", "algorithm.local_steps=4",
                          "network.topology=complete", "network.latency=20us",
                          "network.bandwidth=1GB/s", "workload.sim_params=1000000",
                          "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 8);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 120);
    const double S = 4e6, a = 20e-6, B = 1e9, T = 0.01, to = 0.05, H = 4;
    const double c8 = 2 * 7 * (a + S / (8 * B)), c7 = 2 * 6 * (a + S / (7 * B));
    const double join = a + S / B;
    /* round r ends at iteration 4(r + 1): ts.t[4r + 3] */
    int rounds = ts.n / 4, aborted = -1, joined = -1;
    double end[64];
    cr_assert_eq(ts.n, 120);
    for (int r = 0; r < rounds; r++)
        end[r] = ts.t[4 * r + 3];
    for (int r = 1; r < rounds; r++) {
        if (end[r - 1] < 0.175 && end[r] > 0.175)
            aborted = r;
        if (end[r - 1] < 0.6 && end[r] > 0.6)
            joined = r + 1; /* the joiner's first round */
    }
    cr_assert_eq(aborted, 3, "round 3 holds the crash (%d)", aborted);
    cr_assert(end[0] - (H * T + c8) < 1e-9 && end[0] > H * T + c8 - 1e-9, "%.9f", end[0]);
    for (int r = 1; r < aborted; r++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + c8)) < 1e-7, "round %d", r);
    cr_assert(fabs(end[aborted] - end[aborted - 1] - (H * T + to + c7)) < 1e-7,
              "%.9f vs %.9f", end[aborted] - end[aborted - 1], H * T + to + c7);
    int checked = 0;
    for (int r = aborted + 1; r < joined; r++, checked++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + c7)) < 1e-7, "round %d: %.9f vs %.9f", r,
                  end[r] - end[r - 1], H * T + c7);
    cr_assert_gt(checked, 5);
    cr_assert(fabs(end[joined] - end[joined - 1] - (H * T + join + c8)) < 1e-7,
              "the joiner's first round: %.9f vs %.9f", end[joined] - end[joined - 1],
              H * T + join + c8);
    checked = 0;
    for (int r = joined + 1; r < rounds; r++, checked++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + c8)) < 1e-7, "round %d after the rejoin",
                  r);
    cr_assert_gt(checked, 5);
    /* local steps inside a round: T apart */
    cr_assert(fabs(ts.t[1] - ts.t[0] - T) < 1e-9 && fabs(ts.t[0] - T) < 1e-9);
    /* 16 samples a step; worker 5 lost the 4 steps of round 3 and took
     * part in the rounds from `joined` on */
    int64_t w5 = h.env->w[5].steps;
    cr_assert_eq(w5, 4 * (aborted + 1) + 4 * (rounds - joined) + 1, "%lld", (long long)w5);
    cr_assert_eq(h.env->w[5].down, 0);
    h_free(&h);
    unlink(path);
}

typedef struct local_probe {
    float x0[8][64];     /* the initial models */
    float avg[64];       /* the average the joiner took */
    double first_avg_err; /* |model - mean of the survivors' initial models| at iteration 4 */
    double all_gap;      /* |mean of all 8 initial models - that mean| */
    int joined;          /* 1: the joiner's average is recorded */
    int took_avg;        /* the joiner's model equalled the average bit for bit */
    int near_lr, coords; /* after its first step: coordinates moved by lr (1%) */
    double lr;
} local_probe;

/* Iteration 4 is round 0's average, formed without worker 5 (crashed in
 * round 0's local steps); later, the first sync iteration at which worker 5
 * holds exactly worker 0's model is the one it joined at, and the next
 * iteration is its first local step from it. */
static void probe_local(harness *h)
{
    local_probe *p = h->probe_ctx;
    const int64_t d = h->env->d;
    const int64_t it = h->env->iterations;
    if (it == 4) {
        float scratch[64];
        const float *m = h->vt->model(h->alg, scratch);
        double err = 0, gap = 0;
        for (int64_t j = 0; j < d; j++) {
            double s7 = 0, s8 = 0;
            for (int i = 0; i < 8; i++) {
                s8 += p->x0[i][j];
                if (i != 5)
                    s7 += p->x0[i][j];
            }
            err = fmax(err, fabs(m[j] - s7 / 7));
            gap = fmax(gap, fabs(s8 / 8 - s7 / 7));
        }
        p->first_avg_err = err;
        p->all_gap = gap;
    }
    if (sim_time_to_s(sim_engine_now(h->eng)) < 0.1 || h->env->w[5].down)
        return;
    if (!p->joined && it % 4 == 0 &&
        memcmp(h->env->w[5].x, h->env->w[0].x, (size_t)d * sizeof(float)) == 0) {
        memcpy(p->avg, h->env->w[0].x, (size_t)d * sizeof(float));
        p->joined = 1;
        p->took_avg = 1;
        return;
    }
    if (p->joined == 1) {
        p->joined = 2;
        for (int64_t j = 0; j < d; j++) {
            double step = fabs((double)h->env->w[5].x[j] - p->avg[j]);
            p->near_lr += fabs(step / p->lr - 1) < 0.01;
            p->coords++;
        }
    }
}

/* local_sgd, H = 4, independent initial models, ideal network. Worker 5
 * crashes at 15 ms (inside round 0's local steps) and rejoins at 0.1 s.
 * With lr = 1e-30 the models do not move: the first average is exactly the
 * mean of the 7 survivors' initial models (float rounding 1e-6), not that
 * of all 8. With Adam (lr = 1e-3) the joiner's model is the formed average
 * bit for bit and its first step from it moves every coordinate by lr
 * (Adam's first step from a fresh state: lr g / (|g| + eps)); a kept
 * state (bias-corrected moments of older gradients) would not. */
Test(faults, local_sgd_averages_the_survivors_and_a_joiner_starts_fresh_from_the_average)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.015s,crash,5,\n"
                     "0.1s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static local_probe p;
    for (int adam = 0; adam < 2; adam++) {
        const char *sets[] = {set, "algorithm.name=local_sgd", "algorithm.local_steps=4",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              adam ? "algorithm.lr=1e-3" : "algorithm.lr=1e-30",
                              adam ? "algorithm.optimizer=adam" : "algorithm.optimizer=sgd"};
        memset(&p, 0, sizeof p);
        p.lr = 1e-3;
        harness h;
        h_build(&h, base_ini, sets, 7);
        cr_assert_leq(h.env->d, 64);
        for (int i = 0; i < 8; i++)
            memcpy(p.x0[i], h.env->w[i].x, (size_t)h.env->d * sizeof(float));
        h.probe = probe_local;
        h.probe_ctx = &p;
        h_run(&h, 80);
        if (!adam) {
            cr_assert_lt(p.first_avg_err, 1e-6, "%g", p.first_avg_err);
            cr_assert_gt(p.all_gap, 1e-3, "the 8-worker mean differs: %g", p.all_gap);
            h_free(&h);
            continue;
        }
        cr_assert(p.took_avg, "the joiner never held the average");
        cr_assert_eq(p.joined, 2);
        cr_assert_geq(p.near_lr, 0.9 * p.coords, "%d of %d coordinates moved by lr", p.near_lr,
                      p.coords);
        h_free(&h);
    }
    unlink(path);
}

/* slowmo's outer state (x0, u) is shared and stays through a crash: with
 * beta = 0 and alpha = 1 its outer step returns the average, so under the
 * same crash schedule (worker 5 down in round 0, back at 0.1 s) it is
 * local_sgd with the same rounds, groups and joins (float rounding of
 * (x0 - xbar)/lr: 1e-5, as without crashes). */
Test(faults, slowmo_beta0_alpha1_equals_local_sgd_under_crashes)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.015s,crash,5,\n"
                     "0.1s,rejoin,5,\n"
                     "0.23s,crash,2,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *a[] = {set, "algorithm.name=slowmo", "algorithm.local_steps=4",
                       "algorithm.slow_momentum=0", "algorithm.slow_lr=1",
                       "algorithm.momentum=0.9", "faults.sync_timeout=20ms"};
    const char *b[] = {set, "algorithm.name=local_sgd", "algorithm.local_steps=4",
                       "algorithm.momentum=0.9", "faults.sync_timeout=20ms"};
    harness ha, hb;
    h_build(&ha, base_ini, a, 7);
    h_run(&ha, 120);
    h_build(&hb, base_ini, b, 5);
    h_run(&hb, 120);
    cr_assert_eq(sim_engine_now(ha.eng), sim_engine_now(hb.eng));
    cr_assert_eq(ha.env->samples, hb.env->samples);
    float sa[64], sb[64];
    const float *xa = ha.vt->model(ha.alg, sa), *xb = hb.vt->model(hb.alg, sb);
    double worst = 0, moved = 0;
    for (int64_t j = 0; j < ha.env->d; j++) {
        worst = fmax(worst, fabs((double)xa[j] - xb[j]));
        moved = fmax(moved, fabs((double)xa[j]));
    }
    cr_assert_gt(moved, 1e-3);
    cr_assert_leq(worst, 1e-5 * fmax(1, moved), "max |difference| %g", worst);
    cr_assert_eq(ha.env->w[5].steps, hb.env->w[5].steps);
    h_free(&ha);
    h_free(&hb);
    unlink(path);
}

/* Every method of the family under random crashes and rejoins (mtbf
 * 60 ms per worker, downtime 25 ms, timeout 5 ms: crashes in local steps,
 * in collectives and in adaptive_local_sgd's statistics phase) reaches its
 * iteration count; every worker computes after a rejoin; the batch of
 * adaptive_local_sgd stays the same on every worker. */
Test(faults, local_family_runs_through_random_crashes)
{
    const char *methods[][2] = {
        {"algorithm.name=local_sgd", "algorithm.buffers=average"},
        {"algorithm.name=local_sgd", "algorithm.buffers=reset"},
        {"algorithm.name=post_local_sgd", "algorithm.switch_epoch=0.05"},
        {"algorithm.name=adaptive_local_sgd", "algorithm.eta=0.5"},
        {"algorithm.name=slowmo", "algorithm.bmuf=nesterov"},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        const char *sets[] = {methods[m][0], methods[m][1], "faults.mtbf=exponential(60ms)",
                              "faults.downtime=constant(25ms)", "faults.sync_timeout=5ms",
                              "algorithm.local_steps=3", "algorithm.momentum=0.9"};
        harness h;
        h_build(&h, base_ini, sets, 7);
        h_run(&h, 300);
        for (int i = 0; i < h.env->n; i++) {
            cr_assert_gt(h.env->w[i].steps, 20, "%s: worker %d", methods[m][0], i);
            cr_assert_eq(h.env->w[i].batch, h.env->w[0].batch);
        }
        float s[64];
        const float *x = h.vt->model(h.alg, s);
        for (int64_t j = 0; j < h.env->d; j++)
            cr_assert(isfinite(x[j]));
        h_free(&h);
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
            cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, sets,
                                                run ? 6 : 5, &cfg,
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

/* ---- gravac under crashes ----------------------------------------------- */

/* gravac on a complete network of 8, constant T = 10 ms, theta_min =
 * theta_max = 0.01 and a window longer than the run, so every round sends
 * topk(0.01) of d_wire = 100000 (k = 1000 values, 8000 bytes) in a ring
 * all-gather, c_ag(m) = (m-1)(alpha + 8000/B), after one Top-k call of
 * c d_wire seconds. Rounds take T + enc + c_ag(8), the round holding worker
 * 5's crash T + enc + timeout + c_ag(7), then T + enc + c_ag(7) until its
 * rejoin and T + enc + c_ag(8) again. */
Test(faults, gravac_crash_costs_the_timeout_then_runs_over_the_survivors)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.175s,crash,5,\n"
                     "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=gravac", "network.topology=complete",
                          "network.latency=20us", "network.bandwidth=1GB/s",
                          "workload.sim_params=100000", "faults.sync_timeout=50ms",
                          "algorithm.theta_min=0.01", "algorithm.theta_max=0.01",
                          "algorithm.window=100000", "algorithm.compress_time_per_value=1e-7"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 11);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 60);
    const double a = 20e-6, B = 1e9, T = 0.01, to = 0.05, k = 1000, enc = 1e-7 * 1e5;
    const double r8 = T + enc + 7 * (a + 8 * k / B), r7 = T + enc + 6 * (a + 8 * k / B);
    cr_assert(fabs(ts.t[0] - r8) < 1e-7, "%.9f vs %.9f", ts.t[0], r8);
    int ab = check_crash_rounds(&ts, 0.175, 0.6, r8, r7 + to, r7, r8);
    cr_assert_eq(ab, 8, "round 8 holds the crash (%d)", ab);
    /* 7 batches a round while worker 5 is down; it lost round 8's step (the
     * run stops at the 60th applied update, before the members start round
     * 60, so a step count is the rounds taken part in plus lost steps) */
    int64_t with5 = h.env->w[5].steps - 1;
    cr_assert(with5 > 20 && with5 < 45, "worker 5 took part in %lld rounds", (long long)with5);
    cr_assert_eq(h.env->samples, 16 * (7 * 60 + with5));
    h_free(&h);
    unlink(path);
}

/* The update over the survivors: with theta_min = 1 (Top-k keeps every
 * value, the residuals stay 0) and momentum 0, a round applies
 * x <- x - (lr/m) sum over its m members of g_i, each g_i at the round's
 * x. The probe, called at the round's applied update (before any member
 * starts its next step), checks that identity against the members it
 * expects: all 8 before the crash, the 7 survivors from the aborted round
 * to the joiner's first round, 8 again after. */
typedef struct gv_probe {
    float x[64];
    double prev_t, crash, rejoin;
    int have, checked_down, checked_after, rounds;
    double worst;
    double join_ratio; /* ||dir_5|| / mean_i ||dir_i|| at worker 5's first round back */
} gv_probe;

static double gv_norm(const float *v, int64_t d)
{
    double s = 0;
    for (int64_t j = 0; j < d; j++)
        s += (double)v[j] * v[j];
    return sqrt(s);
}

static void probe_gravac_update(harness *h)
{
    gv_probe *p = h->probe_ctx;
    float s[64];
    const float *x = h->vt->model(h->alg, s);
    const int64_t d = h->env->d;
    double t = sim_time_to_s(sim_engine_now(h->eng));
    if (p->have) {
        int with5 = t < p->crash || p->prev_t > p->rejoin;
        int m = 0;
        double lr = algo_env_lr(h->env);
        for (int i = 0; i < h->env->n; i++)
            m += i != 5 || with5;
        double err = 0, step = 0;
        for (int64_t j = 0; j < d; j++) {
            double sum = 0;
            for (int i = 0; i < h->env->n; i++)
                if (i != 5 || with5)
                    sum += h->env->w[i].grad[j];
            err = fmax(err, fabs(p->x[j] - lr * sum / m - x[j]));
            step = fmax(step, fabs(lr * sum / m));
        }
        p->worst = fmax(p->worst, err / step);
        if (with5 && t > p->rejoin && p->join_ratio == 0) {
            double others = 0;
            for (int i = 0; i < h->env->n; i++)
                others += i == 5 ? 0 : gv_norm(h->env->w[i].grad, d) / 7;
            p->join_ratio = gv_norm(h->env->w[5].grad, d) / others;
        }
        p->checked_down += !with5;
        p->checked_after += with5 && t > p->rejoin;
        p->rounds++;
    }
    memcpy(p->x, x, (size_t)d * sizeof *x);
    p->have = 1;
    p->prev_t = t;
}

/* momentum 0 checks the mean; momentum 0.9 also that the joiner starts
 * from a fresh optimizer state: each member's direction is its own
 * momentum (the grad buffers hold it at the probe), so the identity holds
 * either way, but worker 5's first direction back is its bare gradient
 * (about 1/(1 - 0.9) = 10 times shorter than the survivors' momenta; with
 * its old momentum kept it would be as long as theirs). */
Test(faults, gravac_averages_the_survivors_and_a_joiner_starts_fresh)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.175s,crash,5,\n"
                     "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    for (int mom = 0; mom < 2; mom++) {
        const char *sets[] = {set, "algorithm.name=gravac", "network.topology=complete",
                              "faults.sync_timeout=50ms", "algorithm.theta_min=1",
                              "algorithm.theta_max=1", "algorithm.window=100000",
                              mom ? "algorithm.momentum=0.9" : "algorithm.momentum=0"};
        static gv_probe p;
        memset(&p, 0, sizeof p);
        p.crash = 0.175;
        p.rejoin = 0.6;
        harness h;
        h_build(&h, base_ini, sets, 8);
        h.probe = probe_gravac_update;
        h.probe_ctx = &p;
        h_run(&h, 70);
        cr_assert_gt(p.checked_down, 20);
        cr_assert_gt(p.checked_after, 5);
        /* relative to the largest step (float rounding of x - step) */
        cr_assert_lt(p.worst, 1e-4, "update off by %g of a step", p.worst);
        if (mom)
            cr_assert_lt(p.join_ratio, 0.3, "the joiner's direction: %g", p.join_ratio);
        else
            cr_assert(fabs(p.join_ratio - 1) < 0.3, "%g", p.join_ratio);
        h_free(&h);
    }
    unlink(path);
}

/* ---- onebit_adam / onebit_lamb under crashes ----------------------------- */

/* Without a membership change the group path changes nothing: a crash
 * scheduled after the end gives the same models, bit for bit, and the same
 * iteration times as the run without faults, through the warm-up (10
 * dense rounds) and the 1-bit stage, for both methods. */
Test(faults, onebit_without_a_membership_change_changes_nothing)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n100s,crash,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static const char *const names[] = {"algorithm.name=onebit_adam",
                                        "algorithm.name=onebit_lamb"};
    for (int m = 0; m < 2; m++) {
        static times ta, tb;
        float xa[64], xb[64], s[64];
        const char *sets[] = {names[m], "network.topology=complete", "algorithm.freeze_step=10",
                              "algorithm.lr=0.01", set};
        harness h;
        for (int run = 0; run < 2; run++) {
            times *ts = run ? &tb : &ta;
            ts->n = 0;
            h_build(&h, base_ini, sets, run ? 5 : 4);
            h.probe = record_time;
            h.probe_ctx = ts;
            h_run(&h, 40);
            memcpy(run ? xb : xa, h.vt->model(h.alg, s), (size_t)h.env->d * sizeof(float));
            h_free(&h);
        }
        cr_assert_eq(ta.n, tb.n);
        for (int i = 0; i < ta.n; i++)
            cr_assert_eq(ta.t[i], tb.t[i], "%s: iteration %d at %.9f vs %.9f", names[m], i,
                         ta.t[i], tb.t[i]);
        cr_assert_eq(memcmp(xa, xb, 44 * sizeof(float)), 0, "%s: models differ", names[m]);
    }
    unlink(path);
}

/* In the warm-up onebit_adam is allreduce_sgd with adamw and no bias
 * correction; under the same crash and rejoin the two give the same model
 * bit for bit (the mean over the survivors, the join at the next applied
 * update) and the same iteration times, except that onebit_adam's joiner
 * is sent x, m and v (3S bytes, allreduce_sgd's only x): from its first
 * round on every iteration is 2S/B later. */
Test(faults, onebit_warmup_under_crashes_is_allreduce_adamw)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.105s,crash,5,\n"
                     "0.3s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static times ta, tb;
    float xa[64], xb[64], s[64];
    for (int run = 0; run < 2; run++) {
        const char *sets[] = {set, "network.topology=complete", "faults.sync_timeout=50ms",
                              "network.bandwidth=1GB/s", "algorithm.lr=0.01",
                              run ? "algorithm.name=allreduce_sgd" : "algorithm.name=onebit_adam",
                              run ? "algorithm.optimizer=adamw" : "algorithm.freeze_step=1000",
                              "algorithm.bias_correction=false"};
        times *ts = run ? &tb : &ta;
        ts->n = 0;
        harness h;
        h_build(&h, base_ini, sets, run ? 8 : 7);
        h.probe = record_time;
        h.probe_ctx = ts;
        h_run(&h, 60);
        memcpy(run ? xb : xa, h.vt->model(h.alg, s), (size_t)h.env->d * sizeof(float));
        h_free(&h);
    }
    cr_assert_eq(ta.n, tb.n);
    const double late = 2 * 176 / 1e9;
    int shifted = 0;
    for (int i = 0; i < ta.n; i++) {
        double dt = ta.t[i] - tb.t[i];
        if (shifted || fabs(dt) > 1e-12) {
            cr_assert_gt(tb.t[i - 1], 0.3, "iteration %d late before the rejoin", i);
            cr_assert(fabs(dt - late) < 1e-12, "iteration %d: %.12f late", i, dt);
            shifted++;
        }
    }
    cr_assert_gt(shifted, 10);
    cr_assert_eq(memcmp(xa, xb, 44 * sizeof(float)), 0, "models differ");
    unlink(path);
}

/* The 1-bit stage (freeze_step = 0) on a complete network of 8, constant
 * T = 10 ms, d_wire = 100000, compression time c d_wire before phase 1.
 * Over m members a phase message is b(m) = d_pad(m)/(8m) + 4 bytes
 * (d_pad(m) = d_wire rounded up to a multiple of 8m): phase 1 sends one to
 * every other member at once (alpha + b/B on the complete network's own
 * links), phase 2 is a ring all-gather, (m-1)(alpha + b/B); a round takes
 * R(m) = T + c d_wire + m (alpha + b(m)/B). Worker 5 crashes at 0.175 s
 * (round 8): that round takes R(7) + timeout, then R(7) until the rejoin
 * at 0.6 s, R(8) after it. Both methods (the same messages). */
Test(faults, onebit_crash_costs_the_timeout_then_runs_over_the_survivors)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.175s,crash,5,\n"
                     "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static const char *const names[] = {"algorithm.name=onebit_adam",
                                        "algorithm.name=onebit_lamb"};
    const double a = 20e-6, B = 1e9, T = 0.01, to = 0.05, enc = 1e-7 * 1e5;
    const double b8 = 1563 + 4, b7 = 1786 + 4; /* d_pad: 100032 = 1563 x 64, 100016 = 1786 x 56 */
    const double r8 = T + enc + 8 * (a + b8 / B), r7 = T + enc + 7 * (a + b7 / B);
    for (int m = 0; m < 2; m++) {
        const char *sets[] = {set, names[m], "network.topology=complete", "network.latency=20us",
                              "network.bandwidth=1GB/s", "workload.sim_params=100000",
                              "faults.sync_timeout=50ms", "algorithm.freeze_step=0",
                              "algorithm.compress_time_per_value=1e-7", "algorithm.lr=0.001"};
        static times ts;
        ts.n = 0;
        harness h;
        h_build(&h, base_ini, sets, 10);
        h.probe = record_time;
        h.probe_ctx = &ts;
        h_run(&h, 60);
        cr_assert(fabs(ts.t[0] - r8) < 1e-7, "%.9f vs %.9f", ts.t[0], r8);
        int ab = check_crash_rounds(&ts, 0.175, 0.6, r8, r7 + to, r7, r8);
        cr_assert_eq(ab, 8, "round 8 holds the crash (%d)", ab);
        int64_t with5 = h.env->w[5].steps - 1;
        cr_assert(with5 > 20 && with5 < 45, "worker 5 took part in %lld rounds",
                  (long long)with5);
        cr_assert_eq(h.env->samples, 16 * (7 * 60 + with5));
        float s[64];
        const float *x = h.vt->model(h.alg, s);
        for (int64_t j = 0; j < h.env->d; j++)
            cr_assert(isfinite(x[j]));
        h_free(&h);
    }
    unlink(path);
}

/* gravac, onebit_adam and onebit_lamb run through random crashes and
 * rejoins (several a worker): every worker keeps taking part, the model
 * stays finite, and the crash and rejoin rows are there. */
Test(faults, scrash_methods_run_through_random_crashes)
{
    const char *methods[][2] = {
        {"algorithm.name=gravac", "algorithm.window=5"},
        {"algorithm.name=onebit_adam", "algorithm.freeze_step=20"},
        {"algorithm.name=onebit_lamb", "algorithm.freeze_step=20"},
    };
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        const char *sets[] = {methods[m][0], methods[m][1], "faults.mtbf=exponential(60ms)",
                              "faults.downtime=constant(25ms)", "faults.sync_timeout=5ms",
                              "algorithm.lr=0.01"};
        harness h;
        h_build(&h, base_ini, sets, 6);
        h_run(&h, 300);
        for (int i = 0; i < h.env->n; i++)
            cr_assert_gt(h.env->w[i].steps, 20, "%s: worker %d", methods[m][0], i);
        float s[64];
        const float *x = h.vt->model(h.alg, s);
        for (int64_t j = 0; j < h.env->d; j++)
            cr_assert(isfinite(x[j]), "%s", methods[m][0]);
        h_free(&h);
    }
}

/* gravac and the 1-bit methods refuse the hierarchical collective under
 * crashes (its groups of per_node ranks would not survive one). */
Test(faults, scrash_methods_refuse_the_hierarchical_collective)
{
    static const char *const names[] = {"algorithm.name=gravac", "algorithm.name=onebit_adam",
                                        "algorithm.name=onebit_lamb"};
    for (int k = 0; k < 3; k++) {
        const char *sets[] = {names[k], "faults.mtbf=exponential(1s)",
                              "network.topology=hierarchical(2, 4)",
                              "network.collective=hierarchical"};
        sim_config cfg;
        sim_err err = {0};
        cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, sets, 4,
                                            &cfg, &err), 0, "%s",
                     err.msg);
        xp_env *x = xp_env_create(&cfg, NULL, &err);
        cr_assert_not_null(x, "%s", err.msg);
        cr_assert_eq(xp_env_algo_create(x, &err), SIM_ECONFIG, "%s", err.msg);
        cr_assert_str_eq(err.msg, "--set network.collective: the hierarchical collective does "
                                  "not support worker crashes ([faults]); use ring, tree or ps");
        xp_env_destroy(x);
        sim_config_release(&cfg);
    }
}

/* The 1-bit stage's update over the survivors, recomputed in the test.
 * freeze_step = 0 freezes v at 0, so with weight decay 0 onebit_adam's
 * update is x <- x - lr m / eps, m the 1-bit all-reduce (onebit.h) of the
 * members' m_i = beta1 m + (1 - beta1) g_i. The probe keeps its own m and
 * its own 1-bit state over the members it expects (all 8, the 7 survivors
 * from the aborted round to the join, all 8 after), re-made (errors 0)
 * at each membership change, and checks every applied update against it.
 * Carrying the errors over a change, or averaging over the wrong members,
 * fails it. */
typedef struct ob_probe {
    float x[64], m[64], mi[8 * 64], mnew[64];
    algo_onebit ob;
    int members;       /* the members the 1-bit state is for: a bit set */
    double prev_t, crash, rejoin, worst, lr;
    int have, changes, checked;
} ob_probe;

static void probe_onebit_update(harness *h)
{
    ob_probe *p = h->probe_ctx;
    float s[64];
    const float *x = h->vt->model(h->alg, s);
    const int64_t d = h->env->d;
    double t = sim_time_to_s(sim_engine_now(h->eng));
    if (p->have) {
        int with5 = t < p->crash || p->prev_t > p->rejoin;
        int set = with5 ? 0xff : 0xff & ~(1 << 5), n = 0;
        const float *ptr[8];
        for (int i = 0; i < 8; i++) {
            if (!(set >> i & 1))
                continue;
            float *mi = p->mi + n * 64;
            for (int64_t j = 0; j < d; j++)
                mi[j] = 0.9f * p->m[j] + (float)(1.0 - 0.9) * h->env->w[i].grad[j];
            ptr[n++] = mi;
        }
        if (set != p->members) {
            algo_onebit_release(&p->ob);
            cr_assert_eq(algo_onebit_init(&p->ob, n, d, 1, NULL), 0);
            p->members = set;
            p->changes++;
        }
        algo_onebit_allreduce(&p->ob, ptr, p->mnew);
        double err = 0, step = 0;
        for (int64_t j = 0; j < d; j++) {
            /* in float, as the method computes it */
            float u = p->mnew[j] / (sqrtf(0.0f) + (float)1e-8);
            float want = p->x[j] - (float)p->lr * u;
            err = fmax(err, fabs((double)want - x[j]));
            step = fmax(step, fabs((double)p->lr * u));
        }
        p->worst = fmax(p->worst, err / step);
        memcpy(p->m, p->mnew, (size_t)d * sizeof(float));
        p->checked++;
    }
    memcpy(p->x, x, (size_t)d * sizeof *x);
    p->have = 1;
    p->prev_t = t;
}

Test(faults, onebit_update_over_the_survivors_with_errors_reset_at_each_change)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.175s,crash,5,\n"
                     "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=onebit_adam", "network.topology=complete",
                          "faults.sync_timeout=50ms", "algorithm.freeze_step=0",
                          "algorithm.lr=1e-12", "algorithm.beta1=0.9", "algorithm.eps=1e-8",
                          "algorithm.weight_decay=0"};
    static ob_probe p;
    memset(&p, 0, sizeof p);
    p.crash = 0.175;
    p.rejoin = 0.6;
    p.lr = 1e-12;
    p.members = -1;
    harness h;
    h_build(&h, base_ini, sets, 9);
    h.probe = probe_onebit_update;
    h.probe_ctx = &p;
    float s0[64];
    memcpy(p.x, h.vt->model(h.alg, s0), (size_t)h.env->d * sizeof(float));
    p.have = 1;
    h_run(&h, 70);
    cr_assert_eq(p.changes, 3, "membership changes: %d", p.changes);
    cr_assert_eq(p.checked, 70);
    cr_assert_lt(p.worst, 1e-6, "update off by %g of a step", p.worst);
    algo_onebit_release(&p.ob);
    h_free(&h);
    unlink(path);
}

/* ---- time-varying graphs (one_peer_exponential) under crashes ----------- */

#include "algorithms/drivers/gossip.h"

/* The live workers' mean over the evaluation snapshots, its reference
 * retaken at the first snapshot of the live workers after the set of down
 * workers changes. */
typedef struct tv_mean {
    double ref[64];
    unsigned down;        /* the down set of the reference */
    int have_ref;
    double worst;
    int checked;
} tv_mean;

static void probe_tv_mean(harness *h)
{
    tv_mean *tm = h->probe_ctx;
    unsigned down = 0;
    for (int i = 0; i < h->env->n; i++)
        if (h->env->w[i].down)
            down |= 1u << i;
    if (down != tm->down) {
        tm->down = down;
        tm->have_ref = 0;
    }
    if (!down)
        return;
    /* only the snapshots of iterations that the down workers took no part
     * in (a worker that crashed inside iteration k may have completed k - 1) */
    const float *xs[32];
    int live = 0;
    for (int i = 0; i < h->env->n; i++)
        live += !h->env->w[i].down;
    if (algo_gossip_live_models(h->alg, xs) != live)
        return;
    float x[64];
    const float *m = h->vt->model(h->alg, x);
    if (!tm->have_ref) {
        for (int64_t e = 0; e < h->env->d; e++)
            tm->ref[e] = m[e];
        tm->have_ref = 1;
        return;
    }
    for (int64_t e = 0; e < h->env->d; e++)
        if (fabs(m[e] - tm->ref[e]) > tm->worst)
            tm->worst = fabs(m[e] - tm->ref[e]);
    tm->checked++;
}

/* one_peer_exponential on 8 workers (W_t = (I + P_t)/2, i receiving from
 * i + 2^(t mod 3)), lr = 1e-30 and independent initial models: only the
 * mixing moves the models. Worker 3 is down from 5 ms (inside iteration
 * 0's compute, before the models reach consensus, which this graph does
 * in 3 steps with every worker up), worker 4 (its successor on the cycles
 * of shift 1) from 25 ms, both rejoin at 0.3 s.
 * The dead workers are bypassed along P_t's cycle, so the live workers'
 * mean stays what it was (float rounding: 1e-5). Moving a dead peer's
 * weight to the receiver's diagonal instead keeps the rows stochastic but
 * not the columns: the mean would move by (x_i - x_h)/2 per bypass, O(0.1)
 * with these models. */
Test(faults, gossip_keeps_the_live_mean_on_a_time_varying_graph)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.005s,crash,3,\n"
                     "0.025s,crash,4,\n"
                     "0.3s,rejoin,3,\n"
                     "0.3s,rejoin,4,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *methods[] = {"algorithm.name=dpsgd", "algorithm.name=dsgd_atc",
                             "algorithm.name=dmsgd"};
    for (int m = 0; m < 3; m++) {
        const char *sets[] = {set, methods[m], "algorithm.lr=1e-30",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              "network.topology=star", "network.latency=100us",
                              "experiment.eval_every=1", "topology.graph=one_peer_exponential"};
        static tv_mean tm;
        memset(&tm, 0, sizeof tm);
        harness h;
        h_build(&h, base_ini, sets, 9);
        cr_assert_leq(h.env->d, 64);
        h.probe = probe_tv_mean;
        h.probe_ctx = &tm;
        h_run(&h, 60);
        cr_assert_gt(tm.checked, 5, "%s", methods[m]);
        cr_assert_lt(tm.worst, 1e-5, "%s: the live mean moved by %g", methods[m], tm.worst);
        cr_assert_eq(h.env->w[3].down, 0);
        cr_assert_eq(h.env->w[4].down, 0);
        cr_assert_gt(h.env->w[3].steps, 0);
        cr_assert_lt(h.env->w[3].steps, h.env->w[2].steps - 8, "%s", methods[m]);
        /* worker 4 was up 20 ms longer */
        cr_assert_gt(h.env->w[4].steps, h.env->w[3].steps, "%s", methods[m]);
        cr_assert_lt(h.env->w[4].steps, h.env->w[2].steps - 8, "%s", methods[m]);
        cr_assert_eq(h.env->iterations, 60);
        h_free(&h);
    }
    unlink(path);
}

/* The crash costs one timeout on a time-varying graph too (constant T on an
 * ideal network, worker 5 crashing inside iteration 10's compute): for
 * dsgd_atc iteration 10 takes T + timeout (worker 5's receiver waits for it
 * from 0.11 s); the receivers of the later steps, whose waits start later,
 * are done by then, so every other iteration takes T. dpsgd (AWC): worker 5
 * sent and combined step 10 before it crashed; the wait for its step-11
 * message overlaps the gradient, so iteration 11 takes the timeout. */
Test(faults, time_varying_gossip_crash_costs_the_timeout_once)
{
    const char *atc[] = {"algorithm.name=dsgd_atc", "topology.graph=one_peer_exponential"};
    check_crash_cost(atc, 2, 10, 0.01 + 0.05);
    const char *awc[] = {"algorithm.name=dpsgd", "topology.graph=one_peer_exponential"};
    check_crash_cost(awc, 2, 11, 0.05);
}

/* ---- every worker down for good ---------------------------------------- */

/* mtbf without a downtime: the workers crash one by one and never rejoin.
 * When the last one goes down the run fails with an input error naming
 * [faults] (before, a run with time-based evaluations evaluated the same
 * model forever); a scheduled rejoin still to come, or a downtime, keeps
 * it going. */
Test(faults, a_run_whose_workers_are_all_down_for_good_fails)
{
    char path[64], set[96];
    const char *sets[] = {"algorithm.name=asgd", "workers.count=4", "faults.mtbf=exponential(1s)",
                          "experiment.max_iterations=0", "experiment.max_epochs=5",
                          "experiment.eval_every=100ms", NULL};
    sim_err err = {0};
    sim_config cfg;
    cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, sets, 6, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    sim_run_result res;
    cr_assert_eq(sim_experiment_run(&cfg, NULL, &res, &err), SIM_EINPUT, "%s", err.msg);
    cr_assert(strstr(err.msg, "[faults]: every worker is down at ") &&
                  strstr(err.msg, "none rejoins"),
              "%s", err.msg);
    sim_config_release(&cfg);

    /* the same crashes with a downtime: the run ends by its epochs */
    sets[6] = "faults.downtime=constant(0.2s)";
    cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, sets, 7, &cfg,
                                        &err), 0, "%s",
                 err.msg);
    cr_assert_eq(sim_experiment_run(&cfg, NULL, &res, &err), 0, "%s", err.msg);
    cr_assert_str_eq(res.status, "done");
    sim_config_release(&cfg);

    /* every worker crashes by the schedule, one rejoins later: no failure */
    write_file(path, "time,event,target,value\n"
                     "0.1s,crash,0,\n0.1s,crash,1,\n0.1s,crash,2,\n0.1s,crash,3,\n"
                     "0.5s,rejoin,2,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *s2[] = {"algorithm.name=asgd", "workers.count=4", set,
                        "experiment.max_iterations=0", "experiment.max_time=1s",
                        "experiment.eval_every=100ms"};
    cr_assert_eq(sim_config_load_string(sim_experiment_schema(), "h.ini", base_ini, s2, 6, &cfg,
                                        &err), 0, "%s", err.msg);
    cr_assert_eq(sim_experiment_run(&cfg, NULL, &res, &err), 0, "%s", err.msg);
    /* 4 workers at 100 updates a second until 0.1 s, none until 0.5 s, then
     * worker 2 alone */
    cr_assert(res.iterations > 80 && res.iterations < 95, "%lld", (long long)res.iterations);
    cr_assert_float_eq(res.sim_time, 1.0, 1e-9);
    sim_config_release(&cfg);
    unlink(path);
}
/* ---- the hierarchical collective under crashes -------------------------- */

/* allreduce_sgd on hierarchical(4, 2) (4 servers of 2 GPUs: intra links
 * ai, Bi; server interfaces ae, Be) with the hierarchical collective and
 * constant 10 ms steps. Workers 6 and 7 (all of server 3) crash at
 * 0.175 s, inside round 10's compute step, and rejoin at 0.6 s. The
 * survivors' group builds its collective over their hosts: 3 servers of 2,
 * h(N) = 2 (2 ai + S/Bi) + 2 (N - 1) (2 ai + 2 ae + S/(N Be)) over N
 * servers. Rounds: T + h(4), the aborted one T + timeout + h(3), T + h(3)
 * while server 3 is down, T + h(4) after the rejoin. */
Test(faults, allreduce_crash_with_the_hierarchical_collective_runs_over_the_live_servers)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.175s,crash,6,\n"
                     "0.175s,crash,7,\n"
                     "0.6s,rejoin,6,\n"
                     "0.6s,rejoin,7,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=allreduce_sgd",
                          "network.topology=hierarchical(4, 2)", "network.collective=hierarchical",
                          "network.latency=5us", "network.bandwidth=1GB/s",
                          "network.intra_latency=1us",
                          "network.intra_bandwidth=10GB/s", "workload.sim_params=1000000",
                          "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 10);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 60);
    const double S = 4e6, ai = 1e-6, Bi = 1e10, ae = 5e-6, Be = 1e9, T = 0.01, to = 0.05;
    const double h4 = 2 * (2 * ai + S / Bi) + 2 * 3 * (2 * ai + 2 * ae + S / (4 * Be));
    const double h3 = 2 * (2 * ai + S / Bi) + 2 * 2 * (2 * ai + 2 * ae + S / (3 * Be));
    cr_assert_gt(ts.n, 40);
    int aborted = check_crash_rounds(&ts, 0.175, 0.6, T + h4, T + to + h3, T + h3, T + h4);
    cr_assert_eq(aborted, 10, "round 10 holds the crash (%d)", aborted);
    /* 6 batches of 16 a round while server 3 is down */
    cr_assert_eq(h.env->iterations, 60);
    int64_t with67 = h.env->w[6].steps - 2;
    cr_assert_eq(h.env->w[7].steps, h.env->w[6].steps);
    cr_assert(with67 > 20 && with67 < 40, "server 3 took part in %lld rounds",
              (long long)with67);
    cr_assert_eq(h.env->samples, 16 * (6 * 60 + 2 * with67));
    h_free(&h);
    unlink(path);
}

/* local_sgd (H = 4) on the same network and schedule: the round holding
 * the crash costs H T + timeout + h(3), H T + h(3) while server 3 is down;
 * the joiners' first round H T + j + h(4), where the rank that formed the
 * average sends it to both joiners at once (two flows of S bytes sharing
 * its server's interface: j = 2 ai + 2 ae + 2 S/Be), then H T + h(4). */
Test(faults, local_sgd_crash_with_the_hierarchical_collective_runs_over_the_live_servers)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.175s,crash,6,\n"
                     "0.175s,crash,7,\n"
                     "0.6s,rejoin,6,\n"
                     "0.6s,rejoin,7,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=local_sgd", "algorithm.local_steps=4",
                          "network.topology=hierarchical(4, 2)",
                          "network.collective=hierarchical", "network.latency=5us",
                          "network.bandwidth=1GB/s", "network.intra_latency=1us",
                          "network.intra_bandwidth=10GB/s", "workload.sim_params=1000000",
                          "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 11);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 120);
    const double S = 4e6, ai = 1e-6, Bi = 1e10, ae = 5e-6, Be = 1e9, T = 0.01, to = 0.05;
    const double H = 4, j = 2 * ai + 2 * ae + 2 * S / Be;
    const double h4 = 2 * (2 * ai + S / Bi) + 2 * 3 * (2 * ai + 2 * ae + S / (4 * Be));
    const double h3 = 2 * (2 * ai + S / Bi) + 2 * 2 * (2 * ai + 2 * ae + S / (3 * Be));
    cr_assert_eq(ts.n, 120);
    int rounds = ts.n / 4, aborted = -1, joined = -1;
    double end[64];
    for (int r = 0; r < rounds; r++)
        end[r] = ts.t[4 * r + 3];
    for (int r = 1; r < rounds; r++) {
        if (end[r - 1] < 0.175 && end[r] > 0.175)
            aborted = r;
        if (end[r - 1] < 0.6 && end[r] > 0.6)
            joined = r + 1;
    }
    cr_assert_eq(aborted, 3, "round 3 holds the crash (%d)", aborted);
    cr_assert(fabs(end[0] - (H * T + h4)) < 1e-7, "%.9f", end[0]);
    for (int r = 1; r < aborted; r++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + h4)) < 1e-7, "round %d", r);
    cr_assert(fabs(end[aborted] - end[aborted - 1] - (H * T + to + h3)) < 1e-7,
              "%.9f vs %.9f", end[aborted] - end[aborted - 1], H * T + to + h3);
    int checked = 0;
    for (int r = aborted + 1; r < joined; r++, checked++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + h3)) < 1e-7, "round %d: %.9f vs %.9f", r,
                  end[r] - end[r - 1], H * T + h3);
    cr_assert_gt(checked, 5);
    cr_assert(fabs(end[joined] - end[joined - 1] - (H * T + j + h4)) < 1e-7,
              "the joiners' first round: %.9f vs %.9f", end[joined] - end[joined - 1],
              H * T + j + h4);
    checked = 0;
    for (int r = joined + 1; r < rounds; r++, checked++)
        cr_assert(fabs(end[r] - end[r - 1] - (H * T + h4)) < 1e-7, "round %d after the rejoin",
                  r);
    cr_assert_gt(checked, 5);
    cr_assert_eq(h.env->w[6].steps, h.env->w[7].steps);
    cr_assert_eq(h.env->w[6].steps, 4 * (aborted + 1) + 4 * (rounds - joined) + 1);
    h_free(&h);
    unlink(path);
}

/* ---- overlap_local_sgd under crashes ------------------------------------ */

/* overlap_local_sgd (tau = 4) on a complete network of 8, constant 10 ms
 * steps: all-reduce q is entered at 40 (q + 1) ms and takes c(8) < tau T,
 * so nobody blocks and the iterations are T apart. Worker 5 crashes at
 * 0.175 s, before the survivors enter all-reduce 4 at 0.2 s: they enter
 * its collective over the 7 survivors sync_timeout later, at 0.25 s, go
 * on with their local steps meanwhile, and block at their sync 5 (0.24 s)
 * until 0.25 s + c(7): iteration 25 takes T + timeout + c(7) - tau T.
 * Worker 5 rejoins at 0.6 s: the first anchor formed after that is sent to
 * it (alpha + S/B) and it starts from it; the iteration it first completes
 * takes T + c(7) + alpha + S/B (the anchor formed c(7) after the
 * survivors' sync). Every other iteration takes T. */
Test(faults, overlap_local_sgd_crash_blocks_once_for_the_timeout)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.175s,crash,5,\n"
                     "0.6s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    const char *sets[] = {set, "algorithm.name=overlap_local_sgd", "algorithm.local_steps=4",
                          "network.topology=complete", "network.latency=20us",
                          "network.bandwidth=1GB/s", "workload.sim_params=1000000",
                          "faults.sync_timeout=50ms"};
    static times ts;
    ts.n = 0;
    harness h;
    h_build(&h, base_ini, sets, 8);
    h.probe = record_time;
    h.probe_ctx = &ts;
    h_run(&h, 120);
    const double S = 4e6, a = 20e-6, B = 1e9, T = 0.01, to = 0.05, tau = 4;
    const double c7 = 2 * 6 * (a + S / (7 * B));
    const double blocked = T + to + c7 - tau * T, joined = T + c7 + a + S / B;
    cr_assert_eq(ts.n, 120);
    cr_assert(fabs(ts.t[0] - T) < 1e-9);
    int n_blocked = 0, n_joined = 0;
    for (int i = 1; i < ts.n; i++) {
        double dt = ts.t[i] - ts.t[i - 1];
        if (i == 24) {
            cr_assert(fabs(dt - blocked) < 1e-7, "iteration 25: %.9f vs %.9f", dt, blocked);
            n_blocked++;
        } else if (ts.t[i - 1] > 0.6 && fabs(dt - joined) < 1e-7) {
            n_joined++;
        } else {
            cr_assert(fabs(dt - T) < 1e-7, "iteration %d: %.9f", i + 1, dt);
        }
    }
    cr_assert_eq(n_blocked, 1);
    cr_assert_eq(n_joined, 1);
    cr_assert_eq(h.env->w[5].down, 0);
    /* 7 batches an iteration while worker 5 is down */
    int64_t w5 = h.env->w[5].steps;
    cr_assert(w5 > 20 && w5 < 80, "worker 5 took %lld steps", (long long)w5);
    h_free(&h);
    unlink(path);
}

typedef struct overlap_probe {
    float x0[8][64];   /* the initial models */
    double z0[64];     /* the expected anchor */
    double stale[64];  /* worker 5's model while it is down */
    double max_err;    /* |evaluated model - z0| from iteration 5 on */
    int checked;       /* iterations checked */
    int moved, near_lr, coords; /* the joiner's first step: coordinates moved by lr (1%) */
    double lr;
    int adam;
} overlap_probe;

static void probe_overlap(harness *h)
{
    overlap_probe *p = h->probe_ctx;
    const int64_t d = h->env->d;
    const float *x5 = h->env->w[5].x;
    if (!p->adam) {
        /* at a sync iteration the probe runs before the last worker's sync */
        if (h->env->iterations < 5 || h->env->iterations % 4 == 0)
            return;
        float scratch[64];
        const float *m = h->vt->model(h->alg, scratch);
        for (int64_t j = 0; j < d; j++)
            p->max_err = fmax(p->max_err, fabs(m[j] - p->z0[j]));
        p->checked++;
        return;
    }
    if (sim_time_to_s(sim_engine_now(h->eng)) < 0.1) {
        for (int64_t j = 0; j < d; j++)
            p->stale[j] = x5[j];
        return;
    }
    if (p->moved || h->env->w[5].down)
        return;
    int changed = 0;
    for (int64_t j = 0; j < d; j++)
        changed |= x5[j] != (float)p->stale[j];
    if (!changed)
        return;
    /* the joiner's first step from the anchor z0 (= the initial mean) */
    p->moved = 1;
    for (int64_t j = 0; j < d; j++) {
        p->near_lr += fabs(fabs(x5[j] - p->z0[j]) / p->lr - 1) < 0.01;
        p->coords++;
    }
}

/* overlap_local_sgd, tau = 4, independent initial models, ideal network;
 * worker 5 crashes at 15 ms, before its sync 0, and rejoins at 0.1 s.
 * With lr = 1e-30 and pull 0.5 only the pulls move the models: the
 * survivors' sync 0 gives x_i = (x_i^0 + m8)/2 (m8: the mean of the 8
 * initial models, the first anchor), so the anchor over the 7 members is
 * z0 = (m7 + m8)/2 (m7: the survivors' mean) and every later pull keeps
 * the live workers' mean at z0; the joiner takes an anchor (z0) as its
 * model, so the evaluated model (the live mean) is z0 from iteration 5 to
 * the end (float rounding 1e-6; the iterations ending with a sync are
 * reported before the last worker's pull, as without crashes, and are
 * skipped). An anchor over all 8 (worker 5's stale
 * buffer) or a joiner keeping its old model would move it by more than
 * 1e-3. With pull 1 every sync sets x_i to the anchor, which stays the
 * initial mean; with Adam (lr = 1e-3) the joiner's first step from it moves
 * every coordinate by lr (a fresh state's first step, lr g/(|g| + eps)). */
Test(faults, overlap_local_sgd_anchor_is_the_members_mean_and_a_joiner_starts_fresh)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n"
                     "0.015s,crash,5,\n"
                     "0.1s,rejoin,5,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static overlap_probe p;
    for (int adam = 0; adam < 2; adam++) {
        const char *sets[] = {set, "algorithm.name=overlap_local_sgd", "algorithm.local_steps=4",
                              "workload.init=independent", "faults.sync_timeout=20ms",
                              adam ? "algorithm.lr=1e-3" : "algorithm.lr=1e-30",
                              adam ? "algorithm.optimizer=adam" : "algorithm.optimizer=sgd",
                              adam ? "algorithm.pull=1" : "algorithm.pull=0.5"};
        memset(&p, 0, sizeof p);
        p.lr = 1e-3;
        p.adam = adam;
        harness h;
        h_build(&h, base_ini, sets, 8);
        const int64_t d = h.env->d;
        cr_assert_leq(d, 64);
        double gap = 0;
        for (int64_t j = 0; j < d; j++) {
            double m7 = 0, m8 = 0;
            for (int i = 0; i < 8; i++) {
                m8 += h.env->w[i].x[j] / 8.0;
                if (i != 5)
                    m7 += h.env->w[i].x[j] / 7.0;
            }
            p.z0[j] = adam ? m8 : (m7 + m8) / 2;
            gap = fmax(gap, fabs(m7 - m8));
        }
        cr_assert_gt(gap, 2e-3, "m7 and m8 differ by %g", gap);
        h.probe = probe_overlap;
        h.probe_ctx = &p;
        h_run(&h, 80);
        if (!adam) {
            cr_assert_gt(p.checked, 50);
            cr_assert_lt(p.max_err, 1e-6, "%g", p.max_err);
            cr_assert_gt(h.env->w[5].steps, 30, "the joiner took %lld steps",
                         (long long)h.env->w[5].steps);
        } else {
            cr_assert(p.moved, "the joiner never stepped");
            cr_assert_geq(p.near_lr, 0.9 * p.coords, "%d of %d coordinates moved by lr",
                          p.near_lr, p.coords);
        }
        h_free(&h);
    }
    unlink(path);
}

typedef struct eval_probe {
    times t;
    double m[128]; /* per iteration: the evaluated model's coordinates summed */
} eval_probe;

static void probe_eval(harness *h)
{
    eval_probe *p = h->probe_ctx;
    float scratch[64];
    const float *m = h->vt->model(h->alg, scratch);
    double sum = 0;
    for (int64_t j = 0; j < h->env->d; j++)
        sum += m[j] * (double)(j + 1);
    if (p->t.n < 128)
        p->m[p->t.n] = sum;
    record_time(h);
}

/* overlap_local_sgd with a crash scheduled after the end (so the group
 * path runs but no crash happens) equals the run without faults bit for
 * bit: the same iteration times, evaluated models (an iteration ending
 * with a sync is reported before the last worker's pull) and final
 * models; anchor momentum 0.5, exponential compute. */
Test(faults, overlap_local_sgd_group_path_without_a_crash_equals_the_plain_run)
{
    char path[64], set[96];
    write_file(path, "time,event,target,value\n100s,crash,3,\n");
    snprintf(set, sizeof set, "faults.schedule=%s", path);
    static eval_probe ep[2];
    static float x[2][8][64];
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"algorithm.name=overlap_local_sgd", "algorithm.local_steps=3",
                              "algorithm.anchor_momentum=0.5", "workers.compute=exponential(10ms)",
                              "network.topology=star", set};
        memset(&ep[k], 0, sizeof ep[k]);
        harness h;
        h_build(&h, base_ini, sets, k ? 6 : 5);
        cr_assert_eq(algo_env_crashes(h.env), k);
        cr_assert_leq(h.env->d, 64);
        h.probe = probe_eval;
        h.probe_ctx = &ep[k];
        h_run(&h, 90);
        for (int i = 0; i < 8; i++)
            memcpy(x[k][i], h.env->w[i].x, (size_t)h.env->d * sizeof(float));
        h_free(&h);
    }
    cr_assert_eq(ep[0].t.n, 90);
    cr_assert_eq(ep[1].t.n, 90);
    cr_assert_eq(memcmp(ep[0].t.t, ep[1].t.t, 90 * sizeof(double)), 0);
    cr_assert_eq(memcmp(ep[0].m, ep[1].m, 90 * sizeof(double)), 0);
    cr_assert_eq(memcmp(x[0], x[1], sizeof x[0]), 0);
    unlink(path);
}
