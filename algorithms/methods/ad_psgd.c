/* ad_psgd: asynchronous decentralized parallel SGD (docs/algorithms.md 1.4).
 * Every worker loops on its own: it takes the gradient at its current model
 * (the snapshot x_hat = x_i, read when the step starts) and applies it when
 * the step ends, x_i <- x_i - lr g (local momentum with the momentum key),
 * so the gradient comes from before any averaging that happened meanwhile.
 * An ACTIVE worker, when its step starts, also sends its model (S bytes) to
 * one neighbour j drawn uniformly from its algorithm stream; on arrival the
 * pair is averaged atomically, x_i, x_j <- (x_i + x_j)/2 (the models' values
 * at that moment: the global view W_k X of the paper, doubly stochastic,
 * so the sum of the models is unchanged), and j answers with its model
 * (S bytes). The active worker applies its gradient only after the answer
 * (steps 3 then 4 of the paper), so it waits for it if its compute ends
 * first; a passive worker never waits (answering does not block its
 * computation).
 * Active set (key active): auto = a bipartite 2-colouring, colour 0 (the
 * component's lowest id; on a ring of even n: the even ids) active, and on
 * a non-bipartite graph every worker active; even = the even ids; all =
 * every worker. Atomic averaging makes every choice deadlock-free and
 * mean-preserving.
 * The step loop, iterations, staleness (an active worker on a bipartite
 * graph: exactly 1, its own averaging), evaluated model and crash rules
 * are the pairwise core's (pairwise.h); this file adds the active set and
 * the blocking. A request to a worker that crashes (or from one that
 * crashed) is dropped; the active worker gives up waiting for its answer
 * [faults] sync_timeout after it sent the request, applies its gradient
 * and draws a live partner at its next step. */
#include <stdlib.h>
#include <string.h>

#include "algorithms/drivers/pairwise.h"
#include "algorithms/methods/method.h"

typedef struct apsgd {
    algo_pairwise core; /* first: the pairwise slots take the state */
    int *active;
} apsgd;

/* Bipartite 2-colouring of the graph's (static) edges by BFS from the
 * lowest id of each component (that node gets colour 0). Fills colour[n]
 * and returns 1 if the graph is bipartite, 0 otherwise (colour then
 * undefined), SIM_ENOMEM when out of memory. */
static int bipartite(const topo_graph *g, int *colour)
{
    int n = g->n;
    int *queue = malloc((size_t)(n > 0 ? n : 1) * sizeof *queue);
    if (!queue)
        return SIM_ENOMEM;
    for (int i = 0; i < n; i++)
        colour[i] = -1;
    int ok = 1;
    for (int s = 0; s < n && ok; s++) {
        if (colour[s] >= 0)
            continue;
        int head = 0, tail = 0;
        colour[s] = 0;
        queue[tail++] = s;
        while (head < tail && ok) {
            int u = queue[head++];
            const int *nb;
            int k = topo_graph_neighbors(g, u, &nb);
            for (int a = 0; a < k; a++) {
                int v = nb[a];
                if (colour[v] < 0) {
                    colour[v] = 1 - colour[u];
                    queue[tail++] = v;
                } else if (colour[v] == colour[u]) {
                    ok = 0;
                    break;
                }
            }
        }
    }
    free(queue);
    return ok;
}

static void apply(apsgd *s, int i)
{
    algo_env_idle_end(s->core.env, i);
    algo_pairwise_apply(&s->core, i);
    algo_pairwise_begin(&s->core, i);
}

static ALGO_ON_MESSAGE(on_reply)
{
    apsgd *s = ctx;
    if (algo_pairwise_done(&s->core, dst, arg) && s->core.rq[dst].computed)
        apply(s, dst);
}

static ALGO_ON_MESSAGE(on_request)
{
    apsgd *s = ctx;
    int i = src, j = dst;
    if (!algo_pairwise_live(&s->core, i, j, arg))
        return; /* lost with a crashed worker, or its sender gave up */
    algo_pairwise_average(&s->core, i, j);
    algo_env_send(s->core.env, j, i, s->core.env->msg_bytes, on_reply, s, arg);
}

static void computed(void *p, int i)
{
    apsgd *s = p;
    if (s->core.rq[i].pending)
        algo_env_idle_begin(s->core.env, i);
    else
        apply(s, i);
}

static void begin(void *p, int i)
{
    apsgd *s = p;
    int j = s->active[i] ? algo_pairwise_partner(&s->core, i) : -1;
    if (j >= 0)
        algo_pairwise_request(&s->core, i, j, s->core.env->msg_bytes, on_request);
}

/* The answer to worker i's request has not come within the timeout. */
static void expired(void *p, int i)
{
    if (((apsgd *)p)->core.rq[i].computed)
        apply(p, i);
}

static const algo_pairwise_ops ops = {.begin = begin, .computed = computed, .expired = expired};

static const cfg_key keys[] = {
    {"algorithm", "active", "auto", CFG_KEY_CHOICE, "auto|even|all",
     "initiators: auto = bipartite colour 0 (all workers if not bipartite), even ids, or all"},
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    const cfg_config *c = env->cfg;
    if (!env->graph)
        return sim_err_set(err, SIM_EINTERNAL, "ad_psgd: no logical graph");
    apsgd *s = algo_env_calloc(env, 1, sizeof *s);
    if (!s)
        return algo_env_alloc_check(env, "ad_psgd", err);
    s->active = algo_env_calloc(env, (size_t)env->n, sizeof *s->active);
    int rc = algo_pairwise_init(&s->core, env, &ops, err);
    if (!rc)
        rc = algo_env_alloc_check(env, "ad_psgd", err);
    const char *rule = cfg_get_string(c, "algorithm", "active");
    int even = rule && strcmp(rule, "even") == 0, all = rule && strcmp(rule, "all") == 0;
    int bip = rc || even || all ? 0 : bipartite(env->graph, s->active);
    if (bip < 0)
        rc = sim_err_set(err, SIM_ENOMEM, "ad_psgd: out of memory");
    for (int i = 0; !rc && i < env->n; i++)
        s->active[i] = even ? i % 2 == 0 : all || !bip ? 1 : s->active[i] == 0;
    *out = s;
    return rc;
}

const algo_vt algo_ad_psgd = {
    ALGO_METHOD("ad_psgd",
                "AD-PSGD: asynchronous pairwise averaging with one neighbour, bipartite initiators",
                "1.4"),
    ALGO_PAIRWISE_SLOTS,
};
