/* The one option parser of the command line, in the spirit of git's
 * parse-options: a command declares a table of its options (name, alias,
 * kind, destination, help lines) and one operand; cli_options_parse walks
 * argv once, left to right, so the first mistake is the one reported, and
 * prints the command's help for --help or -h. A value comes as "--x V" or
 * "--x=V" (an alias such as -o only as "-o V"); a flag takes no value, so
 * "--quiet=1" is an unknown option. Errors are usage errors (exit 2):
 *   dtsim CMD: --x needs a value
 *   dtsim CMD: unknown option '--y'
 *   dtsim CMD: unexpected argument 'b.ini'
 *   dtsim CMD: missing EXPERIMENT.ini
 * each followed by "Try 'dtsim CMD --help'." */
#ifndef DTSIM_CLI_OPTIONS_H
#define DTSIM_CLI_OPTIONS_H

#include <stdio.h>

typedef enum cli_opt_kind {
    CLI_OPT_FLAG,   /* no value: *(int *)dest = 1 */
    CLI_OPT_STRING, /* *(const char **)dest = the value; the last one wins */
    CLI_OPT_LIST,   /* the value appended to the cli_list at dest (repeatable) */
    CLI_OPT_INT,    /* *(long long *)dest = a decimal integer in [min, max] */
    CLI_OPT_CALL,   /* call(command, value, dest) checks and stores the value */
} cli_opt_kind;

/* The values of a repeatable option, in the order given. */
typedef struct cli_list {
    const char **items; /* the caller's array of cap entries */
    int n;              /* values stored */
    int cap;            /* one more is the usage error "too many --x options" */
} cli_list;

typedef struct cli_opt {
    const char *name;  /* "--db": matches "--db V" and "--db=V" */
    const char *alias; /* "-q", or NULL: matches exactly ("-o V" for a value) */
    cli_opt_kind kind;
    void *dest;        /* int, const char *, cli_list, long long, or call's */
    long long min;     /* CLI_OPT_INT: the smallest value accepted */
    long long max;     /* CLI_OPT_INT: the largest */
    const char *bad;   /* CLI_OPT_INT: the usage error for another value, with
                        * %s for it: "--jobs: expected ... got '%s'" */
    /* CLI_OPT_CALL: returns 0, or the exit status after printing the error */
    int (*call)(const char *command, const char *value, void *dest);
    const char *help;  /* its lines of the help text, or NULL (described in
                        * the lines of the option before it) */
} cli_opt;

#define CLI_FLAG(n, a, d, h) \
    {.name = (n), .alias = (a), .kind = CLI_OPT_FLAG, .dest = (d), .help = (h)}
#define CLI_STRING(n, a, d, h) \
    {.name = (n), .alias = (a), .kind = CLI_OPT_STRING, .dest = (d), .help = (h)}
#define CLI_LIST(n, d, h) {.name = (n), .kind = CLI_OPT_LIST, .dest = (d), .help = (h)}
#define CLI_INT(n, d, lo, hi, b, h)                                                          \
    {.name = (n), .kind = CLI_OPT_INT, .dest = (d), .min = (lo), .max = (hi), .bad = (b), \
     .help = (h)}
#define CLI_CALL(n, fn, d, h) \
    {.name = (n), .kind = CLI_OPT_CALL, .call = (fn), .dest = (d), .help = (h)}
#define CLI_END {.name = NULL}

/* A command's options, operand and help text. */
typedef struct cli_spec {
    const char *command;   /* "run": names the command in its errors */
    const char *head;      /* the help text before the options */
    const cli_opt *opts;   /* ends with CLI_END */
    const char *tail;      /* the help text after them, or NULL */
    const char **operand;  /* where the first operand goes; NULL: the command takes none */
    const char *missing;   /* the usage error without it: "missing DB" */
    cli_list *more;        /* where the operands after the first go; NULL: a second
                              operand is an error */
} cli_spec;

/* Parses argv[1..argc-1] into the table's destinations (argv[0] is the
 * command's name). Returns 0 when the command goes on, else 1 with *status
 * the exit status: 0 after printing the help to standard output, 2 (or a
 * CLI_OPT_CALL's status) after printing the error to standard error. */
int cli_options_parse(const cli_spec *spec, int argc, char **argv, int *status);

/* The help text: head, each option's help lines, tail. */
void cli_options_help(const cli_spec *spec, FILE *f);

/* Prints "dtsim CMD: " fmt (with arg) and the hint to standard error;
 * returns 2, the exit status of a usage error. */
int cli_usage_error(const char *command, const char *fmt, const char *arg);

#endif
