/* local_sgd: Local SGD (docs/algorithms.md 1.5): H local steps, then a
 * blocking average of the parameters. The round is local_round.h's on the
 * synchronous-round driver; this file is its keys. */
#include "algorithms/methods/local_round.h"

static const cfg_key keys[] = {
    ALGO_LSGD_KEY_STEPS("4", "H: local steps between two blocking averages of the parameters"),
    ALGO_LSGD_KEY_BUFFERS,
    {0},
};

static int create(algo_env *env, void **out, sim_err *err)
{
    static const algo_lsgd_ops ops = {.keys = keys};
    algo_lsgd *s;
    int rc = algo_lsgd_alloc(env, &ops, &s, err);
    if (rc)
        return rc;
    return algo_lsgd_finish(s, 0, 1, out, err);
}

const algo_vt algo_local_sgd =
    ALGO_LSGD_VT("local_sgd", "Local SGD: H local steps, then a blocking average of the parameters",
                 "1.5", keys, create, 0);
