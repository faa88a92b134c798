/* The run's one owner of memory and cleanups, flat like an APR pool: the
 * blocks of algo_env_alloc/algo_env_calloc and the objects handed to
 * algo_env_own live until the run ends, when the runner (algo_env_release,
 * after the method's destroy) runs the cleanups in reverse order of
 * registration (a block's is free). A failed allocation sets one sticky
 * flag, so a constructor allocates everything and checks once
 * (algo_env_alloc_check); on an error it returns and leaves the rest to
 * the owner. Only for state that lives the whole run: per-round scratch
 * and structures rebuilt on a rejoin keep their own malloc and free. */
#ifndef DTSIM_ALGO_OWN_H
#define DTSIM_ALGO_OWN_H

#include <stddef.h>

#include "algorithms/compress/compress.h"
#include "algorithms/optim/optim.h"
#include "sim/err.h"

typedef struct algo_env algo_env;

/* bytes (alloc: uninitialised) or count * size zeroed bytes (calloc),
 * freed when the run ends. NULL, with the flag set, when out of memory. */
void *algo_env_alloc(algo_env *env, size_t bytes);
void *algo_env_calloc(algo_env *env, size_t count, size_t size);
/* Registers fn(ptr) to run when the run ends, before the cleanups
 * registered earlier. Returns ptr; a NULL ptr registers nothing. When the
 * list cannot grow, fn(ptr) runs now, the flag is set and NULL returned. */
void *algo_env_own(algo_env *env, void *ptr, void (*fn)(void *));
/* A state of optimizer o (NULL: [algorithm] optimizer) with the
 * hyper-parameters hp (NULL: the configuration's) for env->d floats and the
 * model's layers, owned by the run, into *out. 0 or the code (err). */
int algo_env_optim_create(algo_env *env, const algo_optim *o, const algo_optim_hp *hp,
                          algo_optim_state **out, sim_err *err);
/* The compressor of spec (NULL: [algorithm] compressor, with its
 * error_feedback; algo_compress_from_config), owned by the run, into *out.
 * 0 or the code (err). */
int algo_env_compressor_create(algo_env *env, const char *spec, algo_compressor **out,
                               sim_err *err);
/* The env->n workers' states of compressor c (algo_compress_workers_create
 * for env's d, wire_params, wire_value_bytes and the run's seed) into
 * *out, owned by the run. 0 or an error code (err). */
int algo_env_compress_workers(algo_env *env, const algo_compressor *c, int error_feedback,
                              algo_compress_worker **out, sim_err *err);
/* The workers' optimizer states: one state of the configured [algorithm]
 * optimizer per worker (docs/optimizers.md), for every method and driver
 * whose workers step on their own. */
typedef struct algo_local_optim {
    algo_optim_state **s; /* n states, s[i] for worker i */
    int n;
    double snapshot_wd;   /* weight decay the caller adds to the gradient itself, or 0 */
} algo_local_optim;

/* Creates the n states from env->cfg (env->d floats, the model's layers).
 * snapshot_decay = 1: a coupled optimizer's weight decay is left to the
 * caller (snapshot_wd; it adds wd x where it reads the gradient) and the
 * states step with wd = 0; decoupled optimizers keep theirs. The run owns
 * the states. Returns 0, or an error code with err
 * filled. */
int algo_local_optim_init(algo_local_optim *lo, algo_env *env, int snapshot_decay,
                          sim_err *err);

/* 0 while every allocation of the run succeeded, else SIM_ENOMEM with
 * "who: out of memory" in err. */
int algo_env_alloc_check(const algo_env *env, const char *who, sim_err *err);

#endif
