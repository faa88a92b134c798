/* The partition kinds: iid, contiguous, dirichlet(alpha), shards(k). Each
 * checks its arguments, asks wl_partition_start for the common checks and
 * the storage, then fills the permutation. Every draw comes from the
 * partition stream in the order documented at each kind, so one seed gives
 * the same partition. */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/partition.h"
#include "workloads/partition_impl.h"

/* Equal blocks: the first n mod w workers get one sample more. */
static void even_offsets(wl_partition *p, int64_t n)
{
    const int w = p->n_workers;
    const int64_t q = n / w, r = n % w;
    p->offset[0] = 0;
    for (int i = 0; i < w; i++)
        p->offset[i + 1] = p->offset[i] + q + (i < r ? 1 : 0);
}

/* Groups the samples by owner (each group in index order) into p; cur is
 * scratch of n_workers + 1 entries. */
static void group_by_owner(wl_partition *p, const int *owner, int64_t n, int64_t *cur)
{
    const int w = p->n_workers;
    memset(p->offset, 0, ((size_t)w + 1) * sizeof *p->offset);
    for (int64_t i = 0; i < n; i++)
        p->offset[owner[i] + 1]++;
    for (int i = 0; i < w; i++)
        p->offset[i + 1] += p->offset[i];
    memcpy(cur, p->offset, ((size_t)w + 1) * sizeof *cur);
    for (int64_t i = 0; i < n; i++)
        p->index[cur[owner[i]]++] = i;
}

static int label_of(const wl_dataset *ds, int64_t i)
{
    int c = (int)ds->train.y[i];
    return c >= 0 && c < ds->classes ? c : 0;
}

/* dirichlet(alpha[, min]): for each class in turn, shuffle the class's
 * samples (file order first), draw shares ~ Dir(alpha 1_w) and cut the
 * shuffled list at the rounded cumulative shares.
 * Without min: an empty worker then takes the highest index of the
 * currently largest worker (lowest id on ties); n >= w guarantees that
 * worker has two samples or more.
 * With min >= 1: a draw (every class, as above, continuing the stream) in
 * which some worker holds fewer than min samples is drawn again whole, up
 * to DIRICHLET_MAX_DRAWS draws (as NIID-Bench redraws until the smallest
 * share reaches its minimum); the rule is the same for every seed, so no
 * seed is refused for an uneven split, and the partition is Dir(alpha)
 * conditioned on every share >= min. *draws is the number of draws. */
enum { DIRICHLET_MAX_DRAWS = 1000 };

/* One draw: every class's shuffled list (cls + start[k]) cut at the
 * cumulative Dir(a) shares into owner; count[j] (zeroed first) is worker
 * j's total. */
static void dirichlet_draw(int w, int c, const int64_t *start, int64_t *cls, const double *a,
                           double *theta, gsl_rng *rng, int *owner, int64_t *count)
{
    memset(count, 0, ((size_t)w + 1) * sizeof *count);
    for (int k = 0; k < c; k++) {
        int64_t *list = cls + start[k], m = start[k + 1] - start[k];
        if (m == 0)
            continue;
        gsl_ran_shuffle(rng, list, (size_t)m, sizeof *list);
        gsl_ran_dirichlet(rng, (size_t)w, a, theta);
        double cum = 0;
        int64_t lo = 0;
        for (int j = 0; j < w; j++) {
            cum += isfinite(theta[j]) ? theta[j] : 0;
            int64_t hi = j == w - 1 ? m : (int64_t)llround(cum * (double)m);
            if (hi > m)
                hi = m;
            if (hi < lo)
                hi = lo;
            for (int64_t t = lo; t < hi; t++)
                owner[list[t]] = j;
            count[j] += hi - lo;
            lo = hi;
        }
    }
}

static int partition_dirichlet(wl_partition *p, const wl_dataset *ds, double alpha,
                               int64_t min, gsl_rng *rng, int *draws, sim_err *err)
{
    const int w = p->n_workers, c = ds->classes;
    const int64_t n = ds->train.n;
    int *owner = malloc((size_t)n * sizeof *owner);
    int64_t *cls = malloc((size_t)n * sizeof *cls);
    int64_t *start = calloc((size_t)c + 1, sizeof *start);
    int64_t *count = calloc((size_t)w + 1, sizeof *count);
    double *a = malloc((size_t)w * sizeof *a), *theta = malloc((size_t)w * sizeof *theta);
    int rc = 0;
    if (!owner || !cls || !start || !count || !a || !theta) {
        rc = sim_err_set(err, SIM_ENOMEM, "partition: out of memory");
        goto done;
    }
    /* samples bucketed by class, each bucket in file order */
    for (int64_t i = 0; i < n; i++)
        start[label_of(ds, i) + 1]++;
    for (int k = 0; k < c; k++)
        start[k + 1] += start[k];
    for (int64_t i = 0; i < n; i++)
        cls[start[label_of(ds, i)]++] = i;
    for (int k = c; k > 0; k--)
        start[k] = start[k - 1];
    start[0] = 0;
    for (int i = 0; i < w; i++)
        a[i] = alpha;
    for (*draws = 1;; ++*draws) {
        dirichlet_draw(w, c, start, cls, a, theta, rng, owner, count);
        if (min <= 0)
            break;
        int64_t smallest = count[0];
        for (int j = 1; j < w; j++)
            smallest = count[j] < smallest ? count[j] : smallest;
        if (smallest >= min)
            break;
        if (*draws == DIRICHLET_MAX_DRAWS) {
            rc = sim_err_set(err, SIM_ECONFIG,
                             "no draw of %d gave every worker %lld samples or more (the last "
                             "draw's smallest share: %lld); lower min or raise alpha",
                             DIRICHLET_MAX_DRAWS, (long long)min, (long long)smallest);
            goto done;
        }
    }
    for (int j = 0; j < w; j++) {
        if (count[j] > 0)
            continue;
        int big = 0;
        for (int i = 1; i < w; i++)
            if (count[i] > count[big])
                big = i;
        for (int64_t i = n - 1; i >= 0; i--)
            if (owner[i] == big) {
                owner[i] = j;
                break;
            }
        count[big]--;
        count[j]++;
    }
    group_by_owner(p, owner, n, count);
done:
    free(owner);
    free(cls);
    free(start);
    free(count);
    free(a);
    free(theta);
    return rc;
}

typedef struct keyed { float y; int64_t i; } keyed;

static int keyed_cmp(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->y != b->y)
        return a->y < b->y ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* shards(k): sort by label (ties in file order), cut into w*k shards whose
 * sizes differ by at most one, shuffle the shard ids and give worker i the
 * ids at positions i*k .. i*k+k-1 (its samples in that shard order). */
static int partition_shards(wl_partition *p, const wl_dataset *ds, int k, gsl_rng *rng,
                            sim_err *err)
{
    const int w = p->n_workers;
    const int64_t n = ds->train.n, s = (int64_t)w * k;
    keyed *key = malloc((size_t)n * sizeof *key);
    int64_t *ids = malloc((size_t)s * sizeof *ids);
    if (!key || !ids) {
        free(key);
        free(ids);
        return sim_err_set(err, SIM_ENOMEM, "partition: out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        key[i].y = ds->train.y[i];
        key[i].i = i;
    }
    qsort(key, (size_t)n, sizeof *key, keyed_cmp);
    for (int64_t j = 0; j < s; j++)
        ids[j] = j;
    gsl_ran_shuffle(rng, ids, (size_t)s, sizeof *ids);
    const int64_t q = n / s, r = n % s;
    int64_t pos = 0;
    p->offset[0] = 0;
    for (int i = 0; i < w; i++) {
        for (int t = 0; t < k; t++) {
            int64_t id = ids[(int64_t)i * k + t];
            int64_t start = id * q + (id < r ? id : r);
            int64_t len = q + (id < r ? 1 : 0);
            for (int64_t u = 0; u < len; u++)
                p->index[pos++] = key[start + u].i;
        }
        p->offset[i + 1] = pos;
    }
    free(key);
    free(ids);
    return 0;
}

/* iid and contiguous take no arguments. */
static int no_args(const wl_partition_req *rq, sim_err *err)
{
    if (rq->sp->nargs == 0)
        return 0;
    return sim_err_set(err, SIM_ECONFIG, "partition '%s': expected %s (no arguments)",
                       rq->spec, rq->sp->name);
}

/* Samples 0..n-1 in file order (contiguous) or shuffled (iid), cut into
 * equal blocks. */
static wl_partition *blocks_build(const wl_partition_req *rq, int shuffle, sim_err *err)
{
    if (no_args(rq, err) != 0)
        return NULL;
    wl_partition *p = wl_partition_start(rq, 1, "workers", err);
    if (!p)
        return NULL;
    const int64_t n = rq->ds->train.n;
    for (int64_t i = 0; i < n; i++)
        p->index[i] = i;
    if (shuffle)
        gsl_ran_shuffle(rq->rng, p->index, (size_t)n, sizeof *p->index);
    even_offsets(p, n);
    return p;
}

static wl_partition *iid_build(const wl_partition_req *rq, sim_err *err)
{
    return blocks_build(rq, 1, err);
}

static wl_partition *contiguous_build(const wl_partition_req *rq, sim_err *err)
{
    return blocks_build(rq, 0, err);
}

static wl_partition *dirichlet_build(const wl_partition_req *rq, sim_err *err)
{
    const sim_spec *sp = rq->sp;
    double alpha = 0;
    int64_t min = 0;
    const char *m = sp->nargs == 2 ? sp->args[1] : "";
    if (strncmp(m, "min", 3) == 0) { /* min = N is min N */
        m += 3;
        while (*m == ' ' || *m == '\t')
            m++;
        m += *m == '=';
    }
    if (sp->nargs < 1 || sp->nargs > 2 || sim_parse_double(sp->args[0], &alpha, NULL) != 0 ||
        !(alpha > 0) || !isfinite(alpha) ||
        (sp->nargs == 2 && (sim_parse_int(m, &min, NULL) != 0 || min < 1 || min > INT32_MAX))) {
        sim_err_set(err, SIM_ECONFIG,
                    "partition '%s': expected dirichlet(alpha) or dirichlet(alpha, min) with "
                    "alpha > 0 and min >= 1",
                    rq->spec);
        return NULL;
    }
    if (rq->ds->classes < 2) {
        sim_err_set(err, SIM_ECONFIG,
                    "partition '%s' needs a classification dataset; '%s' is a regression "
                    "dataset",
                    rq->spec, rq->ds->name);
        return NULL;
    }
    wl_partition *p = wl_partition_start(rq, min > 1 ? min : 1,
                                         min > 1 ? "samples that min x workers asks" : "workers", err);
    int draws = 0;
    sim_err e = {0};
    if (p && partition_dirichlet(p, rq->ds, alpha, min, rq->rng, &draws, &e) != 0) {
        sim_err_set(err, e.code, "partition '%s': %s", rq->spec, e.msg);
        wl_partition_destroy(p);
        return NULL;
    }
    if (p)
        p->draws = draws;
    return p;
}

static wl_partition *shards_build(const wl_partition_req *rq, sim_err *err)
{
    const sim_spec *sp = rq->sp;
    int64_t k = 0;
    if (sp->nargs != 1 || sim_parse_int(sp->args[0], &k, NULL) != 0 || k < 1 || k > 1000000) {
        sim_err_set(err, SIM_ECONFIG, "partition '%s': expected shards(k) with k >= 1",
                    rq->spec);
        return NULL;
    }
    wl_partition *p = wl_partition_start(rq, k, "shards (workers x k)", err);
    if (p && partition_shards(p, rq->ds, (int)k, rq->rng, err) != 0) {
        wl_partition_destroy(p);
        return NULL;
    }
    return p;
}

const wl_partition_vt wl_partition_iid_vt = {
    .name = "iid",
    .args = "",
    .summary = "shuffle, then equal contiguous blocks (sizes differ by at most 1)",
    .needs_rng = 1,
    .build = iid_build,
};

const wl_partition_vt wl_partition_contiguous_vt = {
    .name = "contiguous",
    .args = "",
    .summary = "file order, equal contiguous blocks",
    .needs_rng = 0,
    .build = contiguous_build,
};

const wl_partition_vt wl_partition_dirichlet_vt = {
    .name = "dirichlet",
    .args = "(alpha[, min])",
    .summary = "per class, worker shares ~ Dirichlet(alpha); small alpha = skewed labels; with "
               "min, drawn again until every worker holds min samples",
    .needs_rng = 1,
    .build = dirichlet_build,
};

const wl_partition_vt wl_partition_shards_vt = {
    .name = "shards",
    .args = "(k)",
    .summary = "sort by label, cut into workers*k shards, k random shards each",
    .needs_rng = 1,
    .build = shards_build,
};
