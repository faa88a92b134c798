#!/bin/sh
# Top-k with error feedback and heavy-ball momentum at the quick start's
# settings (docs/compressors.md, "Top-k, error feedback and momentum"):
# experiments/quickstart.ini (16 workers, lr 0.1, momentum 0.9) with
# topk(0.01) with and without error feedback, the same at lr 0.01, and the
# dense baseline; the database and the figure docs/compress_momentum.png.
# Usage: experiments/compress_momentum.sh [BUILD_DIR] [OUT_DIR]
# 25 runs (5 configurations x 5 seeds): 54 s of CPU time (45 s user, 9 s
# system), 23 min of wall time with JOBS=2 on the 2-core machine under a
# load of 25-35.
set -e
B=${1:-build}
O=${2:-results-compress}
mkdir -p "$O"
D="$B/dtsim"
SEEDS=${SEEDS:-1-5}
JOBS=${JOBS:-2}
N=$(( ${SEEDS#*-} - ${SEEDS%-*} + 1 ))  # seeds per configuration
DB="$O/compress_momentum.db"
X=experiments/quickstart.ini
run() { # NAME [--set K=V]...
    name=$1
    shift
    "$D" sweep "$X" --db "$DB" --quiet --seeds "$SEEDS" --jobs "$JOBS" \
        --set experiment.name="$name" "$@"
}
run "dense, lr 0.1"
run "topk(0.01) EF, lr 0.1" --set algorithm.compressor="topk(0.01)"
run "topk(0.01) no EF, lr 0.1" --set algorithm.compressor="topk(0.01)" \
    --set algorithm.error_feedback=false
run "topk(0.01) EF, lr 0.01" --set algorithm.compressor="topk(0.01)" --set algorithm.lr=0.01
run "topk(0.01) EF, momentum 0" --set algorithm.compressor="topk(0.01)" \
    --set algorithm.momentum=0
"$D" report "$DB" --aggregate
# error feedback minus none (lr 0.1)
"$D" report "$DB" --aggregate --compare algorithm.error_feedback=false,true |
    sed -n '/interval of the difference/,$p'
"$D" plot "$DB" --y train_loss --x iteration --logy --by name \
    --title "Top-k(0.01) with error feedback and momentum 0.9: train loss, $N seeds" \
    -o docs/compress_momentum.png
