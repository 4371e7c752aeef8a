#!/bin/sh
# The C unit tests of lib/: record streams (one helper per part of the
# library, the reader's and the writer's run twice: plainly and through
# their threads), CRC32C, f16/bf16 conversions, checked number parsing.
# Each helper prints TAP; a failing one shows its failed checks here.

test_description='lib/ unit tests (tests/helper/test-*)'
. "$(dirname "$0")/test-lib.sh"

# run_unit NAME [ARG...]: runs the unit test binary NAME with ARGs, its
# TAP in out.NAME followed by the ARGs; passes when it exits 0, printed a
# plan and no "not ok" line. Shows what failed otherwise.
run_unit() {
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

test_expect_success 'test-crc32c: known vectors, hardware and table paths' '
	run_unit test-crc32c
'

test_expect_success 'test-half: f16 and bf16 against exact references' '
	run_unit test-half
'

test_expect_success 'test-opt: number parsing, ranges and suffixes' '
	run_unit test-opt
'

test_expect_success 'test-rec-header: names, header pairs, stage quoting' '
	run_unit test-rec-header
'

test_expect_success 'test-rec-item: rec_window, windows and order rules' '
	run_unit test-rec-item
'

test_expect_success 'test-rec-write: round trips, reserve, refusals, EPIPE' '
	run_unit test-rec-write
'

test_expect_success 'test-rec-write --write-behind: through its thread' '
	run_unit test-rec-write --write-behind
'

test_expect_success 'test-rec-read: corruption, cuts, refusals, slow pipes' '
	run_unit test-rec-read
'

test_expect_success 'test-rec-read --read-ahead: through its thread' '
	run_unit test-rec-read --read-ahead
'

test_expect_success 'test-writebehind: zero copy, slow and vanishing readers' '
	run_unit test-writebehind
'

test_expect_success 'the record tests check every round trip they claim' '
	cat out.test-rec-* out.test-writebehind >out.rec-all &&
	test $(grep -c "every field and payload equal" out.rec-all) -ge 9 &&
	test $(grep -c "^ok" out.rec-all) -ge 200
'

test_done
