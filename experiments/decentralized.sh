#!/bin/sh
# The five experiments of docs/results.md entries 1 to 5 (ASGD against
# all-reduce with a straggler, DecentLaM, consensus distance, consensus
# control, AD-PSGD and SwarmSGD): runs each configuration at SEEDS seeds
# (default 5) into OUT/*.db, draws the figures into docs/ (mean over the
# seeds, min-max band) and prints the tables docs/results.md quotes: mean
# +- the half-width of the 95% interval over seeds, and the interval of
# each difference the text judges (report --aggregate --compare, or
# experiments/ci.awk for statistics the report does not compute).
# Measured at 5 seeds, JOBS=2, on the 2-core development machine shared by
# 8 engineers (load 11-35): entry 1 1.5 minutes, entry 5 6 minutes, entry 3
# about 5 minutes a seed (12 runs, load 11-20), entries 2 and 4 about 25
# minutes a seed each (load 17-30): some 2.5 hours in all at that load.
#   experiments/decentralized.sh [OUT]      (default OUT = results-decentralized)
# DTSIM names the binary (default build/dtsim); JOBS the parallel runs (2);
# SEEDS the seeds: a count N (seeds 1-N) or a block A-B (the second block
# of docs/results.md: SEEDS=1001-1010); WHICH the entries to run (default
# "1 2 3 4 5");
# RUN=0 only redraws and reprints from the databases already in OUT;
# RUN=resume adds runs to them (a sweep skips the runs already done), so
# SEEDS=1, then 2, ... runs the seeds one at a time over every configuration.
set -e
cd "$(dirname "$0")/.."
DTSIM=${DTSIM:-build/dtsim}
JOBS=${JOBS:-2}
S=${SEEDS:-5}
case $S in *-*) SEED_RANGE=$S ;; *) SEED_RANGE=1-$S ;; esac
OUT=${1:-results-decentralized}
WHICH=${WHICH:-1 2 3 4 5}
RUN=${RUN:-1}
mkdir -p "$OUT" docs
sw() { [ "$RUN" = 0 ] || $DTSIM sweep "$@" --jobs "$JOBS" --quiet --seeds "$SEED_RANGE"; }
. experiments/seeds.sh
has() { case " $WHICH " in *" $1 "*) return 0;; esac; return 1; }

if has 1; then
echo "== 1. asgd vs allreduce_sgd, 8 workers, worker 0 4x slower"
[ "$RUN" != 1 ] || rm -f "$OUT/sync_async.db"
sw experiments/sync_vs_async.ini --db "$OUT/sync_async.db" --grid algorithm.name=allreduce_sgd,asgd
$DTSIM report "$OUT/sync_async.db" --aggregate --target test_accuracy=0.7 \
  --compare algorithm.name=allreduce_sgd,asgd
$DTSIM plot "$OUT/sync_async.db" --y test_accuracy --by algorithm \
  --title "allreduce_sgd vs asgd, 8 workers, worker 0 4x slower ($(nseeds "$OUT/sync_async.db") seeds)" -o docs/sync_vs_async.png
fi

if has 2; then
echo "== 2. DecentLaM vs DmSGD vs PmSGD vs D-PSGD, Dirichlet(0.1), ring of 16"
[ "$RUN" != 1 ] || rm -f "$OUT/decentlam.db"
# Every seed of the block runs: the partition, dirichlet(0.1, 256) in the
# file, draws again a split that leaves a worker fewer samples than the
# largest batch (no seed is skipped, so no split is selected), and every
# batch size of a seed trains on the same split.
for b in 16 64 256; do
  lr=$(awk "BEGIN { print 0.0025 * $b / 16 }")
  sw experiments/decentlam_batch.ini --db "$OUT/decentlam.db" \
    --grid algorithm.name=decentlam,dmsgd,allreduce_sgd,dpsgd \
    --set algorithm.batch=$b --set algorithm.lr=$lr
done
for cmp in allreduce_sgd,decentlam allreduce_sgd,dmsgd dmsgd,decentlam; do
  $DTSIM report "$OUT/decentlam.db" --aggregate --columns algorithm.batch \
    --compare algorithm.name=$cmp
done
for b in 16 256; do
  $DTSIM plot "$OUT/decentlam.db" --y test_accuracy --x epoch --by algorithm \
    --where "r.id IN (SELECT run_id FROM params WHERE key = 'algorithm.batch' AND value = '$b')" \
    --title "Dirichlet(0.1) Fashion-MNIST, ring of 16, batch $b per worker ($(nseeds "$OUT/decentlam.db") seeds)" \
    -o docs/decentlam_batch$b.png
done
fi

if has 3; then
echo "== 3. consensus distance on ring, torus, exponential, complete; n = 16, 32, 64"
[ "$RUN" != 1 ] || rm -f "$OUT/consensus.db"
sw experiments/consensus_topologies.ini --db "$OUT/consensus.db" \
  --set workers.count=16 --grid "topology.graph=ring,torus(4, 4),exponential,complete"
sw experiments/consensus_topologies.ini --db "$OUT/consensus.db" \
  --set workers.count=32 --grid "topology.graph=ring,torus(4, 8),exponential,complete"
sw experiments/consensus_topologies.ini --db "$OUT/consensus.db" \
  --set workers.count=64 --grid "topology.graph=ring,torus(8, 8),exponential,complete"
grp="r.n_workers || ' ' || (select replace(value, ', ', 'x') from params g
  where g.run_id = r.id and g.key = 'topology.graph')"
echo "-- mean Xi over epochs 0.5-2 (phase 1)"
ci "$OUT/consensus.db" "select $grp, (select avg(consensus_distance) from metrics m
   where m.run_id = r.id and m.epoch > 0.5 and m.epoch < 2) from runs r
   where r.status = 'done' order by r.n_workers, r.id" \
  -v cmp='16 ring,16 torus(4x4);16 torus(4x4),16 exponential;16 ring,16 exponential;16 ring,32 ring;32 ring,64 ring'
echo "-- mean Xi after epoch 2.2 (phase 2)"
ci "$OUT/consensus.db" "select $grp, (select avg(consensus_distance) from metrics m
   where m.run_id = r.id and m.epoch > 2.2) from runs r
   where r.status = 'done' order by r.n_workers, r.id"
echo "-- final test accuracy"
ci "$OUT/consensus.db" "select $grp, r.final_test_accuracy from runs r
   where r.status = 'done' order by r.n_workers, r.id" \
  -v cmp='16 complete,16 ring;32 complete,32 ring;64 complete,64 ring'
for n in 16 32 64; do
  $DTSIM plot "$OUT/consensus.db" --y consensus_distance --x epoch --by topology.graph \
    --where "r.n_workers = $n" --title "consensus distance, dmsgd (ATC), $n workers ($(nseeds "$OUT/consensus.db" "r.n_workers = $n") seeds)" \
    -o docs/consensus_n$n.png
done
fi

if has 4; then
echo "== 4. consensus control: the same budget in phase 1 or in phase 3"
[ "$RUN" != 1 ] || rm -f "$OUT/control.db"
ctl() { # NAME SET...
  name=$1; shift
  sw experiments/consensus_control.ini --db "$OUT/control.db" --set experiment.name=$name "$@"
}
ctl uncontrolled
ctl exact_phase1 --set algorithm.exact_phases=1
ctl exact_phase3 --set algorithm.exact_phases=3
ctl gossip4_phase1 --set algorithm.gossip_steps=4 --set algorithm.gossip_phases=1
ctl gossip4_phase3 --set algorithm.gossip_steps=4 --set algorithm.gossip_phases=3
ctl adaptive_phase1 --set algorithm.adaptive_phases=1 --set algorithm.target_fraction=0.5
ctl allreduce --set algorithm.name=allreduce_sgd
$DTSIM report "$OUT/control.db" --aggregate
pairs='uncontrolled,exact_phase1;uncontrolled,exact_phase3;uncontrolled,gossip4_phase1'
pairs="$pairs;uncontrolled,gossip4_phase3;uncontrolled,adaptive_phase1;uncontrolled,allreduce"
pairs="$pairs;exact_phase1,allreduce;gossip4_phase1,allreduce"
echo "-- final test accuracy"
ci "$OUT/control.db" "select r.name, r.final_test_accuracy from runs r
   where r.status = 'done' order by r.id" -v cmp="$pairs"
echo "-- final train loss"
ci "$OUT/control.db" "select r.name, r.final_train_loss from runs r
   where r.status = 'done' order by r.id" -v cmp="$pairs"
echo "-- mean Xi over epochs 0.2-2 (phase 1)"
ci "$OUT/control.db" "select r.name, (select avg(consensus_distance) from metrics m
   where m.run_id = r.id and m.epoch > 0.2 and m.epoch < 2) from runs r
   where r.status = 'done' order by r.id" -v fmt=%.3f
$DTSIM plot "$OUT/control.db" --y consensus_distance --x epoch --by name --logy \
  --title "consensus control, ring of 32, mlp(64), $(nseeds "$OUT/control.db") seeds (0 not drawn)" -o docs/consensus_control_xi.png
$DTSIM plot "$OUT/control.db" --y test_accuracy --x epoch --by name \
  --title "consensus control, ring of 32, mlp(64) ($(nseeds "$OUT/control.db") seeds)" -o docs/consensus_control_acc.png
fi

if has 5; then
echo "== 5. ad_psgd and swarm_sgd against dpsgd, one worker 10x slower"
[ "$RUN" != 1 ] || rm -f "$OUT/async.db"
sw experiments/async_straggler.ini --db "$OUT/async.db" \
  --grid algorithm.name=dpsgd,ad_psgd,swarm_sgd --grid workers.stragglers=1,0
for cmp in dpsgd,ad_psgd dpsgd,swarm_sgd ad_psgd,swarm_sgd; do
  $DTSIM report "$OUT/async.db" --aggregate --target train_loss=0.6 \
    --compare algorithm.name=$cmp
done
$DTSIM report "$OUT/async.db" --aggregate --target train_loss=0.6 --compare workers.stragglers=0,1
grp="r.algorithm || ' s' || (select value from params s where s.run_id = r.id
  and s.key = 'workers.stragglers')"
pairs='dpsgd s0,ad_psgd s1;dpsgd s0,swarm_sgd s1'
echo "-- with the straggler against dpsgd without: final train loss"
ci "$OUT/async.db" "select $grp, r.final_train_loss from runs r where r.status = 'done'
   order by r.id" -v cmp="$pairs"
echo "-- final test accuracy"
ci "$OUT/async.db" "select $grp, r.final_test_accuracy from runs r where r.status = 'done'
   order by r.id" -v cmp="$pairs"
echo "-- applied updates (iterations)"
ci "$OUT/async.db" "select $grp, r.iterations from runs r where r.status = 'done'
   order by r.id" -v fmt=%.1f
$DTSIM plot "$OUT/async.db" --y train_loss --x sim_time --by algorithm \
  --where "r.id IN (SELECT run_id FROM params WHERE key = 'workers.stragglers' AND value = '1')" \
  --title "16 workers on a ring, worker 0 10x slower ($(nseeds "$OUT/async.db") seeds)" -o docs/async_straggler.png
fi
