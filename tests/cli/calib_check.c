/* calib_check FRAGMENT EXPERIMENT: the check behind tests/cli/test_calibrate.sh.
 * EXPERIMENT includes FRAGMENT (written by dtsim calibrate) with
 * [network] calibration = ... on a star of 2 hosts. Checks, printing one
 * line per failure and exiting 1 on any:
 *  1. every key of the fragment loads with the value written (parsed
 *     again here from the fragment's text);
 *  2. dtsim's network, built from the loaded experiment, delivers a
 *     message of each ping-pong size at the time the fit modelled (the
 *     fragment's `# point pingpong` lines), to 1e-9 relative;
 *  3. that prediction is within the fit's reported max_residual of what
 *     calibrate measured (the fit reproduces its own measurements). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "sim/engine.h"
#include "sim/network.h"
#include "topology/physnet.h"

static int failures;

#define CHECK(cond, ...)                     \
    do {                                     \
        if (!(cond)) {                       \
            printf("calib_check: " __VA_ARGS__); \
            printf("\n");                    \
            failures++;                      \
        }                                    \
    } while (0)

static void on_deliver(sim_engine *eng, void *ctx, uint64_t arg, int src, int dst, double bytes)
{
    (void)arg, (void)src, (void)dst, (void)bytes;
    *(sim_time *)ctx = sim_engine_now(eng);
}

/* One message of `bytes` from host 0 to host 1 on the loaded network. */
static double one_way(const cfg_config *cfg, double bytes)
{
    sim_err err;
    topo_physnet pn;
    if (topo_physnet_build(&pn, cfg->net_topology, 2, &err)) {
        printf("calib_check: %s\n", err.msg);
        exit(1);
    }
    sim_net_desc d;
    topo_physnet_desc(&pn, cfg->latency, cfg->bandwidth, cfg->sharing, &d);
    cfg_net_transport(cfg, &d);
    sim_engine *eng = sim_engine_create(0);
    sim_net *net = sim_net_create(eng, &d, &err);
    if (!net) {
        printf("calib_check: %s\n", err.msg);
        exit(1);
    }
    sim_time t = -1;
    sim_net_send(net, 0, 1, bytes, on_deliver, &t, 0, &err);
    while (sim_engine_step(eng))
        ;
    sim_net_destroy(net);
    sim_engine_destroy(eng);
    topo_physnet_release(&pn);
    return sim_time_to_s(t);
}

/* Key `key` of the fragment as written equals the loaded value. */
static void check_key(const cfg_config *cfg, const char *key, const char *written)
{
    double want = 0, got = 0;
    sim_time t;
    if (!strcmp(key, "latency") || !strcmp(key, "message_overhead") ||
        !strcmp(key, "collective_overhead")) {
        CHECK(sim_parse_time(written, &t, NULL) == 0, "%s: bad time '%s'", key, written);
        want = (double)t / 1e9;
        got = !strcmp(key, "latency") ? cfg->latency
              : !strcmp(key, "message_overhead") ? cfg->message_overhead
                                                 : cfg->collective_overhead;
    } else if (!strcmp(key, "bandwidth")) {
        CHECK(sim_parse_rate(written, &want, NULL) == 0, "bad rate '%s'", written);
        got = cfg->bandwidth;
    } else if (!strcmp(key, "efficiency")) {
        want = strtod(written, NULL);
        got = cfg->net_efficiency;
    } else if (!strcmp(key, "efficiency_by_size")) {
        sim_net_by_size tab;
        CHECK(sim_net_by_size_parse(written, SIM_BY_SIZE_EFFICIENCY, &tab, NULL) == 0,
              "bad table '%s'", written);
        CHECK(memcmp(&tab, &cfg->efficiency_by_size, sizeof tab) == 0, "table differs");
        return;
    } else {
        CHECK(0, "unexpected key '%s' in the fragment", key);
        return;
    }
    CHECK(got == want, "%s: loaded %.17g, written %.17g", key, got, want);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: calib_check FRAGMENT EXPERIMENT\n");
        return 2;
    }
    cfg_config cfg;
    sim_err err;
    if (cfg_load(NULL, argv[2], NULL, 0, &cfg, &err)) {
        printf("calib_check: %s\n", err.msg);
        return 1;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        printf("calib_check: cannot open %s\n", argv[1]);
        return 1;
    }
    char line[1024];
    double max_res = -1;
    int points = 0, keys = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        double bytes, measured, model, residual;
        int ranks;
        char key[64], value[512];
        if (sscanf(line, "# max_residual = %lf", &max_res) == 1)
            continue;
        if (sscanf(line, "# point pingpong %d %lf %lf %lf %lf", &ranks, &bytes, &measured,
                   &model, &residual) == 5) {
            double pred = one_way(&cfg, bytes);
            CHECK(fabs(pred - model) <= 1e-9 * model + 1e-9,
                  "%.0f bytes: dtsim %.9g s, the fit's model %.9g s", bytes, pred, model);
            CHECK(fabs(measured - pred) <= (max_res + 1e-9) * measured + 1e-9,
                  "%.0f bytes: dtsim %.9g s, measured %.9g s, beyond max_residual %g", bytes,
                  pred, measured, max_res);
            points++;
        } else if (line[0] != '#' && line[0] != '[' &&
                   sscanf(line, "%63s = %511[^\n]", key, value) == 2) {
            check_key(&cfg, key, value);
            keys++;
        }
    }
    fclose(f);
    CHECK(max_res >= 0, "no max_residual line");
    CHECK(points >= 2, "%d ping-pong points", points);
    CHECK(keys >= 5, "%d keys", keys);
    cfg_release(&cfg);
    printf("calib_check: %d points, %d keys, max_residual %g: %s\n", points, keys, max_res,
           failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
