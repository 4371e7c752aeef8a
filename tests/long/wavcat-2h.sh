#!/bin/sh
# wavcat-2h.sh - a clip of two hours through wavcat, in pieces.
#
#   tests/long/wavcat-2h.sh [RSS_LIMIT_KIB]
#
# Makes a WAV of 2 hours at 48 kHz (345,600,000 16-bit samples, 691 MB;
# sample n is tests/py/wavcat_pieces.py's gen_s16(n), so that any sample
# can be checked where it lands), runs wavcat on it with the default
# --piece-samples (2^22), and checks:
#   - the stream with recdump (every record, checksum and piece rule);
#   - every sample of the pieces joined, against the generator, and
#     their count (wavcat_pieces.py scan --gen-s16);
#   - wavcat's summary: one clip, 83 pieces, every sample;
#   - wavcat's peak memory (GNU time's maximum RSS) below RSS_LIMIT_KIB
#     (default 131072, 128 MiB: a few pieces of 8 MiB, not the clip).
# Prints the time and peak memory. Not run by make check: it takes
# minutes and 1.4 GB of $TMPDIR (the WAV and the stream), removed at the
# end. MELPIPE_BIN names the programs' folder (default bin/ of this
# checkout), PYTHON the Python (default the test venv's).
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MELPIPE_BIN:-$top/bin}
limit=${1:-131072}
py=$("$top/scripts/venv-python" wavcat-2h.sh PYTHON numpy) || exit 1
pieces="$py $top/tests/py/wavcat_pieces.py"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wavcat-2h.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

fail() {
	echo "wavcat-2h.sh: $*" >&2
	exit 1
}

[ -x /usr/bin/time ] || fail "needs GNU time in /usr/bin/time"
$pieces gen 2h.wav --seconds 7200 --rate 48000
start=$(date +%s)
{
	if /usr/bin/time -f %M -o rss "$bin/wavcat" -v 2h.wav 2>err; then
		echo 0 >rc
	else
		echo 1 >rc
	fi
} | tee 2h.rec | "$bin/recdump" -q
end=$(date +%s)
[ "$(cat rc)" = 0 ] || { cat err >&2; fail "wavcat failed"; }
grep -q "^wavcat: done 1 clip, skipped 0$" err || fail "$(cat err)"
grep -q "^wavcat: 345600000 samples; 1 clip longer than 4194304 samples in 83 pieces$" err ||
	fail "not every sample, or not 83 pieces: $(cat err)"
$pieces scan 2h.rec --gen-s16 20000 >scan
grep -q "^0 2h.wav 345600000 83 " scan || fail "scan: $(cat scan)"
rss=$(cat rss)
echo "wavcat-2h.sh: 2 h at 48 kHz (345600000 samples) in 83 pieces," \
	"every sample checked; wavcat | recdump took $((end - start)) s," \
	"peak RSS $rss KiB (limit $limit KiB)"
grep "^wavcat: threads" err
[ "$rss" -lt "$limit" ] || fail "peak RSS $rss KiB over $limit KiB"
