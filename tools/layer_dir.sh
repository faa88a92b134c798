#!/bin/sh
# Makes the include directory of one layer: DIR gets one symbolic link per
# source folder the layer may include ("sim", "config", ...), and nothing
# else, so that an #include of a higher layer's header fails to compile.
# Usage: layer_dir.sh DIR SOURCE_ROOT FOLDER...   (run by meson at setup)
set -eu
dir=$1 src=$2
shift 2
rm -rf "$dir"
mkdir -p "$dir"
for f in "$@"; do
    mkdir -p "$(dirname "$dir/$f")"
    ln -s "$src/$f" "$dir/$f"
done
