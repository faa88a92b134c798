/* The method registry: every method's vtable, looked up by name, and the
 * checks that need to know every method. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "algorithms/core/algo.h"
#include "algorithms/compress/compress.h"

#define DTSIM_METHOD(id) extern const algo_vt algo_##id;
#include "algorithms/methods/methods.def"
#undef DTSIM_METHOD

const algo_vt *const algo_registry[] = {
#define DTSIM_METHOD(id) &algo_##id,
#include "algorithms/methods/methods.def"
#undef DTSIM_METHOD
    NULL,
};

static const cfg_key no_keys[] = {{0}};

const algo_vt *algo_find(const char *name)
{
    for (int i = 0; algo_registry[i]; i++)
        if (strcasecmp(algo_registry[i]->name, name) == 0)
            return algo_registry[i];
    return NULL;
}

const cfg_key *algo_keys(const char *name)
{
    const algo_vt *vt = algo_find(name);
    if (!vt)
        return NULL;
    return vt->keys ? vt->keys : no_keys;
}

/* "a, b, c": the methods for which has(vt) is 1, in registry order. */
static void methods_with(int (*has)(const algo_vt *vt), char *list, size_t cap)
{
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; algo_registry[i]; i++)
        if (has(algo_registry[i]) && len < cap)
            len += (size_t)snprintf(list + len, cap - len, "%s%s", len ? ", " : "",
                                    algo_registry[i]->name);
}

static int has_compression(const algo_vt *vt) { return vt->supports_compression; }
static int has_bucket(const algo_vt *vt) { return vt->supports_bucket; }

int algo_compress_check(const algo_vt *vt, const cfg_config *cfg, sim_err *err)
{
    algo_compressor *c;
    int rc = algo_compress_from_config(cfg, &c, err);
    if (rc)
        return rc;
    int identity = c->vt->identity;
    algo_compress_destroy(c);
    if (!identity && !vt->supports_compression) {
        char list[256];
        methods_with(has_compression, list, sizeof list);
        return cfg_error(cfg, "algorithm", "compressor", SIM_ECONFIG, err,
                                "%s does not support compression (methods that do: %s; "
                                "docs/compressors.md says why)",
                                vt->name, list);
    }
    return 0;
}

int algo_bucket_check(const algo_vt *vt, const cfg_config *cfg, sim_err *err)
{
    if (cfg->bucket <= 0 || vt->supports_bucket)
        return 0;
    char list[256];
    methods_with(has_bucket, list, sizeof list);
    return cfg_error(cfg, "algorithm", "bucket", SIM_ECONFIG, err,
                            "gradient buckets are implemented for %s only, not %s "
                            "(use bucket = 0)",
                            list, vt->name);
}

int algo_needs_server(const algo_vt *vt, const cfg_config *cfg)
{
    return vt->server == ALGO_SERVER_ALWAYS ||
           (vt->server == ALGO_SERVER_PS && cfg->collective == SIM_COLL_PS);
}

int algo_reads_optimizer_key(const algo_vt *vt, const cfg_config *cfg, const char *key)
{
    const algo_optim *own = vt && vt->optimizer ? algo_optim_find(vt->optimizer) : NULL;
    const algo_optim *o = algo_optim_find(cfg->optimizer);
    return (o && algo_optim_reads_key(o, key)) || (own && algo_optim_reads_key(own, key));
}
