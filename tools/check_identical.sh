#!/usr/bin/env bash
# check_identical.sh: proves that a refactor changes no result.
#
# Builds two versions of dtsim, runs every experiments/*.ini of the OLD tree
# with each (same overrides, one database per experiment and tree), dumps
# every result table from both databases in a deterministic order and
# compares the dumps byte for byte. REAL values are compared bit for bit
# (their IEEE-754 bits in hex); the differences shown use printf('%!.17g').
# (SQLite's printf('%.17g') prints at most 16 significant digits: 0.1 and
# 0.10000000000000002 both come out as "0.1". The '!' flag gives 17.)
#
# Usage: tools/check_identical.sh [--full] [--keep] OLD_REV [NEW_REV]
#   OLD_REV   a commit (extracted with git archive into a temp dir)
#   NEW_REV   a commit; default: the working tree as it is, uncommitted
#             changes and untracked (not ignored) files included
#   --full    run the experiment files as written (slow: tens of minutes);
#             by default each run is capped (caps_for below) so that the
#             whole check takes a few minutes on 2 cores
#   --keep    keep the temp dir (trees, builds, databases, dumps)
#   --threads N  run dtsim with --threads N (default: dtsim's own, every core)
#   --cases-only / --no-cases  only the coverage cases / only experiments/*.ini
#
# Besides experiments/*.ini, the check runs COVERAGE CASES written below
# (coverage_cases): short runs that together use every method, every model
# kind and every fault kind (crash and rejoin, slowdown, link rate, link
# down, random crashes, transient slowdowns), since the paper experiments
# leave some out (none used linreg, and a float change there went
# unnoticed). A case whose method or key the OLD tree does not know fails
# in OLD and is reported as a difference: new behaviour, as it should be.
# Exit status: 0 every experiment identical, 1 some differ (or a file is
# only in one tree), 2 usage or build error.
#
# Compared per experiment: runs (all columns but id, config, started_at,
# finished_at, version, wall_seconds, pid, host and the provenance columns commit_id,
# blas, cpu, threads), metrics, workers, staleness, labels,
# links (all columns but run_id), series and faults (when both databases
# have them), and dtsim's exit status and standard error (with the line
# numbers of experiment files masked: a comment added to a file moves its
# warnings' lines without changing a result). A failed run is a difference
# unless both trees failed the same way. Columns are those of the OLD
# database; a column that only NEW has is not compared.
# Each tree runs its own copy of the experiment file, from the tree's root
# directory (files may name data paths relative to it).
# Temp dir: ${TMPDIR:-/tmp}/check_identical.XXXXXX. Runs are sequential.
set -euo pipefail
export LC_ALL=C

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}
die() { echo "check_identical: $*" >&2; exit 2; }
log() { echo "check_identical: $*" >&2; }

full=0 keep=0 threads= do_cases=1 do_files=1
revs=()
while (($#)); do
    case $1 in
    --full) full=1 ;;
    --keep) keep=1 ;;
    --threads) shift; [[ ${1:-} =~ ^[0-9]+$ ]] || { echo "check_identical: --threads needs a number" >&2; exit 2; }; threads=$1 ;;
    --threads=*) threads=${1#--threads=}; [[ $threads =~ ^[0-9]+$ ]] || { echo "check_identical: --threads needs a number" >&2; exit 2; } ;;
    --cases-only) do_files=0 ;;
    --no-cases) do_cases=0 ;;
    -h | --help) usage ;;
    --) shift; revs+=("$@"); break ;;
    -*) echo "check_identical: unknown option $1" >&2; usage ;;
    *) revs+=("$1") ;;
    esac
    shift
done
((${#revs[@]} >= 1 && ${#revs[@]} <= 2)) || usage

for tool in git meson ninja sqlite3 diff cmp; do
    command -v "$tool" >/dev/null || die "$tool not found"
done

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || die "not in a git repository"
old_rev=${revs[0]}
new_rev=${revs[1]:-}
old_commit=$(git -C "$repo" rev-parse --verify --quiet "$old_rev^{commit}") ||
    die "OLD_REV '$old_rev' is not a commit"
new_commit=
if [[ -n $new_rev ]]; then
    new_commit=$(git -C "$repo" rev-parse --verify --quiet "$new_rev^{commit}") ||
        die "NEW_REV '$new_rev' is not a commit"
fi

# Exact REAL values: the IEEE-754 bits (sqlite3 shell >= 3.33), else 17 digits.
if [[ $(sqlite3 :memory: "select hex(ieee754_to_blob(0.1))" 2>/dev/null) == 3FB999999999999A ]]; then
    exact_real="hex(ieee754_to_blob(%s))"
else
    log "warning: this sqlite3 shell has no ieee754_to_blob; comparing printf('%!.17g') (not exact above 1e189)"
    exact_real="printf('%%!.17g', %s)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/check_identical.XXXXXX")
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    if ((keep)); then
        log "kept $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 2' INT TERM HUP

start=$SECONDS

# ---- the two trees ---------------------------------------------------------

extract_rev() { # COMMIT DEST
    mkdir -p "$2"
    git -C "$repo" archive --format=tar "$1" | tar -x -C "$2"
}

copy_worktree() { # DEST: tracked (as they are now) and untracked, not ignored
    mkdir -p "$1"
    (
        cd "$repo"
        git ls-files -co --exclude-standard -z |
            while IFS= read -r -d '' f; do
                if [[ -e $f || -L $f ]]; then printf '%s\0' "$f"; fi
            done |
            xargs -0 -r cp -P --parents -t "$1"
    )
}

build_tree() { # NAME (old|new): sets exe to the dtsim executable's path
    local src=$work/$1 b=$work/build-$1
    log "building $1 ($b)"
    if ! { meson setup "$b" "$src" -Dbuildtype=debugoptimized &&
        { meson compile -C "$b" dtsim:executable || meson compile -C "$b" dtsim; }; } \
        >"$work/build-$1.log" 2>&1; then
        tail -n 30 "$work/build-$1.log" >&2
        die "build of $1 failed (log: $work/build-$1.log)"
    fi
    exe=$(find "$b" -maxdepth 3 -type f -name dtsim -perm -u+x | head -n 1)
    [[ -n $exe ]] || die "no dtsim executable under $b"
}

old_label="$old_rev ($(git -C "$repo" rev-parse --short "$old_commit"))"
extract_rev "$old_commit" "$work/old"
if [[ -n $new_commit ]]; then
    new_label="$new_rev ($(git -C "$repo" rev-parse --short "$new_commit"))"
    extract_rev "$new_commit" "$work/new"
else
    new_label="working tree ($repo)"
    copy_worktree "$work/new"
fi
log "OLD = $old_label"
log "NEW = $new_label"
build_tree old
old_exe=$exe
build_tree new
new_exe=$exe

# ---- caps ------------------------------------------------------------------
# Stopping rules (config/config_load.c, experiment/experiment.c): a run stops at
# the first limit reached among max_iterations (synchronous rounds, or
# applied updates for asynchronous methods; 0 = none), max_epochs (samples
# applied over all workers / training samples; default 1, 0 = none),
# max_time (simulated time) and target_accuracy. So lowering max_iterations
# and max_epochs shortens a run; max_time is left as written. Metrics rows
# come at t = 0, every eval_every iterations (or simulated time) and at the
# end; eval_every is lowered where needed so that every capped run still
# writes several rows. Wall times are those of a 2-core machine.

ini_get() { # FILE KEY: the value of [experiment] KEY, empty if not set
    awk -v key="$2" '
        /^[ \t]*\[/ { sec = $0; gsub(/[ \t\[\]]/, "", sec); next }
        sec == "experiment" {
            line = $0; sub(/[;#].*/, "", line)
            n = index(line, "="); if (!n) next
            k = substr(line, 1, n - 1); v = substr(line, n + 1)
            gsub(/^[ \t]+|[ \t]+$/, "", k); gsub(/^[ \t]+|[ \t]+$/, "", v)
            if (k == key) val = v
        }
        END { print val }' "$1"
}

caps_for() { # FILE: sets cap_iter, cap_epochs, cap_eval ("" = as written)
    local file=$1 v
    case ${file##*/} in
    # 16 workers x 32 = 512 samples per round, 117 rounds per epoch; 7 rows
    quickstart.ini) cap_iter=150 cap_epochs=1.5 cap_eval= ;;
    # 32 x 16 samples; 250 rounds = 2.1 epochs: past the lr milestone at 2
    consensus_control.ini) cap_iter=250 cap_epochs=2.5 cap_eval= ;;
    # 16 x 32 samples; 250 rounds: past the milestone at epoch 2; 51 rows
    consensus_topologies.ini) cap_iter=250 cap_epochs=2.5 cap_eval= ;;
    # 16 x 16 samples; 1.3 epochs, 61 rows
    decentlam_batch.ini) cap_iter=300 cap_epochs=1.5 cap_eval= ;;
    # 8 x 32 windows per round (220k windows): 0.35 epochs, 7 rows
    quality_charlm.ini) cap_iter=300 cap_epochs=1 cap_eval=50 ;;
    # the slowest model (about 20 rounds/s): 0.43 epochs, 5 rows
    quality_cnn.ini) cap_iter=100 cap_epochs=0.5 cap_eval=25 ;;
    # 8 x 32 samples: 200 rounds = 0.85 epochs, 6 rows
    quality_mlp.ini) cap_iter=200 cap_epochs=1 cap_eval=40 ;;
    # 300 rounds = 1.28 epochs, 7 rows
    quality_softmax.ini) cap_iter=300 cap_epochs=1.5 cap_eval=50 ;;
    # max_time (5 s, 6 s of simulated time) stops these first: as written
    # apart from the caps (about 1 s each, 20+ rows every 250 ms)
    async_straggler.ini | sync_vs_async.ini) cap_iter=1000 cap_epochs=1 cap_eval= ;;
    # any other file: 200 rounds, 1 epoch, a row every 40 rounds at least
    *)
        cap_iter=200 cap_epochs=1 cap_eval=
        v=$(ini_get "$file" eval_every)
        if [[ -z $v ]] || { [[ $v =~ ^[0-9]+$ ]] && ((v > 40)); }; then cap_eval=40; fi
        ;;
    esac
    # never raise a limit the file sets lower
    v=$(ini_get "$file" max_iterations)
    if [[ $v =~ ^[0-9]+$ ]] && ((v > 0 && v < cap_iter)); then cap_iter=$v; fi
    v=$(ini_get "$file" max_epochs)
    if [[ -n $v ]] && awk -v a="$v" -v b="$cap_epochs" 'BEGIN { exit !(a > 0 && a < b) }'; then
        cap_epochs=$v
    fi
}

# ---- running and dumping ---------------------------------------------------

run_one() { # TREE(old|new) EXE FILE(relative) -> $work/out-TREE/NAME.{db,err,rc}
    local tree=$1 exe=$2 file=$3 name rc=0
    name=$(basename "$file" .ini)
    mkdir -p "$work/$tree/.check_identical"
    # the database path is relative so that error messages match
    (cd "$work/$tree" && "$exe" run "$file" --db ".check_identical/$name.db" --quiet "${sets[@]}" \
        ${threads:+--threads "$threads"} \
        </dev/null >/dev/null 2>"$work/$tree/.check_identical/$name.err") || rc=$?
    echo "$rc" >"$work/$tree/.check_identical/$name.rc"
}

q() { sqlite3 -batch -noheader -separator '|' -nullvalue NULL "$@"; }

has_table() { # DB TABLE
    [[ -f $1 ]] && [[ $(q "$1" "select count(*) from sqlite_master where type='table' and name='$2'" 2>/dev/null) == 1 ]]
}

excluded=" run_id id config started_at finished_at version wall_seconds pid host commit_id blas cpu threads "

dump() { # TREE NAME MODE(exact|show) -> stdout
    local tree=$1 name=$2 mode=$3 t ref cols c fmt sel order n out
    local dir=$work/$tree/.check_identical
    local db=$dir/$name.db odb=$work/old/.check_identical/$name.db ndb=$work/new/.check_identical/$name.db
    echo "== dtsim exit status $(cat "$dir/$name.rc")"
    sed -E -e "s|$work/$tree|<TREE>|g" -e 's/(\.ini):[0-9]+:/\1:<LINE>:/g' "$dir/$name.err"
    [[ -f $db ]] || { echo "== no database"; return 0; }
    for t in runs metrics workers staleness labels links series faults; do
        if [[ $t == series || $t == faults ]] && ! { has_table "$odb" $t && has_table "$ndb" $t; }; then
            continue
        fi
        if has_table "$odb" "$t"; then ref=$odb; elif has_table "$ndb" "$t"; then ref=$ndb; else continue; fi
        n=0
        if has_table "$db" "$t"; then n=$(q "$db" "select count(*) from \"$t\""); fi
        if ((n == 0)); then
            echo "== $t: no rows"
            continue
        fi
        cols=()
        while IFS= read -r c; do
            [[ $excluded == *" $c "* ]] || cols+=("$c")
        done < <(q "$ref" "select name from pragma_table_info('$t') order by cid")
        sel='' order=''
        for c in "${cols[@]}"; do
            if [[ $mode == exact ]]; then
                # shellcheck disable=SC2059 # the format is ours
                fmt=$(printf "$exact_real" "\"$c\"")
            else
                fmt="printf('%!.17g', \"$c\")"
            fi
            sel+="${sel:+, }case typeof(\"$c\") when 'real' then $fmt when 'blob' then 'x' || hex(\"$c\") else \"$c\" end"
            order+="${order:+, }\"$c\""
        done
        echo "== $t ($n rows): $(
            IFS='|'
            echo "${cols[*]}"
        )"
        if ! out=$(q "$db" "select $sel from \"$t\" order by $order" 2>&1); then
            echo "ERROR: $out"
        else
            printf '%s\n' "$out"
        fi
    done
}

# ---- coverage cases --------------------------------------------------------
# Short runs (8 workers, blobs data unless the model needs other data, 40
# iterations, a row every 10) that use every method, every model kind and
# every fault kind. Each case is an experiment file written identically into
# both trees (.check_identical/cases/NAME.ini); files it names (a fault
# schedule) are in $work/cases, by absolute path, the same for both trees.

case_names=()
add_case() { # NAME BODY: the base sections with BODY's sections appended
    local name=$1 body=$2 tree
    case_names+=("$name")
    for tree in old new; do
        mkdir -p "$work/$tree/.check_identical/cases"
        cat >"$work/$tree/.check_identical/cases/$name.ini" <<EOF2
[experiment]
name = $name
seed = 3
max_iterations = 40
max_epochs = 0
max_time = 5s
eval_every = 10
eval_train_samples = 500
$body
EOF2
    done
}

coverage_cases() {
    local m cd=$work/cases
    mkdir -p "$cd"
    # crash and rejoin, a slowdown, a link slowed and a link down (vertex 8
    # is the star's switch: hosts first)
    cat >"$cd/faults.csv" <<'EOF2'
time,event,target,value
0.05s,crash,3,
0.08s,slowdown,1,4
0.1s,link,0-8,1Gbps
0.12s,link,2-8,down
0.16s,link,2-8,up
0.2s,rejoin,3,
0.3s,slowdown,1,1
EOF2
    # the same with a parameter server (asgd): host 8 is the server, 9 the switch
    sed -e 's/0-8/0-9/' -e 's/2-8/2-9/' "$cd/faults.csv" >"$cd/faults_ps.csv"
    local base="[workers]
count = 8
compute = constant(2ms)
stragglers = 1
straggler_slowdown = 3
transient_prob = 0.1
transient_slowdown = 4
[network]
topology = star
latency = 5us
bandwidth = 1Gbps
[topology]
graph = ring
[workload]
model = softmax
dataset = blobs(10, 20, 4000)
partition = iid
sim_params = 100000"
    for m in allreduce_sgd asgd dpsgd dsgd_atc dmsgd decentlam momentum_consensus \
        consensus_control ad_psgd swarm_sgd local_sgd post_local_sgd adaptive_local_sgd \
        slowmo overlap_local_sgd onebit_adam onebit_lamb gravac hierarchical_local_sgd; do
        add_case "m_$m" "$base
[algorithm]
name = $m
$([[ $m == post_local_sgd ]] && echo 'switch_epoch = 0.2')
lr = 0.05
momentum = 0.9
batch = 16"
        add_case "f_$m" "$base
[algorithm]
name = $m
$([[ $m == post_local_sgd ]] && echo 'switch_epoch = 0.2')
lr = 0.05
momentum = 0.9
batch = 16
[faults]
schedule = $cd/$([[ $m == asgd ]] && echo faults_ps || echo faults).csv
sync_timeout = 20ms"
        add_case "r_$m" "$base
[algorithm]
name = $m
$([[ $m == post_local_sgd ]] && echo 'switch_epoch = 0.2')
lr = 0.05
momentum = 0
batch = 16
[faults]
mtbf = exponential(300ms)
downtime = constant(40ms)
sync_timeout = 20ms"
    done
    # method variants: buckets, compression, hierarchy, CHOCO, slowmo over
    # dpsgd, optimizers
    add_case v_bucket "$base
[algorithm]
name = allreduce_sgd
lr = 0.05
batch = 16
bucket = 256kB"
    add_case v_bucket_crash "$base
[algorithm]
name = allreduce_sgd
lr = 0.05
batch = 16
bucket = 256kB
[faults]
schedule = $cd/faults.csv
sync_timeout = 20ms"
    add_case v_topk_ef "$base
[algorithm]
name = allreduce_sgd
lr = 0.05
momentum = 0.9
batch = 16
compressor = topk(0.05)"
    add_case v_choco "$base
[algorithm]
name = dpsgd
lr = 0.05
batch = 16
compressor = qsgd(16)"
    add_case v_choco_crash "$base
[algorithm]
name = dpsgd
lr = 0.05
batch = 16
compressor = qsgd(16)
[faults]
schedule = $cd/faults.csv
sync_timeout = 20ms"
    add_case v_slowmo_dpsgd "$base
[algorithm]
name = slowmo
base = dpsgd
lr = 0.05
batch = 16"
    add_case v_slowmo_dpsgd_crash "$base
[algorithm]
name = slowmo
base = dpsgd
lr = 0.05
batch = 16
[faults]
schedule = $cd/faults.csv
sync_timeout = 20ms"
    add_case v_adam "$base
[algorithm]
name = local_sgd
optimizer = adam
lr = 0.005
batch = 16"
    add_case v_lamb "$base
[algorithm]
name = allreduce_sgd
optimizer = lamb
lr = 0.005
batch = 16"
    local hier="${base/topology = star/topology = hierarchical(2, 4)
collective = hierarchical}"
    add_case v_hier "$hier
[algorithm]
name = allreduce_sgd
lr = 0.05
batch = 16"
    add_case v_hier_local "$hier
[algorithm]
name = local_sgd
lr = 0.05
batch = 16"
    # every model kind
    local nobase="[workers]
count = 8
compute = model
[network]
topology = star
[algorithm]
name = allreduce_sgd
lr = 0.05
batch = 16"
    add_case d_linreg "$nobase
[workload]
model = linreg
dataset = synthetic_linear(20, 4000)"
    add_case d_logreg "$nobase
[workload]
model = logreg
dataset = blobs(2, 20, 4000)"
    add_case d_softmax "$nobase
[workload]
model = softmax
dataset = fashion_mnist"
    add_case d_mlp "$nobase
[workload]
model = mlp(32)
dataset = blobs(10, 20, 4000)"
    add_case d_cnn "$nobase
[workload]
model = cnn(4, 8)
dataset = fashion_mnist"
    add_case d_charlm "$nobase
[workload]
model = charlm(4, 8, 32)
dataset = text(/usr/share/games/fortunes/fortunes, 4)"
}

# ---- the experiments -------------------------------------------------------

mapfile -t old_files < <(cd "$work/old" && find experiments -maxdepth 1 -type f -name '*.ini' 2>/dev/null | sort)
mapfile -t new_files < <(cd "$work/new" && find experiments -maxdepth 1 -type f -name '*.ini' 2>/dev/null | sort)
((${#old_files[@]})) || die "no experiments/*.ini in $old_label"

same=0 differ=0

# check_file REL: runs REL (relative to each tree's root) in both trees and
# compares the dumps; counts it in same or differ.
check_file() {
    local f=$1 base name sets capnote d tree note rows mrows rc
    base=${f##*/} name=$(basename "$f" .ini)
    sets=()
    capnote="as written"
    if ((!full)); then
        caps_for "$work/old/$f"
        sets=(--set "experiment.max_iterations=$cap_iter" --set "experiment.max_epochs=$cap_epochs")
        capnote="max_iterations=$cap_iter max_epochs=$cap_epochs"
        if [[ -n $cap_eval ]]; then
            sets+=(--set "experiment.eval_every=$cap_eval")
            capnote+=" eval_every=$cap_eval"
        fi
    fi
    log "running $base ($capnote)"
    run_one old "$old_exe" "$f"
    run_one new "$new_exe" "$f"
    d=$work/dumps
    mkdir -p "$d"
    for tree in old new; do
        dump "$tree" "$name" exact >"$d/$name.$tree.exact"
    done
    note=
    cmp -s "$work/old/$f" "$work/new/$f" || note=" (note: the experiment file differs between the trees)"
    if cmp -s "$d/$name.old.exact" "$d/$name.new.exact"; then
        rows=$(grep -c -v -e '^== ' "$d/$name.old.exact" || true)
        mrows=$(sed -n 's/^== metrics (\([0-9]*\) rows).*/\1/p' "$d/$name.old.exact")
        rc=$(cat "$work/old/.check_identical/$name.rc")
        if [[ $rc != 0 ]]; then
            note+=" (both failed the same way, exit status $rc)"
        fi
        echo "same  $base (${mrows:-0} metric rows, $rows rows in all)$note"
        same=$((same + 1))
    else
        echo "DIFF  $base$note"
        for tree in old new; do
            dump "$tree" "$name" show >"$d/$name.$tree.show"
        done
        if cmp -s "$d/$name.old.show" "$d/$name.new.show"; then
            # the values differ beyond 17 digits: show the bits
            diff -u --label "OLD $base" --label "NEW $base" "$d/$name.old.exact" "$d/$name.new.exact" |
                head -n 20 | sed 's/^/    /' || true
        else
            diff -u --label "OLD $base" --label "NEW $base" "$d/$name.old.show" "$d/$name.new.show" |
                head -n 20 | sed 's/^/    /' || true
        fi
        differ=$((differ + 1))
    fi
}

if ((do_files)); then
    for f in "${new_files[@]}"; do
        if [[ ! -f $work/old/$f ]]; then
            echo "ONLY  ${f##*/}: only in NEW ($new_label)"
            differ=$((differ + 1))
        fi
    done
    for f in "${old_files[@]}"; do
        if [[ ! -f $work/new/$f ]]; then
            echo "ONLY  ${f##*/}: only in OLD ($old_label)"
            differ=$((differ + 1))
            continue
        fi
        check_file "$f"
    done
fi

if ((do_cases)); then
    coverage_cases
    for c in "${case_names[@]}"; do
        check_file ".check_identical/cases/$c.ini"
    done
fi

echo "$same experiments and cases identical, $differ differ  (OLD $old_label, NEW $new_label; $((SECONDS - start)) s)"
if ((differ)); then exit 1; fi
exit 0
