#!/bin/sh
# The README's five-minute tour, in its order: the quick start (run 1), the
# same at 1 Gb/s (run 2) and with D-PSGD (run 3), the report against run 1,
# a traced run of five iterations (run 4), its timeline, the estimate, and
# the figure of the three training runs. The database and the figures
# (tour.png, tour_timeline.png) go to OUT (default results-tour/); the
# README's copies in docs/ are rewritten only when asked, with
# FIGURES=docs. About 6 s of CPU time (4.1 s user, 1.5 s system; 49 s of
# wall time on the 2-core machine under a load of about 20).
#   experiments/tour.sh [OUT]
#   FIGURES=docs experiments/tour.sh      # refresh docs/tour*.png
set -eu
cd "$(dirname "$0")/.."
DTSIM=${DTSIM:-build/dtsim}
OUT=${1:-results-tour}
FIGURES=${FIGURES:-$OUT}
mkdir -p "$OUT" "$FIGURES"
DB="$OUT"/tour.db
rm -f "$DB"
X=experiments/quickstart.ini

"$DTSIM" run $X --db "$DB"
"$DTSIM" run $X --db "$DB" --set network.bandwidth=1Gbps
"$DTSIM" run $X --db "$DB" --set algorithm.name=dpsgd
"$DTSIM" report "$DB" --target test_accuracy=0.80 --baseline 1
"$DTSIM" run $X --db "$DB" --set experiment.trace=on --set experiment.max_epochs=0 \
    --set experiment.max_iterations=5
"$DTSIM" plot "$DB" --run 4 --timeline --to 2s -o "$FIGURES"/tour_timeline.png
"$DTSIM" estimate $X --set network.bandwidth=1Gbps --price 2.5
# the three training runs (the README's figure; run 4, five iterations, is
# left out)
"$DTSIM" plot "$DB" --y test_accuracy --where "r.id <= 3" -o "$FIGURES"/tour.png
