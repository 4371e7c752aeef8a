#!/bin/sh
test_description='segment: help, usage errors, bad streams, closed pipes'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
PTY="$PYTHON $TEST_DIRECTORY/py/h5pack_pty.py"

test_expect_success 'set up streams' '
	$MK --kind audio --clips 8 --len 500:3000 --skip 3 >a.rec &&
	$MK --kind audio --clips 8 --len 500:3000 --no-trailer >cut.rec &&
	$MK --kind features --clips 4 >f.rec
'

test_expect_success '--help: usage on stdout, exit 0, every option named' '
	segment --help >help.out 2>help.err &&
	test ! -s help.err &&
	test_grep "^Usage: segment --len N" help.out &&
	for o in --hop --last --len --output --quiet --verbose --help \
		--version pad drop skipped Example "Exit status"; do
		grep -q -e "$o" help.out || { echo "no $o in --help"; exit 1; }
	done &&
	segment -h >h.out &&
	test_cmp help.out h.out &&
	segment --help | awk "length > 80 { print; bad = 1 } END { exit bad }"
'

test_expect_success '--version: one line, exit 0' '
	segment --version >v.out &&
	test $(wc -l <v.out) = 1 &&
	test_grep "^segment (melpipe) [0-9]" v.out &&
	segment -V >v2.out &&
	test_cmp v.out v2.out
'

test_expect_success 'bad options and values are usage errors (exit 2)' '
	test_usage_error segment <a.rec &&
	test_usage_error segment --hop 10 <a.rec &&
	test_usage_error segment --len 0 <a.rec &&
	test_usage_error segment --len -5 <a.rec &&
	test_usage_error segment --len 10x <a.rec &&
	test_usage_error segment --len "" <a.rec &&
	test_usage_error segment --len 2000000000 <a.rec &&
	test_usage_error segment --len 10 --hop 0 <a.rec &&
	test_usage_error segment --len 10 --hop abc <a.rec &&
	test_usage_error segment --len 10 --last pads <a.rec &&
	test_usage_error segment --len 10 --last "" <a.rec &&
	test_usage_error segment --len 10 --no-such-option <a.rec &&
	test_usage_error segment --len 10 -x <a.rec &&
	test_usage_error segment --len 10 a.rec a.rec <a.rec &&
	test_usage_error segment --len <a.rec
'

test_expect_success 'an option without its argument or unknown: one message' '
	test_single_usage_error segment --len 10 -o <a.rec &&
	test_grep "requires an argument -- .o." usage.err &&
	test_single_usage_error segment --len 10 --output <a.rec &&
	test_single_usage_error segment --len <a.rec &&
	test_single_usage_error segment --len 10 --no-such-option <a.rec &&
	test_single_usage_error segment --len 10 -x <a.rec
'

test_expect_success 'option errors name the program, not the path run' '
	test_expect_code 2 "$MELPIPE_BIN/segment" --no-such-option </dev/null \
		2>err &&
	test_grep "^segment: unrecognized option .--no-such-option.$" err &&
	test_expect_code 2 "$MELPIPE_BIN/segment" -o </dev/null 2>err &&
	test_grep "^segment: option requires an argument -- .o.$" err
'

test_expect_success 'the later of -q and -v wins' '
	test_q_v_later_wins "^segment: read [0-9]* records" segment --len 100 \
		a.rec
'

test_expect_success 'refuses to write records to a terminal (exit 2)' '
	test_expect_code 2 $PTY --stdout-pty --stdin a.rec -- \
		segment --len 100 >tty.out 2>tty.err &&
	test_grep "refusing to write binary records to a terminal" tty.err
'

test_expect_success 'a stream without its trailer: exit 1, no trailer out' '
	test_expect_code 1 segment --len 100 cut.rec >s.rec 2>err &&
	test_grep "^segment: " err &&
	test_must_fail recdump -q s.rec
'

test_expect_success 'garbage and empty input: exit 1 with a message' '
	printf "not a stream at all, just text\n" >junk &&
	test_expect_code 1 segment --len 100 junk >s.rec 2>err &&
	test_grep "^segment: " err &&
	: >empty &&
	test_expect_code 1 segment --len 100 <empty >s.rec 2>err &&
	test_grep "^segment: " err
'

test_expect_success 'a flipped byte in a payload: exit 1, no trailer out' '
	size=$(wc -c <a.rec) &&
	$PYTHON -c "
import sys
d = bytearray(open(\"a.rec\", \"rb\").read())
d[len(d) // 2] ^= 0x10
open(\"flip.rec\", \"wb\").write(d)" &&
	test_expect_code 1 segment --len 100 flip.rec >s.rec 2>err &&
	test_grep "^segment: " err &&
	test_must_fail recdump -q s.rec
'

test_expect_success 'a features stream is refused, naming its kind' '
	test_expect_code 1 segment --len 100 f.rec >s.rec 2>err &&
	test_grep "kind is .features." err
'

test_expect_success 'a missing input file or unwritable output: exit 1' '
	test_expect_code 1 segment --len 100 no-such.rec >s.rec 2>err &&
	test_grep "unable to open .no-such.rec.: No such file" err &&
	test_expect_code 1 segment --len 100 -o no-dir/x.rec a.rec 2>err &&
	test_grep "unable to open .no-dir/x.rec." err
'

test_expect_success 'a reader that goes away: exit 1 promptly, no hang' '
	$MK --kind audio --clips 200 --len 16000 >big.rec &&
	{ segment --len 10 big.rec 2>epipe.err; echo $? >rc; } | head -c 1000 \
		>/dev/null &&
	test "$(cat rc)" = 1 &&
	test_grep "^segment: unable to write to standard output: Broken pipe (the next stage stopped reading)$" \
		epipe.err
'

test_expect_success 'a write error names the output once, with the reason' '
	test_expect_code 1 segment --len 100 a.rec >/dev/full 2>err &&
	test_grep "^segment: unable to write to standard output: No space left on device$" \
		err &&
	test_expect_code 1 segment --len 100 -o /dev/full a.rec 2>err &&
	test_grep "^segment: unable to write to ./dev/full.: No space left on device$" \
		err
'

test_expect_success 'the summary of one record in one window is in the singular' '
	$MK --kind audio --clips 1 --len 100 >one.rec &&
	segment --len 100 one.rec >one.out 2>err &&
	test_grep "^segment: done: 1 record into 1 window (0 padded), skipped 0 (0 shorter than one window)$" err
'

test_done
