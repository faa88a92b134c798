/* The option parser shared by every command (see options.h). One pass over
 * argv: --help or -h prints the help and stops; an option's value is
 * checked as it is met; anything else starting with '-' (but "-" alone, an
 * operand) is an unknown option; the first operand is the command's, a
 * second one an error (or, with spec->more, the next of a list). The missing operand is reported after the pass. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"

int cli_usage_error(const char *command, const char *fmt, const char *arg)
{
    fprintf(stderr, "dtsim %s: ", command);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'dtsim %s --help'.\n", command);
    return 2;
}

void cli_options_help(const cli_spec *spec, FILE *f)
{
    fputs(spec->head, f);
    for (const cli_opt *o = spec->opts; o->name; o++)
        if (o->help)
            fputs(o->help, f);
    if (spec->tail)
        fputs(spec->tail, f);
}

/* The option that arg names, its value in *value when it carries one
 * ("--x=V"); NULL when none does. A flag matches its name exactly. */
static const cli_opt *find(const cli_opt *opts, const char *arg, const char **value)
{
    *value = NULL;
    for (const cli_opt *o = opts; o->name; o++) {
        if (strcmp(arg, o->name) == 0 || (o->alias && strcmp(arg, o->alias) == 0))
            return o;
        size_t len = strlen(o->name);
        if (o->kind != CLI_OPT_FLAG && strncmp(arg, o->name, len) == 0 && arg[len] == '=') {
            *value = arg + len + 1;
            return o;
        }
    }
    return NULL;
}

/* Stores value in o's destination: 0, or the exit status of its error. */
static int store(const cli_spec *spec, const cli_opt *o, const char *value)
{
    switch (o->kind) {
    case CLI_OPT_FLAG:
        *(int *)o->dest = 1;
        return 0;
    case CLI_OPT_STRING:
        *(const char **)o->dest = value;
        return 0;
    case CLI_OPT_LIST: {
        cli_list *l = o->dest;
        if (l->n == l->cap)
            return cli_usage_error(spec->command, "too many %s options", o->name);
        l->items[l->n++] = value;
        return 0;
    }
    case CLI_OPT_INT: {
        char *end;
        errno = 0;
        long long x = strtoll(value, &end, 10);
        if (*end || errno || x < o->min || x > o->max)
            return cli_usage_error(spec->command, o->bad, value);
        *(long long *)o->dest = x;
        return 0;
    }
    case CLI_OPT_CALL:
        return o->call(spec->command, value, o->dest);
    }
    return 0;
}

int cli_options_parse(const cli_spec *spec, int argc, char **argv, int *status)
{
    *status = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *value;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cli_options_help(spec, stdout);
            return 1;
        }
        const cli_opt *o = find(spec->opts, a, &value);
        if (o) {
            if (o->kind != CLI_OPT_FLAG && !value) {
                if (i + 1 >= argc) {
                    *status = cli_usage_error(spec->command, "%s needs a value", a);
                    return 1;
                }
                value = argv[++i];
            }
            *status = store(spec, o, value);
            if (*status)
                return 1;
        } else if (a[0] == '-' && a[1]) {
            *status = cli_usage_error(spec->command, "unknown option '%s'", a);
            return 1;
        } else if (spec->operand && !*spec->operand) {
            *spec->operand = a;
        } else if (spec->more && spec->more->n < spec->more->cap) {
            spec->more->items[spec->more->n++] = a;
        } else if (spec->more) {
            char cap[32];
            snprintf(cap, sizeof cap, "%d", spec->more->cap + 1);
            *status = cli_usage_error(spec->command, "too many operands (at most %s)", cap);
            return 1;
        } else {
            *status = cli_usage_error(spec->command, "unexpected argument '%s'", a);
            return 1;
        }
    }
    if (spec->operand && !*spec->operand) {
        *status = cli_usage_error(spec->command, "%s", spec->missing);
        return 1;
    }
    return 0;
}
