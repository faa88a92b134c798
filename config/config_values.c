/* One configuration value (see config.h and config_impl.h): parsing the
 * raw text by the key's type or its special form, the canonical text, the
 * range checks and the store into the typed field of cfg_config. The
 * canonical text is what makes two runs the same experiment, so every
 * formatter here is exact: numbers print in the shortest form that reads
 * back to the same double. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_impl.h"

int cfg_copy_trimmed(char *buf, size_t len, const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= len)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return 0;
}

/* Shortest text that reads back to the same double; integers without an
 * exponent (1250000000, not 1.25e+09). */
static void format_number(double x, char *buf, size_t len)
{
    if (x == 0) {
        snprintf(buf, len, "0");
        return;
    }
    if (x == floor(x) && fabs(x) < 1e17) {
        snprintf(buf, len, "%.0f", x);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

/* A value as parsed, before it is range-checked and stored. */
typedef struct tval {
    int64_t i;
    double d;
    sim_time t;
    int choice;
    sim_dist dist; /* [workers] compute */
    sim_net_by_size by_size; /* [network] efficiency_by_size, overhead_by_size */
    double milestones[CFG_MAX_MILESTONES]; /* [algorithm] lr_milestones */
    int n_milestones;
    cfg_device_group groups[CFG_MAX_DEVICE_GROUPS]; /* [workers] device by name */
    int n_groups;
} tval;

static void lower_ident(char *s)
{
    for (char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return;
    for (char *p = s; *p; p++)
        *p = (char)tolower((unsigned char)*p);
}

/* "Torus( 4,4 )" -> "torus(4, 4)"; text that is not a spec is only trimmed. */
static int canon_spec(const char *raw, char *out, size_t len)
{
    sim_spec *sp = malloc(sizeof *sp);
    if (!sp)
        return cfg_copy_trimmed(out, len, raw);
    int rc = 0;
    if (sim_spec_parse(raw, sp, NULL) == 0 && sp->name[0]) {
        lower_ident(sp->name);
        size_t used = (size_t)snprintf(out, len, "%s", sp->name);
        for (int i = 0; i < sp->nargs && used < len; i++)
            used += (size_t)snprintf(out + used, len - used, "%s%s", i ? ", " : "(",
                                     sp->args[i]);
        if (sp->nargs > 0 && used < len)
            used += (size_t)snprintf(out + used, len - used, ")");
        rc = used < len ? 0 : -1;
    } else {
        rc = cfg_copy_trimmed(out, len, raw);
    }
    free(sp);
    return rc;
}

static int choice_parse(const char *choices, const char *raw, int *index, char *word,
                        size_t len, sim_err *err)
{
    char buf[128];
    if (cfg_copy_trimmed(buf, sizeof buf, raw))
        buf[0] = '\0';
    int i = 0;
    for (const char *p = choices; *p; i++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == strlen(buf) && strncasecmp(p, buf, n) == 0) {
            *index = i;
            snprintf(word, len, "%.*s", (int)n, p);
            return 0;
        }
        p += n + (bar ? 1 : 0);
    }
    return sim_err_set(err, SIM_ECONFIG, "expected one of %s, got '%s'", choices, buf);
}

/* The enum value of a choice word (the canonical spelling, from choices):
 * looked up by name in the key's value table, so that the order of
 * choices carries no meaning. Without a table the index stays. */
static int choice_value(const cfg_key *k, const char *word, int *value, sim_err *err)
{
    const cfg_choice *values = cfg_choice_values(k->section, k->key);
    if (!values)
        return 0;
    for (const cfg_choice *c = values; c->name; c++)
        if (strcmp(c->name, word) == 0) {
            *value = c->value;
            return 0;
        }
    return sim_err_set(err, SIM_EINTERNAL, "choice '%s' has no value in the schema", word);
}

static int finite_or_fail(double x, const char *raw, sim_err *err)
{
    if (isfinite(x))
        return 0;
    return sim_err_set(err, SIM_ECONFIG, "expected a finite number, got '%s'", raw);
}

/* Parses raw by type into v and writes the canonical text. */
static int canon_typed(const cfg_schema *sc, const cfg_key *k, const char *raw,
                       char *out, size_t len, tval *v, sim_err *err)
{
    char num[64];
    switch (k->type) {
    case CFG_KEY_INT:
        if (sim_parse_int(raw, &v->i, err))
            return err->code;
        snprintf(out, len, "%lld", (long long)v->i);
        return 0;
    case CFG_KEY_DOUBLE:
        if (sim_parse_double(raw, &v->d, err) || finite_or_fail(v->d, raw, err))
            return err->code;
        format_number(v->d, out, len);
        return 0;
    case CFG_KEY_TIME:
        if (sim_parse_time(raw, &v->t, err))
            return err->code;
        v->d = (double)v->t / 1e9;
        snprintf(out, len, "%lldns", (long long)v->t);
        return 0;
    case CFG_KEY_RATE:
    case CFG_KEY_SIZE:
    case CFG_KEY_FLOPS: {
        int rc = k->type == CFG_KEY_RATE   ? sim_parse_rate(raw, &v->d, err)
                 : k->type == CFG_KEY_SIZE ? sim_parse_size(raw, &v->d, err)
                                           : sim_parse_flops(raw, &v->d, err);
        if (rc && k->type == CFG_KEY_FLOPS) {
            double named = sc->device_flops ? sc->device_flops(raw, 0, NULL, 0) : 0.0;
            if (named > 0) {
                rc = 0;
                v->d = named;
            } else {
                return sim_err_set(err, SIM_ECONFIG,
                                   "expected a speed such as 15.7TFLOPS or a device preset "
                                   "(dtsim list presets), got '%s'",
                                   raw);
            }
        }
        if (rc || finite_or_fail(v->d, raw, err))
            return err->code;
        format_number(v->d, num, sizeof num);
        snprintf(out, len, "%s%s", num,
                 k->type == CFG_KEY_RATE ? "B/s" : k->type == CFG_KEY_SIZE ? "B" : "FLOPS");
        return 0;
    }
    case CFG_KEY_BOOL: {
        int b;
        if (sim_parse_bool(raw, &b, err))
            return err->code;
        v->i = b != 0;
        snprintf(out, len, "%s", b ? "true" : "false");
        return 0;
    }
    case CFG_KEY_CHOICE:
        if (choice_parse(k->choices ? k->choices : "", raw, &v->choice, out, len, err))
            return err->code;
        return choice_value(k, out, &v->choice, err);
    case CFG_KEY_STRING:
        if (canon_spec(raw, out, len))
            return sim_err_set(err, SIM_ECONFIG, "value too long (max %zu characters)",
                               len - 1);
        return 0;
    }
    return sim_err_set(err, SIM_EINTERNAL, "unknown key type %d", (int)k->type);
}

static int has_alpha(const char *s)
{
    for (; *s; s++)
        if (isalpha((unsigned char)*s))
            return 1;
    return 0;
}

static void file_stem(const char *path, char *buf, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot > base ? (size_t)(dot - base) : strlen(base);
    snprintf(buf, len, "%.*s", (int)n, base);
}

#define RANGE(cond, text)                                                               \
    do {                                                                                \
        if (!(cond))                                                                    \
            return sim_err_set(err, SIM_ECONFIG, "must be %s, got %s", text, raw);      \
    } while (0)

/* One item of [workers] device: "name" or "name*count" (blanks allowed
 * around the star). Fills g (count 0 when none is written). */
static int device_item(const cfg_schema *sc, const cfg_config *cfg, const char *item,
                       cfg_device_group *g, sim_err *err)
{
    char buf[128];
    if (cfg_copy_trimmed(buf, sizeof buf, item))
        return sim_err_set(err, SIM_ECONFIG, "device name too long in '%s'", item);
    char *star = strchr(buf, '*');
    g->count = 0;
    if (star) {
        *star = '\0';
        char *end;
        long n = strtol(star + 1, &end, 10);
        while (*end == ' ' || *end == '\t')
            end++;
        if (end == star + 1 || *end || n < 1 || n > 65536)
            return sim_err_set(err, SIM_ECONFIG,
                               "expected NAME*COUNT with a count >= 1 such as v100*8, got '%s'",
                               item);
        g->count = (int)n;
    }
    char name[128];
    if (cfg_copy_trimmed(name, sizeof name, buf) || strlen(name) >= sizeof g->name || !*name)
        return sim_err_set(err, SIM_ECONFIG, "expected a device preset name, got '%s'", item);
    lower_ident(name);
    char has[64] = "";
    double f = sc->device_flops ? sc->device_flops(name, (int)cfg->precision, has, sizeof has)
                                : 0.0;
    if (f == 0)
        return sim_err_set(err, SIM_ECONFIG,
                           "expected a speed such as 15.7TFLOPS or a device preset "
                           "(dtsim list presets), got '%s'",
                           name);
    if (f < 0) {
        static const char *const prec[] = {"fp32", "tf32", "fp16", "bf16"};
        return sim_err_set(err, SIM_ECONFIG,
                           "%s has no %s peak ([workers] precision = %s); it has %s", name,
                           prec[cfg->precision & 3], prec[cfg->precision & 3], has);
    }
    snprintf(g->name, sizeof g->name, "%s", name);
    g->flops = f;
    return 0;
}

/* [workers] device: a speed (15.7TFLOPS), one preset (v100: its peak at
 * [workers] precision, written as that speed) or presets per worker in
 * worker order (v100*8, a100*8) whose counts add up to [workers] count. */
static int device_parse(const cfg_schema *sc, const cfg_config *cfg, const char *raw,
                        char *out, size_t len, tval *v, sim_err *err)
{
    char num[64];
    if (sim_parse_flops(raw, &v->d, err) == 0) {
        if (finite_or_fail(v->d, raw, err))
            return err->code;
        format_number(v->d, num, sizeof num);
        snprintf(out, len, "%sFLOPS", num);
        return 0;
    }
    char list[512];
    if (cfg_copy_trimmed(list, sizeof list, raw))
        return sim_err_set(err, SIM_ECONFIG, "too long");
    int total = 0, counted = 0;
    v->n_groups = 0;
    for (char *item = list, *next; item; item = next) {
        next = strchr(item, ',');
        if (next)
            *next++ = '\0';
        if (!*sim_str_trim(item)) /* "v100*4," or "v100*2,,a100*2" */
            return sim_err_set(err, SIM_ECONFIG, "an empty item in the device list '%s' "
                               "(expected NAME*COUNT items separated by commas)", raw);
        if (v->n_groups == CFG_MAX_DEVICE_GROUPS)
            return sim_err_set(err, SIM_ECONFIG, "more than %d device groups in '%s'",
                               CFG_MAX_DEVICE_GROUPS, raw);
        cfg_device_group *g = &v->groups[v->n_groups++];
        if (device_item(sc, cfg, item, g, err))
            return err->code;
        counted += g->count > 0;
        total += g->count;
    }
    if (v->n_groups == 0)
        return sim_err_set(err, SIM_ECONFIG, "expected a speed or a device preset, got '%s'",
                           raw);
    v->d = v->groups[0].flops;
    if (v->n_groups == 1 && counted == 0) { /* one device for every worker */
        v->groups[0].count = cfg->n_workers;
        format_number(v->d, num, sizeof num);
        snprintf(out, len, "%sFLOPS", num);
        return 0;
    }
    if (counted != v->n_groups)
        return sim_err_set(err, SIM_ECONFIG,
                           "every device of a list needs its count (NAME*COUNT), got '%s'", raw);
    if (total != cfg->n_workers)
        return sim_err_set(err, SIM_ECONFIG,
                           "the device counts add up to %d workers, but [workers] count is %d",
                           total, cfg->n_workers);
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < v->n_groups && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s*%d", i ? ", " : "",
                                 v->groups[i].name, v->groups[i].count);
    if (used >= len)
        return sim_err_set(err, SIM_ECONFIG, "too long");
    return 0;
}

/* Keys whose value is not a plain typed value: parsed here. */
static int canon_special(const cfg_schema *sc, const cfg_config *cfg,
                         const cfg_key *k, const char *raw, char *out, size_t len, tval *v,
                         sim_err *err, int *handled)
{
    *handled = 1;
    if (cfg_is_key(k, "experiment", "name")) {
        if (!*raw)
            file_stem(cfg->path, out, len);
        else if (cfg_copy_trimmed(out, len, raw))
            return sim_err_set(err, SIM_ECONFIG, "too long");
        return 0;
    }
    if (cfg_is_key(k, "experiment", "eval_every")) {
        /* a value with a unit is a simulated time, a bare integer a count */
        int is_time = has_alpha(raw);
        if (is_time ? sim_parse_time(raw, &v->t, err) : sim_parse_int(raw, &v->i, err))
            return sim_err_set(err, SIM_ECONFIG,
                               "expected an iteration count such as 50 or a simulated time "
                               "such as 2s, got '%s'", raw);
        RANGE(is_time ? v->t > 0 : v->i > 0, "> 0");
        if (is_time)
            snprintf(out, len, "%lldns", (long long)v->t);
        else
            snprintf(out, len, "%lld", (long long)v->i);
        return 0;
    }
    if (cfg_is_key(k, "experiment", "eval_train_samples")) {
        if (strcasecmp(raw, "all") == 0) {
            v->i = CFG_EVAL_ALL;
            snprintf(out, len, "all");
            return 0;
        }
        if (sim_parse_int(raw, &v->i, err))
            return sim_err_set(err, SIM_ECONFIG,
                               "expected a sample count such as 10000 or all, got '%s'", raw);
        RANGE(v->i > 0, "> 0 or all");
        snprintf(out, len, "%lld", (long long)v->i);
        return 0;
    }
    if (cfg_is_key(k, "algorithm", "optimizer")) {
        if (cfg_copy_trimmed(out, len, raw))
            return sim_err_set(err, SIM_ECONFIG, "too long");
        for (char *c = out; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        if (!sc->optim_name)
            return 0;
        for (int i = 0; sc->optim_name(i); i++)
            if (strcmp(out, sc->optim_name(i)) == 0)
                return 0;
        char known[256] = "";
        size_t used = 0;
        for (int i = 0; sc->optim_name(i) && used < sizeof known - 32; i++)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                                     sc->optim_name(i));
        char hint[96];
        return sim_err_set(err, SIM_ECONFIG, "unknown optimizer '%s' (%sknown: %s)", raw,
                           sim_suggest(out, known, hint, sizeof hint), known);
    }
    if (cfg_is_key(k, "algorithm", "batch")) {
        if (strcasecmp(raw, "full") == 0) {
            v->i = 0;
            snprintf(out, len, "full");
            return 0;
        }
        if (sim_parse_int(raw, &v->i, err))
            return sim_err_set(err, SIM_ECONFIG,
                               "expected a batch size such as 32 or full, got '%s'", raw);
        RANGE(v->i > 0 && v->i <= INT_MAX, "a positive integer or full");
        snprintf(out, len, "%lld", (long long)v->i);
        return 0;
    }
    if (cfg_is_key(k, "algorithm", "lr_milestones")) {
        v->n_milestones = 0;
        if (strcasecmp(raw, "none") == 0 || raw[0] == '\0') {
            snprintf(out, len, "none");
            return 0;
        }
        char buf[512];
        snprintf(buf, sizeof buf, "%s", raw);
        size_t used = 0;
        out[0] = '\0';
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ' || *tok == '\t')
                tok++;
            char *end = tok + strlen(tok);
            while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
                *--end = '\0';
            double x;
            if (sim_parse_double(tok, &x, err) || !(x > 0))
                return sim_err_set(err, SIM_ECONFIG,
                                   "expected increasing positive epochs such as 5, 8, got '%s'",
                                   raw);
            if (v->n_milestones == CFG_MAX_MILESTONES ||
                (v->n_milestones > 0 && x <= v->milestones[v->n_milestones - 1]))
                return sim_err_set(err, SIM_ECONFIG,
                                   "expected at most %d increasing positive epochs, got '%s'",
                                   CFG_MAX_MILESTONES, raw);
            v->milestones[v->n_milestones++] = x;
            int w = snprintf(out + used, len - used, "%s%.17g", used ? ", " : "", x);
            if (w < 0 || (size_t)w >= len - used)
                return sim_err_set(err, SIM_ECONFIG, "too many milestones in '%s'", raw);
            used += (size_t)w;
        }
        if (v->n_milestones == 0)
            snprintf(out, len, "none");
        return 0;
    }
    if (cfg_is_key(k, "workers", "device"))
        return device_parse(sc, cfg, raw, out, len, v, err);
    if (cfg_is_key(k, "workers", "efficiency")) {
        if (strcasecmp(raw, "published") == 0) {
            v->d = 1.0; /* in range; the experiment sets each worker's own */
            snprintf(out, len, "published");
            return 0;
        }
        if (sim_parse_double(raw, &v->d, err) || !isfinite(v->d))
            return sim_err_set(err, SIM_ECONFIG,
                               "expected a fraction such as 0.5 or published, got '%s'", raw);
        format_number(v->d, out, len);
        return 0;
    }
    if (cfg_is_key(k, "network", "efficiency_by_size") ||
        cfg_is_key(k, "network", "overhead_by_size")) {
        sim_net_by_size_kind kind = cfg_is_key(k, "network", "overhead_by_size")
                                        ? SIM_BY_SIZE_TIME
                                        : SIM_BY_SIZE_EFFICIENCY;
        if (sim_net_by_size_parse(raw, kind, &v->by_size, err))
            return err->code;
        if (sim_net_by_size_format(&v->by_size, kind, out, len))
            return sim_err_set(err, SIM_ECONFIG, "too long to store");
        return 0;
    }
    if (cfg_is_key(k, "workers", "compute")) {
        if (sim_dist_parse(raw, &v->dist, err))
            return err->code;
        sim_dist_format(&v->dist, out, (int)len);
        return 0;
    }
    *handled = 0;
    return 0;
}

#undef RANGE

/* Where each common key is stored and the range it must lie in, written as
 * the message shows it and parsed by range_ok: "> 0", ">= 1", "(0, 1]".
 * Kinds: s string, u uint64, I int64, i int, c choice (int), d double,
 * t sim_time. Keys not listed here are stored by store(). */
typedef struct field {
    const char *section, *key;
    size_t offset, size;
    char kind;
    const char *range;
} field;

#define FS(sec, k, m) {sec, k, offsetof(cfg_config, m), sizeof(((cfg_config *)0)->m), 's', NULL}
#define FN(sec, k, m, kind, range) {sec, k, offsetof(cfg_config, m), 0, kind, range}
/* a choice: an enum field, written as an int (the size is checked) */
#define FC(sec, k, m) {sec, k, offsetof(cfg_config, m), sizeof(((cfg_config *)0)->m), 'c', NULL}
static const field fields[] = {
    FS("experiment", "name", name),
    FN("experiment", "seed", seed, 'u', ">= 0"),
    FN("experiment", "max_iterations", max_iterations, 'I', ">= 0"),
    FN("experiment", "max_time", max_time, 't', ">= 0"),
    FN("experiment", "max_epochs", max_epochs, 'd', ">= 0"),
    FN("experiment", "target_accuracy", target_accuracy, 'd', "[0, 1]"),
    FN("experiment", "eval_train_samples", eval_train_samples, 'I', NULL),
    FC("experiment", "eval_model", eval_model),
    FN("workers", "count", n_workers, 'i', "[1, 65536]"),
    FC("workers", "precision", precision),
    FN("workers", "device", compute.device_flops, 'd', "> 0"),
    FN("workers", "efficiency", compute.efficiency, 'd', "(0, 1]"),
    FN("workers", "straggler_slowdown", compute.straggler_slowdown, 'd', "[1, 1e6]"),
    FN("workers", "transient_prob", compute.transient_prob, 'd', "[0, 1]"),
    FN("workers", "transient_slowdown", compute.transient_slowdown, 'd', "[1, 1e6]"),
    FS("network", "topology", net_topology),
    FN("network", "latency", latency, 'd', ">= 0"),
    FN("network", "bandwidth", bandwidth, 'd', "> 0"),
    FC("network", "sharing", sharing),
    FC("network", "routing", routing),
    FC("network", "collective", collective),
    FN("network", "intra_latency", intra_latency, 'd', ">= 0"),
    FN("network", "intra_bandwidth", intra_bandwidth, 'd', "> 0"),
    FN("network", "efficiency", net_efficiency, 'd', "(0, 1]"),
    FN("network", "message_overhead", message_overhead, 'd', ">= 0"),
    FN("network", "collective_overhead", collective_overhead, 'd', ">= 0"),
    FS("network", "calibration", calibration),
    FS("topology", "graph", graph),
    FC("topology", "weights", weights),
    FS("algorithm", "name", algorithm),
    FN("algorithm", "lr", lr, 'd', ">= 0"),
    FN("algorithm", "momentum", momentum, 'd', "[0, 1)"),
    FN("algorithm", "nesterov", nesterov, 'i', NULL),
    FN("algorithm", "weight_decay", weight_decay, 'd', ">= 0"),
    FS("algorithm", "optimizer", optimizer),
    FN("algorithm", "beta1", beta1, 'd', "[0, 1)"),
    FN("algorithm", "beta2", beta2, 'd', "[0, 1)"),
    FN("algorithm", "eps", eps, 'd', "> 0"),
    FN("algorithm", "bias_correction", bias_correction, 'i', NULL),
    FN("algorithm", "lamb_min_trust", lamb_min_trust, 'd', ">= 0"),
    FN("algorithm", "lamb_max_trust", lamb_max_trust, 'd', "> 0"),
    FN("algorithm", "bucket", bucket, 'd', ">= 0"),
    FN("algorithm", "clip", clip, 'd', ">= 0"),
    FN("algorithm", "batch", batch, 'i', NULL),
    FS("algorithm", "compressor", compressor),
    FN("algorithm", "error_feedback", error_feedback, 'i', NULL),
    FN("algorithm", "lr_decay", lr_decay, 'd', "(0, 1]"),
    FN("algorithm", "warmup_epochs", warmup_epochs, 'd', ">= 0"),
    FS("workload", "model", model),
    FS("workload", "dataset", dataset),
    FN("workload", "test_fraction", test_fraction, 'd', "[0, 1)"),
    FC("workload", "normalize", normalize),
    FC("workload", "sparse", sparse),
    FS("workload", "partition", partition),
    FC("workload", "init", init),
    FS("workload", "proxy", proxy),
    FN("workload", "sim_params", sim_params, 'I', "[0, 1e15]"),
    FN("workload", "sim_flops", sim_flops, 'd', ">= 0"),
    FC("workload", "wire_dtype", wire_dtype),
};
#undef FS
#undef FN
#undef FC

static int range_ok(const char *range, double x)
{
    char *end;
    if (range[0] == '>') {
        int inclusive = range[1] == '=';
        double lo = strtod(range + 1 + inclusive, NULL);
        return inclusive ? x >= lo : x > lo;
    }
    double lo = strtod(range + 1, &end);
    double hi = strtod(end + 1, &end);
    int lo_ok = range[0] == '(' ? x > lo : x >= lo;
    return lo_ok && (*end == ')' ? x < hi : x <= hi);
}

/* Stores a resolved common key into its typed field, checking its range. */
static int store(cfg_config *cfg, const cfg_key *k, const char *raw, const char *value,
                 const tval *v, sim_err *err)
{
    if (cfg_is_key(k, "experiment", "eval_every")) {
        cfg->eval_every_iters = v->i;
        cfg->eval_every_time = v->t;
    } else if (cfg_is_key(k, "workers", "compute")) {
        cfg->compute.dist = v->dist;
    } else if (cfg_is_key(k, "algorithm", "lr_milestones")) {
        cfg->n_lr_milestones = v->n_milestones;
        memcpy(cfg->lr_milestones, v->milestones, sizeof cfg->lr_milestones);
    } else if (cfg_is_key(k, "experiment", "trace_max_events")) {
        if (v->i < 1) /* checked when the file loads: a sweep refuses it before any run */
            return sim_err_set(err, SIM_ECONFIG, "expected a number of rows >= 1, got %s", raw);
    } else if (cfg_is_key(k, "workers", "stragglers")) {
        if (v->i < 0 || v->i > cfg->n_workers)
            return sim_err_set(err, SIM_ECONFIG,
                               "must be in [0, %d] (the worker count), got %s", cfg->n_workers,
                               raw);
        cfg->compute.stragglers = (int)v->i;
    } else if (cfg_is_key(k, "algorithm", "lamb_max_trust")) {
        if (v->d < cfg->lamb_min_trust)
            return sim_err_set(err, SIM_ECONFIG, "must be >= lamb_min_trust (%g), got %s",
                               cfg->lamb_min_trust, raw);
    } else if (cfg_is_key(k, "network", "efficiency_by_size")) {
        cfg->efficiency_by_size = v->by_size;
    } else if (cfg_is_key(k, "network", "overhead_by_size")) {
        cfg->overhead_by_size = v->by_size;
    } else if (cfg_is_key(k, "workload", "wire_dtype")) {
        cfg->wire_bytes = v->choice == CFG_WIRE_FP32 ? 4 : 2;
    } else if (cfg_is_key(k, "workers", "device")) {
        cfg->n_device_groups = v->n_groups;
        memcpy(cfg->device_groups, v->groups, sizeof cfg->device_groups);
    } else if (cfg_is_key(k, "workers", "efficiency")) {
        cfg->efficiency_published = strcmp(value, "published") == 0;
    }
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const field *f = &fields[i];
        if (!cfg_is_key(k, f->section, f->key))
            continue;
        char *at = (char *)cfg + f->offset;
        double x = f->kind == 'd' ? v->d : f->kind == 't' ? (double)v->t : (double)v->i;
        if (f->range && !range_ok(f->range, x))
            return sim_err_set(err, SIM_ECONFIG, "must be %s%s, got %s",
                               f->range[0] == '>' ? "" : "in ", f->range, raw);
        switch (f->kind) {
        case 's':
            if (strlen(value) >= f->size)
                return sim_err_set(err, SIM_ECONFIG, "too long (max %zu characters)",
                                   f->size - 1);
            memcpy(at, value, strlen(value) + 1);
            break;
        case 'u': *(uint64_t *)(void *)at = (uint64_t)v->i; break;
        case 'I': *(int64_t *)(void *)at = v->i; break;
        case 'i': *(int *)(void *)at = (int)v->i; break;
        case 'c':
            if (f->size != sizeof(int))
                return sim_err_set(err, SIM_EINTERNAL, "enum field of size %zu", f->size);
            memcpy(at, &v->choice, sizeof(int));
            break;
        case 'd': *(double *)(void *)at = v->d; break;
        case 't': *(sim_time *)(void *)at = v->t; break;
        }
    }
    return 0;
}

int cfg_value_resolve(const cfg_schema *sc, cfg_config *cfg, const cfg_key *k,
                             const char *raw, char *out, size_t len, int common, sim_err *err)
{
    tval v;
    memset(&v, 0, sizeof v);
    int handled = 0;
    int rc = common ? canon_special(sc, cfg, k, raw, out, len, &v, err, &handled) : 0;
    if (!rc && !handled)
        rc = canon_typed(sc, k, raw, out, len, &v, err);
    if (!rc && common && k->type == CFG_KEY_STRING && !handled && !out[0])
        rc = sim_err_set(err, SIM_ECONFIG, "must not be empty");
    if (!rc && common)
        rc = store(cfg, k, raw, out, &v, err);
    return rc;
}

/* One spec argument or a plain value: blanks trimmed, collapsed to one,
 * and dropped between a digit and a letter (a number and its unit); list
 * items separated by ", ". */
static void written_plain(const char *s, char *out, size_t len)
{
    size_t n = 0;
    while (isspace((unsigned char)*s))
        s++;
    for (const char *p = s; *p && n + 1 < len; p++) {
        if (isspace((unsigned char)*p)) {
            const char *q = p;
            while (isspace((unsigned char)*q))
                q++;
            if (!*q)
                break;
            int unit = n > 0 && (isdigit((unsigned char)out[n - 1]) || out[n - 1] == '.') &&
                       (isalpha((unsigned char)*q) || *q == '%');
            if (!unit && *q != ',' && n + 1 < len)
                out[n++] = ' ';
            p = q - 1;
            continue;
        }
        out[n++] = *p;
        if (*p == ',' && n + 1 < len) {
            out[n++] = ' ';
            while (isspace((unsigned char)p[1]))
                p++;
        }
    }
    out[n] = '\0';
}

void cfg_entry_written(const cfg_entry *e, char *out, size_t len)
{
    if (!len)
        return;
    char raw[sizeof e->raw];
    if (cfg_copy_trimmed(raw, sizeof raw, e->raw) || !raw[0]) {
        snprintf(out, len, "%s", e->value);
        return;
    }
    sim_spec *sp = strchr(raw, '(') ? malloc(sizeof *sp) : NULL;
    if (sp && sim_spec_parse(raw, sp, NULL) == 0 && sp->name[0]) {
        size_t used = (size_t)snprintf(out, len, "%s(", sp->name);
        for (int i = 0; i < sp->nargs && used < len; i++) {
            char arg[SIM_SPEC_ARG_LEN];
            written_plain(sp->args[i], arg, sizeof arg);
            used += (size_t)snprintf(out + used, len - used, "%s%s", i ? ", " : "", arg);
        }
        if (used < len)
            snprintf(out + used, len - used, ")");
        if (sp->nargs == 0)
            snprintf(out, len, "%s", sp->name);
    } else {
        written_plain(raw, out, len);
    }
    free(sp);
}

int cfg_entry_number(const cfg_entry *e, double *out)
{
    static const struct {
        const char *suffix;
        double divisor;
    } units[] = {{"", 1}, {"ns", 1e9}, {"B/s", 1}, {"B", 1}, {"FLOPS", 1}};
    const char *v = e->value;
    if (!*v || !(isdigit((unsigned char)*v) || *v == '-' || *v == '.'))
        return 0;
    char *end = NULL;
    double x = strtod(v, &end);
    if (end == v || !isfinite(x))
        return 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0) {
            *out = x / units[i].divisor;
            return 1;
        }
    return 0;
}
