/* sgd: momentum SGD in PyTorch's convention (docs/algorithms.md section
 * 0.2, heavy ball without dampening), coupled weight decay:
 *   g <- g + wd x;  m <- beta m + g;
 *   dir = m (heavy ball) or g + beta m (Nesterov);  dir = g when beta = 0.
 * The kernels are the ones every method used before optimizers became
 * plug-ins (algo_sgd_step in algo.c, algo_local_dir and algo_local_step in
 * gossip_util.c), so sgd gives the same floats, operation for operation. */
#include "algorithms/optim/sgd_kernel.h"
#include "algorithms/optim/optim_impl.h"

static int vectors(const algo_optim_hp *hp) { return hp->momentum != 0 ? 1 : 0; }

static void direction(algo_optim_state *s, const float *x, float *g)
{
    algo_local_dir(g, s->vec[0], x, s->d, s->hp.momentum, s->hp.nesterov, s->hp.weight_decay);
}

static void step(algo_optim_state *s, float *x, float *g, double lr)
{
    algo_sgd_step(x, s->vec[0], g, s->d, lr, s->hp.momentum, s->hp.nesterov,
                  s->hp.weight_decay);
}

static void step_from(algo_optim_state *s, float *out, const float *base, const float *x,
                      float *g, double lr)
{
    algo_local_step(out, base, x, g, s->vec[0], s->d, lr, s->hp.momentum, s->hp.nesterov,
                    s->hp.weight_decay);
}

const algo_optim algo_optim_sgd = {
    .name = "sgd",
    .summary = "SGD with heavy-ball or Nesterov momentum (momentum, nesterov)",
    .vectors = vectors,
    .direction = direction,
    .step = step,
    .step_from = step_from,
};
