/* Loading an experiment (see config.h): reading and resolving. The file
 * is read whole and fed to inih line by line through our own reader, which counts lines (so every handler call
 * knows its line), strips comments, rejects unknown sections and lines inih
 * would misread (leading blanks would make a continuation line), and stops
 * parsing at the first error. Values are collected raw, then --set
 * overrides replace them, then every schema key is resolved in schema
 * order: parsed, range-checked, stored in its typed field and given its
 * canonical text (one value at a time by config_values.c). Method keys of
 * [algorithm] are resolved last, once the algorithm name is known, from
 * the schema the caller hands in (config.h). Nothing here is global. */
#include "config/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <ini.h>

#include "config/config_impl.h"
#include "config/input.h"
#include "sim/path.h"

static const char *const sections[] = {"experiment", "workers",   "network",
                                       "topology",   "algorithm", "workload", "faults"};
#define N_SECTIONS ((int)(sizeof sections / sizeof sections[0]))
#define KNOWN_SECTIONS "experiment, workers, network, topology, algorithm, workload, faults"

/* ---- small text helpers ---- */

static int section_index(const char *s)
{
    for (int i = 0; i < N_SECTIONS; i++)
        if (strcasecmp(s, sections[i]) == 0)
            return i;
    return -1;
}

static const cfg_key *table_find(const cfg_key *table, const char *key)
{
    for (const cfg_key *k = table; k && k->key; k++)
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
    int is_common;      /* a key of cfg_keys */
    const char *file;   /* NULL: the experiment file; else the calibration fragment */
    char scope[64];     /* a method-scoped value: the method's name, else "" */
} item;

typedef struct loader {
    const cfg_schema *schema; /* never NULL (an empty one instead) */
    const char *path;
    const char *text;
    size_t pos;
    int lineno;
    int failed;
    item *items;
    int n_items, cap_items;
    item *scoped;       /* method-scoped values, applied once the method is known */
    int n_scoped, cap_scoped;
    sim_err *err;
    char calib[SIM_PATH_MAX]; /* the calibration fragment's resolved path */
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
        snprintf(buf, len, "%s:%d: [%s%s%s] %s", it->file ? it->file : l->path, it->line,
                 it->scope, it->scope[0] ? ":" : "", it->section, it->key);
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


/* A new zeroed item at the end of *arr. NULL after a failure. */
static item *item_push(loader *l, item **arr, int *n, int *cap)
{
    if (*n == *cap) {
        int grown_cap = *cap ? 2 * *cap : 32;
        item *p = realloc(*arr, (size_t)grown_cap * sizeof *p);
        if (!p) {
            fail(l, SIM_ENOMEM, "%s: out of memory", l->path);
            return NULL;
        }
        *arr = p;
        *cap = grown_cap;
    }
    item *it = &(*arr)[(*n)++];
    memset(it, 0, sizeof *it);
    return it;
}

/* Sets an item's value (trimmed) and where it came from. */
static int item_set(loader *l, item *it, const char *value, int line, const char *set_text,
                    const char *where)
{
    if (cfg_copy_trimmed(it->value, sizeof it->value, value))
        return fail(l, SIM_ECONFIG, "%s: value too long (max %zu characters)", where,
                    sizeof it->value - 1);
    it->line = line;
    it->set_text[0] = '\0';
    if (set_text)
        snprintf(it->set_text, sizeof it->set_text, "%s", set_text);
    return 0;
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
    const cfg_key *k = cfg_key_find(section, key);
    if (!k && strcmp(section, "algorithm") != 0) {
        char hint[1100];
        cfg_key_suggest(section, key, NULL, hint, sizeof hint);
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
    if (!it && !(it = item_push(l, &l->items, &l->n_items, &l->cap_items)))
        return l->err->code;
    snprintf(it->section, sizeof it->section, "%s", section);
    snprintf(it->key, sizeof it->key, "%s", key);
    it->is_common = k != NULL;
    return item_set(l, it, value, line, set_text, where);
}

/* Records a method-scoped value ([METHOD:section] in the file, --set
 * METHOD:section.key=value): the method must be known and have the key;
 * it is applied by scoped_apply when the run's method is that one. */
static int scoped_record(loader *l, const char *scope, const char *section, const char *key,
                         const char *value, int line, const char *set_text)
{
    char where[700], name[64];
    if (line > 0)
        snprintf(where, sizeof where, "%s:%d: [%s:%s] %s", l->path, line, scope, section, key);
    else
        snprintf(where, sizeof where, "--set %s", set_text);
    if (cfg_copy_trimmed(name, sizeof name, scope) || !name[0])
        return fail(l, SIM_ECONFIG, "%s: expected a method name before ':'", where);
    for (char *c = name; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    const cfg_schema *sc = l->schema;
    const cfg_key *table = sc->algo_keys ? sc->algo_keys(name) : NULL;
    if (sc->algo_keys && !table)
        return fail(l, SIM_ECONFIG, "%s: unknown method '%s' in the scope '%s:' (dtsim list"
                    " algorithms)", where, name, name);
    int si = section_index(section);
    if (si < 0)
        return fail(l, SIM_ECONFIG, "%s: unknown section '%s' (known: %s)", where, section,
                    KNOWN_SECTIONS);
    section = sections[si];
    const cfg_key *k = cfg_key_find(section, key);
    if (k && cfg_is_key(k, "algorithm", "name"))
        return fail(l, SIM_ECONFIG, "%s: a method scope cannot set the method itself", where);
    if (!k && (strcmp(section, "algorithm") != 0 || (table && !table_find(table, key)))) {
        char hint[1100];
        cfg_key_suggest(section, key, strcmp(section, "algorithm") ? NULL : table, hint,
                        sizeof hint);
        return fail(l, SIM_ECONFIG, "%s: method '%s' has no key [%s] %s (%s)", where, name,
                    section, key, hint);
    }
    if (k)
        key = k->key;
    else if (table)
        key = table_find(table, key)->key;
    if (strlen(key) >= sizeof l->items[0].key)
        return fail(l, SIM_ECONFIG, "%s: key name too long", where);
    for (int i = 0; line > 0 && i < l->n_scoped; i++) {
        const item *o = &l->scoped[i];
        if (o->line > 0 && !strcmp(o->scope, name) && !strcmp(o->section, section) &&
            !strcasecmp(o->key, key))
            return fail(l, SIM_ECONFIG, "%s: duplicate key (first set on line %d)", where,
                        o->line);
    }
    item *it = item_push(l, &l->scoped, &l->n_scoped, &l->cap_scoped);
    if (!it)
        return l->err->code;
    snprintf(it->scope, sizeof it->scope, "%s", name);
    snprintf(it->section, sizeof it->section, "%s", section);
    snprintf(it->key, sizeof it->key, "%s", key);
    it->is_common = k != NULL;
    return item_set(l, it, value, line, set_text, where);
}

/* Applies the scoped values of the run's method (algorithm.name as
 * resolved from the file and the unscoped --set values), file values
 * first: a scoped value replaces an unscoped one from the same place or
 * the file, never an unscoped --set value given on the command line over
 * a scoped one of the file. */
static int scoped_apply(loader *l)
{
    char method[512];
    const item *named = item_find(l, "algorithm", "name");
    const cfg_key *nk = cfg_key_find("algorithm", "name");
    if (cfg_copy_trimmed(method, sizeof method, named ? named->value : nk->def))
        method[0] = '\0';
    for (int i = 0; i < l->n_scoped && !l->failed; i++) {
        const item *s = &l->scoped[i];
        if (strcasecmp(s->scope, method) != 0)
            continue;
        item *it = item_find(l, s->section, s->key);
        if (it && it->line < 0 && s->line > 0)
            continue;
        if (!it && !(it = item_push(l, &l->items, &l->n_items, &l->cap_items)))
            return l->err->code;
        *it = *s;
    }
    return l->failed ? l->err->code : 0;
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
    if (cfg_quoted_decode(v + 1, l->quoted, sizeof l->quoted, &end) != 0)
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
        /* [METHOD:section]: keys for runs of that method only */
        char *colon = strchr(name, ':');
        char *scope = "";
        if (colon) {
            *colon = '\0';
            scope = sim_str_trim(name);
            name = sim_str_trim(colon + 1);
        }
        int si = section_index(name);
        if (si < 0) {
            fail(l, SIM_ECONFIG, "%s:%d: [%s]: unknown section (known: %s)", l->path,
                 l->lineno, name, KNOWN_SECTIONS);
            goto out;
        }
        /* inih keeps section names of up to 49 characters */
        if (colon && (!*scope || strlen(scope) + strlen(sections[si]) + 1 > 49)) {
            fail(l, SIM_ECONFIG, "%s:%d: [%s:%s]: expected [METHOD:%s]", l->path, l->lineno,
                 scope, name, sections[si]);
            goto out;
        }
        snprintf(out, sizeof out, "[%s%s%s]", scope, colon ? ":" : "", sections[si]);
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
        /* a value longer than inih's line: inih gets "key =", the handler
         * the value (whose own limit names the key) */
        if (!l->quoted_pending && strlen(s) + 2 > (size_t)num &&
            (size_t)(eq - s) + 3 < (size_t)num) {
            if (cfg_copy_trimmed(l->quoted, sizeof l->quoted, eq + 1)) {
                *eq = '\0';
                fail(l, SIM_ECONFIG, "%s:%d: %s: value too long (max %zu characters)", l->path,
                     l->lineno, sim_str_trim(s), sizeof l->items[0].value - 1);
                goto out;
            }
            eq[1] = '\0';
            l->quoted_pending = 1;
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
    const char *colon = strchr(section, ':');
    if (colon) {
        char scope[64];
        snprintf(scope, sizeof scope, "%.*s", (int)(colon - section), section);
        scoped_record(l, scope, colon + 1, name, value ? value : "", l->lineno, NULL);
        return !l->failed;
    }
    item_record(l, section, name, value ? value : "", l->lineno, NULL);
    return !l->failed;
}

/* "SECTION.KEY=VALUE", or "METHOD:SECTION.KEY=VALUE" for runs of that
 * method only. */
static int apply_override(loader *l, const char *text)
{
    const char *eq = strchr(text, '=');
    const char *dot = eq ? memchr(text, '.', (size_t)(eq - text)) : NULL;
    const char *colon = dot ? memchr(text, ':', (size_t)(dot - text)) : NULL;
    const char *start = colon ? colon + 1 : text;
    char scope[64], section[64], key[128];
    if (!eq || !dot)
        return fail(l, SIM_EUSAGE, "--set %s: expected SECTION.KEY=VALUE", text);
    size_t nm = colon ? (size_t)(colon - text) : 0;
    size_t ns = (size_t)(dot - start), nk = (size_t)(eq - dot - 1);
    if (nm >= sizeof scope || ns >= sizeof section || nk >= sizeof key)
        return fail(l, SIM_ECONFIG, "--set %s: unknown key", text);
    memcpy(scope, text, nm);
    scope[nm] = '\0';
    memcpy(section, start, ns);
    section[ns] = '\0';
    memcpy(key, dot + 1, nk);
    key[nk] = '\0';
    char *s = sim_str_trim(section), *k = sim_str_trim(key);
    if (!*s || !*k)
        return fail(l, SIM_EUSAGE, "--set %s: expected SECTION.KEY=VALUE", text);
    if (colon)
        return scoped_record(l, scope, s, k, eq + 1, -1, text);
    return item_record(l, s, k, eq + 1, -1, text);
}


/* Fills entry e for key k from its item (or default), parsing the value;
 * store_common: also set the typed field. */
static int resolve(loader *l, cfg_config *cfg, const cfg_key *k, cfg_entry *e,
                   int store_common)
{
    item *it = item_find(l, store_common ? k->section : "algorithm", k->key);
    const char *raw = it ? it->value : k->def;
    snprintf(e->section, sizeof e->section, "%s", store_common ? k->section : "algorithm");
    snprintf(e->key, sizeof e->key, "%s", k->key);
    if (cfg_copy_trimmed(e->raw, sizeof e->raw, raw))
        e->raw[0] = '\0';
    e->line = it && !it->file ? it->line : 0; /* a calibration key counts as a default */

    sim_err *err = l->err;
    int rc = cfg_value_resolve(l->schema, cfg, k, e->raw, e->value, sizeof e->value,
                                      store_common, err);
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
    return strcmp(((const cfg_entry *)a)->key, ((const cfg_entry *)b)->key);
}

/* Resolves the method keys into m (allocated); returns count or < 0. */
static int resolve_method(loader *l, cfg_config *cfg, const cfg_entry *name_entry,
                          cfg_entry **m)
{
    const cfg_key *table = NULL;
    int n = 0;
    *m = NULL;
    const cfg_schema *sc = l->schema;
    if (sc->algo_keys) {
        table = sc->algo_keys(cfg->algorithm);
        if (!table) {
            cfg_config tmp = *cfg;
            tmp.entries = (cfg_entry *)name_entry;
            tmp.n_entries = 1;
            l->failed = 1;
            char known[1024] = "", hint[96];
            size_t used = 0;
            for (int i = 0; sc->algo_name && sc->algo_name(i) && used < sizeof known - 64; i++)
                used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                         i ? ", " : "", sc->algo_name(i));
            sim_suggest(cfg->algorithm, known, hint, sizeof hint);
            if (!known[0])
                return cfg_error(&tmp, "algorithm", "name", SIM_ECONFIG, l->err,
                                        "unknown algorithm '%s' (dtsim list algorithms)",
                                        cfg->algorithm);
            return cfg_error(&tmp, "algorithm", "name", SIM_ECONFIG, l->err,
                                    "unknown algorithm '%s' (%sknown: %s)", cfg->algorithm,
                                    hint, known);
        }
        for (int i = 0; i < l->n_items; i++) {
            item *it = &l->items[i];
            if (it->is_common || strcmp(it->section, "algorithm") != 0)
                continue;
            if (!table_find(table, it->key)) {
                char where[700], hint[1100];
                cfg_key_suggest("algorithm", it->key, table, hint, sizeof hint);
                item_where(l, it, where, sizeof where);
                return fail(l, SIM_ECONFIG, "%s: unknown key for algorithm '%s' (%s)", where,
                            cfg->algorithm, hint);
            }
        }
        for (const cfg_key *k = table; k->key; k++)
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
        for (const cfg_key *k = table; k->key; k++) {
            if (cfg_key_find("algorithm", k->key) || strlen(k->key) >= sizeof (*m)->key)
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
            cfg_key k = {"algorithm", it->key, "", CFG_KEY_STRING, NULL, NULL};
            if (resolve(l, cfg, &k, &(*m)[got], 0))
                return l->err->code;
            got++;
        }
        qsort(*m, (size_t)got, sizeof **m, cmp_entry_key);
    }
    return got;
}

static int resolve_all(loader *l, cfg_config *cfg)
{
    int n_schema = 0, last_algo = -1, name_idx = -1;
    for (const cfg_key *k = cfg_keys; k->key; k++, n_schema++) {
        if (!strcmp(k->section, "algorithm"))
            last_algo = n_schema;
        if (cfg_is_key(k, "algorithm", "name"))
            name_idx = n_schema;
    }
    cfg_entry *common = calloc((size_t)n_schema, sizeof *common);
    cfg_entry *method = NULL;
    if (!common)
        return fail(l, SIM_ENOMEM, "%s: out of memory", l->path);
    int rc = 0;
    for (int i = 0; i < n_schema && !rc; i++)
        rc = resolve(l, cfg, &cfg_keys[i], &common[i], 1);
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
static void default_limit(loader *l, cfg_config *cfg)
{
    static const char *const limits[] = {"max_iterations", "max_time", "target_accuracy"};
    if (item_find(l, "experiment", "max_epochs"))
        return;
    int own = 0;
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        const item *it = item_find(l, "experiment", limits[i]);
        const cfg_entry *e = cfg_find(cfg, "experiment", limits[i]);
        own |= it && e && strcmp(e->value, "0") != 0 && strcmp(e->value, "0ns") != 0;
    }
    if (!own)
        return;
    for (int i = 0; i < cfg->n_entries; i++) {
        cfg_entry *e = &cfg->entries[i];
        if (strcmp(e->section, "experiment") == 0 && strcmp(e->key, "max_epochs") == 0) {
            snprintf(e->value, sizeof e->value, "0");
            snprintf(e->raw, sizeof e->raw, "0");
        }
    }
    cfg->max_epochs = 0;
}

/* A fragment's value that the experiment replaces is still checked: the
 * fragment is wrong whoever overrides it. */
static void calibration_check(loader *c, const item *ci)
{
    const cfg_key *k = cfg_key_find(ci->section, ci->key);
    cfg_config *scratch = calloc(1, sizeof *scratch);
    char value[sizeof ((cfg_entry *)0)->value];
    if (!scratch) {
        fail(c, SIM_ENOMEM, "%s: out of memory", c->path);
        return;
    }
    if (k && cfg_value_resolve(c->schema, scratch, k, ci->value, value, sizeof value, 1,
                               c->err)) {
        char where[700];
        item_where(c, ci, where, sizeof where);
        c->failed = 1;
        sim_err_prefix(c->err, "%s", where);
    }
    free(scratch);
}

/* [network] calibration = FILE: the fragment's [network] keys join the
 * items, except those the experiment (or --set) gives itself. The file
 * resolves against the experiment file's folder. */
static int load_calibration(loader *l)
{
    item *it = item_find(l, "network", "calibration");
    char name[512];
    if (!it || cfg_copy_trimmed(name, sizeof name, it->value) || !name[0] ||
        strcasecmp(name, "none") == 0)
        return 0;
    char where[700], dir[SIM_PATH_MAX];
    item_where(l, it, where, sizeof where);
    sim_path_dir(l->path, dir, sizeof dir);
    char *text = NULL;
    struct stat st;
    if (sim_path_resolve(dir, name, l->calib, sizeof l->calib, l->err) ||
        (stat(l->calib, &st) == 0 && !S_ISREG(st.st_mode) &&
         sim_err_set(l->err, SIM_EINPUT, "%s: not a regular file", l->calib)) ||
        cfg_input_read(l->calib, "a calibration fragment (INI [network] keys)", &text, NULL,
                       l->err)) {
        l->failed = 1;
        return sim_err_prefix(l->err, "%s", where);
    }
    loader c;
    memset(&c, 0, sizeof c);
    c.schema = l->schema;
    c.path = l->calib;
    c.text = text ? text : "";
    c.err = l->err;
    int rc = ini_parse_stream(reader, &c, handler, &c);
    if (!c.failed && rc != 0)
        fail(&c, SIM_ECONFIG, "%s:%d: cannot parse this line", c.path, rc > 0 ? rc : c.lineno);
    for (int i = 0; i < c.n_items && !c.failed; i++) {
        item *ci = &c.items[i];
        if (strcmp(ci->section, "network") != 0 || strcmp(ci->key, "calibration") == 0)
            fail(&c, SIM_ECONFIG, "%s:%d: [%s] %s: a calibration file holds [network] keys only"
                 " (and no calibration)", c.path, ci->line, ci->section, ci->key);
    }
    if (!c.failed && c.n_items == 0)
        fail(&c, SIM_ECONFIG, "%s: an empty calibration fragment (expected [network] keys,"
             " as dtsim calibrate writes them)", c.path);
    for (int i = 0; i < c.n_items && !c.failed; i++) {
        item *ci = &c.items[i];
        if (item_find(l, ci->section, ci->key)) {
            calibration_check(&c, ci);
            continue;
        }
        if (item_record(l, ci->section, ci->key, ci->value, ci->line, NULL))
            break;
        item_find(l, ci->section, ci->key)->file = l->calib;
    }
    free(c.items);
    free(text);
    if (c.failed) {
        l->failed = 1;
        return sim_err_prefix(l->err, "%s", where);
    }
    return l->failed ? l->err->code : 0;
}

/* ---- public ---- */

int cfg_load_string(const cfg_schema *schema, const char *name,
                           const char *text, const char *const *overrides, int n_overrides,
                           cfg_config *cfg, sim_err *err)
{
    static const cfg_schema no_registries = {NULL, NULL, NULL, NULL};
    sim_err local;
    if (!err)
        err = &local;
    sim_err_clear(err);
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->path, sizeof cfg->path, "%s", name);

    loader l;
    memset(&l, 0, sizeof l);
    l.schema = schema ? schema : &no_registries;
    l.path = cfg->path;
    l.text = text ? text : "";
    l.err = err;

    int rc = ini_parse_stream(reader, &l, handler, &l);
    if (!l.failed && rc != 0)
        fail(&l, SIM_ECONFIG, "%s:%d: cannot parse this line", l.path, rc > 0 ? rc : l.lineno);
    for (int i = 0; i < n_overrides && !l.failed; i++)
        apply_override(&l, overrides[i]);
    if (!l.failed)
        load_calibration(&l);
    if (!l.failed)
        scoped_apply(&l);
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
    free(l.scoped);
    if (l.failed) {
        cfg_release(cfg);
        return err->code ? err->code : SIM_ECONFIG;
    }
    return 0;
}

int cfg_load(const cfg_schema *schema, const char *path,
                    const char *const *overrides, int n_overrides, cfg_config *cfg,
                    sim_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    char *text = NULL;
    if (cfg_input_read(path, "an experiment file (INI)", &text, NULL, err))
        return err->code;
    int rc = cfg_load_string(schema, path, text, overrides, n_overrides, cfg, err);
    free(text);
    return rc;
}
