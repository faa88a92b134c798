/* Resolving file names against a folder (see path.h). Text only: nothing
 * here touches the file system, so a name resolves the same whether or
 * not the file exists (the error of opening it names the resolved path). */
#include "sim/path.h"

#include <stdio.h>
#include <string.h>

void sim_path_dir(const char *file, char *out, size_t len)
{
    if (len == 0)
        return;
    const char *slash = file ? strrchr(file, '/') : NULL;
    size_t n = slash ? (size_t)(slash - file) : 0;
    while (n > 0 && file[n - 1] == '/') /* "a//b.ini" -> "a" */
        n--;
    if (slash && n == 0) /* "/a.ini": the root */
        n = 1;
    if (n >= len)
        n = len - 1;
    memcpy(out, file ? file : "", n);
    out[n] = '\0';
}

int sim_path_resolve(const char *dir, const char *name, char *out, size_t len, sim_err *err)
{
    if (name[0] == '/' || !dir || !dir[0])
        dir = "";
    const char *sep = dir[0] && dir[strlen(dir) - 1] != '/' ? "/" : "";
    int w = snprintf(out, len, "%s%s%s", dir, sep, name);
    if (w < 0 || (size_t)w >= len)
        return sim_err_set(err, SIM_EINPUT, "%s%s%s: file name too long (max %zu characters)",
                           dir, sep, name, len ? len - 1 : 0);
    return 0;
}
