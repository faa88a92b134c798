/* Fuzz target: fault schedules, [faults] schedule = FILE.csv
 * (config/schedule.c). The input is the CSV file, parsed for 4 workers
 * and 9 network vertices, from memory (cfg_schedule_parse) and from a file
 * (cfg_schedule_load, as a run reads it, whole: a NUL byte is an error). Properties of an accepted
 * schedule: both readings give the same events; the events are sorted by
 * time, every time is >= 0, every target is in range (a worker below 4, a
 * link of two different vertices below 9), a slowdown factor is > 0, a
 * link rate > 0, 0 (down) or -1 (up); and the events written back as CSV
 * (times in ns, rates in B/s) parse again to the same events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/schedule.h"
#include "tests/fuzz/fuzz_util.h"

#define WORKERS 4
#define HOSTS 9

static void check_events(const cfg_fault *ev, int n)
{
    for (int i = 0; i < n; i++) {
        const cfg_fault *e = &ev[i];
        if (e->time < 0 || (i > 0 && e->time < ev[i - 1].time))
            abort();
        switch (e->kind) {
        case CFG_FAULT_CRASH:
        case CFG_FAULT_REJOIN:
            if (e->target < 0 || e->target >= WORKERS || e->target2 != -1 || e->value != 0)
                abort();
            break;
        case CFG_FAULT_SLOWDOWN:
            if (e->target < 0 || e->target >= WORKERS || e->target2 != -1 || !(e->value > 0))
                abort();
            break;
        case CFG_FAULT_LINK:
            if (e->target < 0 || e->target >= HOSTS || e->target2 < 0 || e->target2 >= HOSTS ||
                e->target == e->target2 || !(e->value > 0 || e->value == 0 || e->value == -1))
                abort();
            break;
        default:
            abort();
        }
    }
}

static int same_events(const cfg_fault *a, int na, const cfg_fault *b, int nb)
{
    if (na != nb)
        return 0;
    for (int i = 0; i < na; i++)
        if (a[i].time != b[i].time || a[i].kind != b[i].kind || a[i].target != b[i].target ||
            a[i].target2 != b[i].target2 || a[i].value != b[i].value)
            return 0;
    return 1;
}

static const char *const names[] = {"crash", "rejoin", "slowdown", "link"};

/* The events as a schedule file (malloc'd). */
static char *write_back(const cfg_fault *ev, int n)
{
    size_t cap = 64 + (size_t)n * 96;
    char *t = malloc(cap);
    if (!t)
        abort();
    size_t len = (size_t)snprintf(t, cap, "time,event,target,value\n");
    for (int i = 0; i < n; i++) {
        const cfg_fault *e = &ev[i];
        char target[32], value[48] = "";
        if (e->kind == CFG_FAULT_LINK)
            snprintf(target, sizeof target, "%d-%d", e->target, e->target2);
        else
            snprintf(target, sizeof target, "%d", e->target);
        if (e->kind == CFG_FAULT_SLOWDOWN)
            snprintf(value, sizeof value, "%.17g", e->value);
        else if (e->kind == CFG_FAULT_LINK)
            snprintf(value, sizeof value, "%s",
                     e->value == 0 ? "down" : e->value < 0 ? "up" : "");
        if (e->kind == CFG_FAULT_LINK && e->value > 0)
            snprintf(value, sizeof value, "%.17gB/s", e->value);
        len += (size_t)snprintf(t + len, cap - len, "%lldns,%s,%s,%s\n", (long long)e->time,
                                names[e->kind], target, value);
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    cfg_fault *ev = NULL, *ev2 = NULL, *ev3 = NULL;
    int n = 0, n2 = 0, n3 = 0;
    sim_err err = {0}, err2 = {0};
    int rc = cfg_schedule_parse("f.csv", text, WORKERS, HOSTS, &ev, &n, &err);
    fuzz_report("cfg_schedule_parse", rc, &err);
    const char *path = fuzz_write_temp("schedule", ".csv", data, size);
    int rc2 = cfg_schedule_load(path, WORKERS, HOSTS, &ev2, &n2, &err2);
    fuzz_report("cfg_schedule_load", rc2, &err2);
    /* the file is read whole: with a NUL byte it is an input error naming
     * its line; without, the same result as the text */
    if (memchr(data, 0, size) ? rc2 != SIM_EINPUT || !strstr(err2.msg, ": a NUL byte at column")
                              : (rc == 0) != (rc2 == 0) ||
                                    (rc == 0 && !same_events(ev, n, ev2, n2)))
        abort();
    if (rc == 0) {
        check_events(ev, n);
        char *back = write_back(ev, n);
        sim_err err3 = {0};
        int rc3 = cfg_schedule_parse("back.csv", back, WORKERS, HOSTS, &ev3, &n3, &err3);
        fuzz_report("cfg_schedule_parse (written back)", rc3, &err3);
        if (rc3 != 0 || !same_events(ev, n, ev3, n3))
            abort();
        free(back);
    }
    free(ev);
    free(ev2);
    free(ev3);
    free(text);
    return 0;
}
