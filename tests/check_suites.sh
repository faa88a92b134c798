#!/bin/sh
# The test suites are listed once, in `areas` of tests/meson.build; this
# fails when that list and the tree disagree, so that no suite silently
# stops running.
#   check_suites.sh suites EXE AREA_DIR SUITE...
#     every Criterion suite of EXE is listed, every listed suite has tests
#     in EXE, and every AREA_DIR/test_<suite>.c is listed;
#   check_suites.sh areas TESTS_DIR AREA...
#     every folder of TESTS_DIR holding a test_*.c file is an area.
mode=$1; shift
status=0
bad() { echo "$1"; status=1; }
has() { w=$1; shift; for x in "$@"; do [ "$x" = "$w" ] && return 0; done; return 1; }
case "$mode" in
  suites)
    exe=$1 dir=$2; shift 2
    area=$(basename "$dir")
    in_exe=$("$exe" --list 2>&1 | sed -n 's/^\([A-Za-z0-9_]*\): [0-9]* test.*/\1/p')
    [ -n "$in_exe" ] || bad "$exe --list shows no suite"
    for s in $in_exe; do
      has "$s" "$@" || bad "suite '$s' of $exe is not in tests/meson.build"
    done
    for s in "$@"; do
      has "$s" $in_exe || bad "suite '$s' of tests/meson.build has no test in $exe (tests/$area/test_$s.c names another suite?)"
    done
    for f in "$dir"/test_*.c; do
      [ -e "$f" ] || continue
      s=$(basename "$f" .c); s=${s#test_}
      has "$s" "$@" || bad "tests/$area/test_$s.c is not in tests/meson.build (area '$area')"
    done
    [ $status = 0 ] && echo "ok - $area: suites registered: $*"
    ;;
  areas)
    dir=$1; shift
    for d in "$dir"/*/; do
      a=$(basename "$d")
      ls "$d"test_*.c >/dev/null 2>&1 || continue
      has "$a" "$@" || bad "tests/$a/ holds test_*.c files but is not an area of tests/meson.build"
    done
    [ $status = 0 ] && echo "ok - areas: $*"
    ;;
  *) bad "usage: check_suites.sh suites EXE AREA_DIR SUITE... | areas TESTS_DIR AREA..." ;;
esac
exit $status
