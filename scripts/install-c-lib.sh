#!/usr/bin/env bash
# Builds the C library (crates/ffi) with the `dist` profile and installs it under a prefix:
#
#   PREFIX/include/rangelock.h, rangelock.hpp
#   PREFIX/lib/librangelock.so.X.Y.Z   (soname librangelock.so.S; S is 0.Y while X is 0,
#                                      X after 1.0), with the symlinks .so.S and .so
#   PREFIX/lib/librangelock.a          (only the rl_* symbols are global)
#   PREFIX/lib/pkgconfig/rangelock.pc
#
# Usage: scripts/install-c-lib.sh --prefix DIR [--libdir DIR] [--includedir DIR]
# DESTDIR (environment) stages the install under DESTDIR/PREFIX; the paths written into
# rangelock.pc stay PREFIX. CARGO_TARGET_DIR and CARGO are honoured. Linux with GNU
# binutils (ld, objcopy, nm, ar, readelf) only. Why a script and not cargo-c:
# crates/ffi/README.md.
#
# A program built with `pkg-config --libs rangelock` finds the shared library when it
# starts: for a libdir the dynamic loader does not search by itself (its "system search
# path", e.g. /usr/lib and /usr/lib/x86_64-linux-gnu; `ld.so --help` lists it), Libs in
# rangelock.pc carries `-Wl,-rpath,${libdir}` (so $HOME/.local or /usr/local need neither
# LD_LIBRARY_PATH nor ldconfig); for a system libdir it does not, as distributions want.
set -euo pipefail

usage() {
    echo "usage: $0 --prefix DIR [--libdir DIR] [--includedir DIR]" >&2
    exit 2
}

prefix="" libdir="" includedir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || usage; prefix="$2"; shift 2 ;;
        --prefix=*) prefix="${1#*=}"; shift ;;
        --libdir) [ $# -ge 2 ] || usage; libdir="$2"; shift 2 ;;
        --libdir=*) libdir="${1#*=}"; shift ;;
        --includedir) [ $# -ge 2 ] || usage; includedir="$2"; shift 2 ;;
        --includedir=*) includedir="${1#*=}"; shift ;;
        -h|--help) usage ;;
        *) echo "unknown argument: $1" >&2; usage ;;
    esac
done
[ -n "$prefix" ] || usage
case "$prefix" in
    /*) ;;
    *) prefix="$(pwd)/$prefix" ;;
esac
libdir="${libdir:-$prefix/lib}"
includedir="${includedir:-$prefix/include}"
destdir="${DESTDIR:-}"

if [ "$(uname -s)" != Linux ]; then
    echo "$0: only Linux is supported (GNU ld, objcopy, soname)" >&2
    exit 1
fi
for tool in ld objcopy nm ar readelf; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "$0: \`$tool\` not found; install GNU binutils (apt-get install binutils)" >&2
        exit 1
    fi
done

# The repository of the script itself, wherever it is called from (through a symlink too).
cd "$(dirname "$(readlink -f "$0")")/.."
cargo="${CARGO:-cargo}"

# The version of crates/ffi: `cargo pkgid` prints e.g. path+file:///…/crates/ffi#rangelock-ffi@0.1.0.
pkgid="$("$cargo" pkgid -p rangelock-ffi)"
version="${pkgid##*[#@]}"
IFS=. read -r major minor patch <<<"$version"
if [ -z "$major" ] || [ -z "$minor" ] || [ -z "$patch" ]; then
    echo "$0: cannot read the version from \`cargo pkgid\`: $pkgid" >&2
    exit 1
fi
patch="${patch%%[-+]*}"
# Semver: before 1.0 a minor release may break the API, so the soname carries it.
if [ "$major" = 0 ]; then
    soversion="0.$minor"
else
    soversion="$major"
fi
soname="librangelock.so.$soversion"

target_dir="${CARGO_TARGET_DIR:-}"
if [ -z "$target_dir" ]; then
    target_dir="$("$cargo" metadata --format-version 1 --no-deps |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
fi
out="$target_dir/dist"
work="$target_dir/c-lib"
rm -rf "$work"
mkdir -p "$work"

# Only the staticlib and the cdylib (no rlib); the soname goes to the shared library only.
# --print native-static-libs names the system libraries the archive needs (Libs.private);
# cargo replays the note when the build is fresh.
"$cargo" rustc -p rangelock-ffi --profile dist --crate-type staticlib,cdylib -- \
    --print native-static-libs -C "link-arg=-Wl,-soname,$soname" 2>&1 | tee "$work/build.log"
native_libs="$(sed -n 's/.*native-static-libs: //p' "$work/build.log" | tail -n 1)"
if [ -z "$native_libs" ]; then
    echo "$0: rustc did not print native-static-libs (see $work/build.log)" >&2
    exit 1
fi

# The static library: one relocatable object linked from the archive, starting from the
# rl_* functions (-u) and dropping unreachable sections, in which every other global symbol
# (Rust's std, compiler_builtins, rust_eh_personality) is made local, and without debug
# info or unneeded local symbols. Two such libraries link into one program without clashes.
nm -g --defined-only "$out/librangelock_ffi.a" 2>/dev/null |
    awk '$2 == "T" && $3 ~ /^rl_/ { print $3 }' | sort -u >"$work/api.txt"
if [ ! -s "$work/api.txt" ]; then
    echo "$0: no rl_* functions in $out/librangelock_ffi.a" >&2
    exit 1
fi
roots=()
while read -r symbol; do
    roots+=(-u "$symbol")
done <"$work/api.txt"
ld -r --gc-sections "${roots[@]}" -o "$work/rangelock.o" "$out/librangelock_ffi.a"
objcopy --keep-global-symbols="$work/api.txt" --strip-debug --strip-unneeded \
    "$work/rangelock.o" "$work/rangelock-local.o"
rm -f "$work/librangelock.a"
ar crs "$work/librangelock.a" "$work/rangelock-local.o"

# The shared library exports only the rl_* functions already: rustc links a cdylib with a
# version script that keeps exactly the #[no_mangle] extern "C" functions global
# (crates/ffi/tests/install.rs checks it on the installed file).
install -d "$destdir$includedir" "$destdir$libdir/pkgconfig"
install -m 644 crates/ffi/include/rangelock.h crates/ffi/include/rangelock.hpp \
    "$destdir$includedir/"
install -m 644 "$work/librangelock.a" "$destdir$libdir/librangelock.a"
install -m 755 "$out/librangelock_ffi.so" "$destdir$libdir/librangelock.so.$major.$minor.$patch"
ln -sfn "librangelock.so.$major.$minor.$patch" "$destdir$libdir/$soname"
ln -sfn "$soname" "$destdir$libdir/librangelock.so"

# Paths under the prefix are written relative to it, so the .pc file stays relocatable by
# pkg-config's --define-prefix.
rel() {
    case "$1" in
        "$prefix"/*) echo "\${prefix}/${1#"$prefix"/}" ;;
        *) echo "$1" ;;
    esac
}
# The directories the dynamic loader searches without being told: its own list (glibc
# 2.33 and later print it), else the usual ones.
system_libdirs() {
    local loader
    loader="$(readelf -l /bin/sh 2>/dev/null |
        sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')"
    if [ -n "$loader" ] && "$loader" --help 2>/dev/null |
        sed -n 's/^ *\(\/[^ ]*\) (system search path)$/\1/p' | grep .; then
        return
    fi
    printf '%s\n' /lib /usr/lib /lib64 /usr/lib64
}
rpath="-Wl,-rpath,\${libdir} "
system_dirs="$(system_libdirs)"
if grep -qxF "${libdir%/}" <<<"$system_dirs"; then
    rpath=""
fi

cat >"$destdir$libdir/pkgconfig/rangelock.pc" <<EOF
prefix=$prefix
libdir=$(rel "$libdir")
includedir=$(rel "$includedir")

Name: rangelock
Description: In-process range lock (C API; C++17 RAII wrapper in rangelock.hpp)
Version: $version
Libs: -L\${libdir} $rpath-lrangelock
Libs.private: $native_libs
Cflags: -I\${includedir}
EOF

echo "installed rangelock $version (soname $soname) under $destdir$prefix:"
for file in "$includedir/rangelock.h" "$includedir/rangelock.hpp" \
    "$libdir/librangelock.so.$major.$minor.$patch" "$libdir/$soname" \
    "$libdir/librangelock.so" "$libdir/librangelock.a" "$libdir/pkgconfig/rangelock.pc"; do
    echo "  $file"
done
