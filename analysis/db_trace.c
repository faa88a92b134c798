/* The trace tables' writers (analysis/trace.h): each call appends its rows
 * in one transaction, so the recorder's batch is all or nothing. */
#include "analysis/db_internal.h"
#include "analysis/trace.h"

const char *const an_span_state_names[AN_SPAN_N] = {"compute", "idle", "send", "down", "lost"};

int an_db_spans(an_db *db, int64_t run_id, const an_span_row *rows, int n, sim_err *err)
{
    if (n <= 0)
        return 0;
    sqlite3_stmt *st = NULL;
    int ret = db_write_begin(db, ST_SPAN_INSERT, &st, err);
    if (ret != 0)
        return ret;
    for (int i = 0; ret == 0 && i < n; i++) {
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int(st, 2, rows[i].worker);
        sqlite3_bind_text(st, 3, an_span_state_names[rows[i].state], -1, SQLITE_STATIC);
        db_bind_real(st, 4, rows[i].start);
        db_bind_real(st, 5, rows[i].end);
        ret = db_stmt_run(db, st, err);
    }
    return db_tx_end(db, ret, err);
}

int an_db_loads(an_db *db, int64_t run_id, const an_load_row *rows, int n, sim_err *err)
{
    if (n <= 0)
        return 0;
    sqlite3_stmt *st = NULL;
    int ret = db_write_begin(db, ST_LOAD_INSERT, &st, err);
    if (ret != 0)
        return ret;
    for (int i = 0; ret == 0 && i < n; i++) {
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int(st, 2, rows[i].link);
        db_bind_real(st, 3, rows[i].sim_time);
        db_bind_real(st, 4, rows[i].bytes);
        ret = db_stmt_run(db, st, err);
    }
    return db_tx_end(db, ret, err);
}
