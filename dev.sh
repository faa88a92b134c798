#!/usr/bin/env bash
# dtsim developer entry point: installs what is missing (Debian packages, as
# root), builds with meson, and runs one of:
#   ./dev.sh quickstart   build dtsim, run experiments/quickstart.ini -> results.db
#   ./dev.sh build [all | TARGET...]
#                         build dtsim only (build/dtsim); `all`: everything,
#                         tests and benchmarks; or the meson targets named
#   ./dev.sh check        the inner loop: an incremental build of the default
#                         configuration (build/) and its tests, the C suites
#                         and the fuzz replays (not the suite `nosan`, whose
#                         tests check scripts, docs and the tree); no
#                         sanitizers; ends with "N passed, N failed"
#   ./dev.sh test         the full gate (.ci/run): the default build with
#                         -Werror and every test; an AddressSanitizer +
#                         UndefinedBehaviorSanitizer build running what a
#                         sanitizer can check (all but the suite `nosan`);
#                         the thread-determinism configurations under
#                         ThreadSanitizer (tsan_stage); each libFuzzer target
#                         for a fixed number of runs (-seed=1: deterministic;
#                         tests/fuzz/targets.txt; two at a time; one test per
#                         target); ends with "N passed, N failed"
#   ./dev.sh bench        build and run the benchmarks that bench/meson.build
#                         lists (meson test --benchmark)
#   ./dev.sh fuzz [SECS [TARGET...]]  build the libFuzzer targets with clang
#                         (build-fuzz), run each (or those named) for SECS
#                         seconds (default 60); crashes land in
#                         tests/fuzz/crashes/<target>/
set -euo pipefail
cd "$(dirname "$0")"

# What the quick start needs (docs/dependencies.md).
PACKAGES=(build-essential meson ninja-build pkg-config
          libgsl-dev libopenblas-dev libigraph-dev libsqlite3-dev sqlite3
          libcriterion-dev libinih-dev zlib1g-dev dataset-fashion-mnist fortunes
          libplplot-dev plplot-driver-cairo fonts-dejavu-core
          libopenmpi-dev openmpi-bin
          python3-pandas python3-matplotlib)

# `./dev.sh fuzz` and the fuzz stage of `./dev.sh test` need these: clang
# with libFuzzer and its sanitizers.
FUZZ_PACKAGES=(clang libclang-rt-dev)
# `./dev.sh test` needs these too (never the quick start).
TEST_PACKAGES=("${FUZZ_PACKAGES[@]}" python3-torch)

# The fuzz targets and the runs of each in `./dev.sh test`: the one list,
# tests/fuzz/targets.txt (also read by tests/fuzz/meson.build).
FUZZ_TARGETS=()
declare -A FUZZ_CI_RUNS=()
while read -r name runs _; do
  case "$name" in ''|'#'*) continue ;; esac
  FUZZ_TARGETS+=("$name")
  FUZZ_CI_RUNS[$name]=$runs
done <tests/fuzz/targets.txt

# Stages that run one process per core: the fuzz runs.
JOBS=$(nproc 2>/dev/null || echo 2)

# install_deps [extra packages...]
install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "dev.sh: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

# quietly COMMAND...: runs it with its output kept aside; when it fails,
# prints that output (the compiler's errors, without ninja's progress
# lines) on stderr and returns its status.
quietly() {
  local log rc=0
  log=$(mktemp)
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    grep -vE '^\[[0-9]+/[0-9]+\] ' "$log" >&2 || true
    echo "dev.sh: '$*' failed (exit $rc)" >&2
  fi
  rm -f "$log"
  return "$rc"
}

# build DIR [meson options...] [-- TARGET...]: configures DIR with the
# options when it has no build.ninja yet, then builds the TARGETs (none:
# everything).
build() {
  local dir=$1 opts=() targets=()
  shift
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
  [ $# -eq 0 ] || { shift; targets=("$@"); }
  if [ ! -f "$dir/build.ninja" ]; then
    quietly meson setup "$dir" "${opts[@]}"
  fi
  # meson compile names targets by the last configuration: regenerate first
  [ ${#targets[@]} -eq 0 ] || quietly ninja -C "$dir" build.ninja
  quietly meson compile -C "$dir" "${targets[@]}"
}

# default_build [TARGET...]: the default configuration in build/, always
# with -Werror (the gate's -Werror build is this one, tested); a build/
# set up without it is switched once (a full rebuild).
default_build() {
  if [ -f build/build.ninja ] &&
     ! grep -q '{"name": "werror", "value": true' build/meson-info/intro-buildoptions.json; then
    quietly meson configure build -Dwerror=true
  fi
  build build -Dwerror=true -- "$@"
}

# The time of each stage: stage_begin, then stage_end LABEL prints
# "(LABEL: W s, C s of CPU)", W the wall-clock seconds since stage_begin
# and C the CPU seconds (user + system) of the processes finished since,
# which do not depend on the machine's load as W does.
cpu_file=$(mktemp)
trap 'rm -f "$cpu_file"' EXIT
cpu_mark() {
  times >"$cpu_file" # the builtin, in this shell: the children's totals are line 2
  cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }
                       printf "%d", n }' "$cpu_file")
}
stage_begin() {
  cpu_mark
  stage_t0=$SECONDS stage_c0=$cpu
}
stage_end() {
  cpu_mark
  echo "($1: $((SECONDS - stage_t0)) s, $((cpu - stage_c0)) s of CPU)"
}

# runs meson test in DIR, appends its Ok/Fail counts to the totals
passed=0
failed=0
run_tests() {
  local dir=$1 label=$2 log
  echo "== tests: $label ($dir)"
  log=$(mktemp)
  local rc=0
  meson test -C "$dir" --print-errorlogs "${@:3}" 2>&1 | tee "$log" | grep -vE '^\s*$' | sed -n '/^ *[0-9]*\/[0-9]* /p;/^Ok:/,$p' || true
  local ok fail
  ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  fail=$(awk '/^(Fail|Unexpected Pass|Timeout):/{s+=$NF} END{print s+0}' "$log")
  [ -n "$ok" ] || { ok=0; fail=$((fail + 1)); echo "meson test did not run in $dir"; }
  passed=$((passed + ok))
  failed=$((failed + fail))
  rm -f "$log"
}

# Configures and builds the libFuzzer targets (clang, ASan + UBSan) in
# build-fuzz: fuzz_build TARGET...
fuzz_build() {
  if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang quietly meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
      -Db_lundef=false
  fi
  quietly ninja -C build-fuzz build.ninja # picks up new targets
  quietly meson compile -C build-fuzz "${@/#/fuzz_}"
}

# fuzz_run TARGET ARTIFACT_DIR LOG [libFuzzer options...]: runs one target on
# a fresh scratch corpus (first directory, where libFuzzer writes) and the
# seeds of tests/fuzz/corpus/TARGET; returns libFuzzer's exit status.
fuzz_run() {
  local t=$1 art=$2 log=$3 scratch=$4; shift 4
  mkdir -p "$scratch" "$art"
  local rc=0
  OPENBLAS_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-fuzz/tests/fuzz/fuzz_$t" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
    -dict=tests/fuzz/dtsim.dict -artifact_prefix="$art/" "$@" "$scratch" \
    "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  return $rc
}

# ThreadSanitizer stage of `./dev.sh test`. Criterion's fork-based runner
# aborts under TSan, so the thread-determinism configurations run through
# the command line: dtsim built with -fsanitize=thread in build-tsan, each
# line of tests/tsan/configs.txt (overrides of tests/tsan/threads.ini) at
# 2 and 4 threads; a run fails on any report or a non-zero exit. Each run
# counts as one test in the totals.
tsan_stage() {
  echo "== ThreadSanitizer: tests/tsan/configs.txt at 2 and 4 threads (build-tsan)"
  if { [ -f build-tsan/build.ninja ] ||
       meson setup build-tsan -Db_sanitize=thread -Db_lundef=false >/dev/null; } &&
     meson compile -C build-tsan dtsim >/dev/null; then :; else
    echo "tsan: building build-tsan/dtsim FAILED"
    failed=$((failed + 1))
    return 0
  fi
  # TSan needs a low-entropy address space on some kernels: no ASLR
  local norand=()
  setarch "$(uname -m)" -R true 2>/dev/null && norand=(setarch "$(uname -m)" -R)
  local dir line n=0 ok=0 bad=0
  dir=$(mktemp -d)
  while IFS= read -r line; do
    case "$line" in ''|'#'*) continue ;; esac
    n=$((n + 1))
    local sets=() s t
    for s in $line; do sets+=(--set "$s"); done
    for t in 2 4; do
      local rc=0 log="$dir/run-$n-$t.log"
      OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
        "${norand[@]}" build-tsan/dtsim run tests/tsan/threads.ini --db "$dir/r.db" \
        --threads "$t" --quiet "${sets[@]}" >"$log" 2>&1 || rc=$?
      if [ "$rc" -eq 0 ] && ! grep -q ThreadSanitizer "$log"; then
        ok=$((ok + 1))
      else
        bad=$((bad + 1))
        echo "tsan: FAILED (exit $rc) at $t threads: $line"
        grep -E 'WARNING: ThreadSanitizer|SUMMARY|dtsim:' "$log" | head -5 || true
      fi
    done
  done < tests/tsan/configs.txt
  rm -rf "$dir"
  echo "tsan: $ok runs without a report, $bad failed ($n configurations x 2 thread counts)"
  passed=$((passed + ok))
  failed=$((failed + bad))
}

# fuzz_ci TARGET: one libFuzzer target of `./dev.sh test`'s fuzz stage, its
# runs from seed 1 on a fresh scratch corpus (deterministic); prints one
# "fuzz TARGET: ok" or "fuzz TARGET: FAILED" line (and how to reproduce).
fuzz_ci() {
  local t=$1 runs=${FUZZ_CI_RUNS[$1]} art=build-fuzz/ci-crashes/$1 start=$SECONDS rc=0
  rm -rf "build-fuzz/ci-corpus/$t" "$art"
  fuzz_run "$t" "$art" "build-fuzz/ci-fuzz-$t.log" "build-fuzz/ci-corpus/$t" \
    -seed=1 -runs="$runs" || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "fuzz $t: ok ($runs runs, seed 1, $((SECONDS - start)) s)"
    return 0
  fi
  echo "fuzz $t: FAILED (libFuzzer exit $rc after $((SECONDS - start)) s), log build-fuzz/ci-fuzz-$t.log"
  grep -E '^(==[0-9]+== ?ERROR|SUMMARY|.*runtime error)' "build-fuzz/ci-fuzz-$t.log" | head -5 || true
  local f
  for f in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
    [ -e "$f" ] || continue
    echo "  input: $f"
    echo "  reproduce: build-fuzz/tests/fuzz/fuzz_$t $f"
    echo "  keep as a regression test once fixed: cp $f tests/fuzz/crashes/$t/"
  done
  return 1
}

# Fuzz stage of `./dev.sh test`: every target of tests/fuzz/targets.txt,
# JOBS at a time (each libFuzzer run is one process on one core); one test
# per target in the totals.
fuzz_stage() {
  local t n=0
  echo "== fuzz: ${#FUZZ_TARGETS[@]} libFuzzer targets, $JOBS at a time (build-fuzz, clang)"
  if ! fuzz_build "${FUZZ_TARGETS[@]}"; then
    echo "fuzz: building the targets in build-fuzz FAILED"
    failed=$((failed + ${#FUZZ_TARGETS[@]}))
    return 0
  fi
  for t in "${FUZZ_TARGETS[@]}"; do
    if [ "$n" -ge "$JOBS" ]; then
      wait -n || true
      n=$((n - 1))
    fi
    fuzz_ci "$t" >"build-fuzz/ci-$t.result" 2>&1 &
    n=$((n + 1))
  done
  wait || true
  for t in "${FUZZ_TARGETS[@]}"; do
    cat "build-fuzz/ci-$t.result"
    if grep -q "^fuzz $t: ok" "build-fuzz/ci-$t.result"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
    fi
  done
}

cmd=${1:-}
case "$cmd" in
  quickstart)
    install_deps
    default_build dtsim
    ./build/dtsim run experiments/quickstart.ini "${@:2}"
    ;;
  build)
    install_deps
    if [ $# -le 1 ]; then
      default_build dtsim
    elif [ "$2" = all ]; then
      default_build
    else
      default_build "${@:2}"
    fi
    ;;
  check)
    install_deps
    stage_begin
    if default_build test_programs; then
      run_tests build "default build, all but the suite nosan" --no-suite nosan \
        --num-processes "$JOBS"
    else
      failed=$((failed + 1))
    fi
    stage_end "check"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    ;;
  test)
    install_deps "${TEST_PACKAGES[@]}"
    cpu_mark
    gate_t0=$SECONDS gate_c0=$cpu
    stage_begin
    if default_build; then
      run_tests build "default build (-Werror)" --num-processes "$JOBS"
    else
      echo "build (-Werror): FAILED"
      failed=$((failed + 1))
    fi
    stage_end "default build and tests"
    # allocator_may_return_null: an allocation too large for the machine
    # returns NULL as glibc's malloc does, so the error path under test
    # (an oversized input is exit 2 with a message) runs instead of ASan
    # aborting in its allocator. The suite nosan checks scripts, docs and
    # the tree, nothing a sanitizer sees: it runs in the default build only.
    stage_begin
    if build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
         -- test_programs; then
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_tests build-asan "AddressSanitizer + UndefinedBehaviorSanitizer" --no-suite nosan \
        --num-processes "$JOBS"
    else
      echo "build-asan: FAILED"
      failed=$((failed + 1))
    fi
    stage_end "ASan + UBSan build and tests"
    stage_begin
    tsan_stage
    stage_end "ThreadSanitizer build and runs"
    stage_begin
    fuzz_stage
    stage_end "fuzz build and runs"
    cpu_mark
    echo "(dev.sh test: $((SECONDS - gate_t0)) s, $((cpu - gate_c0)) s of CPU)"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    ;;
  bench)
    install_deps
    default_build
    # the list is bench/meson.build's; one at a time, each one's figures shown
    meson test -C build --benchmark --num-processes 1 --verbose
    ;;
  fuzz)
    secs=${2:-60}
    [ $# -le 2 ] || FUZZ_TARGETS=("${@:3}")
    install_deps "${FUZZ_PACKAGES[@]}"
    fuzz_build "${FUZZ_TARGETS[@]}"
    # New corpus entries go to a scratch directory (first corpus argument),
    # never into tests/fuzz/corpus; crash inputs go to tests/fuzz/crashes.
    crashed=()
    for t in "${FUZZ_TARGETS[@]}"; do
      echo "== fuzz $t (${secs}s)"
      rc=0
      fuzz_run "$t" "tests/fuzz/crashes/$t" "build-fuzz/fuzz-$t.log" \
        "build-fuzz/fuzz-corpus/$t" -max_total_time="$secs" || rc=$?
      grep -E '^stat::(number_of_executed_units|peak_rss_mb|slowest_unit_time_sec)' \
        "build-fuzz/fuzz-$t.log" || true
      # Slow inputs (> 10 s) are not failures: kept out of the replay tests.
      for f in "tests/fuzz/crashes/$t"/slow-unit-*; do
        [ -e "$f" ] || continue
        mkdir -p "build-fuzz/slow-units/$t"
        mv "$f" "build-fuzz/slow-units/$t/"
        echo "fuzz $t: slow input kept in build-fuzz/slow-units/$t/$(basename "$f")"
      done
      if [ "$rc" -ne 0 ]; then
        crashed+=("$t")
        echo "fuzz $t: FAILED (exit $rc), see build-fuzz/fuzz-$t.log"
        grep -E '^(==[0-9]+== ?ERROR|SUMMARY|artifact_prefix|Test unit written)' "build-fuzz/fuzz-$t.log" || true
      fi
    done
    if [ ${#crashed[@]} -gt 0 ]; then
      echo "crashes in: ${crashed[*]} (inputs under tests/fuzz/crashes/)"
      exit 1
    fi
    echo "no crashes"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
    exit 2
    ;;
esac
