/* Logical graphs ([topology] graph). Deterministic kinds build an edge list
 * directly; random kinds call igraph's generators after seeding igraph's RNG
 * from the topology stream; file(...) reads GraphML or an edge list
 * (graph_file.c). Every builder leaves a simple undirected igraph graph with
 * g->n vertices in g->graph; topo_graph_build then derives the sorted CSR
 * neighbour lists, degree range and connectivity, and for one-peer graphs
 * the per-phase peers. Invariant after a successful build: g->graph is
 * initialised and nbr/nbr_off describe exactly its edges. */
#include "topology/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/path.h"
#include "sim/units.h"
#include "topology/graph_size.h"

int topo_is_pow2(int64_t n) { return n >= 1 && (n & (n - 1)) == 0; }

int topo_log2(int64_t n)
{
    int k = 0;
    while (n > 1) {
        n >>= 1;
        k++;
    }
    return k;
}

/* ---- edge lists ----------------------------------------------------------- */

typedef struct edge_buf {
    igraph_integer_t *e; /* pairs */
    int64_t len, cap;    /* in pairs */
} edge_buf;

static int edge_add(edge_buf *b, int64_t u, int64_t v)
{
    if (b->len == b->cap) {
        int64_t nc = b->cap ? 2 * b->cap : 64;
        igraph_integer_t *p = realloc(b->e, sizeof *p * 2 * (size_t)nc);
        if (!p)
            return -1;
        b->e = p;
        b->cap = nc;
    }
    b->e[2 * b->len] = u;
    b->e[2 * b->len + 1] = v;
    b->len++;
    return 0;
}

static int pair_cmp(const void *a, const void *b)
{
    const igraph_integer_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

int topo_graph_from_pairs(igraph_t *out, int n, igraph_integer_t *pairs, int64_t n_pairs,
                          sim_err *err)
{
    int64_t m = 0;
    for (int64_t k = 0; k < n_pairs; k++) {
        igraph_integer_t u = pairs[2 * k], v = pairs[2 * k + 1];
        if (u == v)
            continue;
        pairs[2 * m] = u < v ? u : v;
        pairs[2 * m + 1] = u < v ? v : u;
        m++;
    }
    if (m > 1)
        qsort(pairs, (size_t)m, 2 * sizeof *pairs, pair_cmp);
    int64_t u = 0;
    for (int64_t k = 0; k < m; k++) {
        if (u > 0 && pairs[2 * (u - 1)] == pairs[2 * k] && pairs[2 * (u - 1) + 1] == pairs[2 * k + 1])
            continue;
        pairs[2 * u] = pairs[2 * k];
        pairs[2 * u + 1] = pairs[2 * k + 1];
        u++;
    }
    igraph_vector_int_t ev;
    igraph_vector_int_view(&ev, pairs, 2 * u);
    if (igraph_create(out, &ev, n, IGRAPH_UNDIRECTED) != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_ENOMEM, "graph: igraph_create failed: %s",
                           sim_err_library_last());
    return 0;
}

static int from_buf(topo_graph *g, edge_buf *b, sim_err *err)
{
    int rc = topo_graph_from_pairs(&g->graph, g->n, b->e, b->len, err);
    free(b->e);
    b->e = NULL;
    return rc;
}

static int nomem(sim_err *err, edge_buf *b)
{
    free(b->e);
    b->e = NULL;
    return sim_err_set(err, SIM_ENOMEM, "graph: out of memory");
}

/* ---- arguments ------------------------------------------------------------ */

static int want_args(const topo_graph *g, int nargs, int want, const char *form, sim_err *err)
{
    if (nargs != want)
        return sim_err_set(err, SIM_ECONFIG, "graph '%s': %s", g->spec,
                           want ? form : "takes no arguments");
    return 0;
}

static int int_arg(const topo_graph *g, const char *s, const char *what, int64_t lo,
                   int64_t *out, sim_err *err)
{
    sim_err e2;
    if (sim_parse_int(s, out, &e2) < 0 || *out < lo || *out > (1 << 30))
        return sim_err_set(err, SIM_ECONFIG,
                           "graph '%s': %s must be an integer in %lld..2^30, got '%s'", g->spec,
                           what, (long long)lo, s);
    return 0;
}

static int prob_arg(const topo_graph *g, const char *s, const char *what, int open_zero,
                    double *out, sim_err *err)
{
    sim_err e2;
    if (sim_parse_double(s, out, &e2) < 0 || !(*out <= 1.0) || !(open_zero ? *out > 0.0 : *out >= 0.0))
        return sim_err_set(err, SIM_ECONFIG, "graph '%s': %s must be a probability in %s1], got '%s'",
                           g->spec, what, open_zero ? "(0, " : "[0, ", s);
    return 0;
}

static int need_pow2(const topo_graph *g, sim_err *err)
{
    if (!topo_is_pow2(g->n))
        return sim_err_set(err, SIM_ECONFIG,
                           "graph '%s' needs a power-of-two number of nodes (workers), got %d",
                           g->spec, g->n);
    return 0;
}

/* ---- deterministic kinds ---------------------------------------------------- */

static int build_ring(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                      sim_err *err)
{
    (void)args, (void)rng;
    int rc = want_args(g, nargs, 0, "", err);
    if (rc)
        return rc;
    edge_buf b = {0};
    for (int i = 0; i < g->n; i++)
        if (edge_add(&b, i, (i + 1) % g->n))
            return nomem(err, &b);
    return from_buf(g, &b, err);
}

/* Node (a, b) is a * c + b; links to (a, b + 1 mod c) and (a + 1 mod r, b). */
static int build_torus(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                       sim_err *err)
{
    (void)rng;
    int rc = 0;
    int64_t r, c;
    if (nargs == 0) {
        /* the most square factorization r x c of n, r <= c, both >= 2 */
        if (g->n < 1)
            return sim_err_set(err, SIM_ECONFIG,
                               "graph '%s': torus without arguments needs the node count", g->spec);
        r = 1;
        for (int64_t k = 2; k * k <= g->n; k++)
            if (g->n % k == 0)
                r = k;
        if (r == 1)
            return sim_err_set(err, SIM_ECONFIG,
                               "graph '%s': %d workers have no factorization r x c with r, c >= 2 "
                               "(use ring, or torus(1, %d))", g->spec, g->n, g->n);
        c = g->n / r;
    } else {
        rc = want_args(g, nargs, 2, "expected torus or torus(rows, columns)", err);
        if (rc)
            return rc;
        if ((rc = int_arg(g, args[0], "rows", 1, &r, err)) ||
            (rc = int_arg(g, args[1], "columns", 1, &c, err)))
            return rc;
    }
    if (g->n == 0 && r * c <= 0x3fffffff)
        g->n = (int)(r * c);
    if (r * c != g->n)
        return sim_err_set(err, SIM_ECONFIG,
                           "graph '%s': a %lld x %lld torus has %lld nodes, but there are %d workers",
                           g->spec, (long long)r, (long long)c, (long long)(r * c), g->n);
    edge_buf b = {0};
    for (int64_t a = 0; a < r; a++)
        for (int64_t x = 0; x < c; x++) {
            int64_t v = a * c + x;
            if (edge_add(&b, v, a * c + (x + 1) % c) || edge_add(&b, v, ((a + 1) % r) * c + x))
                return nomem(err, &b);
        }
    return from_buf(g, &b, err);
}

static int build_hypercube(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                           sim_err *err)
{
    (void)args, (void)rng;
    int rc = want_args(g, nargs, 0, "", err);
    if (rc || (rc = need_pow2(g, err)))
        return rc;
    edge_buf b = {0};
    for (int i = 0; i < g->n; i++)
        for (int bit = 1; bit < g->n; bit <<= 1)
            if ((i & bit) == 0 && edge_add(&b, i, i | bit))
                return nomem(err, &b);
    return from_buf(g, &b, err);
}

static int build_complete(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                          sim_err *err)
{
    (void)args, (void)rng;
    int rc = want_args(g, nargs, 0, "", err);
    if (rc)
        return rc;
    edge_buf b = {0};
    for (int i = 0; i < g->n; i++)
        for (int j = i + 1; j < g->n; j++)
            if (edge_add(&b, i, j))
                return nomem(err, &b);
    return from_buf(g, &b, err);
}

/* Node 0 is the hub. */
static int build_star(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                      sim_err *err)
{
    (void)args, (void)rng;
    int rc = want_args(g, nargs, 0, "", err);
    if (rc)
        return rc;
    edge_buf b = {0};
    for (int i = 1; i < g->n; i++)
        if (edge_add(&b, 0, i))
            return nomem(err, &b);
    return from_buf(g, &b, err);
}

/* i linked to i +- 2^k mod n for k = 0 .. ceil(log2 n) - 1 (i - 2^k is the
 * same edge seen from the other end). */
static int exponential_edges(topo_graph *g, sim_err *err)
{
    edge_buf b = {0};
    for (int i = 0; i < g->n; i++)
        for (int64_t s = 1; s < g->n; s <<= 1)
            if (edge_add(&b, i, (i + s) % g->n))
                return nomem(err, &b);
    return from_buf(g, &b, err);
}

static int build_exponential(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                             sim_err *err)
{
    (void)args, (void)rng;
    int rc = want_args(g, nargs, 0, "", err);
    if (rc)
        return rc;
    return exponential_edges(g, err);
}

/* The union over a period is the static exponential graph; the per-phase
 * peers are filled by topo_graph_build from g->vt->time_varying. */
static int build_one_peer(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                          sim_err *err)
{
    (void)args, (void)rng;
    int rc = want_args(g, nargs, 0, "", err);
    if (rc || (rc = need_pow2(g, err)))
        return rc;
    return exponential_edges(g, err);
}

/* ---- random kinds ------------------------------------------------------------ */

typedef struct draw_args {
    int kind; /* 0 random_regular, 1 erdos_renyi, 2 small_world */
    int64_t k;
    double p;
} draw_args;

static igraph_error_t draw_once(igraph_t *out, int n, const draw_args *a)
{
    switch (a->kind) {
    case 0:
        return igraph_k_regular_game(out, n, a->k, IGRAPH_UNDIRECTED, 0);
    case 1:
        return igraph_erdos_renyi_game_gnp(out, n, a->p, IGRAPH_UNDIRECTED, 0);
    default:
        return igraph_watts_strogatz_game(out, 1, n, a->k / 2, a->p, 0, 0);
    }
}

/* Seeds igraph's RNG from the topology stream before each draw; redraws a
 * disconnected graph up to TOPO_GRAPH_MAX_DRAWS times. */
static int draw_connected(topo_graph *g, const draw_args *a, gsl_rng *rng, sim_err *err)
{
    if (!rng)
        return sim_err_set(err, SIM_EINTERNAL, "graph '%s': a random graph needs the topology stream",
                           g->spec);
    for (int attempt = 0; attempt < TOPO_GRAPH_MAX_DRAWS; attempt++) {
        uint64_t hi = gsl_rng_get(rng), lo = gsl_rng_get(rng);
        igraph_rng_seed(igraph_rng_default(), (igraph_uint_t)((hi << 32) ^ lo));
        igraph_t t;
        if (draw_once(&t, g->n, a) != IGRAPH_SUCCESS)
            return sim_err_set(err, SIM_ECONFIG, "graph '%s': igraph could not draw it: %s", g->spec,
                               sim_err_library_last());
        igraph_bool_t conn = 0;
        if (igraph_is_connected(&t, &conn, IGRAPH_WEAK) != IGRAPH_SUCCESS) {
            igraph_destroy(&t);
            return sim_err_set(err, SIM_ENOMEM, "graph '%s': %s", g->spec, sim_err_library_last());
        }
        if (conn) {
            /* Canonical edge order, whatever the generator produced. */
            igraph_integer_t m = igraph_ecount(&t);
            igraph_integer_t *pairs = malloc(sizeof *pairs * 2 * (size_t)(m ? m : 1));
            if (!pairs) {
                igraph_destroy(&t);
                return sim_err_set(err, SIM_ENOMEM, "graph: out of memory");
            }
            for (igraph_integer_t e = 0; e < m; e++) {
                pairs[2 * e] = IGRAPH_FROM(&t, e);
                pairs[2 * e + 1] = IGRAPH_TO(&t, e);
            }
            igraph_destroy(&t);
            int rc = topo_graph_from_pairs(&g->graph, g->n, pairs, m, err);
            free(pairs);
            return rc;
        }
        igraph_destroy(&t);
    }
    return sim_err_set(err, SIM_ECONFIG,
                       "graph '%s': no connected graph in %d random draws for %d nodes "
                       "(raise the degree or probability)",
                       g->spec, TOPO_GRAPH_MAX_DRAWS, g->n);
}

static int build_random_regular(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                                sim_err *err)
{
    int rc = want_args(g, nargs, 1, "expected random_regular(degree)", err);
    if (rc)
        return rc;
    draw_args a = {0, 0, 0};
    if ((rc = int_arg(g, args[0], "degree", 1, &a.k, err)))
        return rc;
    if (a.k >= g->n)
        return sim_err_set(err, SIM_ECONFIG, "graph '%s': degree %lld needs more than %d nodes",
                           g->spec, (long long)a.k, g->n);
    if ((a.k * g->n) % 2)
        return sim_err_set(err, SIM_ECONFIG,
                           "graph '%s': degree x nodes must be even (%lld x %d is odd)", g->spec,
                           (long long)a.k, g->n);
    return draw_connected(g, &a, rng, err);
}

static int build_erdos_renyi(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                             sim_err *err)
{
    int rc = want_args(g, nargs, 1, "expected erdos_renyi(p)", err);
    if (rc)
        return rc;
    draw_args a = {1, 0, 0};
    if ((rc = prob_arg(g, args[0], "p", 1, &a.p, err)))
        return rc;
    return draw_connected(g, &a, rng, err);
}

/* Watts-Strogatz: a ring where each node links to its k nearest nodes (k/2
 * on each side), then each edge's far end is rewired with probability p
 * (no self-loops or parallel edges). */
static int build_small_world(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                             sim_err *err)
{
    int rc = want_args(g, nargs, 2, "expected small_world(k, p)", err);
    if (rc)
        return rc;
    draw_args a = {2, 0, 0};
    if ((rc = int_arg(g, args[0], "k", 2, &a.k, err)) || (rc = prob_arg(g, args[1], "p", 0, &a.p, err)))
        return rc;
    if (a.k % 2)
        return sim_err_set(err, SIM_ECONFIG, "graph '%s': k must be even (k/2 neighbours per side), got %lld",
                           g->spec, (long long)a.k);
    if (a.k >= g->n)
        return sim_err_set(err, SIM_ECONFIG, "graph '%s': k = %lld needs more than %d nodes", g->spec,
                           (long long)a.k, g->n);
    return draw_connected(g, &a, rng, err);
}

static int build_file(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng,
                      sim_err *err)
{
    (void)rng;
    int rc = want_args(g, nargs, 1, "expected file(PATH.graphml) or file(PATH) of an edge list", err);
    if (rc)
        return rc;
    rc = topo_graph_read_file(args[0], g->n, &g->graph, err);
    if (rc)
        return rc;
    igraph_integer_t nv = igraph_vcount(&g->graph);
    if (g->n == 0)
        g->n = (int)nv;
    if (nv != g->n) {
        igraph_destroy(&g->graph);
        memset(&g->graph, 0, sizeof g->graph);
        return sim_err_set(err, SIM_EINPUT, "%s: the graph has %ld nodes, but there are %d workers",
                           args[0], (long)nv, g->n);
    }
    return 0;
}

/* ---- registry ------------------------------------------------------------------ */

const topo_graph_vt topo_graph_ring_vt = {
    "ring", "", "a cycle: i linked to i +- 1 (degree 2)", build_ring, 0, 0};
const topo_graph_vt topo_graph_torus_vt = {
    "torus", "[(r, c)]", "2-D torus of r x c = n nodes (degree 4); node (a, b) is a * c + b; "
    "without arguments the most square r x c = n (r <= c; no factorization with r, c >= 2: "
    "an error)",
    build_torus, 0, 1};
const topo_graph_vt topo_graph_hypercube_vt = {
    "hypercube", "", "i linked to i xor 2^b (degree log2 n; n a power of two)", build_hypercube, 0, 0};
const topo_graph_vt topo_graph_complete_vt = {
    "complete", "", "every pair linked; W = J with uniform or Metropolis weights", build_complete, 0, 0};
const topo_graph_vt topo_graph_star_vt = {
    "star", "", "node 0 linked to every other node", build_star, 0, 0};
const topo_graph_vt topo_graph_exponential_vt = {
    "exponential", "", "static exponential graph: i linked to i +- 2^k mod n, k < ceil(log2 n)",
    build_exponential, 0, 0};
const topo_graph_vt topo_graph_one_peer_vt = {
    "one_peer_exponential", "",
    "time-varying: at step t, i averages with i + 2^(t mod log2 n) (n a power of two)",
    build_one_peer, 1, 0};
const topo_graph_vt topo_graph_random_regular_vt = {
    "random_regular", "(k)", "uniform random k-regular graph (k x n even), connected",
    build_random_regular, 0, 0};
const topo_graph_vt topo_graph_erdos_renyi_vt = {
    "erdos_renyi", "(p)", "G(n, p): each pair linked with probability p, connected draw",
    build_erdos_renyi, 0, 0};
const topo_graph_vt topo_graph_small_world_vt = {
    "small_world", "(k, p)",
    "Watts-Strogatz: ring with k nearest neighbours (k even), edges rewired with probability p",
    build_small_world, 0, 0};
const topo_graph_vt topo_graph_file_vt = {
    "file", "(PATH)",
    "GraphML (.graphml) or an edge list (0-based id pairs, '#' comments) with n nodes",
    build_file, 0, 1};

#define DTSIM_GRAPH(id) extern const topo_graph_vt topo_graph_##id##_vt;
#include "topology/graphs.def"
#undef DTSIM_GRAPH

const topo_graph_vt *const topo_graph_registry[] = {
#define DTSIM_GRAPH(id) &topo_graph_##id##_vt,
#include "topology/graphs.def"
#undef DTSIM_GRAPH
    NULL,
};

/* ---- build ------------------------------------------------------------------------- */

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* CSR lists, degree range and connectivity from g->graph. */
static int derive(topo_graph *g, sim_err *err)
{
    int n = g->n;
    igraph_integer_t m = igraph_ecount(&g->graph);
    g->n_edges = m;
    g->nbr_off = calloc((size_t)n + 1, sizeof *g->nbr_off);
    g->nbr = malloc(sizeof *g->nbr * (size_t)(2 * m > 0 ? 2 * m : 1));
    int64_t *fill = malloc(sizeof *fill * (size_t)n);
    if (!g->nbr_off || !g->nbr || !fill) {
        free(fill);
        return sim_err_set(err, SIM_ENOMEM, "graph: out of memory");
    }
    for (igraph_integer_t e = 0; e < m; e++) {
        g->nbr_off[IGRAPH_FROM(&g->graph, e) + 1]++;
        g->nbr_off[IGRAPH_TO(&g->graph, e) + 1]++;
    }
    for (int i = 0; i < n; i++)
        g->nbr_off[i + 1] += g->nbr_off[i];
    memcpy(fill, g->nbr_off, sizeof *fill * (size_t)n);
    for (igraph_integer_t e = 0; e < m; e++) {
        int u = (int)IGRAPH_FROM(&g->graph, e), v = (int)IGRAPH_TO(&g->graph, e);
        g->nbr[fill[u]++] = v;
        g->nbr[fill[v]++] = u;
    }
    free(fill);
    g->deg_min = n > 0 ? n : 0;
    g->deg_max = 0;
    for (int i = 0; i < n; i++) {
        int64_t deg = g->nbr_off[i + 1] - g->nbr_off[i];
        if (deg > 1)
            qsort(g->nbr + g->nbr_off[i], (size_t)deg, sizeof *g->nbr, int_cmp);
        if (deg < g->deg_min)
            g->deg_min = (int)deg;
        if (deg > g->deg_max)
            g->deg_max = (int)deg;
    }
    igraph_bool_t conn = 0;
    if (igraph_is_connected(&g->graph, &conn, IGRAPH_WEAK) != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_ENOMEM, "graph: %s", sim_err_library_last());
    g->connected = conn ? 1 : 0;
    return 0;
}

/* Per-phase peers of a one-peer exponential graph: at phase k node i
 * receives from i + 2^k and sends to i - 2^k (mod n). */
static int derive_one_peer(topo_graph *g, sim_err *err)
{
    int n = g->n;
    g->period = n > 1 ? topo_log2(n) : 1;
    size_t len = (size_t)g->period * (size_t)n;
    g->tv_in = malloc(sizeof *g->tv_in * len);
    g->tv_out = malloc(sizeof *g->tv_out * len);
    if (!g->tv_in || !g->tv_out)
        return sim_err_set(err, SIM_ENOMEM, "graph: out of memory");
    for (int k = 0; k < g->period; k++) {
        int s = n > 1 ? (1 << k) : 0;
        for (int i = 0; i < n; i++) {
            g->tv_in[(size_t)k * (size_t)n + (size_t)i] = (i + s) % n;
            g->tv_out[(size_t)k * (size_t)n + (size_t)i] = (i - s + n) % n;
        }
    }
    return 0;
}

static void known_list(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; topo_graph_registry[i] && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", topo_graph_registry[i]->name);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

int topo_graph_build(topo_graph *g, const char *spec, int n, gsl_rng *rng, sim_err *err)
{
    return topo_graph_build_in(g, spec, NULL, n, rng, err);
}

int topo_graph_build_in(topo_graph *g, const char *spec, const char *dir, int n, gsl_rng *rng,
                        sim_err *err)
{
    memset(g, 0, sizeof *g);
    if (!spec)
        spec = "";
    snprintf(g->spec, sizeof g->spec, "%s", spec);
    if (n < 0)
        return sim_err_set(err, SIM_ECONFIG, "graph '%s': need at least 1 node, got %d", spec, n);
    sim_spec sp;
    int rc = sim_spec_parse(spec, &sp, err);
    if (rc)
        return rc;
    const topo_graph_vt *vt = NULL;
    for (int i = 0; topo_graph_registry[i]; i++)
        if (strcmp(topo_graph_registry[i]->name, sp.name) == 0)
            vt = topo_graph_registry[i];
    if (!vt) {
        char known[512];
        char hint[96];
        known_list(known, sizeof known);
        return sim_err_set(err, SIM_ECONFIG, "unknown graph '%s' (%sknown: %s)",
                           sp.name, sim_suggest(sp.name, known, hint, sizeof hint), known);
    }
    const char *argv[SIM_SPEC_MAX_ARGS];
    for (int i = 0; i < sp.nargs; i++)
        argv[i] = sp.args[i];
    char path[SIM_PATH_MAX];
    if (vt == &topo_graph_file_vt && sp.nargs >= 1 && sp.args[0][0]) {
        if ((rc = sim_path_resolve(dir, sp.args[0], path, sizeof path, err)))
            return rc;
        argv[0] = path;
    }
    g->vt = vt;
    g->n = n > 0 ? n : vt->natural_size ? 0 : TOPO_GRAPH_DEFAULT_N;
    g->period = 1;
    rc = vt == &topo_graph_complete_vt ? topo_graph_size_check(spec, g->n, err) : 0;
    if (rc == 0)
        rc = vt->build(g, argv, sp.nargs, rng, err);
    if (rc)
        goto fail;
    if (g->n < 1) {
        rc = sim_err_set(err, SIM_ECONFIG, "graph '%s': need at least 1 node", spec);
        goto fail;
    }
    if ((rc = derive(g, err)))
        goto fail;
    if (vt->time_varying && (rc = derive_one_peer(g, err)))
        goto fail;
    return 0;
fail:
    topo_graph_release(g);
    return rc;
}

void topo_graph_release(topo_graph *g)
{
    if (!g)
        return;
    /* A zeroed igraph_t has no vector storage; an initialised one does. */
    if (g->graph.from.stor_begin)
        igraph_destroy(&g->graph);
    free(g->nbr_off);
    free(g->nbr);
    free(g->tv_in);
    free(g->tv_out);
    memset(g, 0, sizeof *g);
}

/* ---- time-varying access --------------------------------------------------------------- */

static size_t phase_index(const topo_graph *g, int64_t t, int i)
{
    int64_t k = t % g->period;
    if (k < 0)
        k += g->period;
    return (size_t)k * (size_t)g->n + (size_t)i;
}

int topo_graph_in_at(const topo_graph *g, int64_t t, int i, const int **nbrs)
{
    if (!g->tv_in)
        return topo_graph_neighbors(g, i, nbrs);
    *nbrs = g->tv_in + phase_index(g, t, i);
    return g->n > 1 ? 1 : 0;
}

int topo_graph_out_at(const topo_graph *g, int64_t t, int i, const int **nbrs)
{
    if (!g->tv_out)
        return topo_graph_neighbors(g, i, nbrs);
    *nbrs = g->tv_out + phase_index(g, t, i);
    return g->n > 1 ? 1 : 0;
}

int topo_graph_at(const topo_graph *g, int64_t t, igraph_t *out, sim_err *err)
{
    if (!g->tv_in) {
        if (igraph_copy(out, &g->graph) != IGRAPH_SUCCESS)
            return sim_err_set(err, SIM_ENOMEM, "graph: %s", sim_err_library_last());
        return 0;
    }
    int n = g->n, m = n > 1 ? n : 0;
    igraph_vector_int_t ev;
    if (igraph_vector_int_init(&ev, 2 * (igraph_integer_t)m) != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_ENOMEM, "graph: out of memory");
    for (int i = 0; i < m; i++) {
        VECTOR(ev)[2 * i] = g->tv_in[phase_index(g, t, i)];
        VECTOR(ev)[2 * i + 1] = i;
    }
    igraph_error_t rc = igraph_create(out, &ev, n, IGRAPH_DIRECTED);
    igraph_vector_int_destroy(&ev);
    if (rc != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_ENOMEM, "graph: %s", sim_err_library_last());
    return 0;
}
