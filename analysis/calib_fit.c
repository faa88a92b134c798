/* dtsim calibrate, the fit and the fragment (see calibrate.h). The fitted
 * values are rounded as the experiment file will hold them (times to ns,
 * efficiencies by size to 4 digits) before the model times are computed,
 * so the residuals printed are those of the values written. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_fit.h>

#include "analysis/calibrate.h"
#include "sim/network.h"
#include "sim/units.h"

/* Weighted least squares y = c0 + c1 x over n points, weights 1/y^2. */
static int fit_line(const an_calib_point *p, int n, double *c0, double *c1)
{
    double x[AN_CALIB_MAX_SIZES], y[AN_CALIB_MAX_SIZES], w[AN_CALIB_MAX_SIZES];
    int m = 0;
    for (int i = 0; i < n; i++)
        if (p[i].measured > 0) {
            x[m] = p[i].bytes;
            y[m] = p[i].measured;
            w[m] = 1.0 / (y[m] * y[m]);
            m++;
        }
    if (m < 2)
        return -1;
    double cov00, cov01, cov11, chisq;
    return gsl_fit_wlinear(x, 1, w, 1, y, 1, (size_t)m, c0, c1, &cov00, &cov01, &cov11,
                           &chisq) ? -1 : 0;
}

static double round_ns(double s) { return sim_time_to_s(sim_time_from_s(s > 0 ? s : 0)); }

/* The per-size efficiency table from the pingpong points: piece i starts
 * at the geometric middle between sizes i-1 and i. */
static void by_size(an_calib_result *r, double a)
{
    const an_calib_point *p = r->pt[AN_CALIB_PINGPONG];
    int n = r->n_pt[AN_CALIB_PINGPONG];
    r->n_eff = 0;
    for (int i = 0; i < n && i < SIM_NET_BY_SIZE_MAX; i++) {
        double drain = p[i].measured - a;
        double e = drain > 0 ? p[i].bytes / drain / r->bandwidth : 1.0;
        e = e > 1 ? 1 : e < 1e-4 ? 1e-4 : e;
        char txt[32];
        snprintf(txt, sizeof txt, "%.4g", e);
        r->eff_value[r->n_eff] = strtod(txt, NULL);
        r->eff_size[r->n_eff] = i == 0 ? 0 : floor(sqrt(p[i - 1].bytes * p[i].bytes));
        r->n_eff++;
    }
}

static void table_of(const an_calib_result *r, sim_net_by_size *t)
{
    memset(t, 0, sizeof *t);
    t->n = r->n_eff;
    for (int i = 0; i < r->n_eff; i++) {
        t->from[i] = r->eff_size[i];
        t->value[i] = r->eff_value[i];
    }
}

int an_calib_fit(const an_calib_opts *o, an_calib_result *r, sim_err *err)
{
    double c0, c1;
    if (fit_line(r->pt[AN_CALIB_PINGPONG], r->n_pt[AN_CALIB_PINGPONG], &c0, &c1) || !(c1 > 0))
        return sim_err_set(err, SIM_EINPUT,
                           "calibrate: the ping-pong times do not fit a positive rate (%d sizes);"
                           " widen the range (--max-size)", r->n_pt[AN_CALIB_PINGPONG]);
    double rate = 1.0 / c1;
    int hops = o->hops > 0 ? o->hops : 1;
    if (o->latency >= 0) {
        r->latency = round_ns(o->latency);
        r->message_overhead = round_ns(c0 - hops * r->latency);
    } else {
        r->latency = round_ns(c0 / hops);
        r->message_overhead = 0;
    }
    double a = r->message_overhead + hops * r->latency;
    r->intercept = c0;
    r->rate = rate;
    r->bandwidth = o->bandwidth > 0 && o->bandwidth >= rate ? o->bandwidth : rate;
    r->efficiency = rate / r->bandwidth;
    r->n_eff = 0;
    if (o->by_size)
        by_size(r, a);
    sim_net_by_size tab;
    table_of(r, &tab);
    int n = r->ranks;
    /* the collective overhead: MPI_Allreduce's intercept beyond 2(n-1) a */
    r->collective_overhead = 0;
    if (fit_line(r->pt[AN_CALIB_ALLREDUCE], r->n_pt[AN_CALIB_ALLREDUCE], &c0, &c1) == 0)
        r->collective_overhead = round_ns(c0 - 2.0 * (n - 1) * a);
    r->max_residual = 0;
    for (int p = 0; p < AN_CALIB_N_PATTERNS; p++)
        for (int i = 0; i < r->n_pt[p]; i++) {
            an_calib_point *q = &r->pt[p][i];
            double s = q->bytes;
            double payload = r->bandwidth * sim_net_by_size_at(&tab, s, r->efficiency);
            double chunk = ceil(s / n);
            double payload_chunk = r->bandwidth * sim_net_by_size_at(&tab, chunk, r->efficiency);
            switch ((an_calib_pattern)p) {
            case AN_CALIB_PINGPONG: q->model = a + s / payload; break;
            case AN_CALIB_PAIRS: q->model = 2 * a + r->pairs_k * s / payload; break;
            case AN_CALIB_ALLREDUCE:
                q->model = r->collective_overhead + 2.0 * (n - 1) * (a + chunk / payload_chunk);
                break;
            case AN_CALIB_RING: q->model = 2.0 * (n - 1) * (a + chunk / payload_chunk); break;
            default: break;
            }
            q->residual = q->measured > 0 ? (q->measured - q->model) / q->measured : 0;
            if (p == AN_CALIB_PINGPONG && fabs(q->residual) > r->max_residual)
                r->max_residual = fabs(q->residual);
        }
    return 0;
}

int an_calib_write(const an_calib_opts *o, const an_calib_result *r, const char *path,
                   sim_err *err)
{
    char eff[256] = "";
    if (r->n_eff > 0) {
        sim_net_by_size tab;
        table_of(r, &tab);
        if (sim_net_by_size_format(&tab, SIM_BY_SIZE_EFFICIENCY, eff, 180) < 0)
            return sim_err_set(err, SIM_EUSAGE,
                               "calibrate: efficiency_by_size of %d sizes does not fit on one"
                               " line; raise --factor", r->n_eff);
    }
    FILE *f = fopen(path, "w");
    if (!f)
        return sim_err_set(err, SIM_EINPUT, "%s: cannot write: %s", path, strerror(errno));
    fprintf(f, "# dtsim calibrate: %d ranks, %.0f B .. %.0f B (x%g), %d repetitions, %d links"
               " per path\n", r->ranks, o->min_size, o->max_size, o->factor, o->reps, o->hops);
    fprintf(f, "# max_residual = %.17g\n", r->max_residual);
    fprintf(f, "# point pattern ranks bytes measured_s model_s residual\n");
    for (int p = 0; p < AN_CALIB_N_PATTERNS; p++)
        for (int i = 0; i < r->n_pt[p]; i++) {
            const an_calib_point *q = &r->pt[p][i];
            fprintf(f, "# point %s %d %.0f %.17g %.17g %.17g\n", an_calib_pattern_name(p),
                    p == AN_CALIB_PINGPONG ? 2 : r->ranks, q->bytes, q->measured, q->model,
                    q->residual);
        }
    fprintf(f, "[network]\n");
    fprintf(f, "latency = %lldns\n", (long long)sim_time_from_s(r->latency));
    fprintf(f, "bandwidth = %.17gB/s\n", r->bandwidth);
    fprintf(f, "efficiency = %.17g\n", r->efficiency);
    fprintf(f, "message_overhead = %lldns\n", (long long)sim_time_from_s(r->message_overhead));
    fprintf(f, "collective_overhead = %lldns\n",
            (long long)sim_time_from_s(r->collective_overhead));
    if (eff[0])
        fprintf(f, "efficiency_by_size = %s\n", eff);
    if (fclose(f) != 0)
        return sim_err_set(err, SIM_EINPUT, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}
