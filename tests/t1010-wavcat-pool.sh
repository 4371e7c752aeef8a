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
