/* Logical graphs ([topology] graph): who gossips with whom. A graph is built
 * from a spec ("ring", "torus(4, 4)", "random_regular(4)", "file(G.graphml)")
 * for n nodes (node i = worker i) and kept both as an igraph graph and as
 * sorted CSR neighbour lists for the algorithms' hot paths. Graphs are
 * simple and undirected (parallel edges merged, self-loops dropped).
 *
 * Time-varying graphs (one_peer_exponential) have a period p > 1: at step t
 * the active edges are those of phase t mod p; the igraph graph and the
 * static CSR lists then hold the union over a period. Use the _at functions
 * to get step t's neighbours; for static graphs they return the static lists.
 *
 * Random graphs draw from the caller's rng (the topology stream): igraph's
 * global RNG is seeded from it before each draw, so the same seed gives the
 * same graph. A disconnected random draw is redrawn up to
 * TOPO_GRAPH_MAX_DRAWS times, then refused. igraph is not thread-safe: build
 * graphs from one thread at a time. */
#ifndef DTSIM_TOPO_GRAPH_H
#define DTSIM_TOPO_GRAPH_H

#include <gsl/gsl_rng.h>
#include <igraph.h>
#include <stdint.h>

#include "sim/err.h"

#define TOPO_GRAPH_MAX_DRAWS 100

typedef struct topo_graph topo_graph;

typedef struct topo_graph_vt {
    const char *name;
    const char *args;      /* "" or "(r, c)" */
    const char *summary;
    /* Fills g->graph (simple, undirected, g->n vertices) from the spec's
     * arguments; rng is NULL-safe for deterministic kinds. */
    int (*build)(topo_graph *g, const char *const *args, int nargs, gsl_rng *rng, sim_err *err);
    int time_varying;      /* 1: one_peer_exponential */
    int natural_size;      /* 1: the arguments or the file fix n (torus, file) */
} topo_graph_vt;

extern const topo_graph_vt *const topo_graph_registry[]; /* NULL-terminated */

/* Plain data, read-only after topo_graph_build. */
struct topo_graph {
    const topo_graph_vt *vt; /* the kind */
    char spec[512];        /* the spec it was built from */
    int n;                 /* nodes */
    igraph_t graph;        /* static graph, or the union over a period */
    int64_t n_edges;       /* undirected edges of `graph` */
    int64_t *nbr_off;      /* n + 1 offsets into nbr */
    int *nbr;              /* neighbours of i: nbr[nbr_off[i] .. nbr_off[i+1]), ascending */
    int deg_min, deg_max;  /* over `graph` */
    int connected;         /* 1 if `graph` is connected (n = 1 counts as connected) */
    int period;            /* 1 for static graphs */
    /* Time-varying only (period > 1 or one-peer): per phase k and node i,
     * the one peer i receives from, tv_in[k * n + i], and sends to,
     * tv_out[k * n + i]. NULL for static graphs. */
    int *tv_in, *tv_out;
};

/* n = 0 in topo_graph_build: the graph's natural size (r x c for a torus,
 * the file's node count) or TOPO_GRAPH_DEFAULT_N for the other kinds. */
#define TOPO_GRAPH_DEFAULT_N 16

/* Parses spec and builds the graph for n >= 1 nodes (0: see above). rng is the topology
 * stream (needed by random kinds; may be NULL otherwise). SIM_ECONFIG for an
 * unknown kind, bad arguments or sizes (hypercube and one-peer need n a power
 * of two, torus(r, c) needs r * c = n), SIM_EINPUT for a file that cannot be
 * read or parsed (the message names the file) or whose node count is not n,
 * SIM_ECONFIG when no connected random draw was found. On error nothing is
 * left to release. */
int topo_graph_build(topo_graph *g, const char *spec, int n, gsl_rng *rng, sim_err *err);
/* The same with the file name of file(PATH) resolved against the folder
 * dir (the experiment file's, sim/path.h; NULL = the current directory):
 * topo_graph_build is this with dir NULL. */
int topo_graph_build_in(topo_graph *g, const char *spec, const char *dir, int n, gsl_rng *rng,
                        sim_err *err);
void topo_graph_release(topo_graph *g);

static inline int topo_graph_is_time_varying(const topo_graph *g) { return g->tv_in != NULL; }
static inline int topo_graph_period(const topo_graph *g) { return g->period; }
/* Static neighbours of i (the union over a period for time-varying graphs);
 * returns the count and points *nbrs at them. */
static inline int topo_graph_neighbors(const topo_graph *g, int i, const int **nbrs)
{
    *nbrs = g->nbr + g->nbr_off[i];
    return (int)(g->nbr_off[i + 1] - g->nbr_off[i]);
}

/* Nodes i receives from at step t (W_t's off-diagonal row i) and nodes i
 * sends to at step t (W_t's off-diagonal column i). For static graphs both
 * are the neighbour list; for one-peer graphs one node each (none if n = 1).
 * Returns the count and points *nbrs into the graph's storage. */
int topo_graph_in_at(const topo_graph *g, int64_t t, int i, const int **nbrs);
int topo_graph_out_at(const topo_graph *g, int64_t t, int i, const int **nbrs);

/* The graph of step t as a new igraph graph the caller destroys: directed
 * (edge j -> i when i receives from j) for time-varying graphs, a copy of
 * g->graph otherwise. */
int topo_graph_at(const topo_graph *g, int64_t t, igraph_t *out, sim_err *err);

/* Writes g->graph (the union graph for time-varying kinds) as GraphML (.graphml)
 * or Graphviz dot (.dot), chosen by path's extension. SIM_EUSAGE for another
 * extension, SIM_EIO when the file cannot be written. */
int topo_graph_export(const topo_graph *g, const char *path, sim_err *err);

/* The most nodes a graph or network file may have when the caller fixes
 * no count (ids 0..TOPO_FILE_MAX_NODES-1). */
#define TOPO_FILE_MAX_NODES (1 << 20)

/* Reads an undirected simple graph from a GraphML file (by extension
 * .graphml / .xml) or an edge list (whitespace-separated 0-based id pairs,
 * one per line, '#' starts a comment). SIM_EINPUT naming the file on error.
 * Used by file(...) graphs; the node count is the GraphML node count or the
 * largest id + 1. max_nodes (0: TOPO_FILE_MAX_NODES) bounds it: an edge-list
 * id >= max_nodes is refused while reading, naming FILE:LINE and the id. */
int topo_graph_read_file(const char *path, int max_nodes, igraph_t *out, sim_err *err);

/* Creates a simple undirected graph on n vertices from n_pairs (u, v)
 * pairs (ids in 0..n-1): self-loops dropped, duplicates merged, edges in
 * sorted (min, max) order. Reorders pairs in place. SIM_ENOMEM on failure. */
int topo_graph_from_pairs(igraph_t *out, int n, igraph_integer_t *pairs, int64_t n_pairs,
                          sim_err *err);

/* 1 if n is a power of two (n >= 1); log2 of such an n. */
int topo_is_pow2(int64_t n);
int topo_log2(int64_t n);

#endif
