#!/bin/sh
# The local-method experiments of docs/results.md (entries 6 to 10):
#   adaptive   adaptive local batch vs constant batches (local_adaptive.ini)
#   slowmo     SlowMo vs Local SGD vs D-PSGD, BMUF, beta against n (slowmo.ini)
#   overlap    Overlap-Local-SGD vs Local SGD, slow network, stragglers
#              (overlap_local.ini)
#   postlocal  post-local SGD vs large-batch synchronous SGD (post_local.ini)
#   momentum   momentum_consensus vs D-PSGD and DmSGD as the graph grows
#              (momentum_consensus.ini)
# Runs them into OUT/*.db, draws the figures into docs/ and prints the
# tables docs/results.md quotes. One job at a time (a shared machine).
#   experiments/local_methods.sh [BUILD_DIR] [OUT_DIR] [EXPERIMENT...]
# Default: build, results-local, all five (about 15 minutes on 2 cores).
set -e
cd "$(dirname "$0")/.."
B=${1:-build}
O=${2:-results-local}
[ $# -ge 2 ] && shift 2 || shift $#
WHICH=${*:-adaptive slowmo overlap postlocal momentum}
mkdir -p "$O"
D="$B/dtsim"
q() { sqlite3 -column -header "$@"; }

adaptive() {
  DB="$O/local_adaptive.db"
  rm -f "$DB"
  X=experiments/local_adaptive.ini
  "$D" run $X --db "$DB" --quiet --set algorithm.name=adaptive_local_sgd \
      --set algorithm.eta=0.5 --set algorithm.max_batch=256 --set experiment.name=adaptive
  "$D" run $X --db "$DB" --quiet --set algorithm.name=local_sgd --set experiment.name=const_b16
  "$D" run $X --db "$DB" --quiet --set algorithm.name=local_sgd --set algorithm.batch=256 \
      --set experiment.name=const_b256
  "$D" report "$DB"
  "$D" plot "$DB" --y train_loss --x sim_time --by name --logy \
      --title "Adaptive vs constant local batch (H = 4)" -o docs/local_adaptive.png
}

slowmo() {
  DB="$O/slowmo.db"
  rm -f "$DB"
  X=experiments/slowmo.ini
  s() { # NAME SET...
    name=$1; shift
    "$D" sweep $X --db "$DB" --quiet --jobs 1 --seeds 1-2 --set experiment.name=$name "$@"
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
  "$D" plot "$DB" --y train_loss --x iteration --by name --logy \
      --where "r.name NOT LIKE 'bmuf%'" \
      --title "SlowMo vs its bases, tau = 12, 8 workers, mlp(64) (2 seeds)" -o docs/slowmo.png
  "$D" plot "$DB" --y train_loss --x sim_time --by name --logy \
      --where "r.name NOT LIKE 'bmuf%'" \
      --title "SlowMo vs its bases, tau = 12, 8 workers: simulated time" -o docs/slowmo_time.png
  "$D" plot "$DB" --y train_loss --x iteration --by name --logy \
      --where "r.name LIKE 'bmuf%' OR r.name IN ('local_sgd', 'slowmo_b0.5')" \
      --title "BMUF (block momentum 0.875, block lr 1) vs SlowMo and Local SGD, tau = 12" \
      -o docs/slowmo_bmuf.png
  DB2="$O/slowmo_beta.db"
  rm -f "$DB2"
  for n in 8 32; do
    "$D" sweep $X --db "$DB2" --quiet --jobs 1 --set workers.count=$n \
        --set algorithm.batch=16 --grid algorithm.slow_momentum=0,0.2,0.5,0.7
  done
  q "$DB2" "select r.n_workers as n, b.value as beta,
     printf('%.4f', r.final_train_loss) as train_loss,
     printf('%.4f', r.final_test_accuracy) as test_acc
     from runs r join params b on b.run_id = r.id and b.key = 'algorithm.slow_momentum'
     order by r.n_workers, cast(b.value as real)"
  for n in 8 32; do
    "$D" plot "$DB2" --y train_loss --x epoch --by algorithm.slow_momentum --logy \
        --where "r.n_workers = $n" \
        --title "SlowMo over Local SGD, tau = 12, n = $n: beta (fairseq: $([ $n = 8 ] && echo 0 || echo 0.2))" \
        -o docs/slowmo_beta_n$n.png
  done
}

overlap() {
  DB="$O/overlap.db"
  rm -f "$DB"
  X=experiments/overlap_local.ini
  for tau in 2 4; do
    "$D" sweep $X --db "$DB" --quiet --jobs 1 --seeds 1-2 --set algorithm.local_steps=$tau \
        --set algorithm.pull=0.2 --set experiment.name=overlap_tau$tau
    "$D" sweep $X --db "$DB" --quiet --jobs 1 --seeds 1-2 --set algorithm.local_steps=$tau \
        --set algorithm.name=local_sgd --set experiment.name=local_sgd_tau$tau
  done
  "$D" sweep $X --db "$DB" --quiet --jobs 1 --seeds 1-2 --set algorithm.name=allreduce_sgd \
      --set experiment.name=allreduce_sgd
  "$D" report "$DB" --aggregate --target test_accuracy=0.8
  "$D" plot "$DB" --y test_accuracy --x sim_time --by name \
      --logx --title "Overlap-Local-SGD vs Local SGD, 1 Gbps, 4 MB model, stragglers" \
      -o docs/overlap_local.png
}

postlocal() {
  DB="$O/post_local.db"
  rm -f "$DB"
  X=experiments/post_local.ini
  "$D" sweep $X --db "$DB" --quiet --jobs 1 --seeds 1-4 --set experiment.name=post_local_sgd
  "$D" sweep $X --db "$DB" --quiet --jobs 1 --seeds 1-4 --set algorithm.name=allreduce_sgd \
      --set experiment.name=allreduce_sgd
  "$D" sweep $X --db "$DB" --quiet --jobs 1 --seeds 1-4 --set algorithm.name=local_sgd \
      --set algorithm.local_steps=16 --set experiment.name=local_sgd_h16
  "$D" sweep $X --db "$DB" --quiet --jobs 1 --seeds 1-2 --set algorithm.name=local_sgd \
      --set experiment.name=local_sgd_h4
  "$D" report "$DB" --aggregate
  "$D" plot "$DB" --y test_accuracy --x epoch --by name \
      --title "Post-local SGD (H = 16 from epoch 4) vs synchronous SGD, global batch 1024" \
      -o docs/post_local.png
}

momentum() {
  DB="$O/momentum_consensus.db"
  rm -f "$DB"
  X=experiments/momentum_consensus.ini
  for n in 8 16 32 64; do
    case $n in 8) t="torus(2, 4)";; 16) t="torus(4, 4)";; 32) t="torus(4, 8)";; 64) t="torus(8, 8)";; esac
    for g in ring "$t"; do
      "$D" run $X --db "$DB" --quiet --set workers.count=$n --set "topology.graph=$g"
      "$D" run $X --db "$DB" --quiet --set workers.count=$n --set "topology.graph=$g" \
          --set algorithm.name=dmsgd
      "$D" run $X --db "$DB" --quiet --set workers.count=$n --set "topology.graph=$g" \
          --set algorithm.name=dpsgd --set algorithm.momentum=0
    done
  done
  q "$DB" "select r.n_workers as n, g.value as graph, r.algorithm,
     (select min(m.iteration) from metrics m where m.run_id = r.id
       and m.test_accuracy >= 0.8) as iters_to_080,
     (select printf('%.3f', min(m.sim_time)) from metrics m where m.run_id = r.id
       and m.test_accuracy >= 0.8) as time_to_080,
     printf('%.4f', r.final_test_accuracy) as final_acc
     from runs r join params g on g.run_id = r.id and g.key = 'topology.graph'
     order by r.n_workers, g.value, r.algorithm"
  for g in ring torus; do
    "$D" plot "$DB" --y test_accuracy --x iteration --by algorithm \
        --where "r.n_workers = 64 AND r.id IN (SELECT run_id FROM params WHERE key = 'topology.graph' AND value LIKE '$g%')" \
        --title "n = 64, $g; momentum_consensus [U: omega = 0.5, overlap = true]" \
        -o docs/momentum_consensus_$g.png
  done
}

for e in $WHICH; do
  echo "== $e"
  $e
done
