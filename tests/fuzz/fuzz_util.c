/* Fuzz helpers (see fuzz_util.h). Scratch files live on tmpfs when there is
 * one, so that writing one per input costs no disk I/O. */
#include "tests/fuzz/fuzz_util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/err.h"

#define FUZZ_SLOTS 4

static char slot_name[FUZZ_SLOTS][32];
static char slot_path[FUZZ_SLOTS][4096];

char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text) {
        memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

void fuzz_init(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    sim_err_install_library_handlers();
}

static void remove_temps(void)
{
    for (int i = 0; i < FUZZ_SLOTS; i++)
        if (slot_path[i][0])
            unlink(slot_path[i]);
}

static const char *temp_dir(void)
{
    if (access("/dev/shm", W_OK) == 0)
        return "/dev/shm";
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

const char *fuzz_write_temp(const char *slot, const char *ext, const uint8_t *data,
                            size_t size)
{
    static int registered;
    int i = 0;
    while (i < FUZZ_SLOTS && slot_name[i][0] && strcmp(slot_name[i], slot) != 0)
        i++;
    if (i == FUZZ_SLOTS)
        abort();
    if (!registered) {
        registered = 1;
        atexit(remove_temps);
    }
    snprintf(slot_name[i], sizeof slot_name[i], "%s", slot);
    char path[sizeof slot_path[i]];
    snprintf(path, sizeof path, "%s/dtsim-fuzz-%ld-%s%s", temp_dir(), (long)getpid(), slot, ext);
    if (slot_path[i][0] && strcmp(slot_path[i], path) != 0)
        unlink(slot_path[i]); /* the slot's file under another extension */
    memcpy(slot_path[i], path, sizeof path);
    FILE *f = fopen(slot_path[i], "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    return slot_path[i];
}

void fuzz_report(const char *what, int rc, const sim_err *err)
{
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("DTSIM_FUZZ_VERBOSE") != NULL;
    if (verbose)
        fprintf(stderr, "  %s: %s\n", what, rc == 0 ? "ok" : err->msg);
}

int fuzz_looks_like_xml(const uint8_t *data, size_t size)
{
    size_t i = 0;
    while (i < size && isspace(data[i]))
        i++;
    return i < size && data[i] == '<';
}
