/* Errors: every fallible library call fills a caller-owned sim_err and
 * returns a negative code. All errors pass through sim_err_set, so one
 * breakpoint catches them. Messages name the failing thing first:
 *   "exp.ini:12: [network] bandwidth: expected a rate such as 10Gbps, got 'fast'"
 * The library never prints or exits; only cli/main.c does. */
#ifndef DTSIM_SIM_ERR_H
#define DTSIM_SIM_ERR_H

#include <stdarg.h>

/* A parameter that a function with a fixed signature (a handler, a hook, a
 * plug-in's vtable slot) may leave unread. */
#define SIM_UNUSED __attribute__((unused))

enum {
    SIM_OK = 0,
    SIM_EUSAGE = -1,   /* bad command line                     -> exit 2 */
    SIM_ECONFIG = -2,  /* bad experiment file or --set value    -> exit 2 */
    SIM_EINPUT = -3,   /* bad or missing data / trace / graph   -> exit 2 */
    SIM_EDB = -4,      /* database locked, read-only, corrupt   -> exit 2 */
    SIM_ENOMEM = -5,   /* allocation failed (too large a run)   -> exit 2 */
    SIM_EIO = -6,      /* other I/O failure                     -> exit 1 */
    SIM_EINTERNAL = -7, /* bug or library failure               -> exit 1 */
    SIM_EINTR = -8      /* interrupted by a signal               -> exit 1 */
};

typedef struct sim_err {
    int code;          /* one of the SIM_E* codes, 0 when no error */
    char msg[1024];    /* complete message, already naming file:line and key */
} sim_err;

/* Formats the message into err (if err is not NULL) and returns code. */
int sim_err_set(sim_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int sim_err_vset(sim_err *err, int code, const char *fmt, va_list ap);
/* Prefixes an existing message: "prefix: old message". Returns err->code. */
int sim_err_prefix(sim_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sim_err_clear(sim_err *err);
/* Process exit status for an error code: 2 for usage/config/input/db and
 * an allocation failure, else 1. */
int sim_err_exit_status(int code);
/* Installs GSL and igraph error handlers that record instead of aborting.
 * Call once at start-up (the CLI and the test suites do). */
void sim_err_install_library_handlers(void);
/* Last GSL/igraph error message recorded by those handlers ("" if none). */
const char *sim_err_library_last(void);

#endif
