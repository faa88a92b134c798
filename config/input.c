/* Input files read whole (see input.h): fread to the end, not getdelim
 * (which stops at a NUL byte and so hides the rest of the file). */
#include "config/input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/file.h"

int cfg_input_check_text(const char *path, const char *what, const char *data, size_t len,
                         sim_err *err)
{
    const char *nul = memchr(data, '\0', len);
    if (!nul)
        return 0;
    int line = 1;
    const char *start = data;
    for (const char *p = data; p < nul; p++)
        if (*p == '\n') {
            line++;
            start = p + 1;
        }
    return sim_err_set(err, SIM_EINPUT, "%s:%d: a NUL byte at column %d: expected %s, a text file",
                       path, line, (int)(nul - start) + 1, what);
}

int cfg_input_read(const char *path, const char *what, char **text, size_t *len, sim_err *err)
{
    *text = NULL;
    if (len)
        *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sim_err_set(err, SIM_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    if (sim_file_check(f, path, what, err)) {
        fclose(f);
        return SIM_EINPUT;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
    while (rc == 0) {
        if (cap - n < 2) {
            char *grown = cap > ((size_t)-1) / 2 ? NULL : realloc(buf, cap * 2);
            if (!grown) {
                rc = sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = sim_err_set(err, SIM_EINPUT, "%s: cannot read: %s", path,
                                 strerror(errno ? errno : EIO));
            break;
        }
    }
    fclose(f);
    if (rc == 0)
        rc = cfg_input_check_text(path, what, buf, n, err);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *text = buf;
    if (len)
        *len = n;
    return 0;
}
