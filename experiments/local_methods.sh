#!/bin/sh
# Local-method experiments (docs/results.md, "Local methods"): adaptive
# batch against constant small and large batches. Usage:
#   experiments/local_methods.sh [BUILD_DIR] [OUT_DIR]
set -e
B=${1:-build}
O=${2:-/tmp/dtsim-local}
mkdir -p "$O"
DB="$O/local_adaptive.db"
rm -f "$DB"
X=experiments/local_adaptive.ini
"$B/dtsim" run $X --db "$DB" --quiet --set algorithm.name=adaptive_local_sgd \
    --set algorithm.eta=0.5 --set algorithm.max_batch=256 --set experiment.name=adaptive
"$B/dtsim" run $X --db "$DB" --quiet --set algorithm.name=local_sgd --set experiment.name=const_b16
"$B/dtsim" run $X --db "$DB" --quiet --set algorithm.name=local_sgd --set algorithm.batch=256 \
    --set experiment.name=const_b256
"$B/dtsim" report "$DB"
"$B/dtsim" plot "$DB" --y train_loss --x sim_time --by name --logy \
    --title "Adaptive vs constant local batch (H = 4)" -o docs/local_adaptive.png
