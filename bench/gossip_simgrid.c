/* The hypercube gossip of bench_network on SimGrid (3.32, C API), for
 * bench_simgrid: n hosts (a power of two) on a star, each with a private
 * full-duplex link of 1.25 GB/s (10 Gb/s) and 5 us (a SimGrid cluster
 * without backbone, SPLITDUPLEX: the route between two hosts is the
 * sender's up link and the receiver's down link, as on dtsim's star);
 * every host sends 1 MB to each of its log2(n) hypercube neighbours and
 * starts its next round once its sends and receives of the round are done,
 * 5 rounds. Run with SimGrid's CM02 model without cross traffic or TCP
 * window bound (max-min sharing, pure alpha-beta), which predicts what
 * dtsim's fair sharing predicts. Prints the simulated time.
 * Usage: gossip_simgrid N PLATFORM_DIR [SimGrid --cfg=... options] */
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 5
#define MSG 1000000L
#define DIM_MAX 20

static int dim;

static void node(int argc, char **argv)
{
    (void)argc;
    int r = atoi(argv[1]);
    char name[64];
    sg_comm_t comms[2 * DIM_MAX];
    void *data[DIM_MAX];
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < dim; k++) {
            snprintf(name, sizeof name, "%d-%d", r ^ (1 << k), round);
            comms[k] = sg_mailbox_put_async(sg_mailbox_by_name(name), &dim, MSG);
        }
        snprintf(name, sizeof name, "%d-%d", r, round);
        sg_mailbox_t mine = sg_mailbox_by_name(name);
        for (int k = 0; k < dim; k++)
            comms[dim + k] = sg_mailbox_get_async(mine, &data[k]);
        sg_comm_wait_all(comms, (size_t)(2 * dim));
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gossip_simgrid N PLATFORM_DIR [--cfg=...]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    while ((1 << dim) < n)
        dim++;
    if (n < 2 || (1 << dim) != n || dim > DIM_MAX) {
        fprintf(stderr, "gossip_simgrid: N must be a power of two >= 2\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/gossip_star_%d.xml", argv[2], n);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n"
               "  <cluster id=\"star\" prefix=\"h\" suffix=\"\" radical=\"0-%d\" speed=\"1Gf\""
               " bw=\"1.25GBps\" lat=\"5us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
               "</platform>\n",
            n - 1);
    fclose(f);
    int sargc = argc - 2;
    char **sargv = argv + 2; /* argv[2] stands for the program name */
    simgrid_init(&sargc, sargv);
    simgrid_load_platform(path);
    char rank[16];
    for (int r = 0; r < n; r++) {
        char host[32];
        snprintf(host, sizeof host, "h%d", r);
        snprintf(rank, sizeof rank, "%d", r);
        char *av[2] = {host, rank};
        sg_actor_create(host, sg_host_by_name(host), node, 2, av);
    }
    simgrid_run();
    printf("simulated %.9f s\n", simgrid_get_clock());
    remove(path);
    return 0;
}
