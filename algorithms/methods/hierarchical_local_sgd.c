/* hierarchical_local_sgd: Hierarchical Local SGD (docs/algorithms.md 1.8;
 * Lin, Stich, Patel, Jaggi, "Don't Use Large Mini-Batches, Use Local SGD",
 * ICLR 2020). Every worker takes local_steps = H local steps, then the
 * workers of each server (worker w on server w / PER_NODE of the
 * hierarchical(N, PER_NODE) network) average their models inside it (a
 * reduce then a broadcast on the server's own links); every global_every
 * such blocks the average is across all workers instead, with the
 * configured collective. On a network without servers the cluster is one
 * server whose every average is the configured collective: local_sgd. The
 * round (optimizer states, buffers, crashes) is local_round.h's; this file
 * is the update rule and its keys. */
#include "algorithms/methods/local_round.h"
#include "algorithms/methods/method.h"

#include <stdlib.h>

typedef struct hier {
    int64_t every;  /* global_every */
    int p;          /* workers per server */
    int flat;       /* no servers (not a hierarchical network): one server, every
                       average across all workers: the method is local_sgd */
    int global;     /* the current round averages across servers */
    float *savg;    /* the servers' averages (d floats per server) */
} hier;

enum { SLOT_GLOBAL = 0, SLOT_SERVER = 1 };

static const cfg_key keys[] = {
    ALGO_LSGD_KEY_STEPS("4", "H: local steps between two averages inside each server"),
    ALGO_KEY_INT_EXT("global_every", "2", 1, 1000000, hier, every,
                     "every this many server averages, the average is across all servers instead"),
    {"algorithm", "buffers", "local", CFG_KEY_CHOICE, "local|reset",
     "optimizer buffers at an average: kept local, or reset to 0"},
    {0},
};

static int is_global(const hier *h, int64_t round)
{
    return h->flat || (round + 1) % h->every == 0;
}

static int plan(algo_lsgd *s, int64_t round)
{
    return is_global(s->ext, round) ? SLOT_GLOBAL : SLOT_SERVER;
}

/* The averages of round: across g, or inside each server of g (members
 * ascending: a server's members are a run of them; worker-id order). */
static int mean(algo_lsgd *s, const algo_group *g, int64_t round)
{
    hier *h = s->ext;
    h->global = is_global(h, round);
    if (h->global)
        return 0; /* the round's mean across g */
    for (int r = 0; r < g->n;) {
        int e = r, server = g->members[r] / h->p;
        while (e < g->n && g->members[e] / h->p == server) {
            s->ptrs[e - r] = s->env->w[g->members[e]].x;
            e++;
        }
        algo_mean(h->savg + (size_t)server * (size_t)s->d, s->ptrs, e - r, s->d);
        r = e;
    }
    return 1;
}

static const float *avg_of(algo_lsgd *s, int w)
{
    hier *h = s->ext;
    return h->global ? s->avg : h->savg + (size_t)(w / h->p) * (size_t)s->d;
}

static int create(algo_env *env, void **out, sim_err *err)
{
    static const algo_lsgd_ops ops = {.keys = keys, .ext_size = sizeof(hier), .n_slots = 2,
                                      .slots = {ALGO_SYNC_ALLREDUCE, ALGO_SYNC_HIER_INTRA},
                                      .plan = plan, .mean = mean, .avg_of = avg_of};
    algo_lsgd *s;
    int rc = algo_lsgd_alloc(env, &ops, &s, err);
    if (rc)
        return rc;
    hier *h = s->ext;
    h->flat = env->per_node <= 0;
    h->p = h->flat ? env->n : env->per_node;
    h->savg = algo_env_alloc(env, (size_t)((env->n + h->p - 1) / h->p) * (size_t)env->d *
                                      sizeof(float));
    rc = algo_env_alloc_check(env, "hierarchical_local_sgd", err);
    return algo_lsgd_finish(s, rc, 1, out, err);
}

const algo_vt algo_hierarchical_local_sgd = ALGO_LSGD_VT(
    "hierarchical_local_sgd",
    "Hierarchical Local SGD: H local steps, an average inside each server, every global_every "
    "an average across servers",
    "1.8", keys, create, 0);
