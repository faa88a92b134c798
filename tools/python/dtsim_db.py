"""Load a dtsim results database (SQLite) into pandas data frames.

No binding is needed: the database is plain SQLite (docs/database.md), and
pandas reads it through the standard library's sqlite3 module. Each
function takes an open connection (or a path) and returns a DataFrame.
See docs/python.md.
"""
import sqlite3

import pandas as pd


def connect(path):
    """A read-only connection to the database at path."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _conn(db):
    return connect(db) if isinstance(db, str) else db


def runs(db, with_params=True):
    """One row per run (the runs table, indexed by id); with_params adds one
    column per configuration key ("network.bandwidth", ...) as written."""
    con = _conn(db)
    df = pd.read_sql_query("SELECT * FROM runs ORDER BY id", con, index_col="id")
    if with_params:
        df = df.join(params(con).pivot(index="run_id", columns="key", values="value"))
    return df


def params(db):
    """The params table: run_id, key, value (as written), num (SI number)."""
    return pd.read_sql_query("SELECT run_id, key, value, num FROM params"
                             " ORDER BY run_id, rowid", _conn(db))


def metrics(db, run_ids=None):
    """The metrics rows (evaluations and training-only rows), with the run's
    algorithm and seed joined in, ordered by run and simulated time."""
    sql = ("SELECT m.*, r.algorithm, r.seed FROM metrics m JOIN runs r ON r.id = m.run_id"
           " ORDER BY m.run_id, m.sim_time, m.iteration")
    df = pd.read_sql_query(sql, _conn(db))
    return df if run_ids is None else df[df.run_id.isin(run_ids)]


def workers(db):
    """The workers table: steps, compute and idle time, bytes, staleness."""
    return pd.read_sql_query("SELECT * FROM workers ORDER BY run_id, worker", _conn(db))


def staleness(db):
    """Every staleness value of each worker with its count (staleness_workers;
    empty for a database written before the table existed)."""
    con = _conn(db)
    have = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'staleness_workers'").fetchone()
    if not have:
        return pd.DataFrame(columns=["run_id", "worker", "staleness", "count"])
    return pd.read_sql_query("SELECT run_id, worker, staleness, count FROM staleness_workers"
                             " ORDER BY run_id, worker, staleness", con)


def series(db, name=None):
    """A method's own numbers over time (series table), one name or all."""
    sql = "SELECT * FROM series"
    args = ()
    if name is not None:
        sql += " WHERE name = ?"
        args = (name,)
    return pd.read_sql_query(sql + " ORDER BY run_id, sim_time", _conn(db), params=args)


def staleness_quantiles(db, run_ids=None):
    """Per run and worker: updates, mean, median, p90, p99 and max staleness
    (nearest rank, as `dtsim report --staleness`), for every run or those of
    run_ids. Raises ValueError naming the runs when none of them recorded a
    staleness (synchronous methods track none, as the report says): an
    empty frame would read as "no updates were stale"."""
    con = _conn(db)
    df = staleness(con)
    if run_ids is not None:
        df = df[df.run_id.isin(list(run_ids))]
    if df.empty:
        sql = "SELECT id, algorithm FROM runs ORDER BY id"
        listed = [(i, a) for i, a in con.execute(sql)
                  if run_ids is None or i in set(run_ids)]
        names = ", ".join(f"{i} ({a})" for i, a in listed) or "none"
        raise ValueError(f"no staleness recorded for runs {names}: synchronous methods track"
                         " none (asgd and the gossip and pairwise methods that count versions"
                         " do)")
    rows = []
    for (run, worker), g in df.groupby(["run_id", "worker"]):
        g = g.sort_values("staleness")
        total = int(g["count"].sum())
        cum = g["count"].cumsum()

        def q(p):
            rank = max(1, -(-p * total // 1))
            return int(g["staleness"][cum >= rank].iloc[0])

        rows.append({"run_id": run, "worker": worker, "updates": total,
                     "mean": float((g.staleness * g["count"]).sum()) / total,
                     "median": q(0.5), "p90": q(0.9), "p99": q(0.99),
                     "max": int(g.staleness.max())})
    return pd.DataFrame(rows)
