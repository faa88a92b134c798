/* Values by message size (network.h, sim_net_by_size): the piecewise
 * tables of [network] efficiency_by_size and overhead_by_size, their
 * parser, canonical text and lookup. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/network.h"
#include "sim/units.h"

#define EXAMPLE_EFF "0:0.5, 64KiB:0.8, 1MiB:0.94"
#define EXAMPLE_TIME "0:20us, 64KiB:30us"

double sim_net_by_size_at(const sim_net_by_size *t, double bytes, double otherwise)
{
    if (!t || t->n <= 0)
        return otherwise;
    int i = 0;
    while (i + 1 < t->n && bytes >= t->from[i + 1])
        i++;
    return t->value[i];
}

/* Shortest %g text that reads back to x. */
static void shortest(double x, char *buf, size_t len)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

int sim_net_by_size_format(const sim_net_by_size *t, sim_net_by_size_kind kind, char *out,
                           size_t len)
{
    if (!len)
        return -1;
    if (!t || t->n <= 0)
        return snprintf(out, len, "none") < (int)len ? 0 : -1;
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < t->n; i++) {
        char size[48], val[48];
        double b = t->from[i];
        if (b >= 1048576 && fmod(b, 1048576) == 0)
            snprintf(size, sizeof size, "%.0fMiB", b / 1048576);
        else if (b >= 1024 && fmod(b, 1024) == 0)
            snprintf(size, sizeof size, "%.0fKiB", b / 1024);
        else
            snprintf(size, sizeof size, "%.0fB", b);
        if (kind == SIM_BY_SIZE_TIME)
            snprintf(val, sizeof val, "%lldns", (long long)sim_time_from_s(t->value[i]));
        else
            shortest(t->value[i], val, sizeof val);
        int w = snprintf(out + used, len - used, "%s%s:%s", i ? ", " : "", size, val);
        if (w < 0 || (size_t)w >= len - used)
            return -1;
        used += (size_t)w;
    }
    return 0;
}

static int bad(sim_err *err, sim_net_by_size_kind kind, const char *why, const char *piece)
{
    return sim_err_set(err, SIM_ECONFIG,
                       "%s in '%s' (expected SIZE:VALUE pieces such as '%s': sizes from 0 and "
                       "increasing, values %s)",
                       why, piece, kind == SIM_BY_SIZE_TIME ? EXAMPLE_TIME : EXAMPLE_EFF,
                       kind == SIM_BY_SIZE_TIME ? "times >= 0" : "in (0, 1]");
}

int sim_net_by_size_parse(const char *text, sim_net_by_size_kind kind, sim_net_by_size *out,
                          sim_err *err)
{
    memset(out, 0, sizeof *out);
    char buf[1024];
    size_t n = strlen(text);
    if (n >= sizeof buf)
        return sim_err_set(err, SIM_ECONFIG, "too long (max %zu characters)", sizeof buf - 1);
    memcpy(buf, text, n + 1);
    char *all = sim_str_trim(buf);
    if (!*all || strcasecmp(all, "none") == 0)
        return 0;
    for (char *tok = all, *next; tok; tok = next) {
        char *comma = strchr(tok, ',');
        next = comma ? comma + 1 : NULL;
        if (comma)
            *comma = '\0';
        char *piece = sim_str_trim(tok);
        if (!*piece)
            return bad(err, kind, "an empty piece", text);
        char *colon = strchr(piece, ':');
        if (!colon)
            return bad(err, kind, "missing ':'", piece);
        *colon = '\0';
        char *size = sim_str_trim(piece), *value = sim_str_trim(colon + 1);
        double from, v;
        if (sim_parse_size(size, &from, NULL) || !(from >= 0)) {
            *colon = ':';
            return bad(err, kind, "bad size", piece);
        }
        if (kind == SIM_BY_SIZE_TIME) {
            sim_time t;
            int rc = sim_parse_time(value, &t, NULL);
            v = sim_time_to_s(t);
            if (rc || t < 0) {
                *colon = ':';
                return bad(err, kind, "bad time", piece);
            }
        } else if (sim_parse_double(value, &v, NULL) || !(v > 0 && v <= 1)) {
            *colon = ':';
            return bad(err, kind, "bad efficiency", piece);
        }
        if (out->n == SIM_NET_BY_SIZE_MAX)
            return sim_err_set(err, SIM_ECONFIG, "more than %d pieces", SIM_NET_BY_SIZE_MAX);
        if (out->n == 0 && from != 0) {
            *colon = ':';
            return bad(err, kind, "the first size must be 0", piece);
        }
        if (out->n > 0 && !(from > out->from[out->n - 1])) {
            *colon = ':';
            return bad(err, kind, "sizes must increase", piece);
        }
        out->from[out->n] = from;
        out->value[out->n] = v;
        out->n++;
    }
    if (out->n == 0)
        return bad(err, kind, "no piece", text);
    return 0;
}
