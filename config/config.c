/* Experiment configuration (see config.h): the schema, reading, resolving
 * and the resolved entries. The file is read whole and fed to inih line by
 * line through our own reader, which counts lines (so every handler call
 * knows its line), strips comments, rejects unknown sections and lines inih
 * would misread (leading blanks would make a continuation line), and stops
 * parsing at the first error. Values are collected raw, then --set
 * overrides replace them, then every schema key is resolved in schema
 * order: parsed, range-checked, stored in its typed field and given its
 * canonical text (one value at a time by config_values.c). Method keys of
 * [algorithm] are resolved last, once the algorithm name is known. Nothing
 * here is global except the resolvers, which are set once at start-up. */
#include "config/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "config/config_impl.h"

/* The enum value of every word of the common choice keys. */
static const sim_choice eval_model_values[] = {
    {"average", SIM_EVAL_AVERAGE}, {"worker0", SIM_EVAL_WORKER0}, {NULL, 0}};
static const sim_choice sharing_values[] = {
    {"fair", SIM_SHARE_FAIR}, {"none", SIM_SHARE_NONE}, {NULL, 0}};
static const sim_choice routing_values[] = {
    {"shortest", SIM_ROUTE_SHORTEST}, {"ecmp", SIM_ROUTE_ECMP}, {NULL, 0}};
static const sim_choice collective_values[] = {
    {"ring", SIM_COLL_RING}, {"tree", SIM_COLL_TREE}, {"ps", SIM_COLL_PS},
    {"hierarchical", SIM_COLL_HIER}, {NULL, 0}};
static const sim_choice weights_values[] = {
    {"metropolis", SIM_WEIGHTS_METROPOLIS}, {"uniform", SIM_WEIGHTS_UNIFORM},
    {"metropolis_lazy", SIM_WEIGHTS_METROPOLIS_LAZY}, {NULL, 0}};
static const sim_choice sparse_values[] = {
    {"auto", SIM_SPARSE_AUTO}, {"off", SIM_SPARSE_OFF}, {NULL, 0}};
static const sim_choice normalize_values[] = {
    {"none", SIM_NORMALIZE_NONE}, {"standard", SIM_NORMALIZE_STANDARD}, {NULL, 0}};
static const sim_choice init_values[] = {
    {"same", SIM_INIT_SAME}, {"independent", SIM_INIT_INDEPENDENT}, {NULL, 0}};
static const sim_choice wire_dtype_values[] = {
    {"fp32", SIM_WIRE_FP32}, {"fp16", SIM_WIRE_FP16}, {"bf16", SIM_WIRE_BF16}, {NULL, 0}};

/* clang-format off */
const sim_key sim_config_keys[] = {
    {"experiment", "name", "", SIM_KEY_STRING, NULL, "run name (default: the file's base name)"},
    {"experiment", "seed", "1", SIM_KEY_INT, NULL, "master seed; every random stream derives from it"},
    {"experiment", "max_iterations", "0", SIM_KEY_INT, NULL, "synchronous rounds or applied updates (0 = no limit)"},
    {"experiment", "max_time", "0", SIM_KEY_TIME, NULL, "simulated time limit (0 = no limit)"},
    {"experiment", "max_epochs", "1", SIM_KEY_DOUBLE, NULL, "passes over the training set, summed over workers (0 = no limit); the default 1 applies only when no other limit is set"},
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
    {"network", "topology", "star", SIM_KEY_STRING, NULL, "physical network: star | ring | torus(4, 4) | complete | fat_tree(4) | ideal | file(NET.graphml) | hierarchical(NODES, PER_NODE) | dgx1_v100(NODES) | dgx_a100(NODES) | pcie4(NODES)"},
    {"network", "latency", "5us", SIM_KEY_TIME, NULL, "latency per link"},
    {"network", "bandwidth", "10Gbps", SIM_KEY_RATE, NULL, "bandwidth per link"},
    {"network", "sharing", "fair", SIM_KEY_CHOICE, "fair|none", "fair: max-min fair sharing of links; none: alpha-beta"},
    {"network", "routing", "shortest", SIM_KEY_CHOICE, "shortest|ecmp", "shortest: one shortest path per host pair; ecmp: each message hashed over the equal-cost paths (fat trees)"},
    {"network", "collective", "ring", SIM_KEY_CHOICE, "ring|tree|ps|hierarchical", "all-reduce algorithm (hierarchical: reduce inside each server, ring among servers, broadcast inside; needs servers of GPUs)"},
    {"network", "intra_latency", "1us", SIM_KEY_TIME, NULL, "latency of a link inside a server of hierarchical(NODES, PER_NODE)"},
    {"network", "intra_bandwidth", "150GB/s", SIM_KEY_RATE, NULL, "bandwidth of each GPU's link inside a server of hierarchical(NODES, PER_NODE) (NVLink class)"},
    {"topology", "graph", "ring", SIM_KEY_STRING, NULL, "logical gossip graph"},
    {"topology", "weights", "metropolis", SIM_KEY_CHOICE, "metropolis|uniform|metropolis_lazy", "mixing weights: metropolis (any graph), uniform (regular graphs), metropolis_lazy ((I + W) / 2 of metropolis: eigenvalues in [0, 1])"},
    {"algorithm", "name", "allreduce_sgd", SIM_KEY_STRING, NULL, "training method (dtsim list algorithms)"},
    {"algorithm", "lr", "0.1", SIM_KEY_DOUBLE, NULL, "learning rate (>= 0; 0 = no gradient steps, e.g. pure gossip)"},
    {"algorithm", "momentum", "0", SIM_KEY_DOUBLE, NULL, "momentum, in [0, 1)"},
    {"algorithm", "nesterov", "false", SIM_KEY_BOOL, NULL, "Nesterov momentum"},
    {"algorithm", "weight_decay", "0", SIM_KEY_DOUBLE, NULL, "L2 weight decay (>= 0)"},
    {"algorithm", "optimizer", "sgd", SIM_KEY_STRING, NULL, "update rule"},
    {"algorithm", "beta1", "0.9", SIM_KEY_DOUBLE, NULL, "adam, adamw, lamb: first-moment decay, in [0, 1) (sgd uses momentum)"},
    {"algorithm", "beta2", "0.999", SIM_KEY_DOUBLE, NULL, "adam, adamw, lamb: second-moment decay, in [0, 1)"},
    {"algorithm", "eps", "1e-8", SIM_KEY_DOUBLE, NULL, "adam, adamw, lamb: added to sqrt(v), > 0"},
    {"algorithm", "bias_correction", "true", SIM_KEY_BOOL, NULL, "adam, adamw, lamb: divide m and v by 1 - beta^t (DeepSpeed's 1-bit methods: false)"},
    {"algorithm", "lamb_min_trust", "0.01", SIM_KEY_DOUBLE, NULL, "lamb: lower bound of the per-layer trust ratio (>= 0)"},
    {"algorithm", "lamb_max_trust", "10", SIM_KEY_DOUBLE, NULL, "lamb: upper bound of the trust ratio (>= lamb_min_trust)"},
    {"algorithm", "clip", "0", SIM_KEY_DOUBLE, NULL, "clip every stochastic gradient to this Euclidean norm (0 = off)"},
    {"algorithm", "bucket", "0", SIM_KEY_SIZE, NULL, "gradient bucket size: bucket all-reduces overlap the backward pass (PyTorch DDP: 25MiB); 0 = one all-reduce after it"},
    {"algorithm", "batch", "32", SIM_KEY_STRING, NULL, "samples per worker step, or full (the worker's whole shard)"},
    {"algorithm", "compressor", "none", SIM_KEY_STRING, NULL, "message compressor"},
    {"algorithm", "error_feedback", "true", SIM_KEY_BOOL, NULL, "compressors keep each worker's residual and add it to its next message"},
    {"algorithm", "lr_milestones", "none", SIM_KEY_STRING, NULL, "epochs at which lr is multiplied by lr_decay, e.g. 5, 8 (none = constant)"},
    {"algorithm", "lr_decay", "0.1", SIM_KEY_DOUBLE, NULL, "factor applied at each milestone, in (0, 1]"},
    {"algorithm", "warmup_epochs", "0", SIM_KEY_DOUBLE, NULL, "linear warm-up from lr/10 to lr over this many epochs"},
    {"workload", "model", "softmax", SIM_KEY_STRING, NULL, "model trained"},
    {"workload", "dataset", "fashion_mnist", SIM_KEY_STRING, NULL, "data set"},
    {"workload", "test_fraction", "0.1", SIM_KEY_DOUBLE, NULL, "held out when the dataset has no test part, in [0, 1)"},
    {"workload", "normalize", "none", SIM_KEY_CHOICE, "none|standard", "feature normalisation"},
    {"workload", "sparse", "auto", SIM_KEY_CHOICE, "auto|off", "LIBSVM rows: auto = kept sparse (CSR) for linreg, logreg and softmax, a dense copy for other models; off = always a dense copy (at most 2^28 values)"},
    {"workload", "partition", "iid", SIM_KEY_STRING, NULL, "split of the training set across workers"},
    {"workload", "init", "same", SIM_KEY_CHOICE, "same|independent", "same: one initial model; independent: a draw per worker"},
    {"workload", "proxy", "none", SIM_KEY_STRING, NULL, "none | resnet50 | vgg16 | bert_large | gpt2 | ..."},
    {"workload", "sim_params", "0", SIM_KEY_INT, NULL, "if > 0: parameter count used for message sizes"},
    {"workload", "sim_flops", "0", SIM_KEY_DOUBLE, NULL, "if > 0: training FLOPs per sample used for compute time"},
    {"workload", "wire_dtype", "fp32", SIM_KEY_CHOICE, "fp32|fp16|bf16", "bytes per value on the wire"},
    {"workload", "grad_noise", "none", SIM_KEY_STRING, NULL, "noise added to every stochastic gradient: none | gaussian(SIGMA) | subweibull(THETA, SIGMA)"},
    {"faults", "schedule", "none", SIM_KEY_STRING, NULL, "fault events: none, or a CSV file time,event,target,value (crash, rejoin, slowdown, link)"},
    {"faults", "mtbf", "none", SIM_KEY_STRING, NULL, "random crashes: none, or each worker's up-time distribution, e.g. exponential(300s)"},
    {"faults", "downtime", "none", SIM_KEY_STRING, NULL, "time a randomly crashed worker stays down before it rejoins: none (never) or a distribution, e.g. constant(30s); unused without mtbf"},
    {"faults", "sync_timeout", "1s", SIM_KEY_TIME, NULL, "synchronous methods: how long a collective or a gossip step waits for a crashed peer before the survivors go on; the network re-sends a message lost on a down link this long after the loss"},
    {NULL, NULL, NULL, SIM_KEY_STRING, NULL, NULL},
};
/* clang-format on */

static const struct {
    const char *section, *key;
    const sim_choice *values;
} choice_tables[] = {
    {"experiment", "eval_model", eval_model_values},
    {"network", "sharing", sharing_values},
    {"network", "routing", routing_values},
    {"network", "collective", collective_values},
    {"topology", "weights", weights_values},
    {"workload", "normalize", normalize_values},
    {"workload", "sparse", sparse_values},
    {"workload", "init", init_values},
    {"workload", "wire_dtype", wire_dtype_values},
};

const sim_choice *sim_config_choice_values(const char *section, const char *key)
{
    for (size_t i = 0; i < sizeof choice_tables / sizeof choice_tables[0]; i++)
        if (strcmp(choice_tables[i].section, section) == 0 &&
            strcmp(choice_tables[i].key, key) == 0)
            return choice_tables[i].values;
    return NULL;
}

static const char *const sections[] = {"experiment", "workers",   "network",
                                       "topology",   "algorithm", "workload", "faults"};
#define N_SECTIONS ((int)(sizeof sections / sizeof sections[0]))
#define KNOWN_SECTIONS "experiment, workers, network, topology, algorithm, workload, faults"

static sim_config_algo_keys_fn algo_resolver;

void sim_config_set_algo_resolver(sim_config_algo_keys_fn fn) { algo_resolver = fn; }

static sim_config_names_fn algo_names;

void sim_config_set_algo_names(sim_config_names_fn fn) { algo_names = fn; }

/* ---- small text helpers ---- */

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
    /* a double-quoted value read by reader(), which hands inih "key ="
     * and the handler this instead */
    int quoted_pending;
    char quoted[600];
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

/* Names other tools use for a key, so that "learning_rate" finds "lr". */
static const struct {
    const char *alias, *section, *key;
} key_aliases[] = {
    {"learning_rate", "algorithm", "lr"},  {"lr_rate", "algorithm", "lr"},
    {"batch_size", "algorithm", "batch"},  {"batchsize", "algorithm", "batch"},
    {"minibatch", "algorithm", "batch"},
    {"method", "algorithm", "name"},       {"algorithm", "algorithm", "name"},
    {"optim", "algorithm", "optimizer"},   {"compression", "algorithm", "compressor"},
    {"workers", "workers", "count"},       {"n_workers", "workers", "count"},
    {"num_workers", "workers", "count"},   {"nodes", "workers", "count"},
    {"epochs", "experiment", "max_epochs"}, {"iterations", "experiment", "max_iterations"},
    {"steps", "experiment", "max_iterations"}, {"max_steps", "experiment", "max_iterations"},
    {"time", "experiment", "max_time"},    {"bw", "network", "bandwidth"},
    {"link_bandwidth", "network", "bandwidth"}, {"link_latency", "network", "latency"},
    {"network", "network", "topology"},    {"topology", "topology", "graph"},
    {"mixing", "topology", "weights"},     {"data", "workload", "dataset"},
};

/* "did you mean 'lr'?" (an alias or a close name among the section's
 * common keys and `extra`, a method's keys), else the known keys. */
static void suggest_key(const char *section, const char *key, const sim_key *extra,
                        char *buf, size_t len)
{
    for (size_t i = 0; i < sizeof key_aliases / sizeof key_aliases[0]; i++)
        if (strcasecmp(key_aliases[i].alias, key) == 0 &&
            strcmp(key_aliases[i].section, section) == 0) {
            snprintf(buf, len, "did you mean '%s'?", key_aliases[i].key);
            return;
        }
    for (size_t i = 0; i < sizeof key_aliases / sizeof key_aliases[0]; i++)
        if (strcasecmp(key_aliases[i].alias, key) == 0) {
            snprintf(buf, len, "did you mean [%s] %s?", key_aliases[i].section,
                     key_aliases[i].key);
            return;
        }
    char known[1024];
    size_t used = 0;
    known[0] = '\0';
    for (const sim_key *k = sim_config_keys; k->key && used < sizeof known; k++)
        if (strcmp(k->section, section) == 0)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                     used ? ", " : "", k->key);
    for (const sim_key *k = extra; k && k->key && used < sizeof known; k++)
        if (!schema_find(section, k->key))
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                     used ? ", " : "", k->key);
    char hint[96];
    sim_suggest(key, known, hint, sizeof hint);
    if (hint[0]) {
        snprintf(buf, len, "%.*s", (int)strlen(hint) - 1, hint); /* no trailing blank */
        return;
    }
    /* a key of another section? */
    for (const sim_key *k = sim_config_keys; k->key; k++)
        if (strcasecmp(k->key, key) == 0) {
            snprintf(buf, len, "did you mean [%s] %s?", k->section, k->key);
            return;
        }
    snprintf(buf, len, "known: %s", known);
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
        char hint[1100];
        suggest_key(section, key, NULL, hint, sizeof hint);
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
    if (sim_config_copy_trimmed(it->value, sizeof it->value, value))
        return fail(l, SIM_ECONFIG, "%s: value too long (max %zu characters)", where,
                    sizeof it->value - 1);
    it->line = line;
    it->set_text[0] = '\0';
    if (set_text)
        snprintf(it->set_text, sizeof it->set_text, "%s", set_text);
    return 0;
}

/* The value of a line "key = \"...\"" (s: just after the opening quote)
 * into out, with the escapes \" \\ \n \r \t; *end = after the closing
 * quote. -1: no closing quote, unknown escape or too long. */
static int quoted_decode(const char *s, char *out, size_t size, const char **end)
{
    size_t n = 0;
    for (; *s && *s != '"'; s++) {
        char c = *s;
        if (c == '\\') {
            s++;
            c = *s == '"' || *s == '\\' ? *s : *s == 'n' ? '\n' : *s == 'r' ? '\r'
                : *s == 't' ? '\t' : '\0';
            if (c == '\0')
                return -1;
        }
        if (n + 1 >= size)
            return -1;
        out[n++] = c;
    }
    if (*s != '"')
        return -1;
    out[n] = '\0';
    *end = s + 1;
    return 0;
}

/* A key line whose value starts with '"': decodes the value into
 * l->quoted and cuts the line to "key =" (comment stripping and inih never
 * see the value). Returns -1 after a failure. */
static int quoted_take(loader *l, char *s)
{
    if (*s == ';' || *s == '#' || *s == '[')
        return 0;
    char *eq = strpbrk(s, "=:");
    if (!eq)
        return 0;
    char *v = eq + 1;
    while (isspace((unsigned char)*v))
        v++;
    if (*v != '"')
        return 0;
    const char *end = NULL;
    if (quoted_decode(v + 1, l->quoted, sizeof l->quoted, &end) != 0)
        return fail(l, SIM_ECONFIG, "%s:%d: bad quoted value (a closing '\"' is missing, an"
                                    " escape is not one of \\\" \\\\ \\n \\r \\t, or it is"
                                    " too long)", l->path, l->lineno);
    while (isspace((unsigned char)*end))
        end++;
    if (*end && *end != ';' && *end != '#')
        return fail(l, SIM_ECONFIG, "%s:%d: unexpected text after the quoted value", l->path,
                    l->lineno);
    eq[1] = '\0';
    l->quoted_pending = 1;
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
    s = sim_str_trim(s);
    l->quoted_pending = 0;
    if (quoted_take(l, s) < 0)
        goto out;
    if (*s == ';' || *s == '#')
        *s = '\0';
    for (char *p = s; *p; p++)
        if (*p == ';' && p > s && isspace((unsigned char)p[-1])) {
            *p = '\0';
            break;
        }
    s = sim_str_trim(s);

    char out[600];
    if (*s == '[') {
        char *close = strchr(s, ']');
        if (!close) {
            fail(l, SIM_ECONFIG, "%s:%d: expected ']' after the section name", l->path,
                 l->lineno);
            goto out;
        }
        *close = '\0';
        if (*sim_str_trim(close + 1)) {
            fail(l, SIM_ECONFIG, "%s:%d: unexpected text after ']'", l->path, l->lineno);
            goto out;
        }
        char *name = sim_str_trim(s + 1);
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
    if (l->quoted_pending) {
        l->quoted_pending = 0;
        value = l->quoted;
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
    char *s = sim_str_trim(section), *k = sim_str_trim(key);
    if (!*s || !*k)
        return fail(l, SIM_EUSAGE, "--set %s: expected SECTION.KEY=VALUE", text);
    return item_record(l, s, k, eq + 1, -1, text);
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
    if (sim_config_copy_trimmed(e->raw, sizeof e->raw, raw))
        e->raw[0] = '\0';
    e->line = it ? it->line : 0;

    sim_err *err = l->err;
    int rc = sim_config_value_resolve(cfg, k, e->raw, e->value, sizeof e->value, store_common,
                                      err);
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
            char known[1024] = "", hint[96];
            size_t used = 0;
            for (int i = 0; algo_names && algo_names(i) && used < sizeof known - 64; i++)
                used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                         i ? ", " : "", algo_names(i));
            sim_suggest(cfg->algorithm, known, hint, sizeof hint);
            if (!known[0])
                return sim_config_error(&tmp, "algorithm", "name", SIM_ECONFIG, l->err,
                                        "unknown algorithm '%s' (dtsim list algorithms)",
                                        cfg->algorithm);
            return sim_config_error(&tmp, "algorithm", "name", SIM_ECONFIG, l->err,
                                    "unknown algorithm '%s' (%sknown: %s)", cfg->algorithm,
                                    hint, known);
        }
        for (int i = 0; i < l->n_items; i++) {
            item *it = &l->items[i];
            if (it->is_common || strcmp(it->section, "algorithm") != 0)
                continue;
            if (!table_find(table, it->key)) {
                char where[700], hint[1100];
                suggest_key("algorithm", it->key, table, hint, sizeof hint);
                item_where(l, it, where, sizeof where);
                return fail(l, SIM_ECONFIG, "%s: unknown key for algorithm '%s' (%s)", where,
                            cfg->algorithm, hint);
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
        if (sim_config_is_key(k, "algorithm", "name"))
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

/* max_epochs' default (1) is the limit of a file that sets none of its
 * own: a file that writes a non-zero max_iterations, max_time or
 * target_accuracy but no max_epochs runs until that limit (max_epochs
 * becomes 0, and so reads its canonical text). */
static void default_limit(loader *l, sim_config *cfg)
{
    static const char *const limits[] = {"max_iterations", "max_time", "target_accuracy"};
    if (item_find(l, "experiment", "max_epochs"))
        return;
    int own = 0;
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        const item *it = item_find(l, "experiment", limits[i]);
        const sim_entry *e = sim_config_find(cfg, "experiment", limits[i]);
        own |= it && e && strcmp(e->value, "0") != 0 && strcmp(e->value, "0ns") != 0;
    }
    if (!own)
        return;
    for (int i = 0; i < cfg->n_entries; i++) {
        sim_entry *e = &cfg->entries[i];
        if (strcmp(e->section, "experiment") == 0 && strcmp(e->key, "max_epochs") == 0) {
            snprintf(e->value, sizeof e->value, "0");
            snprintf(e->raw, sizeof e->raw, "0");
        }
    }
    cfg->max_epochs = 0;
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
    if (!l.failed)
        default_limit(&l, cfg);
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

/* 1 when "key = value" would not load back as value: a value that starts
 * like a comment or a quote, holds an inline comment (blank then ';') or
 * a control character, or makes the line too long for inih. */
static int value_needs_quotes(const char *key, const char *v)
{
    if (*v == ';' || *v == '#' || *v == '"')
        return 1;
    for (const char *p = v; *p; p++)
        if (iscntrl((unsigned char)*p) || (*p == ';' && p > v && isspace((unsigned char)p[-1])))
            return 1;
    return strlen(key) + 3 + strlen(v) + 2 > INI_MAX_LINE;
}

/* Writes v in double quotes with \" \\ \n \r \t escapes; returns the
 * length (out may be NULL to measure). */
static size_t value_quote(char *out, const char *v)
{
    size_t n = 0;
    if (out)
        out[n] = '"';
    n++;
    for (const char *p = v; *p; p++) {
        char esc = *p == '"' ? '"' : *p == '\\' ? '\\' : *p == '\n' ? 'n' : *p == '\r' ? 'r'
                   : *p == '\t' ? 't' : 0;
        if (esc) {
            if (out) {
                out[n] = '\\';
                out[n + 1] = esc;
            }
            n += 2;
        } else {
            if (out)
                out[n] = *p;
            n++;
        }
    }
    if (out)
        out[n] = '"';
    return n + 1;
}

char *sim_config_canonical(const sim_config *cfg)
{
    size_t len = 1;
    for (int i = 0; i < cfg->n_entries; i++) {
        const sim_entry *e = &cfg->entries[i];
        len += strlen(e->section) + 3 + strlen(e->key) + 3 + value_quote(NULL, e->value) + 1;
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
        if (!value_needs_quotes(e->key, e->value)) {
            used += (size_t)snprintf(out + used, len - used, "%s = %s\n", e->key, e->value);
            continue;
        }
        used += (size_t)snprintf(out + used, len - used, "%s = ", e->key);
        used += value_quote(out + used, e->value);
        out[used++] = '\n';
        out[used] = '\0';
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
