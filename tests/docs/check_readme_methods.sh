#!/bin/sh
# The README's method list is generated from `dtsim list algorithms` by
# tools/gen_readme_methods.sh. Regenerates it into a temporary file and
# fails, showing the difference, when the committed README is stale.
#   check_readme_methods.sh DTSIM SOURCE_ROOT
set -u
dtsim=$1
root=$2
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
if ! "$root/tools/gen_readme_methods.sh" "$dtsim" "$root/README.md" "$tmp"; then
  echo "tools/gen_readme_methods.sh failed"
  exit 1
fi
if ! diff -u "$root/README.md" "$tmp"; then
  echo "README.md's method list is stale: run tools/gen_readme_methods.sh and commit the result"
  exit 1
fi
echo "README.md's method list is up to date"
