/* The thread pool (see pool.h). A run is a generation: the caller
 * publishes (fn, ctx, n), bumps the generation and wakes the helpers;
 * every thread then claims indices from an atomic counter until they are
 * exhausted. The caller returns once every helper has left the generation
 * (busy == 0), so no helper can touch fn's data after sim_pool_run. */
#include "sim/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct sim_pool {
    pthread_mutex_t mu;
    pthread_cond_t wake;     /* helpers: a new generation or quit */
    pthread_cond_t idle;     /* caller: the last helper left the generation */
    uint64_t gen;            /* under mu */
    int busy;                /* helpers inside the current generation, under mu */
    int quit;                /* under mu */
    sim_pool_fn fn;          /* the current run (written before gen changes) */
    void *ctx;
    int64_t n;
    atomic_int_fast64_t next; /* next index to claim */
    int n_helpers;
    pthread_t *helpers;
};

static void claim_all(sim_pool *p)
{
    for (;;) {
        int64_t i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= p->n)
            return;
        p->fn(p->ctx, i);
    }
}

static void *helper_main(void *arg)
{
    sim_pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        p->busy++;
        pthread_mutex_unlock(&p->mu);
        claim_all(p);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0)
            pthread_cond_signal(&p->idle);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

sim_pool *sim_pool_create(int threads)
{
    if (threads < 2)
        return NULL;
    sim_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->helpers = calloc((size_t)threads - 1, sizeof *p->helpers);
    if (!p->helpers) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    atomic_init(&p->next, 0);
    for (int t = 0; t < threads - 1; t++) {
        if (pthread_create(&p->helpers[t], NULL, helper_main, p) != 0) {
            sim_pool_destroy(p);
            return NULL;
        }
        p->n_helpers++;
    }
    return p;
}

void sim_pool_destroy(sim_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int t = 0; t < p->n_helpers; t++)
        pthread_join(p->helpers[t], NULL);
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->helpers);
    free(p);
}

int sim_pool_threads(const sim_pool *p) { return p ? p->n_helpers + 1 : 1; }

void sim_pool_run(sim_pool *p, int64_t n, sim_pool_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (n == 1 || !p || p->n_helpers == 0) {
        for (int64_t i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0) /* a helper late for the last run is still leaving it */
        pthread_cond_wait(&p->idle, &p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    claim_all(p);
    /* every index is claimed; wait for helpers still running theirs (or
     * not yet awake: they find nothing left and leave at once) */
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->idle, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

int sim_pool_default_threads(void)
{
    cpu_set_t set; /* the processors this process may run on (taskset) */
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 1)
        return CPU_COUNT(&set) > 1024 ? 1024 : CPU_COUNT(&set);
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c >= 1 ? (int)(c > 1024 ? 1024 : c) : 1;
}
