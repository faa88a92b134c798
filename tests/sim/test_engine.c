/* Engine: FIFO ties, time order against a sorted reference, cancellation,
 * payload ownership (every payload freed exactly once), run_until's clock,
 * stop, and a long random schedule/cancel/step sequence checked against a
 * simple sorted-array model. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"

/* Deterministic test randomness (splitmix64). */
static uint64_t rnd_state;
static uint64_t rnd(void)
{
    uint64_t z = (rnd_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A log of handler calls: arg and the clock when each ran. */
typedef struct log {
    uint64_t arg[4096];
    sim_time at[4096];
    int n;
} log_t;

static void log_handler(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)payload;
    log_t *l = ctx;
    cr_assert_lt(l->n, 4096);
    l->arg[l->n] = arg;
    l->at[l->n] = sim_engine_now(eng);
    l->n++;
}

/* Payloads that count their frees. */
static int frees;
static void count_free(void *p)
{
    frees++;
    free(p);
}
static int *payload_new(int v)
{
    int *p = malloc(sizeof *p);
    cr_assert_not_null(p);
    *p = v;
    return p;
}

Test(engine, equal_times_pop_in_fifo_order)
{
    sim_engine *eng = sim_engine_create(0);
    cr_assert_not_null(eng);
    log_t l = {0};
    /* 300 events at times 0, 5, 10 interleaved: each time's events must pop
     * in the order they were scheduled. */
    for (uint64_t i = 0; i < 300; i++)
        cr_assert_neq(sim_engine_schedule(eng, (sim_time)(i % 3) * 5, log_handler, &l, i,
                                          NULL, NULL),
                      0);
    while (sim_engine_step(eng))
        ;
    cr_assert_eq(l.n, 300);
    for (int k = 0; k < 300; k++) {
        uint64_t want = (uint64_t)(3 * (k % 100) + k / 100);
        cr_assert_eq(l.arg[k], want, "pop %d: got %llu, want %llu", k,
                     (unsigned long long)l.arg[k], (unsigned long long)want);
        cr_assert_eq(l.at[k], (sim_time)(k / 100) * 5);
    }
    sim_engine_destroy(eng);
}

/* Schedules one zero-delay follow-up (arg + 1000) the first time it runs. */
static void chain_handler(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    log_handler(eng, ctx, arg, payload);
    if (arg < 1000)
        sim_engine_schedule(eng, 0, chain_handler, ctx, arg + 1000, NULL, NULL);
}

Test(engine, zero_delay_from_handler_runs_after_same_time_events)
{
    sim_engine *eng = sim_engine_create(0);
    log_t l = {0};
    for (uint64_t i = 0; i < 4; i++)
        sim_engine_schedule(eng, 7, chain_handler, &l, i, NULL, NULL);
    cr_assert_eq(sim_engine_run_until(eng, 7), 8);
    static const uint64_t want[] = {0, 1, 2, 3, 1000, 1001, 1002, 1003};
    for (int k = 0; k < 8; k++) {
        cr_assert_eq(l.arg[k], want[k]);
        cr_assert_eq(l.at[k], 7);
    }
    sim_engine_destroy(eng);
}

typedef struct ref_ev {
    sim_time t;
    uint64_t seq;
} ref_ev;

static int ref_cmp(const void *a, const void *b)
{
    const ref_ev *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

Test(engine, random_delays_pop_in_time_then_insertion_order)
{
    enum { N = 4000 };
    static ref_ev ref[N];
    rnd_state = 11;
    sim_engine *eng = sim_engine_create(1); /* grows many times */
    log_t *l = calloc(1, sizeof *l);
    for (uint64_t i = 0; i < N; i++) {
        sim_time d = (sim_time)(rnd() % 500); /* many ties */
        ref[i] = (ref_ev){d, i};
        sim_engine_schedule(eng, d, log_handler, l, i, NULL, NULL);
    }
    cr_assert_eq(sim_engine_pending(eng), N);
    qsort(ref, N, sizeof ref[0], ref_cmp);
    for (int k = 0; k < N; k++) {
        cr_assert_eq(sim_engine_next_time(eng), ref[k].t);
        cr_assert_eq(sim_engine_step(eng), 1);
        cr_assert_eq(l->arg[k], ref[k].seq, "pop %d", k);
        cr_assert_eq(l->at[k], ref[k].t);
    }
    cr_assert_eq(sim_engine_step(eng), 0);
    cr_assert_eq(sim_engine_processed(eng), N);
    free(l);
    sim_engine_destroy(eng);
}

Test(engine, cancel_pending_event_frees_payload_once_and_skips_handler)
{
    sim_engine *eng = sim_engine_create(0);
    log_t l = {0};
    frees = 0;
    sim_event_id a = sim_engine_schedule(eng, 10, log_handler, &l, 1, payload_new(1), count_free);
    sim_event_id b = sim_engine_schedule(eng, 20, log_handler, &l, 2, payload_new(2), count_free);
    cr_assert_neq(a, 0);
    cr_assert_neq(b, 0);
    cr_assert_neq(a, b);
    cr_assert_eq(sim_engine_pending(eng), 2);
    cr_assert_eq(sim_engine_cancel(eng, a), 1);
    cr_assert_eq(frees, 1, "payload freed on cancel");
    cr_assert_eq(sim_engine_pending(eng), 1);
    cr_assert_eq(sim_engine_cancel(eng, a), 0, "second cancel is a no-op");
    cr_assert_eq(frees, 1);
    /* The cancelled event sits at the top of the heap: next_time skips it. */
    cr_assert_eq(sim_engine_next_time(eng), 20);
    cr_assert_eq(sim_engine_run_until(eng, 100), 1);
    cr_assert_eq(l.n, 1);
    cr_assert_eq(l.arg[0], 2);
    cr_assert_eq(frees, 2);
    cr_assert_eq(sim_engine_cancel(eng, b), 0, "cancel after run");
    cr_assert_eq(sim_engine_cancel(eng, 0), 0);
    cr_assert_eq(sim_engine_cancel(eng, 0xFFFFFFFFFFFFull), 0, "unknown id");
    sim_engine_destroy(eng);
    cr_assert_eq(frees, 2);
}

Test(engine, stale_id_does_not_cancel_a_reused_slot)
{
    sim_engine *eng = sim_engine_create(0);
    log_t l = {0};
    sim_event_id a = sim_engine_schedule(eng, 1, log_handler, &l, 1, NULL, NULL);
    cr_assert_eq(sim_engine_step(eng), 1);
    sim_event_id b = sim_engine_schedule(eng, 1, log_handler, &l, 2, NULL, NULL);
    cr_assert_neq(a, b);
    cr_assert_eq(sim_engine_cancel(eng, a), 0);
    cr_assert_eq(sim_engine_pending(eng), 1);
    cr_assert_eq(sim_engine_step(eng), 1);
    cr_assert_eq(l.n, 2);
    cr_assert_eq(l.arg[1], 2);
    /* Same for a cancelled event whose slot is reused. */
    sim_event_id c = sim_engine_schedule(eng, 1, log_handler, &l, 3, NULL, NULL);
    cr_assert_eq(sim_engine_cancel(eng, c), 1);
    cr_assert_eq(sim_engine_step(eng), 0);
    sim_event_id d = sim_engine_schedule(eng, 1, log_handler, &l, 4, NULL, NULL);
    cr_assert_neq(c, d);
    cr_assert_eq(sim_engine_cancel(eng, c), 0);
    cr_assert_eq(sim_engine_pending(eng), 1);
    cr_assert_eq(sim_engine_step(eng), 1);
    cr_assert_eq(l.arg[2], 4);
    sim_engine_destroy(eng);
}

/* ctx of the cancelling handlers. */
typedef struct canceller {
    sim_engine *eng;
    sim_event_id victim;
    sim_event_id self;
    int victim_rc;
    int self_rc;
    int ran;
} canceller;

static void cancel_handler(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    (void)arg;
    canceller *c = ctx;
    cr_assert_eq(*(int *)payload, 42, "payload reaches the handler");
    cr_assert_eq(frees, 0, "payload still alive during the handler");
    c->ran++;
    c->victim_rc = sim_engine_cancel(eng, c->victim);
    c->self_rc = sim_engine_cancel(eng, c->self);
}

Test(engine, cancel_inside_handler)
{
    sim_engine *eng = sim_engine_create(0);
    log_t l = {0};
    canceller c = {0};
    frees = 0;
    c.self = sim_engine_schedule(eng, 5, cancel_handler, &c, 0, payload_new(42), count_free);
    c.victim = sim_engine_schedule(eng, 6, log_handler, &l, 9, payload_new(9), count_free);
    sim_engine_schedule(eng, 7, log_handler, &l, 10, NULL, NULL);
    cr_assert_eq(sim_engine_run_until(eng, SIM_TIME_MAX), 2);
    cr_assert_eq(c.ran, 1);
    cr_assert_eq(c.victim_rc, 1);
    cr_assert_eq(c.self_rc, 0, "cancelling the running event is a no-op");
    cr_assert_eq(l.n, 1);
    cr_assert_eq(l.arg[0], 10);
    cr_assert_eq(frees, 2);
    cr_assert_eq(sim_engine_now(eng), 7);
    sim_engine_destroy(eng);
    cr_assert_eq(frees, 2);
}

Test(engine, run_until_boundary_and_clock)
{
    sim_engine *eng = sim_engine_create(0);
    log_t l = {0};
    sim_engine_schedule(eng, 10, log_handler, &l, 1, NULL, NULL);
    sim_engine_schedule(eng, 20, log_handler, &l, 2, NULL, NULL);
    sim_engine_schedule(eng, 30, log_handler, &l, 3, NULL, NULL);
    cr_assert_eq(sim_engine_run_until(eng, 20), 2, "events exactly at until run");
    cr_assert_eq(sim_engine_now(eng), 20);
    cr_assert_eq(sim_engine_run_until(eng, 25), 0);
    cr_assert_eq(sim_engine_now(eng), 25, "queue ran past until: now = until");
    cr_assert_eq(sim_engine_run_until(eng, 10), 0);
    cr_assert_eq(sim_engine_now(eng), 25, "time never moves backwards");
    /* Delays are relative to the advanced clock. */
    sim_engine_schedule(eng, 1, log_handler, &l, 4, NULL, NULL);
    cr_assert_eq(sim_engine_next_time(eng), 26);
    cr_assert_eq(sim_engine_run_until(eng, 1000), 2);
    cr_assert_eq(l.at[2], 26);
    cr_assert_eq(l.at[3], 30);
    cr_assert_eq(sim_engine_now(eng), 30, "queue emptied: now = last event");
    cr_assert_eq(sim_engine_pending(eng), 0);
    cr_assert_eq(sim_engine_processed(eng), 4);
    cr_assert_eq(sim_engine_next_time(eng), SIM_TIME_MAX);
    sim_engine_destroy(eng);
}

Test(engine, step_on_empty_and_counters)
{
    sim_engine *eng = sim_engine_create(0);
    log_t l = {0};
    cr_assert_eq(sim_engine_step(eng), 0);
    cr_assert_eq(sim_engine_pending(eng), 0);
    cr_assert_eq(sim_engine_processed(eng), 0);
    cr_assert_eq(sim_engine_now(eng), 0);
    sim_event_id ids[5];
    for (int i = 0; i < 5; i++)
        ids[i] = sim_engine_schedule(eng, i, log_handler, &l, (uint64_t)i, NULL, NULL);
    cr_assert_eq(sim_engine_pending(eng), 5);
    cr_assert_eq(sim_engine_cancel(eng, ids[0]), 1);
    cr_assert_eq(sim_engine_cancel(eng, ids[3]), 1);
    cr_assert_eq(sim_engine_pending(eng), 3);
    cr_assert_eq(sim_engine_step(eng), 1);
    cr_assert_eq(l.arg[0], 1, "cancelled root skipped");
    cr_assert_eq(sim_engine_processed(eng), 1);
    cr_assert_eq(sim_engine_pending(eng), 2);
    cr_assert_eq(sim_engine_step(eng), 1);
    cr_assert_eq(sim_engine_step(eng), 1);
    cr_assert_eq(sim_engine_step(eng), 0);
    cr_assert_eq(sim_engine_processed(eng), 3);
    cr_assert_eq(l.arg[2], 4);
    sim_engine_destroy(eng);
}

Test(engine, destroy_frees_pending_payloads_once)
{
    sim_engine *eng = sim_engine_create(0);
    log_t l = {0};
    frees = 0;
    sim_event_id ids[10];
    for (int i = 0; i < 10; i++)
        ids[i] = sim_engine_schedule(eng, i, log_handler, &l, 0, payload_new(i), count_free);
    cr_assert_eq(sim_engine_cancel(eng, ids[7]), 1);
    cr_assert_eq(sim_engine_run_until(eng, 2), 3);
    cr_assert_eq(frees, 4);
    sim_engine_destroy(eng);
    cr_assert_eq(frees, 10);
    sim_engine_destroy(NULL);
}

Test(engine, invalid_schedule_returns_zero_and_frees_payload)
{
    sim_engine *eng = sim_engine_create(0);
    log_t l = {0};
    frees = 0;
    cr_assert_eq(sim_engine_schedule(eng, -1, log_handler, &l, 0, payload_new(1), count_free), 0);
    cr_assert_eq(frees, 1);
    cr_assert_eq(sim_engine_schedule(eng, 1, NULL, &l, 0, payload_new(1), count_free), 0);
    cr_assert_eq(frees, 2);
    cr_assert_eq(sim_engine_pending(eng), 0);
    sim_engine_destroy(eng);
}

/* A delay past the clock saturates, and the saturated event never runs:
 * run_until stops before it with the clock unchanged and reports the
 * overflow (the runner fails the run); a horizon before it is no overflow. */
Test(engine, huge_delay_saturates_and_overflows_instead_of_running)
{
    sim_engine *eng = sim_engine_create(0);
    log_t l = {0};
    sim_engine_schedule(eng, 5, log_handler, &l, 0, NULL, NULL);
    cr_assert_eq(sim_engine_step(eng), 1);
    cr_assert_neq(sim_engine_schedule(eng, SIM_TIME_MAX, log_handler, &l, 1, NULL, NULL), 0);
    cr_assert_eq(sim_engine_pending(eng), 1);
    cr_assert_eq(sim_engine_next_time(eng), SIM_TIME_MAX);
    cr_assert_eq(sim_engine_run_until(eng, 1000), 0);
    cr_assert_eq(sim_engine_overflowed(eng), 0);
    cr_assert_eq(sim_engine_run_until(eng, SIM_TIME_MAX), 0);
    cr_assert_eq(sim_engine_overflowed(eng), 1);
    cr_assert_eq(sim_engine_now(eng), 1000);
    cr_assert_eq(l.n, 1);
    sim_engine_destroy(eng);
}

typedef struct stopper {
    log_t l;
    uint64_t stop_at;
} stopper;

static void stop_handler(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    stopper *s = ctx;
    log_handler(eng, &s->l, arg, payload);
    if (arg == s->stop_at)
        sim_engine_stop(eng);
}

Test(engine, stop_from_handler)
{
    sim_engine *eng = sim_engine_create(0);
    stopper s = {.stop_at = 5};
    for (uint64_t i = 1; i <= 10; i++)
        sim_engine_schedule(eng, (sim_time)i * 100, stop_handler, &s, i, NULL, NULL);
    cr_assert_eq(sim_engine_run_until(eng, 5000), 5);
    cr_assert_eq(sim_engine_now(eng), 500, "stopped: now stays at the last event");
    cr_assert_eq(sim_engine_pending(eng), 5);
    cr_assert_eq(sim_engine_run_until(eng, 5000), 5, "the next run goes on");
    cr_assert_eq(s.l.arg[9], 10);
    cr_assert_eq(sim_engine_now(eng), 1000);
    sim_engine_destroy(eng);
}

static int cmp_time(const void *a, const void *b)
{
    sim_time x = *(const sim_time *)a, y = *(const sim_time *)b;
    return (x > y) - (x < y);
}

/* Schedules n events at random times and cancels most of them, which purges
 * the heap; the survivors must pop in (time, insertion) order. earliest = 0:
 * every tenth survives; 1: the n/2 + 1 earliest are cancelled, so the purge
 * comes with the last cancel and removes the whole top of the heap. */
static void mass_cancel(int n, int earliest)
{
    enum { N = 3000 };
    cr_assert_leq(n, N);
    sim_engine *eng = sim_engine_create(0);
    log_t *l = calloc(1, sizeof *l);
    static sim_event_id ids[N];
    static sim_time times[N], sorted[N];
    static ref_ev ref[N];
    int nref = 0;
    rnd_state = 5;
    frees = 0;
    for (int i = 0; i < n; i++)
        sorted[i] = times[i] = (sim_time)(rnd() % 1000000);
    qsort(sorted, (size_t)n, sizeof sorted[0], cmp_time);
    sim_time cut = sorted[n / 2 + 1];
    cr_assert_gt(cut, sorted[n / 2], "distinct times around the cut");
    static char keep[N];
    for (int i = 0; i < n; i++) {
        keep[i] = earliest ? times[i] >= cut : i % 10 == 0;
        ids[i] = sim_engine_schedule(eng, times[i], log_handler, l, (uint64_t)i,
                                     payload_new(i), count_free);
        if (keep[i])
            ref[nref++] = (ref_ev){times[i], (uint64_t)i};
    }
    for (int i = 0; i < n; i++)
        if (!keep[i])
            cr_assert_eq(sim_engine_cancel(eng, ids[i]), 1);
    cr_assert_eq(frees, n - nref);
    cr_assert_eq(sim_engine_pending(eng), (uint64_t)nref);
    cr_assert_eq(sim_engine_run_until(eng, SIM_TIME_MAX), (uint64_t)nref);
    cr_assert_eq(frees, n);
    qsort(ref, (size_t)nref, sizeof ref[0], ref_cmp);
    for (int k = 0; k < nref; k++) {
        cr_assert_eq(l->arg[k], ref[k].seq, "pop %d", k);
        cr_assert_eq(l->at[k], ref[k].t);
    }
    free(l);
    sim_engine_destroy(eng);
}

Test(engine, mass_cancel_keeps_order_and_frees)
{
    mass_cancel(3000, 0);
    mass_cancel(200, 1);
    mass_cancel(2000, 1);
}

/* The reference model: pending events sorted by (time, seq). */
typedef struct mev {
    sim_time t;
    uint64_t seq;
    sim_event_id id;
    uint64_t tag;
} mev;

typedef struct model {
    mev *ev;
    size_t n;
    uint64_t seq;
    uint64_t last_tag; /* tag of the event the engine ran last */
    uint64_t next_tag;
    sim_engine *eng;
} model;

static void model_insert(model *m, sim_time t, sim_event_id id, uint64_t tag)
{
    mev e = {t, m->seq++, id, tag};
    size_t lo = 0, hi = m->n; /* first element greater than e */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->ev[mid].t < t || (m->ev[mid].t == t && m->ev[mid].seq < e.seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(&m->ev[lo + 1], &m->ev[lo], (m->n - lo) * sizeof e);
    m->ev[lo] = e;
    m->n++;
}

static void model_handler(sim_engine *eng, void *ctx, uint64_t arg, void *payload);

/* Schedules in both the engine and the model. */
static void model_schedule(model *m, sim_time delay)
{
    uint64_t tag = m->next_tag++;
    sim_event_id id = sim_engine_schedule(m->eng, delay, model_handler, m, tag,
                                          payload_new((int)tag), count_free);
    cr_assert_neq(id, 0);
    model_insert(m, sim_engine_now(m->eng) + delay, id, tag);
}

/* Records the tag; every fifth event schedules a follow-up (the model
 * mirrors it in the same order, after removing the popped event). */
static void model_handler(sim_engine *eng, void *ctx, uint64_t arg, void *payload)
{
    model *m = ctx;
    cr_assert_eq(*(int *)payload, (int)arg);
    m->last_tag = arg;
    cr_assert_gt(m->n, 0);
    cr_assert_eq(m->ev[0].tag, arg, "engine ran tag %llu, model expects %llu",
                 (unsigned long long)arg, (unsigned long long)m->ev[0].tag);
    cr_assert_eq(sim_engine_now(eng), m->ev[0].t);
    memmove(&m->ev[0], &m->ev[1], (m->n - 1) * sizeof m->ev[0]);
    m->n--;
    if (arg % 5 == 0)
        model_schedule(m, (sim_time)(arg % 7));
}

static void run_model(uint64_t seq_limit)
{
    enum { OPS = 100000 };
    model m = {0};
    m.ev = malloc(OPS * 2 * sizeof *m.ev);
    m.eng = sim_engine_create(0);
    cr_assert_not_null(m.eng);
    if (seq_limit)
        sim_engine_set_seq_limit(m.eng, seq_limit);
    rnd_state = 2024 + seq_limit;
    frees = 0;
    uint64_t ran = 0, cancelled = 0;
    for (int op = 0; op < OPS; op++) {
        uint64_t r = rnd() % 100;
        if (r < 45 || m.n == 0) {
            model_schedule(&m, (sim_time)(rnd() % 64)); /* small range: many ties */
        } else if (r < 85) {
            cr_assert_eq(sim_engine_step(m.eng), 1);
            ran++;
        } else if (r < 97) {
            size_t k = (size_t)(rnd() % m.n);
            cr_assert_eq(sim_engine_cancel(m.eng, m.ev[k].id), 1);
            memmove(&m.ev[k], &m.ev[k + 1], (m.n - k - 1) * sizeof m.ev[0]);
            m.n--;
            cancelled++;
        } else {
            cr_assert_eq(sim_engine_next_time(m.eng), m.ev[0].t);
        }
        cr_assert_eq(sim_engine_pending(m.eng), m.n);
    }
    cr_assert_eq(sim_engine_processed(m.eng), ran);
    cr_assert_eq(frees, ran + cancelled);
    while (sim_engine_step(m.eng))
        ;
    cr_assert_eq(m.n, 0);
    cr_assert_eq(frees, m.next_tag, "every payload freed exactly once");
    sim_engine_destroy(m.eng);
    cr_assert_eq(frees, m.next_tag);
    free(m.ev);
}

Test(engine, random_operations_match_reference_model) { run_model(0); }

Test(engine, sequence_renumbering_keeps_order) { run_model(5000); }
