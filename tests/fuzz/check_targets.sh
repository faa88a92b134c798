#!/bin/sh
# Fails when tests/fuzz/targets.txt and the fuzz_<name>.c files disagree:
# a target file missing from the list would never be built or run.
#   check_targets.sh TESTS_FUZZ_DIR
dir=$1
listed=$(sed -e 's/#.*//' "$dir/targets.txt" | awk 'NF {print $1}' | sort)
files=$(cd "$dir" && ls fuzz_*.c | sed -e 's/^fuzz_//' -e 's/\.c$//' | grep -vx util | sort)
status=0
for f in $files; do
  echo "$listed" | grep -qx "$f" || { echo "tests/fuzz/fuzz_$f.c is not in tests/fuzz/targets.txt"; status=1; }
done
for t in $listed; do
  [ -f "$dir/fuzz_$t.c" ] || { echo "tests/fuzz/targets.txt names '$t' but tests/fuzz/fuzz_$t.c is missing"; status=1; }
done
[ -n "$listed" ] || { echo "tests/fuzz/targets.txt lists no target"; status=1; }
[ $status = 0 ] && echo "ok - fuzz targets listed: $(echo $listed)"
exit $status
