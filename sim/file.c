/* Input files: see file.h. fopen of a directory succeeds on Linux and
 * the first read fails with EISDIR, so the check is made on the stream. */
#include "sim/file.h"

#include <sys/stat.h>

int sim_file_check(FILE *f, const char *path, const char *what, sim_err *err)
{
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode))
        return sim_err_set(err, SIM_EINPUT, "%s: is a directory, expected %s", path, what);
    return 0;
}
