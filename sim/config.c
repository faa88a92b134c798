/* Experiment configuration (see config.h). The file is read whole and fed to
 * inih line by line through our own reader, which counts lines (so every
 * handler call knows its line), strips comments, rejects unknown sections
 * and lines inih would misread (leading blanks would make a continuation
 * line), and stops parsing at the first error. Values are collected raw,
 * then --set overrides replace them, then every schema key is resolved in
 * schema order: parsed, range-checked, stored in its typed field and given
 * its canonical text. Method keys of [algorithm] are resolved last, once
 * the algorithm name is known. Nothing here is global except the resolver,
 * which is set once at start-up. */
#include "sim/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

/* clang-format off */
const sim_key sim_config_keys[] = {
    {"experiment", "name", "", SIM_KEY_STRING, NULL, "run name (default: the file's base name)"},
    {"experiment", "seed", "1", SIM_KEY_INT, NULL, "master seed; every random stream derives from it"},
    {"experiment", "max_iterations", "0", SIM_KEY_INT, NULL, "synchronous rounds or applied updates (0 = no limit)"},
    {"experiment", "max_time", "0", SIM_KEY_TIME, NULL, "simulated time limit (0 = no limit)"},
    {"experiment", "max_epochs", "1", SIM_KEY_DOUBLE, NULL, "passes over the training set, summed over workers (0 = no limit)"},
    {"experiment", "target_accuracy", "0", SIM_KEY_DOUBLE, NULL, "stop when the evaluated model reaches it (0 = none)"},
    {"experiment", "eval_every", "50", SIM_KEY_STRING, NULL, "evaluate every N iterations, or every simulated time such as 2s"},
    {"experiment", "eval_train_samples", "10000", SIM_KEY_STRING, NULL, "training samples used for train_loss, or all"},
    {"experiment", "eval_model", "average", SIM_KEY_CHOICE, "average|worker0", "evaluated model of decentralized and local methods: the workers' average or worker 0's"},
    {"workers", "count", "8", SIM_KEY_INT, NULL, "number of workers (1..65536)"},
    {"workers", "compute", "model", SIM_KEY_STRING, NULL, "model, or a distribution of seconds per step such as lognormal(10ms, 0.5)"},
    {"workers", "device", "15.7TFLOPS", SIM_KEY_FLOPS, NULL, "device peak speed, used when compute = model"},
    {"workers", "efficiency", "0.5", SIM_KEY_DOUBLE, NULL, "fraction of device peak reached, in (0, 1]"},
    {"workers", "stragglers", "0", SIM_KEY_INT, NULL, "number of persistently slow workers (workers 0..stragglers-1)"},
    {"workers", "straggler_slowdown", "5", SIM_KEY_DOUBLE, NULL, "compute-time factor of the stragglers (>= 1)"},
    {"workers", "transient_prob", "0", SIM_KEY_DOUBLE, NULL, "chance that one step is slowed, in [0, 1]"},
    {"workers", "transient_slowdown", "10", SIM_KEY_DOUBLE, NULL, "compute-time factor of a slowed step (>= 1)"},
    {"network", "topology", "star", SIM_KEY_STRING, NULL, "physical network: star | ring | torus(4, 4) | complete | fat_tree(4) | ideal | file(NET.graphml)"},
    {"network", "latency", "5us", SIM_KEY_TIME, NULL, "latency per link"},
    {"network", "bandwidth", "10Gbps", SIM_KEY_RATE, NULL, "bandwidth per link"},
    {"network", "sharing", "fair", SIM_KEY_CHOICE, "fair|none", "fair: max-min fair sharing of links; none: alpha-beta"},
    {"network", "collective", "ring", SIM_KEY_CHOICE, "ring|tree|ps", "all-reduce algorithm"},
    {"topology", "graph", "ring", SIM_KEY_STRING, NULL, "logical gossip graph: ring | torus(4, 4) | exponential | complete | ..."},
    {"topology", "weights", "metropolis", SIM_KEY_CHOICE, "metropolis|uniform", "mixing weights"},
    {"algorithm", "name", "allreduce_sgd", SIM_KEY_STRING, NULL, "training method (dtsim list algorithms)"},
    {"algorithm", "lr", "0.1", SIM_KEY_DOUBLE, NULL, "learning rate (> 0)"},
    {"algorithm", "momentum", "0", SIM_KEY_DOUBLE, NULL, "momentum, in [0, 1)"},
    {"algorithm", "nesterov", "false", SIM_KEY_BOOL, NULL, "Nesterov momentum"},
    {"algorithm", "weight_decay", "0", SIM_KEY_DOUBLE, NULL, "L2 weight decay (>= 0)"},
    {"algorithm", "batch", "32", SIM_KEY_STRING, NULL, "samples per worker step, or full (the worker's whole shard)"},
    {"algorithm", "lr_milestones", "none", SIM_KEY_STRING, NULL, "epochs at which lr is multiplied by lr_decay, e.g. 5, 8 (none = constant)"},
    {"algorithm", "lr_decay", "0.1", SIM_KEY_DOUBLE, NULL, "factor applied at each milestone, in (0, 1]"},
    {"algorithm", "warmup_epochs", "0", SIM_KEY_DOUBLE, NULL, "linear warm-up from lr/10 to lr over this many epochs"},
    {"workload", "model", "softmax", SIM_KEY_STRING, NULL, "linreg | logreg | softmax | mlp(256, 128) | cnn | charlm"},
    {"workload", "dataset", "fashion_mnist", SIM_KEY_STRING, NULL, "synthetic_linear(d, n) | blobs(classes, d, n) | fashion_mnist | libsvm(TRAIN[, TEST]) | text(FILE)"},
    {"workload", "test_fraction", "0.1", SIM_KEY_DOUBLE, NULL, "held out when the dataset has no test part, in [0, 1)"},
    {"workload", "normalize", "none", SIM_KEY_CHOICE, "none|standard", "feature normalisation"},
    {"workload", "partition", "iid", SIM_KEY_STRING, NULL, "iid | contiguous | dirichlet(0.5) | shards(2)"},
    {"workload", "init", "same", SIM_KEY_CHOICE, "same|independent", "same: one initial model; independent: a draw per worker"},
    {"workload", "proxy", "none", SIM_KEY_STRING, NULL, "none | resnet50 | vgg16 | bert_large | gpt2 | ..."},
    {"workload", "sim_params", "0", SIM_KEY_INT, NULL, "if > 0: parameter count used for message sizes"},
    {"workload", "sim_flops", "0", SIM_KEY_DOUBLE, NULL, "if > 0: training FLOPs per sample used for compute time"},
    {"workload", "wire_dtype", "fp32", SIM_KEY_CHOICE, "fp32|fp16|bf16", "bytes per value on the wire"},
    {NULL, NULL, NULL, SIM_KEY_STRING, NULL, NULL},
};
/* clang-format on */

static const char *const sections[] = {"experiment", "workers",   "network",
                                       "topology",   "algorithm", "workload"};
#define N_SECTIONS ((int)(sizeof sections / sizeof sections[0]))
#define KNOWN_SECTIONS "experiment, workers, network, topology, algorithm, workload"

static sim_config_algo_keys_fn algo_resolver;

void sim_config_set_algo_resolver(sim_config_algo_keys_fn fn) { algo_resolver = fn; }

static sim_config_device_fn device_resolver;

void sim_config_set_device_resolver(sim_config_device_fn fn) { device_resolver = fn; }

/* ---- small text helpers ---- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* Copies s trimmed into buf; returns -1 if it does not fit. */
static int copy_trimmed(char *buf, size_t len, const char *s)
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

static int edit_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63)
        return 99;
    int row[64];
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int best = diag + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static int section_index(const char *s)
{
    for (int i = 0; i < N_SECTIONS; i++)
        if (strcasecmp(s, sections[i]) == 0)
            return i;
    return -1;
}

static const sim_key *schema_find(const char *section, const char *key)
{
    for (const sim_key *k = sim_config_keys; k->key; k++)
        if (strcasecmp(k->section, section) == 0 && strcasecmp(k->key, key) == 0)
            return k;
    return NULL;
}

static const sim_key *table_find(const sim_key *table, const char *key)
{
    for (const sim_key *k = table; k && k->key; k++)
        if (strcasecmp(k->key, key) == 0)
            return k;
    return NULL;
}

static int is_key(const sim_key *k, const char *section, const char *key)
{
    return strcmp(k->section, section) == 0 && strcmp(k->key, key) == 0;
}

/* ---- raw values collected from the file and the overrides ---- */

typedef struct item {
    char section[32];
    char key[48];
    char value[512];
    char set_text[600]; /* the --set argument, for messages */
    int line;           /* > 0 file line, -1 --set */
    int is_common;      /* a key of sim_config_keys */
} item;

typedef struct loader {
    const char *path;
    const char *text;
    size_t pos;
    int lineno;
    int failed;
    item *items;
    int n_items, cap_items;
    sim_err *err;
} loader;

static void item_where(const loader *l, const item *it, char *buf, size_t len)
{
    if (it->line < 0)
        snprintf(buf, len, "--set %s", it->set_text);
    else
        snprintf(buf, len, "%s:%d: [%s] %s", l->path, it->line, it->section, it->key);
}

static int fail(loader *l, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(loader *l, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sim_err_vset(l->err, code, fmt, ap);
    va_end(ap);
    l->failed = 1;
    return code;
}

static item *item_find(loader *l, const char *section, const char *key)
{
    for (int i = 0; i < l->n_items; i++)
        if (strcasecmp(l->items[i].section, section) == 0 &&
            strcasecmp(l->items[i].key, key) == 0)
            return &l->items[i];
    return NULL;
}

static void suggest_key(const char *section, const char *key, char *buf, size_t len)
{
    const char *best = NULL;
    int best_d = 99;
    for (const sim_key *k = sim_config_keys; k->key; k++) {
        if (strcmp(k->section, section) != 0)
            continue;
        int d = edit_distance(key, k->key);
        if (d < best_d) {
            best_d = d;
            best = k->key;
        }
    }
    if (best && best_d <= 2 && best_d * 2 < (int)strlen(best)) {
        snprintf(buf, len, "did you mean '%s'?", best);
        return;
    }
    size_t used = (size_t)snprintf(buf, len, "known: ");
    for (const sim_key *k = sim_config_keys; k->key && used < len; k++)
        if (strcmp(k->section, section) == 0)
            used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                     buf[used - 1] == ' ' ? "" : ", ", k->key);
}

/* Records one value (line > 0 from the file, -1 from --set). */
static int item_record(loader *l, const char *section, const char *key, const char *value,
                       int line, const char *set_text)
{
    char where[700];
    if (line > 0)
        snprintf(where, sizeof where, "%s:%d: [%s] %s", l->path, line, section, key);
    else
        snprintf(where, sizeof where, "--set %s", set_text);

    int si = section_index(section);
    if (si < 0)
        return fail(l, SIM_ECONFIG, "--set %s: unknown section '%s' (known: %s)", set_text,
                    section, KNOWN_SECTIONS);
    section = sections[si];
    const sim_key *k = schema_find(section, key);
    if (!k && strcmp(section, "algorithm") != 0) {
        char hint[256];
        suggest_key(section, key, hint, sizeof hint);
        return fail(l, SIM_ECONFIG, "%s: unknown key (%s)", where, hint);
    }
    if (k)
        key = k->key;
    if (strlen(key) >= sizeof l->items[0].key)
        return fail(l, SIM_ECONFIG, "%s: key name too long", where);

    item *it = item_find(l, section, key);
    if (it && line > 0)
        return fail(l, SIM_ECONFIG, "%s: duplicate key (first set on line %d)", where,
                    it->line);
    if (!it) {
        if (l->n_items == l->cap_items) {
            int cap = l->cap_items ? 2 * l->cap_items : 32;
            item *p = realloc(l->items, (size_t)cap * sizeof *p);
            if (!p)
                return fail(l, SIM_ENOMEM, "%s: out of memory", l->path);
            l->items = p;
            l->cap_items = cap;
        }
        it = &l->items[l->n_items++];
        memset(it, 0, sizeof *it);
        snprintf(it->section, sizeof it->section, "%s", section);
        snprintf(it->key, sizeof it->key, "%s", key);
        it->is_common = k != NULL;
    }
    if (copy_trimmed(it->value, sizeof it->value, value))
        return fail(l, SIM_ECONFIG, "%s: value too long (max %zu characters)", where,
                    sizeof it->value - 1);
    it->line = line;
    it->set_text[0] = '\0';
    if (set_text)
        snprintf(it->set_text, sizeof it->set_text, "%s", set_text);
    return 0;
}

/* inih reader: hands over one cleaned line per call (see the file comment). */
static char *reader(char *str, int num, void *stream)
{
    loader *l = stream;
    if (l->failed || l->text[l->pos] == '\0')
        return NULL;
    const char *start = l->text + l->pos;
    const char *nl = strchr(start, '\n');
    size_t n = nl ? (size_t)(nl - start) : strlen(start);
    l->pos += n + (nl ? 1 : 0);
    l->lineno++;

    char *line = malloc(n + 1);
    if (!line) {
        fail(l, SIM_ENOMEM, "%s: out of memory", l->path);
        return NULL;
    }
    memcpy(line, start, n);
    line[n] = '\0';
    char *s = line;
    if (l->lineno == 1 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
        (unsigned char)s[2] == 0xBF)
        s += 3;
    s = trim(s);
    if (*s == ';' || *s == '#')
        *s = '\0';
    for (char *p = s; *p; p++)
        if (*p == ';' && p > s && isspace((unsigned char)p[-1])) {
            *p = '\0';
            break;
        }
    s = trim(s);

    char out[600];
    if (*s == '[') {
        char *close = strchr(s, ']');
        if (!close) {
            fail(l, SIM_ECONFIG, "%s:%d: expected ']' after the section name", l->path,
                 l->lineno);
            goto out;
        }
        *close = '\0';
        if (*trim(close + 1)) {
            fail(l, SIM_ECONFIG, "%s:%d: unexpected text after ']'", l->path, l->lineno);
            goto out;
        }
        char *name = trim(s + 1);
        int si = section_index(name);
        if (si < 0) {
            fail(l, SIM_ECONFIG, "%s:%d: [%s]: unknown section (known: %s)", l->path,
                 l->lineno, name, KNOWN_SECTIONS);
            goto out;
        }
        snprintf(out, sizeof out, "[%s]", sections[si]);
        s = out;
    } else if (*s) {
        char *eq = strpbrk(s, "=:");
        if (!eq) {
            fail(l, SIM_ECONFIG, "%s:%d: expected 'key = value', '[section]' or a comment, got '%s'",
                 l->path, l->lineno, s);
            goto out;
        }
        if (eq == s) {
            fail(l, SIM_ECONFIG, "%s:%d: missing key name before '%c'", l->path, l->lineno,
                 *eq);
            goto out;
        }
    }
    if (strlen(s) + 2 > (size_t)num) {
        fail(l, SIM_ECONFIG, "%s:%d: line too long (max %d characters without comments)",
             l->path, l->lineno, num - 2);
        goto out;
    }
    snprintf(str, (size_t)num, "%s\n", s);
out:
    free(line);
    return l->failed ? NULL : str;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    loader *l = user;
    if (l->failed)
        return 0;
    if (!name) /* a section start, if this inih reports them */
        return 1;
    if (!section[0]) {
        fail(l, SIM_ECONFIG, "%s:%d: key '%s' outside any section (known sections: %s)",
             l->path, l->lineno, name, KNOWN_SECTIONS);
        return 0;
    }
    item_record(l, section, name, value ? value : "", l->lineno, NULL);
    return !l->failed;
}

static int apply_override(loader *l, const char *text)
{
    const char *eq = strchr(text, '=');
    const char *dot = eq ? memchr(text, '.', (size_t)(eq - text)) : NULL;
    char section[64], key[128];
    if (!eq || !dot)
        return fail(l, SIM_EUSAGE, "--set %s: expected SECTION.KEY=VALUE", text);
    size_t ns = (size_t)(dot - text), nk = (size_t)(eq - dot - 1);
    if (ns >= sizeof section || nk >= sizeof key)
        return fail(l, SIM_ECONFIG, "--set %s: unknown key", text);
    memcpy(section, text, ns);
    section[ns] = '\0';
    memcpy(key, dot + 1, nk);
    key[nk] = '\0';
    char *s = trim(section), *k = trim(key);
    if (!*s || !*k)
        return fail(l, SIM_EUSAGE, "--set %s: expected SECTION.KEY=VALUE", text);
    return item_record(l, s, k, eq + 1, -1, text);
}

/* ---- resolving values ---- */

typedef struct tval {
    int64_t i;
    double d;
    sim_time t;
    int choice;
    sim_dist dist; /* [workers] compute */
    double milestones[SIM_CFG_MAX_MILESTONES]; /* [algorithm] lr_milestones */
    int n_milestones;
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
        return copy_trimmed(out, len, raw);
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
        rc = copy_trimmed(out, len, raw);
    }
    free(sp);
    return rc;
}

static int choice_parse(const char *choices, const char *raw, int *index, char *word,
                        size_t len, sim_err *err)
{
    char buf[128];
    if (copy_trimmed(buf, sizeof buf, raw))
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

static int finite_or_fail(double x, const char *raw, sim_err *err)
{
    if (isfinite(x))
        return 0;
    return sim_err_set(err, SIM_ECONFIG, "expected a finite number, got '%s'", raw);
}

/* Parses raw by type into v and writes the canonical text. */
static int canon_typed(const sim_key *k, const char *raw, char *out, size_t len, tval *v,
                       sim_err *err)
{
    char num[64];
    switch (k->type) {
    case SIM_KEY_INT:
        if (sim_parse_int(raw, &v->i, err))
            return err->code;
        snprintf(out, len, "%lld", (long long)v->i);
        return 0;
    case SIM_KEY_DOUBLE:
        if (sim_parse_double(raw, &v->d, err) || finite_or_fail(v->d, raw, err))
            return err->code;
        format_number(v->d, out, len);
        return 0;
    case SIM_KEY_TIME:
        if (sim_parse_time(raw, &v->t, err))
            return err->code;
        v->d = (double)v->t / 1e9;
        snprintf(out, len, "%lldns", (long long)v->t);
        return 0;
    case SIM_KEY_RATE:
    case SIM_KEY_SIZE:
    case SIM_KEY_FLOPS: {
        int rc = k->type == SIM_KEY_RATE   ? sim_parse_rate(raw, &v->d, err)
                 : k->type == SIM_KEY_SIZE ? sim_parse_size(raw, &v->d, err)
                                           : sim_parse_flops(raw, &v->d, err);
        if (rc && k->type == SIM_KEY_FLOPS) {
            double named = device_resolver ? device_resolver(raw) : 0.0;
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
                 k->type == SIM_KEY_RATE ? "B/s" : k->type == SIM_KEY_SIZE ? "B" : "FLOPS");
        return 0;
    }
    case SIM_KEY_BOOL: {
        int b;
        if (sim_parse_bool(raw, &b, err))
            return err->code;
        v->i = b != 0;
        snprintf(out, len, "%s", b ? "true" : "false");
        return 0;
    }
    case SIM_KEY_CHOICE:
        return choice_parse(k->choices ? k->choices : "", raw, &v->choice, out, len, err);
    case SIM_KEY_STRING:
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

/* Keys whose value is not a plain typed value: parsed here. */
static int canon_special(const sim_config *cfg, const sim_key *k, const char *raw,
                         char *out, size_t len, tval *v, sim_err *err, int *handled)
{
    *handled = 1;
    if (is_key(k, "experiment", "name")) {
        if (!*raw)
            file_stem(cfg->path, out, len);
        else if (copy_trimmed(out, len, raw))
            return sim_err_set(err, SIM_ECONFIG, "too long");
        return 0;
    }
    if (is_key(k, "experiment", "eval_every")) {
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
    if (is_key(k, "experiment", "eval_train_samples")) {
        if (strcasecmp(raw, "all") == 0) {
            v->i = SIM_CFG_EVAL_ALL;
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
    if (is_key(k, "algorithm", "batch")) {
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
    if (is_key(k, "algorithm", "lr_milestones")) {
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
            if (v->n_milestones == SIM_CFG_MAX_MILESTONES ||
                (v->n_milestones > 0 && x <= v->milestones[v->n_milestones - 1]))
                return sim_err_set(err, SIM_ECONFIG,
                                   "expected at most %d increasing positive epochs, got '%s'",
                                   SIM_CFG_MAX_MILESTONES, raw);
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
    if (is_key(k, "workers", "compute")) {
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

#define FS(sec, k, m) {sec, k, offsetof(sim_config, m), sizeof(((sim_config *)0)->m), 's', NULL}
#define FN(sec, k, m, kind, range) {sec, k, offsetof(sim_config, m), 0, kind, range}
static const field fields[] = {
    FS("experiment", "name", name),
    FN("experiment", "seed", seed, 'u', ">= 0"),
    FN("experiment", "max_iterations", max_iterations, 'I', ">= 0"),
    FN("experiment", "max_time", max_time, 't', ">= 0"),
    FN("experiment", "max_epochs", max_epochs, 'd', ">= 0"),
    FN("experiment", "target_accuracy", target_accuracy, 'd', "[0, 1]"),
    FN("experiment", "eval_train_samples", eval_train_samples, 'I', NULL),
    FN("experiment", "eval_model", eval_model, 'c', NULL),
    FN("workers", "count", n_workers, 'i', "[1, 65536]"),
    FN("workers", "device", compute.device_flops, 'd', "> 0"),
    FN("workers", "efficiency", compute.efficiency, 'd', "(0, 1]"),
    FN("workers", "straggler_slowdown", compute.straggler_slowdown, 'd', ">= 1"),
    FN("workers", "transient_prob", compute.transient_prob, 'd', "[0, 1]"),
    FN("workers", "transient_slowdown", compute.transient_slowdown, 'd', ">= 1"),
    FS("network", "topology", net_topology),
    FN("network", "latency", latency, 'd', ">= 0"),
    FN("network", "bandwidth", bandwidth, 'd', "> 0"),
    FN("network", "sharing", sharing, 'c', NULL),
    FN("network", "collective", collective, 'c', NULL),
    FS("topology", "graph", graph),
    FN("topology", "weights", weights, 'c', NULL),
    FS("algorithm", "name", algorithm),
    FN("algorithm", "lr", lr, 'd', "> 0"),
    FN("algorithm", "momentum", momentum, 'd', "[0, 1)"),
    FN("algorithm", "nesterov", nesterov, 'i', NULL),
    FN("algorithm", "weight_decay", weight_decay, 'd', ">= 0"),
    FN("algorithm", "batch", batch, 'i', NULL),
    FN("algorithm", "lr_decay", lr_decay, 'd', "(0, 1]"),
    FN("algorithm", "warmup_epochs", warmup_epochs, 'd', ">= 0"),
    FS("workload", "model", model),
    FS("workload", "dataset", dataset),
    FN("workload", "test_fraction", test_fraction, 'd', "[0, 1)"),
    FN("workload", "normalize", normalize, 'c', NULL),
    FS("workload", "partition", partition),
    FN("workload", "init", init, 'c', NULL),
    FS("workload", "proxy", proxy),
    FN("workload", "sim_params", sim_params, 'I', ">= 0"),
    FN("workload", "sim_flops", sim_flops, 'd', ">= 0"),
};
#undef FS
#undef FN

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
static int store(sim_config *cfg, const sim_key *k, const char *raw, const char *value,
                 const tval *v, sim_err *err)
{
    if (is_key(k, "experiment", "eval_every")) {
        cfg->eval_every_iters = v->i;
        cfg->eval_every_time = v->t;
    } else if (is_key(k, "workers", "compute")) {
        cfg->compute.dist = v->dist;
    } else if (is_key(k, "algorithm", "lr_milestones")) {
        cfg->n_lr_milestones = v->n_milestones;
        memcpy(cfg->lr_milestones, v->milestones, sizeof cfg->lr_milestones);
    } else if (is_key(k, "workers", "stragglers")) {
        if (v->i < 0 || v->i > cfg->n_workers)
            return sim_err_set(err, SIM_ECONFIG,
                               "must be in [0, %d] (the worker count), got %s", cfg->n_workers,
                               raw);
        cfg->compute.stragglers = (int)v->i;
    } else if (is_key(k, "workload", "wire_dtype")) {
        cfg->wire_dtype = v->choice;
        cfg->wire_bytes = v->choice == 0 ? 4 : 2;
    }
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const field *f = &fields[i];
        if (!is_key(k, f->section, f->key))
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
        case 'c': *(int *)(void *)at = v->choice; break;
        case 'd': *(double *)(void *)at = v->d; break;
        case 't': *(sim_time *)(void *)at = v->t; break;
        }
    }
    return 0;
}


/* Fills entry e for key k from its item (or default), parsing the value;
 * store_common: also set the typed field. */
static int resolve(loader *l, sim_config *cfg, const sim_key *k, sim_entry *e,
                   int store_common)
{
    item *it = item_find(l, store_common ? k->section : "algorithm", k->key);
    const char *raw = it ? it->value : k->def;
    snprintf(e->section, sizeof e->section, "%s", store_common ? k->section : "algorithm");
    snprintf(e->key, sizeof e->key, "%s", k->key);
    if (copy_trimmed(e->raw, sizeof e->raw, raw))
        e->raw[0] = '\0';
    e->line = it ? it->line : 0;

    sim_err *err = l->err;
    tval v;
    memset(&v, 0, sizeof v);
    int handled = 0;
    int rc = store_common ? canon_special(cfg, k, e->raw, e->value, sizeof e->value, &v,
                                          err, &handled)
                          : 0;
    if (!rc && !handled)
        rc = canon_typed(k, e->raw, e->value, sizeof e->value, &v, err);
    if (!rc && store_common && k->type == SIM_KEY_STRING && !handled && !e->value[0])
        rc = sim_err_set(err, SIM_ECONFIG, "must not be empty");
    if (!rc && store_common)
        rc = store(cfg, k, e->raw, e->value, &v, err);
    if (rc) {
        char where[700];
        if (it)
            item_where(l, it, where, sizeof where);
        else
            snprintf(where, sizeof where, "%s: [%s] %s (default)", l->path, e->section,
                     k->key);
        l->failed = 1;
        return sim_err_prefix(err, "%s", where);
    }
    return 0;
}

static int cmp_entry_key(const void *a, const void *b)
{
    return strcmp(((const sim_entry *)a)->key, ((const sim_entry *)b)->key);
}

/* Resolves the method keys into m (allocated); returns count or < 0. */
static int resolve_method(loader *l, sim_config *cfg, const sim_entry *name_entry,
                          sim_entry **m)
{
    const sim_key *table = NULL;
    int n = 0;
    *m = NULL;
    if (algo_resolver) {
        table = algo_resolver(cfg->algorithm);
        if (!table) {
            sim_config tmp = *cfg;
            tmp.entries = (sim_entry *)name_entry;
            tmp.n_entries = 1;
            l->failed = 1;
            return sim_config_error(&tmp, "algorithm", "name", SIM_ECONFIG, l->err,
                                    "unknown algorithm '%s'", cfg->algorithm);
        }
        for (int i = 0; i < l->n_items; i++) {
            item *it = &l->items[i];
            if (it->is_common || strcmp(it->section, "algorithm") != 0)
                continue;
            if (!table_find(table, it->key)) {
                char where[700], known[400];
                size_t used = 0;
                known[0] = '\0';
                for (const sim_key *k = table; k->key && used < sizeof known; k++)
                    if (!schema_find("algorithm", k->key))
                        used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                                 used ? ", " : "", k->key);
                item_where(l, it, where, sizeof where);
                return fail(l, SIM_ECONFIG, "%s: unknown key for algorithm '%s' (known: %s)",
                            where, cfg->algorithm,
                            known[0] ? known : "none beyond the common keys");
            }
        }
        for (const sim_key *k = table; k->key; k++)
            n++;
    } else {
        for (int i = 0; i < l->n_items; i++)
            n += !l->items[i].is_common && !strcmp(l->items[i].section, "algorithm");
    }
    if (n == 0)
        return 0;
    *m = calloc((size_t)n, sizeof **m);
    if (!*m)
        return fail(l, SIM_ENOMEM, "%s: out of memory", l->path);
    int got = 0;
    if (table) {
        for (const sim_key *k = table; k->key; k++) {
            if (schema_find("algorithm", k->key) || strlen(k->key) >= sizeof (*m)->key)
                continue; /* a method cannot redefine a common key */
            if (resolve(l, cfg, k, &(*m)[got], 0))
                return l->err->code;
            got++;
        }
    } else {
        for (int i = 0; i < l->n_items; i++) {
            item *it = &l->items[i];
            if (it->is_common || strcmp(it->section, "algorithm") != 0)
                continue;
            sim_key k = {"algorithm", it->key, "", SIM_KEY_STRING, NULL, NULL};
            if (resolve(l, cfg, &k, &(*m)[got], 0))
                return l->err->code;
            got++;
        }
        qsort(*m, (size_t)got, sizeof **m, cmp_entry_key);
    }
    return got;
}

static int resolve_all(loader *l, sim_config *cfg)
{
    int n_schema = 0, last_algo = -1, name_idx = -1;
    for (const sim_key *k = sim_config_keys; k->key; k++, n_schema++) {
        if (!strcmp(k->section, "algorithm"))
            last_algo = n_schema;
        if (is_key(k, "algorithm", "name"))
            name_idx = n_schema;
    }
    sim_entry *common = calloc((size_t)n_schema, sizeof *common);
    sim_entry *method = NULL;
    if (!common)
        return fail(l, SIM_ENOMEM, "%s: out of memory", l->path);
    int rc = 0;
    for (int i = 0; i < n_schema && !rc; i++)
        rc = resolve(l, cfg, &sim_config_keys[i], &common[i], 1);
    int n_method = rc ? 0 : resolve_method(l, cfg, &common[name_idx], &method);
    if (n_method < 0)
        rc = n_method;
    if (!rc) {
        cfg->n_entries = n_schema + n_method;
        cfg->entries = calloc((size_t)cfg->n_entries, sizeof *cfg->entries);
        if (!cfg->entries) {
            rc = fail(l, SIM_ENOMEM, "%s: out of memory", l->path);
        } else {
            int at = 0;
            for (int i = 0; i <= last_algo; i++)
                cfg->entries[at++] = common[i];
            for (int i = 0; i < n_method; i++)
                cfg->entries[at++] = method[i];
            for (int i = last_algo + 1; i < n_schema; i++)
                cfg->entries[at++] = common[i];
        }
    }
    free(common);
    free(method);
    return rc;
}

/* ---- public ---- */

int sim_config_load_string(const char *name, const char *text,
                           const char *const *overrides, int n_overrides,
                           sim_config *cfg, sim_err *err)
{
    sim_err local;
    if (!err)
        err = &local;
    sim_err_clear(err);
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->path, sizeof cfg->path, "%s", name);

    loader l;
    memset(&l, 0, sizeof l);
    l.path = cfg->path;
    l.text = text ? text : "";
    l.err = err;

    int rc = ini_parse_stream(reader, &l, handler, &l);
    if (!l.failed && rc != 0)
        fail(&l, SIM_ECONFIG, "%s:%d: cannot parse this line", l.path, rc > 0 ? rc : l.lineno);
    for (int i = 0; i < n_overrides && !l.failed; i++)
        apply_override(&l, overrides[i]);
    if (!l.failed)
        resolve_all(&l, cfg);
    if (!l.failed && cfg->max_iterations == 0 && cfg->max_time == 0 && cfg->max_epochs == 0 &&
        cfg->target_accuracy == 0)
        fail(&l, SIM_ECONFIG,
             "%s: [experiment]: no stopping condition (set max_iterations, max_time, "
             "max_epochs or target_accuracy)",
             l.path);
    free(l.items);
    if (l.failed) {
        sim_config_release(cfg);
        return err->code ? err->code : SIM_ECONFIG;
    }
    return 0;
}

int sim_config_load(const char *path, const char *const *overrides, int n_overrides,
                    sim_config *cfg, sim_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    FILE *f = fopen(path, "rb");
    if (!f)
        return sim_err_set(err, SIM_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    /* the whole file at once (text stops at a NUL byte, which no INI has) */
    char *text = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&text, &cap, '\0', f);
    int bad = ferror(f), saved = errno;
    fclose(f);
    if (bad || (n < 0 && saved == ENOMEM)) {
        free(text);
        return sim_err_set(err, bad ? SIM_EINPUT : SIM_ENOMEM, "%s: cannot read: %s", path,
                           strerror(saved));
    }
    if (n < 0) { /* empty file */
        free(text);
        return sim_config_load_string(path, "", overrides, n_overrides, cfg, err);
    }
    int rc = sim_config_load_string(path, text, overrides, n_overrides, cfg, err);
    free(text);
    return rc;
}

void sim_config_release(sim_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->entries);
    memset(cfg, 0, sizeof *cfg);
}

char *sim_config_canonical(const sim_config *cfg)
{
    size_t len = 1;
    for (int i = 0; i < cfg->n_entries; i++) {
        const sim_entry *e = &cfg->entries[i];
        len += strlen(e->section) + 3 + strlen(e->key) + 3 + strlen(e->value) + 1;
    }
    char *out = malloc(len);
    if (!out)
        return NULL;
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < cfg->n_entries; i++) {
        const sim_entry *e = &cfg->entries[i];
        if (i == 0 || strcmp(e->section, cfg->entries[i - 1].section) != 0)
            used += (size_t)snprintf(out + used, len - used, "[%s]\n", e->section);
        used += (size_t)snprintf(out + used, len - used, "%s = %s\n", e->key, e->value);
    }
    return out;
}

const sim_entry *sim_config_find(const sim_config *cfg, const char *section,
                                 const char *key)
{
    for (int i = 0; i < cfg->n_entries; i++)
        if (strcasecmp(cfg->entries[i].section, section) == 0 &&
            strcasecmp(cfg->entries[i].key, key) == 0)
            return &cfg->entries[i];
    return NULL;
}

int sim_config_error(const sim_config *cfg, const char *section, const char *key,
                     int code, sim_err *err, const char *fmt, ...)
{
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const sim_entry *e = sim_config_find(cfg, section, key);
    if (e && e->line > 0)
        return sim_err_set(err, code, "%s:%d: [%s] %s: %s", cfg->path, e->line, section, key,
                           msg);
    if (e && e->line < 0)
        return sim_err_set(err, code, "--set %s.%s: %s", section, key, msg);
    if (e)
        return sim_err_set(err, code, "%s: [%s] %s (default): %s", cfg->path, section, key,
                           msg);
    return sim_err_set(err, code, "%s: [%s] %s: %s", cfg->path, section, key, msg);
}

/* Parses an entry's canonical text by type; errors name the entry. */
static int get_typed(const sim_config *cfg, const char *section, const char *key,
                     sim_key_type type, void *out, sim_err *err)
{
    sim_err local;
    if (!err)
        err = &local;
    const sim_entry *e = sim_config_find(cfg, section, key);
    if (!e)
        return sim_config_error(cfg, section, key, SIM_ECONFIG, err, "no such key");
    int rc = type == SIM_KEY_INT    ? sim_parse_int(e->value, out, err)
             : type == SIM_KEY_BOOL ? sim_parse_bool(e->value, out, err)
             : type == SIM_KEY_TIME ? sim_parse_time(e->value, out, err)
                                    : sim_parse_double(e->value, out, err);
    if (!rc)
        return 0;
    char msg[sizeof err->msg];
    memcpy(msg, err->msg, sizeof msg);
    return sim_config_error(cfg, section, key, SIM_ECONFIG, err, "%s", msg);
}

int sim_config_get_double(const sim_config *cfg, const char *section, const char *key,
                          double *out, sim_err *err)
{
    return get_typed(cfg, section, key, SIM_KEY_DOUBLE, out, err);
}

int sim_config_get_int(const sim_config *cfg, const char *section, const char *key,
                       int64_t *out, sim_err *err)
{
    return get_typed(cfg, section, key, SIM_KEY_INT, out, err);
}

int sim_config_get_bool(const sim_config *cfg, const char *section, const char *key,
                        int *out, sim_err *err)
{
    return get_typed(cfg, section, key, SIM_KEY_BOOL, out, err);
}

int sim_config_get_time(const sim_config *cfg, const char *section, const char *key,
                        sim_time *out, sim_err *err)
{
    return get_typed(cfg, section, key, SIM_KEY_TIME, out, err);
}

const char *sim_config_get_string(const sim_config *cfg, const char *section,
                                  const char *key)
{
    const sim_entry *e = sim_config_find(cfg, section, key);
    return e ? e->value : NULL;
}
