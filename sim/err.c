/* The one place every error passes through (see err.h). GSL's and igraph's
 * default handlers abort; ours record the reason so the caller can turn a
 * failing return code into a sim_err. */
#include "sim/err.h"

#include <gsl/gsl_errno.h>
#include <igraph.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char library_last[512];

int sim_err_vset(sim_err *err, int code, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return code;
}

int sim_err_set(sim_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sim_err_vset(err, code, fmt, ap);
    va_end(ap);
    return code;
}

int sim_err_prefix(sim_err *err, const char *fmt, ...)
{
    if (!err)
        return SIM_EINTERNAL;
    char old[sizeof err->msg];
    memcpy(old, err->msg, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof err->msg - 2) {
        size_t used = (size_t)n;
        err->msg[used++] = ':';
        err->msg[used++] = ' ';
        size_t room = sizeof err->msg - used - 1;
        size_t len = strnlen(old, room);
        memcpy(err->msg + used, old, len);
        err->msg[used + len] = '\0';
    }
    return err->code;
}

void sim_err_clear(sim_err *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}

int sim_err_exit_status(int code)
{
    switch (code) {
    case SIM_OK:
        return 0;
    case SIM_EUSAGE:
    case SIM_ECONFIG:
    case SIM_EINPUT:
    case SIM_EDB:
    case SIM_ENOMEM: /* the configuration is too large for this process's memory */
        return 2;
    default:
        return 1;
    }
}

static void gsl_handler(const char *reason, const char *file, int line, int gsl_errno)
{
    snprintf(library_last, sizeof library_last, "GSL: %s (%s:%d, code %d)", reason,
             file, line, gsl_errno);
}

static void igraph_handler(const char *reason, const char *file, int line,
                           igraph_error_t igraph_errno)
{
    snprintf(library_last, sizeof library_last, "igraph: %s (%s:%d, %s)", reason,
             file, line, igraph_strerror(igraph_errno));
    IGRAPH_FINALLY_FREE();
}

static void igraph_warn(const char *reason, const char *file, int line)
{
    (void)reason;
    (void)file;
    (void)line;
}

void sim_err_install_library_handlers(void)
{
    gsl_set_error_handler(gsl_handler);
    igraph_set_error_handler(igraph_handler);
    igraph_set_warning_handler(igraph_warn);
}

const char *sim_err_library_last(void) { return library_last; }
