#!/bin/sh
# tests/long/wavcat-2h.sh as a test of make check-long: two hours at
# 48 kHz through wavcat in pieces, every sample checked against its
# generator, wavcat's memory bounded.

test_description='wavcat: a two-hour clip, every sample'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'two hours at 48 kHz: every sample, bounded memory' '
	"$TEST_DIRECTORY/long/wavcat-2h.sh"
'

test_done
