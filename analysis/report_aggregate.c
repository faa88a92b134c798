/* Aggregation over seeds (--aggregate): groups of runs whose params differ
 * only in experiment.seed and experiment.name, with mean, min and max of
 * each statistic, written as a text table or CSV. */
#include "analysis/report.h"
#include "analysis/report_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void group_add_row(an_report_group *g, const an_report_row *r)
{
    g->run_ids[g->n_runs++] = r->id;
    report_stat_add(&g->final_train_loss, r->final_train_loss);
    report_stat_add(&g->final_test_accuracy, r->final_test_accuracy);
    report_stat_add(&g->sim_time, r->sim_time);
    report_stat_add(&g->time_to_target, r->time_to_target);
    if (!isnan(r->time_to_target))
        g->n_reached++;
    report_stat_add(&g->speedup, r->speedup);
    report_stat_add(&g->bytes_sent, r->bytes_sent >= 0 ? (double)r->bytes_sent : NAN);
    report_stat_add(&g->idle_fraction, r->idle_fraction);
    report_stat_add(&g->mean_staleness, r->mean_staleness);
    report_stat_add(&g->consensus_distance, r->consensus_distance);
}

void an_report_groups_release(an_report_groups *agg)
{
    if (!agg)
        return;
    for (int i = 0; i < agg->n_groups; i++) {
        free(agg->groups[i].run_ids);
        free(agg->fingerprints ? agg->fingerprints[i] : NULL);
        for (int k = 0; agg->key_values && k < agg->n_keys; k++)
            free(agg->key_values[(size_t)i * agg->n_keys + k]);
    }
    free(agg->groups);
    free(agg->fingerprints);
    free(agg->key_values);
    free(agg->keys);
    memset(agg, 0, sizeof *agg);
}

/* The report's key columns that tell the groups apart (all chosen ones
 * with --columns; else not experiment.seed, and only keys whose values
 * differ among the groups), with each group's values from its first row. */
static int group_keys(const an_report *rep, const int *first_row, an_report_groups *agg,
                      sim_err *err)
{
    int n = 0, *pick = calloc((size_t)rep->n_keys + 1, sizeof *pick);
    if (!pick)
        return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    for (int k = 0; k < rep->n_keys; k++) {
        int keep = rep->keys_chosen;
        for (int g = 1; !keep && g < agg->n_groups; g++)
            keep = strcmp(rep->key_values[(size_t)first_row[g] * rep->n_keys + k],
                          rep->key_values[(size_t)first_row[0] * rep->n_keys + k]) != 0;
        if (keep && (rep->keys_chosen || strcmp(rep->keys[k], "experiment.seed") != 0))
            pick[n++] = k;
    }
    int ret = 0;
    if (n > 0 && agg->n_groups > 0) {
        agg->keys = calloc((size_t)n, sizeof *agg->keys);
        agg->key_values = calloc((size_t)n * agg->n_groups, sizeof *agg->key_values);
        if (!agg->keys || !agg->key_values)
            ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        else
            agg->n_keys = n;
    }
    for (int k = 0; ret == 0 && k < agg->n_keys; k++) {
        snprintf(agg->keys[k], sizeof agg->keys[k], "%s", rep->keys[pick[k]]);
        for (int g = 0; ret == 0 && g < agg->n_groups; g++) {
            const char *v = rep->key_values[(size_t)first_row[g] * rep->n_keys + pick[k]];
            if (!(agg->key_values[(size_t)g * n + k] = strdup(v)))
                ret = sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        }
    }
    free(pick);
    return ret;
}

int an_report_aggregate(an_db *db, const an_report *rep, an_report_groups *agg,
                        sim_err *err)
{
    memset(agg, 0, sizeof *agg);
    report_ctx c = {.db = db, .conn = an_db_sqlite(db)};
    char **fps = calloc((size_t)rep->n_rows + 1, sizeof *fps);
    int *of = calloc((size_t)rep->n_rows + 1, sizeof *of);
    int *first_row = calloc((size_t)rep->n_rows + 1, sizeof *first_row);
    int ret = fps && of && first_row ? 0 : sim_err_set(err, SIM_ENOMEM, "report: out of memory");
    if (ret == 0 && rep->n_rows > 0) {
        agg->groups = calloc((size_t)rep->n_rows, sizeof *agg->groups);
        agg->fingerprints = calloc((size_t)rep->n_rows, sizeof *agg->fingerprints);
        if (!agg->groups || !agg->fingerprints)
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
            first_row[agg->n_groups] = i;
            if (!(agg->fingerprints[agg->n_groups] = strdup(fps[i]))) {
                free(g->run_ids);
                g->run_ids = NULL;
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
            report_stat_finish(st[k]);
    }
    if (ret == 0)
        ret = group_keys(rep, first_row, agg, err);
    for (int i = 0; fps && i < rep->n_rows; i++)
        free(fps[i]);
    free(fps);
    free(of);
    free(first_row);
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

/* "mean +-h", h the half-width of the 95% confidence interval of the mean
 * over the seeds; the mean alone when there is one seed or they agree. */
static void fmt_stat(char *cell, const char *fmt, const an_report_stat *s)
{
    char h[48], m[48];
    if (s->n == 0) {
        snprintf(cell, REPORT_CELL, "-");
        return;
    }
    snprintf(m, sizeof m, fmt, s->mean);
    snprintf(h, sizeof h, fmt, s->ci);
    if (s->n == 1 || !(s->ci > 0))
        snprintf(cell, REPORT_CELL, "%s", m);
    else
        snprintf(cell, REPORT_CELL, "%s +-%s", m, h);
}

static void fmt_stat_bytes(char *cell, const an_report_stat *s)
{
    char h[REPORT_CELL], m[REPORT_CELL];
    if (s->n == 0) {
        snprintf(cell, REPORT_CELL, "-");
        return;
    }
    report_fmt_bytes(m, (int64_t)llround(s->mean));
    report_fmt_bytes(h, (int64_t)llround(s->ci));
    if (s->n == 1 || !(s->ci > 0))
        snprintf(cell, REPORT_CELL, "%.40s", m);
    else
        snprintf(cell, REPORT_CELL, "%.40s +-%.40s", m, h);
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

static void group_cells(const an_report_group *g, char cells[][REPORT_CELL])
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
        fputs(",,,,", out);
    else if (s->n < 2)
        fprintf(out, "%.9g,%.9g,%.9g,,", s->mean, s->min, s->max);
    else
        fprintf(out, "%.9g,%.9g,%.9g,%.9g,%.9g", s->mean, s->min, s->max, s->mean - s->ci,
                s->mean + s->ci);
}

static void groups_csv(const an_report_groups *agg, FILE *out)
{
    static const char *const stats[] = {"final_train_loss", "final_test_accuracy",
                                        "sim_time", "time_to_target", "speedup",
                                        "bytes_sent", "idle_fraction", "mean_staleness",
                                        "consensus_distance"};
    char cell[REPORT_CELL];
    fputs("run_ids,n_runs,name,algorithm,n_workers,target_metric,target,n_reached", out);
    for (size_t k = 0; k < sizeof stats / sizeof stats[0]; k++)
        fprintf(out, ",%s_mean,%s_min,%s_max,%s_ci_lo,%s_ci_hi", stats[k], stats[k], stats[k],
                stats[k], stats[k]);
    for (int k = 0; k < agg->n_keys; k++) {
        report_fmt_csv(cell, agg->keys[k]);
        fprintf(out, ",%s", cell);
    }
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
        for (int k = 0; k < agg->n_keys; k++) {
            report_fmt_csv(cell, agg->key_values[(size_t)i * agg->n_keys + k]);
            fprintf(out, ",%s", cell);
        }
        fputc('\n', out);
    }
}

/* The text table's cells: the fixed columns, then the key columns, shown
 * after the algorithm. */
#define N_AG_ALL (N_AG + AN_REPORT_MAX_KEYS)

static int ag_col_at(int pos, int n_keys)
{
    if (pos <= AG_ALGO)
        return pos;
    if (pos <= AG_ALGO + n_keys)
        return N_AG + pos - AG_ALGO - 1;
    return pos - n_keys;
}

int an_report_groups_write(const an_report_groups *agg, int csv, FILE *out, sim_err *err)
{
    if (csv) {
        groups_csv(agg, out);
    } else {
        int n_keys = agg->n_keys, n_cols = N_AG + n_keys;
        char (*cells)[N_AG_ALL][REPORT_CELL] = calloc((size_t)agg->n_groups + 1,
                                                     sizeof *cells);
        if (!cells)
            return sim_err_set(err, SIM_ENOMEM, "report: out of memory");
        int width[N_AG_ALL];
        for (int col = 0; col < n_cols; col++) {
            snprintf(cells[0][col], REPORT_CELL, "%s",
                     col < N_AG ? ag_headers[col]
                                : report_key_header(agg->keys, n_keys, col - N_AG));
            width[col] = (int)strlen(cells[0][col]);
        }
        for (int i = 0; i < agg->n_groups; i++) {
            group_cells(&agg->groups[i], cells[i + 1]);
            if (n_keys > 0)
                report_fmt_keys(&cells[i + 1][N_AG], &agg->key_values[(size_t)i * n_keys],
                                n_keys, 0);
            for (int col = 0; col < n_cols; col++)
                if ((int)strlen(cells[i + 1][col]) > width[col])
                    width[col] = (int)strlen(cells[i + 1][col]);
        }
        /* columns that are "-" in every group are left out (mean +-h cells
         * make this table wider than the per-run one; --csv has it all) */
        int last = -1;
        for (int pos = 0; pos < n_cols; pos++) {
            int col = ag_col_at(pos, n_keys);
            int missing = col >= AG_WORKERS && col < N_AG && agg->n_groups > 0;
            for (int i = 1; i <= agg->n_groups && missing; i++)
                missing = strcmp(cells[i][col], "-") == 0;
            if (missing)
                width[col] = 0;
            else
                last = pos;
        }
        for (int i = 0; i <= agg->n_groups; i++) {
            for (int pos = 0; pos <= last; pos++) {
                int col = ag_col_at(pos, n_keys);
                if (width[col] == 0)
                    continue;
                int left = col == AG_IDS || col == AG_NAME || col == AG_ALGO ||
                           col == AG_METRIC || col >= N_AG;
                if (pos == last && left)
                    fputs(cells[i][col], out);
                else if (pos == last)
                    fprintf(out, "%*s", width[col], cells[i][col]);
                else
                    fprintf(out, left ? "%-*s  " : "%*s  ", width[col], cells[i][col]);
            }
            fputc('\n', out);
        }
        if (agg->n_groups == 0)
            fputs("no finished runs\n", out);
        else
            fputs("(mean +-h: h is the half-width of the 95% confidence interval of the mean"
                  " over the seeds, Student's t)\n", out);
        free(cells);
    }
    if (fflush(out) != 0 || ferror(out))
        return sim_err_set(err, SIM_EIO, "report: write failed");
    return 0;
}
