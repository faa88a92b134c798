/* Aggregation over seeds (--aggregate): groups of runs whose params differ
 * only in experiment.seed and experiment.name, with mean, min and max of
 * each statistic, written as a text table or CSV. */
#include "analysis/report.h"
#include "analysis/report_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void stat_add(an_report_stat *s, double v)
{
    if (isnan(v))
        return;
    if (s->n == 0) {
        s->mean = s->min = s->max = v;
    } else {
        s->mean += v;
        s->min = fmin(s->min, v);
        s->max = fmax(s->max, v);
    }
    s->n++;
}

static void stat_finish(an_report_stat *s)
{
    if (s->n > 0)
        s->mean /= s->n;
    else
        s->mean = s->min = s->max = NAN;
}

static void group_add_row(an_report_group *g, const an_report_row *r)
{
    g->run_ids[g->n_runs++] = r->id;
    stat_add(&g->final_train_loss, r->final_train_loss);
    stat_add(&g->final_test_accuracy, r->final_test_accuracy);
    stat_add(&g->sim_time, r->sim_time);
    stat_add(&g->time_to_target, r->time_to_target);
    if (!isnan(r->time_to_target))
        g->n_reached++;
    stat_add(&g->speedup, r->speedup);
    stat_add(&g->bytes_sent, r->bytes_sent >= 0 ? (double)r->bytes_sent : NAN);
    stat_add(&g->idle_fraction, r->idle_fraction);
    stat_add(&g->mean_staleness, r->mean_staleness);
    stat_add(&g->consensus_distance, r->consensus_distance);
}

void an_report_groups_release(an_report_groups *agg)
{
    if (!agg)
        return;
    for (int i = 0; i < agg->n_groups; i++)
        free(agg->groups[i].run_ids);
    free(agg->groups);
    agg->groups = NULL;
    agg->n_groups = 0;
}

int an_report_aggregate(an_db *db, const an_report *rep, an_report_groups *agg,
                        sim_err *err)
{
    agg->groups = NULL;
    agg->n_groups = 0;
    report_ctx c = {.db = db, .conn = an_db_sqlite(db)};
    char **fps = calloc((size_t)rep->n_rows + 1, sizeof *fps);
    int *of = calloc((size_t)rep->n_rows + 1, sizeof *of);
    int ret = fps && of ? 0 : sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    if (ret == 0 && rep->n_rows > 0) {
        agg->groups = calloc((size_t)rep->n_rows, sizeof *agg->groups);
        if (!agg->groups)
            ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    }
    for (int i = 0; ret == 0 && i < rep->n_rows; i++) {
        const an_report_row *r = &rep->rows[i];
        of[i] = -1;
        if (strcmp(r->status, "done") != 0 && strcmp(r->status, "diverged") != 0)
            continue;
        ret = report_fingerprint(&c, r->id, 1, &fps[i], err);
        if (ret != 0)
            break;
        for (int j = 0; j < i && of[i] < 0; j++)
            if (fps[j] && of[j] >= 0 && strcmp(fps[j], fps[i]) == 0 &&
                strcmp(rep->rows[j].target_metric, r->target_metric) == 0)
                of[i] = of[j];
        if (of[i] < 0) {
            an_report_group *g = &agg->groups[agg->n_groups];
            g->run_ids = malloc((size_t)rep->n_rows * sizeof *g->run_ids);
            if (!g->run_ids) {
                ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
                break;
            }
            of[i] = agg->n_groups++;
            snprintf(g->name, sizeof g->name, "%s", r->name);
            snprintf(g->algorithm, sizeof g->algorithm, "%s", r->algorithm);
            snprintf(g->target_metric, sizeof g->target_metric, "%s", r->target_metric);
            g->n_workers = r->n_workers;
            g->target = r->target;
        }
        group_add_row(&agg->groups[of[i]], r);
    }
    for (int i = 0; i < agg->n_groups; i++) {
        an_report_stat *st[] = {&agg->groups[i].final_train_loss,
                                &agg->groups[i].final_test_accuracy, &agg->groups[i].sim_time,
                                &agg->groups[i].time_to_target, &agg->groups[i].speedup,
                                &agg->groups[i].bytes_sent, &agg->groups[i].idle_fraction,
                                &agg->groups[i].mean_staleness,
                                &agg->groups[i].consensus_distance};
        for (size_t k = 0; k < sizeof st / sizeof st[0]; k++)
            stat_finish(st[k]);
    }
    for (int i = 0; fps && i < rep->n_rows; i++)
        free(fps[i]);
    free(fps);
    free(of);
    if (ret != 0)
        an_report_groups_release(agg);
    return ret;
}

enum {
    AG_IDS, AG_SEEDS, AG_NAME, AG_ALGO, AG_WORKERS, AG_TRAIN_LOSS, AG_TEST_ACC, AG_SIM_TIME,
    AG_METRIC, AG_TARGET, AG_TTA, AG_REACHED, AG_SPEEDUP, AG_BYTES, AG_IDLE, AG_STALENESS,
    AG_CONSENSUS, N_AG
};

static const char *const ag_headers[N_AG] = {
    "runs", "seeds", "name", "algorithm", "n", "loss", "acc", "sim(s)", "metric",
    "target", "tta(s)", "reached", "speedup", "bytes", "idle", "stale", "consensus",
};

/* "mean [min, max]", or the mean alone when the runs agree or there is one. */
static void fmt_stat(char *cell, const char *fmt, const an_report_stat *s)
{
    char a[48], b[48], m[48];
    if (s->n == 0) {
        snprintf(cell, REPORT_CELL, "-");
        return;
    }
    snprintf(m, sizeof m, fmt, s->mean);
    snprintf(a, sizeof a, fmt, s->min);
    snprintf(b, sizeof b, fmt, s->max);
    if (s->n == 1 || strcmp(a, b) == 0)
        snprintf(cell, REPORT_CELL, "%s", m);
    else
        snprintf(cell, REPORT_CELL, "%s [%s, %s]", m, a, b);
}

static void fmt_stat_bytes(char *cell, const an_report_stat *s)
{
    char a[REPORT_CELL], b[REPORT_CELL], m[REPORT_CELL];
    if (s->n == 0) {
        snprintf(cell, REPORT_CELL, "-");
        return;
    }
    report_fmt_bytes(m, (int64_t)llround(s->mean));
    report_fmt_bytes(a, (int64_t)llround(s->min));
    report_fmt_bytes(b, (int64_t)llround(s->max));
    if (s->n == 1 || strcmp(a, b) == 0)
        snprintf(cell, REPORT_CELL, "%.40s", m);
    else
        snprintf(cell, REPORT_CELL, "%.40s [%.40s, %.40s]", m, a, b);
}

static void group_ids(const an_report_group *g, char *cell, const char *sep)
{
    size_t len = 0;
    cell[0] = '\0';
    for (int i = 0; i < g->n_runs; i++) {
        int w = snprintf(cell + len, REPORT_CELL - len, "%s%lld", i ? sep : "",
                         (long long)g->run_ids[i]);
        if (w < 0 || len + (size_t)w + 5 >= REPORT_CELL) {
            snprintf(cell + len, REPORT_CELL - len, "...");
            return;
        }
        len += (size_t)w;
    }
}

static void group_cells(const an_report_group *g, char cells[N_AG][REPORT_CELL])
{
    group_ids(g, cells[AG_IDS], ",");
    snprintf(cells[AG_SEEDS], REPORT_CELL, "%d", g->n_runs);
    snprintf(cells[AG_NAME], REPORT_CELL, "%s", g->name[0] ? g->name : "-");
    snprintf(cells[AG_ALGO], REPORT_CELL, "%s", g->algorithm[0] ? g->algorithm : "-");
    snprintf(cells[AG_WORKERS], REPORT_CELL, "%d", g->n_workers);
    fmt_stat(cells[AG_TRAIN_LOSS], "%.4f", &g->final_train_loss);
    fmt_stat(cells[AG_TEST_ACC], "%.4f", &g->final_test_accuracy);
    fmt_stat(cells[AG_SIM_TIME], "%.3f", &g->sim_time);
    snprintf(cells[AG_METRIC], REPORT_CELL, "%s", g->target_metric[0] ? g->target_metric : "-");
    report_fmt_real(cells[AG_TARGET], "%g", g->target, "-");
    fmt_stat(cells[AG_TTA], "%.3f", &g->time_to_target);
    if (g->target_metric[0])
        snprintf(cells[AG_REACHED], REPORT_CELL, "%d/%d", g->n_reached, g->n_runs);
    else
        snprintf(cells[AG_REACHED], REPORT_CELL, "-");
    fmt_stat(cells[AG_SPEEDUP], "%.2f", &g->speedup);
    fmt_stat_bytes(cells[AG_BYTES], &g->bytes_sent);
    fmt_stat(cells[AG_IDLE], "%.3f", &g->idle_fraction);
    fmt_stat(cells[AG_STALENESS], "%.2f", &g->mean_staleness);
    fmt_stat(cells[AG_CONSENSUS], "%.4g", &g->consensus_distance);
}

static void csv_stat(FILE *out, const an_report_stat *s)
{
    if (s->n == 0)
        fputs(",,", out);
    else
        fprintf(out, "%.9g,%.9g,%.9g", s->mean, s->min, s->max);
}

static void groups_csv(const an_report_groups *agg, FILE *out)
{
    static const char *const stats[] = {"final_train_loss", "final_test_accuracy",
                                        "sim_time", "time_to_target", "speedup",
                                        "bytes_sent", "idle_fraction", "mean_staleness",
                                        "consensus_distance"};
    fputs("run_ids,n_runs,name,algorithm,n_workers,target_metric,target,n_reached", out);
    for (size_t k = 0; k < sizeof stats / sizeof stats[0]; k++)
        fprintf(out, ",%s_mean,%s_min,%s_max", stats[k], stats[k], stats[k]);
    fputc('\n', out);
    for (int i = 0; i < agg->n_groups; i++) {
        const an_report_group *g = &agg->groups[i];
        char ids[REPORT_CELL], name[REPORT_CELL], algo[REPORT_CELL], metric[REPORT_CELL];
        group_ids(g, ids, ";");
        report_fmt_csv(name, g->name);
        report_fmt_csv(algo, g->algorithm);
        report_fmt_csv(metric, g->target_metric);
        fprintf(out, "%s,%d,%s,%s,%d,%s,", ids, g->n_runs, name, algo, g->n_workers, metric);
        if (!isnan(g->target))
            fprintf(out, "%.9g", g->target);
        fprintf(out, ",%d", g->n_reached);
        const an_report_stat *st[] = {&g->final_train_loss, &g->final_test_accuracy,
                                      &g->sim_time, &g->time_to_target, &g->speedup,
                                      &g->bytes_sent, &g->idle_fraction, &g->mean_staleness,
                                      &g->consensus_distance};
        for (size_t k = 0; k < sizeof st / sizeof st[0]; k++) {
            fputc(',', out);
            csv_stat(out, st[k]);
        }
        fputc('\n', out);
    }
}

int an_report_groups_write(const an_report_groups *agg, int csv, FILE *out, sim_err *err)
{
    if (csv) {
        groups_csv(agg, out);
    } else {
        char (*cells)[N_AG][REPORT_CELL] = calloc((size_t)agg->n_groups + 1, sizeof *cells);
        if (!cells)
            return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        int width[N_AG];
        for (int col = 0; col < N_AG; col++) {
            snprintf(cells[0][col], REPORT_CELL, "%s", ag_headers[col]);
            width[col] = (int)strlen(ag_headers[col]);
        }
        for (int i = 0; i < agg->n_groups; i++) {
            group_cells(&agg->groups[i], cells[i + 1]);
            for (int col = 0; col < N_AG; col++)
                if ((int)strlen(cells[i + 1][col]) > width[col])
                    width[col] = (int)strlen(cells[i + 1][col]);
        }
        /* columns that are "-" in every group are left out (mean [min, max]
         * cells make this table wider than the per-run one; --csv has it all) */
        int last = -1;
        for (int col = 0; col < N_AG; col++) {
            int missing = col >= AG_WORKERS && agg->n_groups > 0;
            for (int i = 1; i <= agg->n_groups && missing; i++)
                missing = strcmp(cells[i][col], "-") == 0;
            if (missing)
                width[col] = 0;
            else
                last = col;
        }
        for (int i = 0; i <= agg->n_groups; i++) {
            for (int col = 0; col <= last; col++) {
                if (width[col] == 0)
                    continue;
                int left = col == AG_IDS || col == AG_NAME || col == AG_ALGO ||
                           col == AG_METRIC;
                if (col == last && left)
                    fputs(cells[i][col], out);
                else if (col == last)
                    fprintf(out, "%*s", width[col], cells[i][col]);
                else
                    fprintf(out, left ? "%-*s  " : "%*s  ", width[col], cells[i][col]);
            }
            fputc('\n', out);
        }
        if (agg->n_groups == 0)
            fputs("no finished runs\n", out);
        free(cells);
    }
    if (fflush(out) != 0 || ferror(out))
        return sim_err_set(err, SIM_EIO, "report: write failed");
    return 0;
}
