#!/bin/sh
# The four decentralized-methods experiments of docs/results.md (entries 2
# to 5): runs them into OUT/*.db, draws the figures into docs/ and prints
# the tables docs/results.md quotes. About 2 to 5 minutes on 2 cores.
#   experiments/decentralized.sh [OUT]      (default OUT = results-decentralized)
# DTSIM names the binary (default build/dtsim); JOBS the parallel runs (2).
set -e
cd "$(dirname "$0")/.."
DTSIM=${DTSIM:-build/dtsim}
JOBS=${JOBS:-2}
OUT=${1:-results-decentralized}
mkdir -p "$OUT" docs
q() { sqlite3 -column -header "$@"; }

echo "== 1. DecentLaM vs DmSGD vs PmSGD vs D-PSGD, Dirichlet(0.1), ring of 16"
for b in 16 64 256; do
  lr=$(awk "BEGIN { print 0.0025 * $b / 16 }")
  $DTSIM sweep experiments/decentlam_batch.ini --db "$OUT/decentlam.db" --jobs "$JOBS" --quiet \
    --grid algorithm.name=decentlam,dmsgd,allreduce_sgd,dpsgd \
    --set algorithm.batch=$b --set algorithm.lr=$lr
done
q "$OUT/decentlam.db" "select b.value as batch, r.algorithm,
   printf('%.4f', r.final_train_loss) as train_loss,
   printf('%.4f', r.final_test_accuracy) as test_acc,
   printf('%.4f', r.consensus_distance) as final_xi
   from runs r join params b on b.run_id = r.id and b.key = 'algorithm.batch'
   where r.status = 'done' order by cast(b.value as int), r.algorithm"
for b in 16 256; do
  $DTSIM plot "$OUT/decentlam.db" --y test_accuracy --x epoch --by algorithm \
    --where "r.id IN (SELECT run_id FROM params WHERE key = 'algorithm.batch' AND value = '$b')" \
    --title "Dirichlet(0.1) Fashion-MNIST, ring of 16, batch $b per worker" \
    -o docs/decentlam_batch$b.png
done

echo "== 2. consensus distance on ring, torus, exponential, complete; n = 16, 32, 64"
$DTSIM sweep experiments/consensus_topologies.ini --db "$OUT/consensus.db" --jobs "$JOBS" --quiet \
  --set workers.count=16 --grid "topology.graph=ring,torus(4, 4),exponential,complete"
$DTSIM sweep experiments/consensus_topologies.ini --db "$OUT/consensus.db" --jobs "$JOBS" --quiet \
  --set workers.count=32 --grid "topology.graph=ring,torus(4, 8),exponential,complete"
$DTSIM sweep experiments/consensus_topologies.ini --db "$OUT/consensus.db" --jobs "$JOBS" --quiet \
  --set workers.count=64 --grid "topology.graph=ring,torus(8, 8),exponential,complete"
q "$OUT/consensus.db" "select r.n_workers as n, g.value as graph,
   printf('%.4f', (select avg(consensus_distance) from metrics m where m.run_id = r.id
     and m.epoch > 0.5 and m.epoch < 2)) as xi_phase1,
   printf('%.4f', (select avg(consensus_distance) from metrics m where m.run_id = r.id
     and m.epoch > 2.2)) as xi_phase2,
   printf('%.4f', r.final_test_accuracy) as test_acc
   from runs r join params g on g.run_id = r.id and g.key = 'topology.graph'
   where r.status = 'done' order by r.n_workers, r.id"
for n in 16 32 64; do
  $DTSIM plot "$OUT/consensus.db" --y consensus_distance --x epoch --by topology.graph \
    --where "r.n_workers = $n" --title "consensus distance, dmsgd (ATC), $n workers" \
    -o docs/consensus_n$n.png
done

echo "== 3. consensus control: the same budget in phase 1 or in phase 3"
ctl() { # NAME SET...
  name=$1; shift
  $DTSIM run experiments/consensus_control.ini --db "$OUT/control.db" --quiet \
    --set experiment.name=$name "$@"
}
ctl uncontrolled
ctl exact_phase1 --set algorithm.exact_phases=1
ctl exact_phase3 --set algorithm.exact_phases=3
ctl gossip4_phase1 --set algorithm.gossip_steps=4 --set algorithm.gossip_phases=1
ctl gossip4_phase3 --set algorithm.gossip_steps=4 --set algorithm.gossip_phases=3
ctl adaptive_phase1 --set algorithm.adaptive_phases=1 --set algorithm.target_fraction=0.5
ctl allreduce --set algorithm.name=allreduce_sgd
q "$OUT/control.db" "select r.name, printf('%.4f', r.final_train_loss) as train_loss,
   printf('%.4f', r.final_test_accuracy) as test_acc,
   printf('%.4f', (select avg(consensus_distance) from metrics m where m.run_id = r.id
     and m.epoch > 0.2 and m.epoch < 2)) as xi_phase1,
   printf('%.1f', r.bytes_sent / 1e9) as gb_sent, printf('%.2f', r.sim_time) as sim_s
   from runs r where r.status = 'done' order by r.id"
$DTSIM plot "$OUT/control.db" --y consensus_distance --x epoch --by name --logy \
  --title "consensus control, ring of 32, mlp(64) (0 not drawn)" -o docs/consensus_control_xi.png
$DTSIM plot "$OUT/control.db" --y test_accuracy --x epoch --by name \
  --title "consensus control, ring of 32, mlp(64)" -o docs/consensus_control_acc.png

echo "== 4. ad_psgd and swarm_sgd against dpsgd, one worker 10x slower"
$DTSIM sweep experiments/async_straggler.ini --db "$OUT/async.db" --jobs "$JOBS" --quiet \
  --grid algorithm.name=dpsgd,ad_psgd,swarm_sgd --grid workers.stragglers=1,0
q "$OUT/async.db" "select r.algorithm, s.value as stragglers, r.iterations as updates,
   printf('%.4f', r.final_train_loss) as train_loss,
   printf('%.4f', r.final_test_accuracy) as test_acc,
   printf('%.3f', r.idle_fraction) as idle,
   case when r.mean_staleness is null then '-' else printf('%.2f', r.mean_staleness) end as staleness,
   (select min(sim_time) from metrics m where m.run_id = r.id and m.train_loss <= 0.6) as t_loss_06
   from runs r join params s on s.run_id = r.id and s.key = 'workers.stragglers'
   where r.status = 'done' order by s.value desc, r.algorithm"
$DTSIM plot "$OUT/async.db" --y train_loss --x sim_time --by algorithm \
  --where "r.id IN (SELECT run_id FROM params WHERE key = 'workers.stragglers' AND value = '1')" \
  --title "16 workers on a ring, worker 0 10x slower" -o docs/async_straggler.png
