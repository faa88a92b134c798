/* The optimizer registry, the state every optimizer shares (buffers, step
 * count, layer table) and the generic step forms built from an optimizer's
 * direction (see optim.h). The state is allocated once; steps allocate
 * nothing. */
#include "algorithms/optim/optim_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DTSIM_OPTIMIZER(id) extern const algo_optim algo_optim_##id;
#include "algorithms/optim/optimizers.def"
#undef DTSIM_OPTIMIZER

const algo_optim *const algo_optim_registry[] = {
#define DTSIM_OPTIMIZER(id) &algo_optim_##id,
#include "algorithms/optim/optimizers.def"
#undef DTSIM_OPTIMIZER
    NULL,
};

const algo_optim *algo_optim_find(const char *name)
{
    for (int i = 0; algo_optim_registry[i]; i++)
        if (strcasecmp(algo_optim_registry[i]->name, name) == 0)
            return algo_optim_registry[i];
    return NULL;
}

const char *algo_optim_name_at(int i)
{
    for (int k = 0; algo_optim_registry[k]; k++)
        if (k == i)
            return algo_optim_registry[k]->name;
    return NULL;
}

int algo_optim_reads_key(const algo_optim *o, const char *key)
{
    for (; o; o = o->base)
        for (const cfg_key *k = o->keys; k && k->key; k++)
            if (strcmp(k->key, key) == 0)
                return 1;
    return 0;
}

void algo_optim_hp_from_config(const cfg_config *cfg, algo_optim_hp *hp)
{
    *hp = (algo_optim_hp){
        .momentum = cfg->momentum,
        .nesterov = cfg->nesterov,
        .weight_decay = cfg->weight_decay,
        .beta1 = cfg->beta1,
        .beta2 = cfg->beta2,
        .eps = cfg->eps,
        .bias_correction = cfg->bias_correction,
        .min_trust = cfg->lamb_min_trust,
        .max_trust = cfg->lamb_max_trust,
    };
}

int algo_optim_from_config(const cfg_config *cfg, const algo_optim **out, sim_err *err)
{
    const algo_optim *o = algo_optim_find(cfg->optimizer);
    if (o) {
        *out = o;
        return 0;
    }
    char known[256] = "";
    size_t used = 0;
    for (int i = 0; algo_optim_registry[i] && used < sizeof known - 32; i++)
        used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                                 algo_optim_registry[i]->name);
    return cfg_error(cfg, "algorithm", "optimizer", SIM_ECONFIG, err,
                     "unknown optimizer '%s' (known: %s)", cfg->optimizer, known);
}

int algo_optim_require_sgd(const cfg_config *cfg, const char *why, sim_err *err)
{
    const algo_optim *o;
    int rc = algo_optim_from_config(cfg, &o, err);
    if (rc)
        return rc;
    if (strcmp(o->name, "sgd") == 0)
        return 0;
    return cfg_error(cfg, "algorithm", "optimizer", SIM_ECONFIG, err,
                            "%s takes only sgd (%s), got '%s'", cfg->algorithm, why, o->name);
}

/* Copies the layer table, closing it with one layer for parameters past
 * its end; 0 or SIM_EINTERNAL for a table that is not contiguous from 0. */
static int set_layers(algo_optim_state *s, const wl_layer *layers, int n_layers, sim_err *err)
{
    int64_t end = 0;
    for (int l = 0; l < n_layers; l++) {
        if (layers[l].offset != end || layers[l].size < 0 || end + layers[l].size > s->d)
            return sim_err_set(err, SIM_EINTERNAL,
                               "optimizer: layer %d (offset %lld, size %lld) does not follow "
                               "the previous one within %lld parameters",
                               l, (long long)layers[l].offset, (long long)layers[l].size,
                               (long long)s->d);
        end += layers[l].size;
    }
    int n = n_layers + (end < s->d || n_layers == 0);
    s->layer_off = malloc((size_t)n * sizeof *s->layer_off);
    s->layer_len = malloc((size_t)n * sizeof *s->layer_len);
    s->trust = malloc((size_t)n * sizeof *s->trust);
    if (!s->layer_off || !s->layer_len || !s->trust)
        return sim_err_set(err, SIM_ENOMEM, "optimizer: out of memory");
    for (int l = 0; l < n_layers; l++) {
        s->layer_off[l] = layers[l].offset;
        s->layer_len[l] = layers[l].size;
    }
    if (n > n_layers) {
        s->layer_off[n - 1] = end;
        s->layer_len[n - 1] = s->d - end;
    }
    for (int l = 0; l < n; l++)
        s->trust[l] = 1.0;
    s->n_layers = n;
    return 0;
}

int algo_optim_state_create(const algo_optim *o, const algo_optim_hp *hp, int64_t d,
                            const wl_layer *layers, int n_layers, algo_optim_state **out,
                            sim_err *err)
{
    algo_optim_state *s = calloc(1, sizeof *s);
    if (!s)
        return sim_err_set(err, SIM_ENOMEM, "optimizer %s: out of memory", o->name);
    int rc;
    s->o = o;
    s->hp = *hp;
    s->d = d;
    s->n_vec = o->vectors ? o->vectors(hp) : ALGO_OPTIM_MAX_VECTORS;
    if (s->n_vec < 0 || s->n_vec > ALGO_OPTIM_MAX_VECTORS) {
        rc = sim_err_set(err, SIM_EINTERNAL, "optimizer %s: %d state vectors", o->name,
                         s->n_vec);
        goto fail;
    }
    if ((rc = set_layers(s, layers, n_layers, err)) < 0)
        goto fail;
    if (s->n_vec > 0) {
        float *slab = calloc((size_t)s->n_vec * (size_t)d, sizeof(float));
        if (!slab) {
            rc = sim_err_set(err, SIM_ENOMEM, "optimizer %s: out of memory for %d x %lld floats",
                             o->name, s->n_vec, (long long)d);
            goto fail;
        }
        for (int k = 0; k < s->n_vec; k++)
            s->vec[k] = slab + (int64_t)k * d;
    }
    *out = s;
    return 0;
fail:
    algo_optim_state_destroy(s);
    return rc;
}

int algo_optim_state_from_config(const cfg_config *cfg, const wl_model *model, int64_t d,
                                 algo_optim_state **out, sim_err *err)
{
    const algo_optim *o;
    int rc = algo_optim_from_config(cfg, &o, err);
    if (rc)
        return rc;
    algo_optim_hp hp;
    algo_optim_hp_from_config(cfg, &hp);
    return algo_optim_state_create(o, &hp, d, model ? model->layers : NULL,
                                   model ? model->n_layers : 0, out, err);
}

void algo_optim_state_destroy(algo_optim_state *s)
{
    if (!s)
        return;
    free(s->vec[0]);
    free(s->layer_off);
    free(s->layer_len);
    free(s->trust);
    free(s);
}

void algo_optim_direction(algo_optim_state *s, const float *x, float *g)
{
    s->t++;
    s->o->direction(s, x, g);
}

/* x <- x - lr dir once the step count is advanced. */
static void step_in_place(algo_optim_state *s, float *x, float *g, double lr)
{
    if (s->o->step) {
        s->o->step(s, x, g, lr);
        return;
    }
    s->o->direction(s, x, g);
    const float flr = (float)lr;
    for (int64_t j = 0; j < s->d; j++)
        x[j] -= flr * g[j];
}

void algo_optim_step(algo_optim_state *s, float *x, float *g, double lr)
{
    s->t++;
    step_in_place(s, x, g, lr);
}

void algo_optim_step_from(algo_optim_state *s, float *out, const float *base, const float *x,
                          float *g, double lr)
{
    s->t++;
    if (out == base && base == x) {
        step_in_place(s, out, g, lr);
        return;
    }
    if (s->o->step_from && out != base) {
        s->o->step_from(s, out, base, x, g, lr);
        return;
    }
    s->o->direction(s, x, g);
    const float flr = (float)lr;
    for (int64_t j = 0; j < s->d; j++)
        out[j] = base[j] - flr * g[j];
}

void algo_optim_reset(algo_optim_state *s)
{
    if (s->vec[0])
        memset(s->vec[0], 0, (size_t)s->n_vec * (size_t)s->d * sizeof(float));
    for (int l = 0; l < s->n_layers; l++)
        s->trust[l] = 1.0;
    s->t = 0;
}

const algo_optim_hp *algo_optim_params(const algo_optim_state *s) { return &s->hp; }
float *algo_optim_m(const algo_optim_state *s) { return s->vec[0]; }
float *algo_optim_v(const algo_optim_state *s) { return s->n_vec > 1 ? s->vec[1] : NULL; }
void algo_optim_freeze_v(algo_optim_state *s, int frozen) { s->freeze_v = frozen != 0; }

const double *algo_optim_trust(const algo_optim_state *s)
{
    return s->o->trust_ratio ? s->trust : NULL;
}
