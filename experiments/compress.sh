#!/bin/sh
# Compression experiments of issue 11 (docs/results.md, "Gradient
# compression", "1-bit Adam and 1-bit LAMB", "GraVAC", "Compressed gossip"):
# four databases and the figures docs/compress_*.png. Usage:
#   experiments/compress.sh [BUILD_DIR] [OUT_DIR]
# About 7 minutes on one core (38 runs, each a few seconds).
set -e
B=${1:-build}
O=${2:-results-compress}
mkdir -p "$O"
D="$B/dtsim"
run() { # DB EXPERIMENT NAME [--set K=V]...
    db=$1 x=$2 name=$3
    shift 3
    "$D" run "$x" --db "$db" --quiet --set experiment.name="$name" "$@"
}

# 1. dense, fp16, Top-k and QSGD with and without error feedback, 1 Gb/s
DB="$O/compress_ef.db"
rm -f "$DB"
X=experiments/compress_ef.ini
run "$DB" $X dense_fp32
run "$DB" $X dense_fp16 --set workload.wire_dtype=fp16
for c in "topk(0.01)" "topk(0.001)" "qsgd(4)"; do
    run "$DB" $X "$c EF" --set algorithm.compressor="$c" --set algorithm.error_feedback=true
    run "$DB" $X "$c no EF" --set algorithm.compressor="$c" --set algorithm.error_feedback=false
done
# the same with heavy-ball momentum 0.9 (the compressed quantity is lr m_i)
for c in none "topk(0.01)"; do
    run "$DB" $X "$c EF momentum" --set algorithm.compressor="$c" --set algorithm.momentum=0.9 \
        --set algorithm.lr=0.05
done
run "$DB" $X "topk(0.01) no EF momentum" --set algorithm.compressor="topk(0.01)" \
    --set algorithm.error_feedback=false --set algorithm.momentum=0.9 --set algorithm.lr=0.05
"$D" report "$DB" --target test_accuracy=0.8
"$D" plot "$DB" --y test_accuracy --x sim_time --logx --by name --where "r.name NOT LIKE '%momentum'" \
    --title "Compression at 1 Gb/s: test accuracy against simulated time" -o docs/compress_ef_time.png
"$D" plot "$DB" --y test_accuracy --x bytes_sent --logx --by name \
    --where "r.name NOT LIKE '%momentum' AND r.name NOT LIKE 'qsgd(4) EF'" \
    --title "Compression at 1 Gb/s: test accuracy against bytes sent" -o docs/compress_ef_bytes.png

# 2. 1-bit Adam / LAMB against Adam / LAMB (fp16 dense messages), the
#    warm-up fraction swept: 704 rounds, freeze_step = w x 704
DB="$O/compress_onebit.db"
rm -f "$DB"
X=experiments/compress_onebit.ini
run "$DB" $X adam --set algorithm.optimizer=adamw --set algorithm.lr=0.001
run "$DB" $X lamb --set algorithm.optimizer=lamb --set algorithm.lr=0.01
for w in 0.05 0.10 0.15 0.25 0.50; do
    f=$(awk "BEGIN { printf \"%d\", $w * 704 + 0.5 }")
    run "$DB" $X "onebit_adam w=$w" --set algorithm.name=onebit_adam --set algorithm.lr=0.001 \
        --set algorithm.freeze_step=$f
    run "$DB" $X "onebit_lamb w=$w" --set algorithm.name=onebit_lamb --set algorithm.lr=0.01 \
        --set algorithm.freeze_step=$f
done
"$D" report "$DB"
"$D" plot "$DB" --y test_accuracy --x iteration --by name \
    --where "r.name IN ('adam', 'lamb', 'onebit_adam w=0.15', 'onebit_lamb w=0.15')" \
    --title "1-bit Adam / LAMB (15% warm-up) against Adam / LAMB" -o docs/compress_onebit_acc.png
"$D" plot "$DB" --y test_accuracy --x bytes_sent --logx --by name \
    --where "r.name LIKE 'onebit_adam%' OR r.name = 'adam'" \
    --title "1-bit Adam: accuracy against bytes sent, by warm-up fraction" \
    -o docs/compress_onebit_bytes.png
sqlite3 -header -column "$DB" "SELECT r.name, r.bytes_sent / 1e9 AS GB,
    (SELECT b.bytes_sent FROM runs b WHERE b.name = CASE WHEN r.name LIKE '%lamb%' THEN 'lamb' ELSE 'adam' END)
        * 1.0 / r.bytes_sent AS reduction_vs_fp16
    FROM runs r ORDER BY r.id"

# 3. GraVAC against static Top-k and dense at 1, 10 and 100 Gb/s
DB="$O/compress_gravac.db"
rm -f "$DB"
X=experiments/compress_gravac.ini
for bw in 1Gbps 10Gbps 100Gbps; do
    run "$DB" $X "gravac $bw" --set network.bandwidth=$bw
    run "$DB" $X "dense $bw" --set network.bandwidth=$bw --set algorithm.name=allreduce_sgd
    for r in 0.1 0.01 0.001; do
        run "$DB" $X "topk($r) $bw" --set network.bandwidth=$bw --set algorithm.name=allreduce_sgd \
            --set algorithm.compressor="topk($r)"
    done
done
"$D" report "$DB" --target test_accuracy=0.8
for bw in 1 10 100; do
    "$D" plot "$DB" --y test_accuracy --x sim_time --logx --by name --where "r.name LIKE '% ${bw}Gbps'" \
        --title "GraVAC against static Top-k at $bw Gb/s" -o docs/compress_gravac_${bw}g.png
done
"$D" plot "$DB" --y series:keep_fraction --x iteration --logy --by name \
    --where "r.algorithm = 'gravac'" \
    --title "GraVAC: keep fraction in use (1 and 100 Gb/s coincide)" -o docs/compress_gravac_keep.png
sqlite3 -header -column "$DB" "SELECT r.name, s.iteration, round(s.sim_time, 1) AS t, s.value AS keep_fraction
    FROM series s JOIN runs r ON r.id = s.run_id WHERE s.name = 'keep_fraction' ORDER BY r.id, s.sim_time"

# 4. Compressed gossip (CHOCO) for dsgd_atc on a ring at 1 Gb/s
DB="$O/compress_choco.db"
rm -f "$DB"
X=experiments/compress_choco.ini
run "$DB" $X "dsgd_atc dense"
run "$DB" $X "topk(0.01) gamma=0.2" --set algorithm.compressor="topk(0.01)" --set algorithm.consensus_step=0.2
run "$DB" $X "topk(0.01) gamma=0.05" --set algorithm.compressor="topk(0.01)" --set algorithm.consensus_step=0.05
run "$DB" $X "topk(0.001) gamma=0.05" --set algorithm.compressor="topk(0.001)" --set algorithm.consensus_step=0.05
run "$DB" $X "sign gamma=0.2" --set algorithm.compressor=sign --set algorithm.consensus_step=0.2
"$D" report "$DB" --target test_accuracy=0.8
"$D" plot "$DB" --y test_accuracy --x sim_time --logx --by name \
    --title "dsgd_atc on a ring at 1 Gb/s: dense vs CHOCO gossip" \
    -o docs/compress_choco.png
