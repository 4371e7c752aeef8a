#!/bin/sh
# The C unit tests of lib/: record streams, CRC32C, f16/bf16 conversions,
# checked number parsing. Each helper prints TAP; a failing one shows its
# failed checks here.

test_description='lib/ unit tests (tests/helper/test-*)'
. "$(dirname "$0")/test-lib.sh"

# run_unit NAME: runs the unit test binary NAME; passes when it exits 0,
# printed a plan and no "not ok" line. Shows what failed otherwise.
run_unit() {
	if ! command -v "$1" >/dev/null; then
		echo "$1 not found: run 'make test-helpers'"
		return 1
	fi
	"$1" >"out.$1" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q '^1\.\.[1-9]' "out.$1" &&
	   ! grep -q '^not ok' "out.$1"; then
		return 0
	fi
	echo "$1 exited $rc"
	grep -v '^ok ' "out.$1"
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

test_expect_success 'test-rec: headers, round trips, refusals, corruption' '
	run_unit test-rec
'

test_expect_success 'test-rec checks every round trip it claims' '
	test $(grep -c "every field and payload equal" out.test-rec) -ge 9 &&
	test $(grep -c "^ok" out.test-rec) -ge 200
'

test_done
