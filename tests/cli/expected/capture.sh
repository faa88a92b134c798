#!/usr/bin/env bash
# Writes NAME.out and NAME.err (standard output and error) of every case in
# `cases` as the given dtsim binary prints them, each run in an empty
# folder; test_usage.c compares the built binary against them. Rerun only
# when a change of the command line's output is intended:
#   tests/cli/expected/capture.sh build/dtsim
set -euo pipefail
exe=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while IFS=$'\t' read -r name status args; do
  case $name in ''|'#'*) continue ;; esac
  rm -rf "$tmp/run" && mkdir "$tmp/run"
  set +e
  # shellcheck disable=SC2086  # the arguments split at spaces, as in the test
  (cd "$tmp/run" && "$exe" $args >"$here/$name.out" 2>"$here/$name.err")
  rc=$?
  set -e
  [ "$rc" = "$status" ] || echo "capture.sh: $name exits $rc, cases says $status" >&2
done <"$here/cases"
