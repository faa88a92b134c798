/* analysis/scaling.c: `dtsim report --scaling`: grouping of runs that differ
 * only in the worker count, throughput and scaling factors on a database
 * with known answers, and its text and CSV. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/db.h"
#include "analysis/scaling.h"
#include "tests/analysis/fixtures.h"
#include "tests/common.h"

/* The groups of fx_scaling_db, in report order. */
static const struct {
    int group;
    int64_t id;
    int n, ref;
    double thr, scaling;
} expect[] = {
    {1, 2, 1, 1, 100, 1.0}, {1, 3, 2, 1, 180, 0.9}, {1, 1, 4, 1, 320, 0.8},
    {2, 5, 2, 2, 200, 1.0}, {2, 4, 4, 2, 360, 0.9}, {3, 6, 8, 8, 800, 1.0},
    {3, 7, 16, 8, 1200, 0.75}, {4, 8, 16, 16, 1200, 1.0},
};
#define N_EXPECT ((int)(sizeof expect / sizeof expect[0]))

Test(scaling, groups_throughput_and_factors)
{
    an_db *db = fx_scaling_db();
    an_scaling sc;
    sim_err err = {0};
    cr_assert_eq(an_scaling_build(db, NULL, 0, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(sc.n_rows, N_EXPECT);
    cr_assert_eq(sc.n_groups, 4);
    for (int i = 0; i < N_EXPECT; i++) {
        const an_scaling_row *r = &sc.rows[i];
        cr_assert_eq(r->group, expect[i].group, "row %d", i);
        cr_assert_eq(r->id, expect[i].id, "row %d: id %lld", i, (long long)r->id);
        cr_assert_eq(r->n_workers, expect[i].n);
        cr_assert_eq(r->ref_workers, expect[i].ref);
        cr_assert_float_eq(r->throughput, expect[i].thr, 1e-9);
        cr_assert_float_eq(r->scaling, expect[i].scaling, 1e-12, "row %d: %g", i,
                           r->scaling);
    }
    cr_assert_str_eq(sc.rows[0].name, "a-n1");
    cr_assert_str_eq(sc.rows[0].algorithm, "allreduce_sgd");
    an_scaling_release(&sc);
    an_scaling_release(NULL);

    /* selected runs: the base is the smallest count among them */
    const int64_t ids[] = {1, 3, 9};
    cr_assert_eq(an_scaling_build(db, ids, 3, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(sc.n_rows, 2);
    cr_assert_eq(sc.rows[0].id, 3);
    cr_assert_eq(sc.rows[1].ref_workers, 2);
    cr_assert_float_eq(sc.rows[1].scaling, 320.0 / (2 * 180.0), 1e-12);
    an_scaling_release(&sc);

    const int64_t bad[] = {1, 42};
    cr_assert_eq(an_scaling_build(db, bad, 2, &sc, &err), SIM_EUSAGE);
    cr_assert(strstr(err.msg, "--run 42"), "%s", err.msg);
    cr_assert_eq(sc.n_rows, 0);
    an_db_close(db);
}

Test(scaling, text_and_csv)
{
    an_db *db = fx_scaling_db();
    an_db_close(db);
    sim_err err = {0};
    char buf[8192];
    FILE *f = tmpfile();
    cr_assert_eq(an_scaling_print(fx_path(), NULL, 0, 1, f, &err), 0, "%s", err.msg);
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    static const char head[] = "group,id,name,algorithm,n_workers,throughput,ref_workers,"
                               "scaling_factor\n1,2,a-n1,allreduce_sgd,1,100,1,1\n"
                               "1,3,a-n2,allreduce_sgd,2,180,1,0.9\n"
                               "1,1,a-n4,allreduce_sgd,4,320,1,0.8\n";
    cr_assert(strncmp(buf, head, strlen(head)) == 0, "%s", buf);
    int lines = 0;
    for (const char *p = buf; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 1 + N_EXPECT);

    f = tmpfile();
    cr_assert_eq(an_scaling_print(fx_path(), NULL, 0, 0, f, &err), 0, "%s", err.msg);
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strstr(buf, "scaling") && strstr(buf, "0.750") && strstr(buf, "1200.0"), "%s",
              buf);

    /* an empty database and a missing file */
    char empty[4096];
    snprintf(empty, sizeof empty, "%s/empty.db", test_tmpdir());
    an_db *e = an_db_open(empty, &err);
    cr_assert_not_null(e, "%s", err.msg);
    an_db_close(e);
    f = tmpfile();
    cr_assert_eq(an_scaling_print(empty, NULL, 0, 0, f, &err), 0, "%s", err.msg);
    test_stream_read(f, buf, sizeof buf);
    fclose(f);
    cr_assert(strstr(buf, "no finished runs"), "%s", buf);
    snprintf(empty, sizeof empty, "%s/missing.db", test_tmpdir());
    cr_assert_lt(an_scaling_print(empty, NULL, 0, 0, stdout, &err), 0);
    cr_assert(strstr(err.msg, "missing.db"), "%s", err.msg);
}
