/* The timeline recorder (experiment/trace.c) and its export (analysis/
 * trace.c): the spans add up to the workers table's counters, a ring
 * all-reduce's sends match its closed form, a crash leaves a lost step and
 * a down span, the bound stops recording without stopping the run, trace
 * off writes nothing, and `dtsim trace` writes JSON that python3's json
 * module reads with the Chrome trace format's required fields. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/trace.h"
#include "experiment/experiment.h"
#include "tests/common.h"

/* A ring all-reduce on a 4-host ring at 1 Gb/s, no latency: softmax on
 * blobs(4, 10): d = 44, S = 176 bytes. */
static const char *const ring_ini = "[experiment]\n"
                                    "max_iterations = 6\n"
                                    "max_epochs = 0\n"
                                    "eval_every = 3\n"
                                    "trace = on\n"
                                    "[workers]\n"
                                    "count = 4\n"
                                    "compute = constant(10ms)\n"
                                    "[network]\n"
                                    "topology = ring\n"
                                    "bandwidth = 1Gbps\n"
                                    "latency = 0\n"
                                    "[algorithm]\n"
                                    "name = allreduce_sgd\n"
                                    "batch = 16\n"
                                    "[workload]\n"
                                    "model = softmax\n"
                                    "dataset = blobs(4, 10, 400)\n";

/* Runs ini with sets into a fresh database; returns its path. */
static const char *traced_run(const char *ini, const char *const *sets, int n,
                              xp_run_result *res)
{
    const char *path = test_db_path("trace.db");
    sim_err err = {0};
    an_db *db = an_db_open(path, &err);
    cr_assert_not_null(db, "%s", err.msg);
    xp_run_opts o = {.db = db};
    xp_run_result r = test_run_opts(ini, sets, n, &o);
    an_db_close(db);
    if (res)
        *res = r;
    return path;
}

/* Every worker's spans of a state add up to a workers column (seconds). */
static void assert_spans_match(const char *path, const char *state, const char *column)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT max(abs(coalesce((SELECT sum(s.end - s.start) FROM spans s WHERE"
             " s.run_id = w.run_id AND s.worker = w.worker AND s.state = '%s'), 0) - w.%s))"
             " FROM workers w",
             state, column);
    double worst = test_sql_real(path, sql);
    cr_assert_lt(worst, 1e-9, "%s spans vs workers.%s: off by %g s", state, column, worst);
}

Test(trace, ring_allreduce_spans_match_the_counters_and_the_closed_form)
{
    xp_run_result r;
    const char *path = traced_run(ring_ini, NULL, 0, &r);
    cr_assert_str_eq(r.status, "done");
    cr_assert_eq(r.trace_dropped, 0);
    assert_spans_match(path, "compute", "compute_time");
    assert_spans_match(path, "idle", "idle_time");
    cr_assert_gt(test_sql_real(path, "SELECT sum(compute_time) FROM workers"), 0.2);
    /* each iteration: 2 (n - 1) sends of S / n bytes at B, back to back */
    const double n = 4, S = 176, B = 1e9 / 8, iters = 6;
    const double closed = iters * 2 * (n - 1) * (S / n) / B;
    for (int w = 0; w < 4; w++) {
        char sql[160];
        snprintf(sql, sizeof sql,
                 "SELECT sum(end - start) FROM spans WHERE state = 'send' AND worker = %d", w);
        cr_assert_float_eq(test_sql_real(path, sql), closed, 1e-12, "worker %d", w);
    }
    /* links: every load row is in [0, S / n]; the last of each link is 0 */
    cr_assert_gt(test_sql_int(path, "SELECT count(*) FROM link_load"), 0);
    cr_assert_float_eq(test_sql_real(path, "SELECT max(bytes) FROM link_load"), S / n, 1e-9);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM link_load l WHERE sim_time ="
                                    " (SELECT max(sim_time) FROM link_load m WHERE"
                                    " m.link = l.link) AND bytes > 1e-9"),
                 0);
}

/* A straggler (worker 2, 3x slower) and a crash on a decentralized
 * method: compute and idle still add up; worker 5 crashes at 95 ms, about 5 ms
 * into its step started at about 90 ms: a lost span of 5 ms, then a down span
 * to the run's end. */
Test(trace, a_crash_leaves_a_lost_step_and_a_down_span)
{
    char sched[64], set[96];
    test_write_temp(sched, "time,event,target,value\n0.095s,crash,5,\n0s,slowdown,2,3\n");
    snprintf(set, sizeof set, "faults.schedule=%s", sched);
    const char *sets[] = {set, "experiment.max_iterations=40", "experiment.trace=on",
                          "network.topology=ring", "network.bandwidth=1Gbps"};
    xp_run_result r;
    const char *path = traced_run(test_base_ini, sets, 5, &r);
    unlink(sched);
    cr_assert_str_eq(r.status, "done");
    assert_spans_match(path, "compute", "compute_time");
    assert_spans_match(path, "idle", "idle_time");
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM spans WHERE state = 'lost'"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT worker FROM spans WHERE state = 'lost'"), 5);
    cr_assert_float_eq(test_sql_real(path, "SELECT end - start FROM spans WHERE state = 'lost'"),
                       0.005, 1e-4); /* its step started 90 ms + a few messages' us */
    cr_assert_float_eq(test_sql_real(path, "SELECT start FROM spans WHERE state = 'down'"),
                       0.095, 1e-12);
    cr_assert_float_eq(test_sql_real(path, "SELECT end FROM spans WHERE state = 'down'"),
                       r.sim_time, 1e-9);
    cr_assert_gt(test_sql_real(path, "SELECT sum(end - start) FROM spans WHERE worker <> 2"
                                     " AND state = 'idle'"),
                 0.0, "the others wait for the straggler");
}

Test(trace, the_bound_stops_recording_not_the_run)
{
    const char *sets[] = {"experiment.trace_max_events=50"};
    xp_run_result r;
    const char *path = traced_run(ring_ini, sets, 1, &r);
    cr_assert_str_eq(r.status, "done");
    cr_assert_eq(r.iterations, 6);
    cr_assert_gt(r.trace_dropped, 0);
    cr_assert_eq(test_sql_int(path, "SELECT (SELECT count(*) FROM spans) +"
                                    " (SELECT count(*) FROM link_load)"),
                 50);
}

Test(trace, off_writes_nothing_and_a_bad_bound_is_a_config_error)
{
    const char *off[] = {"experiment.trace=off"};
    const char *path = traced_run(ring_ini, off, 1, NULL);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM spans"), 0);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM link_load"), 0);
    sim_err err = {0};
    xp_run_result r;
    const char *bad[] = {"experiment.trace_max_events=0"};
    cr_assert_eq(test_run_try(ring_ini, bad, 1, NULL, &r, &err), SIM_ECONFIG);
    cr_assert(strstr(err.msg, "trace_max_events=0: expected a number of rows >= 1, got 0"), "%s",
              err.msg);
}

/* dtsim trace: JSON that json.load reads, with a thread name per worker
 * and the required fields of each event kind; an untraced run and an
 * unknown one are input errors. */
Test(trace, export_is_valid_chrome_trace_json)
{
    const char *path = traced_run(ring_ini, NULL, 0, NULL);
    const char *dir = test_tmpdir();
    char args[8400], out[4096];
    snprintf(args, sizeof args, "trace %s --run 1 -o t.json", path);
    cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "trace: run 1, "), "%s", out);
    const char *py = test_write_file(
        dir, "check.py",
        "import json, sys\n"
        "t = json.load(open(sys.argv[1]))\n"
        "ev = t['traceEvents']\n"
        "need = {'X': ['name', 'ph', 'ts', 'dur', 'pid', 'tid'],\n"
        "        'C': ['name', 'ph', 'ts', 'pid', 'args'],\n"
        "        'M': ['name', 'ph', 'pid', 'tid', 'args']}\n"
        "for e in ev:\n"
        "    for k in need[e['ph']]:\n"
        "        assert k in e, (k, e)\n"
        "    if e['ph'] == 'X':\n"
        "        assert e['dur'] >= 0 and e['ts'] >= 0, e\n"
        "names = {e['args']['name'] for e in ev if e['name'] == 'thread_name'}\n"
        "assert {'worker 0', 'worker 3'} <= names, names\n"
        "kinds = {e['name'] for e in ev if e['ph'] == 'X'}\n"
        "assert {'compute', 'send'} <= kinds, kinds\n"
        "assert any(e['ph'] == 'C' for e in ev)\n"
        "print('ok', len(ev))\n");
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "cd %s && python3 -m json.tool t.json >/dev/null && python3 %s t.json",
             dir, py);
    cr_assert_eq(system(cmd), 0, "the JSON fails python3's checks");
    /* run 1 exists but a second, untraced one does not have a timeline */
    const char *off[] = {"experiment.trace=off"};
    path = traced_run(ring_ini, off, 1, NULL);
    snprintf(args, sizeof args, "trace %s --run 1 -o t.json", path);
    cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 2);
    cr_assert(strstr(out, "run 1 has no timeline (run it with [experiment] trace = on)"), "%s",
              out);
    snprintf(args, sizeof args, "trace %s --run 7 -o t.json", path);
    cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 2);
    cr_assert(strstr(out, "no run 7"), "%s", out);
}

/* dtsim plot --timeline writes a PNG; a window after the run's end is a
 * usage error naming the run's end. */
Test(trace, timeline_plot_and_its_window)
{
    const char *path = traced_run(ring_ini, NULL, 0, NULL);
    const char *dir = test_tmpdir();
    char args[8400], out[4096];
    snprintf(args, sizeof args, "plot %s --run 1 --timeline --from 5ms --to 25ms -o tl.png",
             path);
    cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "plot: timeline of run 1, "), "%s", out);
    char png[4200];
    snprintf(png, sizeof png, "%s/tl.png", dir);
    FILE *f = fopen(png, "rb");
    cr_assert_not_null(f);
    unsigned char sig[8] = {0};
    cr_assert_eq(fread(sig, 1, 8, f), 8);
    fclose(f);
    cr_assert_eq(memcmp(sig, "\x89PNG", 4), 0);
    snprintf(args, sizeof args, "plot %s --run 1 --timeline --from 2 -o tl.png", path);
    cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 2);
    cr_assert(strstr(out, "the window is empty (run 1 ends at 0.06"), "%s", out);
}

/* A timeline cut by trace_max_events, or of a run that did not finish, is
 * exported and drawn with a warning saying where it stops (and the JSON
 * carries the note); a window after that point is an error naming it. */
Test(trace, a_cut_or_partial_timeline_is_said)
{
    const char *sets[] = {"experiment.trace_max_events=50"};
    const char *path = traced_run(ring_ini, sets, 1, NULL);
    double last = test_sql_real(path, "SELECT max(end) FROM spans");
    double end = test_sql_real(path, "SELECT sim_time FROM runs");
    cr_assert_lt(last, end, "50 rows stop before the run's end");
    const char *dir = test_tmpdir();
    char args[8400], out[4096], want[512];
    snprintf(args, sizeof args, "trace %s --run 1 -o t.json", path);
    cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 0, "%s", out);
    snprintf(want, sizeof want, "dtsim: warning: run 1: the timeline reached [experiment] "
             "trace_max_events = 50 rows: nothing after %g s was recorded (the run went on to "
             "%g s)\n", last, end);
    cr_assert(strstr(out, want), "want '%s' in: %s", want, out);
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "cd %s && python3 -c \"import json; n = json.load(open('t.json'))"
             "['otherData']['note']; assert 'trace_max_events = 50' in n, n\"", dir);
    cr_assert_eq(system(cmd), 0, "the JSON's otherData.note");
    snprintf(args, sizeof args, "plot %s --run 1 --timeline -o tl.png", path);
    cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, want), "%s", out);
    snprintf(args, sizeof args, "plot %s --run 1 --timeline --from %.9f -o tl.png", path,
             last + 1e-3);
    cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 2, "%s", out);
    snprintf(want, sizeof want, "run 1's timeline stops at %g s, so the window shows nothing",
             last);
    cr_assert(strstr(out, want), "%s", out);

    /* a run that failed keeps what it recorded: said too */
    path = traced_run(ring_ini, NULL, 0, NULL);
    test_sql_exec(path, "UPDATE runs SET status = 'failed'");
    snprintf(args, sizeof args, "trace %s --run 1 -o t.json", path);
    cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "dtsim: warning: run 1: the run did not finish (status not done): "
                          "its timeline is partial, up to "), "%s", out);
    /* a complete one: no warning */
    test_sql_exec(path, "UPDATE runs SET status = 'done'");
    cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 0, "%s", out);
    cr_assert_null(strstr(out, "warning"), "%s", out);
}

/* An output trace cannot write is exit 2 naming it, as plot's: a picture
 * name (no JSON in a .png), a missing folder, a folder. */
Test(trace, unwritable_or_wrong_outputs_are_exit_2)
{
    const char *path = traced_run(ring_ini, NULL, 0, NULL);
    const char *dir = test_tmpdir();
    char args[8400], out[4096], d[4200];
    snprintf(d, sizeof d, "%s/d.json", dir);
    cr_assert_eq(mkdir(d, 0755), 0);
    static const char *const cases[][3] = {
        {"trace", "-o x.png", "-o 'x.png': dtsim trace writes a Chrome trace, a file ending in "
                              ".json (a picture of the timeline: dtsim plot DB --run ID "
                              "--timeline -o FILE.png)"},
        {"trace", "-o nodir/t.json", "nodir/t.json: cannot write: No such file or directory"},
        {"trace", "-o d.json", "d.json: cannot write: Is a directory"},
        {"plot", "--timeline -o nodir/t.png", "nodir/t.png: cannot write: No such file or "
                                              "directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "%s %s --run 1 %s", cases[i][0], path, cases[i][1]);
        cr_assert_eq(test_dtsim(dir, args, out, sizeof out), 2, "%s: %s", args, out);
        cr_assert(strstr(out, cases[i][2]), "%s: %s", args, out);
    }
    snprintf(d, sizeof d, "%s/x.png", dir);
    FILE *f = fopen(d, "rb");
    cr_assert_null(f, "no file written");
}
