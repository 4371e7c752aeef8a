#!/bin/sh
# A clip longer than two hours at 48 kHz through the whole suite, with the
# default piece size: one dataset row of every frame, the frames at every
# piece boundary and at both ends against a float64 reference, top_db
# applied over the whole clip, and every stage's memory bounded (its
# maximum resident size, from /usr/bin/time, far below the clip's size).
# Not part of `make check` (minutes, and 700 MB of WAV): `make check-long`.

test_description='a two-hour 48 kHz clip, end to end, memory bounded'
. "$(dirname "$0")/test-lib.sh"

LC="$PYTHON $TEST_DIRECTORY/py/long_clip.py"
SECONDS_LONG=${MELPIPE_LONG_SECONDS:-7260}
PIECE=4194304

test_expect_success "make a ${SECONDS_LONG} s clip at 48 kHz" '
	$LC make long.wav --seconds $SECONDS_LONG --rate 48000 &&
	test -s long.wav
'

# rss FILE: the maximum resident size /usr/bin/time -f %M wrote, in kB
rss() { tail -n 1 "$1"; }

test_expect_success 'wavcat | gpumel | h5pack, each stage timed' '
	T="/usr/bin/time -f %M -o" &&
	start=$(date +%s) &&
	$T w.rss wavcat -q long.wav |
		$T g.rss gpumel -q --device cpu |
		$T h.rss h5pack -q -o long.h5 &&
	echo "wavcat | gpumel --device cpu | h5pack: $(($(date +%s) - start)) s" \
		>>report &&
	echo "max RSS, kB: wavcat $(rss w.rss), gpumel $(rss g.rss)," \
		"h5pack $(rss h.rss)" >>report &&
	test -s long.h5
'

test_expect_success 'every frame there; boundaries and ends match the reference' '
	$LC check long.wav long.h5 --piece $PIECE >>report
'

# The clip is 700 MB of samples (1.4 GB as f32) and 370 MB of features:
# a stage holding either would show it.
test_expect_success 'every stage stayed under 400 MB' '
	for s in w g h; do
		test $(rss $s.rss) -lt 409600 ||
			{ echo "$s: $(rss $s.rss) kB"; return 1; }
	done
'

# the figures, as TAP comments (prove -v shows them)
[ -f report ] && sed 's/^/# /' report

test_done
