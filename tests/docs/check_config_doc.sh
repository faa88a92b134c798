#!/bin/sh
# docs/configuration.md is generated from `dtsim list keys` by
# tools/gen_config_doc.sh. Regenerates it into a temporary file and fails,
# showing the difference, when the committed page is stale.
#   check_config_doc.sh DTSIM SOURCE_ROOT
set -u
dtsim=$1
root=$2
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
if ! "$root/tools/gen_config_doc.sh" "$dtsim" "$tmp"; then
  echo "tools/gen_config_doc.sh failed"
  exit 1
fi
if ! diff -u "$root/docs/configuration.md" "$tmp"; then
  echo "docs/configuration.md is stale: run tools/gen_config_doc.sh and commit the result"
  exit 1
fi
echo "docs/configuration.md is up to date"
