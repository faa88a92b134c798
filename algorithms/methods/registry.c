/* The method registry: every method's vtable, looked up by name, and the
 * checks that need to know every method. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "algorithms/core/algo.h"
#include "algorithms/compress/compress.h"

extern const algo_vt algo_allreduce_sgd;
extern const algo_vt algo_asgd;
extern const algo_vt algo_dpsgd;
extern const algo_vt algo_dsgd_atc;
extern const algo_vt algo_dmsgd;
extern const algo_vt algo_decentlam;
extern const algo_vt algo_momentum_consensus;
extern const algo_vt algo_consensus_control;
extern const algo_vt algo_ad_psgd;
extern const algo_vt algo_swarm_sgd;
extern const algo_vt algo_local_sgd;
extern const algo_vt algo_post_local_sgd;
extern const algo_vt algo_adaptive_local_sgd;
extern const algo_vt algo_slowmo;
extern const algo_vt algo_hierarchical_local_sgd;
extern const algo_vt algo_overlap_local_sgd;
extern const algo_vt algo_onebit_adam;
extern const algo_vt algo_onebit_lamb;
extern const algo_vt algo_gravac;

const algo_vt *const algo_registry[] = {
    &algo_allreduce_sgd,
    &algo_asgd,
    &algo_dpsgd,
    &algo_dsgd_atc,
    &algo_dmsgd,
    &algo_decentlam,
    &algo_momentum_consensus,
    &algo_consensus_control,
    &algo_ad_psgd,
    &algo_swarm_sgd,
    &algo_local_sgd,
    &algo_post_local_sgd,
    &algo_adaptive_local_sgd,
    &algo_slowmo,
    &algo_hierarchical_local_sgd,
    &algo_overlap_local_sgd,
    &algo_onebit_adam,
    &algo_onebit_lamb,
    &algo_gravac,
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

