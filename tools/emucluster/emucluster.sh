#!/usr/bin/env bash
# The emulated cluster (docs/network.md, "Validation on an emulated
# cluster"): N network namespaces on one Linux bridge, htb rate shaping on
# both ends of every veth (each host's uplink and downlink: full duplex),
# real processes (peer.py) exchanging real messages over TCP, and dtsim's
# predictions of the same patterns (bench/emu_predict). Needs root; removes
# what it made on exit, also when interrupted.
#
#   sudo tools/emucluster/emucluster.sh [--hosts "4 8"] [--rates "100 1000"]
#        [--reps 5] [--build build] [--quick] [--perturb] [--patterns LIST]
#        [--verbose] [--dry-run] [--mpi build/dtsim] [--ps]
#
# --rates in Mbit/s; --quick: 4 hosts at 100 Mbit/s, 3 repetitions;
# --perturb: also the gossip rounds with one host delayed once (the D-PSGD
# question); --ps: parameter-server cycles with equal compute (the
# unequal-sharing question); --patterns: some of p2p,allreduce,incast,gossip; --verbose:
# every repetition's arrivals; --dry-run: the predictions only (no root,
# no cluster; the calibration assumed); --mpi DTSIM: calibrate with
# `mpirun DTSIM calibrate` across the namespaces (one rank per host,
# mpi_rank.sh; TCP on the bridge's subnet) and predict from that, instead
# of from run.py's own point-to-point fit (both are printed). Everything
# else (sizes, the calibration, the table) is in run.py, which this script
# calls once the cluster is up for each host count and rate.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
hosts="4 8"
rates="100 1000"
reps=5
build="build"
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --hosts) hosts="$2"; shift 2 ;;
        --rates) rates="$2"; shift 2 ;;
        --reps) reps="$2"; shift 2 ;;
        --build) build="$2"; shift 2 ;;
        --quick) hosts=4; rates=100; reps=3; shift ;;
        --perturb) extra+=(--perturb); shift ;;
        --ps) extra+=(--ps); shift ;;
        --verbose) extra+=(--verbose); shift ;;
        --patterns) extra+=(--patterns "$2"); shift 2 ;;
        --mpi) case "$2" in /*) m="$2" ;; *) m="$root/$2" ;; esac; extra+=(--mpi "$m"); shift 2 ;;
        --dry-run) extra+=(--dry-run); shift ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "emucluster: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
for v in $hosts; do
    [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -ge 2 ] && [ "$v" -le 64 ] ||
        { echo "emucluster: --hosts wants numbers in 2..64, got $v" >&2; exit 2; }
done
for v in $rates; do
    [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -ge 1 ] ||
        { echo "emucluster: --rates wants Mbit/s (integers >= 1), got $v" >&2; exit 2; }
done
[[ "$reps" =~ ^[0-9]+$ ]] && [ "$reps" -ge 1 ] ||
    { echo "emucluster: --reps wants an integer >= 1, got $reps" >&2; exit 2; }
predict="$root/$build/bench/emu_predict"
[ -x "$predict" ] || { echo "emucluster: $predict missing (meson compile -C $build)" >&2; exit 2; }
if [[ " ${extra[*]-} " == *" --dry-run "* ]]; then
    for n in $hosts; do for r in $rates; do
        python3 "$here/run.py" --hosts "$n" --rate "$r" --reps "$reps" --predict "$predict" \
            --ns "dtemu" "${extra[@]}"
    done; done
    exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "emucluster: needs root (network namespaces, tc)" >&2; exit 2; }

PFX=dtemu
BR=dtemubr0
made_ns=()
cleanup() {
    trap - EXIT INT TERM
    for ns in "${made_ns[@]-}"; do
        [ -n "$ns" ] || continue
        ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
    ip link del "$BR" 2>/dev/null || true
}
trap cleanup EXIT
trap 'echo "emucluster: interrupted" >&2; exit 130' INT TERM

# shape NS DEV MBIT: htb at MBIT on DEV's egress (NS "" = the root namespace).
# One class of MBIT holds two: packets under 128 bytes (TCP's pure ACKs)
# first, the rest after. Without it the ACKs of one direction wait behind
# the shaper's queue of the other's data (hundreds of ms at 100 Mbit/s),
# which a line-rate NIC's short queue does not do, and a host that sends
# and receives at once got 85% of what a one-way transfer gets.
shape() {
    local x=() r="$3mbit" h="$(( $3 / 2 ))mbit"
    [ -n "$1" ] && x=(ip netns exec "$1")
    "${x[@]}" tc qdisc replace dev "$2" root handle 1: htb default 10
    "${x[@]}" tc class replace dev "$2" parent 1: classid 1:1 htb rate "$r" ceil "$r" quantum 1514
    "${x[@]}" tc class replace dev "$2" parent 1:1 classid 1:10 htb rate "$h" ceil "$r" prio 1 quantum 1514
    "${x[@]}" tc class replace dev "$2" parent 1:1 classid 1:20 htb rate "$h" ceil "$r" prio 0 quantum 1514
    "${x[@]}" tc filter replace dev "$2" parent 1: protocol ip prio 1 u32 \
        match u16 0x0000 0xff80 at 2 flowid 1:20
}

setup() { # setup N MBIT
    cleanup
    trap cleanup EXIT
    made_ns=()
    ip link add "$BR" type bridge
    # the switch's own address: mpirun's PMIx server, in this namespace,
    # is reached there by the ranks in theirs (run.py --mpi)
    ip addr add 10.77.0.254/24 dev "$BR"
    ip link set "$BR" up
    for ((i = 0; i < $1; i++)); do
        local ns="$PFX$i" v="${PFX}v$i"
        ip netns add "$ns"
        made_ns+=("$ns")
        ip link add "$v" type veth peer name eth0 netns "$ns"
        ip link set "$v" master "$BR" up
        ip netns exec "$ns" ip addr add "10.77.0.$((i + 1))/24" dev eth0
        ip netns exec "$ns" ip link set eth0 up
        ip netns exec "$ns" ip link set lo up
        # a long-running job's connections do not restart slow after idle
        ip netns exec "$ns" sysctl -qw net.ipv4.tcp_slow_start_after_idle=0
        shape "$ns" eth0 "$2"   # the host's uplink
        shape "" "$v" "$2"      # its downlink (the bridge's port towards it)
    done
}

echo "# emulated cluster: $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
for n in $hosts; do
    for r in $rates; do
        setup "$n" "$r"
        python3 "$here/run.py" --hosts "$n" --rate "$r" --reps "$reps" --predict "$predict" \
            --ns "$PFX" "${extra[@]}"
    done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
