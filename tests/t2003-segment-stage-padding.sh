#!/bin/sh
test_description='segment: a second stage takes the first stage'\''s padding for no audio'
. "$(dirname "$0")/test-lib.sh"

MK="$PYTHON $TEST_DIRECTORY/py/h5pack_mkrec.py"
STAGES="$PYTHON $TEST_DIRECTORY/py/segment_stages.py"
CHECK="$PYTHON $TEST_DIRECTORY/py/segment_check.py"
PIECES="$PYTHON $TEST_DIRECTORY/py/segment_pieces.py"

test_expect_success 'set up audio streams' '
	# lengths around windows of 256 and 100 every 256, 100 or 64
	# samples, one sample more or less; clip 21 is a skipped input
	$MK --kind audio --clips 22 --skip 21 --seed 11 \
		--lengths 0,1,2,63,64,65,99,100,101,255,256,257,355,356,357,511,512,513,1023,1024,1025 \
		>edge.rec &&
	$MK --kind audio --clips 20 --len 0:3000 --skip 3 --seed 12 >a.rec &&
	$MK --kind audio --clips 6 --lengths 256,512,768,1024,1280,2048 \
		--seed 13 >exact.rec
'

# two IN LEN,HOP,LAST LEN,HOP,LAST [COPY1 COPY2]: segment | segment on
# IN, the windows described in both stages (or with --copy where COPY1,
# COPY2 say "copy"), against the windows placed in each clip directly,
# the second stage's closing line included.
two() {
	in=$1 c1= c2= &&
	if test "$4" = copy; then c1=--copy; fi &&
	if test "$5" = copy; then c2=--copy; fi &&
	set -- $(echo "$2" | tr , " ") $(echo "$3" | tr , " ") &&
	segment -q $c1 --len $1 --hop $2 --last $3 $in |
		segment $c2 --len $4 --hop $5 --last $6 >o.rec 2>o.err &&
	$STAGES $in o.rec --stage $1,$2,$3 --stage $4,$5,$6 $c2 \
		--summary o.err >o.out || {
		echo "differs: $in, $1,$2,$3 $c1 then $4,$5,$6 $c2"
		return 1
	}
}

# every_last IN S1 S2: two for every --last of both stages (S1, S2:
# LEN,HOP), described in both, copied in both, and mixed.
every_last() {
	for l1 in pad drop cover; do
		for l2 in pad drop cover; do
			two $1 $2,$l1 $3,$l2 &&
			two $1 $2,$l1 $3,$l2 copy copy || return 1
		done
	done &&
	two $1 $2,pad $3,pad copy &&
	two $1 $2,pad $3,drop "" copy
}

test_expect_success 'clip lengths around the windows, every --last in both stages' '
	every_last edge.rec 256,256 100,64 &&
	every_last edge.rec 256,100 100,37 &&
	every_last edge.rec 100,256 64,16 &&
	every_last a.rec 1000,300 256,100
'

test_expect_success 'second-stage windows longer than the first stage'\''s' '
	# with drop each first-stage window gives a skipped record, one
	# padded past its clip'\''s end at the length of its samples
	two edge.rec 100,100,pad 256,256,pad copy copy &&
	two edge.rec 100,100,pad 256,256,drop &&
	test_grep "(1 sample < 256)" o.err &&
	test_grep "(57 samples < 256)" o.err
'

test_expect_success 'no window of the output starts in the padding' '
	segment -q --len 1024 edge.rec |
		segment -q --len 100 --hop 64 --last drop | recdump >d &&
	# clip 17: 513 samples; the first stage'\''s window holds them and
	# 511 zeros, of which the second stage takes none
	grep " clip=17 " d >c17 &&
	test $(wc -l <c17) = 1 &&
	test_grep "offset=0 .*dims=484x1 .*n_windows=7 pad=no" c17
'

test_expect_success 'the closing line counts the windows run into the padding' '
	$MK --kind audio --clips 1 --lengths 1500 --seed 14 >one.rec &&
	segment -q --len 1024 one.rec | segment --len 512 >o.rec 2>o.err &&
	test_grep "done: 2 records into 3 windows (1 padded)" o.err &&
	segment -q --copy --len 1024 one.rec |
		segment --copy --len 512 --last drop >o.rec 2>o.err &&
	test_grep "done: 2 records into 2 windows (0 padded)" o.err &&
	recdump o.rec >d &&
	test $(grep -c "^[0-9]* audio " d) = 2 &&
	! grep "^[0-9]* audio .*offset=1024 " d &&
	test_grep "^[0-9]* skipped .*(476 samples < 512)" d &&
	test_grep "(476 samples < 512)" o.err
'

test_expect_success 'a first stage that pads nothing: the second as before' '
	# --last drop, or clips of whole windows: the stage-by-stage
	# reference (segment_check.py) and the one here agree
	for l2 in pad drop cover; do
		segment -q --len 256 --last drop edge.rec |
			segment -q --len 100 --hop 64 --last $l2 >o.rec &&
		$CHECK edge.rec o.rec --stage 256,256,drop \
			--stage 100,64,$l2 >/dev/null &&
		$STAGES edge.rec o.rec --stage 256,256,drop \
			--stage 100,64,$l2 >/dev/null &&
		segment -q --len 256 exact.rec |
			segment -q --copy --len 100 --hop 64 --last $l2 >o.rec &&
		$CHECK --copy exact.rec o.rec --stage 256 \
			--stage 100,64,$l2 >/dev/null &&
		$STAGES --copy exact.rec o.rec --stage 256 \
			--stage 100,64,$l2 >/dev/null || return 1
	done
'

test_expect_success 'items in pieces, the clip'\''s length known late' '
	rec-copy --pieces 37 --unknown-length <edge.rec >p.rec &&
	every_last p.rec 256,100 100,37
'

test_expect_success 'clips cut short: the samples kept, whatever the pieces said' '
	# k.rec: the pieces give the whole length, the skipped record the
	# samples kept; c.rec: the pieces give none
	$PIECES cut-short edge.rec --pieces 30 --cut 1:1 --cut 8:99 \
		--cut 11:257 --cut 16:400 --cut 19:1000 >k.rec &&
	$PIECES cut-short edge.rec --pieces 7 --unknown-length --cut 2:2 \
		--cut 15:300 --cut 20:777 >c.rec &&
	every_last k.rec 256,100 100,64 &&
	every_last c.rec 256,256 300,50
'

test_expect_success 'a window of padding alone gives nothing' '
	# a windows record of 200 samples of a clip of 100, as no segment
	# writes it: its second window starts past the clip'\''s end
	$PYTHON -c "
from melpipe import stream
import sys
w = stream.Writer(sys.stdout.buffer, [(\"kind\", \"audio\"),
                  (\"sample_rate\", \"16000\"), (\"clips\", \"1\")])
w.write(stream.Item(stream.T_WINDOWS, bytes(range(200)) + bytes(200),
        clip=0, clip_samples=100, label=-1, sample_rate=16000, dtype=1,
        dim0=200, dim1=1, key=\"k.wav\", win_len=200, win_hop=150,
        n_windows=2, win_flags=stream.WIN_PAD))
w.close()" >old.rec &&
	recdump -q old.rec &&
	segment --len 50 old.rec >o.rec 2>o.err &&
	recdump o.rec >d &&
	test $(grep -c "^[0-9]* windows " d) = 1 &&
	test_grep "offset=0 .*dims=100x1 .*n_windows=2 pad=no" d &&
	test_grep "done: 2 records into 2 windows (0 padded), skipped 0" o.err
'

test_expect_success 'a dataset of two stages holds no row of padding' '
	segment -q --len 1024 a.rec |
		segment -q --len 256 --hop 128 --last drop |
		h5pack -q -o d.h5 &&
	$PYTHON -c "
import h5py, numpy as np, sys
f = h5py.File(\"d.h5\", \"r\")
n = f[\"clips\"][\"n_samples\"][()]
rows = 0
for g in (\"training\", \"validation\", \"testing\"):
    if g not in f:
        continue
    clip, off = f[g][\"clip\"][()], f[g][\"offset\"][()]
    x = f[g][\"features\"][()]
    end = off + x.shape[1]
    if (end > n[clip]).any():
        i = int(np.argmax(end > n[clip]))
        sys.exit(\"%s row %d: clip %d samples %d to %d of %d\" %
                 (g, i, clip[i], off[i], end[i], n[clip[i]]))
    if (~x.any(axis=1)).any():
        sys.exit(\"%s: a row of zeros\" % g)
    rows += len(clip)
print(rows, \"rows\")
"
'

test_expect_success '--help says a first stage'\''s padding is no audio' '
	segment --help >help.out &&
	test_grep "pads a window with past the clip.s end are no" help.out
'

test_done
