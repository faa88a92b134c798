#!/bin/sh
# Fails when a Criterion suite in the executable is not registered in
# tests/meson.build (it would never run under meson test).
exe=$1; shift
listed=$("$exe" --list 2>&1 | sed -n 's/^\([A-Za-z0-9_]*\): [0-9]* test.*/\1/p')
status=0
for s in $listed; do
  found=0
  for r in "$@"; do [ "$s" = "$r" ] && found=1; done
  if [ $found = 0 ]; then echo "suite '$s' of $exe is not in tests/meson.build"; status=1; fi
done
echo "ok - suites registered: $*"
exit $status
