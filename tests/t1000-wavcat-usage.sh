#!/bin/sh
test_description='wavcat: help, version, usage errors, output handling'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"
RR="$PYTHON $TEST_DIRECTORY/py/wavcat_readrec.py"

test_expect_success 'set up a few clips' '
	mkdir -p D/yes D/no &&
	$MK tone D/yes/a.wav --frames 1600 --seed 1 &&
	$MK tone D/no/b.wav --frames 1600 --seed 2 &&
	$MK tone D/no/c.wav --frames 800 --seed 3
'

test_expect_success '--help: usage on stdout, exit 0, every option named' '
	wavcat --help >help.out 2>help.err &&
	test ! -s help.err &&
	test_grep "^Usage: wavcat" help.out &&
	for o in --dtype --duration --exclude --help --include-underscore \
		--jobs --labels --no-labels --root \
		--null --output --quiet --rate --samples --split --strict \
		--testing-list --validation-list --verbose --version --zstd \
		hash:V:T @LISTFILE validation_list.txt _nohash_ .flac .wav \
		.ogg Example; do
		grep -q -e "$o" help.out || { echo "no $o in --help"; exit 1; }
	done &&
	wavcat -h >h.out &&
	test_cmp help.out h.out
'

test_expect_success '--help text fits in 80 columns' '
	wavcat --help | awk "length > 80 { print; bad = 1 } END { exit bad }"
'

test_expect_success '--version: one line, exit 0' '
	wavcat --version >v.out &&
	test $(wc -l <v.out) = 1 &&
	test_grep "^wavcat (melpipe) [0-9]" v.out &&
	wavcat -V >v2.out &&
	test_cmp v.out v2.out
'

test_expect_success 'bad options and values are usage errors (exit 2)' '
	test_usage_error wavcat --no-such-option D &&
	test_usage_error wavcat -x D &&
	test_usage_error wavcat --rate 0 D &&
	test_usage_error wavcat --rate abc D &&
	test_usage_error wavcat --rate 800000 D &&
	test_usage_error wavcat --rate 16000x D &&
	test_usage_error wavcat --duration 0 D &&
	test_usage_error wavcat --duration -1 D &&
	test_usage_error wavcat --duration x D &&
	test_usage_error wavcat --samples 0 D &&
	test_usage_error wavcat --samples 1.5 D &&
	test_usage_error wavcat --dtype f16 D &&
	test_usage_error wavcat --dtype s32 D &&
	test_usage_error wavcat --split foo D &&
	test_usage_error wavcat --split hash:60:50 D &&
	test_usage_error wavcat --split hash:10 D &&
	test_usage_error wavcat --split hash:10:x D &&
	test_usage_error wavcat --split hash:-1:10 D &&
	test_usage_error wavcat --zstd 0 D &&
	test_usage_error wavcat --zstd 20 D &&
	test_usage_error wavcat -j 0 D &&
	test_usage_error wavcat --jobs x D &&
	test_usage_error wavcat --duration 1 --samples 5 D &&
	test_usage_error wavcat --labels l.csv --no-labels D &&
	test_usage_error wavcat --split none --validation-list v.txt D &&
	test_usage_error wavcat --split hash:10:10 --testing-list t.txt D &&
	test_usage_error wavcat --rate
'

test_expect_success 'an option without its argument or unknown: one message' '
	test_single_usage_error wavcat D -o &&
	test_grep "requires an argument -- .o." usage.err &&
	test_single_usage_error wavcat D --output &&
	test_single_usage_error wavcat --rate &&
	test_single_usage_error wavcat --no-such-option D &&
	test_single_usage_error wavcat -x D
'

test_expect_success 'option errors name the program, not the path run' '
	test_expect_code 2 "$MELPIPE_BIN/wavcat" --no-such-option </dev/null \
		2>err &&
	test_grep "^wavcat: unrecognized option .--no-such-option.$" err &&
	test_expect_code 2 "$MELPIPE_BIN/wavcat" -o </dev/null 2>err &&
	test_grep "^wavcat: option requires an argument -- .o.$" err
'

test_expect_success 'no inputs, "-" twice, "@" alone are usage errors' '
	test_usage_error wavcat &&
	test_usage_error wavcat --rate 16000 &&
	test_usage_error wavcat - - </dev/null &&
	test_usage_error wavcat @
'

test_expect_success 'the messages name the option and the value' '
	test_usage_error wavcat --rate 12x D &&
	test_grep "^wavcat: --rate: .12x. is not a number: give a whole number from 1 to" usage.err &&
	test_usage_error wavcat --split hash:70:40 D &&
	test_grep "hash:70:40" usage.err &&
	test_usage_error wavcat --sort-buffer 1K D &&
	test_grep "^wavcat: --sort-buffer: 1K is out of range: give a size from 4K to 1T (suffixes" \
		usage.err &&
	test_usage_error wavcat --sort-buffer 12Q D &&
	test_grep "^wavcat: --sort-buffer: .12Q. is not a number" usage.err
'

# Ranges read as a person writes them: no 1e-09..1e+07.
test_expect_success 'out-of-range numbers: the range in plain numbers' '
	test_usage_error wavcat --duration -1 D &&
	test_grep "^wavcat: --duration: -1 is out of range: give a number above 0, at most 10000000$" \
		usage.err &&
	test_usage_error wavcat --duration 0 D &&
	test_grep "^wavcat: --duration: 0 is out of range: give a number above 0" usage.err &&
	test_usage_error wavcat --duration 2e7 D &&
	test_grep "at most 10000000$" usage.err &&
	test_usage_error wavcat --duration x D &&
	test_grep "^wavcat: --duration: .x. is not a number: give a number above 0" usage.err &&
	test_usage_error wavcat --zstd 30 D &&
	test_grep "^wavcat: --zstd: 30 is out of range: give a whole number from 1 to 19$" \
		usage.err &&
	test_usage_error gpumel --amin 0 &&
	test_grep "^gpumel: --amin: 0 is out of range: give a number from 1e-30 to 1e30$" \
		usage.err &&
	test_usage_error gpumel --preset kaldi --frame-length-ms 0 &&
	test_grep "give a number from 0.001 to 1000000$" usage.err &&
	! grep "e[+-]0" usage.err
'

test_expect_success 'a missing input argument fails (exit 1) naming it' '
	test_expect_code 1 wavcat D nosuch.wav >out 2>err &&
	test_grep "nosuch.wav" err &&
	test_grep "No such file or directory" err &&
	test ! -s out &&
	test_expect_code 1 wavcat @nosuch.list >out 2>err &&
	test_grep "nosuch.list" err
'

test_expect_success 'a folder without audio files fails (exit 1)' '
	mkdir empty &&
	echo text >empty/readme.txt &&
	test_expect_code 1 wavcat empty >out 2>err &&
	test_grep "no audio files" err
'

test_expect_success 'refuses to write records to a terminal (exit 2)' '
	"$PYTHON" -c "
import os, pty, subprocess, sys
m, s = pty.openpty()
p = subprocess.run([\"wavcat\", \"D\"], stdout=s, stderr=subprocess.PIPE,
                   timeout=60)
sys.stderr.write(p.stderr.decode())
sys.exit(0 if p.returncode == 2 and b\"terminal\" in p.stderr else 1)
"
'

test_expect_success '-o FILE writes the same records as stdout' '
	wavcat -q D >stdout.rec &&
	wavcat -q -o file.rec D >nothing &&
	test ! -s nothing &&
	$RR stdout.rec --raw-hash >h1 &&
	$RR file.rec --raw-hash >h2 &&
	test_cmp h1 h2 &&
	wavcat -q --output=file2.rec D &&
	$RR file2.rec --raw-hash >h3 &&
	test_cmp h1 h3
'

test_expect_success '-o FILE is removed when the run fails' '
	cp D/yes/a.wav bad.wav &&
	printf "not audio" >D/yes/z.wav &&
	test_expect_code 1 wavcat --strict -o strict.rec D 2>err &&
	test_grep "z.wav" err &&
	test ! -e strict.rec &&
	rm D/yes/z.wav
'

test_expect_success 'summary line, and -q silences it' '
	wavcat D >out.rec 2>err &&
	test_grep "^wavcat: done 3 clips, skipped 0$" err &&
	wavcat -q D >out.rec 2>err &&
	test ! -s err
'

# 3 clips: a source record and an audio record each
test_expect_success '-v reports records, bytes and times' '
	wavcat -v D >out.rec 2>err &&
	test_grep "6 records, [0-9]* bytes" err &&
	test_grep "reading and decoding" err &&
	test_grep "; handing clips to them [0-9.]* s (waking one [0-9]* times\{0,1\}), waiting for them [0-9.]* s, writing output" err &&
	test_grep "writing output" err &&
	test_grep "samples clipped" err &&
	bytes=$(sed -n "s/.*6 records, \([0-9]*\) bytes.*/\1/p" err) &&
	test "$bytes" = "$(wc -c <out.rec)"
'

test_expect_success 'the later of -q and -v wins' '
	test_q_v_later_wins "6 records, [0-9]* bytes" wavcat D
'

test_expect_success 'a reader that goes away: exit 1 with a message, no hang' '
	mkdir -p BIG/x &&
	for i in 0 1 2 3 4 5 6 7 8 9; do
		$MK tone BIG/x/$i.wav --frames 480000 --seed $i || exit 1
	done &&
	{ timeout 60 wavcat -j2 BIG; echo $? >status; } 2>pipe.err |
		head -c 1000 >/dev/null &&
	test "$(cat status)" = 1 &&
	test_grep "^wavcat: unable to write to standard output: Broken pipe (the next stage stopped reading)$" \
		pipe.err
'

test_expect_success 'a write error names the output once, with the reason' '
	test_expect_code 1 wavcat D >/dev/full 2>err &&
	test_grep "^wavcat: unable to write to standard output: No space left on device$" \
		err &&
	test_expect_code 1 wavcat -o /dev/full D 2>err &&
	test_grep "^wavcat: unable to write to ./dev/full.: No space left on device$" \
		err
'

test_done
