/* The compressor registry, spec parsing, message buffers and the
 * per-worker error feedback (see compress.h). The residual buffer doubles
 * as p: e += u gives p in place, C(p) is encoded from it, and subtracting
 * the decoded message leaves e = p - C(p) (exactly 0 on the kept
 * coordinates of a sparsifier, since x - x = 0 in floating point). */
#include "algorithms/compress/compress.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/rng.h"
#include "sim/units.h"

#define DTSIM_COMPRESSOR(id) extern const algo_compress_vt algo_compress_##id;
#include "algorithms/compress/compressors.def"
#undef DTSIM_COMPRESSOR

const algo_compress_vt *const algo_compress_registry[] = {
#define DTSIM_COMPRESSOR(id) &algo_compress_##id,
#include "algorithms/compress/compressors.def"
#undef DTSIM_COMPRESSOR
    NULL,
};

const algo_compress_vt *algo_compress_find(const char *name)
{
    for (int i = 0; algo_compress_registry[i]; i++)
        if (strcasecmp(algo_compress_registry[i]->name, name) == 0)
            return algo_compress_registry[i];
    return NULL;
}

int algo_compress_create(const char *spec, algo_compressor **out, sim_err *err)
{
    sim_spec sp;
    if (!spec)
        return sim_err_set(err, SIM_ECONFIG, "compressor '': none given");
    int rc = sim_spec_parse(spec, &sp, err);
    if (rc != 0) {
        sim_err_prefix(err, "compressor '%s'", spec);
        return rc < 0 ? rc : SIM_ECONFIG;
    }
    const algo_compress_vt *vt = algo_compress_find(sp.name);
    if (!vt) {
        char known[256] = "";
        char hint[96];
        size_t used = 0;
        for (int i = 0; algo_compress_registry[i] && used < sizeof known; i++)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                                     algo_compress_registry[i]->name);
        return sim_err_set(err, SIM_ECONFIG, "unknown compressor '%s' (%sknown: %s)", sp.name,
                           sim_suggest(sp.name, known, hint, sizeof hint), known);
    }
    algo_compressor *c = calloc(1, sizeof *c);
    if (!c)
        return sim_err_set(err, SIM_ENOMEM, "compressor '%s': out of memory", spec);
    c->vt = vt;
    c->error_feedback = 1;
    const char *args[SIM_SPEC_MAX_ARGS];
    size_t used = (size_t)snprintf(c->spec, sizeof c->spec, "%s", vt->name);
    for (int i = 0; i < sp.nargs; i++) {
        args[i] = sp.args[i];
        if (used < sizeof c->spec)
            used += (size_t)snprintf(c->spec + used, sizeof c->spec - used, "%s%s",
                                     i ? ", " : "(", sp.args[i]);
    }
    if (sp.nargs > 0 && used < sizeof c->spec)
        snprintf(c->spec + used, sizeof c->spec - used, ")");
    rc = vt->parse ? vt->parse(c, args, sp.nargs, err)
         : sp.nargs != 0 ? sim_err_set(err, SIM_ECONFIG, "%s takes no arguments, got %d",
                                       vt->name, sp.nargs)
                         : 0;
    if (rc != 0) {
        free(c);
        return rc < 0 ? rc : SIM_ECONFIG;
    }
    *out = c;
    return 0;
}

void algo_compress_destroy(algo_compressor *c) { free(c); }

int algo_compress_from_config(const cfg_config *cfg, algo_compressor **out, sim_err *err)
{
    sim_err local = {0};
    if (!err)
        err = &local;
    int rc = algo_compress_create(cfg->compressor, out, err);
    if (rc) {
        char msg[sizeof err->msg];
        memcpy(msg, err->msg, sizeof msg);
        return cfg_error(cfg, "algorithm", "compressor", rc, err, "%s", msg);
    }
    (*out)->error_feedback = cfg->error_feedback;
    return 0;
}

int64_t algo_compress_entries(const algo_compressor *c, int64_t d)
{
    return c->vt->entries ? c->vt->entries(c, d) : d;
}

int algo_compress_parse_ratio(algo_compressor *c, const char *const *args, int nargs,
                              sim_err *err)
{
    const char *name = c->vt->name;
    if (nargs != 1)
        return sim_err_set(err, SIM_ECONFIG,
                           "%s takes one argument, the kept fraction, such as %s(0.01); got %d",
                           name, name, nargs);
    double r;
    if (sim_parse_double(args[0], &r, err) != 0)
        return sim_err_set(err, SIM_ECONFIG, "%s: expected a ratio such as 0.01, got '%s'",
                           name, args[0]);
    if (!(r > 0.0 && r <= 1.0))
        return sim_err_set(err, SIM_ECONFIG, "%s: ratio must be in (0, 1], got %s", name,
                           args[0]);
    c->param[0] = r;
    return 0;
}

int64_t algo_compress_ratio_entries(const algo_compressor *c, int64_t d)
{
    if (d <= 0)
        return 0;
    long long k = llround(c->param[0] * (double)d);
    if (k < 1)
        k = 1;
    return k > d ? d : (int64_t)k;
}

void algo_compress_add_sparse(const algo_compressor *c SIM_UNUSED, const algo_compress_msg *msg,
                              float scale, float *out)
{
    const float *v = msg->values;
    const int32_t *idx = msg->indices;
    for (int64_t i = 0; i < msg->nnz; i++)
        out[idx[i]] += scale * v[i];
}

void algo_compress_decode_add(const algo_compressor *c, const algo_compress_msg *msg,
                              float scale, float *out)
{
    if (c->vt->decode_add) {
        c->vt->decode_add(c, msg, scale, out);
        return;
    }
    const float *v = msg->values;
    for (int64_t j = 0; j < msg->nnz; j++)
        out[j] += scale * v[j];
}

static void worker_release(algo_compress_worker *w)
{
    free(w->msg.values);
    free(w->msg.indices);
    free(w->residual);
    if (w->rng)
        gsl_rng_free(w->rng);
}

int algo_compress_workers_create(const algo_compressor *c, int n, int64_t d, int64_t d_wire,
                                 int value_bytes, int error_feedback, uint64_t seed,
                                 algo_compress_worker **out, sim_err *err)
{
    const int sparse = !c->vt->identity;
    if (sparse && d > INT32_MAX)
        return sim_err_set(err, SIM_EINPUT,
                           "compressor %s: %lld parameters do not fit int32 indices", c->spec,
                           (long long)d);
    const int64_t cap = algo_compress_entries(c, d);
    const size_t slots = (size_t)(cap > 0 ? cap : 1);
    algo_compress_worker *ws = calloc((size_t)n, sizeof *ws);
    for (int i = 0; ws && i < n; i++) {
        algo_compress_worker *w = &ws[i];
        *w = (algo_compress_worker){.comp = c, .d = d, .d_wire = d_wire,
                                    .value_bytes = value_bytes,
                                    .error_feedback = error_feedback};
        w->msg = (algo_compress_msg){.d = d, .cap = cap,
                                     .bytes = c->vt->wire_bytes(c, d_wire, value_bytes)};
        w->msg.values = malloc(slots * sizeof *w->msg.values);
        if (sparse)
            w->msg.indices = malloc(slots * sizeof *w->msg.indices);
        if (error_feedback)
            w->residual = calloc((size_t)d, sizeof *w->residual);
        if (c->vt->random)
            w->rng = sim_rng_create(seed, SIM_STREAM_COMPRESSOR,
                                    c->vt->shared_random ? 0 : (uint64_t)i);
        if (!w->msg.values || (sparse && !w->msg.indices) || (error_feedback && !w->residual) ||
            (c->vt->random && !w->rng)) {
            algo_compress_workers_destroy(ws, i + 1);
            ws = NULL;
        }
    }
    if (!ws)
        return sim_err_set(err, SIM_ENOMEM, "compressor %s: out of memory", c->spec);
    *out = ws;
    return 0;
}

void algo_compress_workers_destroy(algo_compress_worker *w, int n)
{
    for (int i = 0; w && i < n; i++)
        worker_release(&w[i]);
    free(w);
}

void algo_compress_worker_reset(algo_compress_worker *w)
{
    if (w->residual)
        memset(w->residual, 0, (size_t)w->d * sizeof *w->residual);
}

const algo_compress_msg *algo_compress_worker_encode(algo_compress_worker *w,
                                                     const float *input)
{
    const algo_compressor *c = w->comp;
    const int64_t d = w->d;
    if (!w->error_feedback) {
        c->vt->encode(c, input, d, w->rng, &w->msg);
    } else {
        float *e = w->residual;
        for (int64_t j = 0; j < d; j++)
            e[j] += input[j];              /* e now holds p = u + e */
        c->vt->encode(c, e, d, w->rng, &w->msg);
        algo_compress_decode_add(c, &w->msg, -1.0f, e); /* e = p - C(p) */
    }
    w->msg.bytes = c->vt->wire_bytes(c, w->d_wire, w->value_bytes);
    return &w->msg;
}
