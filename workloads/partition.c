/* Splitting a training set across workers, and each worker's batch sampler.
 * A partition is one permutation of 0..train.n-1 cut into n_workers
 * consecutive groups; every worker's group is non-empty. All randomness comes
 * from the partition stream (partition) or the worker's sampling stream
 * (sampler), in a fixed order. */
#include "workloads/partition.h"

#include <gsl/gsl_randist.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"
#include "workloads/partition_impl.h"

#define DTSIM_PARTITION(id) extern const wl_partition_vt wl_partition_##id##_vt;
#include "workloads/partitions.def"
#undef DTSIM_PARTITION

const wl_partition_vt *const wl_partition_registry[] = {
#define DTSIM_PARTITION(id) &wl_partition_##id##_vt,
#include "workloads/partitions.def"
#undef DTSIM_PARTITION
    NULL,
};

const wl_partition_vt *wl_partition_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; wl_partition_registry[i]; i++)
        if (strcmp(wl_partition_registry[i]->name, name) == 0)
            return wl_partition_registry[i];
    return NULL;
}

static wl_partition *partition_alloc(int n_workers, int64_t n, sim_err *err)
{
    wl_partition *p = calloc(1, sizeof *p);
    if (p) {
        p->n_workers = n_workers;
        p->draws = 1;
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

static void known_partitions(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; wl_partition_registry[i] && used < len; i++) {
        const wl_partition_vt *vt = wl_partition_registry[i];
        int k = snprintf(buf + used, len - used, "%s%s%s", i ? ", " : "", vt->name,
                         vt->args);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

wl_partition *wl_partition_start(const wl_partition_req *rq, int64_t per_worker,
                                 const char *what, sim_err *err)
{
    const int64_t n = rq->ds->train.n;
    if (rq->n_workers < 1) {
        sim_err_set(err, SIM_ECONFIG, "partition '%s': needs at least one worker, got %d",
                    rq->spec, rq->n_workers);
        return NULL;
    }
    if (n < (int64_t)rq->n_workers * per_worker) {
        sim_err_set(err, SIM_ECONFIG,
                    "partition '%s': dataset '%s' has %lld training samples, fewer than "
                    "the %lld %s",
                    rq->spec, rq->ds->name, (long long)n,
                    (long long)((int64_t)rq->n_workers * per_worker), what);
        return NULL;
    }
    if (rq->vt->needs_rng && !rq->rng) {
        sim_err_set(err, SIM_EINTERNAL, "partition '%s': no random stream", rq->spec);
        return NULL;
    }
    return partition_alloc(rq->n_workers, n, err);
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
    const wl_partition_vt *vt = wl_partition_find(sp.name);
    if (!vt) {
        char known[256];
        char hint[96];
        known_partitions(known, sizeof known);
        sim_err_set(err, SIM_ECONFIG, "unknown partition '%s' (%sknown: %s)",
                    sp.name, sim_suggest(sp.name, known, hint, sizeof hint), known);
        return NULL;
    }
    const wl_partition_req rq = {
        .vt = vt, .spec = spec, .sp = &sp, .ds = ds, .n_workers = n_workers, .rng = rng};
    return vt->build(&rq, err);
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

/* Sample i of the batch is row idx: its row copied into x (dense) or its
 * index into rows (sparse). */
static void take_sample(const wl_dataset *ds, int64_t idx, int64_t i, float *x,
                        int64_t *rows, float *y)
{
    if (rows) {
        rows[i] = idx;
        y[i] = ds->train.y[idx];
    } else {
        copy_sample(ds, idx, x + i * ds->dim, y + i);
    }
}

/* A full batch is the shard in shard order and counts as one local pass.
 * Otherwise the walk through perm reshuffles as soon as a pass completes. */
static int64_t sampler_next(wl_sampler *s, int64_t b, float *x, int64_t *rows, float *y)
{
    if (s->shard_n <= 0)
        return 0;
    if (b <= 0) {
        for (int64_t i = 0; i < s->shard_n; i++)
            take_sample(s->ds, s->shard[i], i, x, rows, y);
        s->epochs++;
        return s->shard_n;
    }
    for (int64_t i = 0; i < b; i++) {
        take_sample(s->ds, s->perm[s->pos++], i, x, rows, y);
        if (s->pos == s->shard_n) {
            s->epochs++;
            s->pos = 0;
            if (s->shard_n > 1)
                gsl_ran_shuffle(s->rng, s->perm, (size_t)s->shard_n, sizeof *s->perm);
        }
    }
    return b;
}

int64_t wl_sampler_next(wl_sampler *s, int64_t b, float *x, float *y)
{
    return sampler_next(s, b, x, NULL, y);
}

int64_t wl_sampler_next_rows(wl_sampler *s, int64_t b, int64_t *rows, float *y)
{
    return sampler_next(s, b, NULL, rows, y);
}
