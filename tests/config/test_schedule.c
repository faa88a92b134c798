/* The fault-schedule parser (config/schedule.c): known rows, its errors
 * (file:line:column), and the file read whole (a NUL byte is an error
 * naming the file and line, not the end of the schedule). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/schedule.h"
#include "tests/common.h"

Test(schedule, parser_reads_rows_sorted_by_time)
{
    const char *text = "time,event,target,value\n"
                       "# comment\n"
                       "2s, rejoin, 3,\n"
                       "0.5s,crash,3,\n"
                       "\n"
                       "1s,slowdown,2,10\r\n"
                       "1s,link,0-8,1Gbps\n"
                       "1s,link,8-0,down\n"
                       "3s,LINK,1-2,up\n";
    cfg_fault *ev;
    int n;
    sim_err err = {0};
    cr_assert_eq(cfg_schedule_parse("f.csv", text, 4, 9, &ev, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, 6);
    cr_assert_eq(ev[0].time, 500000000);
    cr_assert_eq(ev[0].kind, CFG_FAULT_CRASH);
    cr_assert_eq(ev[0].target, 3);
    cr_assert_eq(ev[1].kind, CFG_FAULT_SLOWDOWN);
    cr_assert_eq(ev[1].value, 10.0);
    cr_assert_eq(ev[2].kind, CFG_FAULT_LINK);
    cr_assert_eq(ev[2].target, 0);
    cr_assert_eq(ev[2].target2, 8);
    cr_assert_eq(ev[2].value, 1.25e8);
    cr_assert_eq(ev[3].value, 0.0);
    cr_assert_eq(ev[3].target, 8);
    cr_assert_eq(ev[4].kind, CFG_FAULT_REJOIN);
    cr_assert_eq(ev[4].time, 2000000000);
    cr_assert_eq(ev[4].target2, -1);
    cr_assert_eq(ev[5].value, -1.0);
    free(ev);
}

static void parse_fails(const char *text, const char *expect)
{
    cfg_fault *ev = (cfg_fault *)1;
    int n = 7;
    sim_err err = {0};
    cr_assert_eq(cfg_schedule_parse("f.csv", text, 4, 9, &ev, &n, &err), SIM_ECONFIG);
    cr_assert_null(ev);
    cr_assert_eq(n, 0);
    cr_assert_str_eq(err.msg, expect);
}

Test(schedule, parser_errors_name_file_line_and_column)
{
    parse_fails("", "f.csv:1:1: expected the header time,event,target,value");
    parse_fails("t,e,x,v\n", "f.csv:1:1: expected the header time,event,target,value");
    parse_fails("time,event,target,value\n1s,crash,1\n",
                "f.csv:2:1: expected 4 fields time,event,target,value, got 3");
    parse_fails("time,event,target,value\n1s,crash,1,,\n",
                "f.csv:2:1: expected 4 fields time,event,target,value, got more");
    parse_fails("time,event,target,value\n\nsoon,crash,1,\n",
                "f.csv:3:1: expected a time such as 0.5s, got 'soon'");
    parse_fails("time,event,target,value\n1s, explode,1,\n",
                "f.csv:2:5: unknown event 'explode' (crash, rejoin, slowdown or link)");
    parse_fails("time,event,target,value\n1s,crash,4,\n",
                "f.csv:2:10: expected a worker id below the worker count, got '4'");
    parse_fails("time,event,target,value\n1s,crash,1,3\n",
                "f.csv:2:12: crash and rejoin take no value, got '3'");
    parse_fails("time,event,target,value\n1s,slowdown,1,0\n",
                "f.csv:2:15: expected a slowdown factor in (0, 1e6], got '0'");
    parse_fails("time,event,target,value\n1s,slowdown,1,1e300\n",
                "f.csv:2:15: expected a slowdown factor in (0, 1e6], got '1e300'");
    parse_fails("time,event,target,value\n1s,link,1,down\n",
                "f.csv:2:9: expected a link A-B of two hosts, got '1'");
    parse_fails("time,event,target,value\n1s,link,1-9,down\n",
                "f.csv:2:9: expected a link A-B of two different vertices below the vertex "
                "count, got '1-9'");
    parse_fails("time,event,target,value\n1s,link,1-2,fast\n",
                "f.csv:2:13: expected a rate such as 1Gbps, down or up, got 'fast'");
}


/* A file of len bytes (may hold NULs) at a temporary path. */
static void write_bytes(char *path, size_t size, const char *data, size_t len)
{
    snprintf(path, size, "/tmp/dtsim_schedule_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
}

Test(schedule, a_nul_byte_is_an_error_naming_file_and_line)
{
    static const char text[] = "time,event,target,value\n1s,crash,1,\n2s,cr\0ash,2,\n";
    char path[64], want[160];
    write_bytes(path, sizeof path, text, sizeof text - 1);
    cfg_fault *ev = NULL;
    int n = 0;
    sim_err err = {0};
    cr_assert_eq(cfg_schedule_load(path, 4, 9, &ev, &n, &err), SIM_EINPUT);
    cr_assert_null(ev);
    snprintf(want, sizeof want, "%s:3: a NUL byte at column 6: expected a fault schedule (CSV "
             "time,event,target,value), a text file", path);
    cr_assert_str_eq(err.msg, want);
    unlink(path);
}

Test(schedule, the_file_reads_as_the_text_does)
{
    static const char text[] = "time,event,target,value\n1s,crash,1,\n0.5s,slowdown,2,3\n";
    char path[64];
    write_bytes(path, sizeof path, text, sizeof text - 1);
    cfg_fault *ev = NULL;
    int n = 0;
    sim_err err = {0};
    cr_assert_eq(cfg_schedule_load(path, 4, 9, &ev, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_assert_eq(ev[0].kind, CFG_FAULT_SLOWDOWN);
    cr_assert_eq(ev[1].target, 1);
    free(ev);
    unlink(path);
}
