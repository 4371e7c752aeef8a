#!/bin/sh
# Source records (formats/record.md, format version 4): recdump shows,
# counts and validates them as the Python reader (melpipe.stream) does,
# byte for byte on good streams and at the same record for the same
# reason on bad ones; misplaced ones are refused naming the rule.

test_description='source records: recdump and melpipe.stream agree'
. "$(dirname "$0")/test-lib.sh"

GOLDEN=$TEST_DIRECTORY/golden
DUMP="$PYTHON -m melpipe.stream dump"

test_expect_success 'recdump prints source records as melpipe.stream dump does' '
	for f in "$GOLDEN"/good-source*.rec "$GOLDEN"/good-audio-s16.rec; do
		recdump "$f" >c &&
		$DUMP "$f" >p &&
		test_cmp c p || return 1
	done &&
	recdump "$GOLDEN/good-source.rec" >c &&
	test_grep "^1 source clip=0 label=1(yes) split=training key=\"yes/a.wav\" source_rate=\"48000\" source_channels=\"2\" source_frames=\"480\" source_format=\"WAV PCM_16\"$" c &&
	test_grep "source_future=\"a key no reader knows\"$" c
'

test_expect_success 'recdump -s counts them apart, the trailer among its records' '
	recdump -s "$GOLDEN/good-source.rec" >s &&
	test_grep "^type source 3$" s &&
	test_grep "^type audio 2$" s &&
	test_grep "^type skipped 2$" s &&
	test_grep "^trailer records=8 items=3 skipped=2 " s &&
	$DUMP --summary "$GOLDEN/good-source.rec" >p &&
	test_grep "^type source 3$" p &&
	recdump -s "$GOLDEN/good-audio-s16.rec" >s &&
	! grep source s
'

test_expect_success 'every bad source stream: the same record and reason in both readers' '
	for f in "$GOLDEN"/bad-source-*.rec; do
		test_expect_code 1 recdump -q "$f" 2>c.err &&
		test_expect_code 1 $DUMP "$f" >/dev/null 2>p.err &&
		sed "s/^recdump: //" c.err >c &&
		sed "s/^melpipe.stream: //" p.err >p &&
		test_cmp c p || return 1
	done
'

test_expect_success 'a wavcat stream through segment and gpumel: the same in both readers' '
	mkdir DATA &&
	"$PYTHON" "$TEST_DIRECTORY/py/wavcat_mkdata.py" tone DATA/a.wav \
		--rate 48000 --frames 9600 &&
	"$PYTHON" "$TEST_DIRECTORY/py/wavcat_mkdata.py" tone DATA/b.wav \
		--rate 16000 --channels 2 --frames 3200 &&
	wavcat -q --rate 16000 --piece-samples 1000 DATA/ >w.rec &&
	segment -q --len 800 <w.rec >s.rec &&
	gpumel -q --device cpu --n-fft 256 --hop 128 --n-mels 16 <s.rec >g.rec &&
	for f in w.rec s.rec g.rec; do
		recdump $f >c && $DUMP $f >p && test_cmp c p || return 1
	done &&
	test $(grep -c " source " c) = 2
'
test_expect_success 'lib/rec copies source records as the Python writer writes them' '
	for f in "$GOLDEN"/good-source.rec; do
		rec-copy <"$f" | cmp - "$f" || return 1
	done
'

test_done
