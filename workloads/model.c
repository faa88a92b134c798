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

#define DTSIM_MODEL(id) extern const wl_model_vt wl_##id##_vt;
#include "workloads/models.def"
#undef DTSIM_MODEL

const wl_model_vt *const wl_model_registry[] = {
#define DTSIM_MODEL(id) &wl_##id##_vt,
#include "workloads/models.def"
#undef DTSIM_MODEL
    NULL,
};

typedef struct model_box {
    wl_model m;             /* must stay first: wl_model_destroy frees the box */
    const wl_dataset *ds;   /* borrowed, only during vt->create */
    const wl_model_opts *opts; /* borrowed, only during vt->create */
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

const wl_dataset *wl_model_dataset(const wl_model *m)
{
    return ((const model_box *)m)->ds;
}

const wl_model_opts *wl_model_opts_of(const wl_model *m)
{
    static const wl_model_opts none = {0};
    const model_box *box = (const model_box *)m;
    return box->opts ? box->opts : &none;
}

int64_t wl_model_add_layer(wl_model *m, const char *name, int64_t size)
{
    int64_t off = 0;
    if (m->n_layers > 0)
        off = m->layers[m->n_layers - 1].offset + m->layers[m->n_layers - 1].size;
    if (m->n_layers < (int)(sizeof m->layers / sizeof m->layers[0])) {
        wl_layer *l = &m->layers[m->n_layers++];
        snprintf(l->name, sizeof l->name, "%s", name);
        l->offset = off;
        l->size = size;
    }
    m->n_params = off + size;
    return off;
}

size_t wl_model_stats_workspace_floats(const wl_model *m, int64_t max_batch)
{
    if (max_batch < 1)
        max_batch = 1;
    return 2 * (size_t)m->n_params + 2 + 4 * (size_t)max_batch +
           m->vt->workspace_floats(m, max_batch);
}

static double sumsq(const float *v, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)v[i] * (double)v[i];
    return s;
}

/* V, V_ip, V_o from the sums over samples of e2 = ||a_s - gbar||^2,
 * t = (a_s - gbar).gbar and t^2; the mean of t (0 up to rounding) is
 * removed so that V_ip is the sample variance of q_s = gnorm2 + t. With
 * o_s - mean(o) = e_s - ((t_s - mean t) / gnorm2) gbar, summing the squares
 * gives V_o = V - V_ip / gnorm2. */
static void stats_from_sums(double se2, double st, double st2, int64_t b, wl_batch_stats *out)
{
    const double g = out->gnorm2, nb = (double)b, tbar = st / nb;
    double vip = (st2 - nb * tbar * tbar) / (nb - 1);
    double v = se2 / (nb - 1);
    double vo = g > 0 ? v - vip / g : v;
    out->v_norm = v > 0 ? v : 0;
    out->v_ip = vip > 0 ? vip : 0;
    out->v_orth = vo > 0 ? vo : 0;
}

void wl_stats_finish(const wl_model *m, const float *gbar, const double *sq, const double *q,
                     int64_t b, wl_batch_stats *out)
{
    out->gnorm2 = sumsq(gbar, m->n_params);
    const double g = out->gnorm2;
    double se2 = 0, st = 0, st2 = 0;
    for (int64_t s = 0; s < b; s++) {
        double t = q[s] - g;
        se2 += sq[s] - 2 * q[s] + g;
        st += t;
        st2 += t * t;
    }
    stats_from_sums(se2, st, st2, b, out);
}

int wl_model_batch_stats(const wl_model *m, const float *params, const float *x,
                         const float *y, int64_t b, wl_batch_stats *out, float *ws)
{
    const int64_t d = m->n_params;
    memset(out, 0, sizeof *out);
    out->b = b;
    if (b >= 2 && m->vt->batch_stats)
        return m->vt->batch_stats(m, params, x, y, b, out, ws);
    float *gbar = ws, *a = ws + d, *mws = wl_stats_model_ws(m, ws, b > 0 ? b : 1);
    out->loss = m->vt->loss_grad(m, params, x, y, b > 0 ? b : 0, gbar, mws);
    out->gnorm2 = sumsq(gbar, d);
    if (b < 2)
        return SIM_ECONFIG;
    /* one per-sample gradient at a time: e = a_s - gbar in double */
    double se2 = 0, st = 0, st2 = 0;
    for (int64_t s = 0; s < b; s++) {
        m->vt->loss_grad(m, params, x + s * m->dim, y + s, 1, a, mws);
        double e2 = 0, t = 0;
        for (int64_t j = 0; j < d; j++) {
            double e = (double)a[j] - (double)gbar[j];
            e2 += e * e;
            t += e * (double)gbar[j];
        }
        se2 += e2;
        st += t;
        st2 += t * t;
    }
    stats_from_sums(se2, st, st2, b, out);
    return 0;
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
    return wl_model_create_opts(spec, ds, NULL, err);
}

wl_model *wl_model_create_opts(const char *spec, const wl_dataset *ds, const wl_model_opts *o,
                               sim_err *err)
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
        char hint[96];
        known_models(known, sizeof known);
        sim_err_set(err, SIM_ECONFIG, "unknown model '%s' (%sknown: %s)",
                    sp.name, sim_suggest(sp.name, known, hint, sizeof hint), known);
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
    box->opts = o;
    box->m.vt = vt;
    box->m.dim = ds->dim;
    box->m.classes = ds->classes;
    int rc = vt->create(&box->m, args, sp.nargs, err);
    box->ds = NULL;
    box->opts = NULL;
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
