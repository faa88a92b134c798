/* `dtsim sweep`: grid expansion and validation, resume, and the local
 * engine that runs the points in this process or in up to `jobs` forked
 * processes.
 *
 * Invariants: every point is validated before any runs. A point is run
 * once per database: its run row is inserted only when no row of the same
 * config and seed is running, done or diverged, checked in the same write
 * transaction (an_db_set_claim), so concurrent sweeps and jobs share the
 * work. Rows left 'running' by a dead process are marked 'failed' by the
 * open (runs.pid, runs.host), so no job touches another's live rows. A forked child never uses a database connection it
 * inherited: the parent holds none while children run, and each child
 * opens its own. Children report through one pipe in fixed-size records
 * of at most PIPE_BUF bytes (atomic writes), and leave with _exit. */
#include "analysis/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_POINTS 1000000
#define MAX_JOBS 256

/* ---- parsing ------------------------------------------------------------ */

static int parse_u64(const char *s, const char *end, uint64_t *out)
{
    if (s == end)
        return -1;
    uint64_t v = 0;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return 0;
}

int an_sweep_parse_seeds(const char *text, uint64_t *lo, uint64_t *hi, sim_err *err)
{
    const char *dash = strchr(text, '-');
    const char *end = text + strlen(text);
    int bad = dash ? parse_u64(text, dash, lo) < 0 || parse_u64(dash + 1, end, hi) < 0
                   : parse_u64(text, end, lo) < 0;
    if (bad)
        return sim_err_set(err, SIM_EUSAGE,
                           "--seeds '%s': expected A-B or A (non-negative integers)", text);
    if (!dash)
        *hi = *lo;
    if (*hi < *lo)
        return sim_err_set(err, SIM_EUSAGE, "--seeds '%s': the range is empty (B < A)", text);
    if (*hi - *lo >= MAX_POINTS)
        return sim_err_set(err, SIM_EUSAGE, "--seeds '%s': more than %d seeds", text,
                           MAX_POINTS);
    return 0;
}

/* ---- the plan ----------------------------------------------------------- */

typedef struct grid_axis {
    char key[160];      /* "section.key" */
    char **values;
    int n;
} grid_axis;

void an_sweep_plan_release(an_sweep_plan *plan)
{
    if (!plan)
        return;
    for (int i = 0; i < plan->n_points; i++) {
        an_sweep_point *p = &plan->points[i];
        free(p->label);
        an_sweep_values_free(p->overrides, p->n_overrides);
        free(p->canonical);
    }
    free(plan->points);
    plan->points = NULL;
    plan->n_points = 0;
}

static int axis_parse(const char *text, grid_axis *ax, sim_err *err)
{
    const char *eq = strchr(text, '=');
    const char *dot = strchr(text, '.');
    if (!eq || !dot || dot > eq || dot == text || dot + 1 == eq)
        return sim_err_set(err, SIM_EUSAGE, "--grid '%s': expected SECTION.KEY=V1,V2,...",
                           text);
    size_t len = (size_t)(eq - text);
    if (len >= sizeof ax->key)
        return sim_err_set(err, SIM_EUSAGE, "--grid '%s': key too long", text);
    memcpy(ax->key, text, len);
    ax->key[len] = '\0';
    sim_err sub = {0};
    int n = an_sweep_split_values(eq + 1, &ax->values, &sub);
    if (n < 0)
        return sim_err_set(err, sub.code, "--grid %s: %s", ax->key, sub.msg);
    ax->n = n;
    return 0;
}

/* The key of an override "section.key=value" is the text before '='. */
static int same_key(const char *override, const char *key)
{
    size_t len = strlen(key);
    return strncmp(override, key, len) == 0 && override[len] == '=';
}

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = NULL;
    if (vasprintf(&out, fmt, ap) < 0)
        out = NULL;
    va_end(ap);
    return out;
}

/* Fills point i: overrides (sets, grid values, seed), label. */
static int point_fill(const an_sweep_opts *o, const grid_axis *axes, int n_axes,
                      int has_seeds, uint64_t seed_lo, uint64_t n_seeds, int i,
                      an_sweep_point *p)
{
    int n = o->n_sets + n_axes + (has_seeds ? 1 : 0);
    p->overrides = calloc((size_t)n, sizeof *p->overrides);
    if (!p->overrides)
        return -1;
    for (int k = 0; k < o->n_sets; k++)
        if (!(p->overrides[p->n_overrides++] = strdup(o->sets[k])))
            return -1;
    /* seeds vary fastest, then the last axis, ..., the first axis slowest */
    uint64_t rest = (uint64_t)i;
    uint64_t seed = seed_lo + rest % n_seeds;
    rest /= n_seeds;
    int *pick = calloc((size_t)n_axes + 1, sizeof *pick);
    if (!pick)
        return -1;
    for (int a = n_axes - 1; a >= 0; a--) {
        pick[a] = (int)(rest % (uint64_t)axes[a].n);
        rest /= (uint64_t)axes[a].n;
    }
    size_t cap = 1, len = 0;
    for (int a = 0; a < n_axes; a++)
        cap += strlen(axes[a].key) + strlen(axes[a].values[pick[a]]) + 2;
    cap += 48;
    p->label = malloc(cap);
    if (!p->label) {
        free(pick);
        return -1;
    }
    p->label[0] = '\0';
    for (int a = 0; a < n_axes; a++) {
        const char *v = axes[a].values[pick[a]];
        if (!(p->overrides[p->n_overrides++] = str_printf("%s=%s", axes[a].key, v))) {
            free(pick);
            return -1;
        }
        len += (size_t)snprintf(p->label + len, cap - len, "%s%s=%s", len ? " " : "",
                                axes[a].key, v);
    }
    free(pick);
    if (has_seeds) {
        if (!(p->overrides[p->n_overrides++] =
                  str_printf("experiment.seed=%llu", (unsigned long long)seed)))
            return -1;
        snprintf(p->label + len, cap - len, "%sexperiment.seed=%llu", len ? " " : "",
                 (unsigned long long)seed);
    }
    return 0;
}

/* Loads point p's config to validate it and take its canonical text; a
 * --set error caused by a grid value is reported as --grid. */
static int point_validate(const an_sweep_opts *o, an_sweep_point *p, int index, int total,
                          sim_err *err)
{
    cfg_config cfg;
    int ret = cfg_load(o->schema, o->experiment, (const char *const *)p->overrides,
                              p->n_overrides, &cfg, err);
    if (ret < 0) {
        for (int k = o->n_sets; k < p->n_overrides; k++) {
            size_t len = strlen(p->overrides[k]);
            if (strncmp(err->msg, "--set ", 6) == 0 &&
                strncmp(err->msg + 6, p->overrides[k], len) == 0 &&
                err->msg[6 + len] == ':') {
                char tail[sizeof err->msg];
                snprintf(tail, sizeof tail, "%s", err->msg + 6);
                snprintf(err->msg, sizeof err->msg, "--grid %.1000s", tail);
                return ret;
            }
        }
        if (p->label[0])
            sim_err_prefix(err, "sweep config %d of %d (%s)", index + 1, total, p->label);
        return ret;
    }
    if (o->check && (ret = o->check(o->check_ctx, &cfg, err)) < 0) {
        cfg_release(&cfg);
        if (p->label[0])
            sim_err_prefix(err, "sweep config %d of %d (%s)", index + 1, total, p->label);
        return ret;
    }
    p->canonical = cfg_canonical(&cfg);
    cfg_release(&cfg);
    if (!p->canonical)
        return sim_err_set(err, SIM_ENOMEM, "sweep: out of memory");
    return 0;
}

/* A method-scoped axis (--grid local_sgd:algorithm.local_steps=4,8) does
 * not change the runs of other methods: of points with the same canonical
 * text, the first stays. */
static void plan_drop_repeats(an_sweep_plan *plan)
{
    int kept = 0;
    for (int i = 0; i < plan->n_points; i++) {
        an_sweep_point *p = &plan->points[i];
        int repeat = 0;
        for (int j = 0; j < kept && !repeat; j++)
            repeat = strcmp(plan->points[j].canonical, p->canonical) == 0;
        if (repeat) {
            free(p->label);
            an_sweep_values_free(p->overrides, p->n_overrides);
            free(p->canonical);
        } else {
            plan->points[kept++] = *p;
        }
    }
    plan->n_points = kept;
}

int an_sweep_plan_build(const an_sweep_opts *o, an_sweep_plan *plan, sim_err *err)
{
    plan->points = NULL;
    plan->n_points = 0;
    if (!o->experiment)
        return sim_err_set(err, SIM_EUSAGE, "sweep: missing EXPERIMENT.ini");
    grid_axis *axes = calloc((size_t)o->n_grids + 1, sizeof *axes);
    if (!axes)
        return sim_err_set(err, SIM_ENOMEM, "sweep: out of memory");
    int ret = 0, n_axes = 0;
    uint64_t seed_lo = 0, seed_hi = 0;
    int has_seeds = o->seeds != NULL;
    if (has_seeds)
        ret = an_sweep_parse_seeds(o->seeds, &seed_lo, &seed_hi, err);
    uint64_t n_seeds = seed_hi - seed_lo + 1, total = n_seeds;
    for (int g = 0; ret == 0 && g < o->n_grids; g++) {
        ret = axis_parse(o->grids[g], &axes[g], err);
        if (ret != 0)
            break;
        n_axes++;
        for (int h = 0; ret == 0 && h < g; h++)
            if (strcmp(axes[h].key, axes[g].key) == 0)
                ret = sim_err_set(err, SIM_EUSAGE, "--grid %s: given twice", axes[g].key);
        for (int s = 0; ret == 0 && s < o->n_sets; s++)
            if (same_key(o->sets[s], axes[g].key))
                ret = sim_err_set(err, SIM_EUSAGE, "--grid %s: also given with --set",
                                  axes[g].key);
        if (ret == 0 && has_seeds && strcmp(axes[g].key, "experiment.seed") == 0)
            ret = sim_err_set(err, SIM_EUSAGE,
                              "--grid experiment.seed: use --seeds, not both");
        total *= (uint64_t)axes[g].n;
        if (ret == 0 && total > MAX_POINTS)
            ret = sim_err_set(err, SIM_EUSAGE, "sweep: more than %d configurations",
                              MAX_POINTS);
    }
    if (ret == 0) {
        plan->points = calloc((size_t)total, sizeof *plan->points);
        if (!plan->points)
            ret = sim_err_set(err, SIM_ENOMEM, "sweep: out of memory");
    }
    for (int i = 0; ret == 0 && i < (int)total; i++) {
        an_sweep_point *p = &plan->points[i];
        plan->n_points++;
        if (point_fill(o, axes, n_axes, has_seeds, seed_lo, n_seeds, i, p) < 0)
            ret = sim_err_set(err, SIM_ENOMEM, "sweep: out of memory");
        else
            ret = point_validate(o, p, i, (int)total, err);
    }
    int scoped = 0;
    for (int g = 0; g < n_axes; g++) {
        scoped |= strchr(axes[g].key, ':') != NULL;
        an_sweep_values_free(axes[g].values, axes[g].n);
    }
    free(axes);
    if (ret == 0 && scoped)
        plan_drop_repeats(plan);
    if (ret != 0)
        an_sweep_plan_release(plan);
    return ret;
}

/* ---- running points ----------------------------------------------------- */

enum { MSG_TICK = 1, MSG_RESULT = 2 };

/* A child's report to the parent; written whole (<= PIPE_BUF, atomic). */
typedef struct wire_msg {
    int kind;
    int index;
    int code;
    int skipped;
    an_sweep_tick tick;
    an_sweep_outcome out;
    char message[1024];
} wire_msg;

_Static_assert(sizeof(wire_msg) <= PIPE_BUF, "sweep pipe records must be atomic");

typedef struct slot {
    pid_t pid;          /* 0: free */
    int index;
    int reported;       /* its MSG_RESULT arrived */
    double fraction;    /* last tick's fraction */
} slot;

/* The sweep in this process. */
typedef struct sweep_state {
    const an_sweep_opts *o;
    const an_sweep_plan *plan;
    const char *db_path;
    int rank;
    an_sweep_summary *sum;
    int total;          /* points to handle here */
    int finished;
    int to_run;         /* points that needed running */
    int ran_or_failed;  /* of those, finished */
    int running;
    double t0;
    double inline_fraction;
    slot *slots;
    int n_slots;
    sim_err first;      /* first failure */
} sweep_state;

struct an_sweep_job {
    int fd;             /* child: the pipe's write end; -1 in the sweep's process */
    int index;
    int want_ticks;
    sweep_state *st;    /* in the sweep's process */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void status_emit(sweep_state *st, int current, const an_sweep_tick *tick)
{
    const an_sweep_opts *o = st->o;
    if (!o->on_status)
        return;
    an_sweep_status s = {.total = st->total, .finished = st->finished,
                         .running = st->running, .current = current, .label = "",
                         .elapsed = now_s() - st->t0, .remaining = NAN};
    s.tick = (an_sweep_tick){.train_loss = NAN, .test_accuracy = NAN, .fraction = -1};
    if (tick && current >= 0) {
        s.tick = *tick;
        s.label = st->plan->points[current].label;
    }
    double work = st->ran_or_failed + (st->n_slots ? 0.0 : st->inline_fraction);
    for (int i = 0; i < st->n_slots; i++)
        if (st->slots[i].pid > 0)
            work += st->slots[i].fraction;
    if (st->to_run == 0)
        s.remaining = 0;
    else if (work > 0.01)
        s.remaining = s.elapsed * (st->to_run - work) / work;
    o->on_status(o->ctx, &s);
}

void an_sweep_job_tick(an_sweep_job *job, const an_sweep_tick *tick)
{
    if (!job || !job->want_ticks)
        return;
    if (job->fd >= 0) {
        wire_msg m = {.kind = MSG_TICK, .index = job->index, .tick = *tick};
        ssize_t w;
        do
            w = write(job->fd, &m, sizeof m);
        while (w < 0 && errno == EINTR);
        return;
    }
    sweep_state *st = job->st;
    st->inline_fraction = tick->fraction > 0 ? fmin(tick->fraction, 1.0) : 0.0;
    status_emit(st, job->index, tick);
}

static void result_emit(sweep_state *st, int index, int skipped, const an_sweep_outcome *out,
                        int code, const char *message)
{
    an_sweep_summary *sum = st->sum;
    st->finished++;
    if (skipped == 2) {
        sum->elsewhere++;
    } else if (skipped) {
        sum->skipped++;
    } else {
        st->ran_or_failed++;
        if (code == 0 && out && strcmp(out->status, "failed") != 0)
            sum->ran++;
        else
            sum->failed++;
    }
    if (code != 0 && st->first.code == 0) {
        st->first.code = code;
        snprintf(st->first.msg, sizeof st->first.msg, "%s", message);
    }
    const an_sweep_opts *o = st->o;
    if (!o->on_result)
        return;
    an_sweep_result r = {.index = index, .total = st->plan->n_points,
                         .label = st->plan->points[index].label, .skipped = skipped,
                         .sim_time = NAN, .final_train_loss = NAN,
                         .final_test_accuracy = NAN, .code = code,
                         .message = message ? message : "", .rank = st->rank};
    if (out) {
        r.run_id = out->run_id;
        snprintf(r.status, sizeof r.status, "%s", out->status);
        if (!skipped) {
            r.sim_time = out->sim_time;
            r.final_train_loss = out->final_train_loss;
            r.final_test_accuracy = out->final_test_accuracy;
            r.trace_dropped = out->trace_dropped;
        }
    } else {
        snprintf(r.status, sizeof r.status, "failed");
    }
    o->on_result(o->ctx, &r);
}

/* Runs point `index` into the database at db_path in this process: checks
 * that no one finished it meanwhile, marks its stale rows, runs it. */
static int point_execute(sweep_state *st, int index, an_sweep_job *job,
                         an_sweep_outcome *out, int *skipped, sim_err *err)
{
    const an_sweep_opts *o = st->o;
    const an_sweep_point *p = &st->plan->points[index];
    memset(out, 0, sizeof *out);
    snprintf(out->status, sizeof out->status, "failed");
    out->sim_time = out->final_train_loss = out->final_test_accuracy = NAN;
    *skipped = 0;
    cfg_config cfg;
    int ret = cfg_load(o->schema, o->experiment, (const char *const *)p->overrides,
                              p->n_overrides, &cfg, err);
    if (ret < 0)
        return ret;
    an_db *db = an_db_open(st->db_path, err);
    if (!db) {
        cfg_release(&cfg);
        return err->code ? err->code : SIM_EDB;
    }
    int64_t done = 0;
    ret = an_db_find_done(db, p->canonical, &done, err);
    if (ret == 0 && done > 0) {
        *skipped = 1;
        out->run_id = done;
        snprintf(out->status, sizeof out->status, "done");
    } else if (ret == 0) {
        int marked = an_db_mark_stale_running(db, p->canonical, err);
        ret = marked < 0 ? marked : 0;
        an_db_set_claim(db, 1);
        if (ret == 0)
            ret = o->run(o->run_ctx, &cfg, db, job, out, err);
        if (ret == 0 && strcmp(out->status, "skipped") == 0) {
            /* another sweep claimed it: done by now, or still in its hands */
            int64_t now_done = 0;
            ret = an_db_find_done(db, p->canonical, &now_done, err);
            *skipped = ret == 0 && now_done > 0 ? 1 : 2;
            if (now_done > 0)
                out->run_id = now_done;
            snprintf(out->status, sizeof out->status, "%s", *skipped == 1 ? "done" : "running");
        }
    }
    an_db_close(db);
    cfg_release(&cfg);
    return ret;
}

static void child_main(sweep_state *st, int index, int fd)
{
    an_sweep_job job = {.fd = fd, .index = index, .want_ticks = st->o->on_status != NULL};
    an_sweep_outcome out;
    int skipped = 0;
    sim_err err = {0};
    int ret = point_execute(st, index, &job, &out, &skipped, &err);
    wire_msg m = {.kind = MSG_RESULT, .index = index, .code = ret, .skipped = skipped,
                  .out = out};
    snprintf(m.message, sizeof m.message, "%s", ret ? err.msg : "");
    ssize_t w;
    do
        w = write(fd, &m, sizeof m);
    while (w < 0 && errno == EINTR);
    _exit(ret == 0 && w == (ssize_t)sizeof m ? 0 : 1);
}

static slot *slot_of(sweep_state *st, int index)
{
    for (int i = 0; i < st->n_slots; i++)
        if (st->slots[i].pid > 0 && st->slots[i].index == index)
            return &st->slots[i];
    return NULL;
}

static void msg_handle(sweep_state *st, const wire_msg *m)
{
    slot *s = slot_of(st, m->index);
    if (!s)
        return;
    if (m->kind == MSG_TICK) {
        s->fraction = m->tick.fraction > 0 ? fmin(m->tick.fraction, 1.0) : 0.0;
        status_emit(st, m->index, &m->tick);
    } else if (m->kind == MSG_RESULT && !s->reported) {
        s->reported = 1;
        char message[sizeof m->message];
        memcpy(message, m->message, sizeof message);
        message[sizeof message - 1] = '\0';
        result_emit(st, m->index, m->skipped, &m->out, m->code, message);
    }
}

/* Reads every complete record waiting in the pipe. */
static void pipe_drain(sweep_state *st, int fd, char *buf, size_t *have)
{
    for (;;) {
        ssize_t r = read(fd, buf + *have, sizeof(wire_msg) - *have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        *have += (size_t)r;
        if (*have == sizeof(wire_msg)) {
            wire_msg m;
            memcpy(&m, buf, sizeof m);
            *have = 0;
            msg_handle(st, &m);
        }
    }
}

/* A child that ended without a result (killed, crashed): its run row may
 * be left 'running'; mark it failed now that no process runs the point. */
static void child_lost(sweep_state *st, slot *s, int wstatus)
{
    char message[512];
    const an_sweep_point *p = &st->plan->points[s->index];
    if (WIFSIGNALED(wstatus))
        snprintf(message, sizeof message, "sweep: %s: the run's process was killed by signal %d",
                 p->label[0] ? p->label : "run", WTERMSIG(wstatus));
    else
        snprintf(message, sizeof message, "sweep: %s: the run's process exited with status %d",
                 p->label[0] ? p->label : "run",
                 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    sim_err err = {0};
    an_db *db = an_db_open(st->db_path, &err);
    if (db) {
        an_db_mark_stale_running(db, p->canonical, &err);
        an_db_close(db);
    }
    result_emit(st, s->index, 0, NULL, SIM_EINTERNAL, message);
}

static int stop_requested(const sweep_state *st)
{
    return st->o->interrupt && *st->o->interrupt;
}

static int run_forked(sweep_state *st, const int *queue, int n_queue, int jobs, sim_err *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return sim_err_set(err, SIM_EIO, "sweep: pipe: %s", strerror(errno));
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    st->slots = calloc((size_t)jobs, sizeof *st->slots);
    if (!st->slots) {
        close(fds[0]);
        close(fds[1]);
        return sim_err_set(err, SIM_ENOMEM, "sweep: out of memory");
    }
    st->n_slots = jobs;
    char buf[sizeof(wire_msg)];
    size_t have = 0;
    int next = 0, ret = 0, forwarded = 0;
    pid_t parent = getpid();
    while (next < n_queue || st->running > 0) {
        if (stop_requested(st) && !forwarded) {
            /* Ctrl-C: start nothing more, stop the runs in flight (a
             * terminal's SIGINT reached them already; a kill of this
             * process alone did not) */
            forwarded = 1;
            st->sum->not_started += n_queue - next;
            next = n_queue;
            for (int i = 0; i < jobs; i++)
                if (st->slots[i].pid > 0)
                    kill(st->slots[i].pid, SIGINT);
        }
        for (int i = 0; i < jobs && next < n_queue && ret == 0; i++) {
            if (st->slots[i].pid != 0)
                continue;
            fflush(NULL);
            pid_t pid = fork();
            if (pid < 0) {
                ret = sim_err_set(err, SIM_EIO, "sweep: fork: %s", strerror(errno));
                break;
            }
            if (pid == 0) {
                close(fds[0]);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent)
                    _exit(1);
                child_main(st, queue[next], fds[1]);
            }
            st->slots[i] = (slot){.pid = pid, .index = queue[next++]};
            st->running++;
            status_emit(st, -1, NULL);
        }
        if (ret != 0 && st->running == 0)
            break;
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        poll(&pfd, 1, 100);
        pipe_drain(st, fds[0], buf, &have);
        for (int i = 0; i < jobs; i++) {
            slot *s = &st->slots[i];
            if (s->pid <= 0)
                continue;
            int wstatus = 0;
            pid_t r = waitpid(s->pid, &wstatus, WNOHANG);
            if (r == 0 || (r < 0 && errno == EINTR))
                continue;
            pipe_drain(st, fds[0], buf, &have);
            if (!s->reported)
                child_lost(st, s, wstatus);
            s->pid = 0;
            st->running--;
            status_emit(st, -1, NULL);
        }
    }
    close(fds[0]);
    close(fds[1]);
    free(st->slots);
    st->slots = NULL;
    st->n_slots = 0;
    return ret;
}

static int run_inline(sweep_state *st, const int *queue, int n_queue)
{
    for (int q = 0; q < n_queue; q++) {
        if (stop_requested(st)) {
            st->sum->not_started += n_queue - q;
            break;
        }
        an_sweep_job job = {.fd = -1, .index = queue[q], .want_ticks = st->o->on_status != NULL,
                            .st = st};
        an_sweep_outcome out;
        int skipped = 0;
        sim_err err = {0};
        st->running = 1;
        st->inline_fraction = 0;
        status_emit(st, -1, NULL);
        int ret = point_execute(st, queue[q], &job, &out, &skipped, &err);
        st->running = 0;
        st->inline_fraction = 0;
        result_emit(st, queue[q], skipped, &out, ret, ret ? err.msg : "");
        status_emit(st, -1, NULL);
    }
    return 0;
}

int an_sweep_run_points(const an_sweep_opts *o, const an_sweep_plan *plan,
                        const unsigned char *todo, const char *db_path, int rank,
                        an_sweep_summary *sum, sim_err *err)
{
    if (!o->run)
        return sim_err_set(err, SIM_EUSAGE, "sweep: no run function");
    sweep_state st = {.o = o, .plan = plan, .db_path = db_path, .rank = rank, .sum = sum,
                      .t0 = now_s()};
    int *queue = malloc(((size_t)plan->n_points + 1) * sizeof *queue);
    if (!queue)
        return sim_err_set(err, SIM_ENOMEM, "sweep: out of memory");
    for (int i = 0; i < plan->n_points; i++)
        if (!todo || todo[i])
            st.total++;
    /* skip what is done already, in one pass with one connection */
    an_db *db = an_db_open(db_path, err);
    if (!db) {
        free(queue);
        return err->code ? err->code : SIM_EDB;
    }
    int n_queue = 0, ret = 0;
    for (int i = 0; ret == 0 && i < plan->n_points; i++) {
        if (todo && !todo[i])
            continue;
        int64_t done = 0;
        ret = an_db_find_done(db, plan->points[i].canonical, &done, err);
        if (ret == 0 && done > 0) {
            an_sweep_outcome out = {.run_id = done, .status = "done"};
            result_emit(&st, i, 1, &out, 0, "");
        } else if (ret == 0) {
            queue[n_queue++] = i;
        }
    }
    an_db_close(db);
    st.to_run = n_queue;
    int jobs = o->jobs < 1 ? 1 : o->jobs > MAX_JOBS ? MAX_JOBS : o->jobs;
    if (jobs > n_queue)
        jobs = n_queue;
    if (ret == 0 && n_queue > 0)
        ret = jobs <= 1 ? run_inline(&st, queue, n_queue)
                        : run_forked(&st, queue, n_queue, jobs, err);
    free(queue);
    if (ret == 0 && stop_requested(&st)) {
        sim_err_set(err, SIM_EINTR, "sweep: interrupted by a signal: %d run%s in flight "
                    "marked failed, %d not started; run the same command again to resume",
                    sum->failed, sum->failed == 1 ? "" : "s", sum->not_started);
        ret = SIM_EINTR;
    }
    if (ret == 0 && st.first.code != 0) {
        *err = st.first;
        ret = st.first.code;
    }
    return ret;
}

int an_sweep_under_mpirun(void)
{
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    return size && *size;
}

int an_sweep_run(const an_sweep_opts *o, an_sweep_summary *sum, sim_err *err)
{
    an_sweep_summary local = {0};
    if (!sum)
        sum = &local;
    memset(sum, 0, sizeof *sum);
    sum->size = 1;
    if (!o->db_path || !*o->db_path)
        return sim_err_set(err, SIM_EUSAGE, "sweep: empty database path");
    an_sweep_plan plan;
    int ret = an_sweep_plan_build(o, &plan, err);
    if (ret != 0)
        return ret;
    sum->total = plan.n_points;
    unsigned char *todo = NULL;
    if (o->n_parts > 0) {
        if (o->part < 1 || o->part > o->n_parts) {
            an_sweep_plan_release(&plan);
            return sim_err_set(err, SIM_EUSAGE, "sweep: part %d of %d: parts are numbered 1 to %d",
                               o->part, o->n_parts, o->n_parts);
        }
        if (o->mpi && an_sweep_under_mpirun()) {
            an_sweep_plan_release(&plan);
            return sim_err_set(err, SIM_EUSAGE, "sweep: --part and mpirun both share the "
                               "configurations out: use one of them");
        }
        todo = calloc((size_t)plan.n_points + 1, 1);
        if (!todo) {
            an_sweep_plan_release(&plan);
            return sim_err_set(err, SIM_ENOMEM, "sweep: out of memory");
        }
        sum->total = 0;
        for (int i = 0; i < plan.n_points; i++)
            sum->total += todo[i] = i % o->n_parts == o->part - 1;
    }
    if (o->mpi && an_sweep_under_mpirun())
        ret = an_sweep_run_mpi(o, &plan, sum, err);
    else
        ret = an_sweep_run_points(o, &plan, todo, o->db_path, 0, sum, err);
    free(todo);
    an_sweep_plan_release(&plan);
    if (ret != 0 && ret != SIM_EINTR && sum->failed > 0)
        sim_err_prefix(err, "sweep: %d of %d runs failed; the first", sum->failed,
                       sum->total);
    return ret;
}
