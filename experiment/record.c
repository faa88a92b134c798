/* The recorder (see record.h): turns the environment's counters into
 * database rows. Reads the environment only; the runner has already
 * closed the workers' open intervals (fill_result) before finishing. */
#include "experiment/record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/core/runner.h"
#include "sim/network.h"
#include "workloads/blas.h"

extern const char xp_commit_id[]; /* commit.c, generated */

/* The label histogram of every worker's shard (classification data). */
static int record_labels(an_db *db, int64_t run_id, xp_env *x, sim_err *err)
{
    const wl_dataset *ds = xp_env_dataset(x);
    const wl_partition *part = xp_env_partition(x);
    int n = xp_env_config(x)->n_workers, k = ds->classes;
    if (k < 2)
        return 0;
    int64_t *counts = calloc((size_t)n * (size_t)k, sizeof *counts);
    if (!counts)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    int rc = 0;
    for (int w = 0; rc == 0 && w < n; w++)
        rc = wl_partition_label_histogram(part, ds, w, counts + (int64_t)w * k);
    if (rc == 0)
        rc = an_db_run_labels(db, run_id, n, k, counts, err);
    free(counts);
    return rc;
}

int xp_record_begin(an_db *db, xp_env *x, int claim, int64_t *run_id, sim_err *err)
{
    const cfg_config *c = xp_env_config(x);
    char *canon = cfg_canonical(c);
    const char **keys = malloc((size_t)c->n_entries * sizeof *keys);
    const char **vals = malloc((size_t)c->n_entries * sizeof *vals);
    char *keybuf = malloc((size_t)c->n_entries * 96);
    enum { VAL_LEN = sizeof c->entries[0].raw };
    char *valbuf = malloc((size_t)c->n_entries * VAL_LEN);
    double *nums = malloc((size_t)c->n_entries * sizeof *nums);
    int rc = 0;
    if (!canon || !keys || !vals || !keybuf || !valbuf || !nums) {
        rc = sim_err_set(err, SIM_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < c->n_entries; i++) {
        char *k = keybuf + (size_t)i * 96;
        snprintf(k, 96, "%s.%s", c->entries[i].section, c->entries[i].key);
        keys[i] = k;
        char *v = valbuf + (size_t)i * VAL_LEN;
        cfg_entry_written(&c->entries[i], v, VAL_LEN);
        vals[i] = v;
        if (!cfg_entry_number(&c->entries[i], &nums[i]))
            nums[i] = NAN;
    }
    char blas[320], kernels[160], cpu[160];
    wl_blas_describe(blas, sizeof blas);
    /* what the model's own kernels chose (cnn's sparse replay, a torch
     * model's device and batching) */
    wl_model_kernels(xp_env_model(x), kernels, sizeof kernels);
    if (kernels[0])
        snprintf(blas + strlen(blas), sizeof blas - strlen(blas), ", %s", kernels);
    wl_cpu_model(cpu, sizeof cpu);
    an_run_info info = {
        .name = c->name,
        .algorithm = xp_env_vt(x)->name,
        .seed = c->seed,
        .n_workers = c->n_workers,
        .config = canon,
        .version = DTSIM_VERSION,
        .commit = xp_commit_id,
        .blas = blas,
        .cpu = cpu,
        .threads = xp_env_threads(x),
        .n_params = c->n_entries,
        .param_keys = keys,
        .param_values = vals,
        .param_nums = nums,
        .claim = claim,
    };
    rc = an_db_run_begin(db, &info, run_id, err);
    if (rc == 0)
        rc = record_labels(db, *run_id, x, err);
out:
    free(canon);
    free(keys);
    free(vals);
    free(keybuf);
    free(valbuf);
    free(nums);
    return rc;
}

/* Links that carried any bytes. */
/* Every staleness value of each worker with its count (staleness_workers). */
static int record_staleness(an_db *db, int64_t run_id, const algo_env *env, sim_err *err)
{
    const int64_t **counts = calloc((size_t)env->n, sizeof *counts);
    int64_t *lens = calloc((size_t)env->n, sizeof *lens);
    int rc = counts && lens ? 0 : sim_err_set(err, SIM_ENOMEM, "out of memory");
    for (int i = 0; rc == 0 && i < env->n; i++) {
        counts[i] = env->w[i].stale_counts;
        lens[i] = env->w[i].stale_len;
    }
    if (rc == 0)
        rc = an_db_run_staleness(db, run_id, counts, lens, env->n, err);
    free(counts);
    free(lens);
    return rc;
}

static int record_links(an_db *db, int64_t run_id, sim_net *net, sim_err *err)
{
    int nl = sim_net_n_links(net), used = 0;
    an_link_row *links = calloc((size_t)(nl > 0 ? nl : 1), sizeof *links);
    if (!links)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    for (int l = 0; l < nl; l++) {
        double b = sim_net_bytes_link(net, l);
        if (b <= 0)
            continue;
        an_link_row *lr = &links[used++];
        lr->link = l;
        lr->bytes = (int64_t)llround(b);
        sim_net_link_ends(net, l, &lr->src, &lr->dst);
    }
    int rc = an_db_run_links(db, run_id, links, used, err);
    free(links);
    return rc;
}

int xp_record_faults(an_db *db, int64_t run_id, xp_env *x, sim_err *err)
{
    int n;
    const algo_fault *log = xp_env_fault_log(x, &n);
    if (n == 0)
        return 0;
    an_fault_row *rows = calloc((size_t)n, sizeof *rows);
    char (*targets)[32] = calloc((size_t)n, sizeof *targets);
    int rc = 0;
    if (!rows || !targets) {
        rc = sim_err_set(err, SIM_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const algo_fault *ev = &log[i];
        if (ev->target2 >= 0)
            snprintf(targets[i], sizeof targets[i], "%d-%d", ev->target, ev->target2);
        else
            snprintf(targets[i], sizeof targets[i], "%d", ev->target);
        rows[i] = (an_fault_row){.sim_time = sim_time_to_s(ev->time),
                                 .event = algo_fault_kind_name(ev->kind),
                                 .target = targets[i],
                                 .value = ev->value};
    }
    rc = an_db_run_faults(db, run_id, rows, n, err);
    if (rc == 0)
        xp_env_fault_log_clear(x);
out:
    free(rows);
    free(targets);
    return rc;
}

int xp_record_finish(an_db *db, int64_t run_id, xp_env *x, const xp_run_result *r,
                     sim_err *err)
{
    algo_env *env = xp_env_algo_env(x);
    sim_net *net = xp_env_net(x);
    an_worker_row *rows = calloc((size_t)env->n, sizeof *rows);
    if (!rows)
        return sim_err_set(err, SIM_ENOMEM, "out of memory");
    for (int i = 0; i < env->n; i++) {
        algo_worker *w = &env->w[i];
        rows[i] = (an_worker_row){
            .worker = i,
            .steps = w->steps,
            .compute_time = w->compute_time,
            .idle_time = w->idle_time,
            .bytes_sent = (int64_t)llround(sim_net_bytes_sent_host(net, i) -
                                          sim_net_bytes_unsent(net, i)),
            .mean_staleness = w->staleness_n > 0 ? w->staleness_sum / (double)w->staleness_n
                                                 : NAN,
            .gossip_rounds = w->gossip_rounds,
        };
    }
    an_run_summary sum = {
        .status = r->status,
        .sim_time = r->sim_time,
        .iterations = r->iterations,
        .wall_seconds = r->wall_seconds,
        .bytes_sent = (int64_t)llround(r->bytes_sent),
        .final_train_loss = r->final_train_loss,
        .final_test_accuracy = r->final_test_accuracy,
        .mean_staleness = r->mean_staleness,
        .idle_fraction = r->idle_fraction,
        .consensus_distance = r->consensus_distance,
    };
    int rc = record_links(db, run_id, net, err);
    if (rc == 0)
        rc = xp_record_faults(db, run_id, x, err);
    if (rc == 0)
        rc = record_staleness(db, run_id, env, err);
    /* the summary's histogram: the workers' counts, values of 4n + 63 and
     * more in the last bin */
    const int64_t cap = 4 * (int64_t)env->n + 64;
    int64_t *hist = rc == 0 ? calloc((size_t)cap, sizeof *hist) : NULL;
    if (rc == 0 && !hist)
        rc = sim_err_set(err, SIM_ENOMEM, "out of memory");
    int64_t nh = 0;
    for (int i = 0; hist && i < env->n; i++)
        for (int64_t s = 0; s < env->w[i].stale_len; s++) {
            int64_t b = s < cap ? s : cap - 1;
            hist[b] += env->w[i].stale_counts[s];
            if (hist[b])
                nh = b + 1 > nh ? b + 1 : nh;
        }
    if (rc == 0)
        rc = an_db_run_finish(db, run_id, &sum, rows, env->n, hist, nh, err);
    free(hist);
    free(rows);
    return rc;
}

void xp_record_fail(an_db *db, int64_t run_id, const char *message)
{
    sim_err ignore;
    an_db_run_fail_message(db, run_id, message, &ignore);
}
