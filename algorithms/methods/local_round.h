/* The Local SGD round (Lin et al., ICLR 2020), shared by local_sgd,
 * post_local_sgd, adaptive_local_sgd, hierarchical_local_sgd and slowmo
 * (base = local_sgd), on the synchronous-round driver
 * (algorithms/drivers/sync.h):
 *   local step:   x_i <- x_i - lr dir_i     (worker i's own optimizer state)
 *   after H_cur:  xbar = (1/m) sum_i x_i    (formed once, at the round's
 *                 first completion; ops->outer after it); x_i <- xbar
 * docs/algorithms.md, sections 1.5, 1.8, 2 and 4 (crashes: docs/faults.md). */
#ifndef DTSIM_ALGO_LOCAL_ROUND_H
#define DTSIM_ALGO_LOCAL_ROUND_H

#include "algorithms/drivers/gossip.h"
#include "algorithms/drivers/local.h"
#include "algorithms/methods/local_rules.h"
#include "algorithms/drivers/sync.h"
#include "algorithms/methods/method.h"

typedef struct algo_lsgd algo_lsgd;

/* What a method adds to the round (every slot may be NULL). */
typedef struct algo_lsgd_ops {
    const cfg_key *keys; /* the method's key table, read by algo_lsgd_alloc */
    /* After the average (slowmo: the outer step on s->avg). */
    void (*outer)(algo_lsgd *s);
    /* After the round's held-back step is reported (post: the switch). */
    void (*formed)(algo_lsgd *s);
    /* A second phase (adaptive: the batch statistics), its message and
     * its result. */
    void (*contribute2)(algo_lsgd *s, int w, algo_sync_msg *msg);
    void (*form2)(algo_lsgd *s, const algo_group *g);
    size_t ext_size; /* bytes of s->ext, allocated zeroed and owned by the run; 0: none */
    /* A method with its own averaging (hierarchical_local_sgd): the round's
     * collective slot (plan; slots as in desc), the averages over g
     * (instead of s->avg over g; 0: s->avg over g after all), and the
     * average worker w takes. */
    int n_slots;
    algo_sync_slot slots[2];
    int (*plan)(algo_lsgd *s, int64_t round);
    int (*mean)(algo_lsgd *s, const algo_group *g, int64_t round);
    const float *(*avg_of)(algo_lsgd *s, int w);
    void (*start)(algo_lsgd *s);   /* before the first round (adaptive: its series) */
} algo_lsgd_ops;

struct algo_lsgd {
    algo_env *env;
    int n;
    int64_t d;
    int H;               /* local_steps */
    int H_cur;           /* local steps of the current round */
    int buf;             /* 0 local, 1 average, 2 reset */
    algo_local_optim lo; /* one optimizer state per worker */
    int *since;          /* n: local steps since the last average */
    int *take;           /* n: the worker's work for the round is over; it
                            takes the average at its next hook */
    int64_t *applied;    /* n: samples the worker has applied */
    float *avg, *avg_m, *avg_v;
    const float **ptrs;
    algo_sync *sy;
    algo_lsgd_ops ops;
    void *ext;           /* the method's own state */
    void *base;          /* slowmo with base = dpsgd: the gossip driver that
                            runs it instead (every vt function defers) */
};

/* An empty round with the rows of ops->keys read (into s, the _EXT rows
 * into s->ext when ops->ext_size) and buffers read (H_cur = H); then the
 * method reads its other keys and sets s->H_cur, s->ext, and calls
 * algo_lsgd_build (or sets s->base). Into *out; 0 or the code (err). */
int algo_lsgd_alloc(algo_env *env, const algo_lsgd_ops *ops, algo_lsgd **out, sim_err *err);
/* Allocates the round's buffers and its driver. 0 or a code (err). */
int algo_lsgd_build(algo_lsgd *s, sim_err *err);
/* The end of a method's create: with rc 0 builds the round (build = 1)
 * and hands s out (the run owns it). Returns 0 or the code. */
int algo_lsgd_finish(algo_lsgd *s, int rc, int build, void **out, sim_err *err);
/* The vtable functions of the family (state: algo_lsgd *). */
int algo_lsgd_start(void *p, sim_err *err);
const float *algo_lsgd_model(void *p, float *scratch);
void algo_lsgd_worker_models(void *p, const float **xs);
void algo_lsgd_fault(void *p, const algo_fault *ev);
/* The lr of a worker that applied `applied` samples (its own point of
 * training: applied x n samples), and its local step: the optimizer's
 * update of x_i at that lr, then its samples count as applied. */
double algo_lsgd_lr(const algo_env *env, int64_t applied);
void algo_lsgd_local_step(algo_env *env, algo_local_optim *lo, int64_t *applied, int i);
/* A choice key's index in words (0 when unset or unknown). */
int algo_lsgd_choice(const cfg_config *c, const char *key, const char *const *words);

/* The local_steps row of a method of the family, read into s->H. */
#define ALGO_LSGD_KEY_STEPS(DEF, DOC)                                                           \
    ALGO_KEY_INT("local_steps", DEF, 1, 1000000, algo_lsgd, H, DOC)
#define ALGO_LSGD_KEY_BUFFERS                                                                   \
    {"algorithm", "buffers", "local", CFG_KEY_CHOICE, "local|average|reset",                   \
     "optimizer buffers at a synchronization: kept local, averaged like x, or reset to 0"}

/* The vtable slots of a method of the family (ALGO_LSGD_VT: them alone,
 * between braces; a method with more slots writes its own braces). */
#define ALGO_LSGD_SLOTS(NAME, SUMMARY, REF, KEYS, CREATE, GRAPH)                                \
    .name = NAME, .summary = SUMMARY, .reference = REF, .keys = KEYS, .uses_graph = GRAPH,     \
    .supports_bucket = 1, .server = ALGO_SERVER_PS,                                            \
    .create = CREATE, .start = algo_lsgd_start,                                                \
    .model = algo_lsgd_model, .worker_models = algo_lsgd_worker_models,                        \
    .fault = algo_lsgd_fault
#define ALGO_LSGD_VT(NAME, SUMMARY, REF, KEYS, CREATE, GRAPH)                                   \
    { ALGO_LSGD_SLOTS(NAME, SUMMARY, REF, KEYS, CREATE, GRAPH) }

#endif
