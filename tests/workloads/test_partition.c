/* partition: coverage and balance of iid/contiguous, determinism, label
 * skew of dirichlet and shards, error paths, and the batch sampler. */
#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/dataset_impl.h"
#include "workloads/partition.h"

static gsl_rng *rng_new(unsigned long seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    return r;
}

/* n samples of dim 2 with x = (i, -i) and label (i / per_class) % classes
 * (sorted by label when per_class * classes == n), or regression. */
static wl_dataset *hand(int64_t n, int classes, int64_t per_class)
{
    sim_err err = {0};
    wl_dataset *ds = wl_dataset_alloc("hand", 2, classes, n, 1, &err);
    cr_assert_not_null(ds);
    for (int64_t i = 0; i < n; i++) {
        ds->train.x[2 * i] = (float)i;
        ds->train.x[2 * i + 1] = (float)-i;
        ds->train.y[i] = classes ? (float)((i / per_class) % classes) : (float)i * 0.5f;
    }
    return ds;
}

static wl_partition *part(const wl_dataset *ds, int w, const char *spec, unsigned long seed)
{
    sim_err err = {0};
    gsl_rng *r = rng_new(seed);
    wl_partition *p = wl_partition_create(ds, w, spec, r, &err);
    gsl_rng_free(r);
    cr_assert_not_null(p, "%s: %s", spec, err.msg);
    return p;
}

/* every index exactly once; every worker non-empty */
static void check_cover(const wl_partition *p, int64_t n)
{
    char *seen = calloc((size_t)n, 1);
    cr_assert_eq(p->offset[0], 0);
    cr_assert_eq(p->offset[p->n_workers], n);
    for (int w = 0; w < p->n_workers; w++)
        cr_assert_gt(wl_partition_size(p, w), 0, "worker %d empty", w);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = p->index[i];
        cr_assert(k >= 0 && k < n && !seen[k], "index %lld", (long long)k);
        seen[k] = 1;
    }
    free(seen);
}

static void check_even(const wl_partition *p)
{
    int64_t lo = INT64_MAX, hi = 0;
    for (int w = 0; w < p->n_workers; w++) {
        int64_t s = wl_partition_size(p, w);
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
    }
    cr_assert_leq(hi - lo, 1);
}

static int same_partition(const wl_partition *a, const wl_partition *b, int64_t n)
{
    return memcmp(a->offset, b->offset, sizeof(int64_t) * (a->n_workers + 1)) == 0 &&
           memcmp(a->index, b->index, sizeof(int64_t) * n) == 0;
}

Test(partition, iid_and_contiguous_cover_evenly)
{
    wl_dataset *ds = hand(1003, 0, 1);
    wl_partition *a = part(ds, 7, "iid", 1), *b = part(ds, 7, "iid", 1);
    wl_partition *c = part(ds, 7, "iid", 2), *k = part(ds, 7, "contiguous", 1);
    check_cover(a, 1003);
    check_even(a);
    check_cover(k, 1003);
    check_even(k);
    cr_assert(same_partition(a, b, 1003));
    cr_assert_not(same_partition(a, c, 1003));
    /* contiguous: file order, first 1003 mod 7 = 2 workers get 144, the rest 143 */
    for (int64_t i = 0; i < 1003; i++)
        cr_assert_eq(k->index[i], i);
    cr_assert(wl_partition_size(k, 0) == 144 && wl_partition_size(k, 1) == 144 &&
              wl_partition_size(k, 2) == 143);
    /* one worker per sample still works */
    wl_partition *one = part(ds, 1003, "iid", 3);
    check_cover(one, 1003);
    wl_partition_destroy(one);
    wl_partition_destroy(a);
    wl_partition_destroy(b);
    wl_partition_destroy(c);
    wl_partition_destroy(k);
    wl_partition_destroy(NULL);
    wl_dataset_destroy(ds);
}

/* Mean over workers of the largest label share in the worker's shard. */
static double mean_top_share(const wl_partition *p, const wl_dataset *ds)
{
    double sum = 0;
    for (int w = 0; w < p->n_workers; w++) {
        int64_t h[16] = {0}, top = 0, n = wl_partition_size(p, w);
        for (int64_t i = p->offset[w]; i < p->offset[w + 1]; i++)
            h[(int)ds->train.y[p->index[i]]]++;
        for (int k = 0; k < ds->classes; k++)
            top = h[k] > top ? h[k] : top;
        sum += (double)top / (double)n;
    }
    return sum / p->n_workers;
}

/* 10 classes x 500 samples over 10 workers. With alpha = 1000 each worker
 * holds ~10% of every class (its top label share stays below 0.2); with
 * alpha = 0.1 a worker's shard is dominated by one or two labels: the mean
 * top share ranged 0.43..0.79 over seeds 1..300 (uniform would be 0.1), so
 * the bound 0.35 separates the regimes for any seed. */
Test(partition, dirichlet_skew_follows_alpha)
{
    wl_dataset *ds = hand(5000, 10, 1);
    wl_partition *lo = part(ds, 10, "dirichlet(0.1)", 4);
    wl_partition *hi = part(ds, 10, "dirichlet(1000)", 4);
    wl_partition *lo2 = part(ds, 10, "dirichlet(0.1)", 4);
    check_cover(lo, 5000);
    check_cover(hi, 5000);
    cr_assert(same_partition(lo, lo2, 5000));
    double s_lo = mean_top_share(lo, ds), s_hi = mean_top_share(hi, ds);
    cr_assert_gt(s_lo, 0.35, "alpha 0.1: mean top share %g", s_lo);
    cr_assert_lt(s_hi, 0.2, "alpha 1000: mean top share %g", s_hi);
    /* near-uniform: every worker has 500 +- 20% samples */
    for (int w = 0; w < 10; w++) {
        int64_t s = wl_partition_size(hi, w);
        cr_assert(s > 400 && s < 600, "worker %d has %lld", w, (long long)s);
    }
    wl_partition_destroy(lo);
    wl_partition_destroy(lo2);
    wl_partition_destroy(hi);
    wl_dataset_destroy(ds);
}

/* Tiny alpha with as many workers as samples: the Dirichlet draws put each
 * class on one worker, so most workers come out empty and are topped up. */
Test(partition, dirichlet_every_worker_gets_a_sample)
{
    wl_dataset *ds = hand(40, 2, 1);
    wl_partition *p = part(ds, 40, "dirichlet(0.01)", 5);
    check_cover(p, 40);
    for (int w = 0; w < 40; w++)
        cr_assert_eq(wl_partition_size(p, w), 1);
    wl_partition_destroy(p);
    wl_dataset_destroy(ds);
}

static int64_t smallest_share(const wl_partition *p)
{
    int64_t s = wl_partition_size(p, 0);
    for (int w = 1; w < p->n_workers; w++)
        s = wl_partition_size(p, w) < s ? wl_partition_size(p, w) : s;
    return s;
}

/* dirichlet(alpha, min): every seed gives every worker at least min
 * samples (the seeds whose first draw falls short are drawn again, not
 * refused); the count of draws is kept; "min = N" is the same spec. Over
 * seeds 1..40, dirichlet(0.1) on 10 workers leaves some worker below 200
 * samples in most seeds (asserted: at least 10), so the redraw is
 * exercised. */
Test(partition, dirichlet_min_gives_every_worker_a_minimum_on_every_seed)
{
    wl_dataset *ds = hand(5000, 10, 1);
    int short_seeds = 0, redrawn = 0;
    for (unsigned long seed = 1; seed <= 40; seed++) {
        wl_partition *plain = part(ds, 10, "dirichlet(0.1)", seed);
        wl_partition *p = part(ds, 10, "dirichlet(0.1, 200)", seed);
        wl_partition *q = part(ds, 10, "dirichlet(0.1, min = 200)", seed);
        check_cover(p, 5000);
        cr_assert(same_partition(p, q, 5000), "seed %lu", seed);
        cr_assert_geq(smallest_share(p), 200, "seed %lu", seed);
        cr_assert_eq(plain->draws, 1);
        cr_assert_geq(p->draws, 1);
        short_seeds += smallest_share(plain) < 200;
        redrawn += p->draws > 1;
        /* a first draw that meets the minimum is dirichlet(alpha)'s own */
        if (p->draws == 1)
            cr_assert(same_partition(p, plain, 5000), "seed %lu", seed);
        else
            cr_assert(!same_partition(p, plain, 5000), "seed %lu", seed);
        wl_partition_destroy(plain);
        wl_partition_destroy(p);
        wl_partition_destroy(q);
    }
    cr_assert_geq(short_seeds, 10, "only %d of 40 seeds fell short", short_seeds);
    cr_assert_eq(redrawn, short_seeds);
    /* the skew is still there: shares stay far from uniform */
    wl_partition *p = part(ds, 10, "dirichlet(0.1, 200)", 3);
    cr_assert_gt(mean_top_share(p, ds), 0.35);
    wl_partition_destroy(p);
    wl_dataset_destroy(ds);
}

/* The refusals: a minimum the data set cannot hold, one that no draw
 * meets (an exactly even split at alpha 0.01), malformed arguments. */
Test(partition, dirichlet_min_refusals)
{
    wl_dataset *ds = hand(5000, 10, 1);
    gsl_rng *r = rng_new(1);
    sim_err err = {0};
    cr_assert_null(wl_partition_create(ds, 10, "dirichlet(0.1, 501)", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "5010") && strstr(err.msg, "min x workers"), "%s", err.msg);
    cr_assert_null(wl_partition_create(ds, 10, "dirichlet(0.01, 500)", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "dirichlet(0.01, 500)") && strstr(err.msg, "no draw of 1000") &&
                  strstr(err.msg, "lower min"),
              "%s", err.msg);
    const char *bad[] = {"dirichlet(0.1, 0)", "dirichlet(0.1, x)", "dirichlet(0.1, 2, 3)",
                         "dirichlet(0.1, mini = 3)", "dirichlet(0.1, -4)", "dirichlet(0.1, 2.5)"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err = (sim_err){0};
        cr_assert_null(wl_partition_create(ds, 10, bad[i], r, &err), "%s", bad[i]);
        cr_assert_eq(err.code, SIM_ECONFIG, "%s", bad[i]);
        cr_assert(strstr(err.msg, "dirichlet(alpha, min)"), "%s: %s", bad[i], err.msg);
    }
    gsl_rng_free(r);
    wl_dataset_destroy(ds);
}

/* 8 classes of 25 sorted samples, 4 workers, shards(2): 8 shards of 25 are
 * exactly the 8 classes, so every worker holds exactly 2 labels and 50
 * samples, and the workers' labels are disjoint. */
Test(partition, shards_give_k_labels_each)
{
    wl_dataset *ds = hand(200, 8, 25);
    wl_partition *p = part(ds, 4, "shards(2)", 6);
    check_cover(p, 200);
    int owner[8];
    memset(owner, -1, sizeof owner);
    for (int w = 0; w < 4; w++) {
        cr_assert_eq(wl_partition_size(p, w), 50);
        int labels = 0, h[8] = {0};
        for (int64_t i = p->offset[w]; i < p->offset[w + 1]; i++)
            h[(int)ds->train.y[p->index[i]]]++;
        for (int k = 0; k < 8; k++)
            if (h[k]) {
                labels++;
                cr_assert_eq(h[k], 25);
                cr_assert_eq(owner[k], -1);
                owner[k] = w;
            }
        cr_assert_eq(labels, 2);
    }
    /* interleaved labels: shards(1) still sorts first, so each worker of 8
     * gets one whole class */
    wl_dataset *mix = hand(200, 8, 1);
    wl_partition *q = part(mix, 8, "shards(1)", 7);
    check_cover(q, 200);
    for (int w = 0; w < 8; w++) {
        float l = mix->train.y[q->index[q->offset[w]]];
        for (int64_t i = q->offset[w]; i < q->offset[w + 1]; i++)
            cr_assert_eq(mix->train.y[q->index[i]], l);
    }
    wl_partition_destroy(q);
    wl_dataset_destroy(mix);
    wl_partition_destroy(p);
    wl_dataset_destroy(ds);
}

Test(partition, errors)
{
    sim_err err = {0};
    gsl_rng *r = rng_new(1);
    wl_dataset *ds = hand(10, 2, 1), *reg = hand(10, 0, 1);
    cr_assert_null(wl_partition_create(ds, 11, "iid", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "10 training samples") && strstr(err.msg, "11 workers"), "%s",
              err.msg);
    cr_assert_null(wl_partition_create(ds, 2, "random", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "random") && strstr(err.msg, "iid") &&
                  strstr(err.msg, "contiguous") && strstr(err.msg, "dirichlet(alpha[, min])") &&
                  strstr(err.msg, "shards(k)"),
              "%s", err.msg);
    cr_assert_null(wl_partition_create(ds, 2, "dirichlet(0)", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_null(wl_partition_create(ds, 2, "dirichlet", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_null(wl_partition_create(reg, 2, "dirichlet(0.5)", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert(strstr(err.msg, "classification"), "%s", err.msg);
    cr_assert_null(wl_partition_create(ds, 2, "shards(0)", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_null(wl_partition_create(ds, 4, "shards(3)", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_null(wl_partition_create(ds, 2, "iid(3)", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    cr_assert_null(wl_partition_create(ds, 0, "iid", r, &err));
    cr_assert_eq(err.code, SIM_ECONFIG);
    wl_dataset_destroy(ds);
    wl_dataset_destroy(reg);
    gsl_rng_free(r);
}

/* Exact messages of the kinds' own checks and of the common ones. */
Test(partition, error_messages)
{
    static const struct {
        int workers, regression;
        const char *spec, *msg;
    } cases[] = {
        {2, 0, "iid(3)", "partition 'iid(3)': expected iid (no arguments)"},
        {2, 0, "contiguous(1)", "partition 'contiguous(1)': expected contiguous (no arguments)"},
        {2, 0, "dirichlet(inf)", "partition 'dirichlet(inf)': expected dirichlet(alpha) or "
                                 "dirichlet(alpha, min) with alpha > 0 and min >= 1"},
        {2, 1, "dirichlet(0.5)", "partition 'dirichlet(0.5)' needs a classification dataset; "
                                 "'hand' is a regression dataset"},
        {2, 0, "shards(1000001)", "partition 'shards(1000001)': expected shards(k) with k >= 1"},
        {0, 0, "contiguous", "partition 'contiguous': needs at least one worker, got 0"},
        {0, 0, "shards(2)", "partition 'shards(2)': needs at least one worker, got 0"},
        {11, 0, "dirichlet(1)", "partition 'dirichlet(1)': dataset 'hand' has 10 training "
                                "samples, fewer than the 11 workers"},
        {4, 0, "shards(3)", "partition 'shards(3)': dataset 'hand' has 10 training samples, "
                            "fewer than the 12 shards (workers x k)"},
        {2, 0, "blocks", "unknown partition 'blocks' (known: iid, contiguous, "
                         "dirichlet(alpha[, min]), shards(k)..."},
    };
    gsl_rng *r = rng_new(1);
    wl_dataset *ds = hand(10, 2, 1), *reg = hand(10, 0, 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_err err = {0};
        cr_assert_null(wl_partition_create(cases[i].regression ? reg : ds, cases[i].workers,
                                           cases[i].spec, r, &err),
                       "%s", cases[i].spec);
        cr_assert_eq(err.code, SIM_ECONFIG, "%s", cases[i].spec);
        /* "...": the registry's own entries follow (a new one needs no edit here) */
        size_t want = strlen(cases[i].msg);
        if (want > 3 && strcmp(cases[i].msg + want - 3, "...") == 0)
            cr_assert(strncmp(err.msg, cases[i].msg, want - 3) == 0, "%s", err.msg);
        else
            cr_assert_str_eq(err.msg, cases[i].msg);
    }
    wl_dataset_destroy(ds);
    wl_dataset_destroy(reg);
    gsl_rng_free(r);
}

/* An example spec of the kind, or NULL when the test knows none. */
static const char *partition_example(const char *name)
{
    static const char *const example[] = {"iid", "contiguous", "dirichlet(0.5)", "shards(1)"};
    for (size_t i = 0; i < sizeof example / sizeof example[0]; i++)
        if (strncmp(example[i], name, strlen(name)) == 0 &&
            (example[i][strlen(name)] == '\0' || example[i][strlen(name)] == '('))
            return example[i];
    return NULL;
}

/* Every kind is listed with a name, its argument list and a summary; names
 * are unique, wl_partition_find returns each entry itself, and needs_rng
 * says which kinds refuse to run without a stream (for the kinds with an
 * example spec). Invariants only: a new kind needs no edit here. */
Test(partition, registry)
{
    wl_dataset *ds = hand(20, 2, 10);
    for (int n = 0; wl_partition_registry[n]; n++) {
        const wl_partition_vt *vt = wl_partition_registry[n];
        cr_assert(vt->name && vt->name[0], "entry %d has no name", n);
        cr_assert_not_null(vt->args, "%s", vt->name);
        cr_assert(vt->args[0] == '\0' ||
                      (vt->args[0] == '(' && vt->args[strlen(vt->args) - 1] == ')'),
                  "%s: args '%s'", vt->name, vt->args);
        cr_assert(vt->summary && vt->summary[0], "%s has no summary", vt->name);
        cr_assert_not_null(vt->build, "%s", vt->name);
        for (int j = 0; j < n; j++)
            cr_assert_str_neq(wl_partition_registry[j]->name, vt->name);
        cr_assert_eq(wl_partition_find(vt->name), vt, "%s", vt->name);
        const char *example = partition_example(vt->name);
        if (!example)
            continue;
        sim_err err = {0};
        wl_partition *p = wl_partition_create(ds, 2, example, NULL, &err);
        if (vt->needs_rng) {
            cr_assert_null(p, "%s", example);
            cr_assert_eq(err.code, SIM_EINTERNAL, "%s", example);
            cr_assert(strstr(err.msg, "no random stream"), "%s", err.msg);
        } else {
            cr_assert_not_null(p, "%s: %s", example, err.msg);
            wl_partition_destroy(p);
        }
    }
    cr_assert_null(wl_partition_find("random"));
    cr_assert_null(wl_partition_find("shards(2)"));
    cr_assert_null(wl_partition_find(""));
    cr_assert_null(wl_partition_find(NULL));
    wl_dataset_destroy(ds);
}

/* Shard of 60 (worker 1 of 3 on 180 samples), batches of 12: five batches
 * are one pass that holds every shard sample exactly once; the copied rows
 * match the dataset (x = (i, -i)). */
Test(partition, sampler_one_pass_covers_shard)
{
    sim_err err = {0};
    wl_dataset *ds = hand(180, 3, 1);
    wl_partition *p = part(ds, 3, "iid", 8);
    gsl_rng *r = rng_new(9);
    wl_sampler s;
    cr_assert_eq(wl_sampler_init(&s, ds, p, 1, r, &err), 0, "%s", err.msg);
    char *in_shard = calloc(180, 1), *seen = calloc(180, 1);
    for (int64_t i = p->offset[1]; i < p->offset[2]; i++)
        in_shard[p->index[i]] = 1;
    float x[12 * 2], y[12];
    for (int b = 0; b < 5; b++) {
        cr_assert_eq(s.epochs, 0);
        cr_assert_eq(wl_sampler_next(&s, 12, x, y), 12);
        for (int i = 0; i < 12; i++) {
            int64_t k = (int64_t)x[2 * i];
            cr_assert(in_shard[k] && !seen[k], "sample %lld", (long long)k);
            cr_assert_eq(x[2 * i + 1], -x[2 * i]);
            cr_assert_eq(y[i], ds->train.y[k]);
            seen[k] = 1;
        }
    }
    cr_assert_eq(s.epochs, 1);
    /* a batch of 50 then 50 straddles the next pass boundary */
    float xb[50 * 2], yb[50];
    wl_sampler_next(&s, 50, xb, yb);
    cr_assert_eq(s.epochs, 1);
    wl_sampler_next(&s, 50, xb, yb);
    cr_assert_eq(s.epochs, 2);
    cr_assert_eq(s.pos, 40);
    wl_sampler_release(&s);
    free(in_shard);
    free(seen);
    wl_partition_destroy(p);
    wl_dataset_destroy(ds);
    gsl_rng_free(r);
}

Test(partition, sampler_full_batch_is_shard_in_order)
{
    sim_err err = {0};
    wl_dataset *ds = hand(100, 2, 1);
    wl_partition *p = part(ds, 3, "iid", 10);
    gsl_rng *r = rng_new(11);
    wl_sampler s;
    cr_assert_eq(wl_sampler_init(&s, ds, p, 2, r, &err), 0);
    int64_t n = wl_partition_size(p, 2);
    float *x = malloc(sizeof(float) * 2 * n), *y = malloc(sizeof(float) * n);
    for (int rep = 0; rep < 2; rep++) {
        cr_assert_eq(wl_sampler_next(&s, 0, x, y), n);
        for (int64_t i = 0; i < n; i++)
            cr_assert_eq((int64_t)x[2 * i], p->index[p->offset[2] + i]);
    }
    cr_assert_eq(s.epochs, 2);
    /* same stream seed, same batches */
    gsl_rng *r2 = rng_new(11), *r3 = rng_new(11);
    wl_sampler a, b;
    wl_sampler_init(&a, ds, p, 0, r2, &err);
    wl_sampler_init(&b, ds, p, 0, r3, &err);
    float xa[7 * 2], ya[7], xb[7 * 2], yb[7];
    for (int t = 0; t < 20; t++) {
        wl_sampler_next(&a, 7, xa, ya);
        wl_sampler_next(&b, 7, xb, yb);
        cr_assert_eq(memcmp(xa, xb, sizeof xa), 0);
    }
    wl_sampler_release(&a);
    cr_assert_eq(wl_sampler_init(&a, ds, p, 3, r2, &err), SIM_EINTERNAL);
    wl_sampler_release(&a);
    wl_sampler_release(&b);
    wl_sampler_release(&s);
    free(x);
    free(y);
    gsl_rng_free(r);
    gsl_rng_free(r2);
    gsl_rng_free(r3);
    wl_partition_destroy(p);
    wl_dataset_destroy(ds);
}

/* contiguous over 40 samples sorted by label (4 classes x 10) on 4 workers:
 * worker w holds exactly the 10 samples of class w. Every partition's
 * histograms sum to the class totals; regression and bad workers are
 * refused. */
Test(partition, label_histogram)
{
    wl_dataset *ds = hand(40, 4, 10);
    wl_partition *p = part(ds, 4, "contiguous", 1);
    int64_t h[4];
    for (int w = 0; w < 4; w++) {
        cr_assert_eq(wl_partition_label_histogram(p, ds, w, h), 0);
        for (int c = 0; c < 4; c++)
            cr_assert_eq(h[c], c == w ? 10 : 0, "worker %d class %d: %lld", w, c,
                         (long long)h[c]);
    }
    wl_partition_destroy(p);
    const char *specs[3] = {"iid", "dirichlet(0.3)", "shards(2)"};
    for (int s = 0; s < 3; s++) {
        p = part(ds, 4, specs[s], 7);
        int64_t total[4] = {0};
        for (int w = 0; w < 4; w++) {
            cr_assert_eq(wl_partition_label_histogram(p, ds, w, h), 0);
            int64_t sum = 0;
            for (int c = 0; c < 4; c++) {
                total[c] += h[c];
                sum += h[c];
            }
            cr_assert_eq(sum, wl_partition_size(p, w), "%s worker %d", specs[s], w);
        }
        for (int c = 0; c < 4; c++)
            cr_assert_eq(total[c], 10, "%s class %d", specs[s], c);
        cr_assert_eq(wl_partition_label_histogram(p, ds, 4, h), SIM_ECONFIG);
        cr_assert_eq(wl_partition_label_histogram(p, ds, -1, h), SIM_ECONFIG);
        wl_partition_destroy(p);
    }
    wl_dataset_destroy(ds);
    wl_dataset *reg = hand(10, 0, 1);
    p = part(reg, 2, "iid", 1);
    cr_assert_eq(wl_partition_label_histogram(p, reg, 0, h), SIM_ECONFIG);
    wl_partition_destroy(p);
    wl_dataset_destroy(reg);
}
