/* Private: the layout of topo_mixing, shared by mixing.c and spectrum.c. */
#ifndef DTSIM_TOPO_MIXING_IMPL_H
#define DTSIM_TOPO_MIXING_IMPL_H

#include "topology/mixing.h"

struct topo_mixing {
    int n;
    int period;            /* number of matrices in mats */
    int symmetric;         /* 1 for static graphs */
    topo_weights weights;
    topo_wmat *mats;       /* W_0 .. W_{period-1} */
};

#endif
