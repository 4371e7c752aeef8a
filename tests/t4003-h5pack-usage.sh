#!/bin/sh
test_description='h5pack: help, usage errors, terminals and progress'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
PTY="$PYTHON $TEST_DIRECTORY/py/h5pack_pty.py"

test_expect_success 'set up a stream' '
	$MK --clips 3000 --rows 1:2 --seed 2 >f.rec
'

test_expect_success '--help: usage on stdout, exit 0, every option named' '
	h5pack --help >help.out 2>help.err &&
	test ! -s help.err &&
	test_grep "^Usage: h5pack -o OUT.h5" help.out &&
	for o in --compress --chunk-size --no-clobber --output --quiet \
		--verbose --help --version gzip zstd 32015 hdf5plugin \
		HDF5_PLUGIN_PATH formats/hdf5.md training validation testing \
		/clips /skipped Example "Exit status"; do
		grep -q -e "$o" help.out || { echo "no $o in --help"; exit 1; }
	done &&
	h5pack -h >h.out &&
	test_cmp help.out h.out &&
	h5pack --help | awk "length > 80 { print; bad = 1 } END { exit bad }"
'

# What SIGKILL leaves (t4002 makes one): its name, that it is safe to
# delete and that OUT.h5 is never partial, where a user looks.
test_expect_success '--help says what a killed run leaves behind' '
	tr "\n" " " <help.out >help.line &&
	test_grep "Killed by SIGKILL (kill -9), or by a *crash, it cannot: the temporary file stays in OUT.h5.s folder, hidden, *as .OUT.h5.h5pack-PID-HOST.XXXXXX " help.line &&
	test_grep "OUT.h5 itself is *never partial" help.line &&
	test_grep "safe to delete" help.line
'

test_expect_success '--version: one line, exit 0' '
	h5pack --version >v.out &&
	test $(wc -l <v.out) = 1 &&
	test_grep "^h5pack (melpipe) [0-9]" v.out &&
	h5pack -V >v2.out &&
	test_cmp v.out v2.out
'

test_expect_success 'bad options and values are usage errors (exit 2)' '
	test_usage_error h5pack <f.rec &&
	test_usage_error h5pack -o "" <f.rec &&
	test_usage_error h5pack -o x.h5 f.rec f.rec <f.rec &&
	test_usage_error h5pack -o x.h5 --compress lz4 <f.rec &&
	test_usage_error h5pack -o x.h5 --compress "" <f.rec &&
	test_usage_error h5pack -o x.h5 --compress none:1 <f.rec &&
	test_usage_error h5pack -o x.h5 --compress gzip:0 <f.rec &&
	test_usage_error h5pack -o x.h5 --compress gzip:10 <f.rec &&
	test_usage_error h5pack -o x.h5 --compress gzip: <f.rec &&
	test_usage_error h5pack -o x.h5 --compress zstd:0 <f.rec &&
	test_usage_error h5pack -o x.h5 --compress zstd:23 <f.rec &&
	test_usage_error h5pack -o x.h5 --compress zstd:x <f.rec &&
	test_usage_error h5pack -o x.h5 --compress zstdd <f.rec &&
	test_usage_error h5pack -o x.h5 --chunk-size 10 <f.rec &&
	test_usage_error h5pack -o x.h5 --chunk-size 17M <f.rec &&
	test_usage_error h5pack -o x.h5 --chunk-size 1Q <f.rec &&
	test_usage_error h5pack -o x.h5 --no-such-option <f.rec &&
	test_usage_error h5pack -o <f.rec &&
	test ! -e x.h5
'

test_expect_success 'an option without its argument or unknown: one message' '
	test_single_usage_error h5pack -o <f.rec &&
	test_grep "requires an argument -- .o." usage.err &&
	test_single_usage_error h5pack --output <f.rec &&
	test_single_usage_error h5pack -o x.h5 --compress <f.rec &&
	test_single_usage_error h5pack -o x.h5 --no-such-option <f.rec &&
	test_single_usage_error h5pack -o x.h5 -x <f.rec &&
	test ! -e x.h5
'

test_expect_success 'option errors name the program, not the path run' '
	test_expect_code 2 "$MELPIPE_BIN/h5pack" --no-such-option </dev/null \
		2>err &&
	test_grep "^h5pack: unrecognized option .--no-such-option.$" err &&
	test_expect_code 2 "$MELPIPE_BIN/h5pack" -o </dev/null 2>err &&
	test_grep "^h5pack: option requires an argument -- .o.$" err
'

test_expect_success '--jobs takes 1 to 1024 and uses 16 threads at most' '
	h5pack -v -j 1024 -c zstd --chunk-size 4K -o j.h5 f.rec 2>err &&
	test -s j.h5 &&
	test_grep "compression threads (16): " err &&
	test_usage_error h5pack -j 1025 -o j2.h5 f.rec &&
	test_grep "^h5pack: --jobs: 1025 is out of range: give a whole number from 1 to 1024$" usage.err &&
	test ! -e j2.h5
'

test_expect_success 'the later of -q and -v wins' '
	test_q_v_later_wins "^h5pack: read [0-9]* records" h5pack -o qv.h5 \
		f.rec
'

test_expect_success 'refuses to read records from a terminal (exit 2)' '
	test_expect_code 2 $PTY --stdout-pty -- sh -c "h5pack -o t.h5 <&1" \
		>tty.out 2>tty.err &&
	test_grep "refusing to read records from a terminal" tty.err &&
	test ! -e t.h5
'

test_expect_success 'progress on a terminal: clips of expected, rate, ETA' '
	$PTY --stderr-pty --stdin f.rec --pieces 20 --delay 0.1 -- \
		h5pack -o p.h5 >pty.out &&
	test -s p.h5 &&
	tr "\r" "\n" <pty.out >lines &&
	test_grep "^h5pack: [0-9]*/3000 clips ([0-9]*%), [0-9]* rows, [0-9]* clips/s, ETA [0-9]*:[0-9][0-9]" lines &&
	test_grep "h5pack: wrote .p.h5.: " lines
'

test_expect_success 'no progress with -q, even on a terminal' '
	$PTY --stderr-pty --stdin f.rec --pieces 20 --delay 0.1 -- \
		h5pack -q -o q.h5 >pty.out &&
	test ! -s pty.out
'

test_expect_success 'without a clips count: clips done and rate, no ETA' '
	$MK --clips 3000 --no-clips --seed 2 >nc.rec &&
	$PTY --stderr-pty --stdin nc.rec --pieces 20 --delay 0.1 -- \
		h5pack -o nc.h5 >pty.out &&
	tr "\r" "\n" <pty.out >lines &&
	test_grep "^h5pack: [0-9]* clips, [0-9]* rows" lines &&
	! grep -q ETA lines
'

# One long clip in pieces: the line counts its samples, not the clip (that
# said 1/1 clips (100%), ETA 0:00 from its first piece).
test_expect_success 'progress of one long clip: how far into its samples' '
	rec-gen -t audio -n 1 -l 400000 | rec-copy --pieces 1000 >long.rec &&
	$PTY --stderr-pty --stdin long.rec --pieces 40 --delay 0.1 -- \
		h5pack -o long.h5 >pty.out &&
	test -s long.h5 &&
	tr "\r" "\n" <pty.out >lines &&
	sed -n "s|^h5pack: 1/1 clips (\([0-9]*\)%).*ETA.*|\1|p" lines >pct &&
	cat pct &&
	awk "\$1 >= 5 && \$1 <= 95 { mid++ } END { exit !(mid >= 2) }" pct
'

test_expect_success 'the summary of one row from one clip is in the singular' '
	$MK --kind audio --clips 1 --len 100 --splits none >one.rec &&
	h5pack -o one.h5 one.rec 2>err &&
	test_grep "^h5pack: wrote .one.h5.: 1 row from 1 clip, 0 skipped$" err
'

test_done
