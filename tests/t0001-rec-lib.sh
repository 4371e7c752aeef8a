#!/bin/sh
# The C unit tests of lib/: record streams (one helper per part of the
# library, the reader's and the writer's run twice: plainly and through
# their threads), CRC32C, f16/bf16 conversions, checked number parsing.
# Each helper prints TAP; a failing one shows its failed checks here.

test_description='lib/ unit tests (tests/helper/test-*)'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'test-crc32c: known vectors, hardware and table paths' '
	test_tap test-crc32c
'

test_expect_success 'test-half: f16 and bf16 against exact references' '
	test_tap test-half
'

test_expect_success 'test-opt: number parsing, ranges and suffixes' '
	test_tap test-opt
'

test_expect_success 'test-rec-header: names, header pairs, stage quoting' '
	test_tap test-rec-header
'

test_expect_success 'test-rec-item: rec_window, windows and order rules' '
	test_tap test-rec-item
'

test_expect_success 'test-rec-write: round trips, reserve, refusals, EPIPE' '
	test_tap test-rec-write
'

test_expect_success 'test-rec-write --write-behind: through its thread' '
	test_tap test-rec-write --write-behind
'

test_expect_success 'test-rec-read: corruption, cuts, refusals, slow pipes' '
	test_tap test-rec-read
'

test_expect_success 'test-rec-read --read-ahead: through its thread' '
	test_tap test-rec-read --read-ahead
'

test_expect_success 'test-writebehind: zero copy, slow and vanishing readers' '
	test_tap test-writebehind
'

test_expect_success 'the record tests check every round trip they claim' '
	cat out.test-rec-* out.test-writebehind >out.rec-all &&
	test $(grep -c "every field and payload equal" out.rec-all) -ge 9 &&
	test $(grep -c "^ok" out.rec-all) -ge 200
'

test_done
