/* The option parser of cli/options.c: every kind of option, "--x V" and
 * "--x=V", aliases, repeated options, a missing value, a bad number, an
 * unknown option, the operand, --help; the first error stops the parse and
 * is the one printed. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdarg.h>
#include <string.h>

#include "cli/options.h"

/* What the test table fills. */
typedef struct dests {
    int flag;
    const char *str;
    const char *items[2];
    cli_list list;
    long long num;
    const char *called; /* the value call() saw */
    const char *operand;
} dests;

static dests d;

static int call(const char *command, const char *value, void *dest)
{
    cr_assert_str_eq(command, "demo");
    cr_assert_eq(dest, &d);
    d.called = value;
    return strcmp(value, "fail") == 0 ? cli_usage_error(command, "call: no '%s'", value) : 0;
}

static const cli_opt opts[] = {
    CLI_FLAG("--flag", "-f", &d.flag, "  --flag, -f   a flag\n"),
    CLI_STRING("--str", "-s", &d.str, "  --str S      a string\n"),
    CLI_LIST("--item", &d.list, "  --item I     repeatable\n"),
    CLI_INT("--num", &d.num, -5, 100, "--num: expected -5 to 100, got '%s'", NULL),
    CLI_CALL("--call", call, &d, "  --call C     checked by a function\n"),
    CLI_END,
};

static const cli_spec spec = {.command = "demo", .head = "Usage: dtsim demo X\n\n", .opts = opts,
                              .tail = "\nThe end.\n", .operand = &d.operand,
                              .missing = "missing X"};

/* Parses the NULL-terminated arguments after "demo"; returns the parser's
 * result, the exit status in *status. */
static int parse(int *status, const char *first, ...)
{
    char *argv[32] = {"demo"};
    int argc = 1;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    memset(&d, 0, sizeof d);
    d.list = (cli_list){.items = d.items, .cap = 2};
    d.num = 7;
    return cli_options_parse(&spec, argc, argv, status);
}

static void expect_error(const char *text)
{
    fflush(stderr);
    cr_assert_stderr_eq_str(text);
}

Test(options, every_kind_takes_its_value_both_ways)
{
    int status;
    cr_assert_eq(parse(&status, "x", "--flag", "--str", "a", "--item=b", "--item", "c",
                       "--num=-5", "--call", "v", NULL),
                 0);
    cr_assert_eq(status, 0);
    cr_assert_eq(d.flag, 1);
    cr_assert_str_eq(d.str, "a");
    cr_assert_eq(d.list.n, 2);
    cr_assert_str_eq(d.items[0], "b");
    cr_assert_str_eq(d.items[1], "c");
    cr_assert_eq(d.num, -5);
    cr_assert_str_eq(d.called, "v");
    cr_assert_str_eq(d.operand, "x");

    cr_assert_eq(parse(&status, "--str=a=b", "--num", "100", "--call=", "x", NULL), 0);
    cr_assert_str_eq(d.str, "a=b");
    cr_assert_eq(d.num, 100);
    cr_assert_str_eq(d.called, "");
    cr_assert_eq(d.flag, 0);
}

Test(options, an_empty_number_is_zero)
{
    /* as `dtsim topo --seed=` always was */
    int status;
    cr_assert_eq(parse(&status, "--num=", "x", NULL), 0);
    cr_assert_eq(d.num, 0);
}

Test(options, aliases_match_exactly_and_take_the_next_argument)
{
    int status;
    cr_assert_eq(parse(&status, "-f", "-s", "v", "x", NULL), 0);
    cr_assert_eq(d.flag, 1);
    cr_assert_str_eq(d.str, "v");
}

Test(options, a_value_may_look_like_an_option)
{
    int status;
    cr_assert_eq(parse(&status, "--str", "--help", "-", NULL), 0);
    cr_assert_str_eq(d.str, "--help");
    cr_assert_str_eq(d.operand, "-", "a lone dash is an operand");
}

Test(options, the_last_string_wins)
{
    int status;
    cr_assert_eq(parse(&status, "--str", "a", "x", "--str=b", NULL), 0);
    cr_assert_str_eq(d.str, "b");
}

Test(options, help_stops_the_parse, .init = cr_redirect_stdout)
{
    int status = -1;
    cr_assert_eq(parse(&status, "-h", "--bogus", NULL), 1);
    cr_assert_eq(status, 0);
    fflush(stdout);
    cr_assert_stdout_eq_str("Usage: dtsim demo X\n\n"
                            "  --flag, -f   a flag\n"
                            "  --str S      a string\n"
                            "  --item I     repeatable\n"
                            "  --call C     checked by a function\n"
                            "\nThe end.\n");
}

Test(options, missing_value, .init = cr_redirect_stderr)
{
    int status;
    cr_assert_eq(parse(&status, "x", "-s", NULL), 1);
    cr_assert_eq(status, 2);
    expect_error("dtsim demo: -s needs a value\nTry 'dtsim demo --help'.\n");
}

Test(options, bad_numbers, .init = cr_redirect_stderr)
{
    const char *bad[] = {"101", "-6", "1x", "99999999999999999999", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int status;
        cr_assert_eq(parse(&status, "--num", bad[i], "x", NULL), 1, "'%s'", bad[i]);
        cr_assert_eq(status, 2);
        cr_assert_eq(d.num, 7, "'%s' stored", bad[i]);
    }
    expect_error("dtsim demo: --num: expected -5 to 100, got '101'\nTry 'dtsim demo --help'.\n"
                 "dtsim demo: --num: expected -5 to 100, got '-6'\nTry 'dtsim demo --help'.\n"
                 "dtsim demo: --num: expected -5 to 100, got '1x'\nTry 'dtsim demo --help'.\n"
                 "dtsim demo: --num: expected -5 to 100, got '99999999999999999999'\n"
                 "Try 'dtsim demo --help'.\n"
                 "dtsim demo: --num: expected -5 to 100, got '0x10'\nTry 'dtsim demo --help'.\n");
}

Test(options, unknown_options, .init = cr_redirect_stderr)
{
    int status;
    cr_assert_eq(parse(&status, "--flag=1", NULL), 1, "a flag takes no value");
    cr_assert_eq(status, 2);
    cr_assert_eq(parse(&status, "-s=v", NULL), 1, "an alias takes no =value");
    cr_assert_eq(parse(&status, "--strx", "v", NULL), 1, "a longer name is another option");
    cr_assert_eq(parse(&status, "--", NULL), 1);
    expect_error("dtsim demo: unknown option '--flag=1'\nTry 'dtsim demo --help'.\n"
                 "dtsim demo: unknown option '-s=v'\nTry 'dtsim demo --help'.\n"
                 "dtsim demo: unknown option '--strx'\nTry 'dtsim demo --help'.\n"
                 "dtsim demo: unknown option '--'\nTry 'dtsim demo --help'.\n");
}

Test(options, too_many_repeats, .init = cr_redirect_stderr)
{
    int status;
    cr_assert_eq(parse(&status, "--item", "a", "--item=b", "--item=c", "x", NULL), 1);
    cr_assert_eq(status, 2);
    cr_assert_eq(d.list.n, 2);
    expect_error("dtsim demo: too many --item options\nTry 'dtsim demo --help'.\n");
}

Test(options, operand_missing_or_twice, .init = cr_redirect_stderr)
{
    int status;
    cr_assert_eq(parse(&status, "--flag", NULL), 1);
    cr_assert_eq(status, 2);
    cr_assert_eq(parse(&status, "x", "y", NULL), 1);
    expect_error("dtsim demo: missing X\nTry 'dtsim demo --help'.\n"
                 "dtsim demo: unexpected argument 'y'\nTry 'dtsim demo --help'.\n");
}

Test(options, the_first_error_is_the_one_reported, .init = cr_redirect_stderr)
{
    int status;
    cr_assert_eq(parse(&status, "--call", "fail", "--num", "1000", NULL), 1);
    cr_assert_eq(status, 2);
    cr_assert_eq(parse(&status, "--bogus", "--help", NULL), 1);
    cr_assert_eq(status, 2, "--help after an error is not reached");
    expect_error("dtsim demo: call: no 'fail'\nTry 'dtsim demo --help'.\n"
                 "dtsim demo: unknown option '--bogus'\nTry 'dtsim demo --help'.\n");
}
