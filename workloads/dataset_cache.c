/* The decoded-data cache (dataset_impl.h): a loader that decodes slowly
 * (fashion_mnist inflates 30 MB of gzip) keeps its decoded bytes in one
 * file per set of source files, in the cache directory (DTSIM_CACHE_DIR;
 * unset: $XDG_CACHE_HOME/dtsim, else $HOME/.cache/dtsim; "off" or empty:
 * no cache). The file starts with a stamp of every source file (size,
 * modification time, CRC-32 of its bytes) and the payload's length and
 * CRC-32; a cache whose stamps differ from the sources' now, or whose
 * payload is short or fails its CRC, is a miss: the loader decodes the
 * sources and the cache is written again (to a temporary file renamed
 * over it, so a reader never sees half a file). The cache only ever
 * speeds a load up: failing to read or write it is a miss, never an
 * error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "workloads/dataset_impl.h"

#define CACHE_MAGIC "DTSIMDC1"
#define CRC_CHUNK (1 << 20)

/* The directory from the environment; 0, or -1 when the cache is off. */
static int cache_dir(char *out, size_t n)
{
    const char *d = getenv("DTSIM_CACHE_DIR");
    if (d)
        return *d && strcmp(d, "off") != 0 && snprintf(out, n, "%s", d) < (int)n ? 0 : -1;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int k = xdg && *xdg ? snprintf(out, n, "%s/dtsim", xdg)
            : home && *home ? snprintf(out, n, "%s/.cache/dtsim", home)
                            : -1;
    return k > 0 && k < (int)n ? 0 : -1;
}

/* mkdir -p; 0 when the directory exists afterwards. */
static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int rc = mkdir(path, 0777);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

/* Size, modification time and CRC-32 of a source file; -1 when it cannot
 * be read. */
static int stamp_of(const char *path, wl_cache_stamp *s)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return -1;
    }
    *s = (wl_cache_stamp){.size = (uint64_t)st.st_size,
                          .mtime_s = (int64_t)st.st_mtim.tv_sec,
                          .mtime_ns = (int64_t)st.st_mtim.tv_nsec};
    unsigned char *buf = malloc(CRC_CHUNK);
    uLong crc = crc32(0L, Z_NULL, 0);
    size_t k;
    while (buf && (k = fread(buf, 1, CRC_CHUNK, f)) > 0)
        crc = crc32_z(crc, buf, k);
    int ok = buf && !ferror(f);
    free(buf);
    fclose(f);
    s->crc = (uint32_t)crc;
    return ok ? 0 : -1;
}

/* The payload of path when its header matches c's stamps and its CRC
 * holds, else NULL. */
static void *read_cache(const wl_cache *c, size_t *len)
{
    FILE *f = fopen(c->path, "rb");
    if (!f)
        return NULL;
    char magic[8];
    uint32_t nsrc = 0, crc = 0;
    uint64_t plen = 0;
    wl_cache_stamp s[WL_CACHE_MAX_SRC];
    void *p = NULL;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, CACHE_MAGIC, 8) != 0 ||
        fread(&nsrc, sizeof nsrc, 1, f) != 1 || nsrc != (uint32_t)c->nsrc ||
        fread(s, sizeof *s, nsrc, f) != nsrc || memcmp(s, c->src, nsrc * sizeof *s) != 0 ||
        fread(&plen, sizeof plen, 1, f) != 1 || fread(&crc, sizeof crc, 1, f) != 1 ||
        plen == 0 || plen > (uint64_t)1 << 40 || !(p = malloc((size_t)plen)) ||
        fread(p, 1, (size_t)plen, f) != plen || fgetc(f) != EOF ||
        (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), p, (size_t)plen) != crc) {
        free(p);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = (size_t)plen;
    return p;
}

int wl_cache_open(wl_cache *c, const char *key, const char *const *src, int nsrc,
                  void **payload, size_t *len)
{
    memset(c, 0, sizeof *c);
    *payload = NULL;
    char dir[3072];
    if (nsrc < 1 || nsrc > WL_CACHE_MAX_SRC || cache_dir(dir, sizeof dir) < 0)
        return 0;
    /* one file per set of source paths (as given) */
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < nsrc; i++)
        for (const char *q = src[i]; q == src[i] || q[-1]; q++)
            h = (h ^ (unsigned char)*q) * 1099511628211ull;
    if (snprintf(c->path, sizeof c->path, "%s/%s-%016llx.bin", dir, key,
                 (unsigned long long)h) >= (int)sizeof c->path)
        return 0;
    for (int i = 0; i < nsrc; i++)
        if (stamp_of(src[i], &c->src[i]) < 0)
            return 0; /* the loader reports the unreadable source */
    c->nsrc = nsrc;
    c->enabled = 1;
    *payload = read_cache(c, len);
    return *payload != NULL;
}

void wl_cache_store(const wl_cache *c, const void *payload, size_t len)
{
    if (!c->enabled || len == 0)
        return;
    char dir[sizeof c->path], tmp[sizeof c->path + 32];
    snprintf(dir, sizeof dir, "%s", c->path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (make_dirs(dir) < 0)
            return;
    }
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", c->path, (long)getpid()) >= (int)sizeof tmp)
        return;
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return;
    uint32_t nsrc = (uint32_t)c->nsrc;
    uint64_t plen = len;
    uint32_t crc = (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), payload, len);
    int ok = fwrite(CACHE_MAGIC, 1, 8, f) == 8 && fwrite(&nsrc, sizeof nsrc, 1, f) == 1 &&
             fwrite(c->src, sizeof *c->src, nsrc, f) == nsrc &&
             fwrite(&plen, sizeof plen, 1, f) == 1 && fwrite(&crc, sizeof crc, 1, f) == 1 &&
             fwrite(payload, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, c->path) != 0)
        unlink(tmp);
}
