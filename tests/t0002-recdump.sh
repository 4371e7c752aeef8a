#!/bin/sh
# recdump: command line, output checked against the independent Python
# reader (tests/py/rec_check.py), modes, limits and output errors.

test_description='recdump prints and verifies record streams'
. "$(dirname "$0")/test-lib.sh"

GOLDEN=$TEST_DIRECTORY/golden
CHECK="$PYTHON $TEST_DIRECTORY/py/rec_check.py"

test_expect_success '--help goes to stdout and exits 0' '
	recdump --help >out 2>err &&
	test_grep "^Usage: recdump" out &&
	test_grep "max-record SIZE" out &&
	test ! -s err
'

test_expect_success '--version prints one line' '
	recdump --version >out &&
	test $(wc -l <out) = 1 &&
	test_grep "^recdump (melpipe) [0-9]" out
'

test_expect_success 'bad command lines exit 2 with a pointer to --help' '
	test_usage_error recdump --no-such-option </dev/null &&
	test_usage_error recdump a.rec b.rec &&
	test_grep "one input at most" usage.err &&
	test_usage_error recdump -n 0 </dev/null &&
	test_grep "^recdump: --limit: 0 is out of range" usage.err &&
	test_usage_error recdump -n x </dev/null &&
	test_usage_error recdump --max-record 5X </dev/null &&
	test_grep "^recdump: --max-record: .5X. is not a number" usage.err
'

test_expect_success 'option errors name the program, not the path run' '
	test_expect_code 2 "$MELPIPE_BIN/recdump" --no-such-option </dev/null \
		2>err &&
	test_grep "^recdump: unrecognized option .--no-such-option.$" err &&
	test_expect_code 2 "$MELPIPE_BIN/recdump" -n </dev/null 2>err &&
	test_grep "^recdump: option requires an argument -- .n.$" err
'

test_expect_success 'an option without its argument or unknown: one message' '
	test_single_usage_error recdump -n </dev/null &&
	test_grep "requires an argument -- .n." usage.err &&
	test_single_usage_error recdump --max-record </dev/null &&
	test_single_usage_error recdump -o x </dev/null &&
	test_single_usage_error recdump --no-such-option </dev/null
'

test_expect_success 'a missing file is named with the reason' '
	test_expect_code 1 recdump nope.rec 2>err &&
	echo "recdump: unable to open '\''nope.rec'\'': No such file or directory" >expect &&
	test_cmp expect err
'

test_expect_success 'an HDF5 file is named as one, with what reads it' '
	$PYTHON "$TEST_DIRECTORY/py/h5pack_mkrec.py" --clips 2 >h.rec &&
	h5pack -q -o x.h5 h.rec &&
	test_expect_code 1 recdump x.h5 >out 2>err &&
	echo "recdump: x.h5: record 0 at byte 0: bad magic 89 48 44 46" \
		"(not a record stream, or framing lost): this is an HDF5 file" \
		"(h5dump or scripts/h5info.py read it)" >expect &&
	test_cmp expect err &&
	test ! -s out &&
	test_expect_code 1 recdump <x.h5 2>err &&
	test_grep "^recdump: stdin: .*: this is an HDF5 file" err
'

test_expect_success 'audio files are named as such, pointing at wavcat' '
	$PYTHON -c "if 1:
		import numpy as np, soundfile as sf
		for f in (\"a.wav\", \"a.flac\", \"a.aiff\", \"a.ogg\"):
			sf.write(f, np.zeros(400), 16000)" &&
	for f in a.wav a.flac a.aiff a.ogg; do
		test_expect_code 1 recdump -q $f 2>err &&
		test_grep "^recdump: $f: record 0 at byte 0: bad magic .*: this is an audio file (.*);" \
			err &&
		test_grep "; wavcat reads audio files$" err || exit 1
	done
'

test_expect_success 'a pipe or a file of other bytes: the reader says why' '
	printf "\211HDF\r\n\032\n" >sig &&
	cat sig | test_expect_code 1 recdump 2>err &&
	test_grep "stdin: record 0 at byte 0: bad magic 89 48 44 46" err &&
	printf "RIFF" >riff &&
	test_expect_code 1 recdump riff 2>err &&
	test_grep "riff: record 0 at byte 0: bad magic 52 49 46 46" err
'

test_expect_success 'stdin by default and with -' '
	recdump <"$GOLDEN/good-audio-s16.rec" >a &&
	recdump - <"$GOLDEN/good-audio-s16.rec" >b &&
	recdump "$GOLDEN/good-audio-s16.rec" >c &&
	test_cmp a b && test_cmp a c &&
	test_grep "^trailer records=3 items=2 skipped=1" a
'

test_expect_success 'each golden stream prints as the Python reader sees it' '
	for f in "$GOLDEN"/good-*.rec; do
		recdump "$f" >c.out &&
		$CHECK "$f" >py.out &&
		test_cmp py.out c.out || return 1
	done
'

test_expect_success '--stats matches numpy over every element type' '
	for f in "$GOLDEN"/good-*.rec; do
		recdump --stats "$f" >c.out &&
		$CHECK --stats "$f" >py.out &&
		test_cmp py.out c.out || return 1
	done &&
	recdump --stats "$GOLDEN/good-odd-values.rec" >c.out &&
	test_grep "nan=1 inf=1" c.out
'

test_expect_success '--summary totals match the Python reader' '
	for f in "$GOLDEN"/good-*.rec; do
		recdump --summary "$f" >c.out &&
		$CHECK --summary "$f" >py.out &&
		test_cmp py.out c.out || return 1
	done
'

test_expect_success 'generated streams of every dtype and zstd match too' '
	for d in s16 f32 f16 bf16; do
		rec-gen -n 30 -t mixed -d $d -s 3 -l 50 >g.rec &&
		recdump --stats g.rec >c.out &&
		$CHECK --stats g.rec >py.out &&
		test_cmp py.out c.out &&
		rec-gen -n 7 -t features -d $d -l 9 -z 3 >g.rec &&
		recdump --stats g.rec >c.out &&
		$CHECK --stats g.rec >py.out &&
		test_cmp py.out c.out || return 1
	done
'

test_expect_success 'strings are escaped so that a record stays one line' '
	recdump "$GOLDEN/good-odd-values.rec" >out &&
	test_grep "^header note=tab\\\\there\\\\nnewline$" out &&
	test_grep "key=\"sp ace/new\\\\nline/\\\\xff\\\\xfe not utf8/\\\\\"q\\\\\".wav\"" out &&
	test_grep "key=\"caf.*\\.flac\" reason=\"reason with .* and \\\\ttab\"" out &&
	test $(grep -c "^[0-9]" out) = 4
'

test_expect_success 'label names come from the header table' '
	recdump "$GOLDEN/good-audio-s16.rec" >out &&
	test_grep "^1 audio clip=0 .* label=1(yes) split=training dtype=s16 dims=80x1 key=\"yes/a_nohash_0.wav\"$" out &&
	test_grep "^3 skipped clip=2 .* reason=\"unable to decode: not an audio file\"$" out
'

test_expect_success 'windows records show the windows they describe' '
	recdump "$GOLDEN/good-windows-s16.rec" >out &&
	test_grep "^1 windows clip=0 segment=0 offset=0 clip_samples=80 rate=8000 label=1(yes) split=training dtype=s16 dims=80x1 win_len=40 win_hop=20 n_windows=3 pad=no key=\"yes/a_nohash_0.wav\"$" out &&
	test_grep "^3 windows clip=2 segment=0 offset=0 clip_samples=70 .* dims=70x1 win_len=40 win_hop=20 n_windows=3 pad=yes key=" out &&
	test_grep "^trailer records=3 items=2 skipped=1 " out &&
	recdump "$GOLDEN/good-windows-f32.rec" >out &&
	test_grep "^2 windows clip=0 segment=3 offset=64 .* dims=64x1 win_len=32 win_hop=16 n_windows=3 pad=no " out &&
	test_grep "^4 audio clip=2 segment=0 offset=0 .* dims=2x1 key=\"yes/e.wav\"$" out
'

test_expect_success '--stats of a windows record are over its samples' '
	recdump --stats "$GOLDEN/good-windows-edge.rec" >out &&
	test_grep "^3 windows clip=2 .* dims=12x1 win_len=2 win_hop=5 n_windows=3 pad=no min=-5 max=6 mean=0.5 nan=0 inf=0 key=\"gaps\"$" out &&
	test_grep "^4 windows clip=3 segment=4294967293 offset=1099511627776 .* min=-7 max=7 mean=1.4 " out
'

test_expect_success '--summary counts windows records and the windows in them' '
	recdump -s "$GOLDEN/good-windows-s16.rec" >out &&
	test_grep "^type audio 0$" out &&
	test_grep "^type skipped 1$" out &&
	test_grep "^type windows 2$" out &&
	test_grep "^windows 6$" out &&
	recdump -s "$GOLDEN/good-windows-f32.rec" >out &&
	test_grep "^type audio 1$" out &&
	test_grep "^type windows 3$" out &&
	test_grep "^windows 8$" out &&
	test_grep "^clips 3$" out &&
	recdump -s "$GOLDEN/good-audio-s16.rec" >out &&
	! grep windows out
'

test_expect_success 'version 2 and 3 streams are accepted, a newer one refused' '
	recdump -q "$GOLDEN/good-version-2.rec" &&
	recdump "$GOLDEN/good-version-2.rec" | grep -v "^trailer" >v2 &&
	recdump "$GOLDEN/good-version-3.rec" | grep -v "^trailer" >v3 &&
	recdump "$GOLDEN/good-audio-s16.rec" | grep -v "^trailer" >v1 &&
	test_cmp v1 v2 &&
	test_cmp v1 v3 &&
	test_expect_code 1 recdump -q "$GOLDEN/bad-version.rec" 2>err &&
	test_grep "format version 7 is newer than this reader.s version 6$" err
'

test_expect_success 'pieces of an item show which they are' '
	recdump "$GOLDEN/good-pieces-audio.rec" >out &&
	test_grep "^1 audio clip=0 segment=0 offset=0 clip_samples=0 .* dims=120x1 piece=more key=\"yes/long.mp3\"$" out &&
	test_grep "^2 audio clip=0 segment=0 offset=120 clip_samples=300 .* dims=120x1 piece=more,cont key=" out &&
	test_grep "^3 audio clip=0 segment=0 offset=240 clip_samples=300 .* dims=60x1 piece=cont key=" out &&
	test_grep "^4 audio clip=1 .* dims=80x1 key=\"no/short.wav\"$" out &&
	test_grep "^6 audio clip=2 segment=0 offset=50 .* dims=0x1 piece=cont key=" out &&
	test_grep "^trailer records=6 items=6 skipped=0 " out &&
	recdump --stats "$GOLDEN/good-pieces-features.rec" >out &&
	test_grep "^3 features clip=0 .* dims=4x1 piece=cont min=-35 max=-32 mean=-33.5 nan=0 inf=0 key=" out
'

test_expect_success '--summary counts an item in pieces once' '
	recdump -s "$GOLDEN/good-pieces-audio.rec" >out &&
	test_grep "^type audio 3$" out &&
	test_grep "^pieces 5$" out &&
	test_grep "^cut_short 0$" out &&
	test_grep "^split training 1$" out &&
	test_grep "^payload_bytes 860$" out &&
	recdump -s "$GOLDEN/good-pieces-cut-short.rec" >out &&
	test_grep "^type audio 2$" out &&
	test_grep "^type skipped 1$" out &&
	test_grep "^pieces 2$" out &&
	test_grep "^cut_short 1$" out &&
	test_grep "^clips 2$" out &&
	recdump -s "$GOLDEN/good-features-f32.rec" >out &&
	! grep "pieces\|cut_short" out
'

test_expect_success '-q prints nothing for a valid stream' '
	recdump -q "$GOLDEN/good-features-f16.rec" >out 2>err &&
	test ! -s out && test ! -s err
'

test_expect_success '-n stops after N records and says so' '
	rec-gen -n 10 >g.rec &&
	recdump -n 3 g.rec >out &&
	test $(grep -c "^[0-9]* audio" out) = 3 &&
	test_grep "^stopped after 3 data records (--limit)$" out &&
	! grep "^trailer" out
'

test_expect_success '-v reports records, bytes and time on stderr' '
	rec-gen -n 10 >g.rec &&
	recdump -q -v g.rec 2>err &&
	test_grep "^recdump: 10 records, $(wc -c <g.rec | tr -d " ") bytes in" err
'

test_expect_success 'the later of -q and -v wins; -q still only verifies' '
	rec-gen -n 10 >g.rec &&
	test_q_v_later_wins "^recdump: 10 records" recdump g.rec &&
	test ! -s qv.out &&
	test ! -s vq.out
'

test_expect_success 'clips missing from a stream are warned about' '
	rec-gen -n 5 -t mixed >g.rec &&
	recdump g.rec >out 2>err &&
	test ! -s err &&
	rec-copy -n 3 <g.rec >short.rec &&
	recdump short.rec >out 2>err &&
	echo "recdump: short.rec: the header announces 5 clips, the records cover 3 (highest index 2)" >expect &&
	test_cmp expect err &&
	recdump -q short.rec 2>err &&
	test ! -s err &&
	recdump -s short.rec >out &&
	test_grep "^clips 3$" out
'

test_expect_success '--max-record refuses bigger payloads before reading them' '
	rec-gen -n 3 -l 1000 >g.rec &&
	recdump -q --max-record 1999 g.rec 2>err;
	test $? = 1 &&
	test_grep "^recdump: g.rec: record 1 at byte [0-9]*: payload length 2000 over the cap of 1999$" err &&
	recdump -q --max-record 2000 g.rec &&
	recdump -q --max-record 2K g.rec
'

test_expect_success 'a large stream through a pipe, zstd and not' '
	rec-gen -n 200 -l 100000 -s 2 | recdump -s >out &&
	test_grep "^type audio 400$" out &&
	rec-gen -n 200 -l 100000 -z 1 | recdump -q
'

test_expect_success 'a closed output pipe ends recdump with a message' '
	rec-gen -n 20000 -l 10 >g.rec &&
	{ recdump g.rec 2>err; echo $? >rc; } | head -n 1 >/dev/null &&
	test "$(cat rc)" = 1 &&
	test_grep "^recdump: unable to write to standard output: Broken pipe (the next stage stopped reading)$" \
		err
'

# A shard K/N holds the clips whose index is K modulo N (formats/record.md,
# Shard streams): no warning for a whole shard, even an empty one, and a
# warning naming the shard for one that lacks clips.
test_expect_success 'shard streams: their own clips are all recdump expects' '
	J=0123456789abcdef0123456789abcdef01234567 &&
	rec-gen -t mixed -n 7 >whole.rec &&
	for s in 0/3 1/3 2/3 6/9 8/9; do
		rec-copy --shard $s --job $J <whole.rec >s.rec &&
		recdump s.rec >/dev/null 2>err &&
		! test -s err || return 1
	done &&
	rec-copy --shard 1/3 --job $J -n 1 <whole.rec >short.rec &&
	recdump short.rec >/dev/null 2>err &&
	test_grep "shard 1/3 of 7 clips should hold 2, the records cover 1 (highest index 1)" err
'

# -n N: the full listing up to its Nth data record (source records shown,
# not counted), then the line that says how many records were read.
test_expect_success '-n counts data records; source records come along' '
	S=$GOLDEN/good-source.rec &&
	recdump "$S" >all &&
	ndata=$(grep -c -E "^[0-9]+ (audio|features|windows|skipped) " all) &&
	test $ndata -ge 4 &&
	n=1 &&
	while test $n -le $ndata; do
		recdump -n $n "$S" >out &&
		awk -v n=$n "{ print }
			/^[0-9]+ (audio|features|windows|skipped) / && ++d == n { exit }" \
			all >expect &&
		if test $n = 1; then r=record; else r=records; fi &&
		echo "stopped after $n data $r (--limit)" >>expect &&
		test_cmp expect out &&
		recdump -q -n $n "$S" >out &&
		test ! -s out || return 1
		n=$((n + 1))
	done &&
	recdump -n $((ndata + 1)) "$S" >out &&
	test_cmp all out
'

test_expect_success '--help: -n counts data records, not source records' '
	recdump --help >help &&
	test_grep "stop after N data records (audio, features," help &&
	test_grep "source records among them are shown but not" help
'

test_done
