#!/bin/sh
# The three experiments of issue 12 (docs/results.md entries 15 to 17): runs
# them into OUT/*.db at SEEDS seeds each (default 1-5), draws the figures
# into docs/ and prints the tables docs/results.md quotes: mean +-h (95%
# interval over the seeds) and the intervals of the differences the
# verdicts rest on. The sweeps resume: runs already done in OUT are
# skipped.
#   experiments/faults.sh [OUT]      (default OUT = results-faults)
# DTSIM names the binary (default build/dtsim); JOBS the parallel runs (2);
# PARTS the entries to run (default "15 16 17").
# Measured on the 2-core machine under a load of 25-35 (JOBS=2): entry 15,
# 120 runs, about 6 min of CPU time (its last 30 runs: 85 s of CPU, 26 min
# of wall time); entry 17, 60 runs, 75 s of CPU (58 s user, 17 s system),
# 16.5 min of wall time; entry 16, 70 runs of 600 simulated seconds, 14 min
# of wall time for its last 62 runs. docs/results.md's 10-seed intervals
# for entry 15: SEEDS=1-10 PARTS=15 over the same OUT (5 min of wall time,
# JOBS=2, load ~3).
set -e
cd "$(dirname "$0")/.."
DTSIM=${DTSIM:-build/dtsim}
JOBS=${JOBS:-2}
SEEDS=${SEEDS:-1-5}
N=$(( ${SEEDS#*-} - ${SEEDS%-*} + 1 ))  # seeds per configuration
OUT=${1:-results-faults}
mkdir -p "$OUT" docs
# runs whose params have key = value
w() { echo "r.id IN (SELECT run_id FROM params WHERE key = '$1' AND value = '$2')"; }
# the part of `report --aggregate --compare KEY=V1,V2` after the table: the
# differences V2 - V1 with their 95% intervals (Welch) and verdicts
compare() { # DB KEY=V1,V2 [REPORT OPTIONS]...
  db=$1
  shift
  $DTSIM report "$db" --aggregate --compare "$@" | sed -n '/interval of the difference/,$p'
}
# mean +-h per group of the rows "GROUP|GROUP|X|Y|..." that sqlite3 -list
# prints (the first G fields name the group), h the half-width of the 95%
# interval of the mean over the seeds, t(0.975, n - 1) s / sqrt(n); a
# group whose seeds agree shows the mean alone
seedci() { # G HEADER
  awk -F'|' -v g="$1" -v head="$2" '
    BEGIN { split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228", t, " ");
      print head }
    { k = $1; for (i = 2; i <= g; i++) k = k "|" $i
      if (!(k in n)) order[++groups] = k
      n[k]++; for (i = g + 1; i <= NF; i++) { s[k, i] += $i; ss[k, i] += $i * $i }; nf = NF }
    END { for (j = 1; j <= groups; j++) { k = order[j]; line = k " | " n[k]
        for (i = g + 1; i <= nf; i++) { m = s[k, i] / n[k]
          v = n[k] > 1 ? (ss[k, i] - n[k] * m * m) / (n[k] - 1) : 0
          h = (n[k] > 1 && v > 1e-12 * (1 + m * m)) ? (n[k] <= 11 ? t[n[k] - 1] : 2) * sqrt(v / n[k]) : 0
          line = line " | " (h > 0 ? sprintf("%.4g +-%.2g", m, h) : sprintf("%.4g", m)) }
        print line } }'
}
PARTS=${PARTS:-15 16 17}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

if part 15; then
echo "== 15. clipped vs unclipped ASGD, one straggler, sub-Weibull noise"
$DTSIM sweep experiments/clipped_asgd.ini --db "$OUT/clip.db" --jobs "$JOBS" --quiet --seeds "$SEEDS" \
  --grid algorithm.clip=0,1 --grid workers.straggler_slowdown=10,30,100 \
  --grid 'workload.grad_noise=subweibull(0.5, 4),subweibull(1, 4),subweibull(2, 4)'
# control: unclipped with a 4x smaller step (clipping at 1 shrinks the
# noisy gradients' steps about that much)
$DTSIM sweep experiments/clipped_asgd.ini --db "$OUT/clip.db" --jobs "$JOBS" --quiet --seeds "$SEEDS" \
  --grid algorithm.clip=0 --grid algorithm.lr=0.0125 --grid workers.straggler_slowdown=10,100 \
  --grid 'workload.grad_noise=subweibull(0.5, 4),subweibull(1, 4),subweibull(2, 4)'
# final train loss per cell: mean +- 95% interval over the seeds
$DTSIM report "$OUT/clip.db" --aggregate \
  --columns workload.grad_noise,workers.straggler_slowdown,algorithm.clip,algorithm.lr
# clipped minus unclipped at lr 0.05, per cell
compare "$OUT/clip.db" algorithm.clip=0,1
# clipped (lr 0.05) minus the step-matched control (unclipped, lr 0.0125):
# they differ in two keys and --compare pairs groups that differ in one, so
# a scratch copy of the database labels the control's clip 'control' and
# its lr 0.05
sqlite3 "$OUT/clip.db" ".backup '$OUT/clip_control.db'"
sqlite3 "$OUT/clip_control.db" "UPDATE params SET value = 'control' WHERE key = 'algorithm.clip'
    AND run_id IN (SELECT run_id FROM params WHERE key = 'algorithm.lr' AND value = '0.0125');
  UPDATE params SET value = '0.05' WHERE key = 'algorithm.lr' AND value = '0.0125'"
compare "$OUT/clip_control.db" algorithm.clip=control,1
# the delay: 100x minus 10x straggler, clipped and not
compare "$OUT/clip.db" workers.straggler_slowdown=10,100
nolr="r.id NOT IN (SELECT run_id FROM params WHERE key = 'algorithm.lr' AND value = '0.0125')"
for theta in 0.5 1 2; do
  for clip in 0 1; do
    $DTSIM plot "$OUT/clip.db" --y train_loss --x iteration --by workers.straggler_slowdown --logy \
      --where "$(w workload.grad_noise "subweibull($theta, 4)") AND $(w algorithm.clip $clip) AND $nolr" \
      --title "ASGD clip = $clip (0: none), lr 0.05, theta = $theta: train loss vs updates, $N seeds" \
      -o docs/clipped_asgd_theta${theta}_clip$clip.png
  done
done
$DTSIM plot "$OUT/clip.db" --y train_loss --x sim_time --by algorithm.clip --logy \
  --where "$(w workload.grad_noise "subweibull(2, 4)") AND $(w workers.straggler_slowdown 100) AND $nolr" \
  --title "ASGD, theta = 2, worker 0 100x slower: train loss vs simulated time (clip 0 = none), $N seeds" \
  -o docs/clipped_asgd_time.png
$DTSIM plot "$OUT/clip.db" --y train_loss --x iteration --by algorithm.lr --logy \
  --where "$(w workload.grad_noise "subweibull(2, 4)") AND $(w workers.straggler_slowdown 100) AND $(w algorithm.clip 0)" \
  --title "unclipped ASGD, theta = 2, 100x straggler: lr 0.05 against lr 0.0125, $N seeds" \
  -o docs/clipped_asgd_control.png
fi

if part 16; then
echo "== 16. random crashes: allreduce_sgd, asgd, ad_psgd, dpsgd, local_sgd, dmsgd, decentlam"
$DTSIM sweep experiments/faults_crashes.ini --db "$OUT/crash.db" --jobs "$JOBS" --quiet --seeds "$SEEDS" \
  --grid algorithm.name=allreduce_sgd,asgd,ad_psgd,dpsgd,local_sgd --grid "faults.mtbf=none,exponential(120s)"
# the momentum gossip methods: momentum 0.9 at lr 0.005 (the same lr / (1 - beta))
$DTSIM sweep experiments/faults_crashes.ini --db "$OUT/crash.db" --jobs "$JOBS" --quiet --seeds "$SEEDS" \
  --grid algorithm.name=dmsgd,decentlam --grid "faults.mtbf=none,exponential(120s)" \
  --set algorithm.momentum=0.9 --set algorithm.lr=0.005

$DTSIM report "$OUT/crash.db" --aggregate --target test_accuracy=0.8
# with crashes minus without, per method
compare "$OUT/crash.db" "faults.mtbf=none,exponential(120s)" --target test_accuracy=0.8
# crashes, rounds or updates, gradients computed, idle fraction and final
# consensus distance (live workers): mean +-h over the seeds
sqlite3 -list "$OUT/crash.db" "select r.algorithm, m.value,
     (select count(*) from faults f where f.run_id = r.id and f.event = 'crash'),
     r.iterations, (select sum(steps) from workers w where w.run_id = r.id),
     r.idle_fraction, r.consensus_distance
   from runs r join params m on m.run_id = r.id and m.key = 'faults.mtbf'
   where r.status = 'done' order by r.algorithm, m.value, r.id" |
  seedci 2 "algorithm | mtbf | seeds | crashes | iterations | gradients | idle | consensus"
$DTSIM plot "$OUT/crash.db" --y test_accuracy --by algorithm \
  --where "$(w faults.mtbf 'exponential(120s)')" \
  --title "random crashes (mtbf 120 s, downtime 30 s), 8 workers, $N seeds" \
  -o docs/faults_crashes.png
$DTSIM plot "$OUT/crash.db" --y test_accuracy --by faults.mtbf \
  --where "r.algorithm = 'local_sgd'" \
  --title "local_sgd (H = 4), random crashes (mtbf 120 s, downtime 30 s) or none, $N seeds" \
  -o docs/faults_crashes_local.png
fi

if part 17; then
echo "== 9. one fat-tree link degraded to a tenth at 5 s"
$DTSIM sweep experiments/faults_link.ini --db "$OUT/link.db" --jobs "$JOBS" --quiet --seeds "$SEEDS" \
  --grid algorithm.name=allreduce_sgd,asgd,ad_psgd,dpsgd \
  --grid faults.schedule=none,faults_link.csv
# updates per simulated second before (1 to 5 s) and after (6 to 15 s) the
# fault, and the final train loss: mean +-h over the seeds
sqlite3 -list "$OUT/link.db" "select r.algorithm, s.value,
     ((select max(iteration) from metrics where run_id = r.id and sim_time <= 5)
       - (select max(iteration) from metrics where run_id = r.id and sim_time <= 1)) / 4.0,
     ((select max(iteration) from metrics where run_id = r.id and sim_time <= 15)
       - (select max(iteration) from metrics where run_id = r.id and sim_time <= 6)) / 9.0,
     r.final_train_loss
   from runs r join params s on s.run_id = r.id and s.key = 'faults.schedule'
   where r.status = 'done' and s.value in ('none', 'faults_link.csv')
   order by r.algorithm, s.value, r.id" |
  seedci 2 "algorithm | schedule | seeds | 1-5 s | 6-15 s | final train loss"
# the final train loss with the slow link minus without, per method
compare "$OUT/link.db" faults.schedule=none,faults_link.csv
$DTSIM plot "$OUT/link.db" --y train_loss --by algorithm \
  --where "$(w faults.schedule faults_link.csv)" \
  --title "fat_tree(4), link 0-16 at 1 Gb/s (a tenth) from 5 s: train loss, $N seeds" \
  -o docs/faults_link.png
$DTSIM plot "$OUT/link.db" --y samples --by algorithm \
  --where "$(w faults.schedule faults_link.csv)" \
  --title "fat_tree(4), link 0-16 at 1 Gb/s (a tenth) from 5 s: samples applied, $N seeds" \
  -o docs/faults_link_samples.png
echo "== 9b. the same link down from 5 s to 7.5 s (lost messages re-sent after 1 s)"
$DTSIM sweep experiments/faults_link.ini --db "$OUT/link.db" --jobs "$JOBS" --quiet --seeds "$SEEDS" \
  --grid algorithm.name=allreduce_sgd,asgd,ad_psgd,dpsgd \
  --grid faults.schedule=faults_link_down.csv
# updates per simulated second before (1 to 5 s), while host 0 is cut off
# or waiting for its re-sends (5 to 8 s) and after (9 to 15 s); lost
# attempts, bytes sent by them before the loss, re-sent bytes
sqlite3 -list "$OUT/link.db" "select r.algorithm, s.value,
     ((select max(iteration) from metrics where run_id = r.id and sim_time <= 5)
       - (select max(iteration) from metrics where run_id = r.id and sim_time <= 1)) / 4.0,
     ((select max(iteration) from metrics where run_id = r.id and sim_time <= 8)
       - (select max(iteration) from metrics where run_id = r.id and sim_time <= 5)) / 3.0,
     ((select max(iteration) from metrics where run_id = r.id and sim_time <= 15)
       - (select max(iteration) from metrics where run_id = r.id and sim_time <= 9)) / 6.0,
     (select count(*) from faults where run_id = r.id and event = 'lost'),
     (select coalesce(sum(value), 0) from faults where run_id = r.id and event = 'lost') / 1e6,
     (select coalesce(sum(value), 0) from faults where run_id = r.id and event = 'resent') / 1e6,
     (select max(iteration) from metrics where run_id = r.id),
     r.final_train_loss
   from runs r join params s on s.run_id = r.id and s.key = 'faults.schedule'
   where r.status = 'done' and s.value in ('none', 'faults_link_down.csv')
   order by r.algorithm, s.value, r.id" |
  seedci 2 "algorithm | schedule | seeds | 1-5 s | 5-8 s | 9-15 s | lost | lost MB | resent MB | iterations | final train loss"
compare "$OUT/link.db" faults.schedule=none,faults_link_down.csv
$DTSIM plot "$OUT/link.db" --y samples --by algorithm \
  --where "$(w faults.schedule faults_link_down.csv)" \
  --title "fat_tree(4), link 0-16 down from 5 s to 7.5 s: samples applied, $N seeds" \
  -o docs/faults_link_down.png
fi
