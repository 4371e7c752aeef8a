#!/bin/sh
# The input file as wavcat found it (formats/record.md, Source record)
# travels with its clip through every stage and lands in the dataset's
# /clips/source_rate and source_channels (formats/hdf5.md), whatever was
# resampled: checked against what libsndfile (soundfile) says of each
# file, through segment (windows and --copy), gpumel, items in pieces,
# shards merged as streams (recmerge) and as files (h5pack --merge).

test_description='the file'\''s own rate and channels reach /clips'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/wavcat_mkdata.py"
CHK="$PYTHON $TEST_DIRECTORY/py/source_check.py"
W="wavcat -q --rate 16000 --piece-samples 6000 DATA/"
G="gpumel -q --device cpu --n-fft 512 --hop 256 --n-mels 32"

test_expect_success 'inputs at 48, 44.1, 22.05, 16 and 8 kHz, mono and stereo, some unusable' '
	mkdir -p DATA/a DATA/b &&
	$MK tone DATA/a/48k.wav --rate 48000 --frames 24000 --seed 1 &&
	$MK tone DATA/a/44k-stereo.wav --rate 44100 --channels 2 \
		--frames 22050 --subtype FLOAT --seed 2 &&
	$MK tone DATA/b/22k.flac --rate 22050 --frames 33075 --seed 3 &&
	$MK tone DATA/b/16k.wav --rate 16000 --frames 16000 --seed 4 &&
	$MK tone DATA/b/8k-long.wav --rate 8000 --frames 20000 --seed 5 &&
	$MK bad garbage DATA/a/junk.wav &&
	$MK bad wav_nan DATA/b/nan.wav &&
	$MK bad flac_truncated DATA/b/cut.flac
'

test_expect_success 'wavcat writes a source record before each clip that opened' '
	$W >clips.rec &&
	recdump -q clips.rec &&
	$CHK stream DATA clips.rec >out &&
	test_grep "^a/48k.wav 48000 1$" out &&
	test_grep "^a/44k-stereo.wav 44100 2$" out &&
	test_grep "^a/junk.wav none$" out &&
	test $(wc -l <out) = 8 &&
	recdump clips.rec | grep -c " piece=more" >n && test $(cat n) -gt 0
'

test_expect_success 'segment, gpumel and h5pack: /clips holds each file'\''s rate and channels' '
	segment --len 4000 --hop 3000 <clips.rec >segs.rec &&
	$G <segs.rec >feats.rec &&
	h5pack -q -o feats.h5 <feats.rec &&
	$CHK h5 DATA feats.h5 >out &&
	test $(wc -l <out) = 8 &&
	recdump clips.rec | sed -n "s/^[0-9]* source //p" >a &&
	recdump feats.rec | sed -n "s/^[0-9]* source //p" >b &&
	test_cmp a b
'

test_expect_success 'segment --copy twice, audio rows ragged and fixed: the same' '
	wavcat -q --rate 16000 DATA/ | segment --len 4000 --copy |
		segment --len 2000 --hop 1000 --copy | h5pack -q -o copy.h5 &&
	$CHK h5 DATA copy.h5 >/dev/null &&
	h5pack -q -o audio.h5 <clips.rec &&
	$CHK h5 DATA audio.h5 >/dev/null &&
	wavcat -q --rate 16000 --duration 0.5 DATA/ | h5pack -q -o fixed.h5 &&
	$CHK h5 DATA fixed.h5 >/dev/null
'

test_expect_success 'shards: recmerge and h5pack --merge keep them' '
	for k in 0 1 2; do
		wavcat -q --rate 16000 --piece-samples 6000 --shard $k/3 DATA/ |
			$G >s$k.rec &&
		h5pack -q -o p$k.h5 <s$k.rec || return 1
	done &&
	recmerge s0.rec s1.rec s2.rec >merged.rec &&
	recdump merged.rec | sed -n "s/^[0-9]* source //p" >c &&
	test_cmp b c &&
	h5pack -q -o merged.h5 <merged.rec &&
	$CHK h5 DATA merged.h5 >/dev/null &&
	$CHK h5 DATA p1.h5 >/dev/null &&
	h5pack -q --merge -o m.h5 p0.h5 p1.h5 p2.h5 &&
	$CHK h5 DATA m.h5 >/dev/null
'

test_expect_success 'a stream without source records gives 0s' '
	"$PYTHON" -c "
import sys
from melpipe.stream import Reader, Writer
r = Reader(open(\"feats.rec\", \"rb\"))
items = list(r)
with open(\"nosource.rec\", \"wb\") as f, Writer(f, r.header) as w:
    for it in items:
        w.write(it.copy(src=None))
" &&
	recdump -s nosource.rec >out &&
	! grep "type source" out &&
	h5pack -q -o nosource.h5 <nosource.rec &&
	$CHK h5 DATA nosource.h5 --zeros >/dev/null
'

test_done
