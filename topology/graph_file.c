/* Graph files: reading file(...) graphs (GraphML or a plain edge list) and
 * exporting a graph as GraphML or Graphviz dot. Every error names the file
 * first; a GraphML file is recognised by its extension (.graphml, .xml) or
 * by starting with '<'. Node ids are checked against the node limit while
 * reading: an edge list's node count is its largest id + 1, so one large id
 * would otherwise make igraph allocate for every node below it. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "topology/graph.h"

static int has_ext(const char *path, const char *ext)
{
    size_t lp = strlen(path), le = strlen(ext);
    return lp >= le && strcasecmp(path + lp - le, ext) == 0;
}

static int looks_like_xml(FILE *f)
{
    int c;
    while ((c = fgetc(f)) != EOF && isspace(c))
        ;
    rewind(f);
    return c == '<';
}

/* ids 0..max_nodes-1; max_nodes 0 means TOPO_FILE_MAX_NODES. */
static int node_limit(int max_nodes)
{
    return max_nodes > 0 ? max_nodes : TOPO_FILE_MAX_NODES;
}

static int read_graphml(const char *path, FILE *f, int max_nodes, igraph_t *out, sim_err *err)
{
    igraph_t t;
    if (igraph_read_graph_graphml(&t, f, 0) != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_EINPUT, "%s: not a valid GraphML file: %s", path,
                           sim_err_library_last());
    igraph_integer_t nv = igraph_vcount(&t), m = igraph_ecount(&t);
    if (nv > node_limit(max_nodes)) {
        igraph_destroy(&t);
        if (max_nodes > 0)
            return sim_err_set(err, SIM_EINPUT, "%s: the graph has %ld nodes, but there are %d workers",
                               path, (long)nv, max_nodes);
        return sim_err_set(err, SIM_EINPUT, "%s: too many nodes (%ld; a graph file has at most %d)",
                           path, (long)nv, TOPO_FILE_MAX_NODES);
    }
    igraph_integer_t *pairs = malloc(sizeof *pairs * 2 * (size_t)(m ? m : 1));
    if (!pairs) {
        igraph_destroy(&t);
        return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
    }
    for (igraph_integer_t e = 0; e < m; e++) {
        pairs[2 * e] = IGRAPH_FROM(&t, e);
        pairs[2 * e + 1] = IGRAPH_TO(&t, e);
    }
    igraph_destroy(&t);
    int rc = topo_graph_from_pairs(out, (int)nv, pairs, m, err);
    free(pairs);
    return rc;
}

static int read_edge_list(const char *path, FILE *f, int max_nodes, igraph_t *out, sim_err *err)
{
    const int limit = node_limit(max_nodes);
    igraph_integer_t *pairs = NULL;
    int64_t len = 0, cap = 0, max_id = -1;
    char *line = NULL;
    size_t line_cap = 0;
    int lineno = 0, rc = 0;
    while (getline(&line, &line_cap, f) >= 0) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *p = line;
        long long id[2];
        int got = 0;
        while (*p) {
            while (isspace((unsigned char)*p))
                p++;
            if (!*p)
                break;
            char *end;
            errno = 0;
            long long v = strtoll(p, &end, 10);
            if (end == p || (*end && !isspace((unsigned char)*end)) || errno || got == 2 || v < 0) {
                char shown[64];
                snprintf(shown, sizeof shown, "%s", line);
                shown[strcspn(shown, "\r\n")] = '\0';
                rc = sim_err_set(err, SIM_EINPUT,
                                 "%s:%d: expected two 0-based node ids per line, got '%s'", path,
                                 lineno, shown);
                goto done;
            }
            if (v >= limit) {
                if (max_nodes > 0)
                    rc = sim_err_set(err, SIM_EINPUT,
                                     "%s:%d: node id %lld out of range: %d workers have ids 0..%d",
                                     path, lineno, v, max_nodes, max_nodes - 1);
                else
                    rc = sim_err_set(err, SIM_EINPUT,
                                     "%s:%d: node id %lld out of range: a graph or network file "
                                     "has ids 0..%d",
                                     path, lineno, v, TOPO_FILE_MAX_NODES - 1);
                goto done;
            }
            id[got++] = v;
            p = end;
        }
        if (got == 0)
            continue;
        if (got == 1) {
            rc = sim_err_set(err, SIM_EINPUT, "%s:%d: expected two 0-based node ids, got one", path,
                             lineno);
            goto done;
        }
        if (len == cap) {
            int64_t nc = cap ? 2 * cap : 256;
            igraph_integer_t *q = realloc(pairs, sizeof *q * 2 * (size_t)nc);
            if (!q) {
                rc = sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
                goto done;
            }
            pairs = q;
            cap = nc;
        }
        pairs[2 * len] = id[0];
        pairs[2 * len + 1] = id[1];
        len++;
        for (int k = 0; k < 2; k++)
            if (id[k] > max_id)
                max_id = id[k];
    }
    if (ferror(f)) {
        rc = sim_err_set(err, SIM_EIO, "%s: read error: %s", path, strerror(errno));
        goto done;
    }
    if (len == 0) {
        rc = sim_err_set(err, SIM_EINPUT, "%s: no edges found (expected lines 'u v' of 0-based ids)",
                         path);
        goto done;
    }
    rc = topo_graph_from_pairs(out, (int)(max_id + 1), pairs, len, err);
done:
    free(line);
    free(pairs);
    return rc;
}

int topo_graph_read_file(const char *path, int max_nodes, igraph_t *out, sim_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sim_err_set(err, SIM_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    int rc;
    if (has_ext(path, ".graphml") || has_ext(path, ".xml") || looks_like_xml(f))
        rc = read_graphml(path, f, max_nodes, out, err);
    else
        rc = read_edge_list(path, f, max_nodes, out, err);
    fclose(f);
    return rc;
}

int topo_graph_export(const topo_graph *g, const char *path, sim_err *err)
{
    int dot = has_ext(path, ".dot") || has_ext(path, ".gv");
    if (!dot && !has_ext(path, ".graphml"))
        return sim_err_set(err, SIM_EUSAGE, "%s: export format must be .graphml or .dot", path);
    FILE *f = fopen(path, "wb");
    if (!f)
        return sim_err_set(err, SIM_EUSAGE, "%s: cannot write: %s", path, strerror(errno));
    igraph_error_t rc = dot ? igraph_write_graph_dot(&g->graph, f)
                            : igraph_write_graph_graphml(&g->graph, f, 1);
    int closed = fclose(f);
    if (rc != IGRAPH_SUCCESS)
        return sim_err_set(err, SIM_EIO, "%s: cannot write the graph: %s", path,
                           sim_err_library_last());
    if (closed != 0)
        return sim_err_set(err, SIM_EIO, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}
