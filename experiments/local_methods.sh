#!/bin/sh
# The local-method experiments of docs/results.md (entries 6 to 10):
#   adaptive   adaptive local batch vs constant batches (local_adaptive.ini)
#   slowmo     SlowMo vs Local SGD vs D-PSGD, BMUF, beta against n (slowmo.ini)
#   overlap    Overlap-Local-SGD vs Local SGD, slow network, stragglers
#              (overlap_local.ini)
#   postlocal  post-local SGD vs large-batch synchronous SGD (post_local.ini)
#   momentum   momentum_consensus vs D-PSGD and DmSGD as the graph grows
#              (momentum_consensus.ini)
# Runs every configuration at 5 seeds (10 where the effect is small against
# the spread: the adaptive batch, beta at n = 8, post-local SGD) into
# OUT/*.db, draws the figures into docs/ (mean over the seeds, min-max
# band) and prints the tables docs/results.md quotes: mean +- the
# half-width of the 95% interval over seeds, and the interval of each
# difference the text judges (report --aggregate --compare, or
# experiments/ci.awk for statistics the report does not compute).
#   experiments/local_methods.sh [BUILD_DIR] [OUT_DIR] [EXPERIMENT...]
# Default: build, results-local, all five. Measured with JOBS=2 on the
# 2-core development machine shared by 8 engineers (load 20-35): adaptive
# 9 minutes, overlap 27, postlocal 30, momentum 44, slowmo about 75 (110
# runs): some 3 hours in all at that load. JOBS: the parallel runs (2); SEEDS: one
# seed count for every configuration instead (a quick check); UPTO: at
# most this many seeds; RUN=0 only redraws and reprints from the
# databases already in OUT_DIR; RUN=resume adds runs to them (a sweep
# skips the runs already done), so UPTO=1, then 2, ... runs the seeds one
# at a time over every configuration.
set -e
cd "$(dirname "$0")/.."
B=${1:-build}
O=${2:-results-local}
[ $# -ge 2 ] && shift 2 || shift $#
WHICH=${*:-adaptive slowmo overlap postlocal momentum}
JOBS=${JOBS:-2}
RUN=${RUN:-1}
mkdir -p "$O"
D="$B/dtsim"
sw() { # SEEDS INI SWEEP-ARGS...: a sweep over seeds 1..SEEDS (or $SEEDS)
  sw_n=${SEEDS:-$1}; sw_x=$2; shift 2
  [ -n "$UPTO" ] && [ "$UPTO" -lt "$sw_n" ] && sw_n=$UPTO
  [ "$RUN" = 0 ] || "$D" sweep "$sw_x" --quiet --jobs "$JOBS" --seeds 1-$sw_n "$@"
}
. experiments/seeds.sh
by_name() { # DB COLUMN PAIRS [FMT]: COLUMN of the runs per experiment.name
  ci "$1" "select r.name, r.$2 from runs r where r.status = 'done' order by r.id" \
      -v cmp="$3" -v fmt="${4:-%.4f}"
}

adaptive() {
  DB="$O/local_adaptive.db"
  [ "$RUN" != 1 ] || rm -f "$DB"
  X=experiments/local_adaptive.ini
  sw 10 $X --db "$DB" --set algorithm.name=adaptive_local_sgd \
      --set algorithm.eta=0.5 --set algorithm.max_batch=256 --set experiment.name=adaptive
  sw 10 $X --db "$DB" --set algorithm.name=local_sgd --set experiment.name=const_b16
  sw 10 $X --db "$DB" --set algorithm.name=local_sgd --set algorithm.batch=256 \
      --set experiment.name=const_b256
  "$D" report "$DB" --aggregate
  p='const_b16,adaptive;const_b256,adaptive'
  echo "-- final train loss"; by_name "$DB" final_train_loss "$p"
  echo "-- final test accuracy"; by_name "$DB" final_test_accuracy "$p"
  echo "-- simulated s"; by_name "$DB" sim_time "$p" %.3f
  echo "-- iterations"; by_name "$DB" iterations "$p" %.1f
  "$D" plot "$DB" --y train_loss --x sim_time --by name --logy \
      --title "Adaptive vs constant local batch (H = 4), $(nseeds "$DB") seeds" -o docs/local_adaptive.png
}

slowmo() {
  DB="$O/slowmo.db"
  [ "$RUN" != 1 ] || rm -f "$DB"
  X=experiments/slowmo.ini
  s() { # NAME SET...
    name=$1; shift
    sw 5 $X --db "$DB" --set experiment.name=$name "$@"
  }
  s local_sgd --set algorithm.name=local_sgd --set algorithm.local_steps=12
  s slowmo_b0.5 --set algorithm.slow_momentum=0.5
  s bmuf_classic --set algorithm.bmuf=classic --set algorithm.slow_momentum=0.875
  s bmuf_nesterov --set algorithm.bmuf=nesterov --set algorithm.slow_momentum=0.875
  s bmuf_classic_m0 --set algorithm.bmuf=classic --set algorithm.slow_momentum=0.875 \
      --set algorithm.momentum=0
  s bmuf_nesterov_m0 --set algorithm.bmuf=nesterov --set algorithm.slow_momentum=0.875 \
      --set algorithm.momentum=0
  s dpsgd --set algorithm.name=dpsgd
  s slowmo_dpsgd_b0 --set algorithm.base=dpsgd --set algorithm.slow_momentum=0
  s slowmo_dpsgd_b0.5 --set algorithm.base=dpsgd --set algorithm.slow_momentum=0.5
  s allreduce_sgd --set algorithm.name=allreduce_sgd
  "$D" report "$DB" --aggregate
  p='local_sgd,slowmo_b0.5;dpsgd,slowmo_dpsgd_b0.5;slowmo_dpsgd_b0,slowmo_dpsgd_b0.5;dpsgd,slowmo_dpsgd_b0'
  p="$p;slowmo_b0.5,bmuf_classic_m0;slowmo_b0.5,bmuf_nesterov_m0;slowmo_b0.5,bmuf_classic;slowmo_b0.5,bmuf_nesterov"
  echo "-- final train loss"; by_name "$DB" final_train_loss "$p"
  echo "-- final test accuracy"; by_name "$DB" final_test_accuracy "$p"
  k=$(nseeds "$DB")
  "$D" plot "$DB" --y train_loss --x iteration --by name --logy \
      --where "r.name NOT LIKE 'bmuf%'" \
      --title "SlowMo vs its bases, tau = 12, 8 workers, mlp(64) ($k seeds)" -o docs/slowmo.png
  "$D" plot "$DB" --y train_loss --x sim_time --by name --logy \
      --where "r.name NOT LIKE 'bmuf%'" \
      --title "SlowMo vs its bases, tau = 12, 8 workers: simulated time ($k seeds)" -o docs/slowmo_time.png
  "$D" plot "$DB" --y train_loss --x iteration --by name --logy \
      --where "r.name LIKE 'bmuf%' OR r.name IN ('local_sgd', 'slowmo_b0.5')" \
      --title "BMUF (block momentum 0.875, block lr 1) vs SlowMo ($k seeds)" \
      -o docs/slowmo_bmuf.png
  DB2="$O/slowmo_beta.db"
  [ "$RUN" != 1 ] || rm -f "$DB2"
  for n in 8 32; do # 10 seeds at n = 8, where the betas differ least
    sw $([ $n = 8 ] && echo 10 || echo 5) $X --db "$DB2" --set workers.count=$n \
        --set algorithm.batch=16 --grid algorithm.slow_momentum=0,0.2,0.5,0.7
  done
  "$D" report "$DB2" --aggregate --columns workers.count,algorithm.slow_momentum
  for b in 0.2 0.5 0.7; do
    "$D" report "$DB2" --aggregate --columns workers.count \
        --compare algorithm.slow_momentum=0,$b | sed -n '/^ *statistic\|diff\|verdict/,$p'
  done
  "$D" report "$DB2" --aggregate --columns workers.count \
      --compare algorithm.slow_momentum=0.2,0.5 | sed -n '/^ *statistic\|diff\|verdict/,$p'
  for n in 8 32; do
    k=$(nseeds "$DB2" "r.n_workers = $n")
    "$D" plot "$DB2" --y train_loss --x epoch --by algorithm.slow_momentum --logy \
        --where "r.n_workers = $n" \
        --title "SlowMo over Local SGD, tau 12, n = $n: beta (fairseq: $([ $n = 8 ] && echo 0 || echo 0.2)), $k seeds" \
        -o docs/slowmo_beta_n$n.png
  done
}

overlap() {
  DB="$O/overlap.db"
  [ "$RUN" != 1 ] || rm -f "$DB"
  X=experiments/overlap_local.ini
  for tau in 2 4; do
    sw 5 $X --db "$DB" --set algorithm.local_steps=$tau \
        --set algorithm.pull=0.2 --set experiment.name=overlap_tau$tau
    sw 5 $X --db "$DB" --set algorithm.local_steps=$tau \
        --set algorithm.name=local_sgd --set experiment.name=local_sgd_tau$tau
  done
  sw 5 $X --db "$DB" --set algorithm.name=allreduce_sgd --set experiment.name=allreduce_sgd
  "$D" report "$DB" --aggregate --target test_accuracy=0.8
  "$D" report "$DB" --aggregate --target test_accuracy=0.82
  p='local_sgd_tau2,overlap_tau2;local_sgd_tau4,overlap_tau4;allreduce_sgd,overlap_tau2;allreduce_sgd,overlap_tau4'
  for a in 0.8 0.82; do
    echo "-- time to test accuracy $a"
    ci "$DB" "select r.name, (select min(m.sim_time) from metrics m where m.run_id = r.id
       and m.test_accuracy >= $a) from runs r where r.status = 'done' order by r.id" \
       -v cmp="$p" -v fmt=%.2f
  done
  echo "-- simulated s"; by_name "$DB" sim_time "$p" %.2f
  echo "-- idle fraction"; by_name "$DB" idle_fraction "$p" %.3f
  echo "-- final train loss"; by_name "$DB" final_train_loss "$p"
  echo "-- final test accuracy"; by_name "$DB" final_test_accuracy "$p"
  "$D" plot "$DB" --y test_accuracy --x sim_time --by name \
      --logx --title "Overlap-Local-SGD vs Local SGD, 1 Gbps, 4 MB, stragglers ($(nseeds "$DB") seeds)" \
      -o docs/overlap_local.png
}

postlocal() {
  DB="$O/post_local.db"
  [ "$RUN" != 1 ] || rm -f "$DB"
  X=experiments/post_local.ini
  sw 10 $X --db "$DB" --set experiment.name=post_local_sgd
  sw 10 $X --db "$DB" --set algorithm.name=allreduce_sgd --set experiment.name=allreduce_sgd
  sw 5 $X --db "$DB" --set algorithm.name=local_sgd \
      --set algorithm.local_steps=16 --set experiment.name=local_sgd_h16
  sw 5 $X --db "$DB" --set algorithm.name=local_sgd --set experiment.name=local_sgd_h4
  "$D" report "$DB" --aggregate
  p='allreduce_sgd,post_local_sgd;allreduce_sgd,local_sgd_h16;allreduce_sgd,local_sgd_h4'
  echo "-- final test accuracy"; by_name "$DB" final_test_accuracy "$p"
  echo "-- final train loss"; by_name "$DB" final_train_loss "$p"
  echo "-- test accuracy at the switch (epoch 4)"
  ci "$DB" "select r.name, (select m.test_accuracy from metrics m where m.run_id = r.id
     and m.test_accuracy is not null and m.epoch <= 4 order by m.epoch desc limit 1)
     from runs r where r.status = 'done' and r.name = 'post_local_sgd' order by r.id"
  "$D" plot "$DB" --y test_accuracy --x epoch --by name \
      --title "Post-local SGD (H = 16 from epoch 4) vs all-reduce, batch 1024 (${SEEDS:-10}/${SEEDS:-5} seeds)" \
      -o docs/post_local.png
}

momentum() {
  DB="$O/momentum_consensus.db"
  [ "$RUN" != 1 ] || rm -f "$DB"
  X=experiments/momentum_consensus.ini
  for n in 8 16 32 64; do
    case $n in 8) t="torus(2, 4)";; 16) t="torus(4, 4)";; 32) t="torus(4, 8)";; 64) t="torus(8, 8)";; esac
    for g in ring "$t"; do
      sw 5 $X --db "$DB" --set workers.count=$n --set "topology.graph=$g" \
          --grid algorithm.name=momentum_consensus,dmsgd
      sw 5 $X --db "$DB" --set workers.count=$n --set "topology.graph=$g" \
          --set algorithm.name=dpsgd --set algorithm.momentum=0
    done
  done
  grp="r.n_workers || ' ' || (select replace(g.value, ', ', 'x') from params g
    where g.run_id = r.id and g.key = 'topology.graph') || ' ' || r.algorithm"
  p=
  for c in "8 ring" "8 torus(2x4)" "16 ring" "16 torus(4x4)" "32 ring" "32 torus(4x8)" \
      "64 ring" "64 torus(8x8)"; do
    p="$p${p:+;}$c dmsgd,$c momentum_consensus"
  done
  ord="order by r.n_workers, (select value from params g where g.run_id = r.id
    and g.key = 'topology.graph'), r.algorithm, r.id"
  echo "-- iterations to test accuracy 0.80"
  ci "$DB" "select $grp, (select min(m.iteration) from metrics m where m.run_id = r.id
     and m.test_accuracy >= 0.8) from runs r $ord" -v cmp="$p" -v fmt=%.1f
  echo "-- simulated s to test accuracy 0.80"
  ci "$DB" "select $grp, (select min(m.sim_time) from metrics m where m.run_id = r.id
     and m.test_accuracy >= 0.8) from runs r $ord" -v cmp="$p" -v fmt=%.2f
  echo "-- final test accuracy"
  ci "$DB" "select $grp, r.final_test_accuracy from runs r $ord"
  for g in ring torus; do
    "$D" plot "$DB" --y test_accuracy --x iteration --by algorithm \
        --where "r.n_workers = 64 AND r.id IN (SELECT run_id FROM params WHERE key = 'topology.graph' AND value LIKE '$g%')" \
        --title "n = 64, $g; momentum_consensus [U: omega 0.5, overlap] ($(nseeds "$DB" "r.n_workers = 64") seeds)" \
        -o docs/momentum_consensus_$g.png
  done
}

for e in $WHICH; do
  echo "== $e $(date -u +%H:%M:%S)"
  $e
done
echo "== end $(date -u +%H:%M:%S)"
