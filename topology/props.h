/* Properties of a logical graph and its mixing matrix, as `dtsim topo`
 * prints them: size, degrees, diameter, connectivity, lambda and the two
 * spectral gaps. The library computes, the CLI only prints. */
#ifndef DTSIM_TOPO_PROPS_H
#define DTSIM_TOPO_PROPS_H

#include "sim/err.h"
#include "topology/graph.h"
#include "topology/mixing.h"

typedef struct topo_graph_props {
    int n;                  /* nodes */
    int64_t n_edges;        /* undirected edges (union over a period if time-varying) */
    int deg_min, deg_max;
    int diameter;           /* hops; -1 when disconnected */
    int connected;
    int time_varying;
    int period;             /* steps; 1 for static graphs */
    int peers_per_step;     /* time-varying: messages each node sends per step */
    topo_weights weights;
    int symmetric;          /* W symmetric (not for one-peer W_t) */
    double lambda;          /* second-largest |eigenvalue| of W, or one period's contraction */
    double gap;             /* 1 - lambda */
    double p;               /* 1 - lambda^2 */
    topo_lambda_method lambda_method; /* the path taken */
} topo_graph_props;

/* Computes the properties of g with the given weights (builds W and its
 * lambda). Errors as topo_mixing_create and topo_mixing_lambda. */
int topo_graph_describe(const topo_graph *g, topo_weights weights, topo_graph_props *out,
                        sim_err *err);

/* "metropolis" / "uniform"; parse returns SIM_ECONFIG for anything else. */
const char *topo_weights_name(topo_weights w);
int topo_weights_parse(const char *s, topo_weights *out, sim_err *err);
/* "dense", "sparse", "arpack" */
const char *topo_lambda_method_name(topo_lambda_method m);

#endif
