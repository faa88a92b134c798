/* dtsim sweep --part K/N and dtsim merge: the parts of a sweep, run as
 * separate processes into their own databases and merged, give the rows
 * of the same sweep run in one process; the refusals leave the output as
 * it was. Runs the built dtsim binary (DTSIM_EXE, set by meson test). */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"

static char out_text[65536];

static int dtsim(const char *dir, const char *args)
{
    return test_dtsim(dir, args, out_text, sizeof out_text);
}

static const char *small_ini = "[experiment]\n"
                               "name = small\n"
                               "max_epochs = 0\n"
                               "max_iterations = 30\n"
                               "eval_every = 10\n"
                               "[workers]\n"
                               "count = 4\n"
                               "compute = lognormal(1ms, 0.5)\n"
                               "[topology]\n"
                               "graph = ring\n"
                               "[algorithm]\n"
                               "name = allreduce_sgd\n"
                               "[workload]\n"
                               "model = softmax\n"
                               "dataset = blobs(3, 5, 600)\n";

/* Every row of the result tables, each run's rows under its config (the
 * run ids differ between databases; the configs identify the runs), in
 * config order: one text to compare. The caller frees it. */
static char *dump(const char *dir, const char *db)
{
    static const char *const sql[] = {
        "SELECT r.config, r.status, r.sim_time, r.iterations, r.bytes_sent,"
        " r.final_train_loss, r.final_test_accuracy FROM runs r ORDER BY r.config",
        "SELECT r.config, m.sim_time, m.iteration, m.train_loss, m.test_loss,"
        " m.test_accuracy, m.consensus_distance, m.bytes_sent FROM metrics m JOIN runs r"
        " ON r.id = m.run_id ORDER BY r.config, m.rowid",
        "SELECT r.config, w.worker, w.steps, w.compute_time, w.idle_time, w.bytes_sent"
        " FROM workers w JOIN runs r ON r.id = w.run_id ORDER BY r.config, w.rowid",
        "SELECT r.config, p.key, p.value FROM params p JOIN runs r ON r.id = p.run_id"
        " ORDER BY r.config, p.rowid",
        "SELECT r.config, s.staleness, s.count FROM staleness s JOIN runs r"
        " ON r.id = s.run_id ORDER BY r.config, s.rowid",
        "SELECT r.config, l.worker, l.label, l.count FROM labels l JOIN runs r"
        " ON r.id = l.run_id ORDER BY r.config, l.rowid",
    };
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, db);
    sqlite3 *h = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    text[0] = '\0';
    for (size_t q = 0; q < sizeof sql / sizeof *sql; q++) {
        sqlite3_stmt *st = NULL;
        cr_assert_eq(sqlite3_prepare_v2(h, sql[q], -1, &st, NULL), SQLITE_OK, "%s",
                     sqlite3_errmsg(h));
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                char cell[4096];
                if (sqlite3_column_type(st, c) == SQLITE_FLOAT)
                    snprintf(cell, sizeof cell, "%a|", sqlite3_column_double(st, c));
                else
                    snprintf(cell, sizeof cell, "%s|",
                             sqlite3_column_text(st, c) ? (const char *)sqlite3_column_text(st, c)
                                                         : "NULL");
                size_t n = strlen(cell);
                while (len + n + 2 > cap) {
                    cap *= 2;
                    text = realloc(text, cap);
                    cr_assert_not_null(text);
                }
                memcpy(text + len, cell, n + 1);
                len += n;
            }
            text[len++] = '\n';
            text[len] = '\0';
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return text;
}

/* Runs in dir/db; -1 when the file does not exist. */
static int runs_in(const char *dir, const char *db)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, db);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    fclose(f);
    return (int)test_sql_int(path, "SELECT count(*) FROM runs");
}

#define GRID "--grid algorithm.name=allreduce_sgd,dpsgd,asgd --seeds 1-3 --quiet"

/* 9 configurations in 4 parts (3, 2, 2, 2 of them: configuration i goes to
 * part i mod 4 + 1), merged: the rows of the one-process sweep, run for
 * run; merged again, nothing is added. */
Test(merge, parts_merged_equal_the_one_process_sweep, .timeout = 300)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    cr_assert_eq(dtsim(dir, "sweep small.ini " GRID " --db one.db"), 0, "%s", out_text);
    const int want[4] = {3, 2, 2, 2};
    for (int k = 1; k <= 4; k++) {
        char args[512];
        snprintf(args, sizeof args, "sweep small.ini " GRID " --part %d/4 --db part-%d.db", k,
                 k);
        cr_assert_eq(dtsim(dir, args), 0, "%s", out_text);
        char line[128];
        snprintf(line, sizeof line, "sweep: %d configurations: %d run,", want[k - 1],
                 want[k - 1]);
        cr_assert(strstr(out_text, line), "part %d: %s", k, out_text);
        snprintf(line, sizeof line, "part-%d.db", k);
        cr_assert_eq(runs_in(dir, line), want[k - 1]);
    }
    /* part 2 holds configurations 2 and 6 of 9 (1-based), the order's 2nd and 6th */
    cr_assert_eq(dtsim(dir, "sweep small.ini " GRID " --part 2/4 --db part-2.db"), 0);
    cr_assert(strstr(out_text, "[2/9] skip") && strstr(out_text, "[6/9] skip"), "%s", out_text);
    cr_assert_eq(dtsim(dir, "merge all.db part-1.db part-2.db part-3.db part-4.db"), 0, "%s",
                 out_text);
    cr_assert(strstr(out_text, "merge: 9 runs from 4 databases -> all.db"), "%s", out_text);
    char *one = dump(dir, "one.db"), *all = dump(dir, "all.db");
    cr_assert_gt(strlen(one), 1000);
    cr_assert_str_eq(all, one);
    free(all);
    cr_assert_eq(dtsim(dir, "merge all.db part-3.db"), 0, "%s", out_text);
    cr_assert(strstr(out_text, "part-3.db: 0 runs merged"), "%s", out_text);
    all = dump(dir, "all.db");
    cr_assert_str_eq(all, one);
    free(all);
    free(one);
}

/* Bad --part values are usage errors that run nothing. */
Test(merge, bad_parts_are_refused)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    const char *bad[] = {"0/4", "5/4", "3", "a/b", "1/0", "2/4x", "-1/4", "1/"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char args[256];
        snprintf(args, sizeof args, "sweep small.ini " GRID " --part %s --db p.db", bad[i]);
        cr_assert_eq(dtsim(dir, args), 2, "%s: %s", bad[i], out_text);
        cr_assert(strstr(out_text, "--part: expected K/N"), "%s: %s", bad[i], out_text);
        cr_assert_eq(runs_in(dir, "p.db"), -1, "%s ran something", bad[i]);
    }
}

/* A part of another experiment, a file that is not a database, a missing
 * part: exit 2 naming the file, and nothing written, even when the bad
 * part comes after good ones; --force merges another experiment. */
Test(merge, other_experiments_and_bad_files_are_refused_before_writing, .timeout = 300)
{
    const char *dir = test_tmpdir();
    test_write_file(dir, "small.ini", small_ini);
    cr_assert_eq(dtsim(dir, "sweep small.ini " GRID " --part 1/2 --db a.db"), 0, "%s", out_text);
    cr_assert_eq(dtsim(dir, "sweep small.ini " GRID " --part 2/2 --db b.db"), 0, "%s", out_text);
    cr_assert_eq(dtsim(dir, "run small.ini --quiet --set experiment.name=other --db o.db"), 0,
                 "%s", out_text);
    test_write_file(dir, "junk.db", "not a database, just text\n");
    cr_assert_eq(dtsim(dir, "merge out.db a.db"), 0, "%s", out_text);
    cr_assert_eq(runs_in(dir, "out.db"), 5);

    cr_assert_eq(dtsim(dir, "merge out.db b.db o.db"), 2, "%s", out_text);
    cr_assert(strstr(out_text, "o.db: runs of experiment other, but out.db holds small"), "%s",
              out_text);
    cr_assert_eq(runs_in(dir, "out.db"), 5, "b.db must not be merged before the refusal");
    cr_assert_eq(dtsim(dir, "merge out.db b.db junk.db"), 2, "%s", out_text);
    cr_assert(strstr(out_text, "junk.db: not a dtsim results database"), "%s", out_text);
    cr_assert_eq(dtsim(dir, "merge out.db b.db missing.db"), 2, "%s", out_text);
    cr_assert(strstr(out_text, "missing.db"), "%s", out_text);
    cr_assert_eq(runs_in(dir, "out.db"), 5);
    cr_assert_eq(dtsim(dir, "merge out.db"), 2, "%s", out_text);
    cr_assert(strstr(out_text, "missing PART.db"), "%s", out_text);
    /* into an empty output, the first part sets the experiment */
    cr_assert_eq(dtsim(dir, "merge fresh.db o.db a.db"), 2, "%s", out_text);
    cr_assert(strstr(out_text, "a.db: runs of experiment small, but o.db holds other"), "%s",
              out_text);

    cr_assert_eq(dtsim(dir, "merge out.db b.db o.db --force"), 0, "%s", out_text);
    cr_assert_eq(runs_in(dir, "out.db"), 10);
}
