#!/bin/sh
# The three experiments of issue 12 (docs/results.md entries 15 to 17): runs
# them into OUT/*.db, draws the figures into docs/ and prints the tables
# docs/results.md quotes. About 25 minutes of CPU time (most of it in
# entry 15: 120 runs drawing d-dimensional noise for every gradient).
#   experiments/faults.sh [OUT]      (default OUT = results-faults)
# DTSIM names the binary (default build/dtsim); JOBS the parallel runs (2);
# PARTS the entries to run (default "15 16 17").
set -e
cd "$(dirname "$0")/.."
DTSIM=${DTSIM:-build/dtsim}
JOBS=${JOBS:-2}
OUT=${1:-results-faults}
mkdir -p "$OUT" docs
q() { sqlite3 -column -header "$@"; }
# runs whose params have key = value
w() { echo "r.id IN (SELECT run_id FROM params WHERE key = '$1' AND value = '$2')"; }
PARTS=${PARTS:-15 16 17}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

if part 15; then
echo "== 15. clipped vs unclipped ASGD, one straggler, sub-Weibull noise"
$DTSIM sweep experiments/clipped_asgd.ini --db "$OUT/clip.db" --jobs "$JOBS" --quiet --seeds 1-5 \
  --grid algorithm.clip=0,1 --grid workers.straggler_slowdown=10,30,100 \
  --grid 'workload.grad_noise=subweibull(0.5, 4),subweibull(1, 4),subweibull(2, 4)'
# control: unclipped with a 4x smaller step (clipping at 1 shrinks the
# noisy gradients' steps about that much)
$DTSIM sweep experiments/clipped_asgd.ini --db "$OUT/clip.db" --jobs "$JOBS" --quiet --seeds 1-5 \
  --grid algorithm.clip=0 --grid algorithm.lr=0.0125 --grid workers.straggler_slowdown=10,100 \
  --grid 'workload.grad_noise=subweibull(0.5, 4),subweibull(1, 4),subweibull(2, 4)'
# final train loss over the 5 seeds: min, median, max per cell
q "$OUT/clip.db" "with f as (select r.id, c.value || ' lr ' || l.value as clip,
     s.value as slow, g.value as noise, r.final_train_loss as loss from runs r
     join params c on c.run_id = r.id and c.key = 'algorithm.clip'
     join params l on l.run_id = r.id and l.key = 'algorithm.lr'
     join params s on s.run_id = r.id and s.key = 'workers.straggler_slowdown'
     join params g on g.run_id = r.id and g.key = 'workload.grad_noise'
     where r.status in ('done', 'diverged'))
   select noise, slow, clip, count(*) as n, printf('%.3f', min(loss)) as min,
     printf('%.3f', (select loss from f f2 where f2.noise = f.noise and f2.slow = f.slow
       and f2.clip = f.clip order by loss limit 1 offset 2)) as median,
     printf('%.3f', max(loss)) as max
   from f group by noise, cast(slow as real), clip order by noise, cast(slow as real), clip"
nolr="r.id NOT IN (SELECT run_id FROM params WHERE key = 'algorithm.lr' AND value = '0.0125')"
for theta in 0.5 1 2; do
  for clip in 0 1; do
    $DTSIM plot "$OUT/clip.db" --y train_loss --x iteration --by workers.straggler_slowdown --logy \
      --where "$(w workload.grad_noise "subweibull($theta, 4)") AND $(w algorithm.clip $clip) AND $nolr" \
      --title "ASGD clip = $clip (0: none), lr 0.05, theta = $theta: train loss vs updates, 5 seeds" \
      -o docs/clipped_asgd_theta${theta}_clip$clip.png
  done
done
$DTSIM plot "$OUT/clip.db" --y train_loss --x sim_time --by algorithm.clip --logy \
  --where "$(w workload.grad_noise "subweibull(2, 4)") AND $(w workers.straggler_slowdown 100) AND $nolr" \
  --title "ASGD, theta = 2, worker 0 100x slower: train loss vs simulated time (clip 0 = none)" \
  -o docs/clipped_asgd_time.png
$DTSIM plot "$OUT/clip.db" --y train_loss --x iteration --by algorithm.lr --logy \
  --where "$(w workload.grad_noise "subweibull(2, 4)") AND $(w workers.straggler_slowdown 100) AND $(w algorithm.clip 0)" \
  --title "unclipped ASGD, theta = 2, 100x straggler: lr 0.05 against lr 0.0125, 5 seeds" \
  -o docs/clipped_asgd_control.png
fi

if part 16; then
echo "== 16. random crashes: allreduce_sgd, asgd, ad_psgd, dpsgd, local_sgd, dmsgd, decentlam"
$DTSIM sweep experiments/faults_crashes.ini --db "$OUT/crash.db" --jobs "$JOBS" --quiet --seeds 1-3 \
  --grid algorithm.name=allreduce_sgd,asgd,ad_psgd,dpsgd,local_sgd --grid "faults.mtbf=none,exponential(120s)"
# the momentum gossip methods: momentum 0.9 at lr 0.005 (the same lr / (1 - beta))
$DTSIM sweep experiments/faults_crashes.ini --db "$OUT/crash.db" --jobs "$JOBS" --quiet --seeds 1-3 \
  --grid algorithm.name=dmsgd,decentlam --grid "faults.mtbf=none,exponential(120s)" \
  --set algorithm.momentum=0.9 --set algorithm.lr=0.005

$DTSIM report "$OUT/crash.db" --aggregate --target test_accuracy=0.8
q "$OUT/crash.db" "select r.algorithm, m.value as mtbf, count(distinct r.id) as runs,
     printf('%.1f', avg((select count(*) from faults f where f.run_id = r.id
       and f.event = 'crash'))) as crashes,
     printf('%.3f', avg(r.idle_fraction)) as idle, printf('%.4f', avg(r.final_test_accuracy)) as acc,
     printf('%.3f', avg(r.consensus_distance)) as xi
   from runs r join params m on m.run_id = r.id and m.key = 'faults.mtbf'
   where r.status = 'done' group by r.algorithm, m.value order by r.algorithm, m.value"
$DTSIM plot "$OUT/crash.db" --y test_accuracy --by algorithm \
  --where "$(w faults.mtbf 'exponential(120s)')" \
  --title "random crashes (mtbf 120 s, downtime 30 s), 8 workers, 3 seeds" \
  -o docs/faults_crashes.png
$DTSIM plot "$OUT/crash.db" --y test_accuracy --by faults.mtbf \
  --where "r.algorithm = 'local_sgd'" \
  --title "local_sgd (H = 4), random crashes (mtbf 120 s, downtime 30 s) or none, 3 seeds" \
  -o docs/faults_crashes_local.png
fi

if part 17; then
echo "== 9. one fat-tree link degraded to a tenth at 5 s"
$DTSIM sweep experiments/faults_link.ini --db "$OUT/link.db" --jobs "$JOBS" --quiet \
  --grid algorithm.name=allreduce_sgd,asgd,ad_psgd,dpsgd \
  --grid faults.schedule=none,faults_link.csv
# updates per simulated second before (1 to 5 s) and after (6 to 15 s) the fault
q "$OUT/link.db" "select r.algorithm, s.value as schedule,
     printf('%.1f', ((select max(iteration) from metrics where run_id = r.id and sim_time <= 5)
       - (select max(iteration) from metrics where run_id = r.id and sim_time <= 1)) / 4.0) as before,
     printf('%.1f', ((select max(iteration) from metrics where run_id = r.id and sim_time <= 15)
       - (select max(iteration) from metrics where run_id = r.id and sim_time <= 6)) / 9.0) as after,
     printf('%.4f', r.final_train_loss) as loss
   from runs r join params s on s.run_id = r.id and s.key = 'faults.schedule'
   where r.status = 'done' order by r.algorithm, s.value"
$DTSIM plot "$OUT/link.db" --y train_loss --by algorithm \
  --where "$(w faults.schedule faults_link.csv)" \
  --title "fat_tree(4), link 0-16 at 1 Gb/s (a tenth) from 5 s: train loss" \
  -o docs/faults_link.png
$DTSIM plot "$OUT/link.db" --y samples --by algorithm \
  --where "$(w faults.schedule faults_link.csv)" \
  --title "fat_tree(4), link 0-16 at 1 Gb/s (a tenth) from 5 s: samples applied" \
  -o docs/faults_link_samples.png
echo "== 9b. the same link down from 5 s to 7.5 s (lost messages re-sent after 1 s)"
$DTSIM sweep experiments/faults_link.ini --db "$OUT/link.db" --jobs "$JOBS" --quiet \
  --grid algorithm.name=allreduce_sgd,asgd,ad_psgd,dpsgd \
  --grid faults.schedule=faults_link_down.csv
# updates per simulated second before (1 to 5 s), while host 0 is cut off
# or waiting for its re-sends (5 to 8 s) and after (9 to 15 s); lost
# attempts, bytes sent by them before the loss, re-sent bytes
q "$OUT/link.db" "select r.algorithm, s.value as schedule,
     printf('%.1f', ((select max(iteration) from metrics where run_id = r.id and sim_time <= 5)
       - (select max(iteration) from metrics where run_id = r.id and sim_time <= 1)) / 4.0) as before,
     printf('%.1f', ((select max(iteration) from metrics where run_id = r.id and sim_time <= 8)
       - (select max(iteration) from metrics where run_id = r.id and sim_time <= 5)) / 3.0) as during,
     printf('%.1f', ((select max(iteration) from metrics where run_id = r.id and sim_time <= 15)
       - (select max(iteration) from metrics where run_id = r.id and sim_time <= 9)) / 6.0) as after,
     (select count(*) from faults where run_id = r.id and event = 'lost') as lost,
     printf('%.1f', (select coalesce(sum(value), 0) from faults
       where run_id = r.id and event = 'lost') / 1e6) as lost_mb,
     printf('%.1f', (select coalesce(sum(value), 0) from faults
       where run_id = r.id and event = 'resent') / 1e6) as resent_mb,
     printf('%.4f', r.final_train_loss) as loss
   from runs r join params s on s.run_id = r.id and s.key = 'faults.schedule'
   where r.status = 'done' and s.value in ('none', 'faults_link_down.csv')
   order by r.algorithm, s.value"
$DTSIM plot "$OUT/link.db" --y samples --by algorithm \
  --where "$(w faults.schedule faults_link_down.csv)" \
  --title "fat_tree(4), link 0-16 down from 5 s to 7.5 s: samples applied" \
  -o docs/faults_link_down.png
fi
