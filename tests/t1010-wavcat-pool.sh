#!/bin/sh
# wavcat's pool of decoder threads (tools/wavcat/pool.c), which hands
# clips and pieces between the writing thread and the decoders without a
# lock while nobody sleeps: test-pool's runs through pools of 1 to 16
# threads with a decoder of its own, and the same under ThreadSanitizer
# where the compiler builds test-pool-tsan.

test_description='wavcat: the pool of decoder threads (tests/helper/test-pool)'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'clips and pieces come back in order, each decoded once' '
	test_tap test-pool order 3000
'

test_expect_success 'stopping a pool whose threads wait, decode or sleep' '
	test_tap test-pool stop
'

# The window of clips in flight (wavcat.c, pool_window()): four a
# decoder, or, where --duration or --samples makes every clip one size,
# up to sixteen a decoder while their buffers (64 KiB at least, doubled
# to fit) hold at most 16 MiB.
test_expect_success 'the window: 4 clips a decoder, up to 16 for clips of one size' '
	"$PYTHON" - "$TEST_DIRECTORY/py" <<-\PY &&
	import os, sys
	sys.path.insert(0, sys.argv[1])
	import wavcat_mkdata as m
	os.makedirs("w", exist_ok=True)
	for i in range(20):
	    with open("w/c%02d.wav" % i, "wb") as f:
	        f.write(m.wav_bytes(m.pcm16(1600, seed=i)))
	PY
	window() {
		wavcat -v "$@" w 2>err >/dev/null &&
		sed -n "s/^wavcat: threads (\([0-9]*\), \([0-9]*\) clips in flight.*/\1 \2/p" err
	} &&
	test "$(window -j 2)" = "2 12" &&
	test "$(window -j 2 --duration 1)" = "2 36" &&
	test "$(window -j 16)" = "16 68" &&
	test "$(window -j 16 --duration 1)" = "16 256" &&
	test "$(window -j 16 --duration 1 --dtype f32)" = "16 256" &&
	test "$(window -j 16 --duration 2.5 --dtype f32)" = "16 68" &&
	test "$(window -j 16 --samples 1000000)" = "16 68" &&
	test "$(window -j 16 --samples 100)" = "16 256"
'

# Built by make test-helpers in the plain build, where the compiler links
# -fsanitize=thread; not under SAN=1 (ASan and TSan do not mix).
if [ "${MELPIPE_SAN:-0}" != 1 ] && command -v test-pool-tsan >/dev/null
then
	test_expect_success 'the same under ThreadSanitizer' '
		export TSAN_OPTIONS=halt_on_error=1 &&
		test_tap test-pool-tsan order 1500 &&
		test_tap test-pool-tsan stop
	'
else
	test_skip 'the same under ThreadSanitizer' \
		'no test-pool-tsan (SAN=1, or no -fsanitize=thread)'
fi

test_done
