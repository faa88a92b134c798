/* The model registry and the generic part of model construction: parse the
 * spec, find the vtable, let the model check that it fits the dataset and
 * size itself. Invariant: a wl_model handed out lives inside a model_box
 * (first member), so wl_model_destroy frees the box; the box's dataset
 * pointer is set only while vt->create runs. */
#include "workloads/model.h"

#include <gsl/gsl_randist.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/units.h"
#include "workloads/models_impl.h"

const wl_model_vt *const wl_model_registry[] = {
    &wl_linreg_vt,
    &wl_softmax_vt,
    NULL,
};

typedef struct model_box {
    wl_model m;             /* must stay first: wl_model_destroy frees the box */
    const wl_dataset *ds;   /* borrowed, only during vt->create */
} model_box;

const wl_model_vt *wl_model_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; wl_model_registry[i]; i++)
        if (strcmp(wl_model_registry[i]->name, name) == 0)
            return wl_model_registry[i];
    return NULL;
}

static void dataset_kind(const wl_dataset *ds, char *buf, size_t len)
{
    if (ds->classes == 0)
        snprintf(buf, len, "a regression dataset");
    else if (ds->classes == 2)
        snprintf(buf, len, "a binary classification dataset");
    else
        snprintf(buf, len, "a %d-class classification dataset", ds->classes);
}

int wl_model_misfit(const wl_model *m, const char *need, sim_err *err)
{
    const model_box *box = (const model_box *)m;
    char kind[64] = "an unsuitable dataset";
    const char *dname = "?";
    if (box->ds) {
        dataset_kind(box->ds, kind, sizeof kind);
        dname = box->ds->name;
    }
    return sim_err_set(err, SIM_ECONFIG, "model '%s' needs %s; '%s' is %s", m->vt->name,
                       need, dname, kind);
}

void wl_model_init_gaussian(float *p, int64_t n, double sd, gsl_rng *rng)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)gsl_ran_gaussian(rng, sd);
}

static void known_models(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; wl_model_registry[i] && used < len; i++) {
        const wl_model_vt *vt = wl_model_registry[i];
        int k = snprintf(buf + used, len - used, "%s%s%s", i ? ", " : "", vt->name,
                         vt->args ? vt->args : "");
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

wl_model *wl_model_create(const char *spec, const wl_dataset *ds, sim_err *err)
{
    sim_spec sp;
    if (!spec || !ds) {
        sim_err_set(err, SIM_EINTERNAL, "wl_model_create: NULL spec or dataset");
        return NULL;
    }
    if (sim_spec_parse(spec, &sp, err) != 0) {
        sim_err_prefix(err, "model '%s'", spec);
        return NULL;
    }
    const wl_model_vt *vt = wl_model_find(sp.name);
    if (!vt) {
        char known[512];
        known_models(known, sizeof known);
        sim_err_set(err, SIM_ECONFIG, "unknown model '%s' (known: %s)", sp.name, known);
        return NULL;
    }
    if (ds->dim <= 0) {
        sim_err_set(err, SIM_ECONFIG, "model '%s': dataset '%s' has no features", spec,
                    ds->name);
        return NULL;
    }
    model_box *box = calloc(1, sizeof *box);
    if (!box) {
        sim_err_set(err, SIM_ENOMEM, "model '%s': out of memory", spec);
        return NULL;
    }
    const char *args[SIM_SPEC_MAX_ARGS];
    for (int i = 0; i < sp.nargs; i++)
        args[i] = sp.args[i];
    box->ds = ds;
    box->m.vt = vt;
    box->m.dim = ds->dim;
    box->m.classes = ds->classes;
    int rc = vt->create(&box->m, args, sp.nargs, err);
    box->ds = NULL;
    if (rc != 0) {
        free(box);
        return NULL;
    }
    return &box->m;
}

void wl_model_destroy(wl_model *m)
{
    if (!m)
        return;
    if (m->vt && m->vt->destroy)
        m->vt->destroy(m);
    free((model_box *)m);
}
