#!/bin/sh
# The emulated cluster's pieces that need no root (meson test --suite
# emucluster): emu_predict's closed forms and usage errors, the
# calibration fit, the argument checks of emucluster.sh, run.py and
# peer.py, and a dry run of the table. TAP output.
# Usage: test_emucluster.sh EMU_PREDICT
p=$1
# no __pycache__ in the source tree
export PYTHONDONTWRITEBYTECODE=1
here=$(cd "$(dirname "$0")" && pwd)
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else no "$1: got '$2', want '$3'"; fi; }
first() { "$p" "$@" | sed -n 's/^time //p'; }

# 4 MB at 100 Mbit/s, no latency: S/B = 0.32 s
check "p2p: S/B" "$(first p2p 4 4e6 1e8)" "0.320000000"
check "p2p: S/(e B) + overhead" "$(first p2p 4 4e6 1e8 --efficiency 0.8 --overhead 0.01)" \
    "0.410000000"
check "p2p: 2 alpha + S/B" "$(first p2p 2 4e6 1e8 --latency 0.001)" "0.322000000"
check "incast of 3: 3 S/B" "$(first incast 4 4e6 1e8)" "0.960000000"
check "incast: every arrival at 3 S/B (max-min)" \
    "$("$p" incast 4 4e6 1e8 | sed -n 's/^arrive [0-9]* 0 //p' | sort -u)" "0.960000000"
check "incast, sharing none: S/B" "$(first incast 4 4e6 1e8 --sharing none)" "0.320000000"
check "ring all-reduce of 8: 2(n-1) S/(nB)" "$(first allreduce 8 4e6 1e8)" "0.560000000"
check "gossip round: 2 S/B" "$(first gossip 8 4e6 1e8)" "0.640000000"
# host 0 waits 1.28 s before round 4: with one connection per pair every
# later round takes 2 S/B again; with a flow per message they stay slower
r11=$("$p" gossip 8 4e6 1e8 --rounds 12 --delay 4,1.28 --fifo | sed -n 's/^round 11 //p')
check "gossip, perturbed, fifo: round 11 ends at 12 x 0.64 + 1.28" "$r11" "8.960000000"
r11=$("$p" gossip 8 4e6 1e8 --rounds 12 --delay 4,1.28 | sed -n 's/^round 11 //p')
awk "BEGIN { exit !($r11 > 10) }" && ok "gossip, perturbed, a flow per message: slower ($r11 s)" ||
    no "gossip, perturbed, a flow per message: $r11 s"
for bad in "bcast 4 1 1" "p2p 1 1 1" "p2p 4 -1 1e8" "p2p 4 1 1e8 --efficiency 1.5" \
           "p2p 4 1 1e8 --bogus 1" "gossip 4 1 1e8 --delay x" "p2p 4 1 1e8 --sharing max"; do
    # shellcheck disable=SC2086
    "$p" $bad >/dev/null 2>&1
    check "emu_predict $bad: exit 2" "$?" "2"
done

# the calibration fit recovers o and b from exact points
got=$(cd "$here" && python3 -c '
import run
o, b = run.fit([(s, 0.002 + s / 1.2e7) for s in (62500, 250000, 1e6, 4e6)])
print("%.6f %.4e" % (o, b))')
check "fit: o and b" "$got" "0.002000 8.3333e-08"

for bad in "--hosts 1" "--hosts x" "--rates 0" "--reps 0" "--bogus"; do
    # shellcheck disable=SC2086
    "$here/emucluster.sh" $bad >/dev/null 2>&1
    check "emucluster.sh $bad: exit 2" "$?" "2"
done
python3 "$here/run.py" --hosts 4 --rate 100 --predict "$p" --patterns bcast >/dev/null 2>&1
check "run.py --patterns bcast: exit 2" "$?" "2"
python3 "$here/peer.py" --rank 4 --n 4 --pattern p2p --bytes 1 >/dev/null 2>&1
check "peer.py --rank 4 --n 4: exit 2" "$?" "2"
rows=$(python3 "$here/run.py" --hosts 4 --rate 100 --predict "$p" --dry-run | grep -c '^[a-z2]* *4 *100 ')
check "dry run: a row per pattern" "$rows" "4"
got=$(python3 "$here/run.py" --hosts 4 --rate 100 --predict "$p" --dry-run --ps --patterns p2p |
      sed -n 's/^#   max-min (in step): \([0-9.]*\);.*/\1/p')
check "dry run --ps: in step, T + 2(n-1) S/(eB) with T = 2 S/(eB)" "$got" "0.6809"
echo "1..$n"
exit $fail
