/* Discrete-event engine: a 4-ary implicit min-heap of 16-byte keys over a
 * slot pool that holds the event data.
 *
 * Invariants:
 * - A heap entry is one unsigned 128-bit key: time (never negative) in the
 *   high word, then the insertion sequence, then the slot index in the low
 *   SLOT_BITS. Comparing keys compares (time, seq), so equal times pop FIFO;
 *   the slot rides along without affecting the order (sequences are unique).
 * - Four children share one 64-byte cache line: the array is 64-byte aligned
 *   and the root sits at physical index 3, so children 4i+1..4i+4 of node i
 *   start on a line boundary.
 * - Event data lives in a slot pool: a hot part (handler, ctx, arg, state;
 *   32 bytes) and a cold part (payload) read only for events that have one.
 *   step prefetches the slot of the next root while the handler runs, and a
 *   sift in a large heap prefetches the grandchildren's lines while it
 *   compares the children: the two misses that dominate large queues.
 * - Every heap entry owns a distinct slot. A slot is LIVE (scheduled),
 *   CANCELLED (payload already freed, heap entry still present: lazy
 *   deletion) or on the free list. Cancelled slots return to the free list
 *   when their entry is popped, or in a purge when they outnumber live ones.
 * - A slot's generation changes whenever its event runs or is cancelled, so
 *   an id (generation << 32 | slot + 1) does not match a later event (until
 *   the 32-bit generation of that one slot wraps around).
 * - While a handler runs, its entry still sits at the root (root_dead): the
 *   first schedule from the handler overwrites it and sifts down once,
 *   instead of a pop followed by a push. Anything else that needs the heap
 *   removes the dead root first (settle).
 * - When the sequence counter reaches seq_limit, the heap is sorted (a sorted
 *   array is a valid heap) and the sequences renumbered by rank, which keeps
 *   every comparison unchanged.
 * Steady-state schedule/step allocate nothing; arrays only grow, doubling. */
#include "sim/engine.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(_Generic((sig_atomic_t)0, int: 1, default: 0),
               "sim_engine_set_interrupt takes a sig_atomic_t as an int");

__extension__ typedef unsigned __int128 hkey;

#define SLOT_BITS 28
#define SLOT_MASK ((1u << SLOT_BITS) - 1u)
#define SLOT_CAP_MAX (1u << SLOT_BITS)
#define SEQ_LIMIT_DEFAULT (1ull << (64 - SLOT_BITS))
#define HEAP_OFFSET 3 /* root at physical index 3: children lines aligned */

#define NEXT_END 0xFFFFFFFCu       /* end of the free list */
#define NEXT_CANCELLED 0xFFFFFFFDu /* cancelled, entry still in the heap */
#define NEXT_LIVE 0xFFFFFFFEu      /* scheduled, no payload */
#define NEXT_LIVE_PAYLOAD 0xFFFFFFFFu /* scheduled, payload in the cold array */

/* The hot part of an event: 32 bytes, two to a cache line. */
typedef struct slot {
    sim_handler fn;
    void *ctx;
    uint64_t arg;
    uint32_t gen;  /* bumped when the event runs or is cancelled */
    uint32_t next; /* free-list link, or one of the NEXT_* states */
} slot;

/* The cold part, read only for events that carry a payload. */
typedef struct cold {
    void *payload;
    sim_payload_free payload_free;
} cold;

struct sim_engine {
    hkey *heap;      /* heap[0] is the root; heap_mem + HEAP_OFFSET */
    hkey *heap_mem;  /* 64-byte aligned allocation */
    slot *pool;      /* 64-byte aligned */
    cold *payloads;
    uint32_t heap_len;
    uint32_t cap;       /* capacity of the heap and of both slot arrays */
    uint32_t pool_len;  /* slots ever handed out (high-water mark) */
    uint32_t free_head; /* NEXT_END when empty */
    uint32_t ncancelled; /* cancelled entries still in the heap */
    int root_dead;       /* heap[0] belongs to the running handler */
    int stop;
    sim_time now;
    uint64_t seq;
    uint64_t seq_limit;
    uint64_t live;
    uint64_t processed;
    sim_advance_hook advance;  /* called before now moves forward, or NULL */
    void *advance_ctx;
    volatile int *interrupt; /* run_until returns when *interrupt */
    int overflowed; /* an event reached SIM_TIME_MAX: run_until ran no more */
    sim_time horizon; /* the running run_until's `until`; SIM_TIME_MAX outside */
};

static inline hkey key_make(sim_time t, uint64_t seq, uint32_t s)
{
    return ((hkey)(uint64_t)t << 64) | (hkey)((seq << SLOT_BITS) | s);
}
static inline sim_time key_time(hkey k) { return (sim_time)(uint64_t)(k >> 64); }
static inline uint32_t key_slot(hkey k) { return (uint32_t)k & SLOT_MASK; }

#define PREFETCH_MIN 4096

/* Moves the hole at i down until x fits there. */
static inline void sift_down(hkey *h, uint32_t n, uint32_t i, hkey x)
{
    int pf = n >= PREFETCH_MIN;
    for (;;) {
        uint32_t c = 4 * i + 1;
        if (c + 3 < n) {
            if (pf && 4 * c + 16 < n) {
                __builtin_prefetch(&h[4 * c + 1]);
                __builtin_prefetch(&h[4 * c + 5]);
                __builtin_prefetch(&h[4 * c + 9]);
                __builtin_prefetch(&h[4 * c + 13]);
            }
            uint32_t a = h[c + 1] < h[c] ? c + 1 : c;
            uint32_t b = h[c + 3] < h[c + 2] ? c + 3 : c + 2;
            uint32_t m = h[b] < h[a] ? b : a;
            if (!(h[m] < x))
                break;
            h[i] = h[m];
            i = m;
            continue;
        }
        if (c >= n)
            break;
        uint32_t m = c;
        for (uint32_t j = c + 1; j < n; j++)
            if (h[j] < h[m])
                m = j;
        if (h[m] < x) {
            h[i] = h[m];
            i = m;
        }
        break;
    }
    h[i] = x;
}

static inline void sift_up(hkey *h, uint32_t i, hkey x)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 4;
        if (!(x < h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static void heap_pop_root(sim_engine *eng)
{
    uint32_t n = --eng->heap_len;
    if (n > 0)
        sift_down(eng->heap, n, 0, eng->heap[n]);
}

static inline void slot_release(sim_engine *eng, uint32_t s)
{
    eng->pool[s].next = eng->free_head;
    eng->free_head = s;
}

/* Removes the root left by a running handler that scheduled nothing. */
static inline void settle(sim_engine *eng)
{
    if (eng->root_dead) {
        eng->root_dead = 0;
        heap_pop_root(eng);
    }
}

/* Pops cancelled entries off the top; returns 1 if a live root remains. */
static inline int heap_skip_cancelled(sim_engine *eng)
{
    settle(eng);
    while (eng->heap_len > 0) {
        uint32_t s = key_slot(eng->heap[0]);
        if (eng->pool[s].next != NEXT_CANCELLED)
            return 1;
        heap_pop_root(eng);
        slot_release(eng, s);
        eng->ncancelled--;
    }
    return 0;
}

/* Drops every cancelled entry and rebuilds the heap in O(n). */
static void heap_purge(sim_engine *eng)
{
    settle(eng);
    hkey *h = eng->heap;
    uint32_t n = 0;
    for (uint32_t i = 0; i < eng->heap_len; i++) {
        uint32_t s = key_slot(h[i]);
        if (eng->pool[s].next == NEXT_CANCELLED)
            slot_release(eng, s);
        else
            h[n++] = h[i];
    }
    eng->heap_len = n;
    eng->ncancelled = 0;
    if (n > 1)
        for (uint32_t i = (n - 2) / 4 + 1; i-- > 0;)
            sift_down(h, n, i, h[i]);
}

static int key_cmp(const void *a, const void *b)
{
    hkey x = *(const hkey *)a, y = *(const hkey *)b;
    return (x > y) - (x < y);
}

/* Sorts the heap (still a heap) and renumbers sequences by rank. */
static void seq_renumber(sim_engine *eng)
{
    hkey *h = eng->heap;
    qsort(h, eng->heap_len, sizeof *h, key_cmp);
    for (uint32_t i = 0; i < eng->heap_len; i++)
        h[i] = key_make(key_time(h[i]), i, key_slot(h[i]));
    eng->seq = eng->heap_len;
}

static void *alloc_lines(size_t bytes)
{
    return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

static int engine_grow(sim_engine *eng, uint32_t want)
{
    if (want > SLOT_CAP_MAX)
        return -1;
    uint32_t cap = eng->cap ? eng->cap : 64;
    while (cap < want)
        cap = cap > SLOT_CAP_MAX / 2 ? SLOT_CAP_MAX : cap * 2;
    if (cap <= eng->cap)
        return 0;
    hkey *mem = alloc_lines(((size_t)cap + HEAP_OFFSET) * sizeof(hkey));
    slot *pool = alloc_lines((size_t)cap * sizeof(slot));
    cold *payloads = realloc(eng->payloads, (size_t)cap * sizeof(cold));
    if (!mem || !pool || !payloads) {
        free(mem);
        free(pool);
        if (payloads)
            eng->payloads = payloads;
        return -1;
    }
    if (eng->heap_len)
        memcpy(mem + HEAP_OFFSET, eng->heap, (size_t)eng->heap_len * sizeof(hkey));
    if (eng->pool_len)
        memcpy(pool, eng->pool, (size_t)eng->pool_len * sizeof(slot));
    free(eng->heap_mem);
    free(eng->pool);
    eng->heap_mem = mem;
    eng->heap = mem + HEAP_OFFSET;
    eng->pool = pool;
    eng->payloads = payloads;
    eng->cap = cap;
    return 0;
}

sim_engine *sim_engine_create(uint32_t capacity_hint)
{
    sim_engine *eng = calloc(1, sizeof *eng);
    if (!eng)
        return NULL;
    eng->free_head = NEXT_END;
    eng->seq_limit = SEQ_LIMIT_DEFAULT;
    eng->horizon = SIM_TIME_MAX;
    if (engine_grow(eng, capacity_hint ? capacity_hint : 1024) != 0) {
        sim_engine_destroy(eng);
        return NULL;
    }
    return eng;
}

void sim_engine_destroy(sim_engine *eng)
{
    if (!eng)
        return;
    for (uint32_t s = 0; s < eng->pool_len; s++) {
        if (eng->pool[s].next == NEXT_LIVE_PAYLOAD && eng->payloads[s].payload_free) {
            eng->pool[s].next = NEXT_CANCELLED;
            eng->payloads[s].payload_free(eng->payloads[s].payload);
        }
    }
    free(eng->payloads);
    free(eng->pool);
    free(eng->heap_mem);
    free(eng);
}

sim_time sim_engine_now(const sim_engine *eng) { return eng->now; }

sim_event_id sim_engine_schedule(sim_engine *eng, sim_time delay, sim_handler fn,
                                 void *ctx, uint64_t arg, void *payload,
                                 sim_payload_free payload_free)
{
    if (delay < 0 || !fn)
        goto fail;
    if (eng->seq >= eng->seq_limit)
        seq_renumber(eng);
    uint32_t s = eng->free_head;
    if (s == NEXT_END) {
        if (eng->pool_len == eng->cap && engine_grow(eng, eng->cap + 1) != 0)
            goto fail;
        s = eng->pool_len++;
        eng->pool[s].gen = 0;
    } else {
        eng->free_head = eng->pool[s].next;
    }
    slot *e = &eng->pool[s];
    e->fn = fn;
    e->ctx = ctx;
    e->arg = arg;
    if (payload && payload_free) {
        e->next = NEXT_LIVE_PAYLOAD;
        eng->payloads[s].payload = payload;
        eng->payloads[s].payload_free = payload_free;
    } else {
        /* A payload without a free function is only borrowed. */
        e->next = NEXT_LIVE;
        if (payload) {
            eng->payloads[s].payload = payload;
            eng->payloads[s].payload_free = NULL;
            e->next = NEXT_LIVE_PAYLOAD;
        }
    }
    sim_time t = delay > SIM_TIME_MAX - eng->now ? SIM_TIME_MAX : eng->now + delay;
    hkey k = key_make(t, eng->seq++, s);
    if (eng->root_dead) {
        eng->root_dead = 0;
        sift_down(eng->heap, eng->heap_len, 0, k);
    } else {
        sift_up(eng->heap, eng->heap_len++, k);
    }
    eng->live++;
    return ((uint64_t)e->gen << 32) | ((uint64_t)s + 1);
fail:
    if (payload && payload_free)
        payload_free(payload);
    return 0;
}

int sim_engine_cancel(sim_engine *eng, sim_event_id id)
{
    uint32_t low = (uint32_t)id;
    if (low == 0 || low > eng->pool_len)
        return 0;
    uint32_t s = low - 1;
    slot *e = &eng->pool[s];
    if (e->next < NEXT_LIVE || e->gen != (uint32_t)(id >> 32))
        return 0;
    int has_payload = e->next == NEXT_LIVE_PAYLOAD;
    e->next = NEXT_CANCELLED;
    e->gen++;
    eng->live--;
    eng->ncancelled++;
    if (has_payload && eng->payloads[s].payload_free)
        eng->payloads[s].payload_free(eng->payloads[s].payload);
    if (eng->ncancelled >= 64 && eng->ncancelled > eng->heap_len / 2)
        heap_purge(eng);
    return 1;
}

int sim_engine_step(sim_engine *eng)
{
    if (!heap_skip_cancelled(eng))
        return 0;
    hkey *h = eng->heap;
    hkey k = h[0];
    uint32_t n = eng->heap_len;
    if (n > 4) {
        /* The next root is the least child or an event scheduled by this
         * handler (whose slot is hot): fetch the child's slot early. */
        uint32_t a = h[2] < h[1] ? 2 : 1;
        uint32_t b = h[4] < h[3] ? 4 : 3;
        __builtin_prefetch(&eng->pool[key_slot(h[b] < h[a] ? h[b] : h[a])]);
    }
    uint32_t s = key_slot(k);
    slot *e = &eng->pool[s];
    sim_handler fn = e->fn;
    void *ctx = e->ctx;
    uint64_t arg = e->arg;
    void *payload = NULL;
    sim_payload_free payload_free = NULL;
    if (e->next == NEXT_LIVE_PAYLOAD) {
        payload = eng->payloads[s].payload;
        payload_free = eng->payloads[s].payload_free;
    }
    if (eng->advance && key_time(k) > eng->now) {
        eng->advance(eng->advance_ctx); /* schedules nothing: k stays the root */
        e = &eng->pool[s];
    }
    e->gen++;
    e->next = eng->free_head;
    eng->free_head = s;
    eng->now = key_time(k);
    eng->live--;
    eng->processed++;
    eng->root_dead = 1;
    fn(eng, ctx, arg, payload);
    settle(eng);
    if (payload_free)
        payload_free(payload);
    return 1;
}

static uint64_t run_until(sim_engine *eng, sim_time until)
{
    uint64_t n = 0;
    eng->stop = 0;
    eng->horizon = until;
    while (!eng->stop) {
        if (eng->interrupt && *eng->interrupt)
            break;
        if (!heap_skip_cancelled(eng))
            return n;
        if (key_time(eng->heap[0]) == SIM_TIME_MAX && until == SIM_TIME_MAX) {
            eng->overflowed = 1; /* a saturated time: the clock would wrap */
            break;
        }
        if (key_time(eng->heap[0]) > until) {
            if (until > eng->now) {
                if (eng->advance)
                    eng->advance(eng->advance_ctx);
                eng->now = until;
            }
            return n;
        }
        sim_engine_step(eng);
        n++;
    }
    eng->stop = 0;
    return n;
}

uint64_t sim_engine_run_until(sim_engine *eng, sim_time until)
{
    uint64_t n = run_until(eng, until);
    eng->horizon = SIM_TIME_MAX;
    return n;
}

sim_time sim_engine_horizon(const sim_engine *eng) { return eng->horizon; }

uint64_t sim_engine_pending_before(const sim_engine *eng, sim_time t)
{
    uint64_t k = 0;
    for (uint32_t i = eng->root_dead ? 1 : 0; i < eng->heap_len; i++) {
        if (key_time(eng->heap[i]) >= t)
            continue;
        uint32_t nx = eng->pool[key_slot(eng->heap[i])].next;
        k += nx == NEXT_LIVE || nx == NEXT_LIVE_PAYLOAD;
    }
    return k;
}

void sim_engine_stop(sim_engine *eng) { eng->stop = 1; }

int sim_engine_stopping(const sim_engine *eng) { return eng->stop; }

int sim_engine_overflowed(const sim_engine *eng) { return eng->overflowed; }

uint64_t sim_engine_pending(const sim_engine *eng) { return eng->live; }

uint64_t sim_engine_processed(const sim_engine *eng) { return eng->processed; }

sim_time sim_engine_next_time(sim_engine *eng)
{
    return heap_skip_cancelled(eng) ? key_time(eng->heap[0]) : SIM_TIME_MAX;
}

void sim_engine_set_advance_hook(sim_engine *eng, sim_advance_hook fn, void *ctx)
{
    eng->advance = fn;
    eng->advance_ctx = ctx;
}

void sim_engine_set_interrupt(sim_engine *eng, volatile int *flag)
{
    eng->interrupt = flag;
}

void sim_engine_set_seq_limit(sim_engine *eng, uint64_t limit)
{
    if (limit < 1)
        limit = 1;
    eng->seq_limit = limit < SEQ_LIMIT_DEFAULT ? limit : SEQ_LIMIT_DEFAULT;
}
