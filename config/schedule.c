/* The fault-schedule parser (see schedule.h). Lines are split on commas;
 * each field is trimmed; the column of a message is the 1-based character
 * position where the offending field starts. Blank lines and lines
 * starting with # are skipped. */
#include "config/schedule.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/input.h"

#define SLOWDOWN_MAX 1e6 /* as [workers] straggler_slowdown: far below a wrap of the clock */

static const char *const event_names[] = {"crash", "rejoin", "slowdown", "link"};

#define MAX_FIELDS 4

typedef struct field {
    char text[128];
    int col;
} field;

/* Splits one line (len chars) into at most MAX_FIELDS trimmed fields;
 * returns the count, or -1 when there are more. */
static int split(const char *line, size_t len, field *f)
{
    int n = 0;
    size_t i = 0;
    for (;;) {
        size_t s = i;
        while (i < len && line[i] != ',')
            i++;
        if (n == MAX_FIELDS)
            return -1;
        size_t a = s, b = i;
        while (a < b && isspace((unsigned char)line[a]))
            a++;
        while (b > a && isspace((unsigned char)line[b - 1]))
            b--;
        size_t m = b - a < sizeof f[n].text - 1 ? b - a : sizeof f[n].text - 1;
        memcpy(f[n].text, line + a, m);
        f[n].text[m] = 0;
        f[n].col = (int)a + 1;
        n++;
        if (i >= len)
            return n;
        i++;
    }
}

static int bad(sim_err *err, const char *name, int line, int col, const char *fmt,
               const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    return sim_err_set(err, SIM_ECONFIG, "%s:%d:%d: %s", name, line, col, msg);
}

static int parse_index(const char *s, int limit, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v >= limit)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_row(const char *name, int ln, field *f, int nf, int n_workers, int n_hosts,
                     cfg_fault *ev, sim_err *err)
{
    sim_err e = {0};
    if (nf != 4)
        return sim_err_set(err, SIM_ECONFIG,
                           "%s:%d:1: expected 4 fields time,event,target,value, got %d", name, ln,
                           nf);
    if (sim_parse_time(f[0].text, &ev->time, &e) < 0 || ev->time < 0)
        return bad(err, name, ln, f[0].col, "expected a time such as 0.5s, got '%s'", f[0].text);
    int k = -1;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(f[1].text, event_names[i]) == 0)
            k = i;
    if (k < 0)
        return bad(err, name, ln, f[1].col,
                   "unknown event '%s' (crash, rejoin, slowdown or link)", f[1].text);
    ev->kind = (cfg_fault_kind)k;
    ev->target2 = -1;
    ev->value = 0;
    if (ev->kind == CFG_FAULT_LINK) {
        char a[64], b[64];
        const char *dash = strchr(f[2].text, '-');
        size_t la = dash ? (size_t)(dash - f[2].text) : 0;
        if (!dash || la >= sizeof a || strlen(dash + 1) >= sizeof b)
            return bad(err, name, ln, f[2].col, "expected a link A-B of two hosts, got '%s'",
                       f[2].text);
        memcpy(a, f[2].text, la);
        a[la] = 0;
        strcpy(b, dash + 1);
        if (parse_index(a, n_hosts, &ev->target) < 0 ||
            parse_index(b, n_hosts, &ev->target2) < 0 || ev->target == ev->target2)
            return bad(err, name, ln, f[2].col,
                       "expected a link A-B of two different vertices below the vertex count, "
                       "got '%s'",
                       f[2].text);
        if (strcasecmp(f[3].text, "down") == 0)
            ev->value = 0;
        else if (strcasecmp(f[3].text, "up") == 0)
            ev->value = -1;
        else if (sim_parse_rate(f[3].text, &ev->value, &e) < 0 || !(ev->value > 0))
            return bad(err, name, ln, f[3].col, "expected a rate such as 1Gbps, down or up, "
                                                "got '%s'",
                       f[3].text);
        return 0;
    }
    if (parse_index(f[2].text, n_workers, &ev->target) < 0)
        return bad(err, name, ln, f[2].col, "expected a worker id below the worker count, got "
                                            "'%s'",
                   f[2].text);
    if (ev->kind == CFG_FAULT_SLOWDOWN) {
        if (sim_parse_double(f[3].text, &ev->value, &e) < 0 || !(ev->value > 0) ||
            ev->value > SLOWDOWN_MAX)
            return bad(err, name, ln, f[3].col, "expected a slowdown factor in (0, 1e6], got '%s'",
                       f[3].text);
    } else if (f[3].text[0]) {
        return bad(err, name, ln, f[3].col, "crash and rejoin take no value, got '%s'",
                   f[3].text);
    }
    return 0;
}

int cfg_schedule_parse(const char *name, const char *text, int n_workers, int n_hosts,
                     cfg_fault **out, int *n, sim_err *err)
{
    *out = NULL;
    *n = 0;
    int cap = 0, cnt = 0, ln = 0, header = 0, rc = 0;
    cfg_fault *evs = NULL;
    const char *p = text;
    while (*p && rc == 0) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        ln++;
        size_t l = len;
        if (l > 0 && p[l - 1] == '\r')
            l--;
        size_t s = 0;
        while (s < l && isspace((unsigned char)p[s]))
            s++;
        if (s < l && p[s] != '#') {
            field f[MAX_FIELDS];
            int nf = split(p, l, f);
            cfg_fault ev;
            if (!header) {
                if (nf != 4 || strcmp(f[0].text, "time") || strcmp(f[1].text, "event") ||
                    strcmp(f[2].text, "target") || strcmp(f[3].text, "value"))
                    break; /* the header error below, at this line */
                header = 1;
            } else if (nf < 0) {
                rc = sim_err_set(err, SIM_ECONFIG,
                                 "%s:%d:1: expected 4 fields time,event,target,value, got more",
                                 name, ln);
            } else if ((rc = parse_row(name, ln, f, nf, n_workers, n_hosts, &ev, err)) == 0) {
                if (cnt == cap) {
                    cap = cap ? 2 * cap : 16;
                    cfg_fault *grown = realloc(evs, (size_t)cap * sizeof *evs);
                    if (!grown) {
                        rc = sim_err_set(err, SIM_ENOMEM, "%s: out of memory", name);
                        break;
                    }
                    evs = grown;
                }
                /* in time order, after the events of the same time (stable) */
                int at = cnt++;
                while (at > 0 && evs[at - 1].time > ev.time)
                    at--;
                memmove(evs + at + 1, evs + at, (size_t)(cnt - 1 - at) * sizeof *evs);
                evs[at] = ev;
            }
        }
        p += len;
        if (*p == '\n')
            p++;
    }
    if (rc == 0 && !header)
        rc = sim_err_set(err, SIM_ECONFIG, "%s:%d:1: expected the header time,event,target,value",
                         name, *p ? ln : 1);
    if (rc < 0) {
        free(evs);
        return rc;
    }
    *out = evs;
    *n = cnt;
    return 0;
}

int cfg_schedule_load(const char *path, int n_workers, int n_hosts, cfg_fault **out, int *n,
                      sim_err *err)
{
    *out = NULL;
    *n = 0;
    char *text = NULL;
    int rc = cfg_input_read(path, "a fault schedule (CSV time,event,target,value)", &text,
                            NULL, err);
    if (rc == 0)
        rc = cfg_schedule_parse(path, text, n_workers, n_hosts, out, n, err);
    free(text);
    return rc;
}
