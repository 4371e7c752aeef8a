#!/bin/sh
# lib/shmring.c, the ring that is to carry payloads between two programs
# in shared memory (not used by the programs yet): test-shmring's unit
# tests in one process, a writer and a reader process passing payloads
# through it, a reader killed while it holds slots, another user's
# attempt to open it, and a writer and a reader thread under
# ThreadSanitizer where the compiler builds test-shmring-tsan.

test_description='lib/shmring.c: the shared ring (tests/helper/test-shmring)'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'one process: allocation, wrap, order, full, bounds, attach' '
	test_tap test-shmring unit
'

test_expect_success 'two processes: 20000 payloads through /proc/PID/fd' '
	test_tap test-shmring procs 20000
'

test_expect_success 'a reader killed holding slots: they stay out of use' '
	test_tap test-shmring kill
'

if [ "$(id -u)" = 0 ]; then
	test_expect_success 'another user cannot open the ring' '
		test_tap test-shmring user
	'
else
	test_skip 'another user cannot open the ring' 'not root: no other user'
fi

# Built by make test-helpers in the plain build, where the compiler links
# -fsanitize=thread; not under SAN=1 (ASan and TSan do not mix).
if [ "${MELPIPE_SAN:-0}" != 1 ] && command -v test-shmring-tsan >/dev/null
then
	test_expect_success 'two threads on one mapping under ThreadSanitizer' '
		export TSAN_OPTIONS=halt_on_error=1 &&
		test_tap test-shmring-tsan threads 10000
	'
else
	test_skip 'two threads under ThreadSanitizer' \
		'no test-shmring-tsan (SAN=1, or no -fsanitize=thread)'
fi

test_done
