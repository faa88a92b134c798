/* Graph properties for `dtsim topo` (see props.h). */
#include "topology/props.h"

#include <string.h>

int topo_graph_describe(const topo_graph *g, topo_weights weights, topo_graph_props *out,
                        sim_err *err)
{
    memset(out, 0, sizeof *out);
    out->n = g->n;
    out->n_edges = g->n_edges;
    out->deg_min = g->deg_min;
    out->deg_max = g->deg_max;
    out->connected = g->connected;
    out->time_varying = topo_graph_is_time_varying(g);
    out->period = g->period;
    out->peers_per_step = out->time_varying ? (g->n > 1 ? 1 : 0) : g->deg_max;
    out->weights = weights;
    out->diameter = -1;
    if (g->connected) {
        igraph_real_t diam = 0;
        if (igraph_diameter(&g->graph, &diam, NULL, NULL, NULL, NULL, IGRAPH_UNDIRECTED, 1) !=
            IGRAPH_SUCCESS)
            return sim_err_set(err, SIM_ENOMEM, "graph '%s': diameter: %s", g->spec,
                               sim_err_library_last());
        out->diameter = (int)diam;
    }
    topo_mixing *m = topo_mixing_create(g, weights, err);
    if (!m)
        return err->code;
    out->symmetric = topo_mixing_is_symmetric(m);
    int rc = topo_mixing_lambda_ex(m, TOPO_LAMBDA_AUTO, &out->lambda, &out->lambda_method, err);
    topo_mixing_destroy(m);
    if (rc)
        return rc;
    out->gap = topo_spectral_gap(out->lambda);
    out->p = topo_spectral_p(out->lambda);
    return 0;
}

const char *topo_weights_name(topo_weights w)
{
    return w == TOPO_WEIGHTS_UNIFORM          ? "uniform"
           : w == TOPO_WEIGHTS_METROPOLIS_LAZY ? "metropolis_lazy"
                                               : "metropolis";
}

int topo_weights_parse(const char *s, topo_weights *out, sim_err *err)
{
    if (strcmp(s, "metropolis") == 0)
        *out = TOPO_WEIGHTS_METROPOLIS;
    else if (strcmp(s, "uniform") == 0)
        *out = TOPO_WEIGHTS_UNIFORM;
    else if (strcmp(s, "metropolis_lazy") == 0)
        *out = TOPO_WEIGHTS_METROPOLIS_LAZY;
    else
        return sim_err_set(err, SIM_ECONFIG,
                           "weights: expected metropolis, uniform or metropolis_lazy, got '%s'",
                           s);
    return 0;
}

const char *topo_lambda_method_name(topo_lambda_method m)
{
    switch (m) {
    case TOPO_LAMBDA_DENSE:
        return "dense";
    case TOPO_LAMBDA_SPARSE:
        return "sparse";
    case TOPO_LAMBDA_ARPACK:
        return "arpack";
    default:
        return "auto";
    }
}
