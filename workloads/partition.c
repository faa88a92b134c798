/* Splitting a training set across workers, and each worker's batch sampler.
 * A partition is one permutation of 0..train.n-1 cut into n_workers
 * consecutive groups; every worker's group is non-empty. All randomness comes
 * from the partition stream (partition) or the worker's sampling stream
 * (sampler), in a fixed order. */
#include "workloads/partition.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"

const wl_partition_info wl_partition_table[] = {
    {"iid", "", "shuffle, then equal contiguous blocks (sizes differ by at most 1)"},
    {"contiguous", "", "file order, equal contiguous blocks"},
    {"dirichlet", "(alpha)",
     "per class, worker shares ~ Dirichlet(alpha); small alpha = skewed labels"},
    {"shards", "(k)", "sort by label, cut into workers*k shards, k random shards each"},
    {NULL, NULL, NULL},
};

static wl_partition *partition_alloc(int n_workers, int64_t n, sim_err *err)
{
    wl_partition *p = calloc(1, sizeof *p);
    if (p) {
        p->n_workers = n_workers;
        p->offset = calloc((size_t)n_workers + 1, sizeof *p->offset);
        p->index = malloc((size_t)(n > 0 ? n : 1) * sizeof *p->index);
    }
    if (!p || !p->offset || !p->index) {
        wl_partition_destroy(p);
        sim_err_set(err, SIM_ENOMEM, "partition: out of memory");
        return NULL;
    }
    return p;
}

void wl_partition_destroy(wl_partition *p)
{
    if (!p)
        return;
    free(p->offset);
    free(p->index);
    free(p);
}

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

/* dirichlet(alpha): for each class in turn, shuffle the class's samples
 * (file order first), draw shares ~ Dir(alpha 1_w) and cut the shuffled list
 * at the rounded cumulative shares. An empty worker then takes the highest
 * index of the currently largest worker (lowest id on ties); n >= w
 * guarantees that worker has two samples or more. */
static int partition_dirichlet(wl_partition *p, const wl_dataset *ds, double alpha,
                               gsl_rng *rng, sim_err *err)
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

static void known_partitions(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; wl_partition_table[i].name && used < len; i++) {
        int k = snprintf(buf + used, len - used, "%s%s%s", i ? ", " : "",
                         wl_partition_table[i].name, wl_partition_table[i].args);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

wl_partition *wl_partition_create(const wl_dataset *ds, int n_workers, const char *spec,
                                  gsl_rng *rng, sim_err *err)
{
    sim_spec sp;
    if (!ds || !spec) {
        sim_err_set(err, SIM_EINTERNAL, "wl_partition_create: NULL dataset or spec");
        return NULL;
    }
    if (sim_spec_parse(spec, &sp, err) != 0) {
        sim_err_prefix(err, "partition '%s'", spec);
        return NULL;
    }
    const int64_t n = ds->train.n;
    enum { IID, CONTIGUOUS, DIRICHLET, SHARDS } kind;
    double alpha = 0;
    int64_t k = 0;
    if (strcmp(sp.name, "iid") == 0 && sp.nargs == 0)
        kind = IID;
    else if (strcmp(sp.name, "contiguous") == 0 && sp.nargs == 0)
        kind = CONTIGUOUS;
    else if (strcmp(sp.name, "dirichlet") == 0) {
        kind = DIRICHLET;
        if (sp.nargs != 1 || sim_parse_double(sp.args[0], &alpha, NULL) != 0 ||
            !(alpha > 0) || !isfinite(alpha)) {
            sim_err_set(err, SIM_ECONFIG,
                        "partition '%s': expected dirichlet(alpha) with alpha > 0", spec);
            return NULL;
        }
        if (ds->classes < 2) {
            sim_err_set(err, SIM_ECONFIG,
                        "partition '%s' needs a classification dataset; '%s' is a "
                        "regression dataset",
                        spec, ds->name);
            return NULL;
        }
    } else if (strcmp(sp.name, "shards") == 0) {
        kind = SHARDS;
        if (sp.nargs != 1 || sim_parse_int(sp.args[0], &k, NULL) != 0 || k < 1 ||
            k > 1000000) {
            sim_err_set(err, SIM_ECONFIG, "partition '%s': expected shards(k) with k >= 1",
                        spec);
            return NULL;
        }
    } else if (strcmp(sp.name, "iid") == 0 || strcmp(sp.name, "contiguous") == 0) {
        sim_err_set(err, SIM_ECONFIG, "partition '%s': expected %s (no arguments)", spec,
                    sp.name);
        return NULL;
    } else {
        char known[256];
        known_partitions(known, sizeof known);
        sim_err_set(err, SIM_ECONFIG, "unknown partition '%s' (known: %s)", sp.name, known);
        return NULL;
    }
    if (n_workers < 1) {
        sim_err_set(err, SIM_ECONFIG, "partition '%s': needs at least one worker, got %d",
                    spec, n_workers);
        return NULL;
    }
    if (n < n_workers || (kind == SHARDS && n < (int64_t)n_workers * k)) {
        sim_err_set(err, SIM_ECONFIG,
                    "partition '%s': dataset '%s' has %lld training samples, fewer than "
                    "the %lld %s",
                    spec, ds->name, (long long)n,
                    (long long)(kind == SHARDS ? n_workers * k : n_workers),
                    kind == SHARDS ? "shards (workers x k)" : "workers");
        return NULL;
    }
    if (kind != CONTIGUOUS && !rng) {
        sim_err_set(err, SIM_EINTERNAL, "partition '%s': no random stream", spec);
        return NULL;
    }
    wl_partition *p = partition_alloc(n_workers, n, err);
    if (!p)
        return NULL;
    int rc = 0;
    switch (kind) {
    case IID:
    case CONTIGUOUS:
        for (int64_t i = 0; i < n; i++)
            p->index[i] = i;
        if (kind == IID)
            gsl_ran_shuffle(rng, p->index, (size_t)n, sizeof *p->index);
        even_offsets(p, n);
        break;
    case DIRICHLET:
        rc = partition_dirichlet(p, ds, alpha, rng, err);
        break;
    case SHARDS:
        rc = partition_shards(p, ds, (int)k, rng, err);
        break;
    }
    if (rc != 0) {
        wl_partition_destroy(p);
        return NULL;
    }
    return p;
}

int wl_partition_label_histogram(const wl_partition *p, const wl_dataset *ds, int worker,
                                 int64_t *counts_out)
{
    if (!p || !ds || ds->classes < 2 || worker < 0 || worker >= p->n_workers)
        return SIM_ECONFIG;
    memset(counts_out, 0, (size_t)ds->classes * sizeof *counts_out);
    for (int64_t i = p->offset[worker]; i < p->offset[worker + 1]; i++) {
        float y = ds->train.y[p->index[i]];
        if (y >= 0 && y < (float)ds->classes)
            counts_out[(int)y]++;
    }
    return 0;
}

int wl_sampler_init(wl_sampler *s, const wl_dataset *ds, const wl_partition *p, int worker,
                    gsl_rng *rng, sim_err *err)
{
    memset(s, 0, sizeof *s);
    if (!ds || !p || !rng || worker < 0 || worker >= p->n_workers)
        return sim_err_set(err, SIM_EINTERNAL, "wl_sampler_init: bad worker %d", worker);
    s->ds = ds;
    s->shard = p->index + p->offset[worker];
    s->shard_n = wl_partition_size(p, worker);
    s->rng = rng;
    s->perm = malloc((size_t)(s->shard_n > 0 ? s->shard_n : 1) * sizeof *s->perm);
    if (!s->perm)
        return sim_err_set(err, SIM_ENOMEM, "sampler: out of memory");
    memcpy(s->perm, s->shard, (size_t)s->shard_n * sizeof *s->perm);
    if (s->shard_n > 1)
        gsl_ran_shuffle(rng, s->perm, (size_t)s->shard_n, sizeof *s->perm);
    return 0;
}

void wl_sampler_release(wl_sampler *s)
{
    if (!s)
        return;
    free(s->perm);
    s->perm = NULL;
}

static void copy_sample(const wl_dataset *ds, int64_t idx, float *x, float *y)
{
    memcpy(x, ds->train.x + idx * ds->dim, (size_t)ds->dim * sizeof *x);
    *y = ds->train.y[idx];
}

/* A full batch is the shard in shard order and counts as one local pass.
 * Otherwise the walk through perm reshuffles as soon as a pass completes. */
int64_t wl_sampler_next(wl_sampler *s, int64_t b, float *x, float *y)
{
    const int d = s->ds->dim;
    if (s->shard_n <= 0)
        return 0;
    if (b <= 0) {
        for (int64_t i = 0; i < s->shard_n; i++)
            copy_sample(s->ds, s->shard[i], x + i * d, y + i);
        s->epochs++;
        return s->shard_n;
    }
    for (int64_t i = 0; i < b; i++) {
        copy_sample(s->ds, s->perm[s->pos++], x + i * d, y + i);
        if (s->pos == s->shard_n) {
            s->epochs++;
            s->pos = 0;
            if (s->shard_n > 1)
                gsl_ran_shuffle(s->rng, s->perm, (size_t)s->shard_n, sizeof *s->perm);
        }
    }
    return b;
}
