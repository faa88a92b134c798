#!/usr/bin/env bash
# check_layer_includes.sh: every #include <...> of a layer's sources names
# a C or POSIX header or one of the external libraries meson gives that
# layer (layer_uses in the top-level meson.build), so that, say, sim/
# cannot include sqlite3.h unnoticed. The compiler's intrinsics headers
# count with the C headers. Run by meson as build/layer_includes.
# Usage: tools/check_layer_includes.sh SOURCE_ROOT LAYER=LIB,LIB... ...
set -euo pipefail
root=$1; shift

# the library a header belongs to; "libc" for the C and POSIX headers
lib_of() {
    case $1 in
    gsl/*) echo gsl ;;
    cblas.h) echo openblas ;;
    igraph.h | igraph/*) echo igraph ;;
    sqlite3.h) echo sqlite3 ;;
    ini.h) echo inih ;;
    zlib.h) echo zlib ;;
    pthread.h) echo threads ;;
    plplot/* | plplot.h) echo plplot ;;
    mpi.h) echo mpi ;;
    math.h) echo m ;;
    assert.h | complex.h | ctype.h | errno.h | fenv.h | float.h | inttypes.h | iso646.h | \
        limits.h | locale.h | setjmp.h | signal.h | stdalign.h | stdarg.h | stdatomic.h | \
        stdbool.h | stddef.h | stdint.h | stdio.h | stdlib.h | stdnoreturn.h | string.h | \
        tgmath.h | threads.h | time.h | uchar.h | wchar.h | wctype.h | \
        dirent.h | fcntl.h | glob.h | libgen.h | poll.h | sched.h | spawn.h | strings.h | \
        unistd.h | \
        sys/*) echo libc ;;
    # the compiler's own x86 intrinsics (no library): workloads/vmath.c
    immintrin.h | x86intrin.h) echo libc ;;
    *) echo unknown ;;
    esac
}

bad=0
for spec in "$@"; do
    layer=${spec%%=*}
    uses=",${spec#*=},"
    while IFS= read -r -d "" f; do
        [[ -e $f ]] || continue
        while IFS=: read -r line header; do
            lib=$(lib_of "$header")
            if [[ $lib == unknown ]]; then
                echo "${f#"$root"/}:$line: <$header>: not a C or POSIX header nor a known library (add it to tools/check_layer_includes.sh)"
                bad=1
            elif [[ $lib != libc && $uses != *",$lib,"* ]]; then
                echo "${f#"$root"/}:$line: <$header>: $layer does not link $lib (layer_uses in meson.build)"
                bad=1
            fi
        done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*<' "$f" |
            sed -E 's/^([0-9]+):[^<]*<([^>]*)>.*/\1:\2/')
    done < <(find "$root/$layer" -name '*.[ch]' -print0 | sort -z)
done
exit "$bad"
