#!/bin/sh
# Long clips flow through the suite as pieces (formats/record.md, Items in
# pieces). Whatever the piece size, from one sample up, the dataset is the
# one the same clips give in one record each: wavcat's pieces (resampled
# across their boundaries), segment's windows across them, gpumel's frames
# across them (--center and not, top_db applied by h5pack to items in
# pieces) and h5pack's rows joined from them.

test_description='the four stages end to end, clips in pieces'
. "$(dirname "$0")/test-lib.sh"

SAME="$PYTHON $TEST_DIRECTORY/py/h5pack_same.py --any-commands"
W="wavcat -q --rate 4096 DATA/"
G="gpumel -q --device cpu --n-fft 512 --hop 128 --n-mels 32"

test_expect_success 'a dataset at 16 kHz, clips of different lengths' '
	"$PYTHON" "$TEST_DIRECTORY/py/e2e_mkdata.py" DATA --labels 2 \
		--per-label 3 --seconds 1.3 --rate 16000 &&
	test $(find DATA -name "*.wav" | wc -l) = 6
'

# the pieces sizes: one sample, primes, around n_fft, hop and a window
SIZES="1 37 127 128 129 511 512 513 5000"

test_expect_success 'whole clips, ragged, --center and top_db: pieces change nothing' '
	$W | $G | h5pack -q -o whole.h5 &&
	for p in $SIZES; do
		$W --piece-samples $p >p.rec &&
		recdump -q p.rec &&
		recdump p.rec >dump && grep -q "piece=more" dump &&
		$G <p.rec >f.rec &&
		recdump -q f.rec &&
		h5pack -q -o p$p.h5 <f.rec &&
		$SAME whole.h5 p$p.h5 || { echo "pieces of $p"; return 1; }
	done
'

test_expect_success 'whole clips, --no-center, f16, a fixed length: the same' '
	$W --duration 1.5 | $G --no-center --dtype f16 | h5pack -q -o fixed.h5 &&
	for p in 1 129 4096; do
		$W --duration 1.5 --piece-samples $p |
			$G --no-center --dtype f16 |
			h5pack -q -o fixed$p.h5 &&
		$SAME fixed.h5 fixed$p.h5 || return 1
	done
'

test_expect_success 'windows cut across pieces, two segment stages: the same' '
	S1="segment -q --len 2048 --hop 1500" &&
	S2="segment -q --len 512 --hop 256" &&
	$W | $S1 | $S2 | $G --no-center | h5pack -q -o seg.h5 &&
	for p in 1 255 256 1500 2049; do
		$W --piece-samples $p | $S1 | $S2 | $G --no-center |
			h5pack -q -o seg$p.h5 &&
		$SAME seg.h5 seg$p.h5 || { echo "pieces of $p"; return 1; }
	done
'

test_expect_success 'audio rows joined from pieces: the same samples' '
	$W | h5pack -q -o audio.h5 &&
	$W --piece-samples 300 | h5pack -q -o audio300.h5 &&
	$SAME audio.h5 audio300.h5
'

test_done
