/* Engine benchmark: the classic hold model. N events are pending; each step
 * pops the earliest and schedules one at now + an exponential increment, so
 * N stays constant. Increments are drawn beforehand into an array, so the
 * RNG is not measured. The same workload runs on a bare array-based binary
 * min-heap of (time, seq) as a yardstick. Prints events/s per N and the
 * peak RSS. Usage: bench_engine [events_per_size [pending]] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <gsl/gsl_randist.h>

#include "sim/engine.h"
#include "sim/rng.h"

#define INC_BITS 20
#define INC_COUNT (1u << INC_BITS)
#define INC_MASK (INC_COUNT - 1u)
#define MEAN_NS 1000000.0 /* mean increment: 1 ms */
#define REPEATS 5

typedef struct hold {
    const sim_time *inc;
    uint32_t next;
} hold;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void hold_handler(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)arg;
    (void)payload;
    hold *h = ctx;
    sim_engine_schedule(eng, h->inc[h->next++ & INC_MASK], hold_handler, h, 0, NULL,
                        NULL);
}

/* The yardstick: a minimal binary min-heap ordered by (time, seq). */
typedef struct bent {
    int64_t time;
    uint64_t seq;
} bent;

typedef struct bheap {
    bent *a;
    uint32_t len;
    uint64_t seq;
    uint32_t next; /* index into the increments */
    int64_t check; /* keeps the popped times observable */
} bheap;

static inline int bent_less(bent x, bent y)
{
    return x.time < y.time || (x.time == y.time && x.seq < y.seq);
}

/* Sifts x up from the hole at i. */
static inline void bheap_up(bent *a, uint32_t i, bent x)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!bent_less(x, a[p]))
            break;
        a[i] = a[p];
        i = p;
    }
    a[i] = x;
}

/* Sifts x down from the hole at the root of a heap of n entries. */
static inline void bheap_down(bent *a, uint32_t n, bent x)
{
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && bent_less(a[c + 1], a[c]))
            c++;
        if (!bent_less(a[c], x))
            break;
        a[i] = a[c];
        i = c;
    }
    a[i] = x;
}

static void bheap_push(bheap *h, int64_t time)
{
    bent x = {time, h->seq++};
    bheap_up(h->a, h->len++, x);
}

/* Pop the minimum, push it back one increment later; state kept in locals
 * so that the compiler need not reload it through possible aliases. */
static void bare_run(bheap *h, const sim_time *inc, uint64_t m)
{
    bent *a = h->a;
    uint32_t len = h->len, next = h->next;
    uint64_t seq = h->seq;
    int64_t check = h->check;
    for (uint64_t i = 0; i < m; i++) {
        bent top = a[0];
        len--;
        if (len > 0)
            bheap_down(a, len, a[len]);
        check += top.time & 1;
        bent x = {top.time + inc[next++ & INC_MASK], seq++};
        bheap_up(a, len++, x);
    }
    h->len = len;
    h->next = next;
    h->seq = seq;
    h->check = check;
}

static void engine_run(sim_engine *eng, uint64_t m)
{
    for (uint64_t i = 0; i < m; i++)
        sim_engine_step(eng);
}

/* Runs both on n pending events, alternating REPEATS rounds of m events so
 * that both see the same machine noise; keeps the best round of each.
 * Returns 0, or -1 when out of memory or the engine lost events. */
static int bench_size(const sim_time *inc, uint32_t n, uint64_t m, double *eng_rate,
                      double *bare_rate)
{
    sim_engine *eng = sim_engine_create(n);
    bheap bh = {malloc((size_t)n * sizeof(bent)), 0, 0, 0, 0};
    hold h = {inc, 0};
    int rc = -1;
    if (!eng || !bh.a)
        goto done;
    for (uint32_t i = 0; i < n; i++) {
        sim_engine_schedule(eng, inc[h.next++ & INC_MASK], hold_handler, &h, 0, NULL,
                            NULL);
        bheap_push(&bh, inc[bh.next++ & INC_MASK]);
    }
    engine_run(eng, n); /* warm-up: mix the initial times */
    bare_run(&bh, inc, n);
    *eng_rate = *bare_rate = 0.0;
    for (int r = 0; r < REPEATS; r++) {
        double t0 = now_s();
        engine_run(eng, m);
        double t1 = now_s();
        bare_run(&bh, inc, m);
        double t2 = now_s();
        if ((double)m / (t1 - t0) > *eng_rate)
            *eng_rate = (double)m / (t1 - t0);
        if ((double)m / (t2 - t1) > *bare_rate)
            *bare_rate = (double)m / (t2 - t1);
    }
    if (sim_engine_pending(eng) == n && bh.len == n && bh.check >= 0)
        rc = 0;
done:
    sim_engine_destroy(eng);
    free(bh.a);
    return rc;
}

int main(int argc, char **argv)
{
    uint64_t m = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
    uint32_t sizes[] = {1000, 100000, 1000000};
    size_t nsizes = sizeof sizes / sizeof sizes[0];
    if (argc > 2) {
        sizes[0] = (uint32_t)strtoul(argv[2], NULL, 10);
        nsizes = 1;
    }
    sim_time *inc = malloc(INC_COUNT * sizeof *inc);
    gsl_rng *r = sim_rng_create(42, SIM_STREAM_DATA, 0);
    if (!inc || !r || m == 0 || sizes[0] == 0) {
        fprintf(stderr, "bench_engine: out of memory or bad argument\n");
        return 1;
    }
    for (uint32_t i = 0; i < INC_COUNT; i++)
        inc[i] = (sim_time)(gsl_ran_exponential(r, MEAN_NS) + 0.5);
    gsl_rng_free(r);

    printf("hold model, best of %d alternating rounds of %llu events\n", REPEATS,
           (unsigned long long)m);
    printf("%10s %18s %20s %8s\n", "pending", "engine Mevents/s", "bare heap Mevents/s",
           "ratio");
    int ok = 1;
    for (size_t i = 0; i < nsizes; i++) {
        double e = 0.0, b = 0.0;
        if (bench_size(inc, sizes[i], m, &e, &b) != 0)
            ok = 0;
        printf("%10u %18.2f %20.2f %8.2f\n", sizes[i], e * 1e-6, b * 1e-6,
               b > 0.0 ? e / b : 0.0);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
    free(inc);
    return ok ? 0 : 1;
}
