#!/bin/sh
# The Python example (TAP): tools/python/sync_vs_async.py redraws
# docs/results.md section 1's figure from a small sweep this test runs, and
# tools/python/dtsim_db.py loads runs, metrics, workers, staleness and
# series into pandas. Skipped (with the reason) when Debian's python3-pandas
# or python3-matplotlib is missing.
# Usage: test_python.sh DTSIM_EXE SOURCE_ROOT
exe=$1 src=$2
py=
for cand in /usr/bin/python3 python3; do
    if "$cand" -c 'import pandas, matplotlib' 2>/dev/null; then
        py=$cand
        break
    fi
done
if [ -z "$py" ]; then
    echo "1..0 # SKIP python3 with pandas and matplotlib not found (apt-get install python3-pandas python3-matplotlib, or ./dev.sh build)"
    exit 0
fi
echo "1..3"
dir=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-python-XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$src" || exit 1
if "$exe" sweep experiments/sync_vs_async.ini --grid algorithm.name=allreduce_sgd,asgd \
    --seeds 1-2 --set experiment.max_time=1s --set experiment.eval_train_samples=500 \
    --db "$dir/sweep.db" --quiet > "$dir/sweep.out" 2>&1; then
    echo "ok 1 - a small sync_vs_async sweep"
else
    echo "not ok 1 - a small sync_vs_async sweep"; sed 's/^/# /' "$dir/sweep.out"; exit 0
fi
if "$py" tools/python/sync_vs_async.py "$dir/sweep.db" "$dir/fig.png" > "$dir/py.out" 2>&1 &&
    [ "$(head -c 8 "$dir/fig.png" | od -An -c | tr -d ' ')" = "211PNG\r\n032\n" ] &&
    grep -q '^allreduce_sgd  *2 ' "$dir/py.out" && grep -q '^asgd  *2 ' "$dir/py.out"; then
    echo "ok 2 - the figure is a PNG and the final accuracies cover both methods, 2 seeds each"
else
    echo "not ok 2 - the figure and the table"; sed 's/^/# /' "$dir/py.out"
fi
cat > "$dir/frames.py" <<'PY'
import sys
sys.path.insert(0, "tools/python")
import dtsim_db
con = dtsim_db.connect(sys.argv[1])
runs = dtsim_db.runs(con)
assert len(runs) == 4 and set(runs.algorithm) == {"allreduce_sgd", "asgd"}, runs
assert runs["workers.count"].eq("8").all(), runs["workers.count"]
m = dtsim_db.metrics(con)
assert m.test_accuracy.notna().sum() >= 4 * 4, len(m)
w = dtsim_db.workers(con)
assert len(w) == 4 * 8, len(w)
s = dtsim_db.staleness(con)
asgd = runs.index[runs.algorithm == "asgd"]
assert set(s.run_id) == set(asgd), s.run_id.unique()
q = dtsim_db.staleness_quantiles(con)
assert (q.updates == s.groupby(["run_id", "worker"])["count"].sum().values).all()
assert (q["median"] <= q["p90"]).all() and (q["p90"] <= q["p99"]).all() and (q["p99"] <= q["max"]).all()
dtsim_db.series(con)
# synchronous runs record no staleness: a clear error, not an empty frame
sync = list(runs.index[runs.algorithm == "allreduce_sgd"])
try:
    dtsim_db.staleness_quantiles(con, run_ids=sync)
    raise AssertionError("staleness_quantiles of synchronous runs returned a frame")
except ValueError as e:
    assert "no staleness recorded for runs" in str(e) and "synchronous methods track none" in str(e), e
    assert f"{sync[0]} (allreduce_sgd)" in str(e), e
assert set(dtsim_db.staleness_quantiles(con, run_ids=list(asgd)).run_id) == set(asgd)
print("frames ok")
PY
if "$py" "$dir/frames.py" "$dir/sweep.db" > "$dir/frames.out" 2>&1; then
    echo "ok 3 - runs, params, metrics, workers, staleness and series load as data frames; synchronous runs' staleness quantiles are a clear error"
else
    echo "not ok 3 - data frames"; sed 's/^/# /' "$dir/frames.out"
fi
