#!/usr/bin/env python3
"""Redraws docs/results.md section 1's figure (test accuracy against
simulated time, allreduce_sgd and asgd, mean over the seeds with the
seeds' range as a band) from a dtsim database, with pandas and
matplotlib, and prints each method's final accuracy over the seeds.

    ./build/dtsim sweep experiments/sync_vs_async.ini \\
        --grid algorithm.name=allreduce_sgd,asgd --seeds 1-3 --db sweep.db
    python3 tools/python/sync_vs_async.py sweep.db sync_vs_async.png

Needs Debian's python3-pandas and python3-matplotlib (./dev.sh installs
them). See docs/python.md.
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtsim_db  # noqa: E402


def main(db_path, out_png):
    con = dtsim_db.connect(db_path)
    runs = dtsim_db.runs(con)
    done = runs[runs.status == "done"]
    m = dtsim_db.metrics(con, run_ids=done.index)
    m = m.dropna(subset=["test_accuracy"])
    fig, ax = plt.subplots(figsize=(8, 5))
    for algo, rows in m.groupby("algorithm"):
        # the seeds evaluate at the same simulated times (eval_every is a time)
        curve = rows.groupby("sim_time").test_accuracy.agg(["mean", "min", "max", "count"])
        n_seeds = rows.run_id.nunique()
        ax.plot(curve.index, curve["mean"], label=f"{algo} ({n_seeds} seeds)")
        ax.fill_between(curve.index, curve["min"], curve["max"], alpha=0.25)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("test accuracy")
    ax.set_title("sync vs async SGD with a straggler (mean, band: seeds' range)")
    ax.legend()
    fig.savefig(out_png, dpi=100)
    final = done.groupby("algorithm").final_test_accuracy.agg(["count", "mean", "min", "max"])
    print(final.to_string(float_format=lambda v: f"{v:.4f}"))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: sync_vs_async.py DB OUT.png")
    sys.exit(main(sys.argv[1], sys.argv[2]))
