/* Parsers for quantities with units (docs/configuration.md) and for "name(args)"
 * specs. A value is an unsigned decimal number (digits, optional fraction,
 * optional exponent; no hex, inf or nan), optional blanks, then a unit from
 * the kind's table; surrounding blanks are ignored. Every failure returns
 * SIM_ECONFIG with "expected a <kind> such as <example>, got '<s>'"; the
 * config layer prefixes the file, line and key. Nothing here depends on the
 * locale. */
#include "sim/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct unit {
    const char *name;
    double scale; /* multiplies the number into the base unit */
} unit;

static const unit time_units[] = {
    {"ns", 1.0},   {"us", 1e3},    {"\xC2\xB5s", 1e3}, {"ms", 1e6},
    {"s", 1e9},    {"sec", 1e9},   {"min", 60e9},      {"h", 3600e9},
    {NULL, 0.0},
};

static const unit rate_units[] = {
    {"bps", 1.0 / 8},      {"Kbps", 1e3 / 8},      {"kbps", 1e3 / 8},
    {"Mbps", 1e6 / 8},     {"Gbps", 1e9 / 8},      {"Tbps", 1e12 / 8},
    {"b/s", 1.0 / 8},      {"Kb/s", 1e3 / 8},      {"kb/s", 1e3 / 8},
    {"Mb/s", 1e6 / 8},     {"Gb/s", 1e9 / 8},      {"Tb/s", 1e12 / 8},
    {"B/s", 1.0},          {"KB/s", 1e3},          {"kB/s", 1e3},
    {"MB/s", 1e6},         {"GB/s", 1e9},          {"TB/s", 1e12},
    {"Bps", 1.0},          {"KBps", 1e3},          {"kBps", 1e3},
    {"MBps", 1e6},         {"GBps", 1e9},          {"TBps", 1e12},
    {"KiB/s", 1024.0},     {"MiB/s", 1048576.0},   {"GiB/s", 1073741824.0},
    {"TiB/s", 1099511627776.0},
    {NULL, 0.0},
};

static const unit size_units[] = {
    {"B", 1.0},       {"KB", 1e3},          {"kB", 1e3},
    {"MB", 1e6},      {"GB", 1e9},          {"TB", 1e12},
    {"KiB", 1024.0},  {"MiB", 1048576.0},   {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0},
    {NULL, 0.0},
};

static const unit flops_units[] = {
    {"FLOPS", 1.0},    {"KFLOPS", 1e3},   {"MFLOPS", 1e6},   {"GFLOPS", 1e9},
    {"TFLOPS", 1e12},  {"PFLOPS", 1e15},  {"EFLOPS", 1e18},  {"FLOP/s", 1.0},
    {"KFLOP/s", 1e3},  {"MFLOP/s", 1e6},  {"GFLOP/s", 1e9},  {"TFLOP/s", 1e12},
    {"PFLOP/s", 1e15}, {"EFLOP/s", 1e18},
    {NULL, 0.0},
};

typedef struct kind {
    const char *what;    /* "a time" */
    const char *example; /* "5us" */
    const unit *units;
    int case_blind;      /* unit names compared ignoring case */
} kind;

static const kind kind_time = {"a time", "5us", time_units, 1};
static const kind kind_rate = {"a rate", "10Gbps", rate_units, 0};
static const kind kind_size = {"a size", "100MB", size_units, 0};
static const kind kind_flops = {"a compute speed", "15.7TFLOPS", flops_units, 1};

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static const char *skip_blanks(const char *p)
{
    while (is_blank(*p))
        p++;
    return p;
}

/* Scans an optionally signed decimal number at p (blanks skipped first) and
 * converts it. Returns 0 and sets *end past the number, or -1. */
static int scan_number(const char *p, int allow_sign, double *v, const char **end)
{
    p = skip_blanks(p);
    const char *start = p;
    if (*p == '+' || (allow_sign && *p == '-'))
        p++;
    size_t digits = 0;
    while (is_digit(*p)) {
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (is_digit(*p)) {
            p++;
            digits++;
        }
    }
    if (digits == 0)
        return -1;
    if (*p == 'e' || *p == 'E') {
        const char *q = p + 1;
        if (*q == '+' || *q == '-')
            q++;
        if (is_digit(*q)) {
            while (is_digit(*q))
                q++;
            p = q;
        }
    }
    char buf[128];
    size_t len = (size_t)(p - start);
    if (len >= sizeof buf)
        return -1;
    memcpy(buf, start, len);
    buf[len] = '\0';
    errno = 0;
    double x = strtod(buf, NULL);
    if (!isfinite(x))
        return -1;
    *v = x;
    *end = p;
    return 0;
}

/* A bare nonzero number where a unit is required. */
static int fail_unit(const kind *k, const char *s, sim_err *err)
{
    return sim_err_set(err, SIM_ECONFIG, "%s needs a unit (such as %s), got '%s'", k->what,
                       k->units == time_units   ? "5us, 1.5ms or 2s"
                       : k->units == rate_units ? "10Gbps, 100Mbps or 1GB/s"
                                                : "512B, 4KB or 100MB",
                       s);
}

static int fail(const kind *k, const char *s, sim_err *err)
{
    return sim_err_set(err, SIM_ECONFIG, "expected %s such as %s, got '%s'", k->what,
                       k->example, s ? s : "");
}

/* Parses number + unit into the base unit; a bare number has scale 1 for
 * flops; a bare_scale of 0 means a unit is required (a bare 0 excepted). */
static int parse_quantity(const char *s, const kind *k, double bare_scale, double *out,
                          sim_err *err)
{
    double v;
    const char *p;
    if (!s || scan_number(s, 0, &v, &p) != 0)
        return fail(k, s, err);
    p = skip_blanks(p);
    size_t len = strlen(p);
    while (len > 0 && is_blank(p[len - 1]))
        len--;
    double scale = 0.0;
    if (len == 0) {
        if (bare_scale == 0.0 && v != 0.0)
            return fail_unit(k, s, err);
        scale = bare_scale == 0.0 ? 1.0 : bare_scale;
    } else {
        for (const unit *u = k->units; u->name; u++) {
            if (strlen(u->name) != len)
                continue;
            if (k->case_blind ? strncasecmp(p, u->name, len) == 0
                              : strncmp(p, u->name, len) == 0) {
                scale = u->scale;
                break;
            }
        }
        if (scale == 0.0)
            return fail(k, s, err);
    }
    double x = v * scale;
    if (!isfinite(x))
        return fail(k, s, err);
    *out = x;
    return 0;
}

int sim_parse_time(const char *s, sim_time *out, sim_err *err)
{
    double ns;
    int rc = parse_quantity(s, &kind_time, 0.0, &ns, err);
    if (rc != 0)
        return rc;
    if (!(ns < 9.2233720368547758e18))
        return fail(&kind_time, s, err);
    *out = (sim_time)llround(ns);
    return 0;
}

int sim_parse_rate(const char *s, double *bytes_per_s, sim_err *err)
{
    return parse_quantity(s, &kind_rate, 0.0, bytes_per_s, err);
}

int sim_parse_size(const char *s, double *bytes, sim_err *err)
{
    return parse_quantity(s, &kind_size, 0.0, bytes, err);
}

int sim_parse_flops(const char *s, double *flops, sim_err *err)
{
    return parse_quantity(s, &kind_flops, 1.0, flops, err);
}

int sim_parse_double(const char *s, double *out, sim_err *err)
{
    double v;
    const char *p;
    if (!s || scan_number(s, 1, &v, &p) != 0 || *skip_blanks(p) != '\0')
        return sim_err_set(err, SIM_ECONFIG, "expected a number such as 0.5, got '%s'",
                           s ? s : "");
    *out = v;
    return 0;
}

int sim_parse_int(const char *s, int64_t *out, sim_err *err)
{
    double v;
    const char *p;
    if (!s || scan_number(s, 1, &v, &p) != 0 || *skip_blanks(p) != '\0')
        goto bad;
    const char *q = skip_blanks(s);
    size_t n = (size_t)(p - q);
    if (strcspn(q, ".eE") >= n) {
        /* Plain digits: exact conversion with overflow check. */
        errno = 0;
        long long x = strtoll(q, NULL, 10);
        if (errno == ERANGE)
            goto bad;
        *out = (int64_t)x;
        return 0;
    }
    /* 1e6 or 2.0: accepted when integral and exactly representable. */
    if (v != floor(v) || fabs(v) > 9007199254740992.0)
        goto bad;
    *out = (int64_t)v;
    return 0;
bad:
    return sim_err_set(err, SIM_ECONFIG, "expected an integer such as 16, got '%s'",
                       s ? s : "");
}

int sim_parse_bool(const char *s, int *out, sim_err *err)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    if (s) {
        const char *p = skip_blanks(s);
        size_t len = strlen(p);
        while (len > 0 && is_blank(p[len - 1]))
            len--;
        for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
            if (strlen(yes[i]) == len && strncasecmp(p, yes[i], len) == 0) {
                *out = 1;
                return 0;
            }
            if (strlen(no[i]) == len && strncasecmp(p, no[i], len) == 0) {
                *out = 0;
                return 0;
            }
        }
    }
    return sim_err_set(err, SIM_ECONFIG, "expected a boolean such as true, got '%s'",
                       s ? s : "");
}

sim_time sim_time_from_s(double seconds)
{
    if (isnan(seconds))
        return 0;
    double ns = seconds * 1e9;
    if (ns >= 9.2233720368547758e18)
        return SIM_TIME_MAX;
    if (ns <= -9.2233720368547758e18)
        return INT64_MIN;
    return (sim_time)llround(ns);
}

/* Copies the trimmed [b, e) into dst of size cap; -1 if it does not fit. */
static int copy_trimmed(char *dst, size_t cap, const char *b, const char *e)
{
    while (b < e && is_blank(*b))
        b++;
    while (e > b && is_blank(e[-1]))
        e--;
    size_t len = (size_t)(e - b);
    if (len >= cap)
        return -1;
    memcpy(dst, b, len);
    dst[len] = '\0';
    return 0;
}

static int spec_fail(const char *s, const char *why, sim_err *err)
{
    return sim_err_set(err, SIM_ECONFIG, "expected a spec such as name(a, b), got '%s' (%s)",
                       s ? s : "", why);
}

int sim_spec_parse(const char *s, sim_spec *out, sim_err *err)
{
    if (!s)
        return spec_fail(s, "empty", err);
    memset(out, 0, sizeof *out);
    const char *open = strchr(s, '(');
    const char *name_end = open ? open : s + strlen(s);
    if (copy_trimmed(out->name, sizeof out->name, s, name_end) != 0)
        return spec_fail(s, "name too long", err);
    if (out->name[0] == '\0')
        return spec_fail(s, "empty name", err);
    if (strpbrk(out->name, "),"))
        return spec_fail(s, "unbalanced parentheses", err);
    if (!open)
        return 0;
    int depth = 1;
    const char *arg = open + 1, *p = open + 1;
    for (; *p && depth > 0; p++) {
        if (*p == '(') {
            depth++;
        } else if (*p == ')' || (*p == ',' && depth == 1)) {
            if (*p == ')' && --depth > 0)
                continue;
            if (out->nargs == SIM_SPEC_MAX_ARGS)
                return spec_fail(s, "too many arguments", err);
            char *dst = out->args[out->nargs];
            if (copy_trimmed(dst, SIM_SPEC_ARG_LEN, arg, p) != 0)
                return spec_fail(s, "argument too long", err);
            if (dst[0] == '\0') {
                /* "name()" and "name( )" have no arguments. */
                if (*p == ')' && out->nargs == 0)
                    continue;
                return spec_fail(s, "empty argument", err);
            }
            out->nargs++;
            arg = p + 1;
        }
    }
    if (depth > 0)
        return spec_fail(s, "unbalanced parentheses", err);
    if (*skip_blanks(p) != '\0')
        return spec_fail(s, "text after the closing parenthesis", err);
    return 0;
}

char *sim_str_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int sim_edit_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63)
        return 99;
    int d[64][64];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

const char *sim_suggest(const char *word, const char *known, char *buf, size_t len)
{
    if (!buf || len == 0)
        return "";
    buf[0] = '\0';
    if (!word || !known || !*word)
        return buf;
    int best_d = 99;
    char best[64] = "";
    const char *p = known;
    while (*p) {
        while (*p == ',' || *p == '|' || isspace((unsigned char)*p))
            p++;
        size_t n = strcspn(p, ", |\t\n");
        if (n == 0)
            break;
        char name[64];
        if (n < sizeof name) {
            memcpy(name, p, n);
            name[n] = '\0';
            /* "torus(4, 4)" style entries: compare the name only */
            name[strcspn(name, "([")] = '\0';
            int dist = sim_edit_distance(word, name);
            if (dist < best_d && name[0]) {
                best_d = dist;
                memcpy(best, name, strlen(name) + 1);
            }
        }
        p += n;
    }
    if (best[0] && best_d <= 2 && 2 * best_d < (int)strlen(best))
        snprintf(buf, len, "did you mean '%s'? ", best);
    return buf;
}

/* Within one binade [top/2, top) of the result every sum lands on a
 * multiple of the ulp u, and x + b rounds to x + c u with c fixed (at a
 * tie, ties-to-even makes the increment even after the first step, and
 * then constant): once two steps in a row moved by the same d, the steps
 * up to the binade's end (with a margin of two) are jumped as m d, exact
 * because the result stays a multiple of u below top. */
double sim_fsum_repeat(double x, double b, int64_t k)
{
    while (k > 0) {
        x += b;
        k--;
        if (k < 2 || !(x > 0.0) || !(b >= 0.0) || !isfinite(x) || !isfinite(b))
            continue;
        int e;
        frexp(x, &e);
        double top = ldexp(1.0, e);
        double y = x + b, z = y + b;
        double d = y - x;
        if (z >= top || z - y != d)
            continue;
        if (d == 0.0)
            return x;
        double room = floor((top - x) / d) - 2.0;
        if (room < 1.0)
            continue;
        int64_t m = room < (double)k ? (int64_t)room : k;
        x += (double)m * d;
        k -= m;
    }
    return x;
}
