#!/bin/sh
# The MPI sweep (TAP): `mpirun -np 2 dtsim sweep` on a 2 x 2 x 2 grid lands
# every run exactly once in the database the user named (with its provenance), with nothing left
# in the shards; a second launch adds nothing. Skipped (not passed) when
# mpirun was not found at configure time.
# Usage: test_mpi.sh DTSIM_EXE MPIRUN SQLITE3
exe=$1 mpirun=$2 sqlite=$3
if [ -z "$mpirun" ] || [ ! -x "$mpirun" ]; then
    echo "1..0 # SKIP mpirun not found at configure time"
    exit 0
fi
if [ -z "$sqlite" ] || [ ! -x "$sqlite" ]; then
    echo "1..0 # SKIP the sqlite3 shell was not found at configure time"
    exit 0
fi
echo "1..7"
dir=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-mpi-XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat > "$dir/tiny.ini" <<'INI'
[experiment]
name = tiny
max_epochs = 0
max_iterations = 20
eval_every = 5
[workers]
count = 4
compute = constant(1ms)
[algorithm]
name = allreduce_sgd
[workload]
model = softmax
dataset = blobs(3, 5, 600)
INI
# OpenMPI refuses root without these; leaks of the MPI runtime are not ours
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export OMPI_MCA_btl_vader_single_copy_mechanism=none
sweep() {
    (cd "$dir" && "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$exe" sweep tiny.ini \
        --grid 'algorithm.name=allreduce_sgd,asgd' \
        --grid 'workers.compute=constant(1ms),exponential(1ms)' --seeds 1-2 \
        --db results.db) > "$dir/out.txt" 2>&1
}
q() { "$sqlite" "$dir/results.db" "$1"; }
check() {  # check N DESCRIPTION EXPECTED ACTUAL
    if [ "$3" = "$4" ]; then echo "ok $1 - $2"; else
        echo "not ok $1 - $2: expected '$3', got '$4'"; sed 's/^/# /' "$dir/out.txt"; fi
}
sweep
check 1 "mpirun -np 2 sweep exits 0" 0 $?
check 2 "8 done runs, each config once" "8|8" "$(q "select count(*), count(distinct config) from runs where status = 'done'")"
check 3 "nothing else in the database" 8 "$(q "select count(*) from runs")"
check 4 "integrity_check" ok "$(q "pragma integrity_check")"
check 5 "shards merged and removed" "" "$(cd "$dir" && ls | grep rank)"
sweep
check 6 "a second launch adds nothing" "0|8" "$(q "select $?, count(*) from runs")"
check 7 "each merged run keeps its provenance" 8 \
    "$(q "select count(*) from runs where blas like 'OpenBLAS %' and threads >= 1 and cpu is not null and commit_id is not null")"
