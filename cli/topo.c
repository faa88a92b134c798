/* dtsim topo: a logical graph as an experiment would build it, and its
 * spectral properties (topology/props.c); optionally exported. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "sim/rng.h"
#include "topology/graph.h"
#include "topology/props.h"

#define QUOTE_(x) #x
#define QUOTE(x) QUOTE_(x)

static const char help_head[] =
    "Usage: dtsim topo GRAPH [--n N] [--weights metropolis|uniform|metropolis_lazy]\n"
    "                        [--seed S] [--export FILE.graphml|.dot]\n"
    "                        [--max-memory SIZE]\n\n"
    "Builds a logical graph as [topology] graph names it (ring, torus(4, 4),\n"
    "random_regular(4), file(G.graphml), ...; `dtsim list graphs`) and prints its\n"
    "nodes, edges, degree range, diameter, whether it is connected, lambda (the\n"
    "second-largest eigenvalue magnitude of the mixing matrix W; for\n"
    "one_peer_exponential the contraction of one period of W_t) and the spectral\n"
    "gaps 1 - lambda and p = 1 - lambda^2.\n\n";

static void print_props(const char *spec, topo_weights w, const topo_graph_props *p)
{
    printf("graph       %s, %s weights\n", spec, topo_weights_name(w));
    printf("nodes       %d\n", p->n);
    printf("edges       %lld%s\n", (long long)p->n_edges,
           p->time_varying ? " (union over one period)" : "");
    printf("degree      %d .. %d%s\n", p->deg_min, p->deg_max,
           p->deg_min == p->deg_max ? " (regular)" : "");
    if (p->time_varying)
        printf("schedule    time-varying, period %d steps, %d peer%s per step\n", p->period,
               p->peers_per_step, p->peers_per_step == 1 ? "" : "s");
    if (p->diameter >= 0)
        printf("diameter    %d\n", p->diameter);
    else
        printf("diameter    infinite\n");
    printf("connected   %s\n", p->connected ? "yes" : "no");
    printf("lambda      %.10g  (%s; %s)\n", p->lambda,
           p->time_varying ? "||W_{p-1}..W_0 - J||, one period"
                           : "second-largest |eigenvalue| of W",
           topo_lambda_method_name(p->lambda_method));
    printf("gap         %.10g  (1 - lambda)\n", p->gap);
    printf("p           %.10g  (1 - lambda^2)\n", p->p);
}

int cli_topo_main(int argc, char **argv)
{
    const char *spec = NULL, *export = NULL, *weights = "metropolis";
    long long n = 0, seed = 1;
    int status;
    const cli_opt opts[] = {
        CLI_INT("--n", &n, 1, 1 << 24, "--n: expected a node count >= 1, got '%s'",
                "  --n N          nodes (workers); default: r x c for a torus, the file's node\n"
                "                 count for file(...), else " QUOTE(TOPO_GRAPH_DEFAULT_N) "\n"),
        CLI_STRING("--weights", NULL, &weights,
                   "  --weights W    metropolis (default), uniform (regular graphs only) or\n"
                   "                 metropolis_lazy ((I + W) / 2 of metropolis)\n"),
        CLI_INT("--seed", &seed, 0, LLONG_MAX, "--seed: expected an integer >= 0, got '%s'",
                "  --seed S       master seed for random graphs (default 1): the graph an\n"
                "                 experiment with [experiment] seed = S gossips on\n"),
        CLI_STRING("--export", NULL, &export,
                   "  --export FILE  also write the graph as GraphML (.graphml) or dot (.dot)\n"),
        CLI_CALL("--max-memory", cli_max_memory, NULL,
                 "  --max-memory SIZE  refuse (exit 2) a graph whose edges need more than\n"
                 "                 SIZE (512M, 8G; default: $DTSIM_MAX_MEMORY, else the\n"
                 "                 machine's memory)\n"),
        CLI_END,
    };
    const cli_spec cs = {.command = "topo", .head = help_head, .opts = opts, .operand = &spec,
                         .missing = "missing GRAPH (see `dtsim list graphs`)"};
    if (cli_options_parse(&cs, argc, argv, &status))
        return status;
    sim_err err = {0};
    topo_weights w;
    if (topo_weights_parse(weights, &w, &err) < 0)
        return cli_usage_error("topo",
                               "--weights: expected metropolis, uniform or metropolis_lazy, "
                               "got '%s'",
                               weights);
    gsl_rng *rng = sim_rng_create((uint64_t)seed, SIM_STREAM_TOPOLOGY, 0);
    if (!rng) {
        fprintf(stderr, "dtsim: out of memory\n");
        return 1;
    }
    topo_graph g;
    int rc = topo_graph_build(&g, spec, (int)n, rng, &err);
    gsl_rng_free(rng);
    if (rc < 0 && err.code == SIM_EINPUT && n > 0 && strncmp(spec, "file", 4) != 0) {
        /* an input error of a generated graph is its size: name the option */
        fprintf(stderr, "dtsim: topo: --n %lld: %s\n", n, err.msg);
        return sim_err_exit_status(err.code);
    }
    if (rc < 0)
        return cli_fail(&err);
    topo_graph_props p;
    rc = topo_graph_describe(&g, w, &p, &err);
    if (rc == 0 && export)
        rc = topo_graph_export(&g, export, &err);
    topo_graph_release(&g);
    if (rc < 0)
        return cli_fail(&err);
    print_props(spec, w, &p);
    if (export)
        printf("exported    %s\n", export);
    return 0;
}
