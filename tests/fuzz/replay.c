/* Replay driver: a main() for a fuzz target built without libFuzzer (any
 * compiler). Each argument is a file or a directory; every regular file in
 * it (names starting with '.' skipped, in name order, one level deep) is
 * read and passed to LLVMFuzzerTestOneInput once. A missing directory counts
 * as empty, so a target without saved crashes replays its corpus alone.
 * A crash or sanitizer report fails the test; otherwise it prints
 * "replayed N inputs" and exits 0. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz_util.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *b = realloc(buf, cap *= 2);
            if (!b)
                free(buf);
            buf = b;
        }
    }
    int bad = !buf || ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(buf);
        return -1;
    }
    /* A copy of exactly len bytes, so that AddressSanitizer sees any read
     * past the input's end as the fuzzer would. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    fprintf(stderr, "replay %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    int n = 0, failed = 0;
    for (int a = 1; a < argc; a++) {
        struct stat st;
        if (stat(argv[a], &st) != 0) {
            if (errno == ENOENT)
                continue;
            fprintf(stderr, "%s: %s\n", argv[a], strerror(errno));
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed |= replay_file(argv[a]) != 0;
            n++;
            continue;
        }
        struct dirent **names;
        int k = scandir(argv[a], &names, NULL, alphasort);
        if (k < 0) {
            fprintf(stderr, "%s: %s\n", argv[a], strerror(errno));
            return 1;
        }
        for (int i = 0; i < k; i++) {
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", argv[a], names[i]->d_name);
            if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                failed |= replay_file(path) != 0;
                n++;
            }
            free(names[i]);
        }
        free(names);
    }
    printf("replayed %d inputs\n", n);
    return failed ? 1 : 0;
}
