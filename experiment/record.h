/* The recorder: the database rows of one run (the run row with its params
 * and label histograms, per-worker and per-link rows, the staleness
 * histogram, the summary and the final status). Metric and series rows are
 * written by the runner as they come (an_db_metric, an_db_series). Used by
 * the runner only. */
#ifndef DTSIM_EXPERIMENT_RECORD_H
#define DTSIM_EXPERIMENT_RECORD_H

#include <stdint.h>

#include "analysis/db.h"
#include "experiment/env.h"
#include "experiment/experiment.h"

/* Inserts the run row ('running'), its params and, for classification
 * data, the label histogram of every worker's shard; *run_id = its id.
 * claim: AN_DB_CLAIMED when the configuration is claimed already (see
 * an_run_info.claim; *run_id = the other run, nothing written). */
int xp_record_begin(an_db *db, xp_env *x, int claim, int64_t *run_id, sim_err *err);
/* Writes the workers, links and staleness rows and the summary with r's
 * status, in the run's final transactions. */
int xp_record_finish(an_db *db, int64_t run_id, xp_env *x, const xp_run_result *r,
                     sim_err *err);
/* Appends the faults logged since the last call (targets as text: a
 * worker id, or "A-B") and empties the log. */
int xp_record_faults(an_db *db, int64_t run_id, xp_env *x, sim_err *err);
/* Marks the run failed with message (best effort: an error path). */
void xp_record_fail(an_db *db, int64_t run_id, const char *message);

#endif
