#!/bin/sh
# dtsim calibrate under mpirun (TAP): `mpirun -np 2 dtsim calibrate` on
# this machine (loopback / shared memory) over a tiny size range writes a
# [network] fragment; an experiment includes it with [network] calibration;
# calib_check asserts that the loaded values equal the written ones and
# that dtsim's network predicts each ping-pong size as the fit modelled it,
# within the fit's own reported residual of what was measured (no timing
# that can flake). A TAP skip when mpirun was not found at configure time.
# Usage: test_calibrate.sh DTSIM_EXE MPIRUN CALIB_CHECK
exe=$1 mpirun=$2 check=$3
if [ -z "$mpirun" ] || [ ! -x "$mpirun" ]; then
    echo "1..0 # SKIP mpirun not found at configure time"
    exit 0
fi
echo "1..5"
dir=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-calibrate-XXXXXX")
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/cal"
# OpenMPI refuses root without these; leaks of the MPI runtime are not ours
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export OMPI_MCA_btl_vader_single_copy_mechanism=none
ok() {  # ok N DESCRIPTION STATUS
    if [ "$3" = 0 ]; then echo "ok $1 - $2"; else
        echo "not ok $1 - $2"; sed 's/^/# /' "$dir/out.txt"; fi
}
(cd "$dir" && "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$exe" calibrate \
    --min-size 64B --max-size 256KiB --factor 8 --reps 3 --by-size -o cal/net.ini) \
    > "$dir/out.txt" 2>&1
ok 1 "mpirun -np 2 dtsim calibrate exits 0" $?
grep -q '^\[network\]' "$dir/cal/net.ini" && grep -q '^efficiency_by_size = ' "$dir/cal/net.ini"
ok 2 "the fragment holds [network] and efficiency_by_size" $?
n=$(grep -c '^pingpong ' "$dir/out.txt")
[ "$n" = 5 ]
ok 3 "5 ping-pong sizes printed (64 B .. 256 KiB by 8)" $?
cat > "$dir/exp.ini" <<'INI'
[experiment]
max_iterations = 1
[network]
topology = star
calibration = cal/net.ini
INI
"$check" "$dir/cal/net.ini" "$dir/exp.ini" > "$dir/out.txt" 2>&1
ok 4 "loaded values equal the written ones; dtsim predicts the fit within its residual" $?
# the experiment's own key overrides the fragment's
printf 'efficiency = 0.5\n' >> "$dir/exp.ini"
"$check" "$dir/cal/net.ini" "$dir/exp.ini" > "$dir/out.txt" 2>&1
[ $? != 0 ] && grep -q 'efficiency: loaded 0.5' "$dir/out.txt"
ok 5 "a key of the experiment overrides the fragment's" $?
