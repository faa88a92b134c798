/* ad_psgd: asynchronous decentralized parallel SGD (Lian et al., ICML
 * 2018), on the pairwise driver (algorithms/drivers/pairwise.h):
 *   step start:  x_hat = x_i; g = grad F(x_hat); active i sends x_i to j
 *   on arrival:  x_i, x_j <- (x_i + x_j)/2      (atomic; j answers)
 *   step end:    x_i <- x_i - lr g              (active: after the answer)
 * This file adds the active set (key active) and the blocking.
 * docs/algorithms.md, section 1.4 (crashes: docs/faults.md). */
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
