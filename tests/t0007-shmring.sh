#!/bin/sh
# lib/shmring.c, the ring that carries payloads between two programs in
# shared memory (formats/record.md's shared path): test-shmring's unit
# tests in one process, a writer and a reader process passing payloads
# through it, a reader killed while it holds slots, another user's
# attempt to open it, and a writer and a reader thread under
# ThreadSanitizer where the compiler builds test-shmring-tsan.

test_description='lib/shmring.c: the shared ring (tests/helper/test-shmring)'
. "$(dirname "$0")/test-lib.sh"

# run_ring NAME [ARG...]: runs NAME (test-shmring or test-shmring-tsan)
# with ARGs, its TAP in out.NAME_ARGS; passes when it exits 0, printed a
# plan and no "not ok" line. Shows what failed otherwise.
run_ring() {
	log=$(printf 'out.%s' "$*" | tr ' ' '_')
	if ! command -v "$1" >/dev/null; then
		echo "$1 not found: run 'make test-helpers'"
		return 1
	fi
	rc=0
	"$@" >"$log" 2>&1 || rc=$?
	if [ $rc = 0 ] && grep -q '^1\.\.[1-9]' "$log" &&
	   ! grep -q '^not ok' "$log"; then
		return 0
	fi
	echo "$* exited $rc"
	grep -v '^ok ' "$log"
	return 1
}

test_expect_success 'one process: allocation, wrap, order, full, bounds, attach' '
	run_ring test-shmring unit
'

test_expect_success 'two processes: 20000 payloads through /proc/PID/fd' '
	run_ring test-shmring procs 20000
'

test_expect_success 'a reader killed holding slots: they stay out of use' '
	run_ring test-shmring kill
'

if [ "$(id -u)" = 0 ]; then
	test_expect_success 'another user cannot open the ring' '
		run_ring test-shmring user
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
		run_ring test-shmring-tsan threads 10000
	'
else
	test_skip 'two threads under ThreadSanitizer' \
		'no test-shmring-tsan (SAN=1, or no -fsanitize=thread)'
fi

test_done
