#!/bin/sh
# Predicts the published cluster measurements of docs/cluster-prediction.md
# section 5 with inputs from independent sources (the experiment files name
# each) and prints measured beside predicted. Databases go to OUT (default
# results-published/). About a minute on 2 cores (50-56 s measured; the
# six 512-GPU runs take most of it).
#   experiments/published.sh [OUT]
set -eu
cd "$(dirname "$0")/.."
DTSIM=${DTSIM:-build/dtsim}
OUT=${1:-results-published}
mkdir -p "$OUT"
rm -f "$OUT"/horovod.db "$OUT"/bluefog.db "$OUT"/ddp.db

# seconds of simulated time of the last run in database $1
last() { sqlite3 "$1" "SELECT printf('%.9f', sim_time) FROM runs ORDER BY id DESC LIMIT 1;"; }
# run DB FILE [--set ...]: one run, prints its simulated seconds
run() {
    db=$1 file=$2
    shift 2
    "$DTSIM" run "$file" --quiet --db "$db" "$@" >/dev/null
    last "$db"
}
# scaling efficiency: weak scaling, the same iterations: t(1) / t(n)
eff() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
row() { printf '%-34s %-13s %5s %9s %9s %7s\n' "$@"; }

row setup model GPUs measured predicted diff
# Horovod docs/benchmarks: servers of 4 P100, 25 Gbit/s RoCE
for m in inception_v3:0.90:0.90 resnet101:0.90:0.90 vgg16:0.79:0.68; do
    name=${m%%:*} rest=${m#*:}
    t1=$(run "$OUT"/horovod.db experiments/published_horovod.ini --set workers.count=1 \
        --set "network.topology=pcie4(1)" --set workload.proxy="$name")
    for n in 128 512; do
        if [ $n = 128 ]; then meas=${rest%%:*}; else meas=${rest#*:}; fi
        tn=$(run "$OUT"/horovod.db experiments/published_horovod.ini --set workers.count=$n \
            --set "network.topology=pcie4($((n / 4)))" --set workload.proxy="$name")
        p=$(eff "$t1" "$tn")
        row "Horovod, P100, 25G RoCE" "$name" $n "$meas" "$p" \
            "$(awk -v p="$p" -v m="$meas" 'BEGIN { printf "%+.0f", 100 * (p - m) }')"
    done
done

# BlueFog README: 16 servers of 8 V100, 25 Gbit/s TCP, ResNet-50, batch 64
t1=$(run "$OUT"/bluefog.db experiments/published_bluefog.ini --set workers.count=1 \
    --set "network.topology=dgx1_v100(1)")
tn=$(run "$OUT"/bluefog.db experiments/published_bluefog.ini)
p=$(eff "$t1" "$tn")
row "BlueFog README: Horovod all-reduce" resnet50 128 0.66 "$p" \
    "$(awk -v p="$p" 'BEGIN { printf "%+.0f", 100 * (p - 0.66) }')"
tn=$(run "$OUT"/bluefog.db experiments/published_bluefog.ini --set algorithm.name=dpsgd \
    --set "topology.graph=file(published_bluefog_graph.txt)" --set algorithm.bucket=0)
p=$(eff "$t1" "$tn")
row "BlueFog README: neighbour averaging" resnet50 128 ">0.95" "$p" \
    "$(awk -v p="$p" 'BEGIN { d = 100 * (p - 0.95); if (d >= 0) print "within"; else printf "%+.0f", d }')"

# sensitivity, not a prediction: Horovod fusing less than 64 MiB per all-reduce
for b in 32MiB 16MiB 8MiB; do
    tn=$(run "$OUT"/bluefog.db experiments/published_bluefog.ini --set algorithm.bucket=$b)
    row "  (Horovod at $b per all-reduce)" resnet50 128 0.66 "$(eff "$t1" "$tn")" ""
done

# Li et al. (PyTorch DDP): iteration time against bucket size, 32 V100
echo
printf '%-10s %s\n' bucket "iteration (ms)"
for b in 0 0.25MiB 0.5MiB 1MiB 2MiB 5MiB 10MiB 25MiB 50MiB 100MiB; do
    t=$(run "$OUT"/ddp.db experiments/published_ddp.ini --set algorithm.bucket=$b)
    printf '%-10s %s\n' "$b" "$(awk -v t="$t" 'BEGIN { printf "%.1f", 1000 * t / 4 }')"
done
