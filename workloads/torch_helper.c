/* The helper process behind torch(FILE) (see torch_helper.h). Invariants:
 * the helper's stdin and stdout are one end of a socket pair (so writing to
 * a helper that died is an error, never SIGPIPE), its stderr a memory file
 * read back when it fails, fd 3 the shared memory; every read polls the
 * socket, so a helper that exits or is killed ends the wait at once; after
 * the first failure the helper is killed and every later call returns the
 * same error. */
#include "workloads/torch_helper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#ifndef DTSIM_SOURCE_ROOT
#define DTSIM_SOURCE_ROOT "."
#endif

struct wl_torch_helper {
    pid_t pid;            /* 0 once reaped */
    int sock;             /* our end of the command socket */
    int errfd;            /* the helper's stderr (a memory file) */
    int shmfd;            /* the shared memory (a memory file) */
    void *map;
    size_t map_bytes;
    int k;                /* slots mapped */
    int64_t b;            /* samples per slot */
    int64_t d;
    int dim;
    char file[PATH_MAX];
    sim_err failed;       /* sticky: code != 0 once the helper failed */
    char buf[4096];       /* bytes read but not yet consumed */
    size_t len;
};

const char *wl_torch_python(void)
{
    const char *p = getenv("DTSIM_PYTHON");
    if (p && *p)
        return p;
    /* Debian's interpreter, which python3-torch is installed for */
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/* python/torch_helper.py: DTSIM_TORCH_HELPER, else beside the binary (the
 * build tree or an installed share/dtsim), else the source tree it was
 * built from. */
static int find_script(char *out, size_t len)
{
    const char *env = getenv("DTSIM_TORCH_HELPER");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        static const char *const rel[] = {"/../python/torch_helper.py",
                                          "/../../python/torch_helper.py",
                                          "/../share/dtsim/torch_helper.py"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(out, len, "%s%s", exe, rel[i]);
            if (access(out, R_OK) == 0)
                return 0;
        }
    }
    snprintf(out, len, "%s/python/torch_helper.py", DTSIM_SOURCE_ROOT);
    return access(out, R_OK) == 0 ? 0 : -1;
}

/* The last `lines` lines of the helper's stderr, into out. */
static void stderr_tail(const wl_torch_helper *h, char *out, size_t len, int lines)
{
    out[0] = '\0';
    struct stat st;
    if (h->errfd < 0 || fstat(h->errfd, &st) != 0 || st.st_size <= 0)
        return;
    char text[2048];
    off_t from = st.st_size > (off_t)sizeof text - 1 ? st.st_size - (off_t)sizeof text + 1 : 0;
    ssize_t n = pread(h->errfd, text, sizeof text - 1, from);
    if (n <= 0)
        return;
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
        n--;
    text[n] = '\0';
    const char *p = text + n;
    for (int seen = 0; p > text; p--)
        if (p[-1] == '\n' && ++seen == lines)
            break;
    size_t k = strlen(p) < len ? strlen(p) : len - 1;
    memcpy(out, p, k);
    out[k] = '\0';
}

static void kill_helper(wl_torch_helper *h)
{
    if (h->pid > 0) {
        kill(h->pid, SIGKILL);
        while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        h->pid = 0;
    }
}

/* Records the failure (the first one wins), kills the helper; returns the code. */
static int fail(wl_torch_helper *h, int code, const char *what, sim_err *err)
{
    if (!h->failed.code) {
        char tail[1024];
        stderr_tail(h, tail, sizeof tail, 8);
        sim_err_set(&h->failed, code, "%s: %s%s%s", h->file, what,
                    tail[0] ? "; Python's last error output:\n" : "", tail);
    }
    kill_helper(h);
    *err = h->failed;
    return h->failed.code;
}

/* The helper's exit, once its socket has closed. */
static int died(wl_torch_helper *h, int code, sim_err *err)
{
    char what[256] = "the PyTorch helper stopped";
    int st = 0;
    if (h->pid > 0) {
        /* it closed its socket: exiting (a helper that only closed it is killed) */
        pid_t r = 0;
        for (int i = 0; i < 200 && (r = waitpid(h->pid, &st, WNOHANG)) == 0; i++)
            nanosleep(&(struct timespec){0, 10000000}, NULL);
        if (r == h->pid) {
            h->pid = 0;
            if (WIFSIGNALED(st))
                snprintf(what, sizeof what, "the PyTorch helper was killed by signal %d",
                         WTERMSIG(st));
            else if (WIFEXITED(st))
                snprintf(what, sizeof what, "the PyTorch helper exited with status %d",
                         WEXITSTATUS(st));
        }
    }
    return fail(h, code, what, err);
}

/* n bytes into out (n < 0: up to and excluding a newline, at most len - 1
 * bytes, NUL-terminated). */
static int read_reply(wl_torch_helper *h, char *out, size_t len, long n, int code, sim_err *err)
{
    size_t want = n >= 0 ? (size_t)n : 0;
    for (;;) {
        if (n < 0) {
            char *nl = memchr(h->buf, '\n', h->len);
            if (nl) {
                size_t k = (size_t)(nl - h->buf);
                snprintf(out, len, "%.*s", (int)(k < len ? k : len - 1), h->buf);
                memmove(h->buf, nl + 1, h->len - k - 1);
                h->len -= k + 1;
                return 0;
            }
            if (h->len == sizeof h->buf)
                return fail(h, SIM_EINTERNAL, "a reply line of the helper is too long", err);
        } else if (h->len >= want) {
            size_t k = want < len ? want : len - 1;
            memcpy(out, h->buf, k);
            out[k] = '\0';
            memmove(h->buf, h->buf + want, h->len - want);
            h->len -= want;
            return 0;
        }
        struct pollfd p = {.fd = h->sock, .events = POLLIN};
        int r = poll(&p, 1, -1);
        if (r < 0 && errno == EINTR)
            continue;
        size_t room = sizeof h->buf - h->len;
        if (n >= 0 && want > sizeof h->buf && h->len == sizeof h->buf) {
            /* a longer text than the buffer: keep its end */
            memmove(h->buf, h->buf + 1024, h->len - 1024);
            h->len -= 1024;
            want -= 1024;
            room = 1024;
        }
        ssize_t got = r > 0 ? read(h->sock, h->buf + h->len, room) : -1;
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return died(h, code, err);
        h->len += (size_t)got;
    }
}

/* One reply: "ok REST" into rest, or the helper's error text as the failure. */
static int reply(wl_torch_helper *h, char *rest, size_t len, int code, sim_err *err)
{
    char line[512];
    if (read_reply(h, line, sizeof line, -1, code, err) < 0)
        return err->code;
    long n;
    if (sscanf(line, "error %ld", &n) == 1 && n >= 0) {
        char text[2048];
        if (read_reply(h, text, sizeof text, n, code, err) < 0)
            return err->code;
        return fail(h, code, text, err);
    }
    if (strncmp(line, "ok", 2) != 0 && strncmp(line, "hello", 5) != 0) {
        char what[600];
        snprintf(what, sizeof what, "unexpected reply from the helper: '%.500s'", line);
        return fail(h, SIM_EINTERNAL, what, err);
    }
    const char *p = line[0] == 'o' ? line + 2 : line + 5;
    snprintf(rest, len, "%s", *p == ' ' ? p + 1 : p);
    return 0;
}

static int send_line(wl_torch_helper *h, const char *cmd, int code, sim_err *err)
{
    char line[4096];
    int n = snprintf(line, sizeof line, "%s\n", cmd);
    if (n < 0 || n >= (int)sizeof line)
        return fail(h, SIM_EINTERNAL, "a command to the helper is too long", err);
    for (int off = 0; off < n;) {
        ssize_t w = send(h->sock, line + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return died(h, code, err);
        off += (int)w;
    }
    return 0;
}

int wl_torch_helper_call(wl_torch_helper *h, const char *cmd, char *rest, size_t len,
                         sim_err *err)
{
    if (h->failed.code) {
        *err = h->failed;
        return err->code;
    }
    /* during the run: not a configuration error (exit 1) */
    if (send_line(h, cmd, SIM_EIO, err) < 0)
        return err->code;
    return reply(h, rest, len, SIM_EIO, err);
}

static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

int wl_torch_helper_reserve(wl_torch_helper *h, int k, int64_t b, wl_torch_slots *out,
                            sim_err *err)
{
    if (k < 1)
        k = 1;
    if (b < 1)
        b = 1;
    if (h->failed.code) {
        *err = h->failed;
        return err->code;
    }
    if (k > h->k || b > h->b || !h->map) {
        int nk = k > h->k ? k : h->k;
        int64_t nb = b > h->b ? b : h->b;
        size_t pd = align64((size_t)nk * (size_t)h->d * 4);
        size_t px = align64((size_t)nk * (size_t)nb * (size_t)h->dim * 4);
        size_t py = align64((size_t)nk * (size_t)nb * 4);
        size_t bytes = 2 * pd + px + py + (size_t)nk * 8;
        if (h->map)
            munmap(h->map, h->map_bytes);
        h->map = NULL;
        if (ftruncate(h->shmfd, (off_t)bytes) != 0)
            return fail(h, SIM_ENOMEM, "cannot size the shared memory", err);
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, h->shmfd, 0);
        if (m == MAP_FAILED)
            return fail(h, SIM_ENOMEM, "cannot map the shared memory", err);
        h->map = m;
        h->map_bytes = bytes;
        h->k = nk;
        h->b = nb;
        char cmd[128], rest[64];
        snprintf(cmd, sizeof cmd, "map %d %lld %zu", nk, (long long)nb, bytes);
        if (wl_torch_helper_call(h, cmd, rest, sizeof rest, err) < 0)
            return err->code;
    }
    size_t pd = align64((size_t)h->k * (size_t)h->d * 4);
    size_t px = align64((size_t)h->k * (size_t)h->b * (size_t)h->dim * 4);
    size_t py = align64((size_t)h->k * (size_t)h->b * 4);
    char *base = h->map;
    out->params = (float *)(void *)base;
    out->grads = (float *)(void *)(base + pd);
    out->x = (float *)(void *)(base + 2 * pd);
    out->y = (float *)(void *)(base + 2 * pd + px);
    out->loss = (double *)(void *)(base + 2 * pd + px + py);
    out->k = h->k;
    out->b = h->b;
    return 0;
}

/* An fd >= 10 (so that the child's dup2 onto 0..3 never meets it), close-on-exec. */
static int high_fd(int fd)
{
    if (fd < 0)
        return -1;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    return hi;
}

/* The interpreter on argv (argv[0] filled in) with fds[0..3] as its
 * descriptors 0..3 (-1: 3 not set). */
static int start_python(char **argv, const int fds[4], pid_t *pid, const char *file,
                        sim_err *err)
{
    const char *python = wl_torch_python();
    argv[0] = (char *)python;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    for (int i = 0; i < 4; i++)
        if (fds[i] >= 0)
            posix_spawn_file_actions_adddup2(&fa, fds[i], i);
    int rc = posix_spawnp(pid, python, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        *pid = 0;
        return sim_err_set(err, SIM_ECONFIG,
                           "%s: cannot start the Python interpreter '%s' (set DTSIM_PYTHON to "
                           "one with PyTorch): %s",
                           file, python, strerror(rc));
    }
    return 0;
}

static int spawn(wl_torch_helper *h, const wl_torch_start *s, const char *script, sim_err *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return sim_err_set(err, SIM_EIO, "%s: cannot create a socket: %s", s->file,
                           strerror(errno));
    h->sock = high_fd(sv[0]);
    int child = high_fd(sv[1]);
    h->errfd = high_fd(memfd_create("dtsim-torch-stderr", MFD_CLOEXEC));
    h->shmfd = high_fd(memfd_create("dtsim-torch-shm", MFD_CLOEXEC));
    if (h->sock < 0 || child < 0 || h->errfd < 0 || h->shmfd < 0) {
        if (child >= 0)
            close(child);
        return sim_err_set(err, SIM_EIO, "%s: cannot create the helper's files: %s", s->file,
                           strerror(errno));
    }
    char geo[6][24], seed[24];
    snprintf(geo[0], sizeof geo[0], "%d", s->channels);
    snprintf(geo[1], sizeof geo[1], "%d", s->height);
    snprintf(geo[2], sizeof geo[2], "%d", s->width);
    snprintf(geo[3], sizeof geo[3], "%d", s->dim);
    snprintf(geo[4], sizeof geo[4], "%d", s->classes);
    snprintf(geo[5], sizeof geo[5], "%d", s->context);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)(s->seed & 0x7fffffffffffULL));
    char *argv[] = {NULL, (char *)script, (char *)s->file, geo[0], geo[1], geo[2],
                    geo[3], geo[4], geo[5], (char *)s->device, (char *)s->batched, seed,
                    NULL};
    const int fds[4] = {child, child, h->errfd, h->shmfd};
    int rc = start_python(argv, fds, &h->pid, s->file, err);
    close(child);
    return rc;
}

static int read_hello(wl_torch_helper *h, wl_torch_hello *hello, sim_err *err)
{
    char line[256];
    if (reply(h, line, sizeof line, SIM_ECONFIG, err) < 0)
        return err->code;
    long long d;
    if (sscanf(line, "%lld %lf %d %d", &d, &hello->flops, &hello->batched,
               &hello->n_layers) != 4 ||
        d < 1 || hello->n_layers < 1 || hello->n_layers > 16)
        return fail(h, SIM_EINTERNAL, "a malformed greeting from the helper", err);
    hello->d = d;
    for (int i = 0; i < hello->n_layers; i++) {
        long long size;
        if (read_reply(h, line, sizeof line, -1, SIM_ECONFIG, err) < 0)
            return err->code;
        if (sscanf(line, "%31s %lld", hello->layers[i].name, &size) != 2 || size < 0)
            return fail(h, SIM_EINTERNAL, "a malformed layer line from the helper", err);
        hello->layers[i].size = size;
    }
    return 0;
}

wl_torch_helper *wl_torch_helper_start(const wl_torch_start *s, wl_torch_hello *hello,
                                       sim_err *err)
{
    if (access(s->file, R_OK) != 0) {
        sim_err_set(err, SIM_ECONFIG, "%s: cannot read the module's file: %s", s->file,
                    strerror(errno));
        return NULL;
    }
    char script[PATH_MAX];
    if (find_script(script, sizeof script) != 0) {
        sim_err_set(err, SIM_ECONFIG,
                    "%s: cannot find dtsim's PyTorch helper (python/torch_helper.py; tried "
                    "'%s'; set DTSIM_TORCH_HELPER)",
                    s->file, script);
        return NULL;
    }
    wl_torch_helper *h = calloc(1, sizeof *h);
    if (!h) {
        sim_err_set(err, SIM_ENOMEM, "out of memory");
        return NULL;
    }
    h->sock = h->errfd = h->shmfd = -1;
    snprintf(h->file, sizeof h->file, "%s", s->file);
    h->dim = s->dim;
    memset(hello, 0, sizeof *hello);
    if (spawn(h, s, script, err) < 0 || read_hello(h, hello, err) < 0) {
        wl_torch_helper_stop(h);
        return NULL;
    }
    h->d = hello->d;
    return h;
}

void wl_torch_helper_stop(wl_torch_helper *h)
{
    if (!h)
        return;
    if (h->pid > 0 && !h->failed.code) {
        send(h->sock, "quit\n", 5, MSG_NOSIGNAL);
        shutdown(h->sock, SHUT_WR);
        pid_t r = 0;
        for (int i = 0; i < 300 && (r = waitpid(h->pid, NULL, WNOHANG)) == 0; i++)
            nanosleep(&(struct timespec){0, 10000000}, NULL);
        if (r == h->pid)
            h->pid = 0;
    }
    kill_helper(h);
    if (h->map)
        munmap(h->map, h->map_bytes);
    if (h->sock >= 0)
        close(h->sock);
    if (h->errfd >= 0)
        close(h->errfd);
    if (h->shmfd >= 0)
        close(h->shmfd);
    free(h);
}

int wl_torch_helper_dataset(const char *file, char **data, size_t *len, sim_err *err)
{
    *data = NULL;
    *len = 0;
    char script[PATH_MAX];
    if (access(file, R_OK) != 0)
        return sim_err_set(err, SIM_ECONFIG, "%s: cannot read the data set's file: %s", file,
                           strerror(errno));
    if (find_script(script, sizeof script) != 0)
        return sim_err_set(err, SIM_ECONFIG,
                           "%s: cannot find dtsim's PyTorch helper (python/torch_helper.py; "
                           "set DTSIM_TORCH_HELPER)",
                           file);
    wl_torch_helper h = {.sock = -1, .errfd = -1, .shmfd = -1};
    snprintf(h.file, sizeof h.file, "%s", file);
    int out = high_fd(memfd_create("dtsim-torch-data", MFD_CLOEXEC));
    int nul = high_fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
    h.errfd = high_fd(memfd_create("dtsim-torch-stderr", MFD_CLOEXEC));
    int rc = out < 0 || nul < 0 || h.errfd < 0
                 ? sim_err_set(err, SIM_EIO, "%s: cannot create the helper's files: %s", file,
                               strerror(errno))
                 : 0;
    char *argv[] = {NULL, script, "--dataset", (char *)file, NULL};
    const int fds[4] = {nul, out, h.errfd, -1};
    if (rc == 0)
        rc = start_python(argv, fds, &h.pid, file, err);
    int st = 0;
    while (rc == 0 && waitpid(h.pid, &st, 0) < 0 && errno == EINTR)
        ;
    h.pid = 0;
    if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        rc = fail(&h, SIM_ECONFIG, "dataset() failed", err);
    struct stat sb;
    if (rc == 0 && (fstat(out, &sb) != 0 || sb.st_size <= 0))
        rc = sim_err_set(err, SIM_EINTERNAL, "%s: dataset() wrote nothing", file);
    if (rc == 0 && !(*data = malloc((size_t)sb.st_size + 1)))
        rc = sim_err_set(err, SIM_ENOMEM, "%s: out of memory for the data set", file);
    for (size_t got = 0; rc == 0 && got < (size_t)sb.st_size;) {
        ssize_t n = pread(out, *data + got, (size_t)sb.st_size - got, (off_t)got);
        if (n <= 0)
            rc = sim_err_set(err, SIM_EIO, "%s: cannot read the data set back", file);
        got += n > 0 ? (size_t)n : 0;
    }
    if (rc == 0) {
        (*data)[sb.st_size] = '\0';
        *len = (size_t)sb.st_size;
    } else {
        free(*data);
        *data = NULL;
    }
    for (int fd = 0; fd < 3; fd++) {
        const int f = fd == 0 ? out : fd == 1 ? nul : h.errfd;
        if (f >= 0)
            close(f);
    }
    return rc;
}
