#!/usr/bin/env bash
# bench-libs.sh - gather the shared libraries melpipe's programs need, so
# that bin/ built here runs on a machine without them (a GPU machine set
# up for Python may have no libsndfile, libsoxr, FFTW, HDF5 ...).
#
# Usage: scripts/bench-libs.sh [BINDIR [OUTDIR]]
#        (defaults: bin and build/benchlibs)
#
# Copies every library that `ldd` resolves for the programs and .so files
# in BINDIR (and BINDIR/plugins) into OUTDIR, except those every Linux has
# or that must come from the target itself: the C library family (libc,
# libm, libpthread, libdl, librt, libresolv, ld-linux), libgcc_s and
# libstdc++ (newer on the target and backward compatible), and the CUDA
# and driver libraries (libcuda, libcudart, libcufft, libnv*). Prints what
# it copied and the total size. Then, on the other machine:
#
#   scripts/bench --libs build/benchlibs      (or MELPIPE_LIBS=...)
#
# The programs must be built on a system no newer (glibc) than the target:
# Debian 12 (glibc 2.36) for Ubuntu 24.04 (2.39) works.
set -euo pipefail
cd "$(dirname "$0")/.."
bindir=${1:-bin}
out=${2:-build/benchlibs}

[ -d "$bindir" ] || { echo "bench-libs: no folder '$bindir'" >&2; exit 1; }
objs=()
for f in "$bindir"/* "$bindir"/plugins/*; do
	[ -f "$f" ] || continue
	case $(head -c 4 "$f" | od -An -c | tr -d ' ') in
	177ELF) objs+=("$f") ;;
	esac
done
if [ ${#objs[@]} -eq 0 ]; then
	echo "bench-libs: no programs in '$bindir'" >&2
	exit 1
fi

skip='^(linux-vdso|ld-linux|libc|libm|libmvec|libpthread|libdl|librt|'
skip+='libresolv|libutil|libanl|libnsl|libgcc_s|libstdc\+\+|'
skip+='libcuda|libcudart|libcufft|libcublas|libnv)[.-]'
rm -rf "$out"
mkdir -p "$out"
for o in "${objs[@]}"; do
	ldd "$o" 2>/dev/null || true
done | awk '/=>/ { print $1, $3 }' | sort -u |
while read -r name path; do
	if [[ $name =~ $skip ]]; then
		continue
	fi
	if [ "$path" = "not" ] || [ ! -e "$path" ]; then
		echo "bench-libs: '$name' not found here (needed by bin/)" >&2
		continue
	fi
	cp -L "$path" "$out/$name"
	echo "$name"
done
n=$(find "$out" -type f | wc -l)
echo "bench-libs: $n libraries, $(du -sh "$out" | cut -f1) in $out"
