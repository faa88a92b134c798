/* file(NET.graphml) physical networks (format in physnet.h). igraph reads
 * GraphML attributes only while an attribute table is installed, so the
 * C attribute table is installed for the read alone: the attributes are
 * copied into plain arrays, the attributed graph destroyed, the previous
 * table restored, and the network rebuilt as a plain graph with hosts
 * renumbered first. Nothing global is left changed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/units.h"
#include "topology/graph.h"
#include "topology/physnet.h"

/* Type of an attribute (IGRAPH_ATTRIBUTE_*), or -1 when absent. */
static int attr_type(const igraph_t *g, int vertex, const char *name)
{
    igraph_strvector_t vn, en;
    igraph_vector_int_t vt, et;
    int type = -1;
    if (igraph_strvector_init(&vn, 0) || igraph_strvector_init(&en, 0))
        return -1;
    if (igraph_vector_int_init(&vt, 0) || igraph_vector_int_init(&et, 0)) {
        igraph_strvector_destroy(&vn);
        igraph_strvector_destroy(&en);
        return -1;
    }
    if (igraph_cattribute_list(g, NULL, NULL, &vn, &vt, &en, &et) == IGRAPH_SUCCESS) {
        igraph_strvector_t *names = vertex ? &vn : &en;
        igraph_vector_int_t *types = vertex ? &vt : &et;
        for (igraph_integer_t i = 0; i < igraph_strvector_size(names); i++)
            if (strcmp(igraph_strvector_get(names, i), name) == 0)
                type = (int)VECTOR(*types)[i];
    }
    igraph_strvector_destroy(&vn);
    igraph_strvector_destroy(&en);
    igraph_vector_int_destroy(&vt);
    igraph_vector_int_destroy(&et);
    return type;
}

static int truthy(const char *s)
{
    return strcmp(s, "1") == 0 || strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0;
}

/* The file's id of vertex v (GraphML "id"), else its index. */
static void vertex_name(const igraph_t *t, igraph_integer_t v, char *buf, size_t cap)
{
    if (attr_type(t, 1, "id") == IGRAPH_ATTRIBUTE_STRING)
        snprintf(buf, cap, "%s", VAS(t, "id", v));
    else
        snprintf(buf, cap, "%ld", (long)v);
}

/* Per-edge values of a latency (time) or bandwidth (rate) attribute into out
 * (NaN where absent). Returns 1 if the attribute exists, 0 if not, < 0 on
 * error. */
static int edge_values(const char *path, const igraph_t *t, const char *name, int is_rate,
                       double *out, sim_err *err)
{
    int type = attr_type(t, 0, name);
    igraph_integer_t m = igraph_ecount(t);
    if (type < 0)
        return 0;
    for (igraph_integer_t e = 0; e < m; e++) {
        double v = NAN;
        if (type == IGRAPH_ATTRIBUTE_NUMERIC) {
            v = EAN(t, name, e);
        } else if (type == IGRAPH_ATTRIBUTE_STRING) {
            const char *s = EAS(t, name, e);
            if (s && *s) {
                sim_err e2;
                int rc;
                if (is_rate) {
                    rc = sim_parse_rate(s, &v, &e2);
                } else {
                    sim_time ns;
                    rc = sim_parse_time(s, &ns, &e2);
                    v = sim_time_to_s(ns);
                }
                if (rc < 0)
                    return sim_err_set(err, SIM_EINPUT, "%s: edge %ld: %s: %s", path, (long)e, name,
                                       e2.msg);
            }
        } else {
            return sim_err_set(err, SIM_EINPUT, "%s: edge attribute '%s' must be numeric or a string",
                               path, name);
        }
        if (!isnan(v) && (is_rate ? !(v > 0.0 && isfinite(v)) : !(v >= 0.0 && isfinite(v)))) {
            char a[64], b[64];
            igraph_integer_t u = IGRAPH_FROM(t, e), w = IGRAPH_TO(t, e);
            vertex_name(t, u < w ? u : w, a, sizeof a); /* earlier vertex in the file first */
            vertex_name(t, u < w ? w : u, b, sizeof b);
            return sim_err_set(err, SIM_EINPUT, "%s: edge %ld (%s-%s): %s must be %s, got %g", path,
                               (long)e, a, b, name,
                               is_rate ? "a rate > 0 in bytes/s" : "a time >= 0 in seconds", v);
        }
        out[e] = v;
    }
    return 1;
}

/* Host flags from the `host` vertex attribute; all ones when absent. */
static int host_flags(const char *path, const igraph_t *t, char *is_host, sim_err *err)
{
    igraph_integer_t nv = igraph_vcount(t);
    int type = attr_type(t, 1, "host");
    for (igraph_integer_t v = 0; v < nv; v++) {
        if (type < 0)
            is_host[v] = 1;
        else if (type == IGRAPH_ATTRIBUTE_NUMERIC)
            is_host[v] = VAN(t, "host", v) != 0 && !isnan(VAN(t, "host", v));
        else if (type == IGRAPH_ATTRIBUTE_BOOLEAN)
            is_host[v] = VAB(t, "host", v) ? 1 : 0;
        else if (type == IGRAPH_ATTRIBUTE_STRING)
            is_host[v] = truthy(VAS(t, "host", v));
        else
            return sim_err_set(err, SIM_EINPUT, "%s: vertex attribute 'host' must be numeric, "
                                                "boolean or a string", path);
    }
    return 0;
}

/* The network as plain arrays, hosts renumbered first. */
typedef struct net_file {
    igraph_integer_t nv, m;
    int hosts;
    igraph_integer_t *pairs;
    double *lat, *bw; /* NULL when the file has no such attribute */
} net_file;

static void net_file_free(net_file *nf)
{
    free(nf->pairs);
    free(nf->lat);
    free(nf->bw);
    memset(nf, 0, sizeof *nf);
}

/* Copies the attributed graph t into nf (t is left to the caller). */
static int from_attributed(const char *path, const igraph_t *t, net_file *nf, sim_err *err)
{
    igraph_integer_t nv = igraph_vcount(t), m = igraph_ecount(t);
    size_t ms = (size_t)(m ? m : 1);
    memset(nf, 0, sizeof *nf);
    if (nv > TOPO_FILE_MAX_NODES)
        return sim_err_set(err, SIM_EINPUT, "%s: too many vertices (%ld; a network file has at most %d)",
                           path, (long)nv, TOPO_FILE_MAX_NODES);
    char *is_host = malloc((size_t)(nv ? nv : 1));
    igraph_integer_t *perm = malloc(sizeof *perm * (size_t)(nv ? nv : 1));
    nf->pairs = malloc(sizeof *nf->pairs * 2 * ms);
    nf->lat = malloc(sizeof *nf->lat * ms);
    nf->bw = malloc(sizeof *nf->bw * ms);
    int rc = 0, has;
    if (!is_host || !perm || !nf->pairs || !nf->lat || !nf->bw) {
        rc = sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    if ((rc = host_flags(path, t, is_host, err)))
        goto done;
    if ((has = edge_values(path, t, "latency", 0, nf->lat, err)) < 0) {
        rc = has;
        goto done;
    }
    if (!has) {
        free(nf->lat);
        nf->lat = NULL;
    }
    if ((has = edge_values(path, t, "bandwidth", 1, nf->bw, err)) < 0) {
        rc = has;
        goto done;
    }
    if (!has) {
        free(nf->bw);
        nf->bw = NULL;
    }
    igraph_integer_t next = 0;
    for (igraph_integer_t v = 0; v < nv; v++)
        if (is_host[v])
            perm[v] = next++;
    nf->hosts = (int)next;
    for (igraph_integer_t v = 0; v < nv; v++)
        if (!is_host[v])
            perm[v] = next++;
    if (nf->hosts == 0) {
        rc = sim_err_set(err, SIM_EINPUT, "%s: no vertex is marked as a host (host = 1)", path);
        goto done;
    }
    for (igraph_integer_t e = 0; e < m; e++) {
        nf->pairs[2 * e] = perm[IGRAPH_FROM(t, e)];
        nf->pairs[2 * e + 1] = perm[IGRAPH_TO(t, e)];
    }
    nf->nv = nv;
    nf->m = m;
done:
    free(is_host);
    free(perm);
    if (rc)
        net_file_free(nf);
    return rc;
}

static int read_graphml(const char *path, FILE *f, net_file *nf, sim_err *err)
{
    igraph_attribute_table_t *old = igraph_set_attribute_table(&igraph_cattribute_table);
    igraph_t t;
    int rc;
    if (igraph_read_graph_graphml(&t, f, 0) != IGRAPH_SUCCESS) {
        rc = sim_err_set(err, SIM_EINPUT, "%s: not a valid GraphML file: %s", path,
                         sim_err_library_last());
    } else {
        rc = from_attributed(path, &t, nf, err);
        igraph_destroy(&t); /* with the table that created its attributes */
    }
    igraph_set_attribute_table(old);
    return rc;
}

/* An edge list: every vertex a host, no per-edge values. */
static int read_plain(const char *path, net_file *nf, sim_err *err)
{
    igraph_t t;
    memset(nf, 0, sizeof *nf);
    int rc = topo_graph_read_file(path, 0, &t, err);
    if (rc)
        return rc;
    nf->nv = igraph_vcount(&t);
    nf->m = igraph_ecount(&t);
    nf->hosts = (int)nf->nv;
    nf->pairs = malloc(sizeof *nf->pairs * 2 * (size_t)(nf->m ? nf->m : 1));
    if (!nf->pairs) {
        igraph_destroy(&t);
        return sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
    }
    for (igraph_integer_t e = 0; e < nf->m; e++) {
        nf->pairs[2 * e] = IGRAPH_FROM(&t, e);
        nf->pairs[2 * e + 1] = IGRAPH_TO(&t, e);
    }
    igraph_destroy(&t);
    return 0;
}

static int has_ext(const char *path, const char *ext)
{
    size_t lp = strlen(path), le = strlen(ext);
    return lp >= le && strcasecmp(path + lp - le, ext) == 0;
}

int topo_physnet_read_file(topo_physnet *pn, const char *path, sim_err *err)
{
    net_file nf;
    int rc;
    if (has_ext(path, ".graphml") || has_ext(path, ".xml")) {
        FILE *f = fopen(path, "rb");
        if (!f)
            return sim_err_set(err, SIM_EINPUT, "%s: cannot open: %s", path, strerror(errno));
        rc = read_graphml(path, f, &nf, err);
        fclose(f);
    } else {
        rc = read_plain(path, &nf, err);
    }
    if (rc)
        return rc;
    /* Links keep the file's multiplicity and order (self-loops carry no
     * traffic); the graph is undirected whatever the file declares. */
    igraph_vector_int_t ev;
    igraph_vector_int_view(&ev, nf.pairs, 2 * nf.m);
    if (igraph_create(&pn->graph, &ev, nf.nv, IGRAPH_UNDIRECTED) != IGRAPH_SUCCESS) {
        net_file_free(&nf);
        return sim_err_set(err, SIM_ENOMEM, "%s: %s", path, sim_err_library_last());
    }
    size_t ms = (size_t)(nf.m ? nf.m : 1);
    pn->n_hosts = nf.hosts;
    pn->latency_file = nf.lat;
    pn->bandwidth_file = nf.bw;
    nf.lat = nf.bw = NULL;
    if (pn->latency_file && !(pn->latency = malloc(sizeof *pn->latency * ms)))
        rc = sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
    if (pn->bandwidth_file && !(pn->bandwidth = malloc(sizeof *pn->bandwidth * ms)))
        rc = sim_err_set(err, SIM_ENOMEM, "%s: out of memory", path);
    net_file_free(&nf);
    if (rc)
        topo_physnet_release(pn);
    return rc;
}
