/* Input files: see file.h. fopen of a directory succeeds on Linux and
 * the first read fails with EISDIR, so the check is made on the stream. */
#include "sim/file.h"

#include <sys/stat.h>

int sim_file_scan_line(const char *path, const char *fmt, long long *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    int rc = -1;
    long long v;
    while (rc != 0 && fgets(line, sizeof line, f))
        if (sscanf(line, fmt, &v) == 1) {
            *out = v;
            rc = 0;
        }
    fclose(f);
    return rc;
}

int sim_file_check(FILE *f, const char *path, const char *what, sim_err *err)
{
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode))
        return sim_err_set(err, SIM_EINPUT, "%s: is a directory, expected %s", path, what);
    return 0;
}
