/* The resolved configuration (see config.h): release, the canonical text,
 * entry lookup, the typed getters of method keys and the errors that name
 * an entry. Loading is config_load.c, the key tables config_keys.c, one
 * value's parsing config_values.c. */
#include "config/config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "config/config_impl.h"

void cfg_release(cfg_config *cfg)
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

/* The value of a line "key = \"...\"" (s: just after the opening quote)
 * into out, with the escapes \" \\ \n \r \t; *end = after the closing
 * quote. -1: no closing quote, unknown escape or too long. */
int cfg_quoted_decode(const char *s, char *out, size_t size, const char **end)
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

char *cfg_canonical(const cfg_config *cfg)
{
    size_t len = 1;
    for (int i = 0; i < cfg->n_entries; i++) {
        const cfg_entry *e = &cfg->entries[i];
        len += strlen(e->section) + 3 + strlen(e->key) + 3 + value_quote(NULL, e->value) + 1;
    }
    char *out = malloc(len);
    if (!out)
        return NULL;
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < cfg->n_entries; i++) {
        const cfg_entry *e = &cfg->entries[i];
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

const cfg_entry *cfg_find(const cfg_config *cfg, const char *section,
                                 const char *key)
{
    for (int i = 0; i < cfg->n_entries; i++)
        if (strcasecmp(cfg->entries[i].section, section) == 0 &&
            strcasecmp(cfg->entries[i].key, key) == 0)
            return &cfg->entries[i];
    return NULL;
}

int cfg_error(const cfg_config *cfg, const char *section, const char *key,
                     int code, sim_err *err, const char *fmt, ...)
{
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const cfg_entry *e = cfg_find(cfg, section, key);
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
static int get_typed(const cfg_config *cfg, const char *section, const char *key,
                     cfg_key_type type, void *out, sim_err *err)
{
    sim_err local;
    if (!err)
        err = &local;
    const cfg_entry *e = cfg_find(cfg, section, key);
    if (!e)
        return cfg_error(cfg, section, key, SIM_ECONFIG, err, "no such key");
    int rc = type == CFG_KEY_INT    ? sim_parse_int(e->value, out, err)
             : type == CFG_KEY_BOOL ? sim_parse_bool(e->value, out, err)
             : type == CFG_KEY_TIME ? sim_parse_time(e->value, out, err)
                                    : sim_parse_double(e->value, out, err);
    if (!rc)
        return 0;
    char msg[sizeof err->msg];
    memcpy(msg, err->msg, sizeof msg);
    return cfg_error(cfg, section, key, SIM_ECONFIG, err, "%s", msg);
}

int cfg_get_double(const cfg_config *cfg, const char *section, const char *key,
                          double *out, sim_err *err)
{
    return get_typed(cfg, section, key, CFG_KEY_DOUBLE, out, err);
}

int cfg_get_int(const cfg_config *cfg, const char *section, const char *key,
                       int64_t *out, sim_err *err)
{
    return get_typed(cfg, section, key, CFG_KEY_INT, out, err);
}

int cfg_get_bool(const cfg_config *cfg, const char *section, const char *key,
                        int *out, sim_err *err)
{
    return get_typed(cfg, section, key, CFG_KEY_BOOL, out, err);
}

int cfg_get_time(const cfg_config *cfg, const char *section, const char *key,
                        sim_time *out, sim_err *err)
{
    return get_typed(cfg, section, key, CFG_KEY_TIME, out, err);
}

const char *cfg_get_string(const cfg_config *cfg, const char *section,
                                  const char *key)
{
    const cfg_entry *e = cfg_find(cfg, section, key);
    return e ? e->value : NULL;
}

void cfg_net_transport(const cfg_config *cfg, sim_net_desc *d)
{
    d->efficiency = cfg->net_efficiency;
    d->message_overhead = cfg->message_overhead;
    d->collective_overhead = cfg->collective_overhead;
    d->efficiency_by_size = cfg->efficiency_by_size;
    d->overhead_by_size = cfg->overhead_by_size;
}
