/* What the methods share beside their drivers (see method.h). */
#include "algorithms/methods/method.h"

#include <math.h>

/* The integer key in [lo, hi] (hi = INT64_MAX: no upper bound). */
static int key_int(const cfg_config *c, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   sim_err *err)
{
    int rc = cfg_get_int(c, "algorithm", key, out, err);
    if (rc < 0 || (*out >= lo && *out <= hi))
        return rc;
    if (hi == INT64_MAX)
        return cfg_error(c, "algorithm", key, SIM_ECONFIG, err, "must be >= %lld, got %lld",
                         (long long)lo, (long long)*out);
    return cfg_error(c, "algorithm", key, SIM_ECONFIG, err, "must be in [%lld, %lld], got %lld",
                     (long long)lo, (long long)hi, (long long)*out);
}

/* A double key in the interval from lo to hi, its bounds open or closed as
 * bounds[0] and bounds[1] say ("[)": lo <= x < hi; hi = INFINITY: "]"
 * accepts infinity, ")" does not). */
static int key_double(const cfg_config *c, const char *key, double lo, double hi,
                      const char *bounds, double *out, sim_err *err)
{
    int rc = cfg_get_double(c, "algorithm", key, out, err);
    if (rc < 0)
        return rc;
    double x = *out;
    int lo_ok = bounds[0] == '(' ? x > lo : x >= lo;
    int hi_ok = bounds[1] == ')' ? x < hi : x <= hi;
    if (lo_ok && hi_ok)
        return 0;
    if (hi == INFINITY)
        return cfg_error(c, "algorithm", key, SIM_ECONFIG, err, "must be %s %g, got %g",
                         bounds[0] == '(' ? ">" : ">=", lo, x);
    return cfg_error(c, "algorithm", key, SIM_ECONFIG, err, "must be in %c%g, %g%c, got %g",
                     bounds[0], lo, hi, bounds[1], x);
}

int algo_keys_read(const cfg_config *c, const cfg_key *keys, void *st, void *ext,
                   sim_err *err)
{
    for (const cfg_key *k = keys; k && k->key; k++) {
        char *to = k->ext ? ext : st;
        if (!k->size || !to)
            continue;
        to += k->offset;
        int64_t v = 0;
        int rc;
        if (k->type == CFG_KEY_DOUBLE && k->bounds)
            rc = key_double(c, k->key, k->lo, k->hi, k->bounds, (double *)to, err);
        else if (k->type == CFG_KEY_DOUBLE)
            rc = cfg_get_double(c, "algorithm", k->key, (double *)to, err);
        else if (k->type == CFG_KEY_BOOL)
            rc = cfg_get_bool(c, "algorithm", k->key, (int *)to, err);
        else if (k->bounds)
            rc = key_int(c, k->key, (int64_t)k->lo, k->hi == INFINITY ? INT64_MAX : (int64_t)k->hi,
                         &v, err);
        else
            rc = cfg_get_int(c, "algorithm", k->key, &v, err);
        if (rc)
            return rc;
        if (k->type == CFG_KEY_INT && k->size == sizeof(int64_t))
            *(int64_t *)to = v;
        else if (k->type == CFG_KEY_INT)
            *(int *)to = (int)v;
    }
    return 0;
}

const float *algo_method_shared_model(void *state, float *scratch SIM_UNUSED)
{
    return *(float **)state;
}
