/* The HIER kind of sim_coll (collective.h): private to sim/collective.c. */
#ifndef DTSIM_SIM_COLL_HIER_H
#define DTSIM_SIM_COLL_HIER_H

#include "sim/collective.h"

typedef struct coll_hier coll_hier;

/* hosts: the n ranks' hosts (already checked). Without d->hosts,
 * d->per_node must divide d->n; with them, the server of rank r is
 * hosts[r] / per_node, ascending with r (coll_hier.c). */
coll_hier *coll_hier_create(sim_net *net, const sim_coll_desc *d, const int *hosts,
                            sim_err *err);
void coll_hier_destroy(coll_hier *h);
/* 1 while one of its parts is busy (sim_coll_busy); 0 for NULL. */
int coll_hier_busy(const coll_hier *h);
int coll_hier_enter(coll_hier *h, int rank, double bytes, sim_err *err);

#endif
