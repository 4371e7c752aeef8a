#!/bin/sh
# lib/rec's shared-memory path (formats/record.md, version 5):
# test-rec-shm's writer and reader on a pipe in one process (the offer,
# payloads by reference, the trailer of the inline stream, a payload
# changed in the ring, forged references, a reader that does not attach)
# and a fast writer with a slow reader in another process (the ring
# fills, payloads go inline meanwhile, every record arrives intact).

test_description='lib/rec: payloads by reference in a shared ring (tests/helper/test-rec-shm)'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'one process: references, their CRCs, forgeries' '
	test_tap test-rec-shm unit
'

test_expect_success 'a writer faster than its reader fills the ring' '
	test_tap test-rec-shm full
'

test_done
