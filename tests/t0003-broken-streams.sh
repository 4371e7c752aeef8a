#!/bin/sh
# Broken streams: every kind of corruption makes recdump (lib/rec's
# reader) exit 1 with one line naming the record, its byte offset and the
# reason, the same record and offset the independent Python reader finds;
# never a crash, never a huge allocation. Also the writer's side: a closed
# pipe gives a message, not a silent death.

test_description='corrupt, truncated and concatenated streams are refused'
. "$(dirname "$0")/test-lib.sh"

FORGE="$PYTHON $TEST_DIRECTORY/py/rec_forge.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/rec_check.py"

# refused FILE REASON-REGEX: recdump exits 1 with exactly one line on
# stderr, "recdump: stdin: record N at byte B: reason", where N and B are
# what the Python reader reports and the reason matches REASON-REGEX.
refused() {
	recdump -q <"$1" >out 2>err
	rc=$?
	if [ $rc != 1 ]; then
		echo "recdump exited $rc on $1"; cat err; return 1
	fi
	if [ $(wc -l <err) != 1 ]; then
		echo "more than one line on stderr:"; cat err; return 1
	fi
	$CHECK <"$1" >/dev/null 2>py.err && {
		echo "the Python reader accepts $1"; return 1
	}
	where=$(sed -n "s/^rec_check: stdin: \(record [0-9]* at byte [0-9]*\): .*/\1/p" py.err)
	test_grep "^recdump: stdin: $where: $2" err
}

test_expect_success 'setup: a valid stream of every record type' '
	rec-gen -n 12 -t mixed -s 2 -l 40 >good.rec &&
	rec-gen -n 12 -t mixed -s 2 -l 400 -z 3 >goodz.rec &&
	recdump -q good.rec && recdump -q goodz.rec &&
	$CHECK good.rec >/dev/null && $CHECK goodz.rec >/dev/null
'

test_expect_success 'a flipped bit anywhere in a record is a checksum error' '
	for at in 20 23 24 30 71 72 -1; do
		$FORGE flip-at 3 $at 0x10 <good.rec >bad.rec &&
		refused bad.rec "checksum mismatch (stored 0x[0-9a-f]\{8\}, computed 0x[0-9a-f]\{8\})$" ||
		return 1
	done
'

test_expect_success 'a changed length field is caught, whatever it becomes' '
	for at in 8 9 12 13 16 17; do
		$FORGE flip-at 3 $at 0x10 <good.rec >bad.rec &&
		refused bad.rec "checksum mismatch\|differs from stored length\|input ended inside the record" ||
		return 1
	done &&
	$FORGE flip-at 3 11 0x10 <good.rec >bad.rec &&
	refused bad.rec "metadata length 268435[0-9]* over the cap of 1048576$"
'

test_expect_success 'every changed byte of a small stream is refused, never a crash' '
	cp "$TEST_DIRECTORY/golden/good-audio-s16.rec" small.rec &&
	size=$(wc -c <small.rec) &&
	mkdir flips &&
	$FORGE flip-each 0x81 flips/f <small.rec &&
	: >fails &&
	i=0 &&
	while [ $i -lt $size ]; do
		recdump -q <flips/f.$i 2>err
		rc=$?
		if [ $rc != 1 ] || [ $(wc -l <err) != 1 ] ||
		   ! grep -q "^recdump: stdin: record [0-9]* at byte [0-9]*: " err; then
			echo "byte $i: exit $rc" >>fails
			cat err >>fails
		fi
		i=$((i + 1))
	done &&
	test_cmp /dev/null fails
'

test_expect_success 'a flipped bit in a compressed payload is caught' '
	$FORGE flip 2500 0x01 <goodz.rec >bad.rec &&
	refused bad.rec "checksum mismatch"
'

test_expect_success 'a huge length field is refused before any allocation' '
	$FORGE set 1 data_len 0xfffffff0 <good.rec >bad.rec &&
	refused bad.rec "payload length 4294967280 over the cap of 268435456$" &&
	$FORGE set 2 meta_len 0x7fffffff <good.rec >bad.rec &&
	refused bad.rec "metadata length 2147483647 over the cap of 1048576$" &&
	$FORGE set 1 raw_len 0x20000000 <goodz.rec >bad.rec &&
	refused bad.rec "raw payload length 536870912 over the cap"
'

test_expect_success NOSAN 'a lying length on a short input costs little memory' '
	# 250 MB claimed (under the 256 MiB cap) in a file of a few KB: the
	# reader grows its buffer as bytes arrive, so 150 MB of address space
	# is plenty to report the truncation.
	$FORGE set 1 data_len 250000000 raw_len 250000000 <good.rec >bad.rec &&
	( ulimit -v 150000 && recdump -q <bad.rec 2>err; echo $? >rc ) &&
	test "$(cat rc)" = 1 &&
	test_grep "record 1 at byte [0-9]*: input ended inside the record" err &&
	$FORGE set 1 data_len 0xfffffff0 <good.rec >bad.rec &&
	( ulimit -v 150000 && recdump -q <bad.rec 2>err; echo $? >rc ) &&
	test "$(cat rc)" = 1 &&
	test_grep "over the cap" err
'

test_expect_success 'a stream cut anywhere is truncated' '
	size=$(wc -c <good.rec) &&
	for cut in 0 10 23 24 100 $((size / 2)) $((size - 57)) $((size - 56)) $((size - 1)); do
		$FORGE cut $cut <good.rec >bad.rec &&
		refused bad.rec "empty input\\|input ended" || return 1
	done &&
	$FORGE cut -56 <good.rec >bad.rec &&
	refused bad.rec "input ended before the trailer (after 23 data records)$"
'

test_expect_success 'a newer format version is refused naming both versions' '
	$FORGE set 0 version 7 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "format version 7 is newer than this reader.s version 6$" &&
	$FORGE set 5 version 8 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "format version 8 is newer"
'

test_expect_success 'unknown types and flags are refused even with a good CRC' '
	$FORGE set 3 type 10 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "unknown record type 10$" &&
	$FORGE set 3 type 9 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "a features-windows record marked format version 1 (features-windows records are version 6)$" &&
	$FORGE set 3 type 7 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "a source record marked format version 1 (source records are version 4)$" &&
	$FORGE set 3 type 6 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "a windows record marked format version 1 (windows records are version 2)$" &&
	$FORGE set 3 flags 0x81 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "unknown flags 0x81$" &&
	$FORGE set 3 flags 0x02 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "the more flag in a record marked format version 1 (pieces are version 3)$" &&
	$FORGE set 0 flags 0x01 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "a header record with flags 0x01 (header and trailer records have flags 0)$"
'

test_expect_success 'bad metadata is refused even with a good CRC' '
	$FORGE meta 1 37 B 9 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "invalid dtype 9$" &&
	$FORGE meta 1 36 B 5 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "invalid split 5$" &&
	$FORGE meta 1 40 "<I" 41 --fix-crc <good.rec >bad.rec &&
	refused bad.rec "payload of 80 bytes does not match 41x1 s16$"
'

test_expect_success 'missing, repeated and reordered records are found' '
	$FORGE drop 3 <good.rec >bad.rec &&
	refused bad.rec "trailer counts 23 records (22 items, 1 skipped), the stream has 22 (21, 1)$" &&
	$FORGE drop 3 <good.rec | $FORGE fix-trailer >fixed.rec &&
	$CHECK fixed.rec >/dev/null &&
	recdump -q fixed.rec &&
	$FORGE dup 3 <good.rec >bad.rec &&
	refused bad.rec "clip 1 segment 0 after clip 1 segment 0" &&
	$FORGE swap 3 5 <good.rec >bad.rec &&
	refused bad.rec "clip 1 segment 1 after clip 2 segment 0 (records must be in clip and segment order)$" &&
	$FORGE drop 0 <good.rec >bad.rec &&
	refused bad.rec "the first record is of type audio, not a header$" &&
	$FORGE dup 0 <good.rec >bad.rec &&
	refused bad.rec "a second header record$"
'

test_expect_success 'missing, repeated and reordered pieces of an item are found' '
	cp "$TEST_DIRECTORY/golden/good-pieces-audio.rec" pieces.rec &&
	$FORGE drop 2 <pieces.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "a piece flagged cont at offset 240, not where the piece before ends (0 + 120)$" &&
	$FORGE drop 3 <pieces.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "audio record of clip 1 segment 0 after a piece of clip 0 segment 0 flagged more" &&
	$FORGE drop 1 <pieces.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "a piece flagged cont (clip 0 segment 0) without a piece flagged more before it$" &&
	$FORGE dup 2 <pieces.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "a piece flagged cont at offset 120, not where the piece before ends (120 + 120)$" &&
	$FORGE swap 2 3 <pieces.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "a piece flagged cont at offset 240, not where the piece before ends (0 + 120)$" &&
	$FORGE drop 6 <pieces.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "the stream ends after a piece of clip 2 segment 0 flagged more (its item goes on)$"
'

test_expect_success 'repeated, moved and lone source records are found' '
	cp "$TEST_DIRECTORY/golden/good-source.rec" source.rec &&
	$FORGE dup 1 <source.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "a second source record for clip 0 (one per clip at most)$" &&
	$FORGE swap 1 2 <source.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "source record of clip 0 after a record of clip 0 (a source record comes before its clip.s first data record)$" &&
	$FORGE swap 3 4 <source.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "source record of clip 1 after a piece of clip 1 segment 0 flagged more (a source record comes before its clip.s first data record)$" &&
	$FORGE drop 2 <source.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "source record of clip 1 right after the source record of clip 0 (a data record of its clip must follow a source record)$" &&
	$FORGE drop 7 <source.rec | $FORGE fix-trailer >bad.rec &&
	refused bad.rec "clip 3 segment 0 after the source record of clip 2 (a data record of its clip must follow a source record)$" &&
	$FORGE drop 1 <source.rec >bad.rec &&
	refused bad.rec "trailer counts 8 records (3 items, 2 skipped), the stream has 7 (3, 2)$" &&
	$FORGE drop 1 <source.rec | $FORGE fix-trailer >fixed.rec &&
	recdump -q fixed.rec &&
	$FORGE set 1 version 3 --fix-crc <source.rec >bad.rec &&
	refused bad.rec "a source record marked format version 3 (source records are version 4)$"
'

test_expect_success 'two streams run together are refused, not merged' '
	$FORGE twice <good.rec >bad.rec &&
	refused bad.rec "data after the trailer (another stream follows" &&
	cat good.rec goodz.rec >bad.rec &&
	refused bad.rec "data after the trailer" &&
	$FORGE append 00 <good.rec >bad.rec &&
	refused bad.rec "data after the trailer$"
'

test_expect_success 'garbage and empty input' '
	printf "hello, world\\n" >bad.rec &&
	refused bad.rec "bad magic 68 65 6c 6c (not a record stream, or framing lost)$" &&
	: >empty.rec &&
	refused empty.rec "empty input (no header record)$" &&
	head -c 10000 /dev/urandom >bad.rec &&
	refused bad.rec "bad magic"
'

test_expect_success 'mangled golden streams: no crash, valid ones survive a copy' '
	fuzz-rec -m 150 "$TEST_DIRECTORY"/golden/*.rec >out &&
	test_grep "no fault" out
'

test_expect_success 'the fuzzer'"'"'s kept corpus, mangled: the same' '
	fuzz-rec -m 30 "$TEST_DIRECTORY"/fuzz/rec/* >out &&
	n=$(ls "$TEST_DIRECTORY"/fuzz/rec | wc -l) &&
	test $n -gt 50 &&
	test_grep "$n inputs, 30 mutations each: no fault" out
'

test_expect_success 'a writer whose reader went away exits 1 with a message' '
	{ rec-gen -n 100000 -l 1000 2>err; echo $? >rc; } | head -c 1000 >/dev/null &&
	test "$(cat rc)" = 1 &&
	test_grep "^rec-gen: stdout: write error: Broken pipe$" err
'

test_expect_success 'a producer that fails leaves no trailer, and it shows' '
	rec-gen -n 5 --no-trailer >bad.rec &&
	refused bad.rec "input ended before the trailer (after 5 data records)$" &&
	rec-copy -n 2 --no-trailer <good.rec >bad.rec &&
	refused bad.rec "input ended before the trailer (after 2 data records)$"
'

test_done
