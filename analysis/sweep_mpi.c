/* The sweep under mpirun (OpenMPI): ranks share the grid, every run lands
 * in the one database the user named.
 *
 * Protocol (every rank takes every step, so no rank waits forever):
 *  1. every rank builds and validates the same plan (done by the caller);
 *  2. rank 0 opens the database, finds the points already done there and
 *     broadcasts a status code and the to-do flags;
 *  3. the to-do points are dealt round-robin: rank r takes the k-th to-do
 *     point when k mod size = r. Rank 0 runs into the database itself;
 *     rank r > 0 into its shard database (FILE.rank-R.db next to FILE, or
 *     in --shard-dir), which resumes like any database;
 *  4. ranks > 0 ship their shard's bytes to rank 0 in MPI messages (so no
 *     shared filesystem is needed); rank 0 writes each to a temporary file
 *     and merges it (an_db_merge: new run ids, configs already done are
 *     skipped);
 *  5. rank 0 broadcasts the merge status; on success the ranks delete
 *     their shards. Counts are summed to rank 0.
 * Waiting ranks poll nonblocking requests with short sleeps instead of
 * spinning in blocking calls (ranks may share cores). MPI is initialised
 * here only when the process was started by mpirun. */
#include "analysis/sweep.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef DTSIM_HAVE_MPI
#include <mpi.h>

#define CHUNK (64 * 1024 * 1024)
#define TAG_SIZE 11
#define TAG_DATA 12

/* Waits for a request, sleeping 2 ms between tests. */
static void req_wait(MPI_Request *req)
{
    int flag = 0;
    struct timespec ts = {0, 2000000};
    for (;;) {
        MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (flag)
            return;
        nanosleep(&ts, NULL);
    }
}

static void bcast_wait(void *buf, int count, MPI_Datatype type)
{
    MPI_Request req;
    MPI_Ibcast(buf, count, type, 0, MPI_COMM_WORLD, &req);
    req_wait(&req);
}

/* Shard path of rank r: DIR/BASE.rank-R.db or FILE.rank-R.db. */
static void shard_path(const an_sweep_opts *o, int rank, char *out, size_t size)
{
    const char *db = o->db_path;
    const char *base = strrchr(db, '/');
    base = base ? base + 1 : db;
    size_t stem = strlen(o->shard_dir ? base : db);
    const char *src = o->shard_dir ? base : db;
    if (stem > 3 && strcmp(src + stem - 3, ".db") == 0)
        stem -= 3;
    if (o->shard_dir)
        snprintf(out, size, "%s/%.*s.rank-%d.db", o->shard_dir, (int)stem, src, rank);
    else
        snprintf(out, size, "%.*s.rank-%d.db", (int)stem, src, rank);
}

static void file_remove_db(const char *path)
{
    char aux[4300];
    unlink(path);
    snprintf(aux, sizeof aux, "%s-wal", path);
    unlink(aux);
    snprintf(aux, sizeof aux, "%s-shm", path);
    unlink(aux);
}

/* Rank 0: the to-do flags and the skipped points' results. */
static int todo_find(const an_sweep_opts *o, const an_sweep_plan *plan, unsigned char *todo,
                     an_sweep_summary *sum, sim_err *err)
{
    an_db *db = an_db_open(o->db_path, err);
    if (!db)
        return err->code ? err->code : SIM_EDB;
    int ret = 0;
    for (int i = 0; ret == 0 && i < plan->n_points; i++) {
        int64_t done = 0;
        ret = an_db_find_done(db, plan->points[i].canonical, &done, err);
        todo[i] = done == 0;
        if (ret == 0 && done > 0) {
            sum->skipped++;
            if (o->on_result) {
                an_sweep_result r = {.index = i, .total = plan->n_points,
                                     .label = plan->points[i].label, .skipped = 1,
                                     .run_id = done, .status = "done", .sim_time = NAN,
                                     .final_train_loss = NAN, .final_test_accuracy = NAN,
                                     .message = ""};
                o->on_result(o->ctx, &r);
            }
        }
    }
    an_db_close(db);
    return ret;
}

/* Rank r > 0: sends the shard's size (-1 if unreadable) and bytes. */
static void shard_send(const char *path)
{
    long long size = -1;
    char *bytes = NULL;
    FILE *f = fopen(path, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (bytes = malloc((size_t)n + 1)) &&
            fread(bytes, 1, (size_t)n, f) == (size_t)n)
            size = n;
    }
    if (f)
        fclose(f);
    MPI_Request req;
    MPI_Isend(&size, 1, MPI_LONG_LONG, 0, TAG_SIZE, MPI_COMM_WORLD, &req);
    req_wait(&req);
    for (long long off = 0; size > 0 && off < size; off += CHUNK) {
        int n = (int)(size - off < CHUNK ? size - off : CHUNK);
        MPI_Isend(bytes + off, n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &req);
        req_wait(&req);
    }
    free(bytes);
}

/* Rank 0: receives rank r's shard into a temporary file and merges it. */
static int shard_receive_merge(const an_sweep_opts *o, int r, int *merged, sim_err *err)
{
    long long size = 0;
    MPI_Request req;
    MPI_Irecv(&size, 1, MPI_LONG_LONG, r, TAG_SIZE, MPI_COMM_WORLD, &req);
    req_wait(&req);
    if (size < 0)
        return sim_err_set(err, SIM_EIO, "sweep: rank %d could not read its shard database",
                           r);
    char *bytes = malloc((size_t)size + 1);
    if (!bytes)
        return sim_err_set(err, SIM_ENOMEM, "sweep: out of memory receiving rank %d's shard",
                           r);
    for (long long off = 0; off < size; off += CHUNK) {
        int n = (int)(size - off < CHUNK ? size - off : CHUNK);
        MPI_Irecv(bytes + off, n, MPI_BYTE, r, TAG_DATA, MPI_COMM_WORLD, &req);
        req_wait(&req);
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%.4000s.from-rank-%d.tmp", o->db_path, r);
    file_remove_db(tmp);
    FILE *f = fopen(tmp, "wb");
    int ret = 0;
    if (!f || fwrite(bytes, 1, (size_t)size, f) != (size_t)size)
        ret = sim_err_set(err, SIM_EIO, "%s: %s", tmp, strerror(errno));
    if (f && fclose(f) != 0 && ret == 0)
        ret = sim_err_set(err, SIM_EIO, "%s: %s", tmp, strerror(errno));
    free(bytes);
    if (ret == 0 && size > 0) {
        an_db *db = an_db_open(o->db_path, err);
        if (!db)
            ret = err->code ? err->code : SIM_EDB;
        int n = 0;
        if (ret == 0)
            ret = an_db_merge(db, tmp, &n, err);
        an_db_close(db);
        if (ret == 0)
            *merged += n;
    }
    file_remove_db(tmp);
    return ret;
}

int an_sweep_run_mpi(const an_sweep_opts *o, const an_sweep_plan *plan,
                     an_sweep_summary *sum, sim_err *err)
{
    int inited = 0, rank = 0, size = 1;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return sim_err_set(err, SIM_EINTERNAL, "sweep: MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sum->rank = rank;
    sum->size = size;
    int n = plan->n_points;
    unsigned char *todo = calloc((size_t)n + 1, 1);
    unsigned char *mine = calloc((size_t)n + 1, 1);
    int code = (todo && mine) ? 0 : sim_err_set(err, SIM_ENOMEM, "sweep: out of memory");
    /* 2. rank 0 decides what is left; everyone learns it */
    if (rank == 0 && code == 0)
        code = todo_find(o, plan, todo, sum, err);
    int shared = code;
    bcast_wait(&shared, 1, MPI_INT);
    if (shared != 0) {
        if (rank != 0)
            sim_err_set(err, shared, "sweep: rank 0 could not prepare the sweep");
        goto out;
    }
    bcast_wait(todo, n, MPI_UNSIGNED_CHAR);
    /* 3. deal the to-do points and run this rank's share */
    for (int i = 0, k = 0; i < n; i++)
        if (todo[i])
            mine[i] = (k++ % size) == rank;
    char shard[4096];
    shard_path(o, rank, shard, sizeof shard);
    if (o->shard_dir && rank != 0)
        mkdir(o->shard_dir, 0777);
    sim_err run_err = {0};
    int run_ret = an_sweep_run_points(o, plan, mine, rank == 0 ? o->db_path : shard, rank,
                                      sum, &run_err);
    /* 4. ship the shards to rank 0, which merges them in rank order */
    int merge_ret = 0;
    sim_err merge_err = {0};
    if (rank == 0) {
        for (int r = 1; r < size; r++) {
            sim_err e = {0};
            int rc = shard_receive_merge(o, r, &sum->merged, &e);
            if (rc != 0 && merge_ret == 0) {
                merge_ret = rc;
                merge_err = e;
            }
        }
    } else {
        shard_send(shard);
    }
    /* 5. the merge's outcome; shards go once their runs are safe */
    int merged_ok = merge_ret;
    bcast_wait(&merged_ok, 1, MPI_INT);
    if (rank != 0 && merged_ok == 0)
        file_remove_db(shard);
    int counts[3] = {sum->ran, sum->failed, rank == 0 ? 0 : sum->skipped};
    int totals[3] = {0, 0, 0};
    MPI_Request req;
    MPI_Ireduce(counts, totals, 3, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &req);
    req_wait(&req);
    if (rank == 0) {
        sum->ran = totals[0];
        sum->failed = totals[1];
        sum->skipped += totals[2];
    }
    if (merge_ret != 0) {
        *err = merge_err;
        code = merge_ret;
    } else if (run_ret != 0) {
        *err = run_err;
        code = run_ret;
    } else if (rank == 0 && sum->failed > 0) {
        code = sim_err_set(err, SIM_EINTERNAL, "sweep: runs failed on other ranks (see "
                                               "their messages)");
    } else if (rank != 0 && merged_ok != 0) {
        code = sim_err_set(err, merged_ok, "sweep: rank 0 could not merge the shards; "
                                           "this rank's runs stay in %s", shard);
    }
out:
    free(todo);
    free(mine);
    if (!inited)
        MPI_Finalize();
    return code;
}

#else

int an_sweep_run_mpi(const an_sweep_opts *o, const an_sweep_plan *plan,
                     an_sweep_summary *sum, sim_err *err)
{
    (void)o;
    (void)plan;
    (void)sum;
    return sim_err_set(err, SIM_EINTERNAL,
                       "sweep: started by mpirun, but this dtsim was built without MPI "
                       "(install libopenmpi-dev and rebuild)");
}

#endif
