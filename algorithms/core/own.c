/* The run's owner list (own.h): one array of (pointer, cleanup) pairs in
 * the runner's bookkeeping, grown by doubling, emptied back to front. */
#include "algorithms/core/own.h"
#include "algorithms/core/algo.h"
#include "algorithms/core/runner.h"

#include <stdlib.h>

void *algo_env_own(algo_env *env, void *ptr, void (*fn)(void *))
{
    algo_runner *r = env->run;
    if (!ptr)
        return NULL;
    if (r->n_owned == r->cap_owned) {
        int cap = r->cap_owned ? 2 * r->cap_owned : 32;
        algo_owned *v = realloc(r->owned, (size_t)cap * sizeof *v);
        if (!v) {
            fn(ptr);
            r->oom = 1;
            return NULL;
        }
        r->owned = v;
        r->cap_owned = cap;
    }
    r->owned[r->n_owned++] = (algo_owned){ptr, fn};
    return ptr;
}

void *algo_env_alloc(algo_env *env, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        env->run->oom = 1;
    return algo_env_own(env, p, free);
}

void *algo_env_calloc(algo_env *env, size_t count, size_t size)
{
    void *p = count && size ? calloc(count, size) : calloc(1, 1);
    if (!p)
        env->run->oom = 1;
    return algo_env_own(env, p, free);
}

static void optim_free(void *s) { algo_optim_state_destroy(s); }
static void compressor_free(void *c) { algo_compress_destroy(c); }

/* The n workers of one algo_compress_workers_create, in a block the run owns. */
typedef struct owned_workers {
    algo_compress_worker *w;
    int n;
} owned_workers;

static void compress_workers_free(void *p)
{
    owned_workers *o = p;
    algo_compress_workers_destroy(o->w, o->n);
}

int algo_env_optim_create(algo_env *env, const algo_optim *o, const algo_optim_hp *hp,
                          algo_optim_state **out, sim_err *err)
{
    algo_optim_hp own;
    int rc = 0;
    if (!o && (rc = algo_optim_from_config(env->cfg, &o, err)) < 0)
        return rc;
    if (!hp) {
        algo_optim_hp_from_config(env->cfg, &own);
        hp = &own;
    }
    const wl_layer *layers = env->model ? env->model->layers : NULL;
    int nl = env->model ? env->model->n_layers : 0;
    algo_optim_state *s;
    if ((rc = algo_optim_state_create(o, hp, env->d, layers, nl, &s, err)) < 0)
        return rc;
    if (!(*out = algo_env_own(env, s, optim_free)))
        return algo_env_alloc_check(env, env->cfg->algorithm, err);
    return 0;
}

int algo_env_compressor_create(algo_env *env, const char *spec, algo_compressor **out,
                               sim_err *err)
{
    algo_compressor *c;
    int rc = spec ? algo_compress_create(spec, &c, err)
                  : algo_compress_from_config(env->cfg, &c, err);
    if (rc < 0)
        return rc;
    if (!(*out = algo_env_own(env, c, compressor_free)))
        return algo_env_alloc_check(env, env->cfg->algorithm, err);
    return 0;
}

int algo_env_compress_workers(algo_env *env, const algo_compressor *c, int error_feedback,
                              algo_compress_worker **out, sim_err *err)
{
    int rc = algo_compress_workers_create(c, env->n, env->d, env->wire_params,
                                          env->wire_value_bytes, error_feedback, env->cfg->seed,
                                          out, err);
    if (rc)
        return rc;
    owned_workers *o = algo_env_alloc(env, sizeof *o);
    if (o)
        *o = (owned_workers){.w = *out, .n = env->n};
    else
        algo_compress_workers_destroy(*out, env->n);
    if (!o || !algo_env_own(env, o, compress_workers_free))
        *out = NULL;
    return algo_env_alloc_check(env, env->cfg->algorithm, err);
}

int algo_local_optim_init(algo_local_optim *lo, algo_env *env, int snapshot_decay,
                          sim_err *err)
{
    *lo = (algo_local_optim){.s = NULL, .n = env->n, .snapshot_wd = 0};
    const algo_optim *o;
    int rc = algo_optim_from_config(env->cfg, &o, err);
    if (rc < 0)
        return rc;
    algo_optim_hp hp;
    algo_optim_hp_from_config(env->cfg, &hp);
    if (snapshot_decay && !o->decoupled_wd) {
        lo->snapshot_wd = hp.weight_decay;
        hp.weight_decay = 0;
    }
    lo->s = algo_env_calloc(env, (size_t)env->n, sizeof *lo->s);
    for (int i = 0; lo->s && i < env->n; i++)
        if ((rc = algo_env_optim_create(env, o, &hp, &lo->s[i], err)) < 0)
            return rc;
    return algo_env_alloc_check(env, env->cfg->algorithm, err);
}

int algo_env_alloc_check(const algo_env *env, const char *who, sim_err *err)
{
    if (!env->run->oom)
        return 0;
    return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", who);
}

void algo_env_release(algo_env *env)
{
    algo_runner *r = env->run;
    while (r->n_owned > 0) {
        algo_owned *o = &r->owned[--r->n_owned];
        o->fn(o->ptr);
    }
    free(r->owned);
    r->owned = NULL;
    r->cap_owned = 0;
    r->oom = 0;
}
