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

static const sim_key no_keys[] = {{0}};

const algo_vt *algo_find(const char *name)
{
    for (int i = 0; algo_registry[i]; i++)
        if (strcasecmp(algo_registry[i]->name, name) == 0)
            return algo_registry[i];
    return NULL;
}

const sim_key *algo_keys(const char *name)
{
    const algo_vt *vt = algo_find(name);
    if (!vt)
        return NULL;
    return vt->keys ? vt->keys : no_keys;
}

int algo_compress_check(const algo_vt *vt, const sim_config *cfg, sim_err *err)
{
    algo_compressor *c = algo_compress_from_config(cfg, err);
    if (!c)
        return err && err->code ? err->code : SIM_ECONFIG;
    int identity = c->vt->identity;
    algo_compress_destroy(c);
    if (!identity && !vt->supports_compression) {
        char list[256] = "";
        size_t len = 0;
        for (int i = 0; algo_registry[i]; i++)
            if (algo_registry[i]->supports_compression && len < sizeof list)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                                        algo_registry[i]->name);
        return sim_config_error(cfg, "algorithm", "compressor", SIM_ECONFIG, err,
                                "%s does not support compression (methods that do: %s; "
                                "docs/compressors.md says why)",
                                vt->name, list);
    }
    return 0;
}

