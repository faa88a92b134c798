/* Private to the config layer: shared by config_keys.c (the key tables),
 * config_load.c (reading and resolving), config_values.c (one value:
 * parse, canonical text, typed field) and config.c (the resolved
 * entries). */
#ifndef DTSIM_CONFIG_CONFIG_IMPL_H
#define DTSIM_CONFIG_CONFIG_IMPL_H

#include <stddef.h>
#include <string.h>

#include "config/config.h"

/* k is [section] key (exact spelling, as in the schema). */
static inline int cfg_is_key(const cfg_key *k, const char *section, const char *key)
{
    return strcmp(k->section, section) == 0 && strcmp(k->key, key) == 0;
}

/* The common key [section] key (case-insensitive), or NULL. */
const cfg_key *cfg_key_find(const char *section, const char *key);

/* For a message about an unknown key: "did you mean 'lr'?" (an alias or a
 * close name among the section's common keys and extra, a method's keys,
 * which may be NULL), "did you mean [algorithm] lr?" (a key of another
 * section), else "known: ..." the section's keys. */
void cfg_key_suggest(const char *section, const char *key, const cfg_key *extra,
                            char *buf, size_t len);

/* The value of a line "key = \"...\"" (s: just after the opening quote)
 * into out, with the escapes \" \\ \n \r \t; *end = after the closing
 * quote. -1: no closing quote, unknown escape or too long. The inverse of
 * the quoting of cfg_canonical (config.c). */
int cfg_quoted_decode(const char *s, char *out, size_t size, const char **end);

/* Copies s without its leading and trailing blanks into buf; returns -1 if
 * it does not fit. */
int cfg_copy_trimmed(char *buf, size_t len, const char *s);

/* Resolves key k's raw text (trimmed) against the registries of sc (never
 * NULL): parses it by its type (common keys: also their special forms),
 * writes the canonical text into out (len bytes) and, for a common key,
 * checks its range and stores it into its field of cfg. Returns 0, or a
 * code with the reason in err (the caller prefixes where the value came
 * from). */
int cfg_value_resolve(const cfg_schema *sc, cfg_config *cfg, const cfg_key *k,
                             const char *raw, char *out, size_t len, int common, sim_err *err);

#endif
