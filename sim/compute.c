/* Worker compute-time model (see compute.h): distribution specs, their
 * canonical text, trace files, and the per-step time draw. The draw makes
 * exactly the calls the header lists, in that order, so that a run repeats
 * exactly and adding transient slowdowns (prob > 0) is the only thing that
 * changes how many numbers a stream consumes. */
#include "sim/compute.h"
#include "sim/file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gsl/gsl_randist.h>

struct sim_compute {
    sim_compute_opts opts;
    int n_workers;
    double *trace;   /* rows x cols seconds, row-major; NULL unless TRACE */
    double *speed;   /* per-worker FLOP/s (opts.worker_speed copied), or NULL */
    int64_t rows;
    int cols;
};

const sim_dist_info sim_dist_table[] = {
    {"model", "", "FLOPs of the step / (device x efficiency)"},
    {"constant", "(mean)", "always the mean"},
    {"exponential", "(mean)", "exponential with the given mean"},
    {"shifted_exponential", "(shift, mean)", "shift + exponential with the given mean"},
    {"lognormal", "(mean, sigma)", "log-normal with the given mean, log-space std sigma"},
    {"pareto", "(mean, alpha)", "Pareto with the given mean, tail index alpha > 1"},
    {"trace", "(FILE.csv)", "seconds per step: one row per step, one column per worker"},
    {NULL, NULL, NULL},
};

/* Shortest text that reads back to the same double; integers without an
 * exponent. Used for the shape parameters of the canonical form. */
static void format_number(double x, char *buf, int len)
{
    if (x == 0) {
        snprintf(buf, (size_t)len, "0");
        return;
    }
    if (isfinite(x) && x == floor(x) && fabs(x) < 1e17) {
        snprintf(buf, (size_t)len, "%.0f", x);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, (size_t)len, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

/* Seconds as integer nanoseconds with the unit, e.g. "10000000ns". */
static void format_seconds(double s, char *buf, int len)
{
    snprintf(buf, (size_t)len, "%lldns", (long long)llround(s * 1e9));
}

static int parse_seconds(const char *dist, const char *what, const char *arg,
                         double *out, sim_err *err)
{
    sim_time t;
    if (sim_parse_time(arg, &t, err))
        return sim_err_prefix(err, "%s: %s", dist, what);
    *out = (double)t / 1e9;
    return 0;
}

static int parse_shape(const char *dist, const char *what, const char *arg, double *out,
                       sim_err *err)
{
    if (sim_parse_double(arg, out, err))
        return sim_err_prefix(err, "%s: %s", dist, what);
    return 0;
}

static void known_list(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const sim_dist_info *d = sim_dist_table; d->name; d++) {
        int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", d->name);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

int sim_dist_parse(const char *s, sim_dist *out, sim_err *err)
{
    static const int nargs[] = {0, 1, 1, 2, 2, 2, 1};
    static const char *const argnames[] = {
        "", "mean", "mean", "shift, mean", "mean, sigma", "mean, alpha", "FILE.csv"};
    sim_spec spec;
    sim_dist d;
    memset(&d, 0, sizeof d);
    if (sim_spec_parse(s, &spec, err))
        return err ? err->code : SIM_ECONFIG;

    int kind = -1;
    for (int i = 0; sim_dist_table[i].name; i++)
        if (strcasecmp(spec.name, sim_dist_table[i].name) == 0)
            kind = i;
    if (kind < 0) {
        char known[256], hint[96];
        known_list(known, sizeof known);
        return sim_err_set(err, SIM_ECONFIG, "unknown distribution '%s' (%sknown: %s)",
                           spec.name, sim_suggest(spec.name, known, hint, sizeof hint),
                           known);
    }
    const char *name = sim_dist_table[kind].name;
    if (spec.nargs != nargs[kind]) {
        if (nargs[kind] == 0)
            return sim_err_set(err, SIM_ECONFIG, "%s takes no arguments, got %d", name,
                               spec.nargs);
        return sim_err_set(err, SIM_ECONFIG, "%s takes %d argument%s (%s), got %d", name,
                           nargs[kind], nargs[kind] == 1 ? "" : "s", argnames[kind],
                           spec.nargs);
    }
    d.kind = (sim_dist_kind)kind;
    switch (d.kind) {
    case SIM_DIST_MODEL:
        break;
    case SIM_DIST_CONSTANT:
    case SIM_DIST_EXPONENTIAL:
        if (parse_seconds(name, "mean", spec.args[0], &d.a, err))
            return err ? err->code : SIM_ECONFIG;
        /* constant(0) is the communication-only what-if */
        if (d.kind == SIM_DIST_CONSTANT && d.a == 0)
            break;
        if (!(d.a > 0))
            return sim_err_set(err, SIM_ECONFIG, "%s: mean must be > 0, got '%s'", name,
                               spec.args[0]);
        break;
    case SIM_DIST_SHIFTED_EXPONENTIAL:
        if (parse_seconds(name, "shift", spec.args[0], &d.a, err) ||
            parse_seconds(name, "mean", spec.args[1], &d.b, err))
            return err ? err->code : SIM_ECONFIG;
        if (!(d.a >= 0))
            return sim_err_set(err, SIM_ECONFIG, "%s: shift must be >= 0, got '%s'", name,
                               spec.args[0]);
        if (!(d.b > 0))
            return sim_err_set(err, SIM_ECONFIG, "%s: mean must be > 0, got '%s'", name,
                               spec.args[1]);
        break;
    case SIM_DIST_LOGNORMAL:
        if (parse_seconds(name, "mean", spec.args[0], &d.a, err) ||
            parse_shape(name, "sigma", spec.args[1], &d.b, err))
            return err ? err->code : SIM_ECONFIG;
        if (!(d.a > 0))
            return sim_err_set(err, SIM_ECONFIG, "%s: mean must be > 0, got '%s'", name,
                               spec.args[0]);
        if (!(d.b >= 0) || !isfinite(d.b))
            return sim_err_set(err, SIM_ECONFIG, "%s: sigma must be >= 0, got '%s'", name,
                               spec.args[1]);
        break;
    case SIM_DIST_PARETO:
        if (parse_seconds(name, "mean", spec.args[0], &d.a, err) ||
            parse_shape(name, "alpha", spec.args[1], &d.b, err))
            return err ? err->code : SIM_ECONFIG;
        if (!(d.a > 0))
            return sim_err_set(err, SIM_ECONFIG, "%s: mean must be > 0, got '%s'", name,
                               spec.args[0]);
        if (!(d.b > 1) || !isfinite(d.b))
            return sim_err_set(err, SIM_ECONFIG,
                               "%s: alpha must be > 1 (finite mean), got '%s'", name,
                               spec.args[1]);
        break;
    case SIM_DIST_TRACE:
        if (spec.args[0][0] == '\0')
            return sim_err_set(err, SIM_ECONFIG, "trace: missing file name");
        if (strlen(spec.args[0]) >= sizeof d.trace_path)
            return sim_err_set(err, SIM_ECONFIG, "trace: file name too long (max %zu)",
                               sizeof d.trace_path - 1);
        strcpy(d.trace_path, spec.args[0]);
        break;
    }
    *out = d;
    return 0;
}

void sim_dist_format(const sim_dist *d, char *buf, int len)
{
    char x[64], y[64];
    switch (d->kind) {
    case SIM_DIST_MODEL:
        snprintf(buf, (size_t)len, "model");
        return;
    case SIM_DIST_CONSTANT:
    case SIM_DIST_EXPONENTIAL:
        format_seconds(d->a, x, sizeof x);
        snprintf(buf, (size_t)len, "%s(%s)", sim_dist_table[d->kind].name, x);
        return;
    case SIM_DIST_SHIFTED_EXPONENTIAL:
        format_seconds(d->a, x, sizeof x);
        format_seconds(d->b, y, sizeof y);
        snprintf(buf, (size_t)len, "shifted_exponential(%s, %s)", x, y);
        return;
    case SIM_DIST_LOGNORMAL:
    case SIM_DIST_PARETO:
        format_seconds(d->a, x, sizeof x);
        format_number(d->b, y, sizeof y);
        snprintf(buf, (size_t)len, "%s(%s, %s)", sim_dist_table[d->kind].name, x, y);
        return;
    case SIM_DIST_TRACE:
        snprintf(buf, (size_t)len, "trace(%s)", d->trace_path);
        return;
    }
    snprintf(buf, (size_t)len, "?");
}

double sim_dist_mean(const sim_dist *d)
{
    switch (d->kind) {
    case SIM_DIST_CONSTANT:
    case SIM_DIST_EXPONENTIAL:
    case SIM_DIST_LOGNORMAL:
    case SIM_DIST_PARETO:
        return d->a;
    case SIM_DIST_SHIFTED_EXPONENTIAL:
        return d->a + d->b;
    case SIM_DIST_MODEL:
    case SIM_DIST_TRACE:
        break;
    }
    return NAN;
}

/* ---- trace files ---- */

/* A cell: seconds as a bare number (0.012), or a time with its unit
 * (12ms, 250us). */
static int parse_cell(const char *s, double *out)
{
    char *end;
    if (!*s)
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v))
        return -1;
    if (*end) {
        sim_time t;
        int neg = *s == '-';
        if (sim_parse_time(s + neg, &t, NULL))
            return -1;
        v = (neg ? -1.0 : 1.0) * (double)t / 1e9;
    }
    *out = v;
    return 0;
}

/* Splits line (modified in place) at commas into at most max cells. */
static int split_cells(char *line, char **cells, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (n < max)
            cells[n] = sim_str_trim(p);
        n++;
        if (!comma)
            return n;
        p = comma + 1;
    }
}

static int trace_load(sim_compute *c, const char *path, sim_err *err)
{
    enum { MAX_COLS = 65536 };
    FILE *f = fopen(path, "r");
    if (!f)
        return sim_err_set(err, SIM_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    if (sim_file_check(f, path, "a trace of seconds per step", err)) {
        fclose(f);
        return SIM_EINPUT;
    }
    char *line = NULL, **cells = NULL;
    size_t cap = 0, vcap = 0;
    int rc = 0, lineno = 0, first = 1;
    cells = malloc(sizeof *cells * MAX_COLS);
    if (!cells) {
        rc = sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        char *text = sim_str_trim(line);
        if (!*text)
            continue;
        int n = split_cells(text, cells, MAX_COLS);
        if (n > MAX_COLS) {
            rc = sim_err_set(err, SIM_EINPUT, "%s:%d: too many columns (max %d)", path,
                             lineno, MAX_COLS);
            goto done;
        }
        if (first) {
            first = 0;
            int numbers = 0;
            double v;
            for (int i = 0; i < n; i++)
                numbers += parse_cell(cells[i], &v) == 0;
            if (numbers == 0)
                continue; /* header row */
        }
        if (c->cols == 0)
            c->cols = n;
        else if (n != c->cols) {
            rc = sim_err_set(err, SIM_EINPUT, "%s:%d: expected %d column%s, got %d", path,
                             lineno, c->cols, c->cols == 1 ? "" : "s", n);
            goto done;
        }
        if ((size_t)(c->rows + 1) * (size_t)n > vcap) {
            size_t ncap = vcap ? 2 * vcap : 64 * (size_t)n;
            while (ncap < (size_t)(c->rows + 1) * (size_t)n)
                ncap *= 2;
            double *t = realloc(c->trace, ncap * sizeof *t);
            if (!t) {
                rc = sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
                goto done;
            }
            c->trace = t;
            vcap = ncap;
        }
        double *row = c->trace + c->rows * n;
        for (int i = 0; i < n; i++) {
            if (parse_cell(cells[i], &row[i])) {
                rc = sim_err_set(err, SIM_EINPUT, "%s:%d: column %d: expected seconds (0.012) or a time with"
                                 " its unit (12ms), got '%s'",
                                 path, lineno, i + 1, cells[i]);
                goto done;
            }
            if (row[i] >= sim_time_to_s(SIM_TIME_MAX)) {
                rc = sim_err_set(err, SIM_EINPUT,
                                 "%s:%d: column %d: time '%s' is beyond the simulated clock"
                                 " (%.0f s)", path, lineno, i + 1, cells[i],
                                 sim_time_to_s(SIM_TIME_MAX));
                goto done;
            }
            if (row[i] < 0) {
                rc = sim_err_set(err, SIM_EINPUT,
                                 "%s:%d: column %d: negative time '%s' (seconds must be >= 0)",
                                 path, lineno, i + 1, cells[i]);
                goto done;
            }
        }
        c->rows++;
    }
    if (ferror(f)) {
        rc = sim_err_set(err, SIM_EIO, "%s: read error: %s", path, strerror(errno));
        goto done;
    }
    if (c->rows == 0)
        rc = sim_err_set(err, SIM_EINPUT, "%s: empty trace (no rows of seconds)", path);
done:
    free(cells);
    free(line);
    fclose(f);
    return rc;
}

sim_compute *sim_compute_create(const sim_compute_opts *opts, int n_workers, sim_err *err)
{
    if (n_workers < 1) {
        sim_err_set(err, SIM_ECONFIG, "compute: need at least one worker, got %d", n_workers);
        return NULL;
    }
    if (opts->dist.kind == SIM_DIST_MODEL && !(opts->device_flops * opts->efficiency > 0)) {
        sim_err_set(err, SIM_ECONFIG,
                    "compute: device speed x efficiency must be > 0 when compute = model");
        return NULL;
    }
    sim_compute *c = calloc(1, sizeof *c);
    if (!c) {
        sim_err_set(err, SIM_ENOMEM, "compute: out of memory");
        return NULL;
    }
    c->opts = *opts;
    c->opts.worker_speed = NULL;
    c->n_workers = n_workers;
    if (opts->dist.kind == SIM_DIST_MODEL && opts->worker_speed) {
        c->speed = malloc((size_t)n_workers * sizeof *c->speed);
        if (!c->speed) {
            sim_compute_destroy(c);
            sim_err_set(err, SIM_ENOMEM, "compute: out of memory");
            return NULL;
        }
        for (int i = 0; i < n_workers; i++) {
            if (!(opts->worker_speed[i] > 0)) {
                sim_compute_destroy(c);
                sim_err_set(err, SIM_ECONFIG,
                            "compute: worker %d: device speed x efficiency must be > 0", i);
                return NULL;
            }
            c->speed[i] = opts->worker_speed[i];
        }
    }
    if (opts->dist.kind == SIM_DIST_TRACE && trace_load(c, opts->dist.trace_path, err)) {
        sim_compute_destroy(c);
        return NULL;
    }
    return c;
}

void sim_compute_destroy(sim_compute *c)
{
    if (!c)
        return;
    free(c->trace);
    free(c->speed);
    free(c);
}

double sim_dist_sample(const sim_dist *d, gsl_rng *rng)
{
    switch (d->kind) {
    case SIM_DIST_CONSTANT:
        return d->a;
    case SIM_DIST_EXPONENTIAL:
        return gsl_ran_exponential(rng, d->a);
    case SIM_DIST_SHIFTED_EXPONENTIAL:
        return d->a + gsl_ran_exponential(rng, d->b);
    case SIM_DIST_LOGNORMAL:
        return gsl_ran_lognormal(rng, log(d->a) - d->b * d->b / 2, d->b);
    case SIM_DIST_PARETO:
        return gsl_ran_pareto(rng, d->b, d->a * (d->b - 1) / d->b);
    case SIM_DIST_MODEL:
    case SIM_DIST_TRACE:
        break;
    }
    return NAN;
}

int sim_compute_draws(const sim_compute *c)
{
    switch (c->opts.dist.kind) {
    case SIM_DIST_EXPONENTIAL:
    case SIM_DIST_SHIFTED_EXPONENTIAL:
    case SIM_DIST_LOGNORMAL:
    case SIM_DIST_PARETO:
        return 1;
    case SIM_DIST_MODEL:
    case SIM_DIST_CONSTANT:
    case SIM_DIST_TRACE:
        break;
    }
    return c->opts.transient_prob > 0;
}

double sim_compute_step_time(sim_compute *c, int worker, int64_t step, int samples,
                             double flops_per_sample, gsl_rng *rng)
{
    const sim_compute_opts *o = &c->opts;
    const sim_dist *d = &o->dist;
    double t = 0;
    switch (d->kind) {
    case SIM_DIST_MODEL:
        t = (double)samples * flops_per_sample /
            (c->speed ? c->speed[worker] : o->device_flops * o->efficiency);
        break;
    case SIM_DIST_CONSTANT:
        t = d->a;
        break;
    case SIM_DIST_EXPONENTIAL:
    case SIM_DIST_SHIFTED_EXPONENTIAL:
    case SIM_DIST_LOGNORMAL:
    case SIM_DIST_PARETO:
        t = sim_dist_sample(d, rng);
        break;
    case SIM_DIST_TRACE: {
        int64_t r = step % c->rows;
        if (r < 0)
            r += c->rows;
        int col = worker % c->cols;
        if (col < 0)
            col += c->cols;
        t = c->trace[r * c->cols + col];
        break;
    }
    }
    if (worker < o->stragglers)
        t *= o->straggler_slowdown;
    if (o->transient_prob > 0 && gsl_rng_uniform(rng) < o->transient_prob)
        t *= o->transient_slowdown;
    return t;
}
