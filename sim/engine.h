/* Discrete-event engine. Simulated time is int64 nanoseconds. Events are
 * ordered by (time, insertion sequence), so equal times pop in FIFO order
 * and runs repeat exactly. Delays are relative and never negative.
 *
 * Ownership: an event may carry a heap payload with a free function; the
 * engine owns it from sim_engine_schedule on and frees it exactly once,
 * after the handler returns or when the event is cancelled or the engine is
 * destroyed. Most events need no payload: ctx (borrowed, never freed) and a
 * 64-bit arg carry what the handler needs, so the hot path allocates nothing. */
#ifndef DTSIM_SIM_ENGINE_H
#define DTSIM_SIM_ENGINE_H

#include <stdint.h>

#include "sim/units.h"

typedef struct sim_engine sim_engine;

/* Handler: ctx as given to schedule; arg as given; payload as given (still
 * owned by the engine, freed after the handler returns). A handler may
 * schedule and cancel events and call sim_engine_stop; cancelling its own
 * (running) event is a no-op returning 0. */
typedef void (*sim_handler)(sim_engine *eng, void *ctx, uint64_t arg, void *payload);
typedef void (*sim_payload_free)(void *payload);

/* Opaque id of a scheduled event; 0 is never a valid id. Ids stay unique
 * (generation-checked), so cancelling an event that already ran is a no-op. */
typedef uint64_t sim_event_id;

/* NULL when out of memory. capacity_hint: expected pending events (0 = default). */
sim_engine *sim_engine_create(uint32_t capacity_hint);
/* Frees all pending payloads. destroy(NULL) is a no-op. */
void sim_engine_destroy(sim_engine *eng);

sim_time sim_engine_now(const sim_engine *eng);

/* Schedules handler at now + delay (saturating at SIM_TIME_MAX: such an
 * event never runs, see sim_engine_overflowed). Returns the
 * event id, or 0 (the payload is then freed) when out of memory, when more
 * than 2^28 events are pending, or on a programming error: delay < 0 or fn
 * NULL (a negative delay is never silently clamped). */
sim_event_id sim_engine_schedule(sim_engine *eng, sim_time delay, sim_handler fn,
                                 void *ctx, uint64_t arg, void *payload,
                                 sim_payload_free payload_free);
/* Cancels a pending event and frees its payload now. Returns 1 if it was
 * pending, 0 if it had already run or been cancelled. */
int sim_engine_cancel(sim_engine *eng, sim_event_id id);

/* Runs the next event. Returns 1 if one ran, 0 if none is pending. */
int sim_engine_step(sim_engine *eng);
/* Runs events with time <= until (or until sim_engine_stop). Afterwards
 * now = until if an event later than until is still pending (the queue ran
 * past it); if the queue emptied or the run was stopped, now stays at the
 * time of the last event run. now never moves backwards (until < now runs
 * nothing). Returns the number of events run. */
uint64_t sim_engine_run_until(sim_engine *eng, sim_time until);
/* 1 once run_until(SIM_TIME_MAX) met an event at SIM_TIME_MAX (a time
 * beyond the 64-bit nanosecond clock, saturated by schedule or
 * sim_time_from_s): it returned without running it, now unchanged. The
 * caller fails the run; the clock never wraps. */
int sim_engine_overflowed(const sim_engine *eng);
/* Makes the current run_until return after the running handler. */
void sim_engine_stop(sim_engine *eng);
/* 1 after sim_engine_stop until the run_until it stops returns. */
int sim_engine_stopping(const sim_engine *eng);

uint64_t sim_engine_pending(const sim_engine *eng);   /* scheduled, not cancelled */
uint64_t sim_engine_processed(const sim_engine *eng); /* handlers run so far */
/* Time of the next pending event, or SIM_TIME_MAX. */
sim_time sim_engine_next_time(sim_engine *eng);
/* Pending events (not cancelled, not the running one) due before t: a
 * scan of the queue, for the collectives' closed form. */
uint64_t sim_engine_pending_before(const sim_engine *eng, sim_time t);
/* The `until` of the run_until in progress (events later than it will
 * not run in it), SIM_TIME_MAX when none is. */
sim_time sim_engine_horizon(const sim_engine *eng);

/* A hook called whenever simulated time is about to move forward: before
 * the first event of a later time runs, and when run_until moves now to
 * `until`. It runs with now still at the old time, must not schedule or
 * cancel events, and sees every event of that instant done (a thread pool
 * joins the work submitted during the instant there). fn NULL: none. */
typedef void (*sim_advance_hook)(void *ctx);
void sim_engine_set_advance_hook(sim_engine *eng, sim_advance_hook fn, void *ctx);
/* When *flag becomes non-zero (a signal handler's volatile sig_atomic_t,
 * an int here: <signal.h> is not included in every file), run_until
 * returns before the next event, as after sim_engine_stop, and leaves
 * *flag alone. NULL: none. */
void sim_engine_set_interrupt(sim_engine *eng, volatile int *flag);

/* For tests: sequence numbers are renumbered (order kept) when they reach
 * limit (default 2^36); a small limit exercises that path. */
void sim_engine_set_seq_limit(sim_engine *eng, uint64_t limit);

#endif
