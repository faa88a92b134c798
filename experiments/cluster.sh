#!/bin/sh
# Runs the cluster-prediction experiments (docs/cluster-prediction.md
# section 3) into OUT (default results-cluster/), prints the tables and
# draws the figures into docs/. About 15 s of CPU time (13.7 s user,
# 1.7 s system; 3 min 51 s of wall time on the 2-core machine under a load
# of 20-30).
#   experiments/cluster.sh [OUT]
set -eu
cd "$(dirname "$0")/.."
DTSIM=${DTSIM:-build/dtsim}
OUT=${1:-results-cluster}
mkdir -p "$OUT"
rm -f "$OUT"/zhang.db "$OUT"/zhang_comp.db "$OUT"/horovod.db "$OUT"/ddp.db

# 3.1 Zhang et al.: scaling factor at 64 GPUs against bandwidth, per model
# (each configuration also on 1 GPU, the reference of its scaling factor).
BWS=1Gbps,5Gbps,10Gbps,25Gbps,40Gbps,100Gbps
for n in 64 1; do
    if [ "$n" = 64 ]; then topo="hierarchical(8, 8)"; else topo="hierarchical(1, 1)"; fi
    "$DTSIM" sweep experiments/cluster_zhang.ini --quiet --db "$OUT"/zhang.db \
        --set workers.count=$n --set "network.topology=$topo" \
        --grid workload.proxy=resnet50,resnet101,vgg16 --grid network.bandwidth=$BWS
    # the flat ring on the same servers, for comparison
    "$DTSIM" sweep experiments/cluster_zhang.ini --quiet --db "$OUT"/zhang.db \
        --set workers.count=$n --set "network.topology=$topo" --set network.collective=ring \
        --grid workload.proxy=resnet50,resnet101,vgg16 --grid network.bandwidth=$BWS
done
# ... and the compression ratio R needed at 10 Gb/s: messages of P / R
# parameters (an ideal compressor whose messages can still be all-reduced),
# bucketed as the uncompressed gradients are (DDP buckets first, then
# compresses each bucket): bucket = 25 MiB / R keeps the same layers in
# each bucket
for m in resnet50:25557032 resnet101:44549160 vgg16:138357544; do
    name=${m%%:*}
    p=${m#*:}
    for r in 1 2 3 4 5 8 16; do
        for n in 64 1; do
            if [ "$n" = 64 ]; then topo="hierarchical(8, 8)"; else topo="hierarchical(1, 1)"; fi
            "$DTSIM" run experiments/cluster_zhang.ini --quiet --db "$OUT"/zhang_comp.db \
                --set workers.count=$n --set "network.topology=$topo" \
                --set workload.proxy=$name --set network.bandwidth=10Gbps \
                --set workload.sim_params=$((p / r)) --set algorithm.bucket=$((26214400 / r))B
        done
    done
done

# 3.2 Horovod: 1 to 128 GPUs on servers of 4
for m in resnet101 vgg16; do
    for n in 1 4 8 16 32 64 128; do
        s=$(( (n + 3) / 4 ))
        "$DTSIM" run experiments/cluster_horovod.ini --quiet --db "$OUT"/horovod.db \
            --set workers.count=$n --set "network.topology=pcie4($s)" --set workload.proxy=$m
    done
done

# 3.3 PyTorch DDP: iteration time against bucket size on 32 GPUs
B=0,1MiB,2MiB,5MiB,10MiB,25MiB,50MiB,100MiB,200MiB
"$DTSIM" sweep experiments/cluster_ddp.ini --quiet --db "$OUT"/ddp.db \
    --grid algorithm.bucket=$B
"$DTSIM" sweep experiments/cluster_ddp.ini --quiet --db "$OUT"/ddp.db \
    --set workload.proxy=bert_base --set algorithm.batch=16 --grid algorithm.bucket=$B

for db in zhang zhang_comp horovod; do
    echo "== $db"
    "$DTSIM" report "$OUT"/$db.db --scaling
done
echo "== ddp (step time = sim_time / iterations)"
"$DTSIM" report "$OUT"/ddp.db --scaling --csv

if [ "${NO_FIGURES:-0}" = 0 ]; then
    "$DTSIM" plot "$OUT"/zhang.db --scaling --y scaling --x network.bandwidth --by workload.proxy \
        --where "r.n_workers = 64 AND r.id IN (SELECT run_id FROM params WHERE key = 'network.collective' AND value = 'hierarchical')" \
        --logx --title "Zhang et al. what-if: 64 V100 (8 servers), hierarchical all-reduce, 25 MiB buckets" \
        -o docs/cluster_zhang_bandwidth.png
    "$DTSIM" plot "$OUT"/zhang_comp.db --scaling --y scaling --x compression --by workload.proxy \
        --where "r.n_workers = 64" \
        --title "Compression ratio needed at 10 Gb/s (64 V100, ideal all-reducible compression)" \
        -o docs/cluster_zhang_compression.png
    "$DTSIM" plot "$OUT"/horovod.db --scaling --y throughput --x n_workers --by workload.proxy \
        --logx --logy --title "Horovod shape: images/s against GPUs (P100, 25 Gb/s, servers of 4)" \
        -o docs/cluster_horovod.png
    "$DTSIM" plot "$OUT"/ddp.db --scaling --y step_time --x algorithm.bucket --by workload.proxy \
        --title "DDP shape: iteration time against bucket size (32 V100, 100 Gb/s)" \
        -o docs/cluster_ddp_bucket.png
fi
